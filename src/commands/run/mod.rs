//! Runs the explorer and the headless run: one frame loop, two ways to end it. Interactive when
//! no duration is given (keys, until `q`), headless when one is (until it is over). Both take
//! the terminal over only when the measured stream is one.

pub mod report;

use std::io;
use std::os::fd::AsFd;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use anyhow::Context;
use clap::Args;

use crate::accounting::Counted;
use crate::app::{Action, App, verdict};
use crate::backend::BackendKind;
use crate::ceiling::{self, Spinning};
use crate::condition::{Condition, HudLayout};
use crate::hud::Hud;
use crate::keyboard::Keyboard;
use crate::measured::{MeasuredOutput, OpenWriter};
use crate::meters::Phases;
use crate::meters::{Meters, ModeRow};
use crate::outcome::{Outcome, Refusal, reader_gone};
use crate::scene::Scene;
use crate::subject::Ceiling;
use crate::terminal_session::TerminalSession;
use crate::units::{
    DEFAULT_SIZE, parse_capacity, parse_duration, parse_fps, parse_size, parse_switch,
};
use crate::writer_mode::{Buffering, DEFAULT_CAPACITY, Mode, Stream};
use report::{ModeReport, Report};

/// The explorer's and the headless run's settings.
#[derive(Debug, Args)]
pub struct RunArgs {
    #[command(flatten)]
    pub accounting: crate::frame_args::AccountingArg,

    /// The stream the frames are written to.
    #[arg(long, env = "STREAM", value_enum, default_value_t = Stream::Stdout)]
    pub stream: Stream,

    /// How the stream is buffered [default: as std buffers it: line for stdout (`stdout()`),
    /// raw for stderr (`stderr()`)]
    #[arg(long, env = "BUFFERING", value_enum)]
    pub buffering: Option<Buffering>,

    /// Block buffer capacity in bytes (64..=1MiB); suffixes K, KiB, M, MiB are accepted.
    #[arg(long, env = "CAPACITY", value_parser = parse_capacity, default_value_t = DEFAULT_CAPACITY)]
    pub capacity: usize,

    /// Run headless for this many seconds (e.g. 5 or 0.5), then exit.
    #[arg(long, env = "DURATION", value_parser = parse_duration, allow_negative_numbers = true)]
    pub duration: Option<Duration>,

    /// Wrap each frame in synchronized-output markers (DEC mode 2026).
    #[arg(long, env = "SYNC", value_parser = parse_switch, num_args = 0..=1,
          default_missing_value = "true", default_value = "false")]
    pub sync: bool,

    /// What is drawn under the HUD.
    #[arg(long, env = "SCENE", value_enum, default_value_t = Scene::Full)]
    pub scene: Scene,

    /// The ratatui backend that encodes each frame (x switches it in the explorer).
    #[arg(long, env = "BACKEND", value_enum, default_value_t = BackendKind::Crossterm)]
    pub backend: BackendKind,

    /// Frame size COLSxROWS when the stream is not a terminal [default: 200x60].
    #[arg(long, env = "SIZE", value_parser = parse_size)]
    pub size: Option<(u16, u16)>,

    /// Frames per second at most (default: as fast as the writer allows).
    #[arg(long, env = "FPS_CAP", value_parser = parse_fps, allow_negative_numbers = true)]
    pub fps_cap: Option<f64>,

    /// Seconds per mode in the tour (key t).
    #[arg(long, value_parser = parse_duration, default_value = "2", allow_negative_numbers = true)]
    pub tour_seconds: Duration,

    /// Also write the summary as JSON to this file (`-` = stdout, when the frames go to
    /// stderr).
    #[arg(long = "export-json", alias = "report", value_name = "FILE", value_parser = crate::files::Destination::parse)]
    pub report: Option<crate::files::Destination>,

    /// How much of the screen the HUD takes [default: full from 100x40, else compact]
    #[arg(long, env = "HUD", value_enum)]
    pub hud: Option<HudLayout>,

    /// Measure a reference instead of a writer mode: `cpu` renders into io::sink(), `transport`
    /// writes one pre-encoded frame over and over.
    #[arg(long, env = "CEILING", value_enum)]
    pub ceiling: Option<Ceiling>,

    /// The settings that came from environment variables (`SIZE=80x24`), named in the summary:
    /// a shell may export `SIZE` or `HUD` for other reasons. Filled by `main`.
    #[arg(skip)]
    pub from_env: Vec<String>,

    /// The step `flushlab lesson` starts at (0-based); `None` for the explorer.
    #[arg(skip)]
    pub lesson: Option<usize>,

    /// Panic after this many frames, to test that the terminal is restored.
    #[arg(long, hide = true)]
    pub inject_panic_at_frame: Option<u64>,

    /// Stop (as if hung up) once this process is no longer our parent: a bench's child must not
    /// outlive a bench that was killed (SIGKILL leaves it no chance to kill its children).
    #[arg(long, hide = true, value_name = "PID")]
    pub exit_with_parent: Option<i32>,

    /// Do not time the frames' phases (the time split): for measuring what timing them costs.
    #[arg(long, hide = true)]
    pub no_time_split: bool,

    /// `flushlab paint`'s run inside a terminal: draw the calibration pattern, wait for
    /// `FILE.go`, draw the frame marker and log each frame's write times to FILE.
    #[arg(
        long,
        hide = true,
        value_name = "FILE",
        requires = "duration",
        conflicts_with = "ceiling"
    )]
    pub paint_log: Option<std::path::PathBuf>,
}

/// How the loop is driven, decided once before it starts.
struct LoopSettings {
    duration: Option<Duration>,
    fps_cap: Option<f64>,
    /// Read keys from the terminal.
    input: bool,
    /// Set by SIGWINCH, and the stream whose terminal size to ask then.
    resize: Option<(Arc<AtomicBool>, Stream)>,
    panic_at_frame: Option<u64>,
    /// Set by SIGTSTP (see [`crate::terminal_session::watch_suspend`]).
    stop: Option<Arc<AtomicBool>>,
    /// The parent that must stay alive (see [`RunArgs::exit_with_parent`]).
    parent: Option<i32>,
}

/// Whether `parent` is gone: we were handed to another (init, a subreaper). One getppid(2), asked
/// once a second (when the meters' window closes), not per frame.
fn orphaned(parent: Option<i32>) -> bool {
    parent.is_some_and(|pid| crate::sys::signals::parent() != Some(pid))
}

impl RunArgs {
    /// Every environment variable the run reads, from its clap definition (`ACCOUNTING`
    /// included): the list a parent clears so that its own environment never leaks into a
    /// child it configures.
    pub fn env_vars() -> Vec<String> {
        let command = <RunArgs as clap::Args>::augment_args(clap::Command::new("run"));
        command
            .get_arguments()
            .filter_map(|a| a.get_env())
            .map(|env| env.to_string_lossy().into_owned())
            .collect()
    }

    /// The mode the run starts in: std's own handle unless a buffering was chosen.
    pub fn mode(&self) -> Mode {
        let buffering = self.buffering.unwrap_or(self.stream.std_buffering());
        Mode::new(self.stream, buffering, self.capacity)
    }
}

pub fn run(cli: RunArgs) -> anyhow::Result<Outcome> {
    let stream = cli.stream;
    let terminal = match plan(&cli) {
        Ok(terminal) => terminal,
        Err(refusal) => return Ok(refusal.tell()),
    };
    let (cols, rows) = if terminal {
        let (cols, rows) = crate::sys::window_size(stream_fd(stream))?;
        drawable(cols, rows)
    } else {
        cli.size.unwrap_or(DEFAULT_SIZE)
    };
    let signal = crate::terminal_session::watch_termination_signals()?;
    crate::terminal_session::end_stuck_runs()?;
    let stop = if terminal {
        Some(crate::terminal_session::watch_suspend()?)
    } else {
        None
    };

    // The session's own setup writes come before the meters start counting.
    let session = if terminal {
        Some(TerminalSession::enter(stream)?)
    } else {
        None
    };
    let mut app = start_app(&cli, terminal, (cols, rows))?;
    let settings = loop_settings(&cli, terminal, stop)?;
    crate::timing::time_split(!cli.no_time_split);
    let condition = crate::hud::fit(&mut app, cols, rows);
    let hud = Hud::default();
    let (outcome, meters) = match cli.ceiling {
        Some(Ceiling::Transport) => {
            transport_ceiling(&cli, &app, &hud, condition, &settings, &signal)?
        }
        ceiling => {
            let writers = Writers {
                mode: cli.mode(),
                condition,
                sink: ceiling.is_some(),
            };
            frames(&cli, &mut app, &hud, writers, &settings, &signal, rows)?
        }
    };
    drop(session);

    let outcome = match outcome {
        Ok(outcome) => outcome,
        Err(e) if reader_gone(&e) => {
            stream.say_reader_gone(&e);
            Outcome::ReaderGone
        }
        Err(e) => {
            stream.say_failed("frames", &e);
            Outcome::Failed
        }
    };

    tell(&cli, outcome, &meters, &app, condition, terminal)?;
    Ok(outcome)
}

/// The run's flags checked before the terminal is touched: the stream still open, a duration
/// where the stream is not a terminal, a report that can be written and does not share the
/// frames' stream. `Ok(true)`: the stream is a terminal.
fn plan(cli: &RunArgs) -> Result<bool, Refusal> {
    let stream = cli.stream;
    if let Some(e) = stream.closed_at_start() {
        // Said by the stream itself, in the words every command uses for it.
        stream.say_reader_gone(&e);
        return Err(Refusal {
            outcome: Outcome::ReaderGone,
            why: String::new(),
        });
    }
    let terminal = stream.is_terminal();
    if !terminal && cli.duration.is_none() {
        // `cli::validate_run` says so first, with clap's usage; this is for a library caller.
        return Err(format!(
            "{} is not a terminal and no duration was given",
            stream.name()
        )
        .into());
    }
    if let Some(destination) = &cli.report {
        if destination.is_stdout() && stream == Stream::Stdout {
            return Err(Refusal::bad_input(
                "--export-json - and STREAM=stdout both use stdout: give --export-json a file, or \
                 draw on stderr (STREAM=stderr)",
            ));
        }
        destination
            .check()
            .map_err(|e| format!("--export-json '{destination}': {e}"))?;
    }
    Ok(terminal)
}

/// The explorer's state at the start: the mode, scene and HUD the flags ask for, the lesson's
/// step, and which streams reach the terminal.
fn start_app(cli: &RunArgs, terminal: bool, (cols, rows): (u16, u16)) -> io::Result<App> {
    let stream = cli.stream;
    let mut app = App::new(cli.mode(), cli.scene, cli.sync);
    app.backend = cli.backend;
    app.tour_step = cli.tour_seconds;
    app.hud_wanted = cli.hud.unwrap_or(HudLayout::Full);
    if let Some(step) = cli.lesson {
        // The caption is the lesson's panel: the compact HUD leaves the scene room.
        app.hud_wanted = HudLayout::Compact;
        app.go_to_step(step);
    }
    if terminal {
        let size = crate::sys::window_size(stream_fd(stream))?;
        if (cols, rows) != size {
            app.status = Some(too_large(size.0, size.1));
        }
    }
    app.reachable = Stream::ALL.map(|s| s == stream || (terminal && same_terminal(stream, s)));
    Ok(app)
}

fn loop_settings(
    cli: &RunArgs,
    terminal: bool,
    stop: Option<Arc<AtomicBool>>,
) -> io::Result<LoopSettings> {
    Ok(LoopSettings {
        duration: cli.duration,
        fps_cap: cli.fps_cap,
        // A ceiling measures one fixed thing, but keys still end it.
        input: terminal,
        panic_at_frame: cli.inject_panic_at_frame,
        parent: cli.exit_with_parent,
        stop,
        resize: if terminal && cli.ceiling.is_none() {
            let flag = crate::sys::signals::flag_on(crate::sys::signals::Watched::Resize)?;
            Some((flag, cli.stream))
        } else {
            None
        },
    })
}

/// What the frames are written through: the mode's writer stack, or a sink (the CPU ceiling).
struct Writers {
    mode: Mode,
    condition: Condition,
    sink: bool,
}

/// The frame loop over the measured output, with paint's probe when `--paint-log` asks.
fn frames(
    cli: &RunArgs,
    app: &mut App,
    hud: &Hud,
    writers: Writers,
    settings: &LoopSettings,
    signal: &AtomicUsize,
    rows: u16,
) -> anyhow::Result<(io::Result<Outcome>, Meters)> {
    // The wait for paint's observer comes before the meters start: it is no frame's.
    let stop = || signal.load(Ordering::Relaxed) != 0;
    let mut probe = match &cli.paint_log {
        Some(log) => Some(crate::painting::probe::Probe::start(
            log, cli.stream, rows, stop,
        )?),
        None => None,
    };
    let Writers {
        mode,
        condition,
        sink,
    } = writers;
    let mut out = if sink {
        MeasuredOutput::with_writers(mode, condition, |_| Ok(Box::new(io::sink())))?
    } else {
        MeasuredOutput::open(mode, condition)?
    };
    let outcome = frame_loop(app, hud, &mut out, settings, signal, probe.as_mut());
    if let Some(probe) = probe {
        probe.finish()?;
    }
    let (meters, flushed) = out.finish();
    Ok((outcome.and_then(|o| flushed.map(|()| o)), meters))
}

/// A summary line a row, on the stream the frames did not use (unless the report is there),
/// and the settings that came from the environment.
fn write_summaries(
    cli: &RunArgs,
    outcome: Outcome,
    meters: &crate::meters::Meters,
    modes: &[ModeReport],
) {
    // Rows of different conditions did different work: the summary says which is which.
    let conditions = meters
        .rows
        .iter()
        .map(|r| r.condition)
        .collect::<std::collections::HashSet<_>>()
        .len();
    // Nobody reads a summary after the reader went away, and a failed run's figures are not
    // a mode's: only the report (which says `outcome`) is written.
    let summaries = if matches!(outcome, Outcome::ReaderGone | Outcome::Failed) {
        0
    } else {
        modes.len()
    };
    // The summary goes to the stream the frames did not use, unless the report is there.
    let aside = if cli.report.as_ref().is_some_and(|d| d.is_stdout()) {
        Stream::Stderr
    } else {
        cli.stream.other()
    };
    for (line, row) in modes.iter().zip(&meters.rows).take(summaries) {
        let summary = line.summary_line();
        aside.write_line(&if conditions > 1 {
            format!("{summary} [{}]", row.condition)
        } else {
            summary
        });
    }
    if summaries > 0 && !cli.from_env.is_empty() {
        aside.write_line(&format!(
            "settings from the environment: {}",
            cli.from_env.join(", ")
        ));
    }
}

/// Says what the run measured, after the terminal is restored: a summary line a row on the
/// stream the frames did not use (unless the report is there), and the JSON report.
fn tell(
    cli: &RunArgs,
    outcome: Outcome,
    meters: &crate::meters::Meters,
    app: &App,
    condition: crate::condition::Condition,
    terminal: bool,
) -> anyhow::Result<()> {
    let name = |row: &ModeRow| match cli.ceiling {
        Some(ceiling) => ceiling.name().to_owned(),
        None => row.mode.to_string(),
    };
    let modes: Vec<ModeReport> = meters
        .rows
        .iter()
        .map(|row| ModeReport::new(name(row), row.mode, row.condition, &row.totals))
        .collect();
    write_summaries(cli, outcome, meters, &modes);
    if let Some(destination) = &cli.report {
        // The last row measured (the only one of a headless run); of the transport ceiling's
        // write sizes, the fastest: that is the ceiling.
        let last = match cli.ceiling {
            Some(Ceiling::Transport) => modes
                .iter()
                .max_by(|a, b| a.figures.fps.total_cmp(&b.figures.fps)),
            _ => meters.last_row().and_then(|i| modes.get(i)),
        };
        let last = last.cloned().context("no mode was measured")?;
        // The frame size at the end of the run (it follows resizes).
        let end = meters
            .last_row()
            .map_or(condition, |i| meters.rows[i].condition);
        let report = Report {
            version: env!("CARGO_PKG_VERSION"),
            outcome: outcome.describe(),
            scene: app.scene,
            sync: app.sync,
            cols: end.cols,
            rows: end.rows,
            total_frames: meters.frames(),
            terminal,
            peak_rss_kib: crate::sys::peak_rss_kib(crate::sys::Usage::Process),
            accounting: crate::accounting::accounting(),
            last,
            modes,
        };
        report
            .write_json(destination)
            .with_context(|| format!("writing the report to {destination}"))?;
    }
    Ok(())
}

/// The transport ceiling: one pre-encoded frame written over and over, as fast as the stream
/// takes it, by a writer that spins instead of sleeping in write(2).
fn transport_ceiling(
    cli: &RunArgs,
    app: &App,
    hud: &Hud,
    condition: crate::condition::Condition,
    settings: &LoopSettings,
    signal: &AtomicUsize,
) -> anyhow::Result<(io::Result<Outcome>, crate::meters::Meters)> {
    let (stream, mode) = (cli.stream, cli.mode());
    let (cols, rows) = (condition.cols, condition.rows);
    let frame = ceiling::encode_steady_frame(app, hud, condition);
    let open: OpenWriter = match stream {
        Stream::Stdout => |_| Ok(Box::new(Counted::new(Spinning::new(Stream::Stdout.raw()?)))),
        Stream::Stderr => |_| Ok(Box::new(Counted::new(Spinning::new(Stream::Stderr.raw()?)))),
    };
    let mut out = MeasuredOutput::with_writers(mode, condition, open)?;
    let cells = usize::from(cols) * usize::from(rows);
    let duration = cli.duration.unwrap_or(Duration::MAX);
    let parent = cli.exit_with_parent;
    // Raw mode makes Ctrl-C a byte: keys are read once a second, when a window closes.
    let keyboard = std::cell::RefCell::new(settings.input.then(|| Keyboard::open().ok()).flatten());
    let quit_key = || {
        keyboard.borrow_mut().as_mut().is_some_and(|k| {
            k.pending()
                .is_ok_and(|keys| keys.into_iter().any(|key| Action::from(key).ends_run()))
        })
    };
    let result = ceiling::transport_loop(&mut out, &frame, cells, duration, signal, || {
        if orphaned(parent) {
            Some(Outcome::Signal(1))
        } else if quit_key() {
            Some(Outcome::Quit)
        } else {
            None
        }
    });
    let (meters, flushed) = out.finish();
    Ok((result.and_then(|o| flushed.map(|()| o)), meters))
}

/// The size to draw at after a SIGWINCH (asked once per signal, never per frame); `None`
/// when there was none. A size beyond [`MAX_DRAWN`] is said in the status line.
fn resized(settings: &LoopSettings, app: &mut App) -> Option<(u16, u16)> {
    let (flag, size_of) = settings.resize.as_ref()?;
    if !flag.swap(false, Ordering::Relaxed) {
        return None;
    }
    let size = crate::sys::window_size(stream_fd(*size_of)).ok()?;
    let drawn = drawable(size.0, size.1);
    if drawn != size {
        app.status = Some(too_large(size.0, size.1));
    }
    Some(drawn)
}

fn frame_loop(
    app: &mut App,
    hud: &Hud,
    out: &mut MeasuredOutput,
    settings: &LoopSettings,
    signal: &AtomicUsize,
    mut probe: Option<&mut crate::painting::probe::Probe>,
) -> io::Result<Outcome> {
    let start = Instant::now();
    let mut keyboard = settings.input.then(|| open_keyboard(app)).flatten();
    let mut next_poll = start;
    let mut pace = settings.fps_cap.map(|fps| Pace {
        next_due: start,
        budget: Duration::from_secs_f64(1.0 / fps),
    });
    let (mut cols, mut rows) = (out.area().width, out.area().height);
    let outcome = loop {
        let frame_start = Instant::now();
        if settings.duration.is_some_and(|d| frame_start - start >= d) {
            break Outcome::Finished;
        }
        if let sig @ 1.. = signal.load(Ordering::Relaxed) {
            break Outcome::Signal(sig);
        }
        // Input is polled without blocking, at most once a millisecond: a key is never late by
        // more than a frame, and a fast scene does not pay a syscall per frame for it.
        if keyboard.is_some() && frame_start >= next_poll {
            next_poll = frame_start + Duration::from_millis(1);
            apply_keys(&mut keyboard, app, out, (cols, rows), frame_start)?;
        }
        if app.quit {
            break Outcome::Quit;
        }
        suspend_if_asked(app, out, settings)?;
        if let Some(size) = resized(settings, app) {
            (cols, rows) = size;
        }
        app.expire_status(frame_start);
        let tour_over = app.tick(frame_start);
        out.switch(app.mode, crate::hud::fit(app, cols, rows))?;
        out.pause(app.show_help || app.show_table)?;
        if tour_over {
            app.status = Some(verdict(out.meters(), out.condition()));
            // Every mode's row, whatever room the HUD has: the tour's answer.
            app.show_table = true;
        }

        let area = out.area();
        let frame = out.meters().frames();
        out.build_frame(|meters, canvas| {
            hud.paint_frame(app, meters, frame, area, canvas);
            if probe.is_some() {
                crate::painting::marker::paint(frame, area, canvas);
            }
        });
        let writing = probe.is_some().then(crate::sys::monotonic_ns);
        let window_closed = out.present(&[])?;
        if let (Some(probe), Some(start_ns)) = (probe.as_deref_mut(), writing) {
            probe.record(frame, start_ns);
        }
        if window_closed && orphaned(settings.parent) {
            break Outcome::Signal(1);
        }
        let frames = out.meters().frames();
        if settings.panic_at_frame == Some(frames) {
            panic!("injected panic at frame {frames}");
        }
        if let Some(pace) = pace.as_mut() {
            let idle = pace.wait(signal, keyboard.as_ref());
            out.add_phases(Phases {
                build: Duration::ZERO,
                idle,
            });
        }
    };
    Ok(outcome)
}

fn open_keyboard(app: &mut App) -> Option<Keyboard> {
    Keyboard::open().inspect_err(|e| keyboard_lost(app, e)).ok()
}

/// What the HUD says when the keys cannot be read (at the start, or later).
fn keyboard_lost(app: &mut App, error: &impl std::fmt::Display) {
    app.status = Some(format!(
        "keyboard unavailable ({error}); stop with a signal"
    ));
}

/// Applies the keys read since the last poll, each at once: ten presses are ten switches.
/// A keyboard that fails is dropped (and the HUD says so).
fn apply_keys(
    keyboard: &mut Option<Keyboard>,
    app: &mut App,
    out: &mut MeasuredOutput,
    (cols, rows): (u16, u16),
    now: Instant,
) -> io::Result<()> {
    let Some(keys) = keyboard.as_mut() else {
        return Ok(());
    };
    match keys.pending() {
        Ok(keys) => {
            for key in keys {
                app.apply(key.into(), now);
                out.switch(app.mode, crate::hud::fit(app, cols, rows))?;
            }
        }
        Err(e) => {
            *keyboard = None;
            keyboard_lost(app, &e);
        }
    }
    Ok(())
}

/// Suspends (Ctrl-Z, SIGTSTP) when asked, unless nothing could resume flushlab.
fn suspend_if_asked(
    app: &mut App,
    out: &mut MeasuredOutput,
    settings: &LoopSettings,
) -> io::Result<()> {
    let stopped = settings
        .stop
        .as_ref()
        .is_some_and(|flag| flag.swap(false, Ordering::Relaxed));
    if !(std::mem::take(&mut app.suspend) || stopped) {
        return Ok(());
    }
    if out.suspend()? {
        // The terminal may have been resized meanwhile: ask once.
        if let Some((resized, _)) = &settings.resize {
            resized.store(true, Ordering::Relaxed);
        }
    } else {
        app.status = Some(
            "not suspended: flushlab leads its session, nothing could resume it (q quits)"
                .to_owned(),
        );
    }
    Ok(())
}

/// `--fps-cap`'s clock. The capped rate keeps to a clock of its own: each frame is due a
/// budget after the last one was due, so the sleeps' wake-up delays do not add up (a 30 fps cap
/// that slept a budget after each frame's start gave 29 on a busy machine).
struct Pace {
    next_due: Instant,
    budget: Duration,
}

impl Pace {
    /// Waits until the next frame is due; returns how long it waited (the frame's idle time).
    fn wait(&mut self, signal: &AtomicUsize, keyboard: Option<&Keyboard>) -> Duration {
        let pausing = Instant::now();
        self.next_due += self.budget;
        // Behind by more than a frame (a stall, a suspend): start afresh rather than burst.
        if self.next_due + self.budget < pausing {
            self.next_due = pausing;
        }
        // Asleep in slices, so that keys and signals still end a slow-capped run at once.
        while signal.load(Ordering::Relaxed) == 0 {
            let left = self.next_due.saturating_duration_since(Instant::now());
            if left.is_zero() {
                break;
            }
            let slice = left.min(Duration::from_millis(50));
            match keyboard {
                Some(keys) if keys.wait(slice) => break,
                Some(_) => {}
                None => std::thread::sleep(slice),
            }
        }
        pausing.elapsed()
    }
}

/// The largest frame the explorer draws: a terminal may report any size (65535x65535 would be
/// two buffers of 4 G cells); beyond this, the top-left part is drawn and the HUD says so.
pub const MAX_DRAWN: (u16, u16) = (1024, 512);

fn drawable(cols: u16, rows: u16) -> (u16, u16) {
    (cols.min(MAX_DRAWN.0), rows.min(MAX_DRAWN.1))
}

fn too_large(cols: u16, rows: u16) -> String {
    let (c, r) = drawable(cols, rows);
    format!("the terminal is {cols}x{rows}: flushlab draws at most {c}x{r}, the top left")
}

fn stream_fd(stream: Stream) -> std::os::fd::BorrowedFd<'static> {
    match stream {
        Stream::Stdout => rustix::stdio::stdout(),
        Stream::Stderr => rustix::stdio::stderr(),
    }
}

/// Whether `other` is a terminal and the same one as `stream`: only then can the explorer
/// switch to it without drawing into a file or someone else's screen.
fn same_terminal(stream: Stream, other: Stream) -> bool {
    if !other.is_terminal() {
        return false;
    }
    let rdev = |s: Stream| {
        rustix::fs::fstat(stream_fd(s).as_fd())
            .map(|st| st.st_rdev)
            .ok()
    };
    rdev(stream).is_some() && rdev(stream) == rdev(other)
}
