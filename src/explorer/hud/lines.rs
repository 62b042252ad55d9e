//! The HUD's figure lines: counts, costs, the time split and the writer thread's as stacked bars,
//! the setup.

use ratatui::layout::Rect;
use ratatui::style::{Color, Modifier, Stylize};
use ratatui::text::{Line, Span};

use super::text::{fit_groups, shown};
use crate::explorer::app::App;
use flushlab_core::accounting::Accounting;
use flushlab_core::meters::Meters;
use flushlab_core::units::{bytes, count, percent, thousands};
use flushlab_core::writer_mode::{Buffering, Mode};

/// The last key's time to its frame, and the mode it was typed in: `key→frame 480 ms in
/// stderr/raw` (what a person feels of a mode, beside what the meters count).
pub(super) fn key_to_frame(app: &App) -> Option<String> {
    let key = app.key_to_frame?;
    Some(format!(
        "key→frame {} in {}",
        flushlab_core::units::milliseconds(key.took.as_secs_f64() * 1e3),
        key.mode
    ))
}

/// Where the last key's time went: `last key = input 0.12 ms · processing 2.10 ms · emit
/// 478 ms` (the writes, not the work, are what an unbuffered mode costs).
pub(super) fn key_stages(app: &App) -> Option<String> {
    let s = app.key_to_frame?.stages;
    let ms = flushlab_core::units::milliseconds;
    Some(format!(
        "last key = input {} · processing {} · emit {}",
        ms(s.input_delay.unwrap_or(0.0)),
        ms(s.processing),
        ms(s.emit)
    ))
}

pub(super) fn counts_line(app: &App, meters: &Meters, width: u16) -> Line<'static> {
    let window = meters.window.unwrap_or_default();
    let mut groups = vec![
        vec![Span::raw(format!(
            "frames (all modes) {}",
            thousands(meters.sampled_frames())
        ))],
        vec![Span::raw(format!(
            "   writes/frame {}",
            shown(meters, window.writes_per_frame(), count)
        ))],
        vec![Span::raw(format!(
            "   bytes/frame {}",
            shown(meters, window.bytes_per_frame(), bytes)
        ))],
    ];
    if let Some(key) = key_to_frame(app) {
        groups.push(vec![Span::raw(format!("   {key}")).bold()]);
    }
    // What the terminal model saw, last: where the line is short, the key's time stays.
    if let (Some(torn), Some(share)) = (window.torn_per_second(), window.seen.torn_share()) {
        groups.push(vec![Span::raw(format!(
            "   torn {}/s ({} of frames)",
            count(torn),
            percent(share)
        ))]);
    }

    fit_groups(groups, None, width)
}

pub(super) fn costs_line(meters: &Meters, width: u16) -> Line<'static> {
    let window = meters.window.unwrap_or_default();
    fit_groups(
        vec![
            vec![Span::raw(format!(
                "bytes/write {}",
                shown(meters, window.bytes_per_write(), count)
            ))],
            vec![
                Span::raw("   kernel ").add_modifier(Modifier::BOLD),
                Span::raw(shown(meters, Some(window.kernel_share()), percent)).bold(),
            ],
            vec![Span::raw(format!(
                "   CPU {} ms/f",
                shown(meters, window.figures().cpu_ms_per_frame(), |v| format!(
                    "{v:.2}"
                ))
            ))],
            vec![Span::raw(format!(
                "   cells/frame {}",
                shown(meters, Some(window.cells_per_frame()), count)
            ))],
        ],
        None,
        width,
    )
}

/// Colours of the time split's parts, in [`TimeSplit::parts`]'s order.
pub(super) const SPLIT_COLOURS: [Color; 6] = [
    Color::LightBlue,
    Color::Cyan,
    Color::LightRed,
    Color::Magenta,
    Color::Yellow,
    Color::DarkGray,
];

/// A frame's wall time on the painting thread as one stacked bar, and its legend: what each
/// part took, in ms. In the thread modes the painter never waits for the reader itself: its
/// wait is for the writer thread to take the frame.
pub(super) fn split_line(mode: Mode, meters: &Meters, width: u16) -> Line<'static> {
    let Some(split) = meters
        .window
        .and_then(|w| w.time_split())
        .filter(|s| s.total_ms() > 0.0)
    else {
        return Line::from("frame time: –").fg(Color::Gray);
    };
    let mut parts = split.parts();
    if mode.buffering == Buffering::Thread {
        parts[4].0 = "writer wait";
    }
    stacked_bar("frame ", &parts, &SPLIT_COLOURS, width)
}

/// The writer thread's frame in the thread modes (on a CPU, waiting for one, for the next
/// frame, for the reader); in the other modes, that there is none.
pub(super) fn writer_line(mode: Mode, meters: &Meters, width: u16) -> Line<'static> {
    if mode.buffering != Buffering::Thread {
        return Line::from("writer thread: none, the painting thread writes").fg(Color::DarkGray);
    }
    let Some(writer) = meters
        .window
        .and_then(|w| w.time_split())
        .and_then(|s| s.writer)
    else {
        return Line::from("writer thread: –").fg(Color::Gray);
    };
    stacked_bar("writer", &writer.parts(), &WRITER_COLOURS, width)
}

/// Colours of the writer thread's parts, in [`flushlab_core::figures::WriterSplit::parts`]'s order:
/// the same colour as the painter's part of the same kind.
pub(super) const WRITER_COLOURS: [Color; 4] = [
    Color::LightRed,
    Color::Magenta,
    Color::DarkGray,
    Color::Yellow,
];

/// `label`, a bar of `parts` (cells by cumulative share, so that it is always exactly its
/// width) and their legend in ms; fitted to `width`.
pub(super) fn stacked_bar(
    label: &str,
    parts: &[(&'static str, f64)],
    colours: &[Color],
    width: u16,
) -> Line<'static> {
    let total: f64 = parts.iter().map(|p| p.1).sum();
    let bar_width = usize::from(width / 5).clamp(8, 24);
    let mut spans = vec![Span::raw(format!("{label} "))];
    let mut used = 0;
    let mut upto = 0.0;
    for (&(_, ms), &colour) in parts.iter().zip(colours) {
        upto += ms;
        let end = ((upto / total.max(f64::MIN_POSITIVE)) * bar_width as f64).round() as usize;
        let cells = end.saturating_sub(used);
        used += cells;
        if cells > 0 && ms > 0.0 {
            spans.push(Span::raw("█".repeat(cells)).fg(colour));
        }
    }
    spans.push(Span::raw(" "));
    let mut groups = vec![spans];
    for (&(name, ms), &colour) in parts.iter().zip(colours) {
        if ms >= 0.005 || name.ends_with("reader wait") {
            groups.push(vec![
                Span::raw(format!(" {name} ")).fg(colour),
                Span::raw(format!("{ms:.2}")),
            ]);
        }
    }
    fit_groups(groups, Some(Span::raw(" ms")), width)
}

pub(super) fn setup_line(app: &App, meters: &Meters, area: Rect) -> Line<'static> {
    Line::from(format!(
        "scene {} · sync {} · backend {} · {}x{} · accounting {}{}",
        app.scene.name(),
        if app.sync { "on" } else { "off" },
        app.backend.name(),
        area.width,
        area.height,
        match (
            flushlab_core::accounting::accounting(),
            meters.accounting_available()
        ) {
            (_, false) => "n/a",
            (Accounting::Kernel, true) => "/proc/self/io",
            (Accounting::Counting, true) => "counting layer",
        },
        match app.paint {
            Some(policy) => format!(" · model {policy}"),
            None => String::new(),
        }
    ))
}
