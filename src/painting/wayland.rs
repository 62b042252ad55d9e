//! Key→pixel on Wayland: a headless wlroots compositor of flushlab's own (sway: no GPU, no
//! input devices, software rendering), the terminal on it, the keys typed through the
//! virtual-keyboard protocol (as `wtype`) and the terminal's region of the output watched
//! through wlr-screencopy with damage (as `grim`, once a change).
//!
//! sway refuses to run as root ("Unable to drop root"): when wrap is root the compositor runs as
//! `nobody` in a runtime directory of its own, while the terminal and CMD run as wrap (root may
//! use any socket), so the observer reaches CMD as it does on X11.
//!
//! Screencopy answers a copy at the output's next commit that changed the region: a change is
//! timed when the compositor committed it (the `ready` event's CLOCK_MONOTONIC time), so a key
//! waits for the output's next refresh on Wayland as it does on a real display. Commits made
//! while no copy was pending merge into the next copy: the next copy is asked for before the
//! last one is read, so only a commit within that round trip (well under one refresh) merges.

use std::ffi::OsString;
use std::os::fd::{AsFd, OwnedFd};
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use wayland_client::globals::{GlobalListContents, registry_queue_init};
use wayland_client::protocol::{wl_buffer, wl_output, wl_registry, wl_seat, wl_shm, wl_shm_pool};
use wayland_client::{Connection, Dispatch, EventQueue, Proxy, QueueHandle, WEnum, delegate_noop};
use wayland_protocols_misc::zwp_virtual_keyboard_v1::client::{
    zwp_virtual_keyboard_manager_v1 as keyboards, zwp_virtual_keyboard_v1 as keyboard,
};
use wayland_protocols_wlr::screencopy::v1::client::{
    zwlr_screencopy_frame_v1 as frame, zwlr_screencopy_manager_v1 as screencopy,
};

use super::display::{Group, installed};
use super::keyboard::{char_keysym, ctrl_char, named_keysym};
use super::observer::{Changes, CoreShare, Strips, decode_strip};
use crate::keyscript::{Key, Named};

/// Who the compositor runs as when wrap is root: Debian's `nobody`.
const NOBODY: u32 = 65534;
/// The headless output: room for a 200x60 terminal at 10 pt, floating in its middle.
const OUTPUT: (u32, u32) = (2560, 1600);
/// How long sway may take to serve its display.
const START_AT_MOST: Duration = Duration::from_secs(10);

/// The runtime directories' names: this prefix, wrap's pid, a time.
const RUNTIME_PREFIX: &str = "flushlab-wayland-";

/// Removes the runtime directories of wraps that are gone (SIGKILL leaves its own behind; the
/// compositor died with it).
fn sweep_stale(temp: &Path) {
    let Ok(entries) = std::fs::read_dir(temp) else {
        return;
    };
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(pid) = name
            .to_str()
            .and_then(|n| n.strip_prefix(RUNTIME_PREFIX))
            .and_then(|rest| rest.split('-').next())
            .and_then(|pid| pid.parse::<i32>().ok())
        else {
            continue;
        };
        if crate::sys::process::thread_states(pid, false).is_none() {
            let _ = std::fs::remove_dir_all(entry.path());
        }
    }
}

/// A directory only the compositor's user may enter, removed when dropped.
struct RuntimeDir(PathBuf);

impl RuntimeDir {
    fn create(owner: Option<u32>) -> anyhow::Result<RuntimeDir> {
        use std::os::unix::fs::DirBuilderExt;
        sweep_stale(&std::env::temp_dir());
        let path = std::env::temp_dir().join(format!(
            "{RUNTIME_PREFIX}{}-{}",
            std::process::id(),
            crate::sys::monotonic_ns()
        ));
        std::fs::DirBuilder::new()
            .mode(0o700)
            .create(&path)
            .with_context(|| format!("creating {}", path.display()))?;
        let dir = RuntimeDir(path);
        if let Some(uid) = owner {
            std::os::unix::fs::chown(&dir.0, Some(uid), Some(uid))
                .with_context(|| format!("giving {} to uid {uid}", dir.0.display()))?;
        }
        Ok(dir)
    }
}

impl Drop for RuntimeDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// flushlab's own headless sway: ended and its runtime directory removed when dropped.
pub struct Compositor {
    server: Group,
    /// The display's socket (`WAYLAND_DISPLAY` may name it by its path).
    pub socket: PathBuf,
    ipc: PathBuf,
    /// The output's refresh rate, Hz: a key's pixels wait for its next commit.
    pub refresh_hz: u32,
    dir: RuntimeDir,
}

impl Compositor {
    /// Starts sway headless with one output at `refresh_hz`, every window floating at the size
    /// it asks for, no borders; waits until it serves its display.
    pub fn start(refresh_hz: u32) -> anyhow::Result<Compositor> {
        let sway = installed("sway", "sway")?;
        let root = rustix::process::geteuid().is_root();
        let dir = RuntimeDir::create(root.then_some(NOBODY))?;
        let config = dir.0.join("sway.conf");
        std::fs::write(
            &config,
            format!(
                "output * mode --custom {}x{}@{refresh_hz}Hz\n\
                 default_border none\n\
                 default_floating_border none\n\
                 for_window [app_id=\".*\"] floating enable\n\
                 focus_follows_mouse no\n",
                OUTPUT.0, OUTPUT.1
            ),
        )?;
        let log = std::fs::File::create(dir.0.join("sway.log"))?;
        // Through setpriv: as `nobody` when wrap is root, and killed with wrap however wrap
        // ends (SIGKILL too): the terminal loses its display and exits, and CMD with it.
        let mut command = Command::new(installed("setpriv", "util-linux")?);
        if root {
            command
                .arg(format!("--reuid={NOBODY}"))
                .arg(format!("--regid={NOBODY}"))
                .arg("--clear-groups");
        }
        command
            .args(["--pdeathsig", "KILL", "--"])
            .arg(&sway)
            .arg("-c")
            .arg(&config)
            .env_clear()
            .env("HOME", &dir.0)
            .env("XDG_RUNTIME_DIR", &dir.0)
            .env("PATH", std::env::var_os("PATH").unwrap_or_default())
            .env("WLR_BACKENDS", "headless")
            .env("WLR_RENDERER", "pixman")
            .env("WLR_LIBINPUT_NO_DEVICES", "1")
            .env("WLR_HEADLESS_OUTPUTS", "1")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(log);
        let mut server = Group::spawn(&mut command).context("starting sway")?;
        let start = Instant::now();
        let (socket, ipc) = loop {
            if let Some(found) = served(&dir.0) {
                break found;
            }
            if server.exited() {
                bail!(
                    "sway exited before it served a display: {}",
                    last_line(&dir.0)
                );
            }
            if start.elapsed() > START_AT_MOST {
                bail!(
                    "sway served no display within {} s: {}",
                    START_AT_MOST.as_secs(),
                    last_line(&dir.0)
                );
            }
            std::thread::sleep(Duration::from_millis(10));
        };
        Ok(Compositor {
            server,
            socket,
            ipc,
            refresh_hz,
            dir,
        })
    }

    /// What a terminal on this compositor runs with: its display and its runtime directory.
    pub fn environment(&self) -> [(String, OsString); 2] {
        [
            ("WAYLAND_DISPLAY".into(), self.socket.clone().into()),
            ("XDG_RUNTIME_DIR".into(), self.dir.0.clone().into()),
        ]
    }

    /// The compositor's process.
    pub fn pid(&self) -> i32 {
        self.server.pid()
    }

    /// Where the window of process `pid` is on the output, once mapped (sway's tree, through
    /// `swaymsg`): `None` while it has none.
    pub fn window_of(&self, pid: i32) -> anyhow::Result<Option<Region>> {
        let out = Command::new(installed("swaymsg", "sway")?)
            .arg("-s")
            .arg(&self.ipc)
            .args(["-r", "-t", "get_tree"])
            .stdin(Stdio::null())
            .stderr(Stdio::null())
            .output()
            .context("asking sway for its windows")?;
        if !out.status.success() {
            return Ok(None);
        }
        let tree: serde_json::Value = serde_json::from_slice(&out.stdout)?;
        Ok(find_window(&tree, pid))
    }
}

/// The display's socket and sway's IPC socket, once both are there.
fn served(dir: &Path) -> Option<(PathBuf, PathBuf)> {
    let names: Vec<String> = std::fs::read_dir(dir)
        .ok()?
        .filter_map(|e| e.ok()?.file_name().into_string().ok())
        .collect();
    let socket = names
        .iter()
        .find(|n| n.starts_with("wayland-") && !n.ends_with(".lock"))?;
    let ipc = names
        .iter()
        .find(|n| n.starts_with("sway-ipc.") && n.ends_with(".sock"))?;
    Some((dir.join(socket), dir.join(ipc)))
}

/// sway's last words, printable, for a refusal.
fn last_line(dir: &Path) -> String {
    let log = std::fs::read_to_string(dir.join("sway.log")).unwrap_or_default();
    let line = log.lines().rev().find(|l| !l.trim().is_empty());
    crate::units::printable(line.unwrap_or("it said nothing"))
}

/// A rectangle of the output, pixels.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Region {
    pub x: i32,
    pub y: i32,
    pub width: i32,
    pub height: i32,
}

/// The rectangle of the node of sway's tree that belongs to `pid`.
fn find_window(node: &serde_json::Value, pid: i32) -> Option<Region> {
    if node["pid"].as_i64() == Some(i64::from(pid)) {
        let rect = &node["rect"];
        let field = |name: &str| i32::try_from(rect[name].as_i64()?).ok();
        let region = Region {
            x: field("x")?,
            y: field("y")?,
            width: field("width")?,
            height: field("height")?,
        };
        return (region.width > 0 && region.height > 0).then_some(region);
    }
    ["nodes", "floating_nodes"]
        .iter()
        .filter_map(|k| node[*k].as_array())
        .flatten()
        .find_map(|child| find_window(child, pid))
}

/// A client of the compositor: its output, its shared memory and the two protocols wrap needs.
pub struct Client {
    conn: Connection,
    output: wl_output::WlOutput,
    shm: wl_shm::WlShm,
    seat: wl_seat::WlSeat,
    screencopy: screencopy::ZwlrScreencopyManagerV1,
    keyboards: keyboards::ZwpVirtualKeyboardManagerV1,
    /// Where the globals' and the keyboard's events go (none that wrap reads).
    setup: EventQueue<Setup>,
}

/// The setup queue's state: nothing wrap reads of it.
struct Setup;

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
delegate_noop!(Setup: ignore wl_output::WlOutput);
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
        let (globals, queue) =
            registry_queue_init::<Setup>(&conn).context("reading the Wayland display's globals")?;
        let qh = queue.handle();
        let lacks = |what: &str| {
            format!(
                "the Wayland display {} has no {what} (wlroots compositors — sway, Hyprland, \
                 river — serve it; GNOME's and KDE's do not)",
                socket.display()
            )
        };
        let client = Client {
            output: globals
                .bind(&qh, 1..=4, ())
                .map_err(|_| anyhow::anyhow!("the Wayland display has no output"))?,
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

    /// A watcher of `region` of the output, on a queue of its own (for a thread of its own).
    pub fn capture(&self, region: Region) -> anyhow::Result<Capture> {
        let queue = self.conn.new_event_queue();
        Ok(Capture {
            conn: self.conn.clone(),
            output: self.output.clone(),
            shm: self.shm.clone(),
            screencopy: self.screencopy.clone(),
            region,
            queue,
            shots: Shots::default(),
            buffers: [None, None],
        })
    }
}

/// Modifier masks of the virtual keyboard's keymap (its real modifiers).
const SHIFT: u32 = 1;
const CONTROL: u32 = 4;
const ALT: u32 = 8;
/// `ISO_Left_Tab`, Shift+Tab as X and xkb name it.
const ISO_LEFT_TAB: u32 = 0xfe20;

/// A key's modifiers and keysym, as the virtual keyboard types it.
fn stroke_of(key: &Key) -> Result<(u32, u32), String> {
    Ok(match key {
        Key::Char(c) => (0, char_keysym(*c)),
        Key::Named(Named::BackTab) => (SHIFT, ISO_LEFT_TAB),
        Key::Named(named) => (0, named_keysym(*named)),
        Key::Ctrl(byte) => (CONTROL, char_keysym(ctrl_char(*byte))),
        Key::Alt(c) => (ALT, char_keysym(*c)),
        Key::Paste(_) => {
            return Err(format!(
                "{key}: a paste is no key to type: type its text instead"
            ));
        }
    })
}

/// An xkb keymap with key code `i + 9` (the virtual keyboard's key `i + 1`) giving `syms[i]`,
/// keysyms written as numbers (libxkbcommon reads those as keysyms), NUL-terminated.
fn keymap(syms: &[u32]) -> String {
    let mut codes = String::new();
    let mut symbols = String::new();
    for (i, sym) in syms.iter().enumerate() {
        codes += &format!("<K{}> = {};\n", i + 1, i + 9);
        symbols += &format!("key <K{}> {{[ 0x{sym:x} ]}};\n", i + 1);
    }
    format!(
        "xkb_keymap {{\n\
         xkb_keycodes \"flushlab\" {{\nminimum = 8;\nmaximum = {};\n{codes}}};\n\
         xkb_types \"flushlab\" {{ include \"complete\" }};\n\
         xkb_compat \"flushlab\" {{ include \"complete\" }};\n\
         xkb_symbols \"flushlab\" {{\n{symbols}}};\n\
         }};\n\0",
        syms.len() + 9
    )
}

/// A key as the virtual keyboard types it: the modifiers held, and its key.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Stroke {
    modifiers: u32,
    code: u32,
}

/// The virtual keyboard, its keymap uploaded.
pub struct Keyboard {
    conn: Connection,
    typing: keyboard::ZwpVirtualKeyboardV1,
    _keymap: OwnedFd,
}

impl Keyboard {
    /// Types one stroke: modifiers down, the key pressed and released, modifiers up, sent in
    /// one flush.
    pub fn type_stroke(&self, stroke: Stroke) -> anyhow::Result<()> {
        let ms = u32::try_from(crate::sys::monotonic_ns() / 1_000_000 % u64::from(u32::MAX))
            .unwrap_or_default();
        if stroke.modifiers != 0 {
            self.typing.modifiers(stroke.modifiers, 0, 0, 0);
        }
        self.typing.key(ms, stroke.code, 1);
        self.typing.key(ms, stroke.code, 0);
        if stroke.modifiers != 0 {
            self.typing.modifiers(0, 0, 0, 0);
        }
        self.conn
            .flush()
            .context("typing into the Wayland display")?;
        Ok(())
    }
}

impl Drop for Keyboard {
    fn drop(&mut self) {
        self.typing.destroy();
        let _ = self.conn.flush();
    }
}

/// One copy's outcome, as its events arrive.
#[derive(Debug, Default)]
struct Shot {
    /// The buffer the compositor asks for: format, width, height, stride.
    wanted: Option<(u32, u32, u32, u32)>,
    buffer_done: bool,
    /// When the copied picture was committed (CLOCK_MONOTONIC ns), or `None`: it failed.
    ready: Option<Option<u64>>,
}

/// The watcher's queue state: the copy in each of two slots.
#[derive(Debug, Default)]
struct Shots([Shot; 2]);

impl Dispatch<frame::ZwlrScreencopyFrameV1, usize> for Shots {
    fn event(
        state: &mut Self,
        _: &frame::ZwlrScreencopyFrameV1,
        event: frame::Event,
        slot: &usize,
        _: &Connection,
        _: &QueueHandle<Self>,
    ) {
        let shot = &mut state.0[*slot];
        match event {
            frame::Event::Buffer {
                format: WEnum::Value(format),
                width,
                height,
                stride,
            } => shot.wanted = Some((format as u32, width, height, stride)),
            frame::Event::BufferDone => shot.buffer_done = true,
            frame::Event::Ready {
                tv_sec_hi,
                tv_sec_lo,
                tv_nsec,
            } => {
                let seconds = (u64::from(tv_sec_hi) << 32) | u64::from(tv_sec_lo);
                shot.ready = Some(Some(seconds * 1_000_000_000 + u64::from(tv_nsec)));
            }
            frame::Event::Failed => shot.ready = Some(None),
            _ => {}
        }
    }
}
delegate_noop!(Shots: ignore wl_buffer::WlBuffer);
delegate_noop!(Shots: wl_shm_pool::WlShmPool);

/// A shared-memory buffer the compositor copies into.
struct Buffer {
    wl: wl_buffer::WlBuffer,
    fd: OwnedFd,
    size: (u32, u32),
    stride: u32,
}

/// The watcher of one region of the output.
pub struct Capture {
    conn: Connection,
    output: wl_output::WlOutput,
    shm: wl_shm::WlShm,
    screencopy: screencopy::ZwlrScreencopyManagerV1,
    region: Region,
    queue: EventQueue<Shots>,
    shots: Shots,
    buffers: [Option<Buffer>; 2],
}

impl Capture {
    /// Asks for a copy of the region into `slot`'s buffer, at once or (`damage`) at the next
    /// commit that changes it; the frame to destroy once its outcome is read.
    fn ask(
        &mut self,
        slot: usize,
        damage: bool,
        done: &mut impl FnMut() -> bool,
    ) -> anyhow::Result<Option<frame::ZwlrScreencopyFrameV1>> {
        self.shots.0[slot] = Shot::default();
        let qh = self.queue.handle();
        let r = self.region;
        let frame = self.screencopy.capture_output_region(
            0,
            &self.output,
            r.x,
            r.y,
            r.width,
            r.height,
            &qh,
            slot,
        );
        let v3 = self.screencopy.version() >= 3;
        if !self.dispatch_until(
            |s| {
                s.0[slot].wanted.is_some() && (s.0[slot].buffer_done || !v3)
                    || s.0[slot].ready.is_some()
            },
            done,
        )? {
            frame.destroy();
            return Ok(None);
        }
        let Some((format, width, height, stride)) = self.shots.0[slot].wanted else {
            bail!("the compositor cannot copy the terminal's region of its output");
        };
        if ![
            wl_shm::Format::Xrgb8888 as u32,
            wl_shm::Format::Argb8888 as u32,
        ]
        .contains(&format)
        {
            bail!(
                "the compositor copies pixels in format {format:#x}, not the XRGB8888 the watcher reads"
            );
        }
        let fits = self.buffers[slot]
            .as_ref()
            .is_some_and(|b| b.size == (width, height) && b.stride == stride);
        if !fits {
            self.buffers[slot] = Some(self.buffer(format, (width, height), stride)?);
        }
        let buffer = &self.buffers[slot].as_ref().expect("made above").wl;
        if damage {
            frame.copy_with_damage(buffer);
        } else {
            frame.copy(buffer);
        }
        self.conn.flush()?;
        Ok(Some(frame))
    }

    /// A buffer the compositor asked for (`format`, size, `stride`), in a memfd of its own
    /// that the watcher reads back with pread (no mapping: the crate has no `unsafe`).
    fn buffer(
        &self,
        format: u32,
        (width, height): (u32, u32),
        stride: u32,
    ) -> anyhow::Result<Buffer> {
        let fd = rustix::fs::memfd_create("flushlab-screencopy", rustix::fs::MemfdFlags::CLOEXEC)?;
        let bytes = u64::from(stride) * u64::from(height);
        rustix::fs::ftruncate(&fd, bytes)?;
        let qh = self.queue.handle();
        let signed = |v: u32| i32::try_from(v).unwrap_or(i32::MAX);
        let pool = self.shm.create_pool(
            fd.as_fd(),
            signed(u32::try_from(bytes).unwrap_or(u32::MAX)),
            &qh,
            (),
        );
        let format = wl_shm::Format::try_from(format)
            .map_err(|()| anyhow::anyhow!("pixel format {format:#x}"))?;
        let wl = pool.create_buffer(
            0,
            signed(width),
            signed(height),
            signed(stride),
            format,
            &qh,
            (),
        );
        pool.destroy();
        Ok(Buffer {
            wl,
            fd,
            size: (width, height),
            stride,
        })
    }

    /// Dispatches the queue until `ready` holds (true) or `done` says to stop (false), asking
    /// `done` at least every 20 ms.
    fn dispatch_until(
        &mut self,
        ready: impl Fn(&Shots) -> bool,
        done: &mut impl FnMut() -> bool,
    ) -> anyhow::Result<bool> {
        loop {
            self.queue.dispatch_pending(&mut self.shots)?;
            if ready(&self.shots) {
                return Ok(true);
            }
            if done() {
                return Ok(false);
            }
            self.conn.flush()?;
            let Some(guard) = self.queue.prepare_read() else {
                continue;
            };
            if crate::sys::readable_within(guard.connection_fd(), Duration::from_millis(20))? {
                match guard.read() {
                    Ok(_) => {}
                    Err(wayland_client::backend::WaylandError::Io(e))
                        if e.kind() == std::io::ErrorKind::WouldBlock => {}
                    Err(e) => return Err(e).context("reading from the Wayland display"),
                }
            }
        }
    }

    /// Waits for the copy in `slot`: when it was committed, `None` once `done`.
    fn outcome(
        &mut self,
        slot: usize,
        done: &mut impl FnMut() -> bool,
    ) -> anyhow::Result<Option<u64>> {
        if !self.dispatch_until(|s| s.0[slot].ready.is_some(), done)? {
            return Ok(None);
        }
        match self.shots.0[slot].ready.flatten() {
            Some(at) => Ok(Some(at)),
            None => bail!("the compositor failed a copy of the terminal's region"),
        }
    }

    /// The region now, as one picture (`width` x `height` pixels, 32 bits each, rows packed).
    pub fn picture(&mut self) -> anyhow::Result<Option<(Vec<u8>, usize, usize)>> {
        let mut never = || false;
        let Some(frame) = self.ask(0, false, &mut never)? else {
            return Ok(None);
        };
        let at = self.outcome(0, &mut never);
        frame.destroy();
        at?;
        let buffer = self.buffers[0].as_ref().expect("asked above");
        let (width, height) = (buffer.size.0 as usize, buffer.size.1 as usize);
        let mut data = Vec::with_capacity(width * height * 4);
        for y in 0..height {
            data.extend(self.row(0, y, 0, width)?);
        }
        Ok(Some((data, width, height)))
    }

    /// `width` pixels of row `y` from `x` of the picture in `slot`'s buffer.
    fn row(&self, slot: usize, y: usize, x: usize, width: usize) -> anyhow::Result<Vec<u8>> {
        let buffer = self.buffers[slot].as_ref().context("no picture yet")?;
        let mut data = vec![0u8; width * 4];
        let offset = y as u64 * u64::from(buffer.stride) + x as u64 * 4;
        rustix::io::pread(&buffer.fd, &mut data, offset)?;
        Ok(data)
    }

    /// Every change of the region until `done` says to stop (asked at least every 20 ms):
    /// when each was committed; `seen` told of each as it comes; once `strips` are known (the
    /// calibration pattern was seen), the frame markers read back from each change's picture.
    pub fn changes(
        mut self,
        mut done: impl FnMut() -> bool,
        mut seen: impl FnMut(u64),
        strips: &std::sync::OnceLock<Strips>,
    ) -> anyhow::Result<Changes> {
        let core = CoreShare::start();
        let mut out = Changes::default();
        let mut slot = 0;
        let Some(mut pending) = self.ask(slot, true, &mut done)? else {
            return Ok(out);
        };
        while let Some(at) = self.outcome(slot, &mut done)? {
            // The next copy is asked for before this one is read: a commit meanwhile is caught.
            let Some(next) = self.ask(1 - slot, true, &mut done)? else {
                pending.destroy();
                break;
            };
            pending.destroy();
            pending = next;
            out.at.push(at);
            seen(at);
            if let Some(strips) = strips.get() {
                let read = |y: i16| -> anyhow::Result<Option<u32>> {
                    let row = self.row(
                        slot,
                        y.max(0) as usize,
                        strips.x.max(0) as usize,
                        usize::from(strips.width),
                    )?;
                    Ok(decode_strip(&row, &strips.centres))
                };
                let (top, bottom) = (read(strips.top_y)?, read(strips.bottom_y)?);
                out.frames.push((at, top.filter(|_| top == bottom)));
            }
            slot = 1 - slot;
        }
        pending.destroy();
        let _ = self.conn.flush();
        out.cpu_share = core.share();
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_keymap_gives_each_keysym_its_own_code() {
        let map = keymap(&[0x6a, 0xff0d]);
        assert!(
            map.contains("<K1> = 9;") && map.contains("<K2> = 10;"),
            "{map}"
        );
        assert!(map.contains("key <K1> {[ 0x6a ]};"), "{map}");
        assert!(map.contains("key <K2> {[ 0xff0d ]};"), "{map}");
        assert!(map.ends_with('\0'));
    }

    #[test]
    fn strokes_hold_their_modifiers() {
        assert_eq!(stroke_of(&Key::Char('j')), Ok((0, 0x6a)));
        assert_eq!(stroke_of(&Key::Ctrl(0x03)), Ok((CONTROL, 0x63)));
        assert_eq!(stroke_of(&Key::Alt('x')), Ok((ALT, 0x78)));
        assert_eq!(
            stroke_of(&Key::Named(Named::BackTab)),
            Ok((SHIFT, ISO_LEFT_TAB))
        );
        assert!(stroke_of(&Key::Paste("x".into())).is_err());
    }

    #[test]
    fn a_window_is_found_by_its_pid_among_floating_nodes() {
        let tree = serde_json::json!({
            "pid": null, "rect": {"x": 0, "y": 0, "width": 2560, "height": 1600},
            "nodes": [{"nodes": [], "floating_nodes": [
                {"pid": 7, "rect": {"x": 358, "y": 230, "width": 564, "height": 340}}
            ]}]
        });
        assert_eq!(
            find_window(&tree, 7),
            Some(Region {
                x: 358,
                y: 230,
                width: 564,
                height: 340
            })
        );
        assert_eq!(find_window(&tree, 8), None);
    }
}
