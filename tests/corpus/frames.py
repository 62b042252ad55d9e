"""Frames drawn from Python, counting their own frames: the truth `flushlab wrap` is checked
against (tests/corpus.rs). Every frame homes the cursor and paints every cell a colour that
moves each frame.

    python3 frames.py MODE      MODE is one of
      flush       print(cell, end="", flush=True) for every cell
      buffered    sys.stdout.write per cell, one flush a frame, 30 fps
      curses      curses: addstr per cell, one refresh a frame, 30 fps

FRAMES_FILE receives "FRAMES SECONDS" at the end (SIGTERM, SIGHUP, or FRAMES frames drawn).
"""

import os
import signal
import sys
import time

stop = False


def on_signal(_sig, _frame):
    global stop
    stop = True


def main():
    mode = sys.argv[1] if len(sys.argv) > 1 else "flush"
    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGHUP, on_signal)
    limit = int(os.environ.get("FRAMES", "-1"))
    cols, rows = os.get_terminal_size(1)
    state = {"frames": 0, "first": None, "last_end": time.monotonic()}

    def frames():
        while not stop and (limit < 0 or state["frames"] < limit):
            n = state["frames"]
            if state["first"] is None:
                state["first"] = time.monotonic()
            yield n
            state["frames"] += 1
            state["last_end"] = time.monotonic()

    def pace(n, fps=30.0):
        wait = state["first"] + n / fps - time.monotonic()
        if wait > 0:
            time.sleep(wait)

    if mode == "flush":
        for n in frames():
            print("\033[H", end="", flush=True)
            for r in range(rows):
                if r:
                    print(f"\033[{r + 1};1H", end="", flush=True)
                for c in range(cols):
                    print(f"\033[48;5;{(c + r + n) % 216 + 16}m ", end="", flush=True)
            print("\033[0m", end="", flush=True)
    elif mode == "buffered":
        out = sys.stdout
        for n in frames():
            pace(n)
            out.write("\033[H")
            for r in range(rows):
                if r:
                    out.write(f"\033[{r + 1};1H")
                for c in range(cols):
                    out.write(f"\033[48;5;{(c + r + n) % 216 + 16}m ")
            out.write("\033[0m")
            out.flush()
    elif mode == "curses":
        import curses

        def draw(screen):
            curses.start_color()
            for i in range(1, 8):
                curses.init_pair(i, curses.COLOR_WHITE, i)
            height, width = screen.getmaxyx()
            for n in frames():
                pace(n)
                for r in range(height):
                    for c in range(width - 1 if r == height - 1 else width):
                        screen.addstr(r, c, "#", curses.color_pair((c + r + n) % 7 + 1))
                screen.refresh()

        curses.wrapper(draw)
    else:
        print(f"frames.py: unknown mode '{mode}'", file=sys.stderr)
        sys.exit(2)
    path = os.environ.get("FRAMES_FILE")
    if path:
        seconds = state["last_end"] - (state["first"] or state["last_end"])
        with open(path, "w") as f:
            f.write(f"{state['frames']} {seconds:.6f}\n")


main()
