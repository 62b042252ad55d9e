//! The writer's Rust expression and the "why" text: what the current mode does to each frame, from
//! the meters.

use ratatui::style::{Color, Stylize};
use ratatui::text::Line;

use super::text::shown;
use flushlab_core::meters::Meters;
use flushlab_core::units::{bytes, count, percent};
use flushlab_core::writer_mode::{Buffering, Mode, Stream};

/// Lines the longest expression of any mode takes at `width`: the HUD reserves that many, so
/// switching modes never changes its size.
pub(super) fn expression_lines(width: u16) -> u16 {
    let longest = Mode::all(1 << 20)
        .map(|m| expression_with_name(m).chars().count())
        .max()
        .unwrap_or(1);
    longest.div_ceil(usize::from(width.max(1))) as u16
}

/// The expression, and std's name for it when it is one of std's handles as std buffers them.
pub(super) fn expression_with_name(mode: Mode) -> String {
    let expression = mode.expression();
    match (mode.stream, mode.buffering) {
        (Stream::Stdout, Buffering::Line) | (Stream::Stderr, Buffering::Raw) => {
            format!("{expression}  = std's {}()", mode.stream.name())
        }
        _ => expression,
    }
}

/// `width`-wide lines of the expression: cut at any character, so that every character shows.
pub(super) fn expression_text(mode: Mode, width: u16) -> Vec<Line<'static>> {
    let chars: Vec<char> = expression_with_name(mode).chars().collect();
    chars
        .chunks(usize::from(width.max(1)))
        .map(|c| Line::from(c.iter().collect::<String>()).fg(Color::LightCyan))
        .collect()
}

/// Lines the "why" sentence has, whatever the mode and its figures: the HUD keeps its size.
pub(super) const WHY_LINES: u16 = 2;

/// One sentence on why the current mode costs what it costs, with its live figures (the last
/// second's): what a newcomer needs to read the numbers above it. `vcpus_halt`: this machine's
/// idle vCPUs halt at once, so a writer that waits on its reader pays an exit to the host at
/// each wake — the thread mode most, its painter asleep while the writer waits (at 200x60 here,
/// `bench --backend lean,crossterm --modes stdout/thread`: lean's thread mode 48–152 fps with
/// the writers asleep in write(2), 306 with `--wait poll`, against crossterm's 167–243 and 235).
pub fn why(mode: Mode, meters: &Meters, vcpus_halt: bool) -> String {
    let window = meters.window.unwrap_or_default();
    if let Some((share, _)) = window
        .time_split()
        .filter(|s| s.reader_bound())
        .and_then(|s| s.reader_share())
        && meters.window.is_some()
    {
        let cpu = window.figures().cpu_ms_per_frame().unwrap_or_default();
        if vcpus_halt && mode.buffering == Buffering::Thread {
            return format!(
                "why: the writer thread waits on the reader {} of each frame, and this VM's idle \
                 vCPUs halt at once: each wake is an exit to the host (bench --wait poll \
                 measures what polling buys)",
                percent(share),
            );
        }
        return format!(
            "why: the terminal is the limit — {} of each frame waits for it to read, whatever \
             the writer; what still differs between the modes is CPU: {cpu:.1} ms a frame here",
            percent(share),
        );
    }
    let writes = shown(meters, window.writes_per_frame(), count);
    let per_write = shown(meters, window.bytes_per_write(), bytes);
    let frame = shown(meters, window.bytes_per_frame(), bytes);
    let kernel = shown(meters, Some(window.kernel_share()), percent);
    let capacity = flushlab_core::units::format_capacity(mode.capacity);
    match (mode.stream, mode.buffering) {
        (Stream::Stderr, Buffering::Raw) => format!(
            "why: stderr() is unbuffered: each escape sequence crossterm writes is its own \
             write(2) — {writes} a frame, {kernel} of CPU time in the kernel"
        ),
        (Stream::Stdout, Buffering::Raw) => format!(
            "why: a dup of stdout with no buffer: each escape sequence crossterm writes is its \
             own write(2) — {writes} a frame, {kernel} of CPU time in the kernel"
        ),
        (Stream::Stdout, Buffering::Line) => format!(
            "why: stdout() is a 1 KiB LineWriter and a frame has almost no newline, so it \
             writes every 1 KiB — {writes} write(2) a frame of {per_write}"
        ),
        (Stream::Stderr, Buffering::Line) => format!(
            "why: a 1 KiB LineWriter over stderr(); a frame has almost no newline, so it \
             writes every 1 KiB — {writes} write(2) a frame of {per_write}"
        ),
        (_, Buffering::Block) => format!(
            "why: a BufWriter of {capacity} writes only when full — {writes} write(2) a frame of \
             {per_write}, {kernel} of CPU time in the kernel"
        ),
        (_, Buffering::Frame) => format!(
            "why: one write(2) of the whole {frame} frame; the loop waits while the reader \
             takes it — {kernel} of CPU time in the kernel"
        ),
        (_, Buffering::Thread) => format!(
            "why: one write(2) a frame, on a writer thread: frame N is written while N+1 is \
             drawn — {writes} write(2) a frame of {frame}, {kernel} in the kernel"
        ),
    }
}

/// [`why`] in at most [`WHY_LINES`] lines of `width`, broken between words; what does not fit
/// ends in `…`.
pub(super) fn why_text(
    app: &crate::explorer::app::App,
    meters: &Meters,
    width: u16,
) -> Vec<Line<'static>> {
    let width = usize::from(width.max(1));
    let mut lines: Vec<String> = Vec::new();
    let mut line = String::new();
    for word in why(app.mode, meters, app.vcpus_halt).split(' ') {
        let joined = if line.is_empty() {
            word.to_owned()
        } else {
            format!("{line} {word}")
        };
        if joined.chars().count() <= width || line.is_empty() {
            line = joined;
        } else {
            lines.push(std::mem::replace(&mut line, word.to_owned()));
        }
    }
    lines.push(line);
    let cut = lines.len() > usize::from(WHY_LINES);
    lines.truncate(usize::from(WHY_LINES));
    if cut && let Some(last) = lines.last_mut() {
        let keep: String = last.chars().take(width.saturating_sub(1)).collect();
        *last = format!("{keep}…");
    }
    lines
        .into_iter()
        .map(|l| {
            let l: String = l.chars().take(width).collect();
            Line::from(l).fg(Color::Gray).italic()
        })
        .collect()
}
