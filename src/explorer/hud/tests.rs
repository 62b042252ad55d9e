//! The HUD drawn into `Buffer`s: every layout, the lesson's steps, the help, snapshots.

use std::time::Duration;

use super::gauge::SCALE;
use super::*;
use flushlab_core::accounting::IoCounters;
use flushlab_core::condition::Condition;
use flushlab_core::meters::Totals;
use flushlab_core::meters::{CpuTimes, ModeRow};
use flushlab_core::scene::Scene;
use flushlab_core::writer_mode::{Buffering, Mode, Stream};

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
        thread: Some(flushlab_core::meters::ThreadTimes {
            on_cpu: Duration::from_millis(600),
            cpu_wait: Duration::from_millis(50),
            cpu: CpuTimes {
                user: Duration::from_millis(150),
                kernel: Duration::from_millis(450),
            },
        }),
        phases: flushlab_core::meters::Phases {
            build: Duration::from_millis(100),
            idle: Duration::ZERO,
        },
        writer: None,
        // Four frames given to the terminal model, each painted 100 times, 99 of them torn.
        seen: flushlab_core::seen::frames::FramesSeen {
            frames: 4,
            torn_frames: 4,
            pieces: 400,
            paints: 400,
            torn: 396,
            flashed: 0,
        },
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
        let why = why(mode, &meters, false);
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
        let mut shown = App::new(mode, Scene::Full, false);
        for (width, halts) in [(30, false), (80, false), (200, false), (80, true)] {
            shown.vcpus_halt = halts;
            let lines = why_text(&shown, &meters, width);
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
    window.writer = Some(flushlab_core::timing::WriterTimes {
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
    assert!(why(app.mode, &meters, false).contains("terminal is the limit — 70%"));
    // On a VM whose idle vCPUs halt at once, the writer's waits are its wakes.
    let halting = why(app.mode, &meters, true);
    assert!(
        halting.contains("waits on the reader 70%") && halting.contains("halt at once"),
        "{halting}"
    );
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
    app.apply(
        crate::explorer::app::Action::ToggleHud,
        std::time::Instant::now(),
    );
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
    app.apply(
        crate::explorer::app::Action::ToggleHud,
        std::time::Instant::now(),
    );
    app.apply(
        crate::explorer::app::Action::ToggleHud,
        std::time::Instant::now(),
    );
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
        for key in crate::explorer::bindings::footer() {
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
    use flushlab_core::meters::ModeRow;
    let mut app = app(Buffering::Block, HudLayout::Compact);
    let condition = app.condition(80, 24);
    let mut meters = meters(condition);
    meters.rows = Mode::all(flushlab_core::writer_mode::DEFAULT_CAPACITY)
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
    for mode in Mode::all(flushlab_core::writer_mode::DEFAULT_CAPACITY) {
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

/// The last key's time to its frame, with the mode it was typed in, in both layouts.
#[test]
fn the_hud_says_how_long_the_last_key_took_to_show() {
    for (layout, width, height) in [(HudLayout::Full, 200, 60), (HudLayout::Compact, 200, 60)] {
        let mut app = app(Buffering::Raw, layout);
        let meters = meters(app.condition(width, height));
        assert!(!text(&render(&app, &meters, width, height)).contains("key→frame"));
        app.key_to_frame = Some(crate::explorer::app::KeyFrame {
            mode: Mode::new(Stream::Stderr, Buffering::Raw, 8192),
            took: Duration::from_millis(480),
            stages: flushlab_core::detect::keyed::Stages {
                input_delay: Some(0.12),
                processing: 2.1,
                presentation_delay: None,
                emit: 477.78,
                drain: None,
                paint: None,
            },
        });
        let shown = text(&render(&app, &meters, width, height));
        assert!(
            shown.contains("key→frame 480 ms in stderr/raw"),
            "{layout:?}:\n{shown}"
        );
        // The full HUD says where it went: the writes.
        if layout == HudLayout::Full {
            assert!(
                shown.contains("last key = input 0.12 ms · processing 2.10 ms · emit 478 ms"),
                "{shown}"
            );
        }
    }
}

/// README's `--hud` row: the full HUD only where it covers at most a third of the screen —
/// from 200x42, 160x53, 120x70 — and compact at 120x40 and 100x40.
#[test]
fn the_full_hud_fits_where_the_readme_says() {
    for (cols, rows) in [(200, 42), (160, 53), (120, 70)] {
        assert_eq!(
            fitting(HudLayout::Full, cols, rows),
            HudLayout::Full,
            "{cols}x{rows}"
        );
        assert_eq!(
            fitting(HudLayout::Full, cols, rows - 1),
            HudLayout::Compact,
            "{cols}x{}",
            rows - 1
        );
    }
    for (cols, rows) in [(120, 40), (100, 40), (80, 24)] {
        assert_eq!(fitting(HudLayout::Full, cols, rows), HudLayout::Compact);
    }
}
