//! Where the terminal runs, and how wrap types into it and watches it: a [`Desk`], with an X11
//! side (its own Xvfb or `--display`: keys through XTEST, the window through DAMAGE;
//! `x11_desk.rs`) and a Wayland side (its own headless sway or `--wayland-display`: keys through
//! a virtual keyboard, the window's region through screencopy; `wayland_desk.rs`). Each holds
//! what it started and ends it when dropped; what both do alike is written here once.

use std::ffi::OsString;
use std::sync::Arc;
use std::sync::atomic::AtomicBool;
use std::time::Duration;

use anyhow::Context;

use super::cmd::Cmd;
use crate::plan::keys::Keys;
use flushlab_core::detect::recording::Recording;
use flushlab_core::keyscript::Key;
use flushlab_terminals::display;
use flushlab_terminals::emulators::Terminal;
use flushlab_terminals::strips::Strips;
use flushlab_terminals::terminal_option::TerminalOption;
use flushlab_terminals::window_watch::wait_for;

/// How long a terminal may take to map its window (kitty's first start on software GL: ~4 s).
pub(super) const WINDOW_AT_MOST: Duration = Duration::from_secs(20);

/// A desktop a terminal runs on: how its keys are typed, how its window is found and watched.
pub(super) trait Desk {
    /// A key as this desktop's keyboard types it.
    type Stroke;
    /// The terminal's window as this desktop knows it.
    type Window;

    /// Each key as a stroke, or the one line that says why it cannot be typed.
    fn strokes(&mut self, keys: &[&Key]) -> anyhow::Result<Vec<Result<Self::Stroke, String>>>;

    fn type_stroke(&self, stroke: &Self::Stroke) -> anyhow::Result<()>;

    /// `terminal` with its options started here running `command`, held in its process group.
    fn launch(
        &mut self,
        terminal: (Terminal, &[TerminalOption]),
        size: (u16, u16),
        command: &[OsString],
    ) -> anyhow::Result<display::Group>;

    /// The terminal's window (its process is `pid`), once mapped.
    fn window(&self, pid: i32) -> anyhow::Result<Option<Self::Window>>;

    /// The window once the desktop has settled it in its place.
    fn settle_window(&mut self, _pid: i32, window: Self::Window) -> anyhow::Result<Self::Window> {
        Ok(window)
    }

    /// Whether the desktop itself is gone (the compositor exited).
    fn gone(&self) -> bool {
        false
    }

    /// The keys go to `window`; returns once the desktop has handled that.
    fn focus(&self, window: &Self::Window) -> anyhow::Result<()>;

    /// The window's changes recorded on a thread of their own
    /// ([`record_changes`](flushlab_terminals::window_watch::record_changes)) until
    /// `shared.done`; the thread returns the share of a core it took.
    fn watch(
        &mut self,
        window: &Self::Window,
        shared: &Arc<Watching>,
    ) -> anyhow::Result<WatchThread>;

    /// The camera on `window` on a thread of its own until `shared.done`, where this desktop
    /// has one (flushlab's own Xvfb).
    fn camera(
        &mut self,
        _window: &Self::Window,
        _shared: &Arc<Watching>,
    ) -> anyhow::Result<Option<CameraThread>> {
        Ok(None)
    }

    /// CMD has ended; the terminal has not yet: whatever the desktop reads of the window only
    /// at the end is read now (a browser's trace).
    fn closing(&mut self, _window: &Self::Window) -> anyhow::Result<()> {
        Ok(())
    }

    /// What a browser terminal told of the run (none elsewhere).
    fn browser_run(&self) -> Option<flushlab_terminals::browser::protocol::BrowserRun> {
        None
    }

    /// Where the frame markers are, if the window shows the calibration pattern now.
    fn calibrate(&self, window: &Self::Window) -> anyhow::Result<Option<Strips>>;

    /// Where it ran, as the report says it.
    fn desktop(&self) -> anyhow::Result<Desktop>;
}

/// The window's watcher thread: it returns the share of a core it took.
pub(super) type WatchThread = std::thread::JoinHandle<anyhow::Result<f64>>;

/// The camera's thread: it returns its film.
pub(super) type CameraThread =
    std::thread::JoinHandle<anyhow::Result<flushlab_terminals::camera::Film>>;

/// One key of the script as the desktop's keyboard types it, and the pause after it.
pub(super) struct Typed<S> {
    pub(super) name: String,
    pub(super) stroke: S,
    pub(super) pause: Duration,
}

/// The keys of `keys` as `desk` types them, after the script's first pause; or the one line
/// that says which key cannot be typed.
pub(super) fn strokes<D: Desk>(
    desk: &mut D,
    keys: &Keys,
) -> anyhow::Result<(Duration, Vec<Typed<D::Stroke>>)> {
    let (before, timeline) = keys.script.timeline();
    let each: Vec<&Key> = timeline.iter().map(|(k, _)| *k).collect();
    let strokes = desk.strokes(&each)?;
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

/// `terminal` started on `desk` running `command`: the terminal (its process group), its window
/// once mapped and settled, and CMD once started.
pub(super) fn start_terminal<D: Desk>(
    desk: &mut D,
    (terminal, options): (Terminal, &[TerminalOption]),
    size: (u16, u16),
    command: &[OsString],
) -> anyhow::Result<(display::Group, D::Window, Cmd)> {
    let mut holder = desk.launch((terminal, options), size, command)?;
    let pid = holder.pid();
    let window = wait_for(
        WINDOW_AT_MOST,
        || holder.exited() || desk.gone(),
        || desk.window(pid),
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
    let window = desk.settle_window(pid, window)?;
    let cmd = wait_for(
        Duration::from_secs(10),
        || holder.exited(),
        || Ok(flushlab_core::sys::process::children(pid).first().copied()),
    )?
    .with_context(|| format!("{} started no program", terminal.name()))?;
    Ok((holder, window, Cmd(cmd)))
}

/// Where a run's terminal ran, as its report says it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Desktop {
    /// flushlab's own Xvfb.
    OwnXvfb,
    /// `--display`: an X display of the person's.
    X11(String),
    /// flushlab's own headless Chromium, xterm.js in its page: its version, the renderer asked
    /// for, and the one that drew (`webgl`, `dom`, or `unknown`).
    Chromium {
        browser: String,
        renderer: flushlab_terminals::browser::Renderer,
        drew: &'static str,
        sandboxed: bool,
    },
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
    pub fn name(&self) -> &str {
        match self {
            Desktop::OwnXvfb => "own-xvfb",
            Desktop::X11(display) => display,
            Desktop::Sway { display: None, .. } => "own-sway",
            Desktop::Chromium { .. } => "own-chromium",
            Desktop::Sway {
                display: Some(display),
                ..
            } => display,
        }
    }

    /// The Wayland output's refresh rate, Hz; `None` on X11.
    pub fn refresh_hz(&self) -> Option<u32> {
        match self {
            Desktop::Sway { refresh_hz, .. } => Some(*refresh_hz),
            _ => None,
        }
    }

    /// As the summary says it: where, and how the keys were typed.
    pub fn said(&self) -> String {
        match self {
            Desktop::OwnXvfb => "flushlab's Xvfb, keys typed as X key events".to_owned(),
            Desktop::X11(display) => format!(
                "on {}, keys typed as X key events",
                flushlab_core::units::printable(display)
            ),
            Desktop::Chromium {
                browser,
                renderer,
                drew,
                sandboxed,
            } => format!(
                "{}{}, xterm.js {} with its {} renderer ({}), keys as the browser's key events, pixels from its trace (DrawFrame), software rendering",
                flushlab_core::units::printable(browser),
                if *sandboxed {
                    ""
                } else {
                    " without its sandbox (as root)"
                },
                flushlab_terminals::browser::package::version(),
                renderer.name(),
                match *drew == renderer.name() {
                    true => format!("{drew} drew"),
                    false => format!("but {drew} drew"),
                }
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
                flushlab_core::units::printable(display),
                flushlab_core::units::printable(output)
            ),
        }
    }
}

/// What the window's watcher shares with the run: the run's record it appends the changes to,
/// where the frame markers are once the calibration pattern was seen, and when to stop.
#[derive(Default)]
pub(super) struct Watching {
    pub(super) recording: Recording,
    pub(super) strips: std::sync::OnceLock<Strips>,
    pub(super) done: AtomicBool,
}
