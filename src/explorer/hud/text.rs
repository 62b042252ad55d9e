//! Text that fits: cut to a width, a figure or a dash, groups of words that break between groups, a
//! centred box.

use ratatui::layout::Rect;
use ratatui::text::{Line, Span};

use flushlab_core::meters::Meters;

/// `text` in `width` columns: whole when it fits, else cut after the last ` · ` that leaves
/// room for "…", never in the middle of a figure.
pub(super) fn fitted(text: &str, width: u16) -> String {
    let width = usize::from(width);
    if text.chars().count() <= width {
        return text.to_owned();
    }
    let mut kept = String::new();
    for (i, piece) in text.split(" · ").enumerate() {
        let next = if i == 0 {
            piece.to_owned()
        } else {
            format!("{kept} · {piece}")
        };
        if next.chars().count() + 2 > width {
            break;
        }
        kept = next;
    }
    if kept.is_empty() {
        kept = text.chars().take(width.saturating_sub(1)).collect();
    }
    kept + " …"
}

pub(super) fn shown(meters: &Meters, value: Option<f64>, format: fn(f64) -> String) -> String {
    match value {
        Some(v) if meters.window.is_some() => format(v),
        _ => "–".to_owned(),
    }
}

/// The groups of spans that fit in `width` columns, whole, in order, then `tail`; when some
/// did not fit, " …" says so. A figure is never cut in half.
pub(super) fn fit_groups(
    groups: Vec<Vec<Span<'static>>>,
    tail: Option<Span<'static>>,
    width: u16,
) -> Line<'static> {
    let columns = |spans: &[Span]| spans.iter().map(Span::width).sum::<usize>();
    let tail_width = tail.as_ref().map_or(0, Span::width);
    let all = groups.iter().map(|g| columns(g)).sum::<usize>() + tail_width;
    let mut room = usize::from(width);
    // Where something will be cut, room is kept for the " …" that says so.
    let reserve = if all > room { 2 } else { 0 } + tail_width;
    let mut spans = Vec::new();
    let mut cut = false;
    for group in groups {
        let needed = columns(&group);
        if cut || needed + reserve > room {
            cut = true;
            continue;
        }
        room -= needed;
        spans.extend(group);
    }
    if cut {
        spans.push(Span::raw(" …"));
    }
    spans.extend(tail);
    Line::from(spans)
}

/// A `width`×`height` box in the middle of `area`, no larger than it: where overlays go.
pub(super) fn centered(area: Rect, width: u16, height: u16) -> Rect {
    let (width, height) = (width.min(area.width), height.min(area.height));
    Rect {
        x: area.x + (area.width - width) / 2,
        y: area.y + (area.height - height) / 2,
        width,
        height,
    }
}
