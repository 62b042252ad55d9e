//! The heads-up display, drawn over the scene and written with it: the HUD costs what any TUI's
//! widgets cost, and only when its figures change (once a second), thanks to the diff.

use ratatui::buffer::Buffer;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::style::{Color, Modifier, Style, Stylize};
use ratatui::text::{Line, Span};
use ratatui::widgets::{
    Block, BorderType, Clear, Gauge, Paragraph, Row, Sparkline, Table, Widget, Wrap,
};

use std::cell::RefCell;

use crate::app::App;
use crate::meters::{Accounting, Totals};
use crate::scene::Scene;
use crate::writer_mode::Mode;

const HUD_WIDTH: u16 = 78;
const KEYS: &str = "spc next · o/e stream · r/l/b/f/w buffering · +/- cap · y sync · s scene · t tour · h help · q quit";

impl Widget for &App {
    fn render(self, area: Rect, buf: &mut Buffer) {
        self.paint_frame(self.meters.frames(), area, buf);
    }
}

impl App {
    /// Frame number `frame` as the frame loop draws it: the scene, the HUD over it, the help.
    pub fn paint_frame(&self, frame: u64, area: Rect, buf: &mut Buffer) {
        self.scene.paint(frame, area, buf);
        render_hud_cached(self, area, buf);
        if self.show_help {
            render_help(area, buf);
        }
    }
}

/// Everything the HUD shows. The HUD is drawn over the scene on every frame, but laid out
/// again only when one of these changed (about once a second): the layout, table and strings
/// cost ~3% of a sparse frame's CPU time here (`CEILING=cpu SCENE=sparse DURATION=2 flushlab`,
/// 2,360 → 2,450 fps), which would otherwise be measured as part of every mode.
#[derive(Clone, Debug, PartialEq)]
struct HudKey {
    meters: u64,
    mode: Mode,
    sync: bool,
    scene: Scene,
    area: Rect,
    status: Option<String>,
}

/// The HUD's cells as last laid out, and what they showed.
#[derive(Debug, Default)]
pub struct HudCache(RefCell<Option<(HudKey, Buffer)>>);

fn render_hud_cached(app: &App, area: Rect, buf: &mut Buffer) {
    let key = HudKey {
        meters: app.meters.generation(),
        mode: app.mode,
        sync: app.sync,
        scene: app.scene,
        area,
        status: None,
    };
    let mut cache = app.hud_cache.0.borrow_mut();
    let fresh = matches!(&*cache, Some((k, _)) if *k == key && k.status == app.status);
    if !fresh {
        let mut hud = Buffer::empty(hud_area(app, area));
        render_hud(app, area, &mut hud);
        *cache = Some((
            HudKey {
                status: app.status.clone(),
                ..key
            },
            hud,
        ));
    }
    if let Some((_, hud)) = &*cache {
        for y in hud.area.top()..hud.area.bottom() {
            for x in hud.area.left()..hud.area.right() {
                buf[(x, y)].clone_from(&hud[(x, y)]);
            }
        }
    }
}

fn hud_area(app: &App, area: Rect) -> Rect {
    let rows = app.meters.per_mode.len() as u16;
    let height = 12 + rows.max(1);
    let hud = Rect {
        width: area.width.min(HUD_WIDTH),
        height: area.height.min(height),
        ..area
    };
    if hud.width < 12 || hud.height < 3 {
        Rect {
            width: 0,
            height: 0,
            ..area
        }
    } else {
        hud
    }
}

fn render_hud(app: &App, area: Rect, buf: &mut Buffer) {
    let hud = hud_area(app, area);
    if hud.is_empty() {
        return;
    }
    let rows = app.meters.per_mode.len() as u16;
    Clear.render(hud, buf);
    let title = format!(" flushlab · {} ", app.mode);
    let block = Block::bordered()
        .border_type(BorderType::Rounded)
        .title(Line::from(title).bold())
        .title_bottom(Line::from(" h: help ").right_aligned())
        .style(Style::new().fg(Color::White).bg(Color::Rgb(20, 20, 28)));
    let inner = block.inner(hud);
    block.render(hud, buf);

    let [
        expression,
        gauge,
        sparkline,
        counts,
        kernel,
        setup,
        table,
        status,
        keys,
    ] = Layout::vertical([
        Constraint::Length(1),
        Constraint::Length(1),
        Constraint::Length(1),
        Constraint::Length(1),
        Constraint::Length(1),
        Constraint::Length(1),
        Constraint::Length(rows.max(1) + 1),
        Constraint::Length(1),
        Constraint::Length(2),
    ])
    .areas(inner);

    Line::from(app.mode.expression())
        .fg(Color::LightCyan)
        .render(expression, buf);
    render_fps(app, gauge, sparkline, buf);
    render_window(app, counts, kernel, buf);
    Line::from(format!(
        "scene {} · sync {} · {}x{} · accounting {}",
        app.scene.name(),
        if app.sync { "on" } else { "off" },
        area.width,
        area.height,
        match (
            crate::meters::accounting(),
            app.meters.accounting_available()
        ) {
            (_, false) => "n/a",
            (Accounting::Kernel, true) => "/proc/self/io",
            (Accounting::Counting, true) => "counting layer",
        },
    ))
    .fg(Color::Gray)
    .render(setup, buf);
    render_table(app, table, buf);
    if let Some(message) = &app.status {
        Line::from(format!("▸ {message}"))
            .fg(Color::Yellow)
            .render(status, buf);
    }
    Paragraph::new(KEYS)
        .wrap(Wrap { trim: true })
        .fg(Color::DarkGray)
        .render(keys, buf);
}

fn render_fps(app: &App, gauge: Rect, sparkline: Rect, buf: &mut Buffer) {
    let history: Vec<u64> = app.meters.fps_history.iter().copied().collect();
    let best = history.iter().copied().max().unwrap_or(0).max(1);
    match app.meters.window {
        Some(window) => {
            let fps = window.fps();
            Gauge::default()
                .ratio((fps / best as f64).clamp(0.0, 1.0))
                .label(format!("{fps:.1} fps"))
                .gauge_style(Style::new().fg(Color::Green).bg(Color::Rgb(40, 40, 40)))
                .render(gauge, buf);
        }
        None => Line::from("measuring… (figures update once a second)")
            .italic()
            .render(gauge, buf),
    }
    // The newest readings, right-aligned in the area, like a scrolling chart.
    let shown = &history[history.len().saturating_sub(usize::from(sparkline.width))..];
    Sparkline::default()
        .data(shown)
        .max(best)
        .fg(Color::Green)
        .render(sparkline, buf);
}

fn render_window(app: &App, counts: Rect, kernel: Rect, buf: &mut Buffer) {
    let window = app.meters.window.unwrap_or_default();
    let known = app.meters.window.is_some();
    let show = |value: Option<f64>, format: fn(f64) -> String| match value {
        Some(v) if known => format(v),
        _ => "–".to_owned(),
    };
    Line::from(vec![
        Span::raw(format!("frames {}", app.meters.sampled_frames())),
        Span::raw(format!(
            "   writes/frame {}",
            show(window.writes_per_frame(), count)
        )),
        Span::raw(format!(
            "   bytes/frame {}",
            show(window.bytes_per_frame(), bytes)
        )),
    ])
    .render(counts, buf);
    Line::from(vec![
        Span::raw(format!(
            "bytes/write {}",
            show(window.bytes_per_write(), |v| format!("{v:.1}"))
        )),
        Span::raw("   kernel ").add_modifier(Modifier::BOLD),
        Span::raw(show(Some(window.kernel_share()), percent)).bold(),
        Span::raw(format!(
            "   cells/frame {}",
            show(Some(window.cells_per_frame()), |v| format!("{v:.0}"))
        )),
    ])
    .render(kernel, buf);
}

fn render_table(app: &App, area: Rect, buf: &mut Buffer) {
    let header = Row::new(["mode", "fps", "writes/f", "bytes/f", "kernel", "frames"])
        .style(Style::new().bold().underlined());
    let rows = app.meters.per_mode.iter().map(|(mode, totals)| {
        let style = if mode.key() == app.mode.key() {
            Style::new().fg(Color::LightGreen)
        } else {
            Style::new()
        };
        table_row(&mode.to_string(), totals).style(style)
    });
    let widths = [
        Constraint::Length(20),
        Constraint::Length(8),
        Constraint::Length(10),
        Constraint::Length(10),
        Constraint::Length(7),
        Constraint::Length(8),
    ];
    let table = Table::new(rows, widths).header(header);
    if app.meters.per_mode.is_empty() {
        let [head, note] =
            Layout::vertical([Constraint::Length(1), Constraint::Length(1)]).areas(area);
        Widget::render(table, head, buf);
        Line::from("modes appear here as you leave them (space, t for a tour)")
            .italic()
            .render(note, buf);
    } else {
        Widget::render(table, area, buf);
    }
}

fn table_row(mode: &str, t: &Totals) -> Row<'static> {
    let or_dash = |v: Option<f64>, f: fn(f64) -> String| v.map_or_else(|| "–".to_owned(), f);
    Row::new([
        mode.to_owned(),
        format!("{:.1}", t.fps()),
        or_dash(t.writes_per_frame(), count),
        or_dash(t.bytes_per_frame(), bytes),
        percent(t.kernel_share()),
        t.frames.to_string(),
    ])
}

fn render_help(area: Rect, buf: &mut Buffer) {
    let lines = [
        ("space, tab", "next mode (stream × buffering)"),
        ("o / e", "write to stdout / stderr"),
        ("r", "raw: every encoder write is a write(2)"),
        ("l", "line: LineWriter, 1 KiB (what stdout() is)"),
        ("b", "block: BufWriter::with_capacity(cap)"),
        ("f", "frame: one write(2) per frame"),
        ("w", "thread: one write per frame, on a writer thread"),
        ("+ / -", "block capacity ×2 / ÷2 (64 B .. 1 MiB)"),
        ("y", "synchronized output (DEC 2026) on/off"),
        ("s", "scene: full (every cell) / sparse"),
        ("t", "tour: every mode in turn, then the table"),
        ("h, ?", "this help"),
        ("q, Esc, ^C", "quit"),
    ];
    let text: Vec<Line> = lines
        .iter()
        .map(|(key, what)| {
            Line::from(vec![
                Span::raw(format!("{key:>11}  ")).bold(),
                Span::raw(*what),
            ])
        })
        .collect();
    let width = 66.min(area.width);
    let height = (text.len() as u16 + 2).min(area.height);
    let popup = Rect {
        x: area.x + (area.width - width) / 2,
        y: area.y + (area.height - height) / 2,
        width,
        height,
    };
    Clear.render(popup, buf);
    Paragraph::new(text)
        .wrap(Wrap { trim: false })
        .block(
            Block::bordered()
                .border_type(BorderType::Rounded)
                .title(" keys "),
        )
        .style(Style::new().fg(Color::White).bg(Color::Rgb(30, 30, 60)))
        .render(popup, buf);
}

/// `34,712`: counts with thousands separators; fractions only below 10, two decimals below 1.
pub fn count(v: f64) -> String {
    if v < 1.0 {
        return format!("{v:.2}");
    }
    if v < 10.0 {
        return format!("{v:.1}");
    }
    let digits = format!("{:.0}", v);
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// `427.0 kB`: decimal units, as the kernel and pv count throughput.
pub fn bytes(v: f64) -> String {
    match v {
        v if v >= 1e6 => format!("{:.2} MB", v / 1e6),
        v if v >= 1e3 => format!("{:.1} kB", v / 1e3),
        v => format!("{v:.0} B"),
    }
}

pub fn percent(share: f64) -> String {
    format!("{:.0}%", share * 100.0)
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;
    use crate::meters::{CpuTimes, IoCounters};
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

    fn render(app: &App, width: u16, height: u16) -> Buffer {
        let mut buf = Buffer::empty(Rect::new(0, 0, width, height));
        app.render(buf.area, &mut buf);
        buf
    }

    fn app(buffering: Buffering) -> App {
        App::new(
            Mode::new(Stream::Stderr, buffering, 8192),
            Scene::Sparse,
            false,
        )
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
        }
    }

    #[test]
    fn hud_before_the_first_second() {
        insta::assert_snapshot!(text(&render(&app(Buffering::Raw), 80, 24)));
    }

    #[test]
    fn hud_with_figures_and_visited_modes() {
        let mut app = app(Buffering::Block);
        app.meters.window = Some(totals(160, 800, 5_300_000));
        app.meters.fps_history.extend([10, 12, 150, 160, 158]);
        app.meters.per_mode.push((
            Mode::new(Stream::Stderr, Buffering::Raw, 0),
            totals(12, 416_000, 804_000),
        ));
        app.meters.per_mode.push((
            Mode::new(Stream::Stderr, Buffering::Block, 8192),
            totals(160, 800, 5_300_000),
        ));
        app.status = Some("block capacity 8KiB".into());
        insta::assert_snapshot!(text(&render(&app, 80, 24)));
    }

    #[test]
    fn help_overlay() {
        let mut app = app(Buffering::Line);
        app.show_help = true;
        insta::assert_snapshot!(text(&render(&app, 80, 24)));
    }

    #[test]
    fn hud_degrades_on_small_terminals() {
        let mut app = app(Buffering::Frame);
        app.show_help = true;
        for (w, h) in [(0, 0), (1, 1), (11, 2), (20, 5), (40, 8), (500, 200)] {
            render(&app, w, h);
        }
        app.show_help = false;
        let tiny = render(&app, 30, 6);
        assert!(text(&tiny).contains("flushlab"), "{}", text(&tiny));
    }

    #[test]
    fn the_hud_follows_what_it_shows_across_frames() {
        let mut app = app(Buffering::Raw);
        let mut buf = Buffer::empty(Rect::new(0, 0, 80, 24));
        app.render(buf.area, &mut buf);
        assert!(text(&buf).contains("stderr/raw"));
        app.status = Some("hello there".into());
        app.mode = Mode::new(Stream::Stdout, Buffering::Frame, 8192);
        app.render(buf.area, &mut buf);
        assert!(text(&buf).contains("hello there") && text(&buf).contains("stdout/frame"));
        // A closed window (as the loop's meters report it) shows up too.
        app.meters
            .frame_done(100, std::time::Instant::now() + Duration::from_secs(2));
        app.render(buf.area, &mut buf);
        assert!(text(&buf).contains("frames 1 "), "{}", text(&buf));
    }

    #[test]
    fn number_formats() {
        assert_eq!(count(34712.4), "34,712");
        assert_eq!(count(1.0), "1.0");
        assert_eq!(count(0.0089), "0.01");
        assert_eq!(count(999.0), "999");
        assert_eq!(bytes(427_000.0), "427.0 kB");
        assert_eq!(bytes(5_300_000.0), "5.30 MB");
        assert_eq!(percent(0.784), "78%");
    }
}
