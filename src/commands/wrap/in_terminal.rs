//! `wrap --terminal NAME`: CMD in a real terminal emulator on flushlab's own X server (or the
//! person's, `--display`), typed into as a person types (key events through XTEST, encoded by
//! the terminal), its window watched through DAMAGE, the observer inside CMD as in every wrap. The terminal reads CMD's
//! pty, so what a fix buys is measured against the reader a person has; wrap reads nothing of
//! the pty here (no drain stage: *paint* takes its place, from the frame's end to the window's
//! last change).
//!
//! Every process started — Xvfb, the terminal, CMD — ends with wrap on every way out but
//! SIGKILL: each is held by a guard that ends it when dropped, CMD first.

use std::ffi::OsString;
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use anyhow::{Context, bail};

use super::args::{Fix, Way};
use super::inside::Observation;
use super::inside_report::InsideReport;
use super::typing::Keys;
use crate::detect::recording::Recording;
use crate::detect::timeline::{SentKey, Timeline};
use crate::painting::display::{self, Screen, Terminal, Xvfb};
use crate::painting::keyboard::{self, Keyboard};
use crate::painting::wayland::{self, Compositor, Placed};
use crate::painting::window_watch::{Strips, X11Watcher, wait_for};

/// CMD is ready for keys once its threads are asleep and the window has not changed this long.
const READY_QUIET: Duration = Duration::from_millis(100);
/// Once the keys are done: the window unchanged and CMD asleep this long ends the run…
const SETTLE: Duration = Duration::from_millis(300);
/// … or this long after the last key, whatever it does.
const SETTLE_AT_MOST: Duration = Duration::from_secs(5);
/// How long a terminal may take to map its window (kitty's first start on software GL: ~4 s).
const WINDOW_AT_MOST: Duration = Duration::from_secs(20);

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

/// Where a run's terminal ran, as its report says it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) enum Desktop {
    /// flushlab's own Xvfb.
    OwnXvfb,
    /// `--display`: an X display of the person's.
    X11(String),
    /// A sway: flushlab's own headless one (`display` `None`) or a running session's
    /// (`--wayland-display`); the terminal's output, its refresh rate (Hz) as sway says it.
    Sway {
        display: Option<String>,
        output: String,
        refresh_hz: u32,
    },
}

impl Desktop {
    /// As the JSON's `display` says it: `own-xvfb`, the X display's name, `own-sway`, or the
    /// Wayland display's.
    pub(super) fn name(&self) -> &str {
        match self {
            Desktop::OwnXvfb => "own-xvfb",
            Desktop::X11(display) => display,
            Desktop::Sway { display: None, .. } => "own-sway",
            Desktop::Sway {
                display: Some(display),
                ..
            } => display,
        }
    }

    /// The Wayland output's refresh rate, Hz; `None` on X11.
    pub(super) fn refresh_hz(&self) -> Option<u32> {
        match self {
            Desktop::Sway { refresh_hz, .. } => Some(*refresh_hz),
            _ => None,
        }
    }

    /// As the summary says it: where, and how the keys were typed.
    pub(super) fn said(&self) -> String {
        match self {
            Desktop::OwnXvfb => "flushlab's Xvfb, keys typed as X key events".to_owned(),
            Desktop::X11(display) => format!(
                "on {}, keys typed as X key events",
                crate::units::printable(display)
            ),
            Desktop::Sway {
                display: None,
                refresh_hz,
                ..
            } => format!(
                "Wayland: flushlab's headless sway, software rendering, its output at {refresh_hz} Hz, keys typed through a virtual keyboard"
            ),
            Desktop::Sway {
                display: Some(display),
                output,
                refresh_hz,
            } => format!(
                "Wayland: the sway session at {}, output {} at {refresh_hz} Hz, keys typed through a virtual keyboard",
                crate::units::printable(display),
                crate::units::printable(output)
            ),
        }
    }
}

/// CMD, started by the terminal: ended (TERM, KILL after a grace) when dropped.
struct Cmd(i32);

impl Drop for Cmd {
    fn drop(&mut self) {
        use crate::sys::signals::{Signal, signal_process};
        if gone(self.0) {
            return;
        }
        let _ = signal_process(self.0, Signal::TERM);
        let until = Instant::now() + super::watch::GRACE;
        while Instant::now() < until && !gone(self.0) {
            std::thread::sleep(Duration::from_millis(5));
        }
        if !gone(self.0) {
            let _ = signal_process(self.0, Signal::KILL);
        }
    }
}

/// One key of the script as the desktop's keyboard types it, and the pause after it.
struct Typed {
    name: String,
    stroke: Stroke,
    pause: Duration,
}

/// A key as X (XTEST) or a Wayland virtual keyboard types it.
enum Stroke {
    X11(keyboard::Stroke),
    Wayland(wayland::Stroke),
}

/// The terminal's window: an X window, or its region of a Wayland output.
#[derive(Clone)]
enum Window {
    X11(x11rb::protocol::xproto::Window),
    Wayland(Placed),
}

/// Where the terminal runs, and how wrap types into it and watches it: an X display (its own
/// Xvfb or `--display`), or a sway (its own headless one or `--wayland-display`). Each holds
/// what it started and ends it when dropped.
enum Desk {
    X11 {
        server: Option<Xvfb>,
        display: String,
        // Boxed: an X connection's buffers make this variant a kilobyte.
        keyboard: Box<Keyboard>,
        /// The window's watcher, until its thread takes it.
        watcher: Option<X11Watcher>,
    },
    Wayland {
        client: wayland::Client,
        keyboard: Option<wayland::Keyboard>,
        compositor: Compositor,
        /// The terminal's output, once its window is placed.
        output: Option<wayland::Output>,
    },
}

impl Desk {
    /// `--display`, `--wayland` (or a Wayland-only terminal), `--wayland-display`, or
    /// flushlab's own Xvfb.
    fn open(args: &super::args::WrapArgs) -> anyhow::Result<Desk> {
        if let Some(session) = args.wayland_session() {
            let compositor = Compositor::open(&session)?;
            let client = wayland::Client::connect(&compositor.socket)?;
            return Ok(Desk::Wayland {
                client,
                keyboard: None,
                compositor,
                output: None,
            });
        }
        let (server, display) = x_server(args.display.as_deref())?;
        let keyboard = Box::new(Keyboard::connect(&display)?);
        let watcher = Some(X11Watcher::connect(&display)?);
        Ok(Desk::X11 {
            server,
            display,
            keyboard,
            watcher,
        })
    }

    /// The keys of `keys` as strokes, after the script's first pause; or the one line that
    /// says which key cannot be typed.
    fn strokes(&mut self, keys: &Keys) -> anyhow::Result<(Duration, Vec<Typed>)> {
        let (before, timeline) = keys.script.timeline();
        let strokes: Vec<Result<Stroke, String>> = match self {
            Desk::X11 { keyboard, .. } => timeline
                .iter()
                .map(|(key, _)| keyboard.stroke(key).map(Stroke::X11))
                .collect(),
            Desk::Wayland {
                client, keyboard, ..
            } => {
                let keys: Vec<&crate::keyscript::Key> = timeline.iter().map(|(k, _)| *k).collect();
                let (typing, strokes) = client.keyboard(&keys)?;
                *keyboard = Some(typing);
                strokes
                    .into_iter()
                    .map(|s| s.map(Stroke::Wayland))
                    .collect()
            }
        };
        let mut out = Vec::with_capacity(timeline.len());
        for ((key, pause), stroke) in timeline.into_iter().zip(strokes) {
            out.push(Typed {
                name: key.to_string(),
                stroke: stroke.map_err(|why| anyhow::anyhow!("wrap --terminal: {why}"))?,
                pause,
            });
        }
        Ok((before, out))
    }

    fn type_stroke(&self, stroke: &Stroke) -> anyhow::Result<()> {
        match (self, stroke) {
            (Desk::X11 { keyboard, .. }, Stroke::X11(stroke)) => keyboard.type_stroke(stroke),
            (
                Desk::Wayland {
                    keyboard: Some(keyboard),
                    ..
                },
                Stroke::Wayland(stroke),
            ) => keyboard.type_stroke(*stroke),
            _ => bail!("a key prepared for another desktop"),
        }
    }

    /// `terminal` started here running `command`: the terminal (its process group), its
    /// window once mapped, and CMD once started.
    fn start_terminal(
        &mut self,
        terminal: Terminal,
        size: (u16, u16),
        command: &[OsString],
    ) -> anyhow::Result<(display::Group, Window, Cmd)> {
        let mut holder = match self {
            Desk::X11 {
                server, display, ..
            } => {
                let screen = Screen::X11 {
                    display,
                    own: server.is_some(),
                };
                display::launch(screen, terminal, size, command, &[])?
            }
            Desk::Wayland { compositor, .. } => {
                let names = compositor.environment();
                let app_id = format!(
                    "flushlab-{}-{}",
                    std::process::id(),
                    crate::sys::monotonic_ns()
                );
                compositor.float_when_mapped(&app_id)?;
                let screen = Screen::Wayland {
                    names: &names,
                    own: compositor.own(),
                    app_id: &app_id,
                };
                display::launch(screen, terminal, size, command, &[])?
            }
        };
        let pid = holder.pid();
        let window = wait_for(
            WINDOW_AT_MOST,
            || holder.exited() || self.gone(),
            || self.window(pid),
        )?
        .with_context(|| match holder.exited() {
            true => format!(
                "{} exited before it showed a window: {}",
                terminal.name(),
                holder.last_words().unwrap_or_else(|| {
                    "it said nothing (CMD ended at once, or the terminal cannot run here)".into()
                })
            ),
            false => format!(
                "{} showed no window within {} s",
                terminal.name(),
                WINDOW_AT_MOST.as_secs()
            ),
        })?;
        let window = self.settle_window(pid, window)?;
        let cmd = wait_for(
            Duration::from_secs(10),
            || holder.exited(),
            || Ok(crate::sys::process::children(pid).first().copied()),
        )?
        .with_context(|| format!("{} started no program", terminal.name()))?;
        Ok((holder, window, Cmd(cmd)))
    }

    /// On Wayland, the window's place once sway has settled it (floating, drawn at its size,
    /// two looks 50 ms apart agree), on an output of scale 1; on X11, as it is.
    fn settle_window(&mut self, pid: i32, window: Window) -> anyhow::Result<Window> {
        let Desk::Wayland {
            compositor, output, ..
        } = self
        else {
            return Ok(window);
        };
        let mut last = None;
        let placed = wait_for(
            WINDOW_AT_MOST,
            || compositor.gone(),
            || {
                let now = compositor.window_of(pid)?.filter(|p| p.floating && p.drawn);
                let same = now.is_some() && now == last;
                last = now;
                Ok(same.then(|| last.clone()).flatten())
            },
        )?
        .context("the terminal's window did not settle in its place")?;
        let on = compositor
            .outputs()?
            .into_iter()
            .find(|o| o.name == placed.output)
            .with_context(|| {
                format!(
                    "sway lists no output {} for the terminal's window",
                    crate::units::printable(&placed.output)
                )
            })?;
        if (on.scale - 1.0).abs() > f64::EPSILON {
            bail!(
                "wrap --terminal: output {0} is at scale {1}: wrap reads the terminal's pixels at scale 1 (for the run: swaymsg output {0} scale 1)",
                crate::units::printable(&on.name),
                on.scale
            );
        }
        *output = Some(on);
        Ok(Window::Wayland(placed))
    }

    fn desktop(&self) -> anyhow::Result<Desktop> {
        Ok(match self {
            Desk::X11 {
                server: Some(_), ..
            } => Desktop::OwnXvfb,
            Desk::X11 { display, .. } => Desktop::X11(display.clone()),
            Desk::Wayland {
                compositor, output, ..
            } => {
                let output = output
                    .as_ref()
                    .context("the terminal's output is not known")?;
                Desktop::Sway {
                    display: (!compositor.own())
                        .then(|| compositor.socket.to_string_lossy().into_owned()),
                    output: output.name.clone(),
                    refresh_hz: output.refresh_hz,
                }
            }
        })
    }

    /// Whether the desktop itself is gone (the compositor exited).
    fn gone(&self) -> bool {
        match self {
            Desk::X11 { .. } => false,
            Desk::Wayland { compositor, .. } => compositor.gone(),
        }
    }

    /// The terminal's window, once mapped: on flushlab's own X display the only window, on
    /// another the one its process names as its own; on Wayland, its region of the output.
    fn window(&self, pid: i32) -> anyhow::Result<Option<Window>> {
        Ok(match self {
            Desk::X11 {
                server, watcher, ..
            } => {
                let watcher = watcher
                    .as_ref()
                    .context("the window's watcher is at work")?;
                match server.is_some() {
                    true => watcher.terminal_window()?,
                    false => watcher.window_of(&[pid.unsigned_abs()])?,
                }
                .map(Window::X11)
            }
            Desk::Wayland { compositor, .. } => compositor.window_of(pid)?.map(Window::Wayland),
        })
    }

    /// The keys go to `window`; returns once the desktop has handled that.
    fn focus(&self, window: &Window) -> anyhow::Result<()> {
        match (self, window) {
            (Desk::X11 { keyboard, .. }, Window::X11(window)) => {
                keyboard.focus(*window)?;
                keyboard.sync()
            }
            // Focused when it was placed (`settle_window`).
            (Desk::Wayland { client, .. }, _) => client.sync(),
            _ => bail!("a window of another desktop"),
        }
    }

    /// The window's changes timed on a thread of their own until `shared.done`.
    fn watch(
        &mut self,
        window: &Window,
        shared: &Arc<Watching>,
    ) -> anyhow::Result<std::thread::JoinHandle<anyhow::Result<f64>>> {
        let shared = Arc::clone(shared);
        let done = {
            let shared = Arc::clone(&shared);
            move || shared.done.load(Ordering::Relaxed)
        };
        Ok(match (self, window) {
            (Desk::X11 { watcher, .. }, &Window::X11(window)) => {
                let watcher = watcher.take().context("the window is watched already")?;
                crate::sys::spawn_thread("wrap-window", move || {
                    watcher.watch_every_change(window)?.changes(
                        done,
                        &shared.recording,
                        &shared.strips,
                    )
                })?
            }
            (Desk::Wayland { client, .. }, Window::Wayland(placed)) => {
                let capture = client.capture(placed)?;
                crate::sys::spawn_thread("wrap-window", move || {
                    capture.changes(done, &shared.recording, &shared.strips)
                })?
            }
            _ => bail!("a window of another desktop"),
        })
    }

    /// Where the frame markers are, if the window shows the calibration pattern now.
    fn calibrate(&self, window: &Window) -> anyhow::Result<Option<Strips>> {
        match (self, window) {
            (Desk::X11 { display, .. }, Window::X11(window)) => {
                X11Watcher::connect(display)?.calibrate(*window)
            }
            (Desk::Wayland { client, .. }, Window::Wayland(placed)) => {
                let Some((data, width, height)) = client.capture(placed)?.picture()? else {
                    return Ok(None);
                };
                Ok(crate::painting::window_watch::find_strips(
                    &data, width, height,
                ))
            }
            _ => bail!("a window of another desktop"),
        }
    }
}

/// The command the terminal runs: CMD through `env`, so that the terminal itself runs without
/// the observer and with a known environment; CMD with wrap's variables (as a shell in the
/// terminal would pass them on) but for those the terminal sets, then the observer's.
fn through_env(
    inside: &Observation,
    program: &Path,
    args: &[OsString],
) -> anyhow::Result<Vec<OsString>> {
    if program.as_os_str().to_string_lossy().contains('=') {
        // `env` would take it for a variable.
        bail!(
            "wrap --terminal: '{}': a program whose path holds '=' cannot be started through env",
            crate::units::printable(&program.to_string_lossy())
        );
    }
    let env = crate::files::find_program("env".as_ref()).context("env is not installed")?;
    let mut command: Vec<OsString> = vec![env.into(), "--".into()];
    let passed = std::env::vars_os().filter(|(name, _)| !terminal_sets(name));
    for (name, value) in passed.chain(inside.environment()) {
        let mut pair = name;
        pair.push("=");
        pair.push(value);
        command.push(pair);
    }
    let (program, args) = inside.command(program, args)?;
    command.push(program.into());
    command.extend(args);
    Ok(command)
}

/// Types each key when it is due (the first after `before`, each next after its pause), until
/// they are done or `over`; each key recorded with its send time, taken just before its events
/// go.
fn type_keys(
    desk: &Desk,
    (before, strokes): (Duration, &[Typed]),
    recording: &Recording,
    mut over: impl FnMut() -> bool,
) -> anyhow::Result<()> {
    let mut due = Instant::now() + before;
    for typed in strokes {
        while Instant::now() < due && !over() {
            std::thread::sleep((due - Instant::now()).min(Duration::from_millis(10)));
        }
        if over() {
            break;
        }
        let key = SentKey::now(typed.name.clone());
        desk.type_stroke(&typed.stroke)?;
        due = key.at + typed.pause;
        recording.key_sent(key);
    }
    Ok(())
}

/// What the window's watcher shares with the run: the run's record it appends the changes to,
/// where the frame markers are once the calibration pattern was seen, and when to stop.
#[derive(Default)]
struct Watching {
    recording: Recording,
    strips: std::sync::OnceLock<Strips>,
    done: AtomicBool,
}

/// `--display`: the person's own X server, where they watch it; else one of flushlab's, held
/// until the run is over. The display's name either way.
fn x_server(display: Option<&str>) -> anyhow::Result<(Option<Xvfb>, String)> {
    Ok(match display {
        Some(display) => (None, display.to_owned()),
        None => {
            let server = Xvfb::start()?;
            let display = server.display.clone();
            (Some(server), display)
        }
    })
}

/// The observer for CMD in a terminal (`--observer none` is refused by [`check`]): on the pty
/// the terminal makes, which CMD names itself.
fn start_inside(
    args: &super::args::WrapArgs,
    program: &Path,
    fix: Option<Fix>,
) -> std::io::Result<Observation> {
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
    let mut desk = Desk::open(args)?;
    let (before, strokes) = desk.strokes(keys)?;
    let inside = start_inside(args, program, fix)?;
    let command = through_env(&inside, program, &args.command[1..])?;
    let started = Instant::now();
    let (window_holder, window, cmd) = desk.start_terminal(terminal, args.size, &command)?;
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
                .then(|| super::inside::timeline(&sightings)),
            end_ns,
        ),
        watcher_cpu_share,
        inside: report,
        started_after: ready_at.map(|at| at.saturating_duration_since(started)),
        unsettled,
    })
}

/// Whether a variable is the terminal's to set (its type, its window, its size), not wrap's
/// to pass on.
fn terminal_sets(name: &std::ffi::OsStr) -> bool {
    let name = name.to_string_lossy();
    matches!(
        name.as_ref(),
        "TERM" | "COLORTERM" | "DISPLAY" | "WINDOWID" | "COLUMNS" | "LINES" | "TERMCAP"
    ) || [
        "XTERM_",
        "KITTY_",
        "ALACRITTY_",
        "TERM_PROGRAM",
        "VTE_",
        "MLTERM",
    ]
    .iter()
    .any(|prefix| name.starts_with(prefix))
        || name.contains('=')
}

/// Whether `pid` (the terminal's child, not wrap's) has exited: no more, or a zombie.
fn gone(pid: i32) -> bool {
    crate::sys::process::thread_states(pid, false)
        .is_none_or(|threads| threads.iter().all(|t| t.state == b'Z'))
}

/// Whether `pid`'s threads are all asleep.
fn asleep(pid: i32) -> bool {
    crate::sys::process::thread_states(pid, false)
        .is_some_and(|threads| threads.iter().all(|t| t.state == b'S'))
}

/// Waits until CMD is ready for keys — `after` has come, or its threads have been asleep in two
/// looks and its window has not changed for [`READY_QUIET`] since it first changed — or until
/// `over`; when it was ready.
fn wait_until_ready(
    pid: i32,
    after: Option<Instant>,
    recording: &Recording,
    mut over: impl FnMut() -> bool,
) -> Option<Instant> {
    let mut asleep_looks = 0;
    while !over() {
        let now = Instant::now();
        asleep_looks = if asleep(pid) { asleep_looks + 1 } else { 0 };
        let changed = recording.last_window_change();
        let quiet = changed > 0
            && crate::sys::monotonic_ns().saturating_sub(changed) >= READY_QUIET.as_nanos() as u64;
        let ready = match after {
            Some(after) => now >= after,
            None => asleep_looks >= 2 && quiet,
        };
        if ready {
            return Some(now);
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    None
}

/// After the last key: waits until CMD is asleep and its window has been unchanged for
/// [`SETTLE`] (true), or [`SETTLE_AT_MOST`] has passed (false), or `over` (true).
fn settle(pid: i32, recording: &Recording, mut over: impl FnMut() -> bool) -> bool {
    let from = Instant::now();
    let from_ns = crate::sys::monotonic_ns();
    while !over() {
        let changed = recording.last_window_change().max(from_ns);
        let quiet = crate::sys::monotonic_ns().saturating_sub(changed) >= SETTLE.as_nanos() as u64;
        if quiet && asleep(pid) {
            return true;
        }
        if from.elapsed() >= SETTLE_AT_MOST {
            return false;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    true
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
    if args.observer == super::args::ObserverArg::Kernel {
        return Err(format!(
            "wrap --terminal {name} --observer kernel: not together yet (the terminal starts CMD, \
             not wrap: --observer auto looks with the preload or the tracer)"
        ));
    }
    if args.no_observer || args.observer == super::args::ObserverArg::None {
        return Err(format!(
            "wrap --terminal {name} --no-observer: a key's frame is seen from inside CMD only (wrap does not read the terminal's pty)"
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
        wayland::find_session(name)?;
    }
    if args.reader != crate::results::conditions::ReaderModel::Drain {
        return Err(format!(
            "wrap --terminal {name} --reader {}: the terminal reads the pty, not a reader model",
            args.reader
        ));
    }
    Ok(())
}
