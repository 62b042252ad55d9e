//! The compositor: a headless sway of flushlab's own (as `nobody` when wrap is root, in a
//! runtime directory of its own) or a session of the person's, the terminal started on it and
//! its window placed, floating, at the size it asked for.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context, bail};

use super::ipc::{
    Output, Placed, SessionPaths, find_session, find_window, last_line, outputs_of, served,
};
use crate::display::{Group, installed};

/// Who the compositor runs as when wrap is root: Debian's `nobody`.
pub(super) const NOBODY: u32 = 65534;
/// The headless output: room for a 200x60 terminal at 10 pt, floating in its middle.
pub(super) const OUTPUT: (u32, u32) = (2560, 1600);
/// How long sway may take to serve its display.
pub(super) const START_AT_MOST: Duration = Duration::from_secs(10);

/// The runtime directories' names: this prefix, wrap's pid, a time.
pub(super) const RUNTIME_PREFIX: &str = "flushlab-wayland-";

/// Removes the runtime directories of wraps that are gone (SIGKILL leaves its own behind; the
/// compositor died with it).
pub(super) fn sweep_stale(temp: &Path) {
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
        if flushlab_core::sys::process::thread_states(pid, false).is_none() {
            let _ = std::fs::remove_dir_all(entry.path());
        }
    }
}

/// A directory only the compositor's user may enter, removed when dropped, and by its sweeper
/// when wrap is killed.
pub(super) struct RuntimeDir(
    PathBuf,
    #[expect(dead_code, reason = "held only: let go after the directory is removed")]
    flushlab_core::files::Sweeper,
);

impl RuntimeDir {
    fn create(owner: Option<u32>) -> anyhow::Result<RuntimeDir> {
        use std::os::unix::fs::DirBuilderExt;
        sweep_stale(&std::env::temp_dir());
        let path = std::env::temp_dir().join(format!(
            "{RUNTIME_PREFIX}{}-{}",
            std::process::id(),
            flushlab_core::sys::monotonic_ns()
        ));
        std::fs::DirBuilder::new()
            .mode(0o700)
            .create(&path)
            .with_context(|| format!("creating {}", path.display()))?;
        let sweeper = flushlab_core::files::Sweeper::start(&path);
        let sweeper = match sweeper {
            Ok(sweeper) => sweeper,
            Err(e) => {
                let _ = std::fs::remove_dir(&path);
                return Err(e).context("starting the runtime directory's sweeper");
            }
        };
        let dir = RuntimeDir(path, sweeper);
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
    pub(super) runtime: PathBuf,
    /// sway's IPC socket: where the windows are, and the commands that float and focus them.
    pub(super) ipc: PathBuf,
    pub(super) own: Option<Own>,
}

/// What flushlab started for its own compositor. The server goes before its directory.
pub(super) struct Own {
    pub(super) server: Group,
    pub(super) _dir: RuntimeDir,
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
        let said = flushlab_core::units::printable(&name.to_string_lossy());
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
            Some(own) => flushlab_core::sys::process::thread_states(own.server.pid(), false)
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
