//! Taking the terminal over and always giving it back.
//!
//! The terminal is restored (raw mode off, main screen back, cursor shown) by [`restore`], which
//! is idempotent and runs from three places: dropping the [`TerminalSession`] (normal exit, an
//! error, a signal seen by the loop), and the panic hook, before the panic message is printed so
//! that the message lands on the main screen where the user can read it.

use std::io::{self, Write};
use std::sync::Mutex;
use std::sync::Once;

use ratatui::crossterm::terminal::{disable_raw_mode, enable_raw_mode};

use flushlab_core::writer_mode::Stream;

/// Alternate screen on, cursor hidden, screen cleared.
const ENTER: &[u8] = b"\x1b[?1049h\x1b[?25l\x1b[2J";
/// Ends a synchronized update that an error may have left open, resets colours, leaves the
/// alternate screen and shows the cursor.
pub const LEAVE: &[u8] = b"\x1b[?2026l\x1b[0m\x1b[?1049l\x1b[?25h";

/// The stream that holds the terminal while a session is active, and whether the session took
/// the screen over too (so that giving it back leaves the alternate screen).
static ACTIVE: Mutex<Option<(Stream, bool)>> = Mutex::new(None);
static PANIC_HOOK: Once = Once::new();

#[derive(Debug)]
pub struct TerminalSession {
    _private: (),
}

impl TerminalSession {
    /// Raw mode on, alternate screen on `stream`, cursor hidden.
    pub fn enter(stream: Stream) -> io::Result<Self> {
        let session = TerminalSession::hold(stream, true)?;
        stream.raw()?.write_all(ENTER)?;
        Ok(session)
    }

    /// Raw mode only, for a program that draws on its own (`flushlab wrap`): giving it back
    /// restores the terminal's mode and writes nothing, so a program that never left the main
    /// screen (`ls`) is not disturbed; wrap undoes what the program itself set.
    pub fn raw_only(stream: Stream) -> io::Result<Self> {
        TerminalSession::hold(stream, false)
    }

    fn hold(stream: Stream, screen: bool) -> io::Result<Self> {
        PANIC_HOOK.call_once(|| {
            let previous = std::panic::take_hook();
            std::panic::set_hook(Box::new(move |info| {
                restore();
                previous(info);
            }));
        });
        enable_raw_mode()?;
        *ACTIVE.lock().unwrap_or_else(|e| e.into_inner()) = Some((stream, screen));
        Ok(TerminalSession { _private: () })
    }
}

impl Drop for TerminalSession {
    fn drop(&mut self) {
        restore();
    }
}

/// Whether a shell's job control could resume this process once stopped: its process group is
/// not orphaned (POSIX), i.e. the first ancestor outside the group is in the same session (a
/// shell). A session leader (`xterm -e flushlab`, `ssh -t host flushlab`, a program under
/// `flushlab wrap`) has no such ancestor: stopped, it would stay stopped for good. Ancestors are
/// followed through /proc; other members of the group that are not ancestors are not looked at.
pub fn resumable() -> bool {
    use flushlab_core::sys::process_ids;
    // Ids of 0 lie outside this PID namespace: nothing here can tell whether a shell waits there.
    let Some(own) = process_ids(None).filter(|ids| ids.group > 0 && ids.session > 0) else {
        return false;
    };
    let mut ids = own;
    // A chain of ancestors is short; the bound guards against a /proc that lies.
    for _ in 0..64 {
        if ids.parent <= 0 {
            return false;
        }
        let Some(parent) = process_ids(Some(ids.parent)) else {
            return false;
        };
        if parent.group != own.group {
            return parent.session == own.session;
        }
        ids = parent;
    }
    false
}

/// Job control: gives the terminal back, stops this process (as SIGTSTP's default action would),
/// and once continued (`fg`, SIGCONT) takes the terminal over again; the caller redraws. Returns
/// `false`, and stops nothing, when nothing could continue it (see [`resumable`]): what vim and
/// less do for an orphaned process group.
pub fn suspend() -> io::Result<bool> {
    if !resumable() {
        return Ok(false);
    }
    let held = *ACTIVE.lock().unwrap_or_else(|e| e.into_inner());
    restore();
    flushlab_core::sys::signals::stop_self()?;
    // Here again after SIGCONT.
    if let Some((stream, screen)) = held {
        enable_raw_mode()?;
        *ACTIVE.lock().unwrap_or_else(|e| e.into_inner()) = Some((stream, screen));
        if screen {
            stream.raw()?.write_all(ENTER)?;
        }
    }
    Ok(true)
}

/// SIGTSTP from outside (`kill -TSTP`, or Ctrl-Z where the terminal is not in raw mode) sets
/// this flag instead of stopping the process with the terminal still taken over.
pub fn watch_suspend() -> io::Result<std::sync::Arc<std::sync::atomic::AtomicBool>> {
    flushlab_core::sys::signals::flag_on(flushlab_core::sys::signals::Watched::Suspend)
}

/// Turns SIGINT, SIGTERM, SIGQUIT and SIGHUP into a number the caller's loop looks at (0 while
/// none arrived), so that every way out goes through the same orderly exit.
pub fn watch_termination_signals() -> io::Result<std::sync::Arc<std::sync::atomic::AtomicUsize>> {
    flushlab_core::sys::signals::termination_flag()
}

/// How long a run may take to end in order after a termination signal before
/// [`end_stuck_runs`] ends it.
pub const SIGNAL_GRACE: std::time::Duration = std::time::Duration::from_millis(500);

/// Makes every termination signal end the process within [`SIGNAL_GRACE`], even when the
/// orderly exit cannot happen: a write(2) blocked on a reader that stopped reading (a full pipe,
/// a terminal stopped with Ctrl-S or suspended) is restarted after the signal handler returns, so
/// the loop never sees the flag [`watch_termination_signals`] set. A thread waits for the signal
/// (it costs nothing until then), gives the grace, then restores the terminal's mode (termios:
/// the escape sequences would block on the same stalled reader) and exits 128+N without
/// flushing anything. Not for the bench, whose children have grace periods of their own.
pub fn end_stuck_runs() -> io::Result<()> {
    end_stuck_runs_after(SIGNAL_GRACE, || {})
}

/// [`end_stuck_runs`] with another grace, and `last_words` run just before the exit (wrap ends
/// the program it runs there, which has grace periods of its own).
pub fn end_stuck_runs_after(
    grace: std::time::Duration,
    last_words: impl FnOnce() + Send + 'static,
) -> io::Result<()> {
    let signals = flushlab_core::sys::signals::TerminationSignals::watch()?;
    flushlab_core::sys::spawn_thread("stuck-run-watchdog", move || {
        let Some(signal) = signals.wait() else {
            return;
        };
        std::thread::sleep(grace);
        // Still here: the main thread is stuck. Never wait for a lock it may hold.
        if let Ok(active) = ACTIVE.try_lock()
            && active.is_some()
        {
            let _ = disable_raw_mode();
        }
        last_words();
        let code = flushlab_core::outcome::Outcome::Signal(signal as usize).exit_code();
        std::process::exit(i32::from(code));
    })?;
    Ok(())
}

/// Gives the terminal back, if a session holds it. Errors are ignored: the reader may be gone,
/// and there is nobody left to tell.
pub fn restore() {
    let Some((stream, screen)) = ACTIVE.lock().unwrap_or_else(|e| e.into_inner()).take() else {
        return;
    };
    let _ = disable_raw_mode();
    if screen && let Ok(mut raw) = stream.raw() {
        let _ = raw.write_all(LEAVE);
    }
}

/// A bench's child (`--exit-with-parent PID`): the kernel sends this process SIGTERM when the
/// bench's thread that started it ends, SIGKILL included, so that no run outlives the bench; the
/// run then ends as for any SIGTERM (wrap ends CMD's whole tree). If the bench is already gone
/// (this process was handed to another parent before asking), the SIGTERM comes at once.
pub fn end_with_parent(parent: i32) -> io::Result<()> {
    flushlab_core::sys::signals::terminate_with_parent(parent)
}
