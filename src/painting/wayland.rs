//! Key→pixel on Wayland: a headless wlroots compositor of flushlab's own (sway: no GPU, no
//! input devices, software rendering), the terminal on it, the keys typed through the
//! virtual-keyboard protocol (as `wtype`) and the terminal's region of the output watched
//! through wlr-screencopy with damage (as `grim`, once a change).
//!
//! `--wayland-display` runs the terminal on a sway session of the person's instead, found through
//! sway's IPC as on the own one: the window made floating at the size it asked for and given
//! the keyboard, its output's refresh read from sway.
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
use super::window_watch::{CoreShare, Strips, decode_strip};
use crate::detect::recording::Recording;
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

/// Which Wayland display a run's terminal goes on.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Session {
    /// flushlab's own headless sway, its output at this refresh rate (Hz).
    Own { refresh_hz: u32 },
    /// A running sway session: its display's socket, by name (in `XDG_RUNTIME_DIR`, as
    /// `WAYLAND_DISPLAY` says it) or by path.
    Running(PathBuf),
}

/// The sway a run's terminal goes on: flushlab's own (ended, its runtime directory removed,
/// when dropped) or a running session of the person's (left as it was).
pub struct Compositor {
    /// The display's socket (`WAYLAND_DISPLAY` may name it by its path).
    pub socket: PathBuf,
    /// The `XDG_RUNTIME_DIR` its clients run with.
    runtime: PathBuf,
    /// sway's IPC socket: where the windows are, and the commands that float and focus them.
    ipc: PathBuf,
    own: Option<Own>,
}

/// What flushlab started for its own compositor. The server goes before its directory.
struct Own {
    server: Group,
    _dir: RuntimeDir,
}

/// An output of the compositor, as sway says it.
#[derive(Clone, Debug, PartialEq)]
pub struct Output {
    pub name: String,
    /// Its mode's refresh rate, Hz (sway says mHz): a key's pixels wait for its next commit.
    pub refresh_hz: u32,
    pub scale: f64,
}

/// A window's place: its region of an output (the output's own coordinates), that output;
/// whether it floats, and whether the client's last picture has the region's size (sway's
/// layout changes wait for the client's next picture).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Placed {
    pub region: Region,
    pub output: String,
    pub floating: bool,
    pub drawn: bool,
}

impl Compositor {
    /// The compositor `session` names: flushlab's own started, or the running one found.
    pub fn open(session: &Session) -> anyhow::Result<Compositor> {
        match session {
            Session::Own { refresh_hz } => Compositor::start(*refresh_hz),
            Session::Running(name) => Compositor::running(name),
        }
    }

    /// A running sway session's display, `name` (see [`find_session`]), once its IPC answers.
    fn running(name: &Path) -> anyhow::Result<Compositor> {
        let found = find_session(name).map_err(anyhow::Error::msg)?;
        let said = crate::units::printable(&name.to_string_lossy());
        let SessionPaths {
            socket,
            runtime,
            ipc,
        } = found;
        let compositor = Compositor {
            socket,
            runtime,
            ipc,
            own: None,
        };
        compositor.outputs().with_context(|| {
            format!("wrap --wayland-display {said}: sway's IPC socket does not answer")
        })?;
        Ok(compositor)
    }

    /// Starts sway headless with one output at `refresh_hz`, every window floating at the size
    /// it asks for, no borders; waits until it serves its display.
    fn start(refresh_hz: u32) -> anyhow::Result<Compositor> {
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
            socket,
            runtime: dir.0.clone(),
            ipc,
            own: Some(Own { server, _dir: dir }),
        })
    }

    /// What a terminal on this compositor runs with: its display and its runtime directory.
    pub fn environment(&self) -> [(String, OsString); 2] {
        [
            ("WAYLAND_DISPLAY".into(), self.socket.clone().into()),
            ("XDG_RUNTIME_DIR".into(), self.runtime.clone().into()),
        ]
    }

    /// Whether this is flushlab's own compositor (software rendering) rather than a session's.
    pub fn own(&self) -> bool {
        self.own.is_some()
    }

    /// Whether the compositor is gone: flushlab's own exited, or the session's display closed.
    pub fn gone(&self) -> bool {
        match &self.own {
            Some(own) => crate::sys::process::thread_states(own.server.pid(), false)
                .is_none_or(|threads| threads.iter().all(|t| t.state == b'Z')),
            None => !self.socket.exists(),
        }
    }

    /// What sway answers to `swaymsg -t <kind> [command]`, or `None` when it refuses.
    fn ask(&self, kind: &str, command: Option<&str>) -> anyhow::Result<Option<serde_json::Value>> {
        let out = Command::new(installed("swaymsg", "sway")?)
            .arg("-s")
            .arg(&self.ipc)
            .args(["-r", "-t", kind])
            .args(command)
            .stdin(Stdio::null())
            .stderr(Stdio::null())
            .output()
            .context("asking sway through its IPC socket")?;
        if !out.status.success() {
            return Ok(None);
        }
        Ok(Some(serde_json::from_slice(&out.stdout)?))
    }

    /// Where the window of process `pid` is, once mapped (sway's tree): `None` until then.
    pub fn window_of(&self, pid: i32) -> anyhow::Result<Option<Placed>> {
        Ok(self
            .ask("get_tree", None)?
            .and_then(|tree| find_window(&tree, None, pid)))
    }

    /// A window rule: the window of `app_id` floats at the size it asks for and has the
    /// keyboard from the moment it maps (never tiled first: a terminal resized after CMD drew
    /// would lose the frame CMD drew). Asked before the terminal starts; the rule stays in a
    /// running session, naming an app id no other window has.
    pub fn float_when_mapped(&self, app_id: &str) -> anyhow::Result<()> {
        // Two rules: one rule of two commands, asked through IPC, ends sway 1.7.
        for then in ["floating enable", "focus"] {
            let answer = self.ask(
                "command",
                Some(&format!("for_window [app_id=\"^{app_id}$\"] {then}")),
            )?;
            let done = answer
                .as_ref()
                .and_then(|a| a.as_array())
                .is_some_and(|all| all.iter().all(|one| one["success"] == true));
            if !done {
                bail!("sway refused the window rule `{then}` for the terminal: {answer:?}");
            }
        }
        Ok(())
    }

    /// The compositor's active outputs.
    pub fn outputs(&self) -> anyhow::Result<Vec<Output>> {
        let answer = self
            .ask("get_outputs", None)?
            .context("sway did not list its outputs")?;
        Ok(outputs_of(&answer))
    }
}

/// Where a running sway session's sockets are.
#[derive(Debug)]
pub struct SessionPaths {
    socket: PathBuf,
    runtime: PathBuf,
    ipc: PathBuf,
}

/// The sockets of the running sway session whose display is `name` (a socket's name in
/// `XDG_RUNTIME_DIR`, or its path) — its IPC socket `SWAYSOCK`, or the only one in the runtime
/// directory — or the one line that says what is missing.
pub fn find_session(name: &Path) -> Result<SessionPaths, String> {
    let said = crate::units::printable(&name.to_string_lossy());
    let runtime = std::env::var_os("XDG_RUNTIME_DIR").map(PathBuf::from);
    let (socket, runtime) = match (name.components().count() > 1, runtime) {
        (true, runtime) => {
            let parent = name.parent().unwrap_or(Path::new("/")).to_path_buf();
            (name.to_path_buf(), runtime.unwrap_or(parent))
        }
        (false, Some(runtime)) => (runtime.join(name), runtime),
        (false, None) => {
            return Err(format!(
                "wrap --wayland-display {said}: XDG_RUNTIME_DIR is not set: give the display's socket by its path (as /run/user/1000/wayland-1)"
            ));
        }
    };
    let is_socket = std::fs::metadata(&socket)
        .is_ok_and(|m| std::os::unix::fs::FileTypeExt::is_socket(&m.file_type()));
    if !is_socket {
        return Err(format!(
            "wrap --wayland-display {said}: no Wayland display at {} (WAYLAND_DISPLAY in your session names it)",
            crate::units::printable(&socket.to_string_lossy())
        ));
    }
    let ipc = std::env::var_os("SWAYSOCK")
        .map(PathBuf::from)
        .or_else(|| only_sway_ipc(&runtime))
        .ok_or_else(|| {
            format!(
                "wrap --wayland-display {said}: wrap finds the terminal's window through sway's IPC, and finds none (SWAYSOCK is not set, and {} holds no single sway-ipc socket): sway only (Hyprland, river: not yet)",
                crate::units::printable(&runtime.to_string_lossy())
            )
        })?;
    Ok(SessionPaths {
        socket,
        runtime,
        ipc,
    })
}

/// The active outputs of sway's `get_outputs` answer.
fn outputs_of(answer: &serde_json::Value) -> Vec<Output> {
    answer
        .as_array()
        .into_iter()
        .flatten()
        .filter(|o| o["active"] != false)
        .filter_map(|o| {
            let millihertz = o["current_mode"]["refresh"].as_u64()?;
            Some(Output {
                name: o["name"].as_str()?.to_owned(),
                refresh_hz: u32::try_from((millihertz + 500) / 1000).ok()?,
                scale: o["scale"].as_f64().unwrap_or(1.0),
            })
        })
        .collect()
}

/// The IPC socket in `runtime` when there is exactly one (`sway-ipc.UID.PID.sock`).
fn only_sway_ipc(runtime: &Path) -> Option<PathBuf> {
    let found: Vec<PathBuf> = std::fs::read_dir(runtime)
        .ok()?
        .filter_map(|e| {
            let name = e.ok()?.file_name().into_string().ok()?;
            (name.starts_with("sway-ipc.") && name.ends_with(".sock")).then(|| runtime.join(name))
        })
        .collect();
    match found.as_slice() {
        [one] => Some(one.clone()),
        _ => None,
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

/// A rectangle of sway's tree (`rect`, `window_rect`).
fn rect_of(rect: &serde_json::Value) -> Option<Region> {
    let field = |name: &str| i32::try_from(rect[name].as_i64()?).ok();
    Some(Region {
        x: field("x")?,
        y: field("y")?,
        width: field("width")?,
        height: field("height")?,
    })
}

/// The place of the window of `pid` in sway's tree, below `node` (on `output`, its name and
/// layout rectangle, once an output node was passed): the view's own rectangle (`window_rect`,
/// inside the container's borders and title) in the output's coordinates.
fn find_window(
    node: &serde_json::Value,
    output: Option<(&str, Region)>,
    pid: i32,
) -> Option<Placed> {
    let output = match (node["type"].as_str(), node["name"].as_str()) {
        (Some("output"), Some(name)) => Some((name, rect_of(&node["rect"])?)),
        _ => output,
    };
    if node["pid"].as_i64() == Some(i64::from(pid)) {
        let (name, screen) = output?;
        let outer = rect_of(&node["rect"])?;
        let inner = rect_of(&node["window_rect"]).unwrap_or(Region {
            x: 0,
            y: 0,
            ..outer
        });
        // The client's last picture (`geometry`) is the size it was given: no change pending.
        let drawn = rect_of(&node["geometry"])
            .is_none_or(|g| (g.width, g.height) == (inner.width, inner.height));
        let region = Region {
            x: outer.x + inner.x - screen.x,
            y: outer.y + inner.y - screen.y,
            width: inner.width,
            height: inner.height,
        };
        return (region.width > 0 && region.height > 0).then(|| Placed {
            region,
            output: name.to_owned(),
            floating: node["type"] == "floating_con",
            drawn,
        });
    }
    ["nodes", "floating_nodes"]
        .iter()
        .filter_map(|k| node[*k].as_array())
        .flatten()
        .find_map(|child| find_window(child, output, pid))
}

/// A client of the compositor: its output, its shared memory and the two protocols wrap needs.
pub struct Client {
    conn: Connection,
    /// Every output, with its name where the compositor says it (wl_output 4).
    outputs: Vec<(wl_output::WlOutput, Option<String>)>,
    shm: wl_shm::WlShm,
    seat: wl_seat::WlSeat,
    screencopy: screencopy::ZwlrScreencopyManagerV1,
    keyboards: keyboards::ZwpVirtualKeyboardManagerV1,
    /// Where the globals' and the keyboard's events go (none that wrap reads).
    setup: EventQueue<Setup>,
}

/// The setup queue's state: the outputs' names as they are said.
#[derive(Default)]
struct Setup {
    names: Vec<Option<String>>,
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
                        crate::units::printable(&placed.output)
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

/// Modifier masks of the virtual keyboard's keymap (its real modifiers).
const SHIFT: u32 = 1;
const CONTROL: u32 = 4;
const ALT: u32 = 8;
/// `Tab`: Shift+Tab is this key with Shift held (a one-level key's `ISO_Left_Tab` reached foot
/// but not kitty, which reads the key and its modifiers).
const TAB: u32 = 0xff09;

/// A key's modifiers and keysym, as the virtual keyboard types it.
fn stroke_of(key: &Key) -> Result<(u32, u32), String> {
    Ok(match key {
        Key::Char(c) => (0, char_keysym(*c)),
        Key::Named(Named::BackTab) => (SHIFT, TAB),
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

    /// Records every change of the region as it comes, until `done` says to stop (asked at
    /// least every 20 ms): when each was committed; once `strips` are known (the calibration
    /// pattern was seen), the frame markers read back from each change's picture. Returns the
    /// share of a core it took.
    pub fn changes(
        mut self,
        mut done: impl FnMut() -> bool,
        recording: &Recording,
        strips: &std::sync::OnceLock<Strips>,
    ) -> anyhow::Result<f64> {
        let core = CoreShare::start();
        let mut slot = 0;
        let Some(mut pending) = self.ask(slot, true, &mut done)? else {
            return Ok(core.share());
        };
        while let Some(at) = self.outcome(slot, &mut done)? {
            // The next copy is asked for before this one is read: a commit meanwhile is caught.
            let Some(next) = self.ask(1 - slot, true, &mut done)? else {
                pending.destroy();
                break;
            };
            pending.destroy();
            pending = next;
            recording.window_changed(at);
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
                recording.window_showed(at, top.filter(|_| top == bottom));
            }
            slot = 1 - slot;
        }
        pending.destroy();
        let _ = self.conn.flush();
        Ok(core.share())
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
        assert_eq!(stroke_of(&Key::Named(Named::BackTab)), Ok((SHIFT, TAB)));
        assert!(stroke_of(&Key::Paste("x".into())).is_err());
    }

    #[test]
    fn a_window_is_found_by_its_pid_inside_its_borders_on_its_output() {
        let rect = |x, y, width, height| serde_json::json!({"x": x, "y": y, "width": width, "height": height});
        let tree = serde_json::json!({
            "type": "root", "pid": null, "rect": rect(0, 0, 3200, 1080),
            "nodes": [
                {"type": "output", "name": "HEADLESS-1", "rect": rect(0, 0, 1280, 720), "nodes": []},
                {"type": "output", "name": "HEADLESS-2", "rect": rect(1280, 0, 1920, 1080), "nodes": [
                    {"type": "workspace", "nodes": [
                        {"type": "con", "pid": 8, "rect": rect(1280, 25, 1920, 1055),
                         "window_rect": rect(2, 0, 1916, 1053), "geometry": rect(0, 0, 964, 684)}
                    ], "floating_nodes": [
                        {"type": "floating_con", "pid": 7, "rect": rect(1756, 198, 968, 686),
                         "window_rect": rect(2, 0, 964, 684), "geometry": rect(0, 0, 964, 684)}
                    ]}
                ]}
            ]
        });
        assert_eq!(
            find_window(&tree, None, 7),
            Some(Placed {
                region: Region {
                    x: 478,
                    y: 198,
                    width: 964,
                    height: 684
                },
                output: "HEADLESS-2".into(),
                floating: true,
                drawn: true,
            })
        );
        // Tiled, and its picture not yet the size sway gave it.
        let tiled = find_window(&tree, None, 8).unwrap();
        assert!(!tiled.floating && !tiled.drawn, "{tiled:?}");
        assert_eq!(find_window(&tree, None, 9), None);
    }

    #[test]
    fn outputs_say_their_refresh_in_hertz() {
        let answer = serde_json::json!([
            {"name": "HEADLESS-1", "active": true, "scale": 1.0, "current_mode": {"refresh": 59_940}},
            {"name": "HEADLESS-2", "active": false, "scale": 2.0, "current_mode": {"refresh": 75_000}}
        ]);
        assert_eq!(
            outputs_of(&answer),
            vec![Output {
                name: "HEADLESS-1".into(),
                refresh_hz: 60,
                scale: 1.0
            }]
        );
    }
}
