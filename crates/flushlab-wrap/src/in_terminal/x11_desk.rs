//! The X11 side of a [`Desk`]: flushlab's own Xvfb or `--display`, keys as X key events through
//! XTEST (encoded by the terminal), the window watched through DAMAGE.

use std::ffi::OsString;
use std::sync::Arc;
use std::sync::atomic::Ordering;

use anyhow::Context;
use x11rb::protocol::xproto::Window;

use super::desk::{CameraThread, Desk, Desktop, WatchThread, Watching};
use flushlab_core::keyscript::Key;
use flushlab_terminals::camera::Camera;
use flushlab_terminals::display::{self, Screen, Xvfb};
use flushlab_terminals::emulators::Terminal;
use flushlab_terminals::keyboard::{Keyboard, Stroke};
use flushlab_terminals::strips::Strips;
use flushlab_terminals::terminal_option::TerminalOption;
use flushlab_terminals::window_watch::{X11Watcher, record_changes};

pub(super) struct X11Desk {
    /// flushlab's own Xvfb, held until the run is over; `None` on `--display`.
    server: Option<Xvfb>,
    /// Where that Xvfb keeps its screen for the camera (after `server`: the server ends first).
    framebuffer: Option<flushlab_core::files::Scratch>,
    display: String,
    keyboard: Keyboard,
    /// The window's watcher, until its thread takes it.
    watcher: Option<X11Watcher>,
}

impl X11Desk {
    /// `--display`: the person's own X server, where they watch it; else one of flushlab's.
    /// `camera`: flushlab's own Xvfb keeps its screen in a file the camera reads.
    pub(super) fn open(display: Option<&str>, camera: bool) -> anyhow::Result<X11Desk> {
        let framebuffer = match (display, camera) {
            (None, true) => {
                // Xvfb first: where it is missing, that is what the run says, not the scratch.
                display::installed("Xvfb", "xvfb")?;
                Some(flushlab_core::files::Scratch::swept(
                    "flushlab-framebuffer",
                )?)
            }
            _ => None,
        };
        let (server, display) = match display {
            Some(display) => (None, display.to_owned()),
            None => {
                let server = Xvfb::start_in(framebuffer.as_ref().map(|f| f.path()))?;
                let display = server.display.clone();
                (Some(server), display)
            }
        };
        Ok(X11Desk {
            framebuffer,
            keyboard: Keyboard::connect(&display)?,
            watcher: Some(X11Watcher::connect(&display)?),
            server,
            display,
        })
    }
}

impl Desk for X11Desk {
    type Stroke = Stroke;
    type Window = Window;

    fn strokes(&mut self, keys: &[&Key]) -> anyhow::Result<Vec<Result<Stroke, String>>> {
        Ok(keys.iter().map(|key| self.keyboard.stroke(key)).collect())
    }

    fn type_stroke(&self, stroke: &Stroke) -> anyhow::Result<()> {
        self.keyboard.type_stroke(stroke)
    }

    fn launch(
        &mut self,
        terminal: (Terminal, &[TerminalOption]),
        size: (u16, u16),
        command: &[OsString],
    ) -> anyhow::Result<display::Group> {
        let screen = Screen::X11 {
            display: &self.display,
            own: self.server.is_some(),
        };
        display::launch(screen, terminal, size, command, &[])
    }

    /// On flushlab's own X display the only window, on another the one its process names as
    /// its own.
    fn window(&self, pid: i32) -> anyhow::Result<Option<Window>> {
        let watcher = self
            .watcher
            .as_ref()
            .context("the window's watcher is at work")?;
        match self.server.is_some() {
            true => watcher.terminal_window(),
            false => watcher.window_of(&[pid.unsigned_abs()]),
        }
    }

    fn focus(&self, window: &Window) -> anyhow::Result<()> {
        self.keyboard.focus(*window)?;
        self.keyboard.sync()
    }

    fn watch(&mut self, window: &Window, shared: &Arc<Watching>) -> anyhow::Result<WatchThread> {
        let (window, shared) = (*window, Arc::clone(shared));
        let watcher = self
            .watcher
            .take()
            .context("the window is watched already")?;
        Ok(flushlab_core::sys::spawn_thread(
            "wrap-window",
            move || {
                let done = || shared.done.load(Ordering::Relaxed);
                let mut changes = watcher.watch_every_change(window)?;
                record_changes(&mut changes, done, &shared.recording, &shared.strips)
            },
        )?)
    }

    fn camera(
        &mut self,
        window: &Window,
        shared: &Arc<Watching>,
    ) -> anyhow::Result<Option<CameraThread>> {
        let Some(framebuffer) = &self.framebuffer else {
            return Ok(None);
        };
        let watcher = X11Watcher::connect(&self.display)?;
        watcher.pointer_away()?;
        let region = watcher.region(*window)?;
        let camera = Camera::open(framebuffer.path(), region)?;
        let shared = Arc::clone(shared);
        Ok(Some(flushlab_core::sys::spawn_thread(
            "wrap-camera",
            move || {
                let done = || shared.done.load(Ordering::Relaxed);
                Ok(camera.roll(done, || shared.recording.last_window_change())?)
            },
        )?))
    }

    fn calibrate(&self, window: &Window) -> anyhow::Result<Option<Strips>> {
        X11Watcher::connect(&self.display)?.calibrate(*window)
    }

    fn desktop(&self) -> anyhow::Result<Desktop> {
        Ok(match self.server {
            Some(_) => Desktop::OwnXvfb,
            None => Desktop::X11(self.display.clone()),
        })
    }
}
