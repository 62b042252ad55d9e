//! Runs the explorer and the headless run: one frame loop, two ways to end it. Interactive when
//! no duration is given (keys, until `q`), headless when one is (until it is over). Both take
//! the terminal over only when the measured stream is one.

use std::io;
use std::os::fd::AsFd;
use std::process::ExitCode;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use ratatui::layout::Rect;
use ratatui::widgets::Widget;

use crate::app::App;
use crate::ceiling::{self, Ceiling};
use crate::cli::{DEFAULT_SIZE, RunArgs};
use crate::keyboard::Keyboard;
use crate::renderer::{BoxedWriter, Renderer};
use crate::report::{ModeReport, Report};
use crate::terminal_session::TerminalSession;
use crate::writer_mode::{self, Mode, Stream};

/// Exit status when the reader of the measured stream went away (EIO from a closed pty, EPIPE
/// from a closed pipe).
pub const EXIT_READER_GONE: u8 = 3;

/// Why the loop stopped.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Outcome {
    Finished,
    Quit,
    Signal(usize),
}

impl Outcome {
    fn describe(self) -> String {
        match self {
            Outcome::Finished => "finished".into(),
            Outcome::Quit => "quit".into(),
            Outcome::Signal(n) => format!("signal:{n}"),
        }
    }

    fn exit_code(self) -> ExitCode {
        match self {
            Outcome::Finished | Outcome::Quit => ExitCode::SUCCESS,
            Outcome::Signal(n) => ExitCode::from(128 + n as u8),
        }
    }
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
}

pub fn run(cli: RunArgs) -> anyhow::Result<ExitCode> {
    let stream = cli.stream;
    let terminal = stream.is_terminal();
    if !terminal && cli.duration.is_none() {
        // Validated by `Cli::validate`; a library caller gets an error instead of a hang.
        bail!(
            "{} is not a terminal and no duration was given",
            stream.name()
        );
    }
    let (cols, rows) = if terminal {
        let size = rustix::termios::tcgetwinsize(stream_fd(stream))?;
        (size.ws_col, size.ws_row)
    } else {
        cli.size.unwrap_or(DEFAULT_SIZE)
    };
    let signal = crate::terminal_session::watch_termination_signals()?;

    // The session's own setup writes come before the meters start counting.
    let session = if terminal {
        Some(TerminalSession::enter(stream)?)
    } else {
        None
    };
    let mode = Mode::new(stream, cli.buffering, cli.capacity);
    let mut app = App::new(mode, cli.scene, cli.sync);
    app.tour_step = cli.tour_seconds;
    app.reachable = Stream::ALL.map(|s| s == stream || (terminal && same_terminal(stream, s)));
    let settings = LoopSettings {
        duration: cli.duration,
        fps_cap: cli.fps_cap,
        // A ceiling measures one fixed thing: no keys to switch it away.
        input: terminal && cli.ceiling.is_none(),
        panic_at_frame: cli.inject_panic_at_frame,
        resize: if terminal {
            let flag = Arc::new(AtomicBool::new(false));
            signal_hook::flag::register(signal_hook::consts::SIGWINCH, Arc::clone(&flag))?;
            Some((flag, stream))
        } else {
            None
        },
    };

    let area = Rect::new(0, 0, cols, rows);
    let (outcome, finished, area) = match cli.ceiling {
        Some(Ceiling::Transport) => {
            let frame = ceiling::encode_steady_frame(&app, area);
            let mut out = crate::meters::Counted::new(stream.raw()?);
            let duration = cli.duration.unwrap_or(Duration::MAX);
            let cells = usize::from(cols) * usize::from(rows);
            let result = ceiling::transport_loop(
                &mut out,
                &frame,
                cells,
                &mut app.meters,
                duration,
                &signal,
            );
            app.meters.end_segment(mode);
            let outcome = result.map(|sig| sig.map_or(Outcome::Finished, Outcome::Signal));
            (outcome, Ok(()), area)
        }
        ceiling => {
            let writer: BoxedWriter = match ceiling {
                Some(_) => Box::new(io::sink()),
                None => writer_mode::open(mode)?,
            };
            let mut renderer = Renderer::new(writer, area);
            let outcome = frame_loop(&mut app, &mut renderer, &settings, &signal);
            let area = renderer.area();
            (outcome, renderer.finish(), area)
        }
    };
    drop(session);

    let outcome = match outcome.and_then(|outcome| finished.map(|()| outcome)) {
        Ok(outcome) => outcome,
        Err(e) if reader_gone(&e) => {
            stream.other().write_line(&format!(
                "flushlab: the reader of {} went away ({e})",
                stream.name()
            ));
            return Ok(ExitCode::from(EXIT_READER_GONE));
        }
        Err(e) => return Err(e).with_context(|| format!("writing frames to {}", stream.name())),
    };

    let modes: Vec<ModeReport> = app
        .meters
        .per_mode
        .iter()
        .map(|(mode, totals)| ModeReport::new(*mode, totals))
        .map(|report| match cli.ceiling {
            Some(ceiling) => ModeReport {
                mode: ceiling.name().to_owned(),
                ..report
            },
            None => report,
        })
        .collect();
    for line in &modes {
        stream.other().write_line(&line.summary_line());
    }
    if let Some(path) = &cli.report {
        // The mode the run ended in (the only one of a headless run).
        let last = app
            .meters
            .per_mode
            .iter()
            .position(|(mode, _)| *mode == app.mode.key())
            .and_then(|i| modes.get(i).cloned())
            .context("no mode was measured")?;
        let report = Report {
            version: env!("CARGO_PKG_VERSION"),
            outcome: outcome.describe(),
            scene: app.scene,
            sync: app.sync,
            cols: area.width,
            rows: area.height,
            total_frames: app.meters.frames(),
            terminal,
            peak_rss_kib: crate::meters::peak_rss_kib(),
            accounting: crate::meters::accounting(),
            last,
            modes,
        };
        report
            .write_json(path)
            .with_context(|| format!("writing the report to {}", path.display()))?;
    }
    Ok(outcome.exit_code())
}

fn frame_loop(
    app: &mut App,
    renderer: &mut Renderer,
    settings: &LoopSettings,
    signal: &AtomicUsize,
) -> io::Result<Outcome> {
    let start = Instant::now();
    let mut current = app.mode;
    let mut keyboard = if settings.input {
        match Keyboard::open() {
            Ok(keyboard) => Some(keyboard),
            Err(e) => {
                app.status = Some(format!("keyboard unavailable ({e}); stop with a signal"));
                None
            }
        }
    } else {
        None
    };
    let mut next_poll = start;
    let frame_budget = settings
        .fps_cap
        .map(|fps| Duration::from_secs_f64(1.0 / fps));
    let outcome = loop {
        let frame_start = Instant::now();
        if settings.duration.is_some_and(|d| frame_start - start >= d) {
            break Outcome::Finished;
        }
        match signal.load(Ordering::Relaxed) {
            0 => {}
            sig => break Outcome::Signal(sig),
        }
        // Input is polled without blocking, at most once a millisecond: a key is never late by
        // more than a frame, and a fast scene does not pay a syscall per frame for it.
        if let Some(keys) = keyboard.as_mut().filter(|_| frame_start >= next_poll) {
            next_poll = frame_start + Duration::from_millis(1);
            match keys.pending() {
                Ok(keys) => {
                    for key in keys {
                        app.apply(key.into(), frame_start);
                        // Each key takes effect at once: ten presses are ten switches.
                        follow_mode(app, renderer, &mut current)?;
                    }
                }
                Err(e) => {
                    keyboard = None;
                    app.status = Some(format!("keyboard unavailable ({e}); stop with a signal"));
                }
            }
        }
        // The new size is asked once per SIGWINCH, never per frame.
        if let Some((resized, size_of)) = &settings.resize
            && resized.swap(false, Ordering::Relaxed)
            && let Ok(size) = rustix::termios::tcgetwinsize(stream_fd(*size_of))
        {
            renderer.resize(Rect::new(0, 0, size.ws_col, size.ws_row));
        }
        app.tick(frame_start);
        if app.quit {
            break Outcome::Quit;
        }
        follow_mode(app, renderer, &mut current)?;
        renderer.sync = app.sync;

        let area = renderer.area();
        app.render(area, renderer.buffer_mut());
        let cells = renderer.present()?;
        app.meters.frame_done(cells, Instant::now());
        if settings.panic_at_frame == Some(app.meters.frames()) {
            panic!("injected panic at frame {}", app.meters.frames());
        }
        if let Some(budget) = frame_budget {
            let spent = frame_start.elapsed();
            if spent < budget {
                std::thread::sleep(budget - spent);
            }
        }
    };
    renderer.set_writer(Box::new(io::sink())).ok();
    app.meters.end_segment(current);
    Ok(outcome)
}

/// Rebuilds the writer when the mode changed. The old writer is flushed (and its thread joined)
/// before the old mode's figures are closed, so its last bytes count to it.
fn follow_mode(app: &mut App, renderer: &mut Renderer, current: &mut Mode) -> io::Result<()> {
    if app.mode.key() != current.key() {
        renderer.set_writer(writer_mode::open(app.mode)?)?;
        app.meters.end_segment(*current);
    }
    *current = app.mode;
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

/// EIO from a hung-up terminal or EPIPE from a closed pipe: the reader is gone.
pub fn reader_gone(e: &io::Error) -> bool {
    e.kind() == io::ErrorKind::BrokenPipe
        || e.raw_os_error() == Some(rustix::io::Errno::IO.raw_os_error())
}
