//! Runs the explorer and the headless run: one frame loop, two ways to end it. Interactive when
//! no duration is given (keys, until `q`), headless when one is (until it is over). Both take
//! the terminal over only when the measured stream is one.

mod drive;
pub mod report;

use std::io;
use std::os::fd::AsFd;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::Duration;

use anyhow::Context;
use clap::Args;

use crate::app::App;
use crate::backend::BackendKind;
use crate::condition::{Condition, HudLayout};
use crate::hud::Hud;
use crate::measured::MeasuredOutput;
use crate::meters::{Meters, ModeRow};
use crate::outcome::{Outcome, Refusal, reader_gone};
use crate::scene::Scene;
use crate::subject::Ceiling;
use crate::terminal_session::TerminalSession;
use crate::units::{
    DEFAULT_SIZE, parse_capacity, parse_duration, parse_fps, parse_size, parse_switch,
};
use crate::wait::Wait;
use crate::writer_mode::{Buffering, DEFAULT_CAPACITY, Mode, Stream};
use drive::{LoopSettings, drawable, frame_loop, too_large, transport_ceiling};
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

    /// How the writer waits when the terminal is full: sleep in write(2) as std does, poll
    /// 100 µs for room before sleeping, or spin (poll, never sleep) — in 4 KiB writes when it
    /// polls; measured runs only (with --duration; the HUD's expression shows the buffering
    /// alone). Where idle CPUs halt at once (many VMs) a sleeping writer gets about half of
    /// what the pty takes.
    #[arg(long, env = "WAIT", value_enum, default_value_t = Wait::Sleep)]
    pub wait: Wait,

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
    if cli.wait != Wait::Sleep && cli.duration.is_none() {
        return Err(Refusal::bad_input(format!(
            "--wait {}: the explorer's writers sleep in write(2) as std's do, as its HUD's \
             expressions say; --wait is for measured runs: give --duration, or use flushlab bench",
            cli.wait.name()
        )));
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
        MeasuredOutput::with_writers(mode, condition, crate::writer_mode::opener(cli.wait))?
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
