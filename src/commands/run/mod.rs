//! Runs the explorer and the headless run: one frame loop, two ways to end it. Interactive when
//! no duration is given (keys, until `q`), headless when one is (until it is over). Both take
//! the terminal over only when the measured stream is one.

mod args;
mod drive;
pub mod run_report;

use std::io;
use std::os::fd::AsFd;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

use anyhow::Context;

use crate::explorer::app::App;
use crate::explorer::hud::Hud;
use crate::plumbing::measured::MeasuredOutput;
pub use args::RunArgs;
use drive::{LoopSettings, drawable, frame_loop, stream_fd, too_large, transport_ceiling};
use flushlab_core::condition::{Condition, HudLayout};
use flushlab_core::meters::{Meters, ModeRow};
use flushlab_core::outcome::{Outcome, Refusal, reader_gone};
use flushlab_core::subject::Ceiling;
use flushlab_core::units::DEFAULT_SIZE;
use flushlab_core::wait::Wait;
use flushlab_core::writer_mode::{Mode, Stream};
use flushlab_terminals::session::TerminalSession;
use run_report::{ModeReport, Report};

pub fn run(cli: RunArgs) -> anyhow::Result<Outcome> {
    let stream = cli.stream;
    let terminal = match plan(&cli) {
        Ok(terminal) => terminal,
        Err(refusal) => return Ok(refusal.tell()),
    };
    let (cols, rows) = if terminal {
        let (cols, rows) = flushlab_core::sys::window_size(stream_fd(stream))?;
        drawable(cols, rows)
    } else {
        cli.size.unwrap_or(DEFAULT_SIZE)
    };
    let signal = flushlab_terminals::session::watch_termination_signals()?;
    flushlab_terminals::session::end_stuck_runs()?;
    let stop = if terminal {
        Some(flushlab_terminals::session::watch_suspend()?)
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
    flushlab_core::timing::time_split(!cli.no_time_split);
    let condition = crate::explorer::hud::fit(&mut app, cols, rows);
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
    app.paint = cli.model(terminal);
    app.backend = cli.backend;
    app.vcpus_halt = flushlab_core::results::Idle::this().is_some_and(|idle| idle.halts_at_once());
    app.tour_step = cli.tour_seconds;
    app.hud_wanted = cli.hud.unwrap_or(HudLayout::Full);
    if let Some(step) = cli.lesson {
        // The caption is the lesson's panel: the compact HUD leaves the scene room.
        app.hud_wanted = HudLayout::Compact;
        app.go_to_step(step);
    }
    if terminal {
        let size = flushlab_core::sys::window_size(stream_fd(stream))?;
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
            let flag =
                flushlab_core::sys::signals::flag_on(flushlab_core::sys::signals::Watched::Resize)?;
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
        let out = MeasuredOutput::with_writers(
            mode,
            condition,
            flushlab_core::writer_mode::opener(cli.wait),
        )?;
        match app.paint {
            Some(policy) => out.with_model(policy)?,
            None => out,
        }
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
    meters: &flushlab_core::meters::Meters,
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
    meters: &flushlab_core::meters::Meters,
    app: &App,
    condition: flushlab_core::condition::Condition,
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
            peak_rss_kib: flushlab_core::sys::peak_rss_kib(flushlab_core::sys::Usage::Process),
            accounting: flushlab_core::accounting::accounting(),
            paint: app.paint,
            last,
            modes,
        };
        report
            .write_json(destination)
            .with_context(|| format!("writing the report to {destination}"))?;
    }
    Ok(())
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
