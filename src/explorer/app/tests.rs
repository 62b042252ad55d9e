//! Keys to actions, actions to state: every binding, the lesson's keys, modes and conditions.

use super::*;
use flushlab_core::writer_mode::DEFAULT_CAPACITY;
use ratatui::crossterm::event::{KeyCode, KeyEvent, KeyEventKind, KeyModifiers};

fn key(code: KeyCode) -> Action {
    KeyEvent::new(code, KeyModifiers::NONE).into()
}

#[test]
fn a_status_message_goes_after_its_lifetime_and_a_new_one_starts_afresh() {
    let mut app = App::new(
        Mode::new(Stream::Stdout, Buffering::Line, DEFAULT_CAPACITY),
        Scene::Full,
        false,
    );
    let t0 = Instant::now();
    app.status = Some("block capacity 8KiB".into());
    app.expire_status(t0);
    app.expire_status(t0 + STATUS_LIFETIME / 2);
    assert!(app.status.is_some());
    app.status = Some("sync on".into());
    app.expire_status(t0 + STATUS_LIFETIME);
    assert_eq!(
        app.status.as_deref(),
        Some("sync on"),
        "a new message, a new lifetime"
    );
    app.expire_status(t0 + STATUS_LIFETIME * 2);
    assert_eq!(app.status, None);
}

#[test]
fn the_verdict_names_stdout_against_stderr_and_the_best_against_stdout() {
    use flushlab_core::meters::{CpuTimes, ModeRow};
    let condition = App::new(
        Mode::new(Stream::Stdout, Buffering::Line, DEFAULT_CAPACITY),
        Scene::Full,
        false,
    )
    .condition(80, 24);
    let row = |stream, buffering, frames: u64, cpu_ms: u64| ModeRow {
        condition,
        mode: Mode::new(stream, buffering, DEFAULT_CAPACITY).key(),
        totals: Totals {
            frames,
            seconds: 1.0,
            cpu: CpuTimes {
                user: Duration::from_millis(cpu_ms),
                kernel: Duration::ZERO,
            },
            ..Totals::default()
        },
    };
    let mut meters = Meters::new();
    meters.rows = vec![
        row(Stream::Stdout, Buffering::Line, 150, 900),
        row(Stream::Stderr, Buffering::Raw, 3, 900),
        row(Stream::Stdout, Buffering::Thread, 300, 900),
    ];
    let said = verdict(&meters, condition);
    assert!(
        said.contains("stdout() is 50.0x the frames for 50.0x less CPU of stderr()"),
        "{said}"
    );
    assert!(
        said.contains("stdout/thread is 2.0x the frames for 2.0x less CPU of stdout()"),
        "{said}"
    );
}

#[test]
fn keys_map_to_actions() {
    assert_eq!(key(KeyCode::Char(' ')), Action::NextMode);
    assert_eq!(key(KeyCode::Tab), Action::NextMode);
    assert_eq!(key(KeyCode::Char('o')), Action::Stream(Stream::Stdout));
    assert_eq!(key(KeyCode::Char('e')), Action::Stream(Stream::Stderr));
    assert_eq!(key(KeyCode::Char('r')), Action::Buffering(Buffering::Raw));
    assert_eq!(key(KeyCode::Char('l')), Action::Buffering(Buffering::Line));
    assert_eq!(key(KeyCode::Char('b')), Action::Buffering(Buffering::Block));
    assert_eq!(key(KeyCode::Char('f')), Action::Buffering(Buffering::Frame));
    assert_eq!(
        key(KeyCode::Char('w')),
        Action::Buffering(Buffering::Thread)
    );
    assert_eq!(key(KeyCode::Char('+')), Action::CapacityUp);
    assert_eq!(key(KeyCode::Char('-')), Action::CapacityDown);
    assert_eq!(key(KeyCode::Char('y')), Action::ToggleSync);
    assert_eq!(key(KeyCode::Char('s')), Action::NextScene);
    assert_eq!(key(KeyCode::Char('x')), Action::NextBackend);
    assert_eq!(key(KeyCode::Char('t')), Action::Tour);
    assert_eq!(key(KeyCode::Char('h')), Action::ToggleHelp);
    assert_eq!(key(KeyCode::Char('?')), Action::ToggleHelp);
    assert_eq!(key(KeyCode::Char('q')), Action::Quit);
    assert_eq!(key(KeyCode::Esc), Action::Back);
    let ctrl_c = KeyEvent::new(KeyCode::Char('c'), KeyModifiers::CONTROL);
    assert_eq!(Action::from(ctrl_c), Action::Quit);
    let ctrl_z = KeyEvent::new(KeyCode::Char('z'), KeyModifiers::CONTROL);
    assert_eq!(Action::from(ctrl_z), Action::Suspend);
}

#[test]
fn unknown_keys_and_releases_do_nothing() {
    assert_eq!(key(KeyCode::Char('z')), Action::Nothing);
    assert_eq!(key(KeyCode::F(5)), Action::Nothing);
    let mut release = KeyEvent::new(KeyCode::Char('q'), KeyModifiers::NONE);
    release.kind = KeyEventKind::Release;
    assert_eq!(Action::from(release), Action::Nothing);
    let ctrl_x = KeyEvent::new(KeyCode::Char('x'), KeyModifiers::CONTROL);
    assert_eq!(Action::from(ctrl_x), Action::Nothing);
}

fn app() -> App {
    App::new(
        Mode::new(Stream::Stdout, Buffering::Line, DEFAULT_CAPACITY),
        Scene::Full,
        false,
    )
}

#[test]
fn capacity_doubles_and_halves_within_bounds() {
    let mut app = app();
    let now = Instant::now();
    for _ in 0..20 {
        app.apply(Action::CapacityUp, now);
    }
    assert_eq!(app.mode.capacity, MAX_CAPACITY);
    for _ in 0..20 {
        app.apply(Action::CapacityDown, now);
    }
    assert_eq!(app.mode.capacity, MIN_CAPACITY);
}

#[test]
fn an_unreachable_stream_is_refused_with_a_reason() {
    let mut app = app();
    app.reachable = [true, false];
    app.apply(Action::Stream(Stream::Stderr), Instant::now());
    assert_eq!(app.mode.stream, Stream::Stdout);
    assert!(
        app.status
            .as_deref()
            .unwrap()
            .contains("stderr is not this terminal")
    );
    for _ in 0..12 {
        app.apply(Action::NextMode, Instant::now());
        assert_eq!(app.mode.stream, Stream::Stdout);
    }
}

#[test]
fn choosing_a_mode_stops_the_tour() {
    let mut app = app();
    let t0 = Instant::now();
    app.apply(Action::Tour, t0);
    app.apply(Action::Buffering(Buffering::Frame), t0);
    assert!(app.tour.is_none());
    assert_eq!(app.mode.buffering, Buffering::Frame);
    app.tick(t0 + Duration::from_secs(60));
    assert_eq!(app.mode.buffering, Buffering::Frame);
}

#[test]
fn tour_visits_every_mode_then_returns() {
    let mut app = app();
    let t0 = Instant::now();
    app.apply(Action::Tour, t0);
    let mut visited = vec![app.mode];
    let mut ended = Vec::new();
    for i in 1..=10 {
        ended.push(app.tick(t0 + app.tour_step * i));
        visited.push(app.mode);
    }
    // Only the last step ends the tour.
    assert_eq!(ended.iter().filter(|e| **e).count(), 1);
    assert!(ended[9]);
    assert!(app.tour.is_none());
    assert_eq!(
        visited[..10],
        Mode::all(DEFAULT_CAPACITY).collect::<Vec<_>>()[..]
    );
    assert_eq!(
        visited[10],
        Mode::new(Stream::Stdout, Buffering::Line, DEFAULT_CAPACITY)
    );
}

#[test]
fn o_and_e_mean_std_handles_as_std_buffers_them() {
    let mut app = app();
    app.apply(Action::Buffering(Buffering::Frame), Instant::now());
    app.apply(Action::Stream(Stream::Stderr), Instant::now());
    assert_eq!(
        (app.mode.stream, app.mode.buffering),
        (Stream::Stderr, Buffering::Raw)
    );
    app.apply(Action::Stream(Stream::Stdout), Instant::now());
    assert_eq!(
        (app.mode.stream, app.mode.buffering),
        (Stream::Stdout, Buffering::Line)
    );
}

#[test]
fn the_verdict_compares_rows_of_one_condition_only() {
    use flushlab_core::meters::{ModeRow, Totals};
    let app = app();
    let here = app.condition(80, 24);
    let sparse = Condition {
        scene: Scene::Sparse,
        ..here
    };
    let totals = |frames| Totals {
        frames,
        seconds: 1.0,
        ..Totals::default()
    };
    let mut meters = Meters::new();
    let mode = |b| Mode::new(Stream::Stdout, b, DEFAULT_CAPACITY);
    meters.rows.push(ModeRow {
        condition: here,
        mode: mode(Buffering::Raw),
        totals: totals(2),
    });
    meters.rows.push(ModeRow {
        condition: here,
        mode: mode(Buffering::Line),
        totals: totals(44),
    });
    // A far faster row, but under another scene: it must not be the "best".
    meters.rows.push(ModeRow {
        condition: sparse,
        mode: mode(Buffering::Frame),
        totals: totals(1325),
    });
    let said = verdict(&meters, here);
    assert!(
        said.contains("stdout/line 44.0 fps is 22.0x stdout/raw"),
        "{said}"
    );
    assert!(
        said.contains("1 row(s) under other conditions not compared"),
        "{said}"
    );
    assert!(!said.contains("frame"), "{said}");
    let alone = verdict(&meters, sparse);
    assert!(alone.contains("fewer than two modes"), "{alone}");
}
