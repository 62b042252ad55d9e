//! A ratatui app that measures its own frames with flushlab's embedding API
//! (`flushlab_core::embed`): every draw's write(2) calls, bytes and time split, and the totals
//! checked against what the kernel counted for the process (`/proc/self/io`).
//!
//! ```sh
//! cargo run --release --example embed -- [FRAMES] [raw|bufwriter] > /dev/null
//! cargo run --release --example embed -- --overhead > /dev/null
//! ```
//!
//! It draws an 80x24 gradient (every cell changes every frame) to stdout, through a duplicate
//! of fd 1 — the layer must sit on the file descriptor to see write(2) calls — either raw (one
//! write(2) a fragment, as `stderr()` is) or behind a 64 KiB `BufWriter`. What it measured goes
//! to stderr. `--overhead` draws the same frames with and without measuring each draw,
//! alternated, and prints the ratio of the two frame rates.

use std::io::{self, BufWriter, Write};
use std::os::fd::AsFd;
use std::time::{Duration, Instant};

use flushlab_core::embed::{Draw, DrawMeter, counting};
use ratatui::backend::CrosstermBackend;
use ratatui::layout::Rect;
use ratatui::style::Color;
use ratatui::{Terminal, TerminalOptions, Viewport};

fn gradient(frame: &mut ratatui::Frame, n: u64) {
    let area = frame.area();
    let buf = frame.buffer_mut();
    for y in area.top()..area.bottom() {
        for x in area.left()..area.right() {
            let v = ((u64::from(x) * 3 + u64::from(y) * 7 + n * 5) % 256) as u8;
            buf[(x, y)]
                .set_char('▀')
                .set_fg(Color::Rgb(v, 255 - v, 128))
                .set_bg(Color::Rgb(255 - v, v, 64));
        }
    }
}

fn terminal<W: Write>(writer: W) -> io::Result<Terminal<CrosstermBackend<W>>> {
    // A fixed viewport: stdout may be a file or a pipe, with no size to ask.
    Terminal::with_options(
        CrosstermBackend::new(writer),
        TerminalOptions {
            viewport: Viewport::Fixed(Rect::new(0, 0, 80, 24)),
        },
    )
}

/// Draws `frames` frames through `writer`, each measured when `meter` is given.
fn draw_frames<W: Write>(
    writer: W,
    frames: u64,
    mut meter: Option<&mut DrawMeter>,
) -> io::Result<Duration> {
    let mut terminal = terminal(writer)?;
    let start = Instant::now();
    for n in 0..frames {
        let mut draw = || terminal.draw(|frame| gradient(frame, n)).map(drop);
        match meter.as_deref_mut() {
            Some(meter) => meter.measure(draw).0?,
            None => draw()?,
        }
    }
    Ok(start.elapsed())
}

fn stdout_dup() -> io::Result<std::fs::File> {
    Ok(std::fs::File::from(
        io::stdout().as_fd().try_clone_to_owned()?,
    ))
}

/// The kernel's count of the process's write calls and bytes (`syscw`, `wchar`).
fn kernel_counts() -> io::Result<(u64, u64)> {
    let io = std::fs::read_to_string("/proc/self/io")?;
    let field = |name: &str| {
        io.lines()
            .find_map(|l| l.strip_prefix(name)?.trim().parse::<u64>().ok())
            .ok_or_else(|| io::Error::other(format!("no {name} in /proc/self/io")))
    };
    Ok((field("syscw:")?, field("wchar:")?))
}

fn measured(frames: u64, buffered: bool) -> io::Result<bool> {
    let (layer, mut meter) = counting(stdout_dup()?);
    let before = kernel_counts()?;
    if buffered {
        draw_frames(
            BufWriter::with_capacity(1 << 16, layer),
            frames,
            Some(&mut meter),
        )?;
    } else {
        draw_frames(layer, frames, Some(&mut meter))?;
    }
    let after = kernel_counts()?;
    let (writes, bytes) = meter.written();
    let kernel = (after.0 - before.0, after.1 - before.1);
    let total: Draw = meter.total();
    let ms = |d: Option<Duration>| d.map_or(f64::NAN, |d| d.as_secs_f64() * 1e3 / frames as f64);
    let mut err = io::stderr().lock();
    writeln!(
        err,
        "{} draws, {} buffered: layer {writes} write(2), {bytes} bytes; kernel {} write(2), {} bytes",
        meter.draws(),
        if buffered { "BufWriter" } else { "not" },
        kernel.0,
        kernel.1
    )?;
    writeln!(
        err,
        "a draw: {:.2} write(2), {:.0} bytes, {:.3} ms on a CPU, {:.3} ms waiting for one, {:.3} ms asleep",
        total.writes as f64 / frames as f64,
        total.bytes as f64 / frames as f64,
        ms(total.on_cpu),
        ms(total.cpu_wait),
        ms(total.asleep()),
    )?;
    // The BufWriter's last bytes are written when it is dropped, after the last draw: they
    // are in the layer's count (written()) and the kernel's, not in a draw's.
    Ok((writes, bytes) == kernel)
}

fn overhead(frames: u64, rounds: usize) -> io::Result<()> {
    let mut on = Vec::new();
    let mut off = Vec::new();
    for _ in 0..rounds {
        let (layer, mut meter) = counting(stdout_dup()?);
        let buffered = BufWriter::with_capacity(1 << 16, layer);
        on.push(frames as f64 / draw_frames(buffered, frames, Some(&mut meter))?.as_secs_f64());
        let buffered = BufWriter::with_capacity(1 << 16, stdout_dup()?);
        off.push(frames as f64 / draw_frames(buffered, frames, None)?.as_secs_f64());
    }
    let median = |v: &mut Vec<f64>| flushlab_core::statistics::median(v.drain(..));
    let (on, off) = (
        median(&mut on).unwrap_or_default(),
        median(&mut off).unwrap_or_default(),
    );
    writeln!(
        io::stderr(),
        "fps measured {on:.0}, not measured {off:.0}: measured / not = {:.3} (median of {rounds} rounds of {frames} frames)",
        on / off
    )
}

fn main() -> io::Result<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.first().map(String::as_str) == Some("--overhead") {
        return overhead(2000, 9);
    }
    let frames = args.first().and_then(|a| a.parse().ok()).unwrap_or(200);
    let buffered = args.get(1).map(String::as_str) != Some("raw");
    if measured(frames, buffered)? {
        Ok(())
    } else {
        Err(io::Error::other(
            "the layer's counts differ from the kernel's",
        ))
    }
}
