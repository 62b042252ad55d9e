// A bubbletea program that stamps each key's stages itself: the truth `wrap --keys`'s stages
// are checked against on a Go program (tests/it/tracer.rs), which no preload sees.
//
// Arguments: COLSxROWS of the frame it draws (a line a row, every cell changed a key), and the
// work a key costs in Update, in microseconds of busy CPU. `q` ends it. KEYS_LOG receives, at
// the end, one line a key that reached Update: when it reached Update, when the View that shows
// it was built, when the renderer's write of that View began and ended (the renderer writes on
// its own 60 fps tick), CLOCK_MONOTONIC nanoseconds (the runtime's nanotime is that clock).
package main

import (
	"fmt"
	"os"
	"strings"
	"sync"
	_ "unsafe"

	tea "github.com/charmbracelet/bubbletea"
)

//go:linkname nanotime runtime.nanotime
func nanotime() int64

type stamp struct{ update, view, writeStart, writeEnd int64 }

var (
	mu     sync.Mutex
	stamps []stamp
)

type model struct {
	n, cols, rows int
	workNs        int64
}

func (m model) Init() tea.Cmd { return nil }

func (m model) Update(msg tea.Msg) (tea.Model, tea.Cmd) {
	if k, ok := msg.(tea.KeyMsg); ok {
		if k.String() == "q" {
			return m, tea.Quit
		}
		got := nanotime()
		mu.Lock()
		stamps = append(stamps, stamp{update: got})
		mu.Unlock()
		for nanotime()-got < m.workNs {
		}
		m.n++
	}
	return m, nil
}

func (m model) View() string {
	var b strings.Builder
	for r := 0; r < m.rows-1; r++ {
		c := byte('a' + (m.n+r)%26)
		b.WriteString(strings.Repeat(string([]byte{c}), m.cols-1))
		b.WriteString("\n")
	}
	fmt.Fprintf(&b, "keys %d", m.n)
	built := nanotime()
	mu.Lock()
	if len(stamps) > 0 && stamps[len(stamps)-1].view == 0 {
		stamps[len(stamps)-1].view = built
	}
	mu.Unlock()
	return b.String()
}

// The renderer's writes, stamped: the first write after a View was built is its frame's.
type stamped struct{}

func (stamped) Write(p []byte) (int, error) {
	start := nanotime()
	n, err := os.Stdout.Write(p)
	end := nanotime()
	mu.Lock()
	for i := range stamps {
		if stamps[i].view != 0 && stamps[i].writeStart == 0 && stamps[i].view <= start {
			stamps[i].writeStart, stamps[i].writeEnd = start, end
		}
	}
	mu.Unlock()
	return n, err
}

func main() {
	m := model{cols: 80, rows: 24}
	if len(os.Args) > 1 {
		fmt.Sscanf(os.Args[1], "%dx%d", &m.cols, &m.rows)
	}
	if len(os.Args) > 2 {
		var us int64
		fmt.Sscanf(os.Args[2], "%d", &us)
		m.workNs = us * 1000
	}
	p := tea.NewProgram(m, tea.WithOutput(stamped{}), tea.WithAltScreen())
	if err := p.Start(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	if path := os.Getenv("KEYS_LOG"); path != "" {
		var out strings.Builder
		mu.Lock()
		for _, s := range stamps {
			fmt.Fprintf(&out, "%d %d %d %d\n", s.update, s.view, s.writeStart, s.writeEnd)
		}
		mu.Unlock()
		os.WriteFile(path, []byte(out.String()), 0o600)
	}
}
