//! The Wayland client: a connection to the compositor, its outputs, seat and shared memory, and
//! the managers of the virtual keyboard and of screencopy.

use std::os::fd::AsFd;
use std::os::unix::net::UnixStream;
use std::path::Path;

use anyhow::{Context, bail};
use wayland_client::globals::{GlobalListContents, registry_queue_init};
use wayland_client::protocol::{wl_output, wl_registry, wl_seat, wl_shm};
use wayland_client::{Connection, Dispatch, EventQueue, Proxy, QueueHandle, delegate_noop};
use wayland_protocols_misc::zwp_virtual_keyboard_v1::client::{
    zwp_virtual_keyboard_manager_v1 as keyboards, zwp_virtual_keyboard_v1 as keyboard,
};
use wayland_protocols_wlr::screencopy::v1::client::zwlr_screencopy_manager_v1 as screencopy;

use super::ipc::Placed;
use super::keyboard::{Keyboard, Stroke, keymap, stroke_of};
use super::screencopy::{Capture, Shots};
use flushlab_core::keyscript::Key;

/// A client of the compositor: its output, its shared memory and the two protocols wrap needs.
pub struct Client {
    pub(super) conn: Connection,
    /// Every output, with its name where the compositor says it (wl_output 4).
    pub(super) outputs: Vec<(wl_output::WlOutput, Option<String>)>,
    pub(super) shm: wl_shm::WlShm,
    pub(super) seat: wl_seat::WlSeat,
    pub(super) screencopy: screencopy::ZwlrScreencopyManagerV1,
    pub(super) keyboards: keyboards::ZwpVirtualKeyboardManagerV1,
    /// Where the globals' and the keyboard's events go (none that wrap reads).
    pub(super) setup: EventQueue<Setup>,
}

/// The setup queue's state: the outputs' names as they are said.
#[derive(Default)]
pub(super) struct Setup {
    pub(super) names: Vec<Option<String>>,
}

impl Dispatch<wl_output::WlOutput, usize> for Setup {
    fn event(
        state: &mut Self,
        _: &wl_output::WlOutput,
        event: wl_output::Event,
        index: &usize,
        _: &Connection,
        _: &QueueHandle<Self>,
    ) {
        if let wl_output::Event::Name { name } = event
            && let Some(slot) = state.names.get_mut(*index)
        {
            *slot = Some(name);
        }
    }
}

impl Dispatch<wl_registry::WlRegistry, GlobalListContents> for Setup {
    fn event(
        _: &mut Self,
        _: &wl_registry::WlRegistry,
        _: wl_registry::Event,
        _: &GlobalListContents,
        _: &Connection,
        _: &QueueHandle<Self>,
    ) {
    }
}
delegate_noop!(Setup: ignore wl_shm::WlShm);
delegate_noop!(Setup: ignore wl_seat::WlSeat);
delegate_noop!(Setup: screencopy::ZwlrScreencopyManagerV1);
delegate_noop!(Setup: keyboards::ZwpVirtualKeyboardManagerV1);
delegate_noop!(Setup: keyboard::ZwpVirtualKeyboardV1);

impl Client {
    /// Connects to the display at `socket` and binds what wrap needs, or says which protocol
    /// the compositor lacks (GNOME's and KDE's serve neither).
    pub fn connect(socket: &Path) -> anyhow::Result<Client> {
        let stream = UnixStream::connect(socket)
            .with_context(|| format!("connecting to the Wayland display {}", socket.display()))?;
        let conn = Connection::from_socket(stream)?;
        let (globals, mut queue) =
            registry_queue_init::<Setup>(&conn).context("reading the Wayland display's globals")?;
        let qh = queue.handle();
        let lacks = |what: &str| {
            format!(
                "the Wayland display {} has no {what} (wlroots compositors — sway, Hyprland, \
                 river — serve it; GNOME's and KDE's do not)",
                socket.display()
            )
        };
        let outputs: Vec<wl_output::WlOutput> = globals.contents().with_list(|list| {
            list.iter()
                .filter(|g| g.interface == wl_output::WlOutput::interface().name)
                .enumerate()
                .map(|(i, g)| globals.registry().bind(g.name, g.version.min(4), &qh, i))
                .collect()
        });
        if outputs.is_empty() {
            bail!("the Wayland display has no output");
        }
        let mut named = Setup {
            names: vec![None; outputs.len()],
        };
        queue
            .roundtrip(&mut named)
            .context("reading the Wayland display's outputs")?;
        let client = Client {
            outputs: outputs.into_iter().zip(named.names).collect(),
            shm: globals
                .bind(&qh, 1..=1, ())
                .map_err(|_| anyhow::anyhow!("the Wayland display has no wl_shm"))?,
            seat: globals
                .bind(&qh, 1..=7, ())
                .map_err(|_| anyhow::anyhow!("the Wayland display has no seat"))?,
            screencopy: globals
                .bind(&qh, 2..=3, ())
                .map_err(|_| anyhow::anyhow!(lacks("wlr-screencopy (version 2 or later)")))?,
            keyboards: globals
                .bind(&qh, 1..=1, ())
                .map_err(|_| anyhow::anyhow!(lacks("virtual-keyboard protocol")))?,
            conn,
            setup: queue,
        };
        client.sync()?;
        Ok(client)
    }

    /// Waits until the compositor has handled everything sent so far.
    pub fn sync(&self) -> anyhow::Result<()> {
        self.conn
            .roundtrip()
            .context("a round trip to the Wayland display")?;
        Ok(())
    }

    /// A virtual keyboard whose keymap holds exactly the keys of `keys`, one key code each
    /// (no key repeat: each key is pressed and released at once), and the stroke of each; or
    /// why a key cannot be typed.
    pub fn keyboard(
        &self,
        keys: &[&Key],
    ) -> anyhow::Result<(Keyboard, Vec<Result<Stroke, String>>)> {
        let mut syms: Vec<u32> = Vec::new();
        let strokes: Vec<Result<Stroke, String>> = keys
            .iter()
            .map(|key| {
                let (modifiers, sym) = stroke_of(key)?;
                let index = syms.iter().position(|&s| s == sym).unwrap_or_else(|| {
                    syms.push(sym);
                    syms.len() - 1
                });
                Ok(Stroke {
                    modifiers,
                    code: u32::try_from(index + 1).unwrap_or(u32::MAX),
                })
            })
            .collect();
        let text = keymap(&syms);
        let fd = rustix::fs::memfd_create("flushlab-keymap", rustix::fs::MemfdFlags::CLOEXEC)?;
        rustix::io::write(&fd, text.as_bytes())?;
        let qh = self.setup.handle();
        let typing = self.keyboards.create_virtual_keyboard(&self.seat, &qh, ());
        // Format 1: xkb_v1, the text with its terminating NUL.
        typing.keymap(1, fd.as_fd(), u32::try_from(text.len()).unwrap_or(u32::MAX));
        self.sync()?;
        Ok((
            Keyboard {
                conn: self.conn.clone(),
                typing,
                _keymap: fd,
            },
            strokes,
        ))
    }

    /// A watcher of a window's region of its output, on a queue of its own (for a thread of
    /// its own).
    pub fn capture(&self, placed: &Placed) -> anyhow::Result<Capture> {
        let output = match self.outputs.as_slice() {
            [(only, _)] => only,
            all => &all
                .iter()
                .find(|(_, name)| name.as_deref() == Some(placed.output.as_str()))
                .with_context(|| {
                    format!(
                        "the Wayland display has {} outputs and names none {} (wl_output version 4 says their names)",
                        all.len(),
                        flushlab_core::units::printable(&placed.output)
                    )
                })?
                .0,
        };
        let queue = self.conn.new_event_queue();
        Ok(Capture {
            conn: self.conn.clone(),
            output: output.clone(),
            shm: self.shm.clone(),
            screencopy: self.screencopy.clone(),
            region: placed.region,
            queue,
            shots: Shots::default(),
            buffers: [None, None],
        })
    }
}
