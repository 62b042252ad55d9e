//! `wrap --terminal NAME`: CMD in a real terminal emulator on flushlab's own X server (or the
//! person's, `--display`), typed into as a person types (key events through XTEST, encoded by
//! the terminal), its window watched through DAMAGE, the observer inside CMD as in every wrap. The terminal reads CMD's
//! pty, so what a fix buys is measured against the reader a person has; wrap reads nothing of
//! the pty here (no drain stage: *paint* takes its place, from the frame's end to the window's
//! last change).
//!
//! Every process started — Xvfb, the terminal, CMD — ends with wrap on every way out but
//! SIGKILL: each is held by a guard that ends it when dropped, CMD first.

mod cmd;
mod desk;
mod keys;
mod wayland_desk;
mod x11_desk;

use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use anyhow::Context;

use self::cmd::{gone, through_env};
use self::desk::{Desk, Watching, start_terminal, strokes};
use self::keys::{settle, type_keys, wait_until_ready};
use self::wayland_desk::WaylandDesk;
use self::x11_desk::X11Desk;
use super::args::{Fix, Way};
use super::inside::Observation;
use super::inside_report::InsideReport;
use super::typing::Keys;
use crate::detect::timeline::Timeline;
use crate::painting::terminals::Terminal;

pub(super) use self::desk::Desktop;

/// What one run in a terminal gave.
pub(super) struct PixelRun {
    pub(super) terminal: Terminal,
    pub(super) desktop: Desktop,
    pub(super) size: (u16, u16),
    pub(super) seconds: f64,
    /// With the window's changes and the frame markers read back.
    pub(super) timeline: Timeline,
    /// The share of a core wrap's watcher of the window took.
    pub(super) watcher_cpu_share: f64,
    pub(super) inside: InsideReport,
    /// After CMD started, when the first key went (`None`: CMD was never ready).
    pub(super) started_after: Option<Duration>,
    pub(super) unsettled: bool,
}

/// The observer for CMD in a terminal (`--observer none` is refused by [`check`]): on the pty
/// the terminal makes, which CMD names itself.
/// `--observer kernel`: attached with no pty, and rooted at CMD's shim once it names itself and
/// the emulator's pty (its socket in `scratch`).
fn start_inside(
    args: &super::args::WrapArgs,
    program: &Path,
    fix: Option<Fix>,
    scratch: &Path,
) -> std::io::Result<Observation> {
    if args.observer == super::args::ObserverArg::Kernel {
        return Observation::at_a_root(scratch, (program, &args.command[1..]));
    }
    Observation::start(
        (args.observer(program).unwrap_or(Way::Preload), false),
        None,
        fix,
        None,
    )
}

/// Runs CMD in `terminal` with `keys` typed into it; see the module's documentation.
pub(super) fn measure(
    args: &super::args::WrapArgs,
    program: &Path,
    (terminal, keys, fix): (Terminal, &Keys, Option<Fix>),
    signal: &AtomicUsize,
) -> anyhow::Result<PixelRun> {
    crate::sys::process::become_subreaper()?;
    // `--wayland` (or a Wayland-only terminal), `--wayland-display`; else `--display` or
    // flushlab's own Xvfb.
    match args.wayland_session() {
        Some(session) => on(
            WaylandDesk::open(&session)?,
            args,
            program,
            (terminal, keys, fix),
            signal,
        ),
        None => on(
            X11Desk::open(args.display.as_deref())?,
            args,
            program,
            (terminal, keys, fix),
            signal,
        ),
    }
}

/// [`measure`] on `desk`.
fn on<D: Desk>(
    mut desk: D,
    args: &super::args::WrapArgs,
    program: &Path,
    (terminal, keys, fix): (Terminal, &Keys, Option<Fix>),
    signal: &AtomicUsize,
) -> anyhow::Result<PixelRun> {
    let (before, strokes) = strokes(&mut desk, keys)?;
    // The shim's socket, where the kernel observer roots CMD; gone with the run.
    let scratch = crate::files::Scratch::new("flushlab-terminal")?;
    let inside = start_inside(args, program, fix, scratch.path())?;
    let command = through_env(&inside, program, &args.command[1..])?;
    let started = Instant::now();
    let (window_holder, window, cmd) = start_terminal(
        &mut desk,
        (terminal, &args.terminal_options),
        args.size,
        &command,
    )?;
    let shared = Arc::new(Watching::default());
    let recording = &shared.recording;
    let watching = desk.watch(&window, &shared)?;
    desk.focus(&window)?;
    let over = |deadline: Option<Instant>| {
        signal.load(Ordering::Relaxed) != 0
            || gone(cmd.0)
            || deadline.is_some_and(|d| Instant::now() >= d)
            || watching.is_finished()
    };
    let deadline = args.duration.map(|d| started + d);
    let ready_at = wait_until_ready(cmd.0, keys.after.map(|a| started + a), recording, || {
        over(deadline)
    });
    // A program that shows the calibration pattern when it is ready (the frame markers'
    // places, as `flushlab paint` draws it) gets its markers read back after each change.
    if ready_at.is_some()
        && let Some(strips) = desk.calibrate(&window)?
    {
        let _ = shared.strips.set(strips);
    }
    let mut unsettled = false;
    if ready_at.is_some() {
        type_keys(&desk, (before, &strokes), recording, || over(deadline))?;
        if deadline.is_none() {
            unsettled = !settle(cmd.0, recording, || over(None));
        }
        while deadline.is_some() && !over(deadline) {
            std::thread::sleep(Duration::from_millis(10));
        }
    }
    let end_ns = crate::sys::monotonic_ns();
    let seconds = started.elapsed().as_secs_f64();
    // CMD first (its last records reach the observer's channel), then its terminal, then what
    // the window showed.
    drop((cmd, window_holder));
    shared.done.store(true, Ordering::Relaxed);
    let watcher_cpu_share = watching
        .join()
        .map_err(|_| anyhow::anyhow!("the window's watcher panicked"))?
        .context("watching the terminal's window")?;
    let (way, why) = (inside.way(), inside.why().to_owned());
    let sightings = inside.finish();
    let desktop = desk.desktop()?;
    drop(desk);
    super::tree::Tree::end_descendants(super::watch::GRACE);
    let (_, bytes) = sightings.writes();
    let report = InsideReport::of(
        &sightings,
        bytes,
        0,
        &args.command_line(),
        (way, fix, &why, ""),
    );
    Ok(PixelRun {
        terminal,
        desktop,
        size: args.size,
        seconds,
        timeline: recording.timeline(
            report
                .frames_from_waits()
                .then(|| super::inside_timeline::timeline(&sightings)),
            end_ns,
        ),
        watcher_cpu_share,
        inside: report,
        started_after: ready_at.map(|at| at.saturating_duration_since(started)),
        unsettled,
    })
}

/// `--terminal`'s refusals before anything starts: keys to type, and what cannot go with it.
pub(super) fn check(args: &super::args::WrapArgs, has_keys: bool) -> Result<(), String> {
    let Some(terminal) = args.terminal else {
        return Ok(());
    };
    let name = terminal.name();
    if !has_keys {
        return Err(format!(
            "wrap --terminal {name} types keys and times each to its pixels: give --keys or --keys-file"
        ));
    }
    if args.no_observer || args.observer == super::args::ObserverArg::None {
        return Err(format!(
            "wrap --terminal {name} --no-observer: a key's frame is seen from inside CMD only (wrap does not read the terminal's pty)"
        ));
    }
    if !args.terminal_options.is_empty() && !terminal.takes_options() {
        return Err(format!(
            "wrap --terminal {name} --terminal-option: {name} takes no setting on its command line (xterm, urxvt, alacritty, kitty and foot do)"
        ));
    }
    if args.profile.is_some() {
        return Err(format!(
            "wrap --terminal {name} --profile: not together yet (profile the keys headless)"
        ));
    }
    if args.refresh.is_some() && args.wayland_session().is_none() {
        return Err(format!(
            "wrap --terminal {name} --refresh: the refresh rate is the Wayland output's: add --wayland (foot, kitty, alacritty)"
        ));
    }
    if terminal.wayland_only() && args.display.is_some() {
        return Err(format!(
            "wrap --terminal {name} --display: {name} runs on Wayland only (flushlab's own compositor, or --wayland-display); --display names an X display (xterm, st, alacritty, kitty, urxvt, mlterm)"
        ));
    }
    if (args.wayland || args.wayland_display.is_some())
        && matches!(
            terminal,
            Terminal::Xterm | Terminal::St | Terminal::Urxvt | Terminal::Mlterm
        )
    {
        return Err(format!(
            "wrap --terminal {name} {}: {name} draws through X11 only; on Wayland: foot, kitty, alacritty",
            if args.wayland {
                "--wayland"
            } else {
                "--wayland-display"
            }
        ));
    }
    if let Some(name) = &args.wayland_display {
        crate::painting::wayland::find_session(name)?;
    }
    if args.reader != crate::results::conditions::ReaderModel::Drain {
        return Err(format!(
            "wrap --terminal {name} --reader {}: the terminal reads the pty, not a reader model",
            args.reader
        ));
    }
    Ok(())
}
