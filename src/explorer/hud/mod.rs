//! The heads-up display, drawn over the scene and written with it: the HUD costs what any TUI's
//! widgets cost, and only when its figures change (once a second), thanks to the diff.
//!
//! Its size depends on the screen size and the [`HudLayout`] alone, never on what it shows, so
//! every mode compared under one [`Condition`](flushlab_core::condition::Condition) draws the same
//! scene cells: the table has room for [`TABLE_ROWS`] rows from the start. When the screen is
//! too small for everything, parts go in a fixed order and the frame rate goes last.

use std::cell::RefCell;

use ratatui::buffer::Buffer;
use ratatui::layout::{Constraint, Rect};
use ratatui::style::{Color, Style, Stylize};
use ratatui::text::Line;
use ratatui::widgets::{Block, BorderType, Clear, Paragraph, Widget};

use crate::explorer::app::App;
use flushlab_core::condition::HudLayout;
use flushlab_core::meters::Meters;
use flushlab_core::scene::Scene;
use flushlab_core::units::{bytes, count, percent};
use flushlab_core::writer_mode::Mode;

mod gauge;
mod help;
mod lines;
mod table;
mod text;
mod why;

pub use self::gauge::{gauge_colour, log_position};
use self::gauge::{
    render_big_gauge, render_gauge, render_gauge_or_wait, render_scale, render_sparkline,
};
use self::help::{key_lines, render_help};
use self::lines::{costs_line, counts_line, setup_line, split_line, writer_line};
pub use self::table::TABLE_ROWS;
use self::table::{render_table, render_table_overlay};
use self::text::{fitted, shown};
pub use self::why::why;
use self::why::{WHY_LINES, expression_lines, expression_text, why_text};

/// The full HUD's widest: room for the longest expression on one line.
const FULL_WIDTH: u16 = 100;

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
                    height: area
                        .height
                        .saturating_sub(crate::explorer::lesson::PANEL_LINES),
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
pub fn fit(app: &mut App, cols: u16, rows: u16) -> flushlab_core::condition::Condition {
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

fn render_full(app: &App, meters: &Meters, area: Rect, buf: &mut Buffer) {
    let hud = buf.area;
    Clear.render(hud, buf);
    let mut block = Block::bordered()
        .border_type(BorderType::Rounded)
        .title(Line::from(format!(" flushlab · {} ", app.mode)).bold())
        .title_bottom(Line::from(" h: help ").right_aligned())
        .style(Style::new().fg(Color::White).bg(Color::Rgb(20, 20, 28)));
    // On the frame's lower edge, where the rows below it stay as they are.
    if let Some(stages) = self::lines::key_stages(app) {
        block = block.title_bottom(Line::from(format!(" {stages} ")).left_aligned());
    }
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
            Part::Why => Paragraph::new(why_text(app, meters, rect.width)).render(rect, buf),
            Part::Gauge => render_gauge(meters, rect, buf),
            Part::Scale => render_scale(rect, buf),
            Part::Sparkline => render_sparkline(meters, rect, buf),
            Part::Counts => counts_line(app, meters, rect.width).render(rect, buf),
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
    let key = self::lines::key_to_frame(app).map_or_else(String::new, |k| format!(" · {k}"));
    let figures = format!(
        "flushlab · {} · {} fps · CPU {} ms/f · {} writes/f · {}/f · kernel {}{key} · h help",
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
    for (i, text) in why_text(app, meters, hud.width).into_iter().enumerate() {
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

/// Where a lesson's caption goes on the `area` screen: its bottom lines, or nowhere on a
/// screen too small for it.
fn lesson_area(area: Rect) -> Rect {
    let height = crate::explorer::lesson::PANEL_LINES;
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
    let (head, tail) =
        crate::explorer::lesson::caption(step, app.mode, meters, condition, area.width);
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
            height: crate::explorer::big_digits::ROWS as u16,
            ..gauge
        },
        buf,
    );
    y += crate::explorer::big_digits::ROWS as u16;
    for line in tail {
        line.render(row(y), buf);
        y += 1;
    }
}

#[cfg(test)]
mod tests;
