//! Signals: which ones end a run, the flags they set for the loops that look at them, and
//! signalling processes and their groups. Process ids are plain `i32`s, as `/proc` and
//! `std::process` give them; an id that names no process is an error, never a panic.

use std::io;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize};

use rustix::process::Pid;
pub use rustix::process::Signal;

/// SIGINT, SIGTERM, SIGQUIT and SIGHUP: each ends a run in order.
fn termination_signals() -> [i32; 4] {
    use signal_hook::consts::{SIGHUP, SIGINT, SIGQUIT, SIGTERM};
    [SIGINT, SIGTERM, SIGQUIT, SIGHUP]
}

/// A number a loop looks at: 0 until a termination signal arrives, then that signal's.
pub fn termination_flag() -> io::Result<Arc<AtomicUsize>> {
    let signal = Arc::new(AtomicUsize::new(0));
    for sig in termination_signals() {
        signal_hook::flag::register_usize(sig, Arc::clone(&signal), sig as usize)?;
    }
    Ok(signal)
}

/// The signals a loop takes as a flag rather than their default action.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Watched {
    /// SIGTSTP: suspend, but only once the terminal is given back.
    Suspend,
    /// SIGWINCH: the terminal's size changed.
    Resize,
}

/// A flag set each time `signal` arrives (the loop clears it).
pub fn flag_on(signal: Watched) -> io::Result<Arc<AtomicBool>> {
    let flag = Arc::new(AtomicBool::new(false));
    let sig = match signal {
        Watched::Suspend => signal_hook::consts::SIGTSTP,
        Watched::Resize => signal_hook::consts::SIGWINCH,
    };
    signal_hook::flag::register(sig, Arc::clone(&flag))?;
    Ok(flag)
}

/// The termination signals, queued from the moment this is made; [`Self::wait`] blocks for
/// the first (for a watchdog thread, which costs nothing until then).
pub struct TerminationSignals(signal_hook::iterator::Signals);

impl TerminationSignals {
    pub fn watch() -> io::Result<TerminationSignals> {
        signal_hook::iterator::Signals::new(termination_signals()).map(TerminationSignals)
    }

    /// The first termination signal's number; `None` if the watch was closed.
    pub fn wait(mut self) -> Option<i32> {
        self.0.forever().next()
    }
}

/// `raw` as a process id: positive (`Pid::from_raw` asserts it is not negative).
pub(crate) fn pid(raw: i32) -> io::Result<Pid> {
    (raw > 0)
        .then(|| Pid::from_raw(raw))
        .flatten()
        .ok_or_else(|| {
            io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("{raw} is not a process id"),
            )
        })
}

/// Sends `signal` to process `to`.
pub fn signal_process(to: i32, signal: Signal) -> io::Result<()> {
    Ok(rustix::process::kill_process(pid(to)?, signal)?)
}

/// Sends `signal` to every process of the group `group` leads.
pub fn signal_group(group: i32, signal: Signal) -> io::Result<()> {
    Ok(rustix::process::kill_process_group(pid(group)?, signal)?)
}

/// Stops this process, as SIGTSTP's default action would; returns once it is continued.
pub fn stop_self() -> io::Result<()> {
    Ok(rustix::process::kill_process(
        rustix::process::getpid(),
        Signal::STOP,
    )?)
}

/// This process's parent now (`None` where the kernel says none: init's children see 0).
pub fn parent() -> Option<i32> {
    rustix::process::getppid().map(Pid::as_raw_pid)
}

/// The kernel sends this process SIGTERM when the thread of `parent` that started it ends
/// (SIGKILL included); if `parent` is already gone, the SIGTERM comes at once.
pub fn terminate_with_parent(parent: i32) -> io::Result<()> {
    rustix::process::set_parent_process_death_signal(Some(Signal::TERM))?;
    if self::parent() != Some(parent) {
        signal_process(std::process::id() as i32, Signal::TERM)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_flag_is_set_by_its_signal() {
        let resized = flag_on(Watched::Resize).unwrap();
        signal_process(std::process::id() as i32, Signal::WINCH).unwrap();
        // Delivered to this process before kill(2) returns, when no thread blocks it.
        let until = std::time::Instant::now() + std::time::Duration::from_secs(5);
        while !resized.load(std::sync::atomic::Ordering::Relaxed) {
            assert!(
                std::time::Instant::now() < until,
                "SIGWINCH never set its flag"
            );
            std::thread::yield_now();
        }
    }

    #[test]
    fn a_process_id_that_is_none_is_an_error() {
        assert!(signal_group(0, Signal::TERM).is_err());
        assert!(signal_process(-5, Signal::TERM).is_err());
        assert_eq!(parent(), Some(std::os::unix::process::parent_id() as i32));
    }
}
