//! Keys from the terminal, read without blocking.
//!
//! flushlab reads its own input instead of using crossterm's event source because that source
//! (crossterm 0.29, epoll in edge-triggered mode) returns after the first 1 KiB of a burst and
//! leaves the rest in the kernel until another key arrives: a fast typist or a test that sends
//! ten thousand keys at once would find the later keys, `q` included, ignored (crossterm PR
//! #1057). Here a level-triggered poll(2) is asked, and the terminal read until it is empty. The
//! keys flushlab binds are plain bytes and the two arrows a lesson steps with; other escape
//! sequences (function keys, the other arrows) are skipped.

use std::fs::File;
use std::io;
use std::os::fd::{AsFd, BorrowedFd};

use ratatui::crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use rustix::event::{PollFd, PollFlags, poll};

/// The terminal's input side: stdin when it is the terminal, else /dev/tty, opened once.
pub struct Keyboard {
    tty: Option<File>,
}

/// When a key reached the terminal's input, as opposed to when the explorer read it: the frame
/// loop reads keys between frames, so a key typed during a 300 ms frame waits for its end. A
/// thread of its own sleeps in poll(2) on a duplicate of the input and notes the moment input
/// became readable; the loop takes that moment when it reads the keys. While a moment waits to
/// be taken the thread looks again only once a millisecond (input stays readable until read).
pub struct KeyClock {
    epoch: std::time::Instant,
    /// Nanoseconds after `epoch` the pending input arrived; 0 when none is pending.
    arrived: std::sync::Arc<std::sync::atomic::AtomicU64>,
    stop: std::sync::Arc<std::sync::atomic::AtomicBool>,
}

impl KeyClock {
    pub fn start(keyboard: &Keyboard) -> io::Result<KeyClock> {
        use std::sync::Arc;
        use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
        let input = keyboard.fd().try_clone_to_owned()?;
        let epoch = std::time::Instant::now();
        let arrived = Arc::new(AtomicU64::new(0));
        let stop = Arc::new(AtomicBool::new(false));
        let (noted, stopped) = (Arc::clone(&arrived), Arc::clone(&stop));
        flushlab_core::sys::spawn_thread("key-clock", move || {
            let tick = rustix::event::Timespec {
                tv_sec: 0,
                tv_nsec: 50_000_000,
            };
            while !stopped.load(Ordering::Relaxed) {
                if noted.load(Ordering::Relaxed) != 0 {
                    std::thread::sleep(std::time::Duration::from_millis(1));
                    continue;
                }
                let mut fds = [PollFd::new(&input, PollFlags::IN)];
                match poll(&mut fds, Some(&tick)) {
                    Ok(1..) if fds[0].revents().contains(PollFlags::IN) => {
                        let after = epoch.elapsed().as_nanos().max(1);
                        noted.store(u64::try_from(after).unwrap_or(u64::MAX), Ordering::Relaxed);
                    }
                    // The input is gone (hung up): nothing more will arrive.
                    Ok(1..) => break,
                    _ => {}
                }
            }
        })?;
        Ok(KeyClock {
            epoch,
            arrived,
            stop,
        })
    }

    /// When the input read just now arrived (`None` if the thread had not seen it yet).
    pub fn take(&self) -> Option<std::time::Instant> {
        use std::sync::atomic::Ordering;
        match self.arrived.swap(0, Ordering::Relaxed) {
            0 => None,
            ns => Some(self.epoch + std::time::Duration::from_nanos(ns)),
        }
    }
}

impl Drop for KeyClock {
    fn drop(&mut self) {
        self.stop.store(true, std::sync::atomic::Ordering::Relaxed);
    }
}

impl Keyboard {
    pub fn open() -> io::Result<Keyboard> {
        use std::io::IsTerminal;
        if io::stdin().is_terminal() {
            Ok(Keyboard { tty: None })
        } else {
            Ok(Keyboard {
                tty: Some(File::open("/dev/tty")?),
            })
        }
    }

    fn fd(&self) -> BorrowedFd<'_> {
        match &self.tty {
            Some(file) => file.as_fd(),
            None => rustix::stdio::stdin(),
        }
    }

    /// Waits up to `timeout` for input; true when some is there to read. Interrupted by a
    /// signal, it returns early (false), so the caller looks at its signal flag at once.
    pub fn wait(&self, timeout: std::time::Duration) -> bool {
        let fd = self.fd();
        let mut fds = [PollFd::new(&fd, PollFlags::IN)];
        let timeout = rustix::event::Timespec {
            tv_sec: timeout.as_secs() as i64,
            tv_nsec: i64::from(timeout.subsec_nanos()),
        };
        matches!(poll(&mut fds, Some(&timeout)), Ok(1..))
    }

    /// Every key already typed; never blocks. Terminal replies are dropped.
    pub fn pending(&mut self) -> io::Result<Vec<KeyEvent>> {
        Ok(self
            .pending_input()?
            .into_iter()
            .filter_map(Input::key)
            .collect())
    }

    /// Every key typed and every terminal reply received so far; never blocks.
    pub fn pending_input(&mut self) -> io::Result<Vec<Input>> {
        let mut bytes = Vec::new();
        let mut buf = [0u8; 4096];
        let fd = self.fd();
        loop {
            let mut fds = [PollFd::new(&fd, PollFlags::IN)];
            let zero = rustix::event::Timespec {
                tv_sec: 0,
                tv_nsec: 0,
            };
            // A signal (SIGWINCH on every resize) can interrupt either call: ask again.
            match poll(&mut fds, Some(&zero)) {
                Ok(0) => break,
                Ok(_) => {}
                Err(rustix::io::Errno::INTR) => continue,
                Err(e) => return Err(e.into()),
            }
            if fds[0]
                .revents()
                .intersects(PollFlags::HUP | PollFlags::ERR | PollFlags::NVAL)
            {
                // A hung-up terminal: the same EIO its output side gives, so the run ends as
                // one whose reader went away (exit 3), wherever it noticed.
                return Err(flushlab_core::outcome::mark_reader_gone(
                    rustix::io::Errno::IO.into(),
                ));
            }
            // Raw mode: a read returns what is there, at least one byte, without waiting.
            let n = match rustix::io::read(fd, &mut buf) {
                Ok(n) => n,
                Err(rustix::io::Errno::INTR) => continue,
                Err(e) => return Err(e.into()),
            };
            if n == 0 {
                break;
            }
            bytes.extend_from_slice(&buf[..n]);
        }
        // An escape sequence cut in two by the terminal or the line (an arrow key's ESC, then
        // `[A` 20 ms later) is waited for, briefly, so that its ESC never reads as Esc (quit).
        let deadline = std::time::Instant::now() + ESCAPE_WAIT;
        while unfinished_escape(&bytes) {
            let left = deadline.saturating_duration_since(std::time::Instant::now());
            if left.is_zero() || !self.wait(left) {
                break;
            }
            match rustix::io::read(fd, &mut buf) {
                Ok(0) => break,
                Ok(n) => bytes.extend_from_slice(&buf[..n]),
                Err(rustix::io::Errno::INTR) => continue,
                Err(e) => return Err(e.into()),
            }
        }
        Ok(parse_input(&bytes))
    }
}

/// How long the rest of an escape sequence may take to arrive: a lone ESC is the Esc key only
/// after this (vim's `ttimeoutlen` is 100 ms by default; ssh splits rarely take longer).
const ESCAPE_WAIT: std::time::Duration = std::time::Duration::from_millis(60);

/// Whether `bytes` end inside an escape sequence: a lone ESC, `ESC [` or `ESC O` without its
/// final byte.
pub fn unfinished_escape(bytes: &[u8]) -> bool {
    let Some(start) = bytes.iter().rposition(|&b| b == 0x1b) else {
        return false;
    };
    match &bytes[start + 1..] {
        [] | [b'O'] => true,
        [b'[', rest @ ..] => !rest.iter().any(|b| (0x40..=0x7e).contains(b)),
        _ => false,
    }
}

/// What arrives from the terminal: keys, and replies to queries.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Input {
    Key(KeyEvent),
    /// Cursor position report (`CSI row ; col R`), the answer to `CSI 6 n`.
    CursorPosition {
        row: u16,
        col: u16,
    },
    /// DECRPM (`CSI ? mode ; status $ y`), the answer to DECRQM `CSI ? mode $ p`.
    PrivateMode {
        mode: u16,
        status: u8,
    },
    /// A DCS reply's text, e.g. XTVERSION's `>|xterm(379)`.
    DeviceString(String),
    /// Device attributes: the answer to DA1 (`CSI c`, `secondary` false: `CSI ? 64;1;2 c`) or
    /// DA2 (`CSI > c`, `secondary` true: `CSI > 85;95;0 c`), parameters as sent.
    DeviceAttributes {
        secondary: bool,
        params: String,
    },
}

impl Input {
    pub fn key(self) -> Option<KeyEvent> {
        match self {
            Input::Key(key) => Some(key),
            _ => None,
        }
    }
}

/// The keys in raw-mode input bytes (see [`parse_input`]).
pub fn parse_keys(bytes: &[u8]) -> Vec<KeyEvent> {
    parse_input(bytes)
        .into_iter()
        .filter_map(Input::key)
        .collect()
}

/// A CSI sequence's parameters, if it is one of the replies flushlab asks for.
fn csi_reply(body: &[u8], last: u8) -> Option<Input> {
    let text = std::str::from_utf8(body).ok()?;
    match last {
        b'R' => {
            let (row, col) = text.split_once(';')?;
            Some(Input::CursorPosition {
                row: row.parse().ok()?,
                col: col.parse().ok()?,
            })
        }
        b'c' => {
            let (secondary, params) = match text.split_at_checked(1)? {
                ("?", params) => (false, params),
                (">", params) => (true, params),
                _ => return None,
            };
            Some(Input::DeviceAttributes {
                secondary,
                params: params.to_owned(),
            })
        }
        b'y' => {
            let (mode, status) = text.strip_prefix('?')?.strip_suffix('$')?.split_once(';')?;
            Some(Input::PrivateMode {
                mode: mode.parse().ok()?,
                status: status.parse().ok()?,
            })
        }
        _ => None,
    }
}

/// Turns raw-mode input bytes into keys (printable ASCII, Tab, Enter, Ctrl+letter, a lone Esc)
/// and terminal replies; other escape sequences and non-ASCII text are skipped.
pub fn parse_input(bytes: &[u8]) -> Vec<Input> {
    let key = |code| Input::Key(KeyEvent::new(code, KeyModifiers::NONE));
    let mut keys = Vec::new();
    let mut i = 0;
    while i < bytes.len() {
        let b = bytes[i];
        i += 1;
        match b {
            0x1b => match bytes.get(i) {
                None => keys.push(key(KeyCode::Esc)),
                // CSI: parameters and intermediates up to a final byte in @..~.
                Some(b'[') => {
                    i += 1;
                    let start = i;
                    while i < bytes.len() && !(0x40..=0x7e).contains(&bytes[i]) {
                        i += 1;
                    }
                    match (bytes.get(i), i == start) {
                        // The plain arrows a lesson steps with (Ctrl+→ and the like are not).
                        (Some(b'C'), true) => keys.push(key(KeyCode::Right)),
                        (Some(b'D'), true) => keys.push(key(KeyCode::Left)),
                        (Some(&last), _) => keys.extend(csi_reply(&bytes[start..i], last)),
                        (None, _) => {}
                    }
                    i += 1;
                }
                // SS3 (F1–F4, keypad): one more byte.
                Some(b'O') => i += 2,
                // DCS, OSC, APC, PM (terminal replies such as XTVERSION or colour queries): up to
                // the string terminator, ESC \ or BEL, so that their text never becomes keys.
                Some(&kind @ (b'P' | b']' | b'_' | b'^')) => {
                    i += 1;
                    let start = i;
                    while i < bytes.len()
                        && bytes[i] != 0x07
                        && !(bytes[i] == 0x1b && bytes.get(i + 1) == Some(&b'\\'))
                    {
                        i += 1;
                    }
                    if kind == b'P' {
                        let text = String::from_utf8_lossy(&bytes[start..i.min(bytes.len())]);
                        keys.push(Input::DeviceString(text.into_owned()));
                    }
                    i += if bytes.get(i) == Some(&0x07) { 1 } else { 2 };
                }
                // Esc then a key: Alt+key, unbound.
                Some(_) => i += 1,
            },
            b'\t' => keys.push(key(KeyCode::Tab)),
            b'\r' | b'\n' => keys.push(key(KeyCode::Enter)),
            0x01..=0x1a => {
                let letter = char::from(b'a' + b - 1);
                keys.push(Input::Key(KeyEvent::new(
                    KeyCode::Char(letter),
                    KeyModifiers::CONTROL,
                )));
            }
            0x20..=0x7e => keys.push(key(KeyCode::Char(char::from(b)))),
            0x7f => keys.push(key(KeyCode::Backspace)),
            _ => {}
        }
    }
    keys
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_split_escape_sequence_is_waited_for() {
        assert!(unfinished_escape(b"\x1b"));
        assert!(unfinished_escape(b"ab\x1b["));
        assert!(unfinished_escape(b"\x1b[1;"));
        assert!(unfinished_escape(b"\x1bO"));
        assert!(!unfinished_escape(b"\x1b[A"));
        assert!(!unfinished_escape(b"\x1bf"));
        assert!(!unfinished_escape(b"q"));
        // Once whole, an arrow is no Esc.
        assert!(!parse_keys(b"\x1b[A").iter().any(|k| k.code == KeyCode::Esc));
    }
    #[test]
    fn replies_are_recognised() {
        assert_eq!(
            parse_input(
                b"\x1b[12;40Rq\x1b[?2026;2$y\x1bP>|xterm(379)\x1b\\\x1b[>85;95;0c\x1b[?64;1c"
            ),
            [
                Input::CursorPosition { row: 12, col: 40 },
                Input::Key(KeyEvent::new(KeyCode::Char('q'), KeyModifiers::NONE)),
                Input::PrivateMode {
                    mode: 2026,
                    status: 2
                },
                Input::DeviceString(">|xterm(379)".into()),
                Input::DeviceAttributes {
                    secondary: true,
                    params: "85;95;0".into()
                },
                Input::DeviceAttributes {
                    secondary: false,
                    params: "64;1".into()
                },
            ]
        );
    }

    #[test]
    fn bursts_of_any_size_are_all_keys() {
        let burst = vec![b' '; 10_000];
        assert_eq!(parse_keys(&burst).len(), 10_000);
        assert_eq!(parse_keys("é ü".as_bytes()).len(), 1);
    }
}
