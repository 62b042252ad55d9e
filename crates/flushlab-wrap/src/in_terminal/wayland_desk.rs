//! The Wayland side of a [`Desk`]: flushlab's own headless sway or `--wayland-display`, keys
//! through the virtual-keyboard protocol, the window's region of its output copied at each
//! commit (screencopy).

use std::ffi::OsString;
use std::sync::Arc;
use std::sync::atomic::Ordering;

use anyhow::{Context, bail};

use super::desk::{CameraThread, Desk, Desktop, WINDOW_AT_MOST, WatchThread, Watching};
use flushlab_core::keyscript::Key;
use flushlab_terminals::display::{self, Screen};
use flushlab_terminals::emulators::Terminal;
use flushlab_terminals::strips::Strips;
use flushlab_terminals::terminal_option::TerminalOption;
use flushlab_terminals::wayland::{Client, Compositor, Keyboard, Output, Placed, Session, Stroke};
use flushlab_terminals::window_watch::{record_changes, wait_for};

pub(super) struct WaylandDesk {
    client: Client,
    keyboard: Option<Keyboard>,
    compositor: Compositor,
    /// The terminal's output, once its window is placed.
    output: Option<Output>,
    /// `--camera`: each change's picture kept, as well as its time.
    camera: bool,
}

impl WaylandDesk {
    /// `session`'s compositor: flushlab's own started, or the running one found; `camera`: the
    /// window's pictures kept for its flashes and tears.
    pub(super) fn open(session: &Session, camera: bool) -> anyhow::Result<WaylandDesk> {
        let compositor = Compositor::open(session)?;
        Ok(WaylandDesk {
            client: Client::connect(&compositor.socket)?,
            keyboard: None,
            compositor,
            output: None,
            camera,
        })
    }
}

impl Desk for WaylandDesk {
    type Stroke = Stroke;
    /// Its region of an output.
    type Window = Placed;

    fn strokes(&mut self, keys: &[&Key]) -> anyhow::Result<Vec<Result<Stroke, String>>> {
        let (typing, strokes) = self.client.keyboard(keys)?;
        self.keyboard = Some(typing);
        Ok(strokes)
    }

    fn type_stroke(&self, stroke: &Stroke) -> anyhow::Result<()> {
        self.keyboard
            .as_ref()
            .context("no keyboard: the keys were not prepared")?
            .type_stroke(*stroke)
    }

    /// Floated by a rule naming its app id before it maps.
    fn launch(
        &mut self,
        terminal: (Terminal, &[TerminalOption]),
        size: (u16, u16),
        command: &[OsString],
    ) -> anyhow::Result<display::Group> {
        let names = self.compositor.environment();
        let app_id = format!(
            "flushlab-{}-{}",
            std::process::id(),
            flushlab_core::sys::monotonic_ns()
        );
        self.compositor.float_when_mapped(&app_id)?;
        let screen = Screen::Wayland {
            names: &names,
            own: self.compositor.own(),
            app_id: &app_id,
        };
        display::launch(screen, terminal, size, command, &[])
    }

    fn window(&self, pid: i32) -> anyhow::Result<Option<Placed>> {
        self.compositor.window_of(pid)
    }

    /// Once sway has settled it (floating, drawn at its size, two looks 50 ms apart agree), on
    /// an output of scale 1.
    fn settle_window(&mut self, pid: i32, _window: Placed) -> anyhow::Result<Placed> {
        let compositor = &self.compositor;
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
                    flushlab_core::units::printable(&placed.output)
                )
            })?;
        if (on.scale - 1.0).abs() > f64::EPSILON {
            bail!(
                "wrap --terminal: output {0} is at scale {1}: wrap reads the terminal's pixels at scale 1 (for the run: swaymsg output {0} scale 1)",
                flushlab_core::units::printable(&on.name),
                on.scale
            );
        }
        self.output = Some(on);
        Ok(placed)
    }

    fn gone(&self) -> bool {
        self.compositor.gone()
    }

    /// Focused when it was placed (`settle_window`).
    fn focus(&self, _window: &Placed) -> anyhow::Result<()> {
        self.client.sync()
    }

    fn watch(&mut self, window: &Placed, shared: &Arc<Watching>) -> anyhow::Result<WatchThread> {
        let capture = self.client.capture(window)?;
        let shared = Arc::clone(shared);
        Ok(flushlab_core::sys::spawn_thread(
            "wrap-window",
            move || {
                let done = || shared.done.load(Ordering::Relaxed);
                record_changes(
                    &mut capture.copies(),
                    done,
                    &shared.recording,
                    &shared.strips,
                )
            },
        )?)
    }

    /// A second copier of the window's region, beside the watcher's, on a connection of its
    /// own (two threads reading one connection's socket stall each other's copies): its
    /// pictures are the frames the compositor hands at each change, so a state shorter than
    /// the output's refresh is never on them, as it is never on the screen.
    fn camera(
        &mut self,
        window: &Placed,
        shared: &Arc<Watching>,
    ) -> anyhow::Result<Option<CameraThread>> {
        if !self.camera {
            return Ok(None);
        }
        let copies = Client::connect(&self.compositor.socket)?
            .capture(window)?
            .copies();
        let shared = Arc::clone(shared);
        Ok(Some(flushlab_core::sys::spawn_thread(
            "wrap-camera",
            move || copies.film(|| shared.done.load(Ordering::Relaxed)),
        )?))
    }

    fn calibrate(&self, window: &Placed) -> anyhow::Result<Option<Strips>> {
        let Some((data, width, height)) = self.client.capture(window)?.picture()? else {
            return Ok(None);
        };
        Ok(flushlab_terminals::strips::find_strips(
            &data, width, height,
        ))
    }

    fn desktop(&self) -> anyhow::Result<Desktop> {
        let output = self
            .output
            .as_ref()
            .context("the terminal's output is not known")?;
        Ok(Desktop::Sway {
            display: (!self.compositor.own())
                .then(|| self.compositor.socket.to_string_lossy().into_owned()),
            output: output.name.clone(),
            refresh_hz: output.refresh_hz,
        })
    }
}
