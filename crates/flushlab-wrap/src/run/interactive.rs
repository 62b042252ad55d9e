//! The user's terminal, when wrap runs interactive: the keys typed and resizes passed on to CMD
//! as they come, and the terminal given back when CMD is done.

use std::io::{self, Write};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::run::own_writes::OwnWrites;
use flushlab_core::detect::finder::FrameFinder;
use flushlab_core::sys::pty::Pty;

/// Interactive, CMD done: undoes the modes CMD left set (and only those), asks the terminal
/// whether it supports synchronized output when that matters (CMD drew frames without markers),
/// gives the terminal's mode back, and moves to a new line if CMD left the cursor mid-line, so
/// the report starts below CMD's output. Returns the terminal's answer. A terminal that stopped
/// reading gets its mode back (that waits for nothing) and no bytes.
pub(crate) fn give_back(
    session: flushlab_terminals::session::TerminalSession,
    finder: &FrameFinder,
    stalled: bool,
) -> bool {
    if stalled {
        drop(session);
        return false;
    }
    let undo = finder.screen().modes.undo();
    if !undo.is_empty()
        && let Ok(mut out) = flushlab_core::writer_mode::Stream::Stdout.raw()
    {
        let _ = out.write_all(&undo);
    }
    let ask = finder.sync().begins() == 0 && finder.frames().frames.is_some();
    let syncs = ask && terminal_supports_sync();
    drop(session);
    if !finder.screen().at_line_start {
        let _ = io::stderr().write_all(b"\r\n");
    }
    syncs
}

/// Asks the terminal (DECRQM ?2026) whether it supports synchronized output; waits at most
/// 200 ms for the answer (a terminal that does not know the query says nothing).
fn terminal_supports_sync() -> bool {
    let Ok(mut keyboard) = flushlab_terminals::input::Keyboard::open() else {
        return false;
    };
    if io::stdout()
        .write_all(b"\x1b[?2026$p")
        .and_then(|()| io::stdout().flush())
        .is_err()
    {
        return false;
    }
    let until = Instant::now() + Duration::from_millis(200);
    while Instant::now() < until {
        for input in keyboard.pending_input().unwrap_or_default() {
            if let flushlab_terminals::input::Input::PrivateMode { mode: 2026, status } = input {
                // 1 set, 2 reset: known; 0 not recognized, 4 permanently reset.
                return matches!(status, 1 | 2);
            }
        }
        keyboard.wait(Duration::from_millis(5));
    }
    false
}

/// Interactive: the user's keys go to CMD as they come, and a resize of the user's terminal
/// becomes a resize of CMD's (the kernel sends CMD its SIGWINCH) and of the frame finder's model.
pub(crate) fn forward_keys_and_resizes(
    pty: &Pty,
    stop: &Arc<AtomicBool>,
    finder: &Arc<Mutex<FrameFinder>>,
    own: &Arc<OwnWrites>,
    recording: &Arc<flushlab_core::detect::recording::Recording>,
) -> io::Result<std::thread::JoinHandle<()>> {
    let resized =
        flushlab_core::sys::signals::flag_on(flushlab_core::sys::signals::Watched::Resize)?;
    let master = pty.master.try_clone()?;
    let (stop, finder, own) = (Arc::clone(stop), Arc::clone(finder), Arc::clone(own));
    let recording = Arc::clone(recording);
    flushlab_core::sys::spawn_thread("wrap-input", move || {
        use rustix::event::{PollFd, PollFlags, Timespec, poll};
        let stdin = rustix::stdio::stdin();
        let mut buf = [0u8; 4096];
        let tick = Timespec {
            tv_sec: 0,
            tv_nsec: 50_000_000,
        };
        while !stop.load(Ordering::Relaxed) {
            if resized.swap(false, Ordering::Relaxed)
                && let Ok((cols, rows)) = flushlab_core::sys::window_size(io::stdout())
            {
                let _ = flushlab_core::sys::set_window_size(&master, (cols, rows));
                finder
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .resize(cols, rows);
            }
            let mut fds = [PollFd::new(&stdin, PollFlags::IN)];
            if !matches!(poll(&mut fds, Some(&tick)), Ok(1..)) {
                continue;
            }
            match rustix::io::read(stdin, &mut buf) {
                Ok(0) | Err(_) => break,
                Ok(n) => {
                    // A read is a key as the terminal sent it (a paste: one read); its
                    // kind only is kept, never what was typed.
                    let key = flushlab_core::detect::timeline::SentKey::now(
                        flushlab_core::keyscript::typed_kind(&buf[..n]),
                        n,
                    );
                    if own.write_all(&master, &buf[..n]).is_err() {
                        break;
                    }
                    recording.key_sent(key);
                }
            }
        }
    })
}
