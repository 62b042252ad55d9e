//! The heads-up display, drawn over the scene and written with it: the HUD costs what any TUI's
//! widgets cost, and only when its figures change (once a second), thanks to the diff.
//!
//! Its size depends on the screen size and the [`HudLayout`] alone, never on what it shows, so
//! every mode compared under one [`Condition`](crate::condition::Condition) draws the same
//! scene cells: the table has room for [`TABLE_ROWS`] rows from the start. When the screen is
//! too small for everything, parts go in a fixed order and the frame rate goes last.

use std::cell::RefCell;

use ratatui::buffer::Buffer;
use ratatui::layout::{Constraint, Rect};
use ratatui::style::{Color, Modifier, Style, Stylize};
use ratatui::text::{Line, Span};
use ratatui::widgets::{
    Block, BorderType, Clear, Gauge, Paragraph, Row, Sparkline, Table, Widget, Wrap,
};

use crate::accounting::Accounting;
use crate::app::App;
use crate::condition::HudLayout;
use crate::meters::{Meters, ModeRow, Totals};
use crate::scene::Scene;
use crate::units::{bytes, count, percent, thousands};
use crate::writer_mode::{Buffering, Mode, Stream};

/// The full HUD's widest: room for the longest expression on one line.
const FULL_WIDTH: u16 = 100;
/// Rows the full HUD's table keeps for modes, visited or not.
pub const TABLE_ROWS: u16 = 10;
/// The key legend, one binding per item: lines break between items, never inside one.
/// The gauge's decades: 1 fps at the left end, 10,000 at the right.
const DECADES: f64 = 4.0;
const SCALE: [&str; 5] = ["1", "10", "100", "1k", "10k fps"];

/// Draws frames: the scene, the HUD over it (laid out again only when what it shows changed),
/// the help. Owns the HUD's cells as last laid out.
#[derive(Debug, Default)]
pub struct Hud {
    cache: Layer<HudKey>,
    /// A lesson's caption panel, laid out again only when what it shows changed.
    lesson: Layer<(u64, usize, Mode, Rect)>,
}

/// Cells laid out once and copied into every frame until their key changes: what the HUD and
/// a lesson's caption show changes once a second, the frame every few milliseconds.
#[derive(Debug)]
struct Layer<K>(RefCell<Option<(K, Buffer)>>);

impl<K> Default for Layer<K> {
    fn default() -> Self {
        Layer(RefCell::new(None))
    }
}

impl<K: PartialEq> Layer<K> {
    /// Copies the cells laid out for `key` into `buf`, laying them out over `area` by `render`
    /// first when the key changed.
    fn paint(&self, key: K, area: Rect, render: impl FnOnce(&mut Buffer), buf: &mut Buffer) {
        let mut cache = self.0.borrow_mut();
        if !matches!(&*cache, Some((k, _)) if *k == key) {
            let mut cells = Buffer::empty(area);
            if !area.is_empty() {
                render(&mut cells);
            }
            *cache = Some((key, cells));
        }
        if let Some((_, cells)) = &*cache {
            for y in cells.area.top()..cells.area.bottom() {
                for x in cells.area.left()..cells.area.right() {
                    buf[(x, y)].clone_from(&cells[(x, y)]);
                }
            }
        }
    }
}

/// Everything the HUD shows. The layout, table and strings cost ~3% of a sparse frame's CPU
/// time here (`CEILING=cpu SCENE=sparse DURATION=2 flushlab`, 2,360 → 2,450 fps), which would
/// otherwise be measured as part of every mode.
#[derive(Clone, Debug, PartialEq)]
struct HudKey {
    meters: u64,
    mode: Mode,
    sync: bool,
    scene: Scene,
    layout: HudLayout,
    area: Rect,
    status: Option<String>,
}

impl Hud {
    /// Frame number `frame` as the frame loop draws it: the scene, the HUD over it, the help.
    pub fn paint_frame(
        &self,
        app: &App,
        meters: &Meters,
        frame: u64,
        area: Rect,
        buf: &mut Buffer,
    ) {
        app.scene.paint(frame, area, buf);
        self.paint_hud(app, meters, area, buf);
        // In a lesson the caption keeps the bottom of the screen: overlays go above it.
        let above = match app.lesson {
            Some(step) => {
                let key = (meters.generation(), step, app.mode, area);
                let panel = lesson_area(area);
                let render = |cells: &mut Buffer| render_lesson(app, meters, step, area, cells);
                self.lesson.paint(key, panel, render, buf);
                Rect {
                    height: area.height.saturating_sub(crate::lesson::PANEL_LINES),
                    ..area
                }
            }
            None => area,
        };
        if app.show_table {
            render_table_overlay(app, meters, area, above, buf);
        }
        if app.show_help {
            render_help(area, buf);
        }
    }

    fn paint_hud(&self, app: &App, meters: &Meters, area: Rect, buf: &mut Buffer) {
        let key = HudKey {
            meters: meters.generation(),
            mode: app.mode,
            sync: app.sync,
            scene: app.scene,
            layout: app.hud,
            area,
            status: app.status.clone(),
        };
        let render = |hud: &mut Buffer| match app.hud {
            HudLayout::Full => render_full(app, meters, area, hud),
            HudLayout::Compact => render_compact(app, meters, area, hud),
        };
        self.cache.paint(key, hud_area(app.hud, area), render, buf);
    }
}

/// The layout drawn on a `cols`×`rows` screen: the one wanted, unless the full panel would
/// cover more than a third of the screen's cells — then compact, so that the measured scene is
/// always most of the screen, whatever the size was when the run started.
pub fn fitting(wanted: HudLayout, cols: u16, rows: u16) -> HudLayout {
    let screen = Rect::new(0, 0, cols, rows);
    let covered = hud_area(HudLayout::Full, screen).area();
    if wanted == HudLayout::Full && covered * 3 <= screen.area() {
        HudLayout::Full
    } else {
        HudLayout::Compact
    }
}

/// The condition `app` draws its next frame under on a `cols`×`rows` screen, its HUD fitted to
/// that size first (after every resize and every key). Says so when the size, not the user,
/// chose the compact HUD.
pub fn fit(app: &mut App, cols: u16, rows: u16) -> crate::condition::Condition {
    // Called every frame; the layout's geometry (every mode's expression measured) only when
    // the size or the wish changed.
    if app.hud_fitted_for == Some((app.hud_wanted, cols, rows)) {
        return app.condition(cols, rows);
    }
    app.hud_fitted_for = Some((app.hud_wanted, cols, rows));
    let layout = fitting(app.hud_wanted, cols, rows);
    if layout != app.hud && layout != app.hud_wanted {
        app.status = Some(format!(
            "compact HUD: the full one would cover over a third of {cols}x{rows}"
        ));
    }
    app.hud = layout;
    app.condition(cols, rows)
}

/// What the HUD covers of `area`: a function of the screen size and the layout alone.
pub fn hud_area(layout: HudLayout, area: Rect) -> Rect {
    let (width, height) = match layout {
        HudLayout::Full => {
            let width = area.width.min(FULL_WIDTH);
            let inner = width.saturating_sub(2);
            let wanted = 2 + full_sections(inner).iter().map(|s| s.1).sum::<u16>();
            (width, wanted)
        }
        // Figures, gauge, the expression, why it costs what it costs, a status line.
        HudLayout::Compact => (area.width, 3 + expression_lines(area.width) + WHY_LINES),
    };
    let hud = Rect {
        width,
        height: area.height.min(height),
        ..area
    };
    if hud.width < 12 || hud.height < 1 {
        Rect {
            width: 0,
            height: 0,
            ..area
        }
    } else {
        hud
    }
}

/// The full HUD's parts: what, how many lines, and the order in which they give way when the
/// screen is short (higher goes later; the frame rate goes last).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Part {
    Expression,
    Why,
    Gauge,
    Scale,
    Sparkline,
    Counts,
    Costs,
    Split,
    Setup,
    Table,
    Status,
    Keys,
}

fn full_sections(inner: u16) -> [(Part, u16, u8); 12] {
    [
        (Part::Expression, expression_lines(inner), 8),
        (Part::Why, WHY_LINES, 5),
        (Part::Gauge, 1, 9),
        (Part::Scale, 1, 4),
        (Part::Sparkline, 1, 2),
        (Part::Counts, 1, 7),
        (Part::Costs, 1, 6),
        (Part::Split, 2, 5),
        (Part::Setup, 1, 3),
        (Part::Table, TABLE_ROWS + 2, 0),
        (Part::Status, 1, 1),
        (Part::Keys, key_lines(inner).len() as u16, 5),
    ]
}

/// Lines the longest expression of any mode takes at `width`: the HUD reserves that many, so
/// switching modes never changes its size.
fn expression_lines(width: u16) -> u16 {
    let longest = Mode::all(1 << 20)
        .map(|m| expression_with_name(m).chars().count())
        .max()
        .unwrap_or(1);
    longest.div_ceil(usize::from(width.max(1))) as u16
}

/// The expression, and std's name for it when it is one of std's handles as std buffers them.
fn expression_with_name(mode: Mode) -> String {
    let expression = mode.expression();
    match (mode.stream, mode.buffering) {
        (Stream::Stdout, Buffering::Line) | (Stream::Stderr, Buffering::Raw) => {
            format!("{expression}  = std's {}()", mode.stream.name())
        }
        _ => expression,
    }
}

/// `width`-wide lines of the expression: cut at any character, so that every character shows.
fn expression_text(mode: Mode, width: u16) -> Vec<Line<'static>> {
    let chars: Vec<char> = expression_with_name(mode).chars().collect();
    chars
        .chunks(usize::from(width.max(1)))
        .map(|c| Line::from(c.iter().collect::<String>()).fg(Color::LightCyan))
        .collect()
}

/// Lines the "why" sentence has, whatever the mode and its figures: the HUD keeps its size.
const WHY_LINES: u16 = 2;

/// One sentence on why the current mode costs what it costs, with its live figures (the last
/// second's): what a newcomer needs to read the numbers above it.
pub fn why(mode: Mode, meters: &Meters) -> String {
    let window = meters.window.unwrap_or_default();
    if let Some((share, _)) = window
        .time_split()
        .filter(|s| s.reader_bound())
        .and_then(|s| s.reader_share())
        && meters.window.is_some()
    {
        let cpu = window.figures().cpu_ms_per_frame().unwrap_or_default();
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
    let capacity = crate::units::format_capacity(mode.capacity);
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
fn why_text(mode: Mode, meters: &Meters, width: u16) -> Vec<Line<'static>> {
    let width = usize::from(width.max(1));
    let mut lines: Vec<String> = Vec::new();
    let mut line = String::new();
    for word in why(mode, meters).split(' ') {
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

/// The key legend packed into lines of `width`, breaking only between bindings.
fn key_lines(width: u16) -> Vec<String> {
    let mut lines: Vec<String> = Vec::new();
    let mut line = String::new();
    for key in crate::keys::footer() {
        let joined = if line.is_empty() {
            key.to_string()
        } else {
            format!("{line} · {key}")
        };
        if joined.chars().count() <= usize::from(width) || line.is_empty() {
            line = joined;
        } else {
            lines.push(std::mem::replace(&mut line, key.to_string()));
        }
    }
    lines.push(line);
    lines
}

fn render_full(app: &App, meters: &Meters, area: Rect, buf: &mut Buffer) {
    let hud = buf.area;
    Clear.render(hud, buf);
    let block = Block::bordered()
        .border_type(BorderType::Rounded)
        .title(Line::from(format!(" flushlab · {} ", app.mode)).bold())
        .title_bottom(Line::from(" h: help ").right_aligned())
        .style(Style::new().fg(Color::White).bg(Color::Rgb(20, 20, 28)));
    let inner = block.inner(hud);
    block.render(hud, buf);

    // Who stays when the screen is short: by priority, the frame rate last to go.
    let sections = full_sections(inner.width);
    let mut room = inner.height;
    let mut heights = [0u16; 12];
    let mut order: Vec<usize> = (0..sections.len()).collect();
    order.sort_by_key(|&i| std::cmp::Reverse(sections[i].2));
    for i in order {
        let take = sections[i].1.min(room);
        // A part is shown whole or not at all, except the table, which can lose rows.
        let take = if take == sections[i].1 || sections[i].0 == Part::Table {
            take
        } else {
            0
        };
        heights[i] = take;
        room -= take;
    }
    let mut y = inner.y;
    for (i, (part, _, _)) in sections.iter().enumerate() {
        let rect = Rect {
            x: inner.x,
            y,
            width: inner.width,
            height: heights[i],
        };
        y += heights[i];
        if rect.height == 0 {
            continue;
        }
        match part {
            Part::Expression => {
                Paragraph::new(expression_text(app.mode, rect.width)).render(rect, buf)
            }
            Part::Why => Paragraph::new(why_text(app.mode, meters, rect.width)).render(rect, buf),
            Part::Gauge => render_gauge(meters, rect, buf),
            Part::Scale => render_scale(rect, buf),
            Part::Sparkline => render_sparkline(meters, rect, buf),
            Part::Counts => counts_line(meters, rect.width).render(rect, buf),
            Part::Costs => costs_line(meters, rect.width).render(rect, buf),
            Part::Split => Paragraph::new(vec![
                split_line(app.mode, meters, rect.width),
                writer_line(app.mode, meters, rect.width),
            ])
            .render(rect, buf),
            Part::Setup => setup_line(app, meters, area)
                .fg(Color::Gray)
                .render(rect, buf),
            Part::Table => render_table(app, meters, area, rect, buf),
            Part::Status => {
                if let Some(message) = &app.status {
                    Line::from(format!("▸ {message}"))
                        .fg(Color::Yellow)
                        .render(rect, buf);
                }
            }
            Part::Keys => Paragraph::new(
                key_lines(rect.width)
                    .into_iter()
                    .map(Line::from)
                    .collect::<Vec<_>>(),
            )
            .fg(Color::DarkGray)
            .render(rect, buf),
        }
    }
}

/// A few lines across the top: the figures (and the frame rate first), the expression, the
/// gauge with its scale.
fn render_compact(app: &App, meters: &Meters, _area: Rect, buf: &mut Buffer) {
    let hud = buf.area;
    Clear.render(hud, buf);
    buf.set_style(
        hud,
        Style::new().fg(Color::White).bg(Color::Rgb(20, 20, 28)),
    );
    let window = meters.window.unwrap_or_default();
    let figures = format!(
        "flushlab · {} · {} fps · CPU {} ms/f · {} writes/f · {}/f · kernel {} · h help",
        app.mode,
        shown(meters, Some(window.fps()), count),
        shown(meters, window.figures().cpu_ms_per_frame(), |v| format!(
            "{v:.1}"
        )),
        shown(meters, window.writes_per_frame(), count),
        shown(meters, window.bytes_per_frame(), bytes),
        shown(meters, Some(window.kernel_share()), percent),
    );
    let row = |y: u16| Rect {
        y,
        height: 1,
        ..hud
    };
    Line::from(fitted(&figures, hud.width))
        .bold()
        .render(row(hud.y), buf);
    if hud.height > 1 {
        let [gauge, scale] = row(hud.y + 1).layout(&ratatui::layout::Layout::horizontal([
            Constraint::Fill(1),
            Constraint::Fill(1),
        ]));
        render_gauge_or_wait(meters, gauge, buf);
        render_scale(scale, buf);
    }
    let why_y = hud.y + 2 + expression_lines(hud.width);
    for (i, text) in why_text(app.mode, meters, hud.width)
        .into_iter()
        .enumerate()
    {
        let y = why_y + i as u16;
        if y < hud.bottom() {
            text.render(row(y), buf);
        }
    }
    let status_y = why_y + WHY_LINES;
    if let Some(message) = &app.status
        && status_y < hud.bottom()
    {
        Line::from(format!("▸ {message}"))
            .fg(Color::Yellow)
            .render(row(status_y), buf);
    }
    for (i, text) in expression_text(app.mode, hud.width).into_iter().enumerate() {
        let y = hud.y + 2 + i as u16;
        if y < hud.bottom() {
            text.render(row(y), buf);
        }
    }
}

/// `text` in `width` columns: whole when it fits, else cut after the last ` · ` that leaves
/// room for "…", never in the middle of a figure.
fn fitted(text: &str, width: u16) -> String {
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

fn render_gauge(meters: &Meters, area: Rect, buf: &mut Buffer) {
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
fn render_big_gauge(meters: &Meters, area: Rect, buf: &mut Buffer) {
    let one_row = Rect { height: 1, ..area };
    let Some(window) = meters.window else {
        return render_gauge(meters, one_row, buf);
    };
    let fps = window.fps();
    let figure = count(fps);
    let big = crate::big_digits::rows(&figure);
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
        area.y + crate::big_digits::ROWS as u16 - 1,
        " fps",
        Style::new().bold(),
    );
}

fn render_gauge_or_wait(meters: &Meters, area: Rect, buf: &mut Buffer) {
    match meters.window {
        Some(_) => render_gauge(meters, area, buf),
        None => Line::from("measuring…").italic().render(area, buf),
    }
}

/// The gauge's scale: each decade's label where the gauge reaches it.
fn render_scale(area: Rect, buf: &mut Buffer) {
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

fn render_sparkline(meters: &Meters, area: Rect, buf: &mut Buffer) {
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

fn shown(meters: &Meters, value: Option<f64>, format: fn(f64) -> String) -> String {
    match value {
        Some(v) if meters.window.is_some() => format(v),
        _ => "–".to_owned(),
    }
}

fn counts_line(meters: &Meters, width: u16) -> Line<'static> {
    let window = meters.window.unwrap_or_default();
    fit_groups(
        vec![
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
        ],
        None,
        width,
    )
}

fn costs_line(meters: &Meters, width: u16) -> Line<'static> {
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

/// The groups of spans that fit in `width` columns, whole, in order, then `tail`; when some
/// did not fit, " …" says so. A figure is never cut in half.
fn fit_groups(
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

/// Colours of the time split's parts, in [`TimeSplit::parts`]'s order.
const SPLIT_COLOURS: [Color; 6] = [
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
fn split_line(mode: Mode, meters: &Meters, width: u16) -> Line<'static> {
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
fn writer_line(mode: Mode, meters: &Meters, width: u16) -> Line<'static> {
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

/// Colours of the writer thread's parts, in [`crate::figures::WriterSplit::parts`]'s order:
/// the same colour as the painter's part of the same kind.
const WRITER_COLOURS: [Color; 4] = [
    Color::LightRed,
    Color::Magenta,
    Color::DarkGray,
    Color::Yellow,
];

/// `label`, a bar of `parts` (cells by cumulative share, so that it is always exactly its
/// width) and their legend in ms; fitted to `width`.
fn stacked_bar(
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

fn setup_line(app: &App, meters: &Meters, area: Rect) -> Line<'static> {
    Line::from(format!(
        "scene {} · sync {} · {}x{} · accounting {}",
        app.scene.name(),
        if app.sync { "on" } else { "off" },
        area.width,
        area.height,
        match (
            crate::accounting::accounting(),
            meters.accounting_available()
        ) {
            (_, false) => "n/a",
            (Accounting::Kernel, true) => "/proc/self/io",
            (Accounting::Counting, true) => "counting layer",
        },
    ))
}

/// A `width`×`height` box in the middle of `area`, no larger than it: where overlays go.
fn centered(area: Rect, width: u16, height: u16) -> Rect {
    let (width, height) = (width.min(area.width), height.min(area.height));
    Rect {
        x: area.x + (area.width - width) / 2,
        y: area.y + (area.height - height) / 2,
        width,
        height,
    }
}

/// Every mode measured under the current condition, over the scene (`m`; opened at the end of a
/// tour): at any size where the HUD has no room for its table.
/// The table of every mode measured on the `area` screen, in the middle of `within`.
fn render_table_overlay(app: &App, meters: &Meters, area: Rect, within: Rect, buf: &mut Buffer) {
    let condition = app.condition(area.width, area.height);
    let rows = meters.rows_under(condition).count() as u16;
    // Header, rows, the notes line, the status (the tour's verdict), the border.
    let popup = centered(within, 80, rows.max(1) + 6);
    Clear.render(popup, buf);
    let block = Block::bordered()
        .border_type(BorderType::Rounded)
        .title(" modes under this condition · m or Esc closes ")
        .title_bottom(" measurement paused while the table is open ")
        .style(Style::new().fg(Color::White).bg(Color::Rgb(20, 40, 30)));
    let inner = block.inner(popup);
    block.render(popup, buf);
    let table = Rect {
        height: inner.height.saturating_sub(1),
        ..inner
    };
    render_table(app, meters, area, table, buf);
    if let Some(message) = &app.status
        && inner.height > 1
    {
        Paragraph::new(format!("▸ {message}"))
            .fg(Color::Yellow)
            .render(
                Rect {
                    y: inner.bottom() - 1,
                    height: 1,
                    ..inner
                },
                buf,
            );
    }
}

/// The rows measured under the current condition, and how many rows other conditions hold:
/// those are never compared with these. When more rows were measured than fit, none is
/// dropped silently: std's `stdout()` and `stderr()` and the current mode stay, then the most
/// recent, and the table says how many are folded away.
fn render_table(app: &App, meters: &Meters, area: Rect, rect: Rect, buf: &mut Buffer) {
    // A header and a note at least; an overlay on a tiny screen may not have them.
    if rect.height < 2 || rect.width == 0 {
        return;
    }
    let condition = app.condition(area.width, area.height);
    let all: Vec<_> = meters.rows_under(condition).collect();
    let others = meters.rows.len() - all.len();
    let kept = rows_that_fit(&all, usize::from(rect.height.saturating_sub(2)), app);
    let folded = all.len() - kept.len();
    // Columns, last given up first where the table is narrower than all of them (never a
    // header cut in half).
    let columns = TABLE_COLUMNS
        .iter()
        .scan(0u16, |used, (_, width)| {
            *used += width + 1;
            Some(*used)
        })
        .take_while(|used| *used <= rect.width + 1)
        .count()
        .max(1);
    let header = Row::new(TABLE_COLUMNS[..columns].iter().map(|(name, _)| *name))
        .style(Style::new().bold().underlined());
    let body = kept.iter().map(|row| {
        let style = if row.mode == app.mode.key() {
            Style::new().fg(Color::LightGreen)
        } else {
            Style::new()
        };
        let mut cells = table_cells(&row.mode.to_string(), &row.totals).to_vec();
        cells.truncate(columns);
        Row::new(cells).style(style)
    });
    let widths = TABLE_COLUMNS[..columns]
        .iter()
        .map(|(_, width)| Constraint::Length(*width));
    let table_area = Rect {
        height: rect.height.saturating_sub(1),
        ..rect
    };
    Widget::render(Table::new(body, widths).header(header), table_area, buf);
    let note = if all.is_empty() {
        "modes appear here as you leave them (space, t for a tour)".to_owned()
    } else {
        fitted(&table_notes(folded, others), rect.width)
    };
    let note_area = Rect {
        y: rect.bottom() - 1,
        height: 1,
        ..rect
    };
    if all.is_empty() {
        Line::from(note).italic().render(
            Rect {
                y: rect.y + 1,
                height: 1,
                ..rect
            },
            buf,
        );
    } else {
        Line::from(note)
            .italic()
            .fg(Color::Gray)
            .render(note_area, buf);
    }
}

/// The rows that fit in `room`, in the order they were visited: std's `stdout()` and
/// `stderr()` and the current mode first, then the most recent.
fn rows_that_fit<'a>(all: &[&'a ModeRow], room: usize, app: &App) -> Vec<&'a ModeRow> {
    if all.len() <= room {
        return all.to_vec();
    }
    let first = |r: &&ModeRow| {
        r.mode.buffering == r.mode.stream.std_buffering() || r.mode.key() == app.mode.key()
    };
    let mut kept: Vec<_> = all.iter().copied().filter(first).take(room).collect();
    for row in all.iter().rev() {
        if kept.len() >= room {
            break;
        }
        if !kept.iter().any(|k| std::ptr::eq(*k, *row)) {
            kept.push(row);
        }
    }
    all.iter()
        .copied()
        .filter(|r| kept.iter().any(|k| std::ptr::eq(*k, *r)))
        .collect()
}

/// What the table does not show: rows folded away, rows of other conditions.
fn table_notes(folded: usize, others: usize) -> String {
    let mut notes = Vec::new();
    if folded > 0 {
        notes.push(format!(
            "{folded} more row(s) folded (m shows all; the report has all)"
        ));
    }
    if others > 0 {
        notes.push(format!(
            "{others} under other conditions (scene, size, sync, HUD): not compared"
        ));
    }
    notes.join(" · ")
}

/// The mode table's columns and their widths, in the order they are given up from the end.
const TABLE_COLUMNS: [(&str, u16); 7] = [
    ("mode", 20),
    ("fps", 8),
    ("CPU ms/f", 8),
    ("writes/f", 10),
    ("bytes/f", 10),
    ("kernel", 7),
    ("frames", 8),
];

/// A row of the mode table, in [`TABLE_COLUMNS`]' order.
fn table_cells(mode: &str, t: &Totals) -> [String; 7] {
    let or_dash = |v: Option<f64>, f: fn(f64) -> String| v.map_or_else(|| "–".to_owned(), f);
    [
        mode.to_owned(),
        count(t.fps()),
        or_dash(t.figures().cpu_ms_per_frame(), |v| format!("{v:.2}")),
        or_dash(t.writes_per_frame(), count),
        or_dash(t.bytes_per_frame(), bytes),
        percent(t.kernel_share()),
        thousands(t.frames),
    ]
}

/// Where a lesson's caption goes on the `area` screen: its bottom lines, or nowhere on a
/// screen too small for it.
fn lesson_area(area: Rect) -> Rect {
    let height = crate::lesson::PANEL_LINES;
    if area.height < height || area.width < 20 {
        return Rect { height: 0, ..area };
    }
    Rect {
        y: area.bottom() - height,
        height,
        ..area
    }
}

/// A lesson's caption, drawn into the panel's own cells (`buf` is the panel): the step, its
/// words, a gauge as wide as the screen (readable from the back of a room), the figures against
/// `stdout()`'s, the keys. The same size at every step, so that every step draws the same
/// scene cells.
fn render_lesson(app: &App, meters: &Meters, step: usize, area: Rect, buf: &mut Buffer) {
    let panel = buf.area;
    Clear.render(panel, buf);
    buf.set_style(
        panel,
        Style::new().fg(Color::White).bg(Color::Rgb(16, 24, 48)),
    );
    let condition = app.condition(area.width, area.height);
    let (head, tail) = crate::lesson::caption(step, app.mode, meters, condition, area.width);
    let row = |i: u16| Rect {
        y: panel.y + i,
        height: 1,
        ..panel
    };
    let mut y = 0;
    for line in head {
        line.render(row(y), buf);
        y += 1;
    }
    let gauge = row(y);
    render_big_gauge(
        meters,
        Rect {
            x: gauge.x + 1,
            width: gauge.width.saturating_sub(2),
            height: crate::big_digits::ROWS as u16,
            ..gauge
        },
        buf,
    );
    y += crate::big_digits::ROWS as u16;
    for line in tail {
        line.render(row(y), buf);
        y += 1;
    }
}

fn render_help(area: Rect, buf: &mut Buffer) {
    let keys = crate::keys::BINDINGS.iter().map(|b| (b.shown, b.help));
    let figures = [
        (
            "fps",
            "frames the writer took per second, over the last second",
        ),
        (
            "writes/f",
            "write(2) calls per frame, as the kernel counts them",
        ),
        (
            "bytes/f",
            "bytes per frame: the same for every mode of one table",
        ),
        (
            "bytes/write",
            "bytes per write(2): ~2 raw, 1 KiB line, the capacity block",
        ),
        (
            "kernel",
            "share of the CPU time spent in the kernel: system calls",
        ),
        (
            "cells/frame",
            "terminal cells the frame changed (what ratatui sent)",
        ),
        (
            "CPU ms/f",
            "CPU time (user + kernel, all threads) a frame costs",
        ),
        (
            "frame",
            "its wall time: build · encode · kernel · cpu wait · reader wait",
        ),
        (
            "painted",
            "frames the terminal put on screen: flushlab paint, tour --paint",
        ),
    ];
    let text: Vec<Line> = keys
        .chain(figures)
        .map(|(key, what)| {
            Line::from(vec![
                Span::raw(format!("{key:>11}  ")).bold(),
                Span::raw(what),
            ])
        })
        .collect();
    let popup = centered(area, 78, text.len() as u16 + 2);
    Clear.render(popup, buf);
    Paragraph::new(text)
        .wrap(Wrap { trim: false })
        .block(
            Block::bordered()
                .border_type(BorderType::Rounded)
                .title(" keys and figures · Esc closes ")
                .title_bottom(" measurement paused while help is open "),
        )
        .style(Style::new().fg(Color::White).bg(Color::Rgb(30, 30, 60)))
        .render(popup, buf);
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;
    use crate::accounting::IoCounters;
    use crate::condition::Condition;
    use crate::meters::{CpuTimes, ModeRow};
    use crate::scene::Scene;
    use crate::writer_mode::{Buffering, Mode, Stream};

    fn text(buf: &Buffer) -> String {
        let area = buf.area;
        (area.top()..area.bottom())
            .map(|y| {
                (area.left()..area.right())
                    .map(|x| buf[(x, y)].symbol())
                    .collect::<String>()
            })
            .collect::<Vec<_>>()
            .join("\n")
    }

    fn render(app: &App, meters: &Meters, width: u16, height: u16) -> Buffer {
        let mut buf = Buffer::empty(Rect::new(0, 0, width, height));
        Hud::default().paint_frame(app, meters, 0, buf.area, &mut buf);
        buf
    }

    fn app(buffering: Buffering, hud: HudLayout) -> App {
        let mut app = App::new(
            Mode::new(Stream::Stderr, buffering, 8192),
            Scene::Sparse,
            false,
        );
        app.hud = hud;
        app
    }

    fn totals(frames: u64, writes: u64, bytes: u64) -> Totals {
        Totals {
            frames,
            seconds: 1.0,
            io: Some(IoCounters {
                write_calls: writes,
                bytes,
            }),
            cpu: CpuTimes {
                user: Duration::from_millis(250),
                kernel: Duration::from_millis(750),
            },
            cells: frames * 1920,
            // The frame loop's thread: 0.6 s of the second on a CPU, 0.1 s of it building.
            thread: Some(crate::meters::ThreadTimes {
                on_cpu: Duration::from_millis(600),
                cpu_wait: Duration::from_millis(50),
                cpu: CpuTimes {
                    user: Duration::from_millis(150),
                    kernel: Duration::from_millis(450),
                },
            }),
            phases: crate::meters::Phases {
                build: Duration::from_millis(100),
                idle: Duration::ZERO,
            },
            writer: None,
        }
    }

    /// Meters with a closed window and two rows measured under `condition`, one elsewhere.
    fn meters(condition: Condition) -> Meters {
        let mut meters = Meters::new();
        meters.window = Some(totals(160, 800, 5_300_000));
        meters.fps_history.extend([2, 3, 60, 160, 158]);
        let row = |mode, totals| ModeRow {
            condition,
            mode,
            totals,
        };
        meters.rows.push(row(
            Mode::new(Stream::Stderr, Buffering::Raw, 0),
            totals(12, 416_000, 804_000),
        ));
        meters.rows.push(row(
            Mode::new(Stream::Stderr, Buffering::Block, 8192),
            totals(160, 800, 5_300_000),
        ));
        let elsewhere = Condition {
            scene: Scene::Full,
            ..condition
        };
        meters.rows.push(ModeRow {
            condition: elsewhere,
            mode: Mode::new(Stream::Stdout, Buffering::Line, 0),
            totals: totals(44, 18_000, 18_000_000),
        });
        meters
    }

    fn figures(width: u16, height: u16, layout: HudLayout) -> String {
        let mut app = app(Buffering::Block, layout);
        app.status = Some("block capacity 8KiB".into());
        let meters = meters(app.condition(width, height));
        text(&render(&app, &meters, width, height))
    }

    #[test]
    fn why_names_the_writer_and_a_live_figure_in_every_mode() {
        let meters = meters(app(Buffering::Block, HudLayout::Full).condition(80, 24));
        let mut sentences = Vec::new();
        for mode in Mode::all(8192) {
            let why = why(mode, &meters);
            // The window's figures: 5 write(2) a frame, 75% of CPU time in the kernel.
            assert!(
                why.contains(" 5.0 ") || why.contains("75%"),
                "{mode}: {why}"
            );
            let writer = match (mode.stream, mode.buffering) {
                (Stream::Stderr, Buffering::Raw) => "stderr()",
                (Stream::Stdout, Buffering::Line) => "stdout()",
                (_, Buffering::Raw) => "no buffer",
                (_, Buffering::Line) => "LineWriter",
                (_, Buffering::Block) => "BufWriter",
                (_, Buffering::Frame) => "whole",
                (_, Buffering::Thread) => "writer thread",
            };
            assert!(why.contains(writer), "{mode}: {why}");
            for width in [30, 80, 200] {
                let lines = why_text(mode, &meters, width);
                assert!(lines.len() <= usize::from(WHY_LINES), "{mode} at {width}");
            }
            sentences.push(format!("{mode}: {why}"));
        }
        insta::assert_snapshot!(sentences.join("\n"));
    }

    /// In the thread modes the painter's wait is for the writer thread, and the writer
    /// thread's own frame is drawn beside it; when the writer mostly waits for the reader, the
    /// terminal is named as the limit.
    #[test]
    fn thread_modes_show_the_writer_threads_frame() {
        let thread = app(Buffering::Thread, HudLayout::Full);
        let app = &thread;
        let mut meters = meters(app.condition(200, 60));
        let mut window = meters.window.unwrap();
        // 160 frames in a second: the writer thread 0.2 s on a CPU, 0.1 s waiting for frames,
        // the rest (0.7 s) asleep in write(2).
        window.writer = Some(crate::timing::WriterTimes {
            on_cpu: Duration::from_millis(200),
            cpu_wait: Duration::ZERO,
            frame_wait: Duration::from_millis(100),
        });
        meters.window = Some(window);
        let shown = text(&render(app, &meters, 200, 60));
        assert!(shown.contains("writer wait"), "{shown}");
        let writer = shown
            .lines()
            .find(|l| l.contains("writer ") && l.contains("frame wait"))
            .unwrap_or_else(|| panic!("no writer line: {shown}"));
        assert!(writer.contains("reader wait 4.38"), "{writer}");
        assert!(why(app.mode, &meters).contains("terminal is the limit — 70%"));
        // Another mode has no writer thread, and says so.
        let frame = self::app(Buffering::Frame, HudLayout::Full);
        let shown = text(&render(&frame, &meters, 200, 60));
        assert!(shown.contains("writer thread: none"), "{shown}");
    }

    #[test]
    fn hud_before_the_first_second() {
        let app = app(Buffering::Raw, HudLayout::Full);
        insta::assert_snapshot!(text(&render(&app, &Meters::new(), 120, 40)));
    }

    #[test]
    fn hud_full_200x60() {
        insta::assert_snapshot!(figures(200, 60, HudLayout::Full));
    }

    #[test]
    fn hud_full_80x24() {
        insta::assert_snapshot!(figures(80, 24, HudLayout::Full));
    }

    #[test]
    fn hud_full_30x8() {
        insta::assert_snapshot!(figures(30, 8, HudLayout::Full));
    }

    #[test]
    fn hud_compact_80x24() {
        insta::assert_snapshot!(figures(80, 24, HudLayout::Compact));
    }

    /// Both layouts at the sizes people use, whatever `fit` would choose there.
    #[test]
    fn hud_at_every_size_in_both_layouts() {
        for (width, height) in [(60, 20), (120, 40), (200, 60)] {
            for layout in [HudLayout::Compact, HudLayout::Full] {
                insta::assert_snapshot!(
                    format!("hud_{}_{width}x{height}", layout.name()),
                    figures(width, height, layout)
                );
            }
        }
    }

    #[test]
    fn the_full_hud_is_drawn_only_where_it_leaves_two_thirds_to_the_scene() {
        for (cols, rows, expected) in [
            (200, 60, HudLayout::Full),
            (120, 40, HudLayout::Compact),
            (80, 24, HudLayout::Compact),
            (60, 20, HudLayout::Compact),
        ] {
            assert_eq!(
                fitting(HudLayout::Full, cols, rows),
                expected,
                "{cols}x{rows}"
            );
            assert_eq!(fitting(HudLayout::Compact, cols, rows), HudLayout::Compact);
            // Whatever is drawn, the scene keeps most of the screen.
            let drawn = fitting(HudLayout::Full, cols, rows);
            let covered = hud_area(drawn, Rect::new(0, 0, cols, rows)).area();
            assert!(covered * 2 < cols as u32 * rows as u32, "{cols}x{rows}");
        }
        // Asked for (`v`) where it does not fit: compact, and the user is told why.
        let mut app = app(Buffering::Line, HudLayout::Compact);
        app.apply(crate::app::Action::ToggleHud, std::time::Instant::now());
        assert_eq!(fit(&mut app, 80, 24).hud, HudLayout::Compact);
        assert!(
            app.status
                .as_deref()
                .is_some_and(|s| s.contains("compact HUD"))
        );
        assert_eq!(fit(&mut app, 200, 60).hud, HudLayout::Full);
        // Asked again where it does not fit: told again.
        app.status = None;
        fit(&mut app, 80, 24);
        app.apply(crate::app::Action::ToggleHud, std::time::Instant::now());
        app.apply(crate::app::Action::ToggleHud, std::time::Instant::now());
        assert_eq!(fit(&mut app, 80, 24).hud, HudLayout::Compact);
        assert!(app.status.is_some());
    }

    #[test]
    fn overlays_survive_any_size() {
        for layout in [HudLayout::Compact, HudLayout::Full] {
            let mut app = app(Buffering::Raw, layout);
            app.show_table = true;
            app.show_help = true;
            app.status = Some("tour done".into());
            for width in 0..=20 {
                for height in 0..=12 {
                    let meters = meters(app.condition(width, height));
                    render(&app, &meters, width, height);
                }
            }
        }
    }

    #[test]
    fn the_scale_labels_never_run_together() {
        for width in 12..=120 {
            let mut buf = Buffer::empty(Rect::new(0, 0, width, 1));
            render_scale(Rect::new(0, 0, width, 1), &mut buf);
            let line = text(&buf);
            // Every label shown stands apart: split at spaces, each piece is a label.
            for piece in line.split_whitespace() {
                assert!(
                    SCALE.iter().any(|l| l.split(' ').any(|w| w == piece)),
                    "{width}: {piece:?} in {line:?}"
                );
            }
            assert!(line.contains("10k fps"), "{width}: {line:?}");
        }
    }

    #[test]
    fn help_overlay() {
        let mut app = app(Buffering::Line, HudLayout::Compact);
        app.show_help = true;
        insta::assert_snapshot!(text(&render(&app, &Meters::new(), 80, 24)));
    }

    /// The text of the HUD's own cells, lines joined: what a wrapped expression reads as.
    fn joined(screen: &str) -> String {
        screen
            .lines()
            .map(|l| l.trim_matches(|c| c == '│' || c == ' '))
            .collect()
    }

    #[test]
    fn the_whole_expression_shows_at_every_width() {
        for (w, h, layout) in [
            (200, 60, HudLayout::Full),
            (80, 24, HudLayout::Full),
            (80, 24, HudLayout::Compact),
            (40, 30, HudLayout::Compact),
        ] {
            for mode in Mode::all(1 << 20) {
                let mut app = app(mode.buffering, layout);
                app.mode = mode;
                let screen = text(&render(&app, &Meters::new(), w, h));
                let flat: String = screen
                    .lines()
                    .map(|l| l.trim_start_matches('│'))
                    .map(|l| {
                        let l = l.trim_end();
                        l.strip_suffix('│').unwrap_or(l).to_owned()
                    })
                    .collect();
                assert!(
                    flat.contains(&mode.expression()),
                    "{mode} at {w}x{h} {layout:?}:\n{screen}"
                );
                let _ = joined(&screen);
            }
        }
    }

    #[test]
    fn the_legend_never_breaks_a_binding() {
        for width in [20, 30, 50, 78, 98] {
            let lines = key_lines(width);
            for key in crate::keys::footer() {
                assert!(
                    lines.iter().any(|l| l.contains(key)),
                    "{key} broken at {width}: {lines:?}"
                );
            }
        }
    }

    #[test]
    fn the_hud_keeps_its_size_whatever_it_shows() {
        for (w, h) in [(200, 60), (80, 24), (120, 40)] {
            for layout in [HudLayout::Full, HudLayout::Compact] {
                let area = Rect::new(0, 0, w, h);
                let size = hud_area(layout, area);
                let empty = render(&app(Buffering::Raw, layout), &Meters::new(), w, h);
                let busy = render(
                    &app(Buffering::Block, layout),
                    &meters(app(Buffering::Raw, layout).condition(w, h)),
                    w,
                    h,
                );
                // The scene's cells outside the HUD are the same, whatever the HUD shows.
                for y in 0..h {
                    for x in 0..w {
                        if !size.contains((x, y).into()) {
                            assert_eq!(empty[(x, y)], busy[(x, y)], "{x},{y} at {w}x{h}");
                        }
                    }
                }
            }
        }
    }

    #[test]
    fn the_gauge_is_logarithmic_with_its_scale_shown() {
        assert!(log_position(2.0) < 0.1 && log_position(60.0) > 0.4);
        assert_eq!(log_position(0.0), 0.0);
        assert_eq!(log_position(1e9), 1.0);
        let screen = figures(200, 60, HudLayout::Full);
        assert!(
            screen.contains("10k fps") && screen.contains("100") && screen.contains("1k"),
            "{screen}"
        );
    }

    #[test]
    fn the_table_shows_the_current_condition_and_counts_the_others() {
        let screen = figures(200, 60, HudLayout::Full);
        assert!(
            screen.contains("stderr/raw") && screen.contains("stderr/block:8KiB"),
            "{screen}"
        );
        assert!(!screen.contains("stdout/line"), "{screen}");
        assert!(screen.contains("1 under other conditions"), "{screen}");
    }

    #[test]
    fn rows_that_do_not_fit_are_folded_never_dropped_silently() {
        use crate::meters::ModeRow;
        let mut app = app(Buffering::Block, HudLayout::Compact);
        let condition = app.condition(80, 24);
        let mut meters = meters(condition);
        meters.rows = Mode::all(crate::writer_mode::DEFAULT_CAPACITY)
            .map(|mode| ModeRow {
                condition,
                mode: mode.key(),
                totals: totals(50, 100, 1000),
            })
            .collect();
        // The HUD's table with room for 4 rows: std's two handles and the current mode stay.
        let mut buf = Buffer::empty(Rect::new(0, 0, 80, 6));
        render_table(
            &app,
            &meters,
            Rect::new(0, 0, 80, 24),
            Rect::new(0, 0, 80, 6),
            &mut buf,
        );
        let shown = text(&buf);
        for mode in ["stdout/line", "stderr/raw", "stderr/block:8KiB"] {
            assert!(shown.contains(mode), "{mode}: {shown}");
        }
        assert!(shown.contains("6 more row(s) folded"), "{shown}");
        // The overlay (m, and the end of a tour) shows all ten at 80x24.
        app.show_table = true;
        let screen = text(&render(&app, &meters, 80, 24));
        for mode in Mode::all(crate::writer_mode::DEFAULT_CAPACITY) {
            assert!(screen.contains(&mode.key().to_string()), "{mode}: {screen}");
        }
        assert!(!screen.contains("folded"), "{screen}");
    }

    #[test]
    fn at_small_sizes_the_frame_rate_goes_last() {
        for h in 3..10 {
            let screen = figures(40, h, HudLayout::Full);
            assert!(screen.contains("160 fps"), "{h}: {screen}");
        }
    }

    #[test]
    fn hud_degrades_on_small_terminals() {
        let mut app = app(Buffering::Frame, HudLayout::Full);
        app.show_help = true;
        for (w, h) in [(0, 0), (1, 1), (11, 2), (20, 5), (40, 8), (500, 200)] {
            render(&app, &Meters::new(), w, h);
        }
        app.show_help = false;
        let tiny = render(&app, &Meters::new(), 30, 6);
        assert!(text(&tiny).contains("flushlab"), "{}", text(&tiny));
    }

    #[test]
    fn std_handles_are_named_as_such() {
        let mut app = app(Buffering::Raw, HudLayout::Full);
        assert!(text(&render(&app, &Meters::new(), 120, 40)).contains("= std's stderr()"));
        app.mode = Mode::new(Stream::Stderr, Buffering::Line, 8192);
        assert!(!text(&render(&app, &Meters::new(), 120, 40)).contains("std's"));
    }
}
