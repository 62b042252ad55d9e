//! A ratatui program of the kind `flushlab wrap` is for, counting its own frames: the truth wrap
//! is checked against (tests/corpus.rs). It draws a full-screen colour gradient that moves every
//! frame (every cell changes), then polls its input for 1/60 s — the program of the material
//! flushlab comes from — with the writer behind ratatui chosen by its first argument:
//!
//! - `stderr`: `CrosstermBackend::new(stderr())`, unbuffered: one write(2) a fragment.
//! - `stdout`: `stdout()`, std's 1 KiB `LineWriter`.
//! - `bufwriter`: a 64 KiB `BufWriter` over `stdout()`.
//! - `sync`: `bufwriter`, each frame inside DEC 2026 synchronized-output markers.
//! - `default`: `ratatui::init()`'s `DefaultTerminal` (which is `stdout()` underneath).
//!
//! Environment: `FRAMES_FILE` receives "FRAMES SECONDS" when the program ends (SIGTERM, SIGHUP,
//! `q`, or `FRAMES` frames drawn): frames drawn and the time from the first frame's start to
//! the last one's end. Nothing else is written anywhere but the terminal.

use std::io::{self, Write};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use ratatui::Terminal;
use ratatui::backend::{Backend, CrosstermBackend};
use ratatui::crossterm::event::{self, Event, KeyCode};
use ratatui::crossterm::terminal::{
    BeginSynchronizedUpdate, EndSynchronizedUpdate, EnterAlternateScreen, LeaveAlternateScreen,
    disable_raw_mode, enable_raw_mode,
};
use ratatui::crossterm::{execute, queue};
use ratatui::style::Color;

fn gradient(frame: &mut ratatui::Frame, n: u64) {
    let area = frame.area();
    let buf = frame.buffer_mut();
    for y in area.top()..area.bottom() {
        for x in area.left()..area.right() {
            let shift = n as u32 * 7;
            let r = ((u32::from(x) * 255 / u32::from(area.width.max(1))) + shift) % 256;
            let g = ((u32::from(y) * 255 / u32::from(area.height.max(1))) + shift * 3) % 256;
            // Two pixels a cell, as gradient demos draw them: the top one in the foreground
            // colour of an upper half block, the bottom one in the background.
            buf[(x, y)]
                .set_char('▀')
                .set_fg(Color::Rgb(r as u8, g as u8, 128))
                .set_bg(Color::Rgb(g as u8, r as u8, 64));
        }
    }
}

fn run<W: Write>(mut terminal: Terminal<CrosstermBackend<W>>, sync: bool) -> io::Result<()>
where
    CrosstermBackend<W>: Backend<Error = io::Error>,
{
    let stop = Arc::new(AtomicBool::new(false));
    for signal in [signal_hook::consts::SIGTERM, signal_hook::consts::SIGHUP] {
        signal_hook::flag::register(signal, Arc::clone(&stop))?;
    }
    let limit: Option<u64> = std::env::var("FRAMES").ok().and_then(|v| v.parse().ok());
    let mut frames = 0u64;
    let mut first = None;
    let mut last_end = Instant::now();
    while !stop.load(Ordering::Relaxed) && limit.is_none_or(|l| frames < l) {
        first.get_or_insert_with(Instant::now);
        if sync {
            queue!(terminal.backend_mut(), BeginSynchronizedUpdate)?;
        }
        terminal.draw(|f| gradient(f, frames))?;
        if sync {
            execute!(terminal.backend_mut(), EndSynchronizedUpdate)?;
        }
        frames += 1;
        last_end = Instant::now();
        if event::poll(Duration::from_secs_f64(1.0 / 60.0))?
            && let Event::Key(key) = event::read()?
            && key.code == KeyCode::Char('q')
        {
            break;
        }
    }
    if let Ok(path) = std::env::var("FRAMES_FILE") {
        let seconds = first.map_or(0.0, |f| (last_end - f).as_secs_f64());
        std::fs::write(path, format!("{frames} {seconds}\n"))?;
    }
    Ok(())
}

fn main() -> io::Result<()> {
    let writer = std::env::args().nth(1).unwrap_or_else(|| "stderr".into());
    if writer == "default" {
        let terminal = ratatui::init();
        let result = run(terminal, false);
        ratatui::restore();
        return result;
    }
    enable_raw_mode()?;
    let result = match writer.as_str() {
        "stderr" => {
            execute!(io::stderr(), EnterAlternateScreen)?;
            run(Terminal::new(CrosstermBackend::new(io::stderr()))?, false)
        }
        "stdout" => {
            execute!(io::stdout(), EnterAlternateScreen)?;
            run(Terminal::new(CrosstermBackend::new(io::stdout()))?, false)
        }
        "bufwriter" | "sync" => {
            execute!(io::stdout(), EnterAlternateScreen)?;
            let out = io::BufWriter::with_capacity(64 * 1024, io::stdout());
            run(Terminal::new(CrosstermBackend::new(out))?, writer == "sync")
        }
        other => {
            disable_raw_mode()?;
            eprintln!(
                "corpus_ratatui: unknown writer '{other}' (stderr, stdout, bufwriter, sync, default)"
            );
            std::process::exit(2);
        }
    };
    let _ = execute!(io::stdout(), LeaveAlternateScreen);
    disable_raw_mode()?;
    result
}
