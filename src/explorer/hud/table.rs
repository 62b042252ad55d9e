//! The table of every mode measured under the current condition, in the full HUD and as an overlay.

use ratatui::buffer::Buffer;
use ratatui::layout::{Constraint, Rect};
use ratatui::style::{Color, Style, Stylize};
use ratatui::text::Line;
use ratatui::widgets::{Block, BorderType, Clear, Paragraph, Row, Table, Widget};

use super::text::{centered, fitted};
use crate::explorer::app::App;
use flushlab_core::meters::{Meters, ModeRow, Totals};
use flushlab_core::units::{bytes, count, percent, thousands};

/// Rows the full HUD's table keeps for modes, visited or not.
pub const TABLE_ROWS: u16 = 10;

/// Every mode measured under the current condition, over the scene (`m`; opened at the end of a
/// tour): at any size where the HUD has no room for its table.
/// The table of every mode measured on the `area` screen, in the middle of `within`.
pub(super) fn render_table_overlay(
    app: &App,
    meters: &Meters,
    area: Rect,
    within: Rect,
    buf: &mut Buffer,
) {
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
pub(super) fn render_table(app: &App, meters: &Meters, area: Rect, rect: Rect, buf: &mut Buffer) {
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
pub(super) fn rows_that_fit<'a>(all: &[&'a ModeRow], room: usize, app: &App) -> Vec<&'a ModeRow> {
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
pub(super) fn table_notes(folded: usize, others: usize) -> String {
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
pub(super) const TABLE_COLUMNS: [(&str, u16); 8] = [
    ("mode", 20),
    ("fps", 8),
    ("CPU ms/f", 8),
    ("writes/f", 10),
    ("bytes/f", 10),
    ("torn/s", 8),
    ("kernel", 7),
    ("frames", 8),
];

/// A row of the mode table, in [`TABLE_COLUMNS`]' order.
pub(super) fn table_cells(mode: &str, t: &Totals) -> [String; 8] {
    let or_dash = |v: Option<f64>, f: fn(f64) -> String| v.map_or_else(|| "–".to_owned(), f);
    [
        mode.to_owned(),
        count(t.fps()),
        or_dash(t.figures().cpu_ms_per_frame(), |v| format!("{v:.2}")),
        or_dash(t.writes_per_frame(), count),
        or_dash(t.bytes_per_frame(), bytes),
        or_dash(t.torn_per_second(), count),
        percent(t.kernel_share()),
        thousands(t.frames),
    ]
}
