//! Where the terminal runs, and how wrap types into it and watches it: an X display (its own
//! Xvfb or `--display`: keys through XTEST, the window through DAMAGE) or a sway (its own
//! headless one or `--wayland-display`: keys through a virtual keyboard, the window's region
//! through screencopy). Each holds what it started and ends it when dropped.

use std::ffi::OsString;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use anyhow::{Context, bail};

use super::super::typing::Keys;
use super::cmd::Cmd;
use crate::detect::recording::Recording;
use crate::painting::display::{self, Screen, Terminal, Xvfb};
use crate::painting::keyboard::{self, Keyboard};
use crate::painting::strips::Strips;
use crate::painting::wayland::{self, Compositor, Placed};
use crate::painting::window_watch::{X11Watcher, wait_for};

/// How long a terminal may take to map its window (kitty's first start on software GL: ~4 s).
pub(super) const WINDOW_AT_MOST: Duration = Duration::from_secs(20);

/// Where a run's terminal ran, as its report says it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Desktop {
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
    pub fn name(&self) -> &str {
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

/// One key of the script as the desktop's keyboard types it, and the pause after it.
pub(super) struct Typed {
    pub(super) name: String,
    pub(super) stroke: Stroke,
    pub(super) pause: Duration,
}

/// A key as X (XTEST) or a Wayland virtual keyboard types it.
pub(super) enum Stroke {
    X11(keyboard::Stroke),
    Wayland(wayland::Stroke),
}

/// The terminal's window: an X window, or its region of a Wayland output.
#[derive(Clone)]
pub(super) enum Window {
    X11(x11rb::protocol::xproto::Window),
    Wayland(Placed),
}

/// Where the terminal runs, and how wrap types into it and watches it: an X display (its own
/// Xvfb or `--display`), or a sway (its own headless one or `--wayland-display`). Each holds
/// what it started and ends it when dropped.
pub(super) enum Desk {
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
    pub(super) fn open(args: &super::super::args::WrapArgs) -> anyhow::Result<Desk> {
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
    pub(super) fn strokes(&mut self, keys: &Keys) -> anyhow::Result<(Duration, Vec<Typed>)> {
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

    pub(super) fn type_stroke(&self, stroke: &Stroke) -> anyhow::Result<()> {
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
    pub(super) fn start_terminal(
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
    pub(super) fn settle_window(&mut self, pid: i32, window: Window) -> anyhow::Result<Window> {
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

    pub(super) fn desktop(&self) -> anyhow::Result<Desktop> {
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
    pub(super) fn gone(&self) -> bool {
        match self {
            Desk::X11 { .. } => false,
            Desk::Wayland { compositor, .. } => compositor.gone(),
        }
    }

    /// The terminal's window, once mapped: on flushlab's own X display the only window, on
    /// another the one its process names as its own; on Wayland, its region of the output.
    pub(super) fn window(&self, pid: i32) -> anyhow::Result<Option<Window>> {
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
    pub(super) fn focus(&self, window: &Window) -> anyhow::Result<()> {
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
    pub(super) fn watch(
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
    pub(super) fn calibrate(&self, window: &Window) -> anyhow::Result<Option<Strips>> {
        match (self, window) {
            (Desk::X11 { display, .. }, Window::X11(window)) => {
                X11Watcher::connect(display)?.calibrate(*window)
            }
            (Desk::Wayland { client, .. }, Window::Wayland(placed)) => {
                let Some((data, width, height)) = client.capture(placed)?.picture()? else {
                    return Ok(None);
                };
                Ok(crate::painting::strips::find_strips(&data, width, height))
            }
            _ => bail!("a window of another desktop"),
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

/// `--display`: the person's own X server, where they watch it; else one of flushlab's, held
/// until the run is over. The display's name either way.
pub(super) fn x_server(display: Option<&str>) -> anyhow::Result<(Option<Xvfb>, String)> {
    Ok(match display {
        Some(display) => (None, display.to_owned()),
        None => {
            let server = Xvfb::start()?;
            let display = server.display.clone();
            (Some(server), display)
        }
    })
}
