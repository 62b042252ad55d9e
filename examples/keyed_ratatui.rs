//! A ratatui program that draws when a key arrives, and times itself: the truth `wrap --keys`
//! is checked against (tests/it/keyed.rs). Like most ratatui apps it reads keys on an input
//! thread and sends them over a channel; the drawing thread waits on the channel (a futex) and
//! draws a full screen for each key (every cell changes colour), through the writer its first
//! argument names:
//!
//! - `stderr`: `CrosstermBackend::new(stderr())`, unbuffered: one write(2) a fragment.
//! - `bufwriter`: a 64 KiB `BufWriter` over `stdout()`, flushed once a frame.
//!
//! A second argument `markers` paints the frame markers `flushlab paint` reads
//! (`flushlab_terminals::marker`): the calibration pattern in the first frame, then frame N's
//! number (N keys answered) in each frame after it, so that a picture of the window says which
//! key's frame it shows.
//!
//! Before its first frame it asks the terminal where the cursor is (crossterm's
//! `cursor::position()`), then its background colour (OSC 11) and device attributes (DA1), and
//! exits 1 when either goes unanswered, as programs that need them do.
//!
//! `KEYS_LOG`: a file that receives, at the end (`q`, SIGTERM, SIGHUP), one line a key:
//! `KEY READ_NS FRAME_NS` — the key's byte, when the input thread read it and when the frame
//! it caused was flushed and drained (`tcdrain`, through libc: under `wrap --try frame` the
//! observer lets its held frame out there), on CLOCK_MONOTONIC. Nothing else is written anywhere but the terminal.

use std::io::{self, Read, Write};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;
use std::time::Duration;

use ratatui::Terminal;
use ratatui::backend::{Backend, CrosstermBackend};
use ratatui::crossterm::terminal::{
    EnterAlternateScreen, LeaveAlternateScreen, disable_raw_mode, enable_raw_mode,
};
use ratatui::crossterm::{cursor, execute};
use ratatui::style::Color;

fn now_ns() -> u64 {
    let t = rustix::time::clock_gettime(rustix::time::ClockId::Monotonic);
    t.tv_sec as u64 * 1_000_000_000 + t.tv_nsec as u64
}

/// Asks OSC 11 and DA1; true once the DA1 answer came with the colour's before it. Blocking
/// reads through libc (a watchdog ends the program after 2 s): a wait the observer sees.
fn terminal_answers() -> io::Result<bool> {
    let mut out = io::stdout();
    out.write_all(b"\x1b]11;?\x1b\\\x1b[c")?;
    out.flush()?;
    let answered = Arc::new(AtomicBool::new(false));
    let watchdog = Arc::clone(&answered);
    std::thread::spawn(move || {
        std::thread::sleep(Duration::from_secs(2));
        if !watchdog.load(Ordering::Relaxed) {
            let _ = disable_raw_mode();
            eprintln!("keyed_ratatui: the terminal did not answer OSC 11 and DA1 within 2 s");
            std::process::exit(1);
        }
    });
    let mut seen = Vec::new();
    let mut byte = [0u8; 1];
    while io::stdin().read(&mut byte)? == 1 {
        seen.push(byte[0]);
        let text = String::from_utf8_lossy(&seen);
        if text.contains("\x1b[?") && text.ends_with('c') {
            answered.store(true, Ordering::Relaxed);
            return Ok(text.contains("\x1b]11;rgb:"));
        }
    }
    Ok(false)
}

fn run<W: Write>(
    mut terminal: Terminal<CrosstermBackend<W>>,
    markers: bool,
) -> io::Result<Vec<(u8, u64, u64)>>
where
    CrosstermBackend<W>: Backend<Error = io::Error>,
{
    let stop = Arc::new(AtomicBool::new(false));
    for signal in [signal_hook::consts::SIGTERM, signal_hook::consts::SIGHUP] {
        signal_hook::flag::register(signal, Arc::clone(&stop))?;
    }
    let (keys, arrived) = mpsc::channel::<(u8, u64)>();
    // The input thread: a key a byte (the scripts that drive this send plain keys).
    std::thread::spawn(move || {
        let mut byte = [0u8; 1];
        while let Ok(1) = io::stdin().read(&mut byte) {
            if keys.send((byte[0], now_ns())).is_err() {
                break;
            }
        }
    });
    let mut log = Vec::new();
    let mut n = 0u64;
    draw(&mut terminal, n, markers)?;
    while !stop.load(Ordering::Relaxed) {
        let Ok((key, read_ns)) = arrived.recv_timeout(Duration::from_millis(250)) else {
            continue;
        };
        if key == b'q' {
            break;
        }
        n += 1;
        draw(&mut terminal, n, markers)?;
        nix::sys::termios::tcdrain(io::stderr())?;
        log.push((key, read_ns, now_ns()));
    }
    Ok(log)
}

fn draw<W: Write>(
    terminal: &mut Terminal<CrosstermBackend<W>>,
    n: u64,
    markers: bool,
) -> io::Result<()>
where
    CrosstermBackend<W>: Backend<Error = io::Error>,
{
    use flushlab_terminals::marker;
    terminal.draw(|frame| {
        let area = frame.area();
        let buf = frame.buffer_mut();
        for y in area.top()..area.bottom() {
            for x in area.left()..area.right() {
                let v = ((u64::from(x) * 7 + u64::from(y) * 13 + n * 41) % 256) as u8;
                buf[(x, y)]
                    .set_char(char::from(b'a' + (n % 26) as u8))
                    .set_fg(Color::Rgb(v, 255 - v, (n % 256) as u8))
                    .set_bg(Color::Rgb(255 - v, v, 64));
            }
        }
        if markers && n == 0 {
            let (top, bottom) = marker::rows(area);
            for y in [top, bottom] {
                for i in 0..marker::CELLS.min(area.width) {
                    let (r, g, b) = marker::CALIBRATION[usize::from(i % 2)];
                    buf[(area.x + i, y)]
                        .set_char(' ')
                        .set_fg(Color::Rgb(r, g, b))
                        .set_bg(Color::Rgb(r, g, b));
                }
            }
        } else if markers {
            marker::paint(n, area, buf);
        }
    })?;
    Backend::flush(terminal.backend_mut())
}

fn main() -> io::Result<()> {
    let writer = std::env::args().nth(1).unwrap_or_else(|| "stderr".into());
    let markers = std::env::args().nth(2).is_some_and(|a| a == "markers");
    enable_raw_mode()?;
    execute!(io::stdout(), EnterAlternateScreen)?;
    // As a published ratatui program starts: where is the cursor (2 s, then an error).
    let asked = cursor::position().map_err(|e| e.to_string()).and_then(|_| {
        terminal_answers()
            .map_err(|e| e.to_string())?
            .then_some(())
            .ok_or_else(|| "no answer to OSC 11 and DA1".to_owned())
    });
    if let Err(why) = asked {
        let _ = execute!(io::stdout(), LeaveAlternateScreen);
        let _ = disable_raw_mode();
        eprintln!("keyed_ratatui: the terminal did not answer: {why}");
        std::process::exit(1);
    }
    let log = match writer.as_str() {
        "stderr" => run(Terminal::new(CrosstermBackend::new(io::stderr()))?, markers),
        "bufwriter" => run(
            Terminal::new(CrosstermBackend::new(io::BufWriter::with_capacity(
                64 * 1024,
                io::stdout(),
            )))?,
            markers,
        ),
        other => {
            let _ = disable_raw_mode();
            eprintln!("keyed_ratatui: unknown writer {other:?}: stderr, bufwriter");
            std::process::exit(2);
        }
    };
    execute!(io::stdout(), LeaveAlternateScreen)?;
    disable_raw_mode()?;
    if let Ok(path) = std::env::var("KEYS_LOG") {
        let mut text = String::new();
        for (key, read_ns, frame_ns) in log? {
            text += &format!("{key} {read_ns} {frame_ns}\n");
        }
        std::fs::write(path, text)?;
    }
    Ok(())
}
