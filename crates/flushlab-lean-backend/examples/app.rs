//! A plain ratatui program that draws as fast as it can — every cell a new letter and colour
//! each frame — through the backend its first argument names, behind a 64 KiB `BufWriter` on
//! stdout flushed once a frame; `q` quits, or it stops after the seconds its second argument
//! gives. At the end it says (on stderr) how many frames it drew and at what rate.
//!
//! `--frames N` stops after N frames instead (the same frames whatever the backend), and
//! `--print-screen` then asks the terminal to print its screen (`ESC[i`, xterm's printer
//! command: the screen with its attributes, as the terminal holds it) before it leaves.
//!
//! ```sh
//! cargo run --release -p flushlab-lean-backend --example app -- lean 3
//! cargo run --release -p flushlab-lean-backend --example app -- crossterm 3
//! ```
//!
//! The backends differ in one line (`backend` below); everything else is the app's own.

use std::io::{self, BufWriter};
use std::time::{Duration, Instant};

use flushlab_lean_backend::LeanBackend;
use ratatui::Terminal;
use ratatui::backend::{Backend, CrosstermBackend};
use ratatui::crossterm::event::{self, Event, KeyCode};
use ratatui::crossterm::terminal::{
    EnterAlternateScreen, LeaveAlternateScreen, disable_raw_mode, enable_raw_mode,
};
use ratatui::crossterm::{cursor, execute};
use ratatui::style::Color;

fn main() -> io::Result<()> {
    let mut args = std::env::args().skip(1);
    let which = args.next().unwrap_or_else(|| "lean".into());
    let mut until = Until {
        seconds: f64::INFINITY,
        frames: u64::MAX,
        print_screen: false,
    };
    while let Some(arg) = args.next() {
        let number = |what: Option<String>| {
            what.and_then(|s| s.parse::<f64>().ok())
                .filter(|&v| v > 0.0)
        };
        match arg.as_str() {
            "--frames" => match number(args.next()) {
                Some(n) => until.frames = n as u64,
                None => usage("--frames needs a positive number"),
            },
            "--print-screen" => until.print_screen = true,
            seconds => match number(Some(seconds.to_owned())) {
                Some(s) => until.seconds = s,
                None => usage(&format!("{seconds:?} is not a number of seconds")),
            },
        }
    }
    let out = BufWriter::with_capacity(64 * 1024, io::stdout());
    let frames = match which.as_str() {
        "lean" => run(LeanBackend::new(out), until),
        "crossterm" => run(CrosstermBackend::new(out), until),
        other => usage(&format!("unknown backend {other:?}: lean, crossterm")),
    };
    let (drawn, took) = frames?;
    eprintln!(
        "{which}: {drawn} frames in {:.2} s = {:.1} fps",
        took.as_secs_f64(),
        drawn as f64 / took.as_secs_f64()
    );
    Ok(())
}

/// When to stop, and what to do then.
#[derive(Clone, Copy)]
struct Until {
    seconds: f64,
    frames: u64,
    print_screen: bool,
}

fn usage(why: &str) -> ! {
    eprintln!("app: {why}; usage: app lean|crossterm [SECONDS] [--frames N] [--print-screen]");
    std::process::exit(2);
}

fn run<B: Backend<Error = io::Error>>(backend: B, until: Until) -> io::Result<(u64, Duration)> {
    enable_raw_mode()?;
    execute!(io::stdout(), EnterAlternateScreen, cursor::Hide)?;
    let drawn = draw_until(backend, until);
    if until.print_screen {
        // The terminal prints what it shows; its printer command takes a moment.
        io::Write::write_all(&mut io::stdout(), b"\x1b[i")?;
        io::Write::flush(&mut io::stdout())?;
        std::thread::sleep(Duration::from_millis(500));
    }
    let _ = execute!(io::stdout(), cursor::Show, LeaveAlternateScreen);
    let _ = disable_raw_mode();
    drawn
}

fn draw_until<B: Backend<Error = io::Error>>(
    backend: B,
    until: Until,
) -> io::Result<(u64, Duration)> {
    let mut terminal = Terminal::new(backend)?;
    let start = Instant::now();
    let mut n = 0u64;
    while start.elapsed().as_secs_f64() < until.seconds && n < until.frames {
        terminal.draw(|frame| {
            let area = frame.area();
            let buf = frame.buffer_mut();
            for y in area.top()..area.bottom() {
                for x in area.left()..area.right() {
                    let v = ((u64::from(x) * 7 + u64::from(y) * 13 + n * 41) % 256) as u8;
                    buf[(x, y)]
                        .set_char(char::from(b'a' + (n % 26) as u8))
                        .set_fg(Color::Rgb(v, 255 - v, (n % 256) as u8))
                        .set_bg(Color::Indexed(v));
                }
            }
        })?;
        n += 1;
        if event::poll(Duration::ZERO)?
            && let Event::Key(key) = event::read()?
            && key.code == KeyCode::Char('q')
        {
            break;
        }
    }
    Ok((n, start.elapsed()))
}
