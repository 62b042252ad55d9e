//! The processes a painted run needs: an X server of its own (Xvfb) and a terminal emulator on
//! it, each in its own process group, stopped when dropped (every way out of `flushlab paint`
//! but SIGKILL goes through a drop; on SIGKILL the X server dies with flushlab, its parent-death
//! signal, and the terminal with its display).
//!
//! [`launch`] starts a terminal as the launch table says ([`crate::emulators`]: how each is told
//! its size, its font, its settings and the command to run).

use std::ffi::OsString;
use std::io::Read;
use std::os::unix::process::CommandExt;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context, bail};

use crate::emulators::Terminal;
use crate::terminal_option::TerminalOption;

/// A child in its own process group, which is ended (TERM, then KILL after a second) and
/// reaped when this is dropped.
#[derive(Debug)]
pub struct Group {
    child: Child,
    /// What it said on stderr, where that was kept ([`launch`]: a terminal's).
    said: Option<std::fs::File>,
}

impl Group {
    pub fn spawn(command: &mut Command) -> std::io::Result<Group> {
        command
            .process_group(0)
            .spawn()
            .map(|child| Group { child, said: None })
    }

    /// The last line it said on stderr (printable), if it was kept and said anything: why a
    /// terminal that exited at once could not run.
    pub fn last_words(&self) -> Option<String> {
        use std::io::{Seek, SeekFrom};
        let mut file = self.said.as_ref()?;
        file.seek(SeekFrom::Start(0)).ok()?;
        let mut text = Vec::new();
        file.take(1 << 20).read_to_end(&mut text).ok()?;
        let text = String::from_utf8_lossy(&text);
        let line = text.lines().rev().find(|l| !l.trim().is_empty())?;
        Some(flushlab_core::units::printable(line.trim()))
    }

    pub fn pid(&self) -> i32 {
        self.child.id() as i32
    }

    /// Whether it has exited (and was reaped).
    pub fn exited(&mut self) -> bool {
        !matches!(self.child.try_wait(), Ok(None))
    }

    /// Waits up to `limit` for it to exit.
    pub fn wait(&mut self, limit: Duration) -> bool {
        let start = Instant::now();
        while start.elapsed() < limit {
            if self.exited() {
                return true;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        false
    }
}

impl Drop for Group {
    fn drop(&mut self) {
        use flushlab_core::sys::signals::{Signal, signal_group};
        if self.exited() {
            return;
        }
        let pid = self.child.id() as i32;
        let _ = signal_group(pid, Signal::TERM);
        if !self.wait(Duration::from_secs(1)) {
            let _ = signal_group(pid, Signal::KILL);
            let _ = self.child.wait();
        }
    }
}

/// The program's path, or the one line that says which Debian package has it.
pub fn installed(program: &str, package: &str) -> anyhow::Result<std::path::PathBuf> {
    flushlab_core::files::find_program(program.as_ref()).with_context(|| {
        format!("{program} is not installed (Debian package {package}: apt-get install {package})")
    })
}

/// The caller's variables a launched terminal keeps: where programs, configuration and fonts
/// are, and the language.
const KEPT: [&str; 8] = [
    "PATH",
    "HOME",
    "USER",
    "LANG",
    "LC_ALL",
    "LC_CTYPE",
    "XDG_RUNTIME_DIR",
    "XDG_CONFIG_HOME",
];

/// An X server of flushlab's own, on a display nobody uses.
#[derive(Debug)]
pub struct Xvfb {
    pub display: String,
    _server: Group,
}

impl Xvfb {
    /// Starts Xvfb, which picks a free display itself (`-displayfd`: never someone else's),
    /// with a screen large enough for a 200x60 terminal and a 1 ms scheduler interval: with the
    /// default, the observer's reads queue behind the terminal's requests for 5–10 ms and miss
    /// short-lived paints.
    pub fn start() -> anyhow::Result<Xvfb> {
        Xvfb::start_in(None)
    }

    /// [`Xvfb::start`], its screen kept as a file in `fbdir` (`-fbdir`) where the camera reads
    /// it (`painting::camera`).
    pub fn start_in(fbdir: Option<&std::path::Path>) -> anyhow::Result<Xvfb> {
        let program = installed("Xvfb", "xvfb")?;
        // Killed as flushlab ends, SIGKILL too (no drop runs then): its terminal loses its
        // display and exits, and CMD with it.
        let mut command = Command::new(installed("setpriv", "util-linux")?);
        command.args(["--pdeathsig", "KILL", "--"]).arg(program);
        if let Some(fbdir) = fbdir {
            command.arg("-fbdir").arg(fbdir);
        }
        let mut server = Group::spawn(
            command
                .args([
                    "-displayfd",
                    "1",
                    "-screen",
                    "0",
                    "3840x2160x24",
                    "-nolisten",
                    "tcp",
                    "-schedInterval",
                    "1",
                    "-noreset",
                ])
                .stdin(Stdio::null())
                .stdout(Stdio::piped())
                .stderr(Stdio::null()),
        )
        .context("starting Xvfb")?;
        let stdout = server.child.stdout.take().context("Xvfb's stdout")?;
        let number = read_display_number(stdout, Duration::from_secs(10))?;
        Ok(Xvfb {
            display: format!(":{number}"),
            _server: server,
        })
    }

    /// Starts `terminal` on this display: [`launch`].
    pub fn launch(
        &self,
        terminal: Terminal,
        size: (u16, u16),
        command: &[OsString],
        env: &[(String, String)],
    ) -> anyhow::Result<Group> {
        let screen = Screen::X11 {
            display: &self.display,
            own: true,
        };
        launch(screen, (terminal, &[]), size, command, env)
    }
}

/// Where a terminal opens its window.
#[derive(Clone, Copy, Debug)]
pub enum Screen<'a> {
    /// An X display; `own`: flushlab's Xvfb, where alacritty and kitty need Mesa's software
    /// OpenGL.
    X11 { display: &'a str, own: bool },
    /// A Wayland display: the variables that name it (`WAYLAND_DISPLAY`, `XDG_RUNTIME_DIR`);
    /// `own`: flushlab's headless compositor, where kitty and alacritty need Mesa's software
    /// OpenGL; the window's app id.
    Wayland {
        names: &'a [(String, OsString)],
        own: bool,
        app_id: &'a str,
    },
}

/// Starts `terminal` with its `options` on `screen`, `cols`x`rows`, running `command` with
/// `env` added to the few variables it keeps of flushlab's: PATH, HOME, the language,
/// XDG_RUNTIME_DIR.
pub fn launch(
    screen: Screen<'_>,
    (terminal, options): (Terminal, &[TerminalOption]),
    size: (u16, u16),
    command: &[OsString],
    env: &[(String, String)],
) -> anyhow::Result<Group> {
    let (program, package) = terminal.program();
    let path = installed(program, package)?;
    let mut launch = Command::new(path);
    // A known environment: what a terminal needs to start, nothing of the caller's settings (a
    // `SIZE` or `HUD` exported for other reasons would change the run).
    launch.env_clear();
    for var in KEPT {
        if let Some(value) = std::env::var_os(var) {
            launch.env(var, value);
        }
    }
    match screen {
        Screen::X11 { display, own } => {
            if own {
                launch.env("LIBGL_ALWAYS_SOFTWARE", "1");
            }
            launch.env("DISPLAY", display);
        }
        Screen::Wayland { names, own, .. } => {
            if own {
                launch.env("LIBGL_ALWAYS_SOFTWARE", "1");
            }
            launch.envs(names.iter().map(|(k, v)| (k, v)));
        }
    }
    launch
        .args(terminal.args(
            size,
            command,
            match screen {
                Screen::Wayland { app_id, .. } => Some(app_id),
                Screen::X11 { .. } => None,
            },
            options,
        ))
        .envs(env.iter().map(|(k, v)| (k, v)))
        .stdin(Stdio::null())
        .stdout(Stdio::null());
    // Its stderr kept in memory: a terminal that cannot run here says why there.
    let said = std::fs::File::from(rustix::fs::memfd_create(
        "flushlab-terminal-stderr",
        rustix::fs::MemfdFlags::CLOEXEC,
    )?);
    launch.stderr(Stdio::from(said.try_clone()?));
    let mut group = Group::spawn(&mut launch).with_context(|| format!("starting {program}"))?;
    group.said = Some(said);
    Ok(group)
}

/// The display number Xvfb writes on its `-displayfd` once it accepts connections.
fn read_display_number(
    mut from: std::process::ChildStdout,
    limit: Duration,
) -> anyhow::Result<u32> {
    use std::os::fd::AsFd;
    let start = Instant::now();
    let mut text = Vec::new();
    while !text.ends_with(b"\n") {
        let left = limit.saturating_sub(start.elapsed());
        if left.is_zero() {
            bail!("Xvfb did not start in {} s", limit.as_secs());
        }
        let fd = from.as_fd();
        let mut fds = [rustix::event::PollFd::new(
            &fd,
            rustix::event::PollFlags::IN,
        )];
        let timeout = rustix::event::Timespec::try_from(left).unwrap_or(rustix::event::Timespec {
            tv_sec: 1,
            tv_nsec: 0,
        });
        if rustix::event::poll(&mut fds, Some(&timeout)).unwrap_or(0) == 0 {
            continue;
        }
        let mut byte = [0u8; 16];
        match from.read(&mut byte)? {
            0 => bail!(
                "Xvfb exited before it accepted connections (is another X server in the way?)"
            ),
            n => text.extend_from_slice(&byte[..n]),
        }
        if text.len() > 16 {
            break;
        }
    }
    String::from_utf8_lossy(&text).trim().parse().map_err(|_| {
        anyhow::anyhow!(
            "Xvfb said {:?} where a display number was expected",
            String::from_utf8_lossy(&text)
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_missing_program_names_its_package() {
        let e = installed("flushlab-no-such-terminal", "some-package")
            .unwrap_err()
            .to_string();
        assert!(e.contains("Debian package some-package"), "{e}");
    }
}
