//! How a writer waits when the terminal has no room for its bytes.
//!
//! Every writer mode writes with blocking write(2), as std does: when a pty is full the writer
//! sleeps in the kernel and runs again once the reader has drained part of it and the
//! scheduler has got round to it. Where idle CPUs halt at once (a KVM guest with
//! `haltpoll.guest_halt_poll_ns=0`, as the machines these figures come from), each such wake is
//! an exit to the host, and a writer that sleeps gets about half of what the pty and its
//! reader accept (`cargo run --release --example writer_wait`, docs/results/writer-wait.md).
//! [`Wait`] names the alternatives, so that a bench can show what the sleeping costs rather
//! than say so; [`Waiting`] is the one writer that implements them, the transport ceiling's
//! included.

use std::io::{self, Write};
use std::os::fd::AsFd;
use std::sync::mpsc::{Receiver, RecvError, TryRecvError};
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

/// How a writer waits for room.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "clap", derive(clap::ValueEnum))]
#[serde(rename_all = "lowercase")]
pub enum Wait {
    /// In write(2), as std's handles do: the kernel puts the writer to sleep.
    #[default]
    Sleep,
    /// Polls for room without blocking, yielding the core between polls, for up to 100 µs,
    /// then sleeps in write(2); in writes of at most 4 KiB, so that a whole frame's write does
    /// not sleep in the kernel past the first full buffer. The thread modes' painter and writer
    /// wait for each other the same way. The adaptive spinning of a mutex, applied to a
    /// terminal.
    Poll,
    /// Polls until there is room, never sleeping (the transport ceiling's writer), in writes
    /// of at most 4 KiB; the thread modes' painter and writer poll for each other too. Burns a
    /// core while the reader is behind.
    Spin,
}

/// How long [`Wait::Poll`] polls before it sleeps: about what a wake from a halted vCPU costs
/// here, the break-even of spinning against sleeping (writer_wait: polling 100 µs then
/// sleeping got a spinner's rate for less CPU).
pub const POLL_BUDGET: Duration = Duration::from_micros(100);

/// The largest write a polling writer makes: a pty reports room once its buffer is all but
/// empty, and its reader's side takes 4 KiB at a time, so larger writes would sleep in the
/// kernel for the rest.
pub const CHUNK: usize = 4096;

impl Wait {
    pub const ALL: [Wait; 3] = [Wait::Sleep, Wait::Poll, Wait::Spin];

    pub fn name(self) -> &'static str {
        match self {
            Wait::Sleep => "sleep",
            Wait::Poll => "poll",
            Wait::Spin => "spin",
        }
    }

    /// How long to poll before sleeping; `None`: forever.
    fn budget(self) -> Option<Duration> {
        match self {
            Wait::Sleep => Some(Duration::ZERO),
            Wait::Poll => Some(POLL_BUDGET),
            Wait::Spin => None,
        }
    }

    /// What the writers did, for a results footer: "writers poll 100 µs for room, then
    /// sleep"; `None` for [`Wait::Sleep`], what every writer does unless told otherwise.
    pub fn describe(self) -> Option<String> {
        match self {
            Wait::Sleep => None,
            Wait::Poll => Some(format!(
                "writers poll {} µs for room, then sleep, in writes of {} KiB at most; \
                 the thread modes' painter and writer wait for each other the same way",
                POLL_BUDGET.as_micros(),
                CHUNK >> 10
            )),
            Wait::Spin => Some(format!(
                "writers poll for room and never sleep, in writes of {} KiB at most; \
                 the thread modes' painter and writer poll for each other too",
                CHUNK >> 10
            )),
        }
    }
}

/// Polls `fd` for room with a zero timeout, yielding the core between polls, until there is
/// room (or an error the write itself will report) or `budget` is over (`None`: never).
///
/// It yields because the reader it waits for may be on the same core: pinned there, a writer
/// that polled without yielding fell to 34 fps at 200x60, below every sleeping writer (107–148);
/// yielding, 198. Where the two have a core each, not yielding is faster (359 against 270 in the
/// same run), but a writer cannot choose where the scheduler puts them.
pub fn wait_for_room(fd: impl AsFd, budget: Option<Duration>) {
    use rustix::event::{PollFd, PollFlags, Timespec, poll};
    let zero = Timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    let start = Instant::now();
    loop {
        let mut fds = [PollFd::new(&fd, PollFlags::OUT)];
        match poll(&mut fds, Some(&zero)) {
            Ok(0) | Err(rustix::io::Errno::INTR) => {
                if budget.is_some_and(|budget| start.elapsed() >= budget) {
                    return;
                }
                std::thread::yield_now();
            }
            _ => return,
        }
    }
}

/// Receives from `from`, waiting as `wait` says: [`Wait::Sleep`] is std's `recv` (a futex
/// sleep once its own brief spin is over); the others try, yielding the core between tries, for
/// their budget, then sleep in `recv`. The thread modes' painter and writer wait for each other
/// through channels, and a futex wake costs a halted vCPU's wake like the pty's does: a writer
/// that polled the pty but slept for its next frame still paid one a frame (lean's thread mode
/// at 80x24, `--wait poll`: 0.41–0.58 of the ceiling sleeping at the hand-off, 0.75–0.78
/// polling it, in single benches on a quiet machine).
pub fn receive<T>(from: &Receiver<T>, wait: Wait) -> Result<T, RecvError> {
    if wait != Wait::Sleep {
        let budget = wait.budget();
        let start = Instant::now();
        loop {
            match from.try_recv() {
                Ok(value) => return Ok(value),
                Err(TryRecvError::Disconnected) => return Err(RecvError),
                Err(TryRecvError::Empty) => {
                    if budget.is_some_and(|budget| start.elapsed() >= budget) {
                        break;
                    }
                    std::thread::yield_now();
                }
            }
        }
    }
    from.recv()
}

/// A writer that waits for room as [`Wait`] says before each write(2) it makes.
pub struct Waiting<W> {
    inner: W,
    wait: Wait,
    chunk: usize,
}

impl<W: Write + AsFd> Waiting<W> {
    /// Writes of at most [`CHUNK`] bytes unless `wait` is [`Wait::Sleep`].
    pub fn new(inner: W, wait: Wait) -> Self {
        let chunk = if wait == Wait::Sleep {
            usize::MAX
        } else {
            CHUNK
        };
        Waiting { inner, wait, chunk }
    }

    /// Writes as large as the caller makes them: the transport ceiling chooses its own sizes.
    pub fn unchunked(inner: W, wait: Wait) -> Self {
        Waiting {
            inner,
            wait,
            chunk: usize::MAX,
        }
    }
}

impl<W: Write + AsFd> Write for Waiting<W> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        if self.wait != Wait::Sleep {
            wait_for_room(&self.inner, self.wait.budget());
        }
        self.inner.write(&buf[..buf.len().min(self.chunk)])
    }

    fn flush(&mut self) -> io::Result<()> {
        self.inner.flush()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    use std::fs::File;
    use std::io::Read;

    fn pipe() -> (File, File) {
        let (read, write) = io::pipe().unwrap();
        (
            File::from(std::os::fd::OwnedFd::from(read)),
            File::from(std::os::fd::OwnedFd::from(write)),
        )
    }

    #[test]
    fn polling_writers_write_in_chunks_in_order_and_sleepers_as_asked() {
        let bytes: Vec<u8> = (0..10_000u32).map(|i| (i % 251) as u8).collect();
        for wait in Wait::ALL {
            let (mut read, write) = pipe();
            let mut writer = Waiting::new(write, wait);
            let mut sizes = Vec::new();
            let mut rest = &bytes[..];
            while !rest.is_empty() {
                let n = writer.write(rest).unwrap();
                sizes.push(n);
                rest = &rest[n..];
            }
            drop(writer);
            let mut got = Vec::new();
            read.read_to_end(&mut got).unwrap();
            assert_eq!(got, bytes, "{wait:?}");
            let expected: &[usize] = match wait {
                Wait::Sleep => &[10_000],
                Wait::Poll | Wait::Spin => &[4096, 4096, 1808],
            };
            assert_eq!(sizes, expected, "{wait:?}");
        }
    }

    #[test]
    fn a_poll_gives_up_after_its_budget_on_a_full_pipe() {
        let (read, write) = pipe();
        rustix::fs::fcntl_setfl(&write, rustix::fs::OFlags::NONBLOCK).unwrap();
        let mut full = &write;
        while full.write(&[0; 4096]).is_ok() {}
        let start = Instant::now();
        wait_for_room(&write, Some(POLL_BUDGET));
        let waited = start.elapsed();
        assert!(waited >= POLL_BUDGET, "{waited:?}");
        // Room again once the reader takes some: the wait ends at once, whatever the budget.
        let mut drained = vec![0; 65_536];
        (&read).read_exact(&mut drained).unwrap();
        wait_for_room(&write, None);
    }

    #[test]
    fn a_receive_gets_what_comes_however_late_and_ends_when_the_sender_is_gone() {
        for wait in Wait::ALL {
            let (send, receive_from) = std::sync::mpsc::sync_channel(1);
            let late = std::thread::spawn(move || {
                // Past a poll's budget: a polling receiver has gone to sleep by then.
                std::thread::sleep(POLL_BUDGET * 20);
                send.send(7u8).unwrap();
            });
            assert_eq!(receive(&receive_from, wait), Ok(7), "{wait:?}");
            late.join().unwrap();
            assert_eq!(receive(&receive_from, wait), Err(RecvError), "{wait:?}");
        }
    }

    #[test]
    fn only_the_writers_that_do_not_sleep_are_described() {
        // The variants' help text says 100 µs and 4 KiB in words.
        assert_eq!((POLL_BUDGET.as_micros(), CHUNK), (100, 4096));
        assert_eq!(Wait::default(), Wait::Sleep);
        assert_eq!(Wait::Sleep.describe(), None);
        assert!(Wait::Poll.describe().unwrap().contains("poll 100 µs"));
        assert!(Wait::Spin.describe().unwrap().contains("never sleep"));
    }
}
