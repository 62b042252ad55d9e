//! The FPS gauge on its log scale (1 to 10,000 fps), its big three-row form for the lesson, the
//! scale under it and the sparkline of the last seconds.

use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::style::{Color, Style, Stylize};
use ratatui::text::Line;
use ratatui::widgets::{Gauge, Sparkline, Widget};

use flushlab_core::meters::Meters;
use flushlab_core::units::count;

/// The gauge's decades: 1 fps at the left end, 10,000 at the right.
pub(super) const DECADES: f64 = 4.0;

pub(super) const SCALE: [&str; 5] = ["1", "10", "100", "1k", "10k fps"];

/// The gauge's colour tells slow from fast: red below 10 fps (a slideshow), yellow below 30
/// (visibly choppy), green from there.
pub fn gauge_colour(fps: f64) -> Color {
    if fps < 10.0 {
        Color::Red
    } else if fps < 30.0 {
        Color::Yellow
    } else {
        Color::Green
    }
}

/// 0..=1 of the gauge for `fps`: logarithmic, 1 fps at 0, 10,000 at 1.
pub fn log_position(fps: f64) -> f64 {
    (fps.max(1.0).log10() / DECADES).clamp(0.0, 1.0)
}

pub(super) fn render_gauge(meters: &Meters, area: Rect, buf: &mut Buffer) {
    match meters.window {
        Some(window) => {
            let fps = window.fps();
            Gauge::default()
                .ratio(log_position(fps))
                .label(format!("{} fps", count(fps)))
                .gauge_style(
                    Style::new()
                        .fg(gauge_colour(fps))
                        .bg(Color::Rgb(40, 40, 40)),
                )
                .render(area, buf);
        }
        None => Line::from("measuring… (figures update once a second)")
            .italic()
            .render(area, buf),
    }
}

/// The lesson's gauge: a bar three rows tall, its figure in big digits at its right end.
pub(super) fn render_big_gauge(meters: &Meters, area: Rect, buf: &mut Buffer) {
    let one_row = Rect { height: 1, ..area };
    let Some(window) = meters.window else {
        return render_gauge(meters, one_row, buf);
    };
    let fps = window.fps();
    let figure = count(fps);
    let big = crate::explorer::big_digits::rows(&figure);
    let big_width = big[0].chars().count() as u16;
    let label_width = big_width + " fps".len() as u16;
    if area.width < label_width + 12 {
        return render_gauge(meters, one_row, buf);
    }
    let bar = Rect {
        width: area.width - label_width - 1,
        ..area
    };
    // Whole cells only: a bar three rows tall has no label to leave room for.
    let filled = (log_position(fps) * f64::from(bar.width)).round() as u16;
    buf.set_style(bar, Style::new().bg(Color::Rgb(40, 40, 40)));
    for y in bar.top()..bar.bottom() {
        for x in bar.left()..bar.left() + filled.min(bar.width) {
            buf[(x, y)].set_symbol("█").set_fg(gauge_colour(fps));
        }
    }
    let x = bar.right() + 1;
    let style = Style::new().fg(gauge_colour(fps)).bold();
    for (i, row) in (0..).zip(&big) {
        buf.set_string(x, area.y + i, row, style);
    }
    buf.set_string(
        x + big_width,
        area.y + crate::explorer::big_digits::ROWS as u16 - 1,
        " fps",
        Style::new().bold(),
    );
}

pub(super) fn render_gauge_or_wait(meters: &Meters, area: Rect, buf: &mut Buffer) {
    match meters.window {
        Some(_) => render_gauge(meters, area, buf),
        None => Line::from("measuring…").italic().render(area, buf),
    }
}

/// The gauge's scale: each decade's label where the gauge reaches it.
pub(super) fn render_scale(area: Rect, buf: &mut Buffer) {
    if area.width < 12 {
        return;
    }
    let last = f64::from(area.width - 1);
    // A label that would touch the one before it is left out (the last, "10k fps", always
    // stays: it names the unit), so that no two ever run together ("100    110k fps").
    let mut placed: Vec<(u16, &str)> = Vec::new();
    for (i, label) in SCALE.iter().enumerate().rev() {
        let at = (i as f64 / DECADES * last).round() as u16;
        let x = at.min(area.width.saturating_sub(label.chars().count() as u16));
        let end = x + label.chars().count() as u16;
        if placed.iter().all(|&(other, _)| end < other) {
            placed.push((x, label));
        }
    }
    for (x, label) in placed {
        buf.set_string(area.x + x, area.y, label, Style::new().fg(Color::DarkGray));
    }
}

pub(super) fn render_sparkline(meters: &Meters, area: Rect, buf: &mut Buffer) {
    // On the gauge's log scale, so 2 fps and 60 fps look different at any time.
    let history: Vec<u64> = meters
        .fps_history
        .iter()
        .map(|&fps| (log_position(fps as f64) * 1000.0).round() as u64)
        .collect();
    let shown = &history[history.len().saturating_sub(usize::from(area.width))..];
    Sparkline::default()
        .data(shown)
        .max(1000)
        .fg(Color::Green)
        .render(area, buf);
}
