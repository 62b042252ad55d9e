//! The frame loop the explorer and the headless run share: frames drawn and measured until the
//! duration is over, `q`, a signal or a gone reader; keys applied as they come, resizes
//! followed, Ctrl-Z honoured, `--fps-cap` kept to a clock; and the transport ceiling's loop of
//! one pre-encoded frame.

use std::io;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use super::args::RunArgs;
use crate::explorer::app::{Action, App, verdict};
use crate::explorer::hud::Hud;
use crate::plumbing::ceiling;
use crate::plumbing::measured::{MeasuredOutput, OpenWriter};
use flushlab_core::accounting::Counted;
use flushlab_core::meters::Phases;
use flushlab_core::outcome::Outcome;
use flushlab_core::wait::{Wait, Waiting};
use flushlab_core::writer_mode::Stream;
use flushlab_terminals::input::{KeyClock, Keyboard};

/// How the loop is driven, decided once before it starts.
pub(super) struct LoopSettings {
    pub(super) duration: Option<Duration>,
    pub(super) fps_cap: Option<f64>,
    /// Read keys from the terminal.
    pub(super) input: bool,
    /// Set by SIGWINCH, and the stream whose terminal size to ask then.
    pub(super) resize: Option<(Arc<AtomicBool>, Stream)>,
    pub(super) panic_at_frame: Option<u64>,
    /// Set by SIGTSTP (see [`flushlab_terminals::session::watch_suspend`]).
    pub(super) stop: Option<Arc<AtomicBool>>,
    /// The parent that must stay alive (see [`RunArgs::exit_with_parent`]).
    pub(super) parent: Option<i32>,
}

/// Whether `parent` is gone: we were handed to another (init, a subreaper). One getppid(2), asked
/// once a second (when the meters' window closes), not per frame.
fn orphaned(parent: Option<i32>) -> bool {
    parent.is_some_and(|pid| flushlab_core::sys::signals::parent() != Some(pid))
}

/// The transport ceiling: one pre-encoded frame written over and over, as fast as the stream
/// takes it, by a writer that spins instead of sleeping in write(2).
pub(super) fn transport_ceiling(
    cli: &RunArgs,
    app: &App,
    hud: &Hud,
    condition: flushlab_core::condition::Condition,
    settings: &LoopSettings,
    signal: &AtomicUsize,
) -> anyhow::Result<(io::Result<Outcome>, flushlab_core::meters::Meters)> {
    let (stream, mode) = (cli.stream, cli.mode());
    let (cols, rows) = (condition.cols, condition.rows);
    let frame = ceiling::encode_steady_frame(app, hud, condition);
    let open: OpenWriter = match stream {
        Stream::Stdout => |_| spinning(Stream::Stdout),
        Stream::Stderr => |_| spinning(Stream::Stderr),
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

/// The transport ceiling's writer: it chooses its write sizes itself ([`ceiling::write_sizes`]).
fn spinning(stream: Stream) -> io::Result<crate::plumbing::renderer::BoxedWriter> {
    Ok(Box::new(Counted::new(Waiting::unchunked(
        stream.raw()?,
        Wait::Spin,
    ))))
}

/// The size to draw at after a SIGWINCH (asked once per signal, never per frame); `None`
/// when there was none. A size beyond [`MAX_DRAWN`] is said in the status line.
fn resized(settings: &LoopSettings, app: &mut App) -> Option<(u16, u16)> {
    let (flag, size_of) = settings.resize.as_ref()?;
    if !flag.swap(false, Ordering::Relaxed) {
        return None;
    }
    let size = flushlab_core::sys::window_size(stream_fd(*size_of)).ok()?;
    let drawn = drawable(size.0, size.1);
    if drawn != size {
        app.status = Some(too_large(size.0, size.1));
    }
    Some(drawn)
}

pub(super) fn frame_loop(
    app: &mut App,
    hud: &Hud,
    out: &mut MeasuredOutput,
    settings: &LoopSettings,
    signal: &AtomicUsize,
    mut probe: Option<&mut crate::painting::probe::Probe>,
) -> io::Result<Outcome> {
    let start = Instant::now();
    let mut keyboard = settings.input.then(|| open_keyboard(app)).flatten();
    // Without its clock a key's time is not shown; the keys work as before.
    let clock = keyboard
        .as_ref()
        .and_then(|k| flushlab_terminals::input::KeyClock::start(k).ok());
    // A key read and not yet answered: when it arrived, when the loop read it, and the mode it
    // was typed in.
    let mut unanswered: Option<(Instant, Instant, flushlab_core::writer_mode::Mode)> = None;
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
            let typed_in = app.mode;
            // Taken before the read: the moment belongs to input that is there to be read
            // (a terminal's reply resets it too).
            let arrived = clock.as_ref().and_then(KeyClock::take);
            if apply_keys(&mut keyboard, app, out, (cols, rows), frame_start)? {
                let arrived = arrived.unwrap_or(frame_start).min(frame_start);
                unanswered = unanswered.or(Some((arrived, frame_start, typed_in)));
            }
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
        out.switch(app.mode, crate::explorer::hud::fit(app, cols, rows))?;
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
                flushlab_terminals::marker::paint(frame, area, canvas);
            }
        });
        let writing = probe.is_some().then(flushlab_core::sys::monotonic_ns);
        let presenting =
            unanswered.map(|_| (Instant::now(), flushlab_core::meters::CpuTimes::thread()));
        let window_closed = out.present(&[])?;
        if let (Some((arrived, read, mode)), Some(presenting)) = (unanswered.take(), presenting) {
            app.key_to_frame = Some(key_frame(mode, (arrived, read), presenting));
        }
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

/// The key that arrived at `arrived` and was read at `read`, answered by the frame whose
/// presenting began at `presenting` (with the loop's CPU times then) and ended now: its stages
/// ([`KeyFrame`](crate::explorer::app::KeyFrame) says how they are taken).
fn key_frame(
    mode: flushlab_core::writer_mode::Mode,
    (arrived, read): (Instant, Instant),
    (presenting, cpu): (Instant, flushlab_core::meters::CpuTimes),
) -> crate::explorer::app::KeyFrame {
    let now = Instant::now();
    let ms = |d: Duration| d.as_secs_f64() * 1e3;
    let present = now.saturating_duration_since(presenting);
    let encode = flushlab_core::meters::CpuTimes::thread()
        .user
        .saturating_sub(cpu.user)
        .min(present);
    crate::explorer::app::KeyFrame {
        mode,
        took: now.saturating_duration_since(arrived),
        stages: flushlab_core::detect::keyed::Stages {
            input_delay: Some(ms(read.saturating_duration_since(arrived))),
            processing: ms(presenting.saturating_duration_since(read) + encode),
            presentation_delay: None,
            emit: ms(present - encode),
            drain: None,
            paint: None,
        },
    }
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
/// A keyboard that fails is dropped (and the HUD says so). True when a key was read.
fn apply_keys(
    keyboard: &mut Option<Keyboard>,
    app: &mut App,
    out: &mut MeasuredOutput,
    (cols, rows): (u16, u16),
    now: Instant,
) -> io::Result<bool> {
    let Some(keys) = keyboard.as_mut() else {
        return Ok(false);
    };
    match keys.pending() {
        Ok(keys) => {
            for key in &keys {
                app.apply((*key).into(), now);
                out.switch(app.mode, crate::explorer::hud::fit(app, cols, rows))?;
            }
            Ok(!keys.is_empty())
        }
        Err(e) => {
            *keyboard = None;
            keyboard_lost(app, &e);
            Ok(false)
        }
    }
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

pub(super) fn drawable(cols: u16, rows: u16) -> (u16, u16) {
    (cols.min(MAX_DRAWN.0), rows.min(MAX_DRAWN.1))
}

pub(super) fn too_large(cols: u16, rows: u16) -> String {
    let (c, r) = drawable(cols, rows);
    format!("the terminal is {cols}x{rows}: flushlab draws at most {c}x{r}, the top left")
}

/// The standard descriptor a stream writes to, borrowed for the process's life.
pub(super) fn stream_fd(stream: Stream) -> std::os::fd::BorrowedFd<'static> {
    match stream {
        Stream::Stdout => rustix::stdio::stdout(),
        Stream::Stderr => rustix::stdio::stderr(),
    }
}
