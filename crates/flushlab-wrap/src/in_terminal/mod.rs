//! `wrap --terminal NAME`: CMD in a real terminal emulator on flushlab's own X server (or the
//! person's, `--display`), typed into as a person types (key events through XTEST, encoded by
//! the terminal), its window watched through DAMAGE, the observer inside CMD as in every wrap. The terminal reads CMD's
//! pty, so what a fix buys is measured against the reader a person has; wrap reads nothing of
//! the pty here (no drain stage: *paint* takes its place, from the frame's end to the window's
//! last change).
//!
//! Every process started — Xvfb, the terminal, CMD — ends with wrap on every way out: each is
//! held by a guard that ends it when dropped, CMD first; on SIGKILL, which drops nothing, the X
//! server (or sway) dies with wrap by its parent-death signal, the terminal with its display,
//! CMD with its terminal.

mod browser_desk;
mod cmd;
mod desk;
pub mod env_file;
mod keys;
mod wayland_desk;
mod x11_desk;

use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use anyhow::Context;

use self::browser_desk::BrowserDesk;
use self::cmd::{gone, through_env};
use self::desk::{Desk, Watching, start_terminal, strokes};
use self::keys::{settle, type_keys, wait_until_ready};
use self::wayland_desk::WaylandDesk;
use self::x11_desk::X11Desk;
use crate::observers::Observation;
use crate::observers::choice::ObserverArg;
use crate::observers::choice::Way;
use crate::observers::fix::Fix;
use crate::observers::inside_report::InsideReport;
use crate::plan::keys::Keys;
use crate::plan::{Display, Plan};
use crate::run::running::How;
use flushlab_core::detect::timeline::Timeline;
use flushlab_terminals::emulators::Terminal;

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
    /// In a browser terminal: what its host told.
    pub(super) browser: Option<flushlab_terminals::browser::protocol::BrowserRun>,
    /// What the camera saw of the window (flushlab's own Xvfb, `--camera on`).
    pub(super) film: Option<flushlab_terminals::camera::Film>,
    /// `--try`: the fix tried.
    pub(super) fix: Option<Fix>,
}

/// The observer for CMD in a terminal (`--observer none` is refused by [`check`]): on the pty
/// the terminal makes, which CMD names itself.
/// `--observer kernel`: attached with no pty, and rooted at CMD's shim once it names itself and
/// the emulator's pty (its socket in `scratch`).
/// `--via`: the kernel observer rooted at CMD's shim at the far end of `wire`.
fn start_inside(
    plan: &Plan,
    fix: Option<Fix>,
    scratch: &Path,
    wire: Option<&crate::via::Wire>,
) -> std::io::Result<Observation> {
    if plan.looking.asked == ObserverArg::Kernel || wire.is_some() {
        let cmd = (plan.cmd.program.as_path(), plan.cmd.arguments());
        return Observation::at_a_root(scratch, cmd, wire);
    }
    Observation::start(
        (plan.looking.way.unwrap_or(Way::Preload), false),
        None,
        fix,
        None,
    )
}

/// `--via`: waits until CMD's shim at the far end was told go, within what the wire gives its
/// start (the link's round trips); past that, the run ends in one line, as headless.
fn far_started(
    inside: &Observation,
    wire: Option<&crate::via::Wire>,
    started: Instant,
    mut over: impl FnMut() -> bool,
) -> anyhow::Result<()> {
    let (Some(wire), Some(went)) = (wire, inside.far_went()) else {
        return Ok(());
    };
    let waits = wire.waits();
    while went.get().is_none() && !over() {
        if waits
            .start_within
            .is_some_and(|within| started.elapsed() >= within)
        {
            anyhow::bail!("{}", waits.not_started);
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    Ok(())
}

/// Ends what the run left of wrap's descendants but the scratch's sweeper and the wire's
/// lasting processes (sshd, its sweeper), which serve the run after this one.
fn end_the_rest(scratch: &flushlab_core::files::Scratch, via: Option<&crate::via::Wire>) {
    let spared: Vec<i32> = scratch
        .sweeper()
        .into_iter()
        .chain(via.map(crate::via::Wire::lasting).unwrap_or_default())
        .collect();
    crate::run::tree::Tree::end_descendants_sparing(crate::run::watch::GRACE, &spared);
}

/// What the window's watcher and the camera saw, once both are told the run is done.
fn watched(
    watching: desk::WatchThread,
    camera: Option<desk::CameraThread>,
) -> anyhow::Result<(f64, Option<flushlab_terminals::camera::Film>)> {
    let watcher_cpu_share = watching
        .join()
        .map_err(|_| anyhow::anyhow!("the window's watcher panicked"))?
        .context("watching the terminal's window")?;
    let film = camera
        .map(|camera| {
            camera
                .join()
                .map_err(|_| anyhow::anyhow!("the camera panicked"))?
                .context("the camera on the terminal's window")
        })
        .transpose()?;
    Ok((watcher_cpu_share, film))
}

/// Runs CMD in `terminal` with `keys` typed into it; see the module's documentation.
pub(super) fn measure(
    plan: &Plan,
    (terminal, keys, how): (Terminal, &Keys, How<'_>),
    signal: &AtomicUsize,
) -> anyhow::Result<PixelRun> {
    let Some(in_terminal) = &plan.terminal else {
        anyhow::bail!("a run in {} with no display planned", terminal.name());
    };
    flushlab_core::sys::process::become_subreaper()?;
    let side = (terminal, keys, how);
    match &in_terminal.display {
        Display::Wayland(session) => on(
            WaylandDesk::open(session, in_terminal.camera)?,
            plan,
            side,
            signal,
        ),
        Display::X11(display) => on(
            X11Desk::open(display.as_deref(), in_terminal.camera)?,
            plan,
            side,
            signal,
        ),
        Display::Chromium(renderer) => on(
            BrowserDesk::open(*renderer, in_terminal.camera)?,
            plan,
            side,
            signal,
        ),
    }
}

/// [`measure`] on `desk`.
fn on<D: Desk>(
    mut desk: D,
    plan: &Plan,
    (terminal, keys, how): (Terminal, &Keys, How<'_>),
    signal: &AtomicUsize,
) -> anyhow::Result<PixelRun> {
    let fix = how.fix;
    let program = plan.cmd.program.as_path();
    let options = plan.terminal.as_ref().map_or(&[][..], |t| &t.options);
    let (before, strokes) = strokes(&mut desk, keys)?;
    // The shim's socket, where the kernel observer roots CMD, and CMD's environment; gone with
    // the run, however wrap ends.
    let scratch = flushlab_core::files::Scratch::swept("flushlab-terminal")?;
    let inside = start_inside(plan, fix, scratch.path(), how.via)?;
    let command = through_env(&inside, scratch.path(), program, plan.cmd.arguments())?;
    let started = Instant::now();
    // Over a wire, the terminal is the near end's: it runs where the near end lives (the
    // link's near namespace), and its command is the near end's.
    let mut start = || start_terminal(&mut desk, (terminal, options), plan.size, &command);
    let (window_holder, window, cmd) = match how.via {
        Some(wire) => wire.in_near(start)??,
        None => start()?,
    };
    let shared = Arc::new(Watching::default());
    let recording = &shared.recording;
    let watching = desk.watch(&window, &shared)?;
    desk.focus(&window)?;
    // After the focus, which puts the pointer in the window: the camera moves it away.
    let camera = desk.camera(&window, &shared)?;
    let over = |deadline: Option<Instant>| {
        signal.load(Ordering::Relaxed) != 0
            || gone(cmd.0)
            || deadline.is_some_and(|d| Instant::now() >= d)
            || watching.is_finished()
    };
    let deadline = how.duration.map(|d| started + d);
    far_started(&inside, how.via, started, || over(deadline))?;
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
    let end_ns = flushlab_core::sys::monotonic_ns();
    let seconds = started.elapsed().as_secs_f64();
    // CMD first (its last records reach the observer's channel), then its terminal, then what
    // the window showed.
    drop(cmd);
    let closed = desk.closing(&window);
    drop(window_holder);
    shared.done.store(true, Ordering::Relaxed);
    let (watcher_cpu_share, film) = watched(watching, camera)?;
    let (way, why) = (inside.way(), inside.why().to_owned());
    let sightings = inside.finish();
    closed?;
    let desktop = desk.desktop()?;
    let browser = desk.browser_run();
    drop(desk);
    end_the_rest(&scratch, how.via);
    let (_, bytes) = sightings.writes();
    let report = InsideReport::of(&sightings, bytes, 0, &plan.cmd.line(), (way, fix, &why, ""));
    Ok(PixelRun {
        terminal,
        desktop,
        size: plan.size,
        seconds,
        timeline: recording.timeline(
            report
                .frames_from_waits()
                .then(|| crate::observers::inside_timeline::timeline(&sightings)),
            end_ns,
        ),
        watcher_cpu_share,
        inside: report,
        started_after: ready_at.map(|at| at.saturating_duration_since(started)),
        unsettled,
        browser,
        film,
        fix,
    })
}
