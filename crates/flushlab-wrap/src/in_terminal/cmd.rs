//! CMD as the terminal runs it: its command line (through wrap's env-file loader, with the
//! observer's variables and without the terminal's own, none of them on the line), its guard (ended when dropped), and whether it is asleep or
//! gone — read from the kernel, for CMD is the terminal's child, not wrap's.

use std::ffi::OsString;
use std::path::Path;
use std::time::{Duration, Instant};

use anyhow::Context;

use crate::observers::Observation;

/// CMD, started by the terminal: ended (TERM, KILL after a grace) when dropped.
pub(super) struct Cmd(pub(super) i32);

impl Drop for Cmd {
    fn drop(&mut self) {
        use flushlab_core::sys::signals::{Signal, signal_process};
        if gone(self.0) {
            return;
        }
        let _ = signal_process(self.0, Signal::TERM);
        let until = Instant::now() + crate::run::watch::GRACE;
        while Instant::now() < until && !gone(self.0) {
            std::thread::sleep(Duration::from_millis(5));
        }
        if !gone(self.0) {
            let _ = signal_process(self.0, Signal::KILL);
        }
    }
}

/// The command the terminal runs: CMD through wrap's [`env_file`](crate::in_terminal::env_file)
/// loader, so that the terminal itself runs without the observer and with a known environment,
/// and no variable is on a command line; CMD with wrap's variables (as a shell in the terminal
/// would pass them on) but for those the terminal sets, then the observer's. Their file is in
/// `scratch`, private to wrap's user.
pub(super) fn through_env(
    inside: &Observation,
    scratch: &Path,
    program: &Path,
    args: &[OsString],
) -> anyhow::Result<Vec<OsString>> {
    let passed = std::env::vars_os().filter(|(name, _)| !terminal_sets(name));
    let (program, args) = inside.command(program, args)?;
    crate::in_terminal::env_file::words(
        (scratch, "cmd.env"),
        passed.chain(inside.environment()),
        &program,
        &args,
    )
    .context("writing CMD's environment for the terminal")
}

/// Whether a variable is the terminal's to set (its type, its window, its size), not wrap's
/// to pass on.
pub(super) fn terminal_sets(name: &std::ffi::OsStr) -> bool {
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
pub(super) fn gone(pid: i32) -> bool {
    flushlab_core::sys::process::thread_states(pid, false)
        .is_none_or(|threads| threads.iter().all(|t| t.state == b'Z'))
}

/// Whether `pid`'s threads are all asleep.
pub(super) fn asleep(pid: i32) -> bool {
    flushlab_core::sys::process::thread_states(pid, false)
        .is_some_and(|threads| threads.iter().all(|t| t.state == b'S'))
}
