//! flushlab's observer, seen from wrap: the shared object (`observer.c`, built by `build.rs`,
//! embedded here), how it is put where only this user's processes reach it, and what it says.
//!
//! The object never touches the disk: it lives in a sealed in-memory file (`memfd_create`) that
//! CMD's loader opens as `/proc/<wrap>/fd/<n>`, so there is no path anyone could plant a link
//! at, nothing to clean up on any way out (SIGKILL of wrap included), and only processes that
//! may look into wrap's fds (this user's) can load it. The records come back over a pipe whose
//! write end wrap holds and the observer opens the same way. The C is the one place with
//! `unsafe` semantics; this side is safe Rust.

#![forbid(unsafe_code)]

pub mod kernel;

use std::ffi::{OsStr, OsString};
use std::fs::File;
use std::io::{self, Read, Write};
use std::os::fd::{AsFd, AsRawFd, OwnedFd};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

/// The observer, as built for this target.
pub const SHARED_OBJECT: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/flushlab-observer.so"));

/// The variable the observer reads its settings from.
pub const SETTING: &str = "FLUSHLAB_OBSERVER";

/// `--try frame`: the longest held bytes wait after the program's last terminal write, when no
/// wait of the program comes (one it makes where the observer cannot see: a raw syscall, a
/// spin). Below one 60 Hz refresh (16.7 ms), so a frame held past an unseen wait is late by
/// less than a refresh; far above the gaps between one frame's writes in the programs measured
/// here (microseconds), so frames are not split by it.
pub const HOLD_BOUND: std::time::Duration = std::time::Duration::from_millis(10);

/// What the observer does with the terminal writes it sees.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    /// Counts them, and the waits between them: the program runs as it would.
    Observe,
    /// Also holds them until the program waits, then writes them at once (`wrap --try frame`).
    HoldFrames,
    /// Also puts each answer in a synchronized-output block, from the first terminal write
    /// after a read of the terminal until the program next waits for input (`wrap --try sync`).
    SyncBlocks,
}

/// The observer made ready for one run: the object in memory, the channel's two ends.
#[derive(Debug)]
pub struct Injection {
    object: OwnedFd,
    channel_write: OwnedFd,
    channel_read: Option<File>,
    tty_rdev: u64,
    mode: Mode,
}

impl Injection {
    /// `tty`: the pty's slave, whose device number tells the observer which writes are the
    /// terminal's.
    pub fn new(tty: impl AsFd, mode: Mode) -> io::Result<Injection> {
        Injection::with_rdev(rustix::fs::fstat(tty)?.st_rdev, mode)
    }

    /// For a program a terminal emulator starts on a pty of its own making, which wrap cannot
    /// name: the first process takes the terminal its standard streams are on, and tells the
    /// processes it starts.
    pub fn on_the_programs_terminal(mode: Mode) -> io::Result<Injection> {
        Injection::with_rdev(0, mode)
    }

    fn with_rdev(tty_rdev: u64, mode: Mode) -> io::Result<Injection> {
        use rustix::fs::{MemfdFlags, SealFlags};
        let object = rustix::fs::memfd_create(
            "flushlab-observer",
            MemfdFlags::CLOEXEC | MemfdFlags::ALLOW_SEALING,
        )?;
        File::from(object.try_clone()?).write_all(SHARED_OBJECT)?;
        // Sealed: nobody, not even a process of ours, can change what later programs load.
        rustix::fs::fcntl_add_seals(
            &object,
            SealFlags::WRITE | SealFlags::SHRINK | SealFlags::GROW | SealFlags::SEAL,
        )?;
        let (read, write) = rustix::pipe::pipe_with(rustix::pipe::PipeFlags::CLOEXEC)?;
        Ok(Injection {
            object,
            channel_write: write,
            channel_read: Some(File::from(read)),
            tty_rdev,
            mode,
        })
    }

    /// The variables CMD runs with: the observer first in `LD_PRELOAD` (what was there already
    /// stays, after it), and its settings.
    pub fn environment(&self, existing_preload: Option<&OsStr>) -> [(OsString, OsString); 2] {
        let pid = std::process::id();
        let mut preload = OsString::from(format!("/proc/{pid}/fd/{}", self.object.as_raw_fd()));
        if let Some(existing) = existing_preload.filter(|p| !p.is_empty()) {
            preload.push(":");
            preload.push(existing);
        }
        let mode = match self.mode {
            Mode::Observe => "o".to_owned(),
            Mode::HoldFrames => format!("f{}", HOLD_BOUND.as_nanos()),
            Mode::SyncBlocks => "s".to_owned(),
        };
        let setting = format!(
            "/proc/{pid}/fd/{}:{}:{mode}",
            self.channel_write.as_raw_fd(),
            self.tty_rdev
        );
        [
            ("LD_PRELOAD".into(), preload),
            (SETTING.into(), setting.into()),
        ]
    }

    /// Starts reading what the observers send, in a thread, until `stop` is set and the channel
    /// is empty. `on_exit` is told of each process that ends (or execs), with everything said
    /// so far, as its last record arrives.
    pub fn listen(
        &mut self,
        stop: Arc<AtomicBool>,
        on_exit: Option<OnExit>,
    ) -> io::Result<Listening> {
        let channel = self
            .channel_read
            .take()
            .ok_or_else(|| io::Error::other("the observer's channel is already read"))?;
        let thread = std::thread::Builder::new()
            .name("wrap-observer".into())
            .spawn(move || collect(channel, &stop, on_exit))
            // As flushlab-core's `sys::spawn_thread` says it (this crate stands alone).
            .map_err(|e| {
                io::Error::new(
                    e.kind(),
                    format!(
                        "could not start the wrap-observer thread ({e}): the process's limit on \
                         threads or on memory (ulimit -u, ulimit -v)"
                    ),
                )
            })?;
        Ok(Listening { thread })
    }
}

/// Told of a process that ended or exec'd (its pid), with all the observers said until then.
pub type OnExit = Box<dyn FnMut(u32, &Sightings) + Send>;

/// The variable that asks the observer for samply marker files (`wrap --profile`).
pub const MARKERS: &str = "FLUSHLAB_MARKERS";

/// `wrap --profile`: each thread of the program that writes to the terminal maps a file
/// `marker-<pid>-<tid>.txt` in `dir` (samply puts the lines of such a file on that thread), and
/// a process that mapped one waits at exit until [`Markers::release`]: the lines are written
/// then, when what they say is known, and samply reads the file as the process exits.
#[derive(Debug)]
pub struct Markers {
    dir: std::path::PathBuf,
    release_write: Option<OwnedFd>,
    release_read: OwnedFd,
}

impl Markers {
    pub fn new(dir: std::path::PathBuf) -> io::Result<Markers> {
        let (read, write) = rustix::pipe::pipe_with(rustix::pipe::PipeFlags::CLOEXEC)?;
        Ok(Markers {
            dir,
            release_write: Some(write),
            release_read: read,
        })
    }

    /// The variable the program runs with: the pipe it waits on, and the directory.
    pub fn environment(&self) -> (OsString, OsString) {
        let pid = std::process::id();
        let mut value =
            OsString::from(format!("/proc/{pid}/fd/{}:", self.release_read.as_raw_fd()));
        value.push(self.dir.as_os_str());
        (MARKERS.into(), value)
    }

    /// The marker file of a thread, if it mapped one.
    pub fn file_of(&self, pid: u32, tid: u32) -> Option<std::path::PathBuf> {
        let path = self.dir.join(format!("marker-{pid}-{tid}.txt"));
        path.is_file().then_some(path)
    }

    /// Whether a thread of `pid` mapped a marker file.
    pub fn mapped_by(&self, pid: u32) -> bool {
        let prefix = format!("marker-{pid}-");
        std::fs::read_dir(&self.dir).is_ok_and(|entries| {
            entries
                .flatten()
                .any(|e| e.file_name().to_string_lossy().starts_with(&prefix))
        })
    }

    /// Lets every process waiting at exit go (and any later one not wait).
    pub fn release(&mut self) {
        self.release_write = None;
    }
}

/// The thread reading the channel; its sightings once it ends.
#[derive(Debug)]
pub struct Listening {
    thread: std::thread::JoinHandle<io::Result<Sightings>>,
}

impl Listening {
    pub fn finish(self) -> io::Result<Sightings> {
        self.thread
            .join()
            .map_err(|_| io::Error::other("the observer's reader panicked"))?
    }
}

fn collect(
    mut channel: File,
    stop: &AtomicBool,
    mut on_exit: Option<OnExit>,
) -> io::Result<Sightings> {
    use rustix::event::{PollFd, PollFlags, Timespec, poll};
    let mut sightings = Sightings::default();
    let mut pending = Vec::new();
    let mut buf = vec![0u8; 64 * RECORD];
    let tick = Timespec {
        tv_sec: 0,
        tv_nsec: 20_000_000,
    };
    loop {
        let ready = {
            let mut fds = [PollFd::new(&channel, PollFlags::IN)];
            matches!(poll(&mut fds, Some(&tick)), Ok(1..))
        };
        if !ready {
            if stop.load(Ordering::Relaxed) {
                sightings.close(now_ns());
                return Ok(sightings);
            }
            continue;
        }
        let n = match channel.read(&mut buf) {
            Ok(0) => {
                sightings.close(now_ns());
                return Ok(sightings);
            }
            Ok(n) => n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        pending.extend_from_slice(&buf[..n]);
        let whole = pending.len() / RECORD * RECORD;
        for record in pending[..whole].chunks_exact(RECORD) {
            if let Some(record) = Record::parse(record) {
                let ended = match &record {
                    Record::Tail(t) => Some(t.pid),
                    _ => None,
                };
                sightings.add(record);
                if let (Some(pid), Some(on_exit)) = (ended, on_exit.as_mut()) {
                    on_exit(pid, &sightings);
                }
            }
        }
        pending.drain(..whole);
    }
}

/// The size of one record on the wire (`struct record` in record.h).
pub const RECORD: usize = 64;

/// The wire format's names, as record.h defines them (held to it by a test that reads it):
/// the kinds, the kinds of wait, the flags of a kind's high half, and each field's offset.
pub mod wire {
    pub const HELLO: u32 = 1;
    pub const WAIT: u32 = 2;
    pub const TAIL: u32 = 3;
    pub const FORK: u32 = 4;
    pub const RELEASE: u32 = 5;
    pub const READ: u32 = 6;
    pub const COST: u32 = 7;
    pub const UNTRACED: u32 = 8;
    pub const WAITING: u32 = 9;
    pub const KERNEL_COST: u32 = 10;

    pub const W_POLL: u16 = 1;
    pub const W_SELECT: u16 = 2;
    pub const W_EPOLL: u16 = 3;
    pub const W_SLEEP: u16 = 4;
    pub const W_SIGNAL: u16 = 5;
    pub const W_FUTEX: u16 = 6;
    pub const W_READ: u16 = 7;

    /// The wait returned because its time was up (a tick, a timer).
    pub const TIMED_OUT: u32 = 1 << 15;
    /// The tracer sent it.
    pub const TRACED: u32 = 1 << 14;
    /// The kernel observer sent it.
    pub const KERNEL: u32 = 1 << 13;
    /// A terminal write of the frame the record ends opened a synchronized-output block.
    pub const SYNC_OPENED: u32 = 1 << 12;

    pub const KIND: usize = 0;
    pub const PID: usize = 4;
    pub const TID: usize = 8;
    pub const LOST: usize = 12;
    pub const WRITES: usize = 16;
    pub const BYTES: usize = 24;
    pub const FIRST_NS: usize = 32;
    pub const START_NS: usize = 40;
    pub const END_NS: usize = 48;
    pub const FLUSHED_WRITES: usize = 56;
    pub const FLUSHED_BYTES: usize = 60;
}

/// One thing an observer said.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Record {
    /// A program loaded the observer: its pid and name.
    Hello { pid: u32, name: String },
    /// A thread's blocking wait, after it returned, with the terminal writes it made before.
    Wait(Wait),
    /// Writes after the last wait, said at exit or exec.
    Tail(Wait),
    /// A blocking wait began with terminal writes before it not yet said (`start_ns`): its
    /// [`Record::Wait`] says them again when it returns; one still waiting when the run ends
    /// (ended by wrap) is kept as a wait that lasted until then.
    Waiting(Wait),
    /// A child of `parent` started (it starts clean).
    Fork { pid: u32, parent: u32 },
    /// `--try frame`: held bytes let out by the bound, not by a wait (the program waited where
    /// the observer cannot see, or not at all): `bytes`, the last held write at or before
    /// `first_write_ns` (the watchdog's look that saw it), out from `start_ns` to `end_ns`.
    Release(Wait),
    /// A read of the terminal that took bytes (a key, an answer): `bytes`, begun at `start_ns`,
    /// returned at `end_ns`, in thread `tid`.
    Read(Wait),
    /// The tracer's account of what it cost, sent as it ends (`flushlab wrap --observer ptrace`).
    Cost(TracerCost),
    /// The tracer could not trace CMD (ptrace refused: `errno`); CMD ran untraced.
    Untraced { pid: u32, errno: i32 },
    /// The kernel observer's account of what it cost and what it lost, sent as it ends
    /// ([`kernel`]).
    Kernel(KernelCost),
}

/// What the kernel observer cost and lost in one run.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct KernelCost {
    /// wrap's pid (the forwarder is a thread of it).
    pub pid: u32,
    /// Records the programs sent through the ring buffer.
    pub sent: u64,
    /// Records they could not send: the ring buffer was full.
    pub lost: u64,
    /// The programs' own run time, all of them on every call of every process, where the kernel
    /// counted it (BPF_ENABLE_STATS, CAP_SYS_ADMIN).
    pub run_ns: Option<u64>,
    /// How often they ran, counted with it.
    pub runs: Option<u64>,
    /// The forwarder's CPU time (a thread of wrap's, beside CMD).
    pub reader_cpu_ns: u64,
    /// Programs attached.
    pub programs: u32,
}

/// What tracing cost the program: how often it stopped and for what, and the tracer's own CPU
/// time (each stop is two context switches and a look at the call).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TracerCost {
    /// The tracer's pid.
    pub pid: u32,
    /// Stops of the program's threads at calls the filter traps (each call's entry and exit).
    pub stops: u64,
    /// Of those, the stops at writes (the terminal's and others').
    pub write_stops: u64,
    /// The tracer's CPU time, user and system, in nanoseconds.
    pub cpu_ns: u64,
    /// The programs the tracer followed (execs seen).
    pub images: u32,
    /// Processes CMD left running when it ended (a daemon): ended with the tracer, since a
    /// traced process's trapped calls would fail without it.
    pub left: u32,
}

/// A wait and the terminal writes before it; times are CLOCK_MONOTONIC nanoseconds.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Wait {
    pub pid: u32,
    pub tid: u32,
    /// Records this process could not send before this one (its channel was full).
    pub lost: u32,
    pub writes: u64,
    pub bytes: u64,
    pub first_write_ns: u64,
    pub start_ns: u64,
    pub end_ns: u64,
    /// `--try frame`: write(2) calls and bytes the held output took since the last record.
    pub flushed_writes: u32,
    pub flushed_bytes: u32,
    /// A wait's kind, as the wire says it (observer.c's `enum wait_kind`: 1 poll, 2 select,
    /// 3 epoll, 4 sleep, 5 signal, 6 futex, 7 a read of the terminal); 0 for other records.
    pub how: u16,
    /// The wait returned because its time was up (a tick, a timer), not because something came:
    /// the bit [`TIMED_OUT`] of the kind's high half on the wire.
    pub timed_out: bool,
    /// Said by the tracer, not the preload (the bit [`TRACED`] of the kind's high half): where
    /// both look, a read both saw is the preload's.
    pub traced: bool,
    /// A terminal write before it (a frame's first, or one no longer than a block's start)
    /// began a synchronized-output block, `ESC[?2026h` or `ESC P=1s` (the bit [`SYNC_OPENED`]):
    /// CMD's own blocks, whatever a layer later does with them. Said by the preload and the
    /// kernel observer; the tracer never sets it.
    pub opened_sync: bool,
}

pub use wire::{KERNEL, SYNC_OPENED, TIMED_OUT, TRACED};

impl Record {
    /// One record from its 64 bytes; an unknown kind is `None`.
    pub fn parse(bytes: &[u8]) -> Option<Record> {
        let u32_at = |i: usize| u32::from_ne_bytes(bytes[i..i + 4].try_into().unwrap_or_default());
        let u64_at = |i: usize| u64::from_ne_bytes(bytes[i..i + 8].try_into().unwrap_or_default());
        if bytes.len() != RECORD {
            return None;
        }
        let wait = Wait {
            pid: u32_at(wire::PID),
            tid: u32_at(wire::TID),
            lost: u32_at(wire::LOST),
            writes: u64_at(wire::WRITES),
            bytes: u64_at(wire::BYTES),
            first_write_ns: u64_at(wire::FIRST_NS),
            start_ns: u64_at(wire::START_NS),
            end_ns: u64_at(wire::END_NS),
            flushed_writes: u32_at(wire::FLUSHED_WRITES),
            flushed_bytes: u32_at(wire::FLUSHED_BYTES),
            how: 0,
            timed_out: false,
            traced: (u32_at(wire::KIND) >> 16) & TRACED != 0,
            opened_sync: (u32_at(wire::KIND) >> 16) & SYNC_OPENED != 0,
        };
        let kind = u32_at(wire::KIND);
        match kind & 0xffff {
            wire::HELLO => {
                let name = &bytes[wire::WRITES..wire::START_NS];
                let end = name.iter().position(|&b| b == 0).unwrap_or(name.len());
                Some(Record::Hello {
                    pid: wait.pid,
                    name: String::from_utf8_lossy(&name[..end]).into_owned(),
                })
            }
            wire::WAIT => Some(Record::Wait(Wait {
                how: ((kind >> 16) & !(TIMED_OUT | TRACED | KERNEL | SYNC_OPENED)) as u16,
                timed_out: (kind >> 16) & TIMED_OUT != 0,
                ..wait
            })),
            wire::TAIL => Some(Record::Tail(wait)),
            wire::WAITING => Some(Record::Waiting(Wait {
                how: ((kind >> 16) & !(TIMED_OUT | TRACED | KERNEL | SYNC_OPENED)) as u16,
                ..wait
            })),
            wire::FORK => Some(Record::Fork {
                pid: wait.pid,
                parent: u64_at(wire::WRITES) as u32,
            }),
            wire::RELEASE => Some(Record::Release(wait)),
            wire::READ => Some(Record::Read(wait)),
            wire::COST => Some(Record::Cost(TracerCost {
                pid: wait.pid,
                stops: u64_at(wire::WRITES),
                write_stops: u64_at(wire::BYTES),
                cpu_ns: u64_at(wire::FIRST_NS),
                images: u32_at(wire::START_NS),
                left: u32_at(wire::START_NS + 4),
            })),
            wire::UNTRACED => Some(Record::Untraced {
                pid: wait.pid,
                errno: u32_at(wire::WRITES) as i32,
            }),
            wire::KERNEL_COST => {
                let counted = |v: u64| (v != u64::MAX).then_some(v);
                Some(Record::Kernel(KernelCost {
                    pid: wait.pid,
                    sent: u64_at(wire::WRITES),
                    lost: u64_at(wire::BYTES),
                    run_ns: counted(u64_at(wire::FIRST_NS)),
                    runs: counted(u64_at(wire::START_NS)),
                    reader_cpu_ns: u64_at(wire::END_NS),
                    programs: u32_at(wire::FLUSHED_WRITES),
                }))
            }
            _ => None,
        }
    }

    /// The record's 64 bytes, as [`Record::parse`] reads them (the tracer writes what the
    /// preload's C writes: `struct record`).
    pub fn to_wire(&self) -> [u8; RECORD] {
        let traced = |w: &Wait| {
            (if w.traced { TRACED } else { 0 }) | if w.opened_sync { SYNC_OPENED } else { 0 }
        };
        let mut b = [0u8; RECORD];
        let mut put = |at: usize, bytes: &[u8]| b[at..at + bytes.len()].copy_from_slice(bytes);
        let wait = |kind: u32, w: &Wait, put: &mut dyn FnMut(usize, &[u8])| {
            put(wire::KIND, &kind.to_ne_bytes());
            put(wire::PID, &w.pid.to_ne_bytes());
            put(wire::TID, &w.tid.to_ne_bytes());
            put(wire::LOST, &w.lost.to_ne_bytes());
            put(wire::WRITES, &w.writes.to_ne_bytes());
            put(wire::BYTES, &w.bytes.to_ne_bytes());
            put(wire::FIRST_NS, &w.first_write_ns.to_ne_bytes());
            put(wire::START_NS, &w.start_ns.to_ne_bytes());
            put(wire::END_NS, &w.end_ns.to_ne_bytes());
            put(wire::FLUSHED_WRITES, &w.flushed_writes.to_ne_bytes());
            put(wire::FLUSHED_BYTES, &w.flushed_bytes.to_ne_bytes());
        };
        match self {
            Record::Hello { pid, name } => {
                put(wire::KIND, &wire::HELLO.to_ne_bytes());
                put(wire::PID, &pid.to_ne_bytes());
                put(wire::TID, &pid.to_ne_bytes());
                let name = name.as_bytes();
                put(wire::WRITES, &name[..name.len().min(23)]);
            }
            Record::Wait(w) => {
                let how = u32::from(w.how) | if w.timed_out { TIMED_OUT } else { 0 };
                wait(wire::WAIT | (how | traced(w)) << 16, w, &mut put);
            }
            Record::Tail(w) => wait(wire::TAIL | traced(w) << 16, w, &mut put),
            Record::Waiting(w) => wait(
                wire::WAITING | (u32::from(w.how) | traced(w)) << 16,
                w,
                &mut put,
            ),
            Record::Fork { pid, parent } => {
                put(wire::KIND, &wire::FORK.to_ne_bytes());
                put(wire::PID, &pid.to_ne_bytes());
                put(wire::WRITES, &u64::from(*parent).to_ne_bytes());
            }
            Record::Release(w) => wait(wire::RELEASE, w, &mut put),
            Record::Read(w) => wait(wire::READ | traced(w) << 16, w, &mut put),
            Record::Cost(c) => {
                put(wire::KIND, &wire::COST.to_ne_bytes());
                put(wire::PID, &c.pid.to_ne_bytes());
                put(wire::WRITES, &c.stops.to_ne_bytes());
                put(wire::BYTES, &c.write_stops.to_ne_bytes());
                put(wire::FIRST_NS, &c.cpu_ns.to_ne_bytes());
                put(wire::START_NS, &c.images.to_ne_bytes());
                put(wire::START_NS + 4, &c.left.to_ne_bytes());
            }
            Record::Untraced { pid, errno } => {
                put(wire::KIND, &wire::UNTRACED.to_ne_bytes());
                put(wire::PID, &pid.to_ne_bytes());
                put(wire::WRITES, &errno.to_ne_bytes());
            }
            Record::Kernel(k) => {
                put(wire::KIND, &wire::KERNEL_COST.to_ne_bytes());
                put(wire::PID, &k.pid.to_ne_bytes());
                put(wire::WRITES, &k.sent.to_ne_bytes());
                put(wire::BYTES, &k.lost.to_ne_bytes());
                put(wire::FIRST_NS, &k.run_ns.unwrap_or(u64::MAX).to_ne_bytes());
                put(wire::START_NS, &k.runs.unwrap_or(u64::MAX).to_ne_bytes());
                put(wire::END_NS, &k.reader_cpu_ns.to_ne_bytes());
                put(wire::FLUSHED_WRITES, &k.programs.to_ne_bytes());
            }
        }
        b
    }
}

/// Everything the observers of one run said.
/// The most forks [`Sightings`] keeps (8 MB): a shell loop forks a few thousand a second.
const MAX_FORKS: usize = 1 << 20;

#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Sightings {
    /// Programs that loaded the observer, in the order they said so: pid and name.
    pub hellos: Vec<(u32, String)>,
    pub waits: Vec<Wait>,
    pub tails: Vec<Wait>,
    /// Each fork seen, in order: the child's pid and its parent's (the tree's shape, from which
    /// `wrap --via` tells the far end's programs from the near end's).
    pub forks: Vec<(u32, u32)>,
    /// `--try frame`: held bytes the bound let out (no wait came in time).
    pub releases: Vec<Wait>,
    /// Reads of the terminal that took bytes, in the order they were said.
    pub reads: Vec<Wait>,
    /// Waits begun with writes before them and not returned (yet): a thread's last, until its
    /// wait or tail says them; [`Sightings::close`] keeps those left as waits.
    pub waiting: Vec<Wait>,
    /// Records the observers could not send.
    pub lost: u64,
    /// Records received: each was a write(2) of CMD's tree (to the channel, not the terminal).
    pub records: u64,
    /// The tracer's account, when CMD was traced.
    pub tracer: Option<TracerCost>,
    /// The tracer was refused (ptrace's errno): CMD ran untraced.
    pub untraced: Option<i32>,
    /// The kernel observer's account, when it looked.
    pub kernel: Option<KernelCost>,
    /// `--try frame`: the write(2) calls and bytes the held output took, as every record said
    /// them (a record carries those made since the one before it, whatever its kind: a waiting
    /// record's are not said again by its wait).
    pub flushed: (u64, u64),
}

impl Sightings {
    pub fn add(&mut self, record: Record) {
        self.records += 1;
        if let Record::Wait(w)
        | Record::Tail(w)
        | Record::Waiting(w)
        | Record::Release(w)
        | Record::Read(w) = &record
        {
            self.flushed.0 += u64::from(w.flushed_writes);
            self.flushed.1 += u64::from(w.flushed_bytes);
        }
        match record {
            Record::Hello { pid, name } => self.hellos.push((pid, name)),
            Record::Wait(wait) => {
                self.lost += u64::from(wait.lost);
                self.said(&wait);
                self.waits.push(wait);
            }
            Record::Tail(tail) => {
                self.lost += u64::from(tail.lost);
                self.said(&tail);
                self.tails.push(tail);
            }
            Record::Waiting(waiting) => {
                self.lost += u64::from(waiting.lost);
                self.said(&waiting);
                self.waiting.push(waiting);
            }
            Record::Fork { pid, parent } if self.forks.len() < MAX_FORKS => {
                self.forks.push((pid, parent));
            }
            Record::Fork { .. } => {}
            Record::Release(release) => {
                self.lost += u64::from(release.lost);
                self.releases.push(release);
            }
            Record::Read(read) => {
                self.lost += u64::from(read.lost);
                self.reads.push(read);
            }
            Record::Cost(cost) => self.tracer = Some(cost),
            Record::Untraced { errno, .. } => self.untraced = Some(errno),
            Record::Kernel(cost) => self.kernel = Some(cost),
        }
    }

    /// A thread's wait or tail came: what it said waiting before is said again there.
    fn said(&mut self, by: &Wait) {
        self.waiting.retain(|w| (w.pid, w.tid) != (by.pid, by.tid));
    }

    /// Every record is in (at `end_ns`): a wait still going — its thread never returned from
    /// it, ended with the run — is a wait until then, with the writes before it.
    pub fn close(&mut self, end_ns: u64) {
        for mut wait in self.waiting.drain(..) {
            wait.end_ns = end_ns.max(wait.start_ns);
            self.waits.push(wait);
        }
        self.merge_reads();
    }

    /// Where the preload and the tracer both look: a read of the terminal both saw (the same
    /// thread, overlapping times) is the preload's; the tracer's stand where the preload saw
    /// none (a key read with a raw system call). Call once every record is in.
    pub fn merge_reads(&mut self) {
        let (traced, seen): (Vec<Wait>, Vec<Wait>) = self.reads.drain(..).partition(|r| r.traced);
        let twice = |t: &Wait| {
            seen.iter()
                .any(|s| s.tid == t.tid && s.start_ns <= t.end_ns && s.end_ns >= t.start_ns)
        };
        let unseen: Vec<Wait> = traced.into_iter().filter(|t| !twice(t)).collect();
        self.reads = seen;
        self.reads.extend(unseen);
        self.reads.sort_by_key(|r| r.end_ns);
    }

    fn all(&self) -> impl Iterator<Item = &Wait> {
        self.waits.iter().chain(&self.tails)
    }

    /// The write(2) calls the observers made themselves, sent or not, and their bytes: the
    /// kernel counts them among CMD's tree's. The kernel observer writes none: its records are
    /// read from its ring buffer by a thread of wrap's.
    pub fn own_writes(&self) -> (u64, u64) {
        if self.kernel.is_some() {
            return (0, 0);
        }
        let calls = self.records + self.lost;
        (calls, self.records * RECORD as u64)
    }

    /// Terminal write calls the programs made, and their bytes.
    pub fn writes(&self) -> (u64, u64) {
        self.all()
            .fold((0, 0), |(w, b), x| (w + x.writes, b + x.bytes))
    }

    /// The frames whose writes opened a synchronized-output block
    /// ([`Wait::opened_sync`]): CMD's own blocks. Call once every record is in.
    pub fn frames_opening_sync(&self) -> u64 {
        self.all().filter(|w| w.writes > 0 && w.opened_sync).count() as u64
    }

    /// `--try frame`: the write(2) calls and bytes the held output really took.
    pub fn flushed(&self) -> (u64, u64) {
        self.flushed
    }

    /// The waits that end frames, as (start, end): every wait of a thread that wrote to the
    /// terminal, and the waits of a process none of whose threads did where no writing thread
    /// was waiting meanwhile (a `sleep` between a shell's children that draw, the shell itself
    /// in waitpid, which is no wait; a program whose writes the observer cannot see). A thread
    /// that only waits beside one that draws (an input thread) ends nobody's frame, nor does a
    /// process that waits beside the one that draws (a subshell, a script pushing keys into
    /// the terminal): its waits span the drawer's frames and would merge them into one.
    pub fn boundaries(&self) -> Vec<(u64, u64)> {
        use std::collections::HashSet;
        let writers: HashSet<(u32, u32)> = self
            .all()
            .filter(|w| w.writes > 0)
            .map(|w| (w.pid, w.tid))
            .collect();
        let writing: HashSet<u32> = writers.iter().map(|&(pid, _)| pid).collect();
        let span = |w: &Wait| (w.start_ns, w.end_ns.max(w.start_ns));
        let mut boundaries: Vec<(u64, u64)> = self
            .waits
            .iter()
            .filter(|w| writers.contains(&(w.pid, w.tid)))
            .map(span)
            .collect();
        boundaries.sort_unstable();
        // The writers' waits merged, to tell whether another process's wait overlaps one.
        let mut merged: Vec<(u64, u64)> = Vec::new();
        for &(start, end) in &boundaries {
            match merged.last_mut() {
                Some(last) if start <= last.1 => last.1 = last.1.max(end),
                _ => merged.push((start, end)),
            }
        }
        let overlaps_a_writer = |(start, end): (u64, u64)| {
            let i = merged.partition_point(|m| m.1 < start);
            merged.get(i).is_some_and(|m| m.0 <= end)
        };
        boundaries.extend(
            self.waits
                .iter()
                .filter(|w| !writing.contains(&w.pid))
                .map(span)
                .filter(|&s| !overlaps_a_writer(s)),
        );
        boundaries.sort_unstable();
        boundaries
    }
}

/// Now on CLOCK_MONOTONIC, in nanoseconds: the observers' clock.
pub fn now_ns() -> u64 {
    let t = rustix::time::clock_gettime(rustix::time::ClockId::Monotonic);
    u64::try_from(t.tv_sec).unwrap_or(0) * 1_000_000_000 + u64::try_from(t.tv_nsec).unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// record.h is the one definition: every kind, kind of wait and flag it names has its value
    /// in [`wire`], and every field of `struct record` its offset (laid out as C lays it out) and
    /// size, and nothing is named on one side only.
    #[test]
    fn wire_matches_record_h() {
        let header = include_str!("../record.h");
        let code = |line: &str| line.split("/*").next().unwrap_or("").trim().to_owned();
        let mut values: Vec<(String, u64)> = Vec::new();
        for line in header.lines().map(code) {
            let line = line.trim_end_matches(',');
            if let Some((name, value)) = line.split_once(" = ")
                && let Ok(value) = value.parse()
            {
                values.push((name.to_owned(), value));
            } else if let Some(rest) = line.strip_prefix("#define ")
                && let Some((name, shift)) = rest.split_once(" (1u << ")
            {
                let shift: u32 = shift.trim_end_matches(')').parse().unwrap();
                values.push((name.to_owned(), 1 << shift));
            }
        }
        let rust: [(&str, u64); 21] = [
            ("HELLO", wire::HELLO.into()),
            ("WAIT", wire::WAIT.into()),
            ("TAIL", wire::TAIL.into()),
            ("FORK", wire::FORK.into()),
            ("RELEASE", wire::RELEASE.into()),
            ("READ", wire::READ.into()),
            ("COST", wire::COST.into()),
            ("UNTRACED", wire::UNTRACED.into()),
            ("WAITING", wire::WAITING.into()),
            ("KERNEL_COST", wire::KERNEL_COST.into()),
            ("W_POLL", wire::W_POLL.into()),
            ("W_SELECT", wire::W_SELECT.into()),
            ("W_EPOLL", wire::W_EPOLL.into()),
            ("W_SLEEP", wire::W_SLEEP.into()),
            ("W_SIGNAL", wire::W_SIGNAL.into()),
            ("W_FUTEX", wire::W_FUTEX.into()),
            ("W_READ", wire::W_READ.into()),
            ("TIMED_OUT", wire::TIMED_OUT.into()),
            ("TRACED", wire::TRACED.into()),
            ("KERNEL", wire::KERNEL.into()),
            ("SYNC_OPENED", wire::SYNC_OPENED.into()),
        ];
        let rust: Vec<(String, u64)> = rust.iter().map(|&(n, v)| (n.to_owned(), v)).collect();
        assert_eq!(
            values, rust,
            "record.h's names and values against lib.rs's `wire`"
        );
        let body = header
            .split_once("struct record {")
            .and_then(|(_, rest)| rest.split_once("};"))
            .unwrap()
            .0;
        let mut offset = 0usize;
        let mut fields: Vec<(String, usize, usize)> = Vec::new();
        for line in body.lines().map(code).filter(|l| !l.is_empty()) {
            let (ty, name) = line.trim_end_matches(';').split_once(' ').unwrap();
            let size = match ty {
                "record_u32" => 4,
                "record_u64" => 8,
                other => panic!("record.h: a field of type {other}"),
            };
            offset = offset.next_multiple_of(size);
            fields.push((name.to_owned(), offset, size));
            offset += size;
        }
        // Each field with its offset and the size `Record::parse` reads it at.
        let rust = [
            ("kind", wire::KIND, 4),
            ("pid", wire::PID, 4),
            ("tid", wire::TID, 4),
            ("lost", wire::LOST, 4),
            ("writes", wire::WRITES, 8),
            ("bytes", wire::BYTES, 8),
            ("first_ns", wire::FIRST_NS, 8),
            ("start_ns", wire::START_NS, 8),
            ("end_ns", wire::END_NS, 8),
            ("flushed_writes", wire::FLUSHED_WRITES, 4),
            ("flushed_bytes", wire::FLUSHED_BYTES, 4),
        ];
        let rust: Vec<(String, usize, usize)> =
            rust.iter().map(|&(n, o, s)| (n.to_owned(), o, s)).collect();
        assert_eq!(
            fields, rust,
            "struct record's fields against lib.rs's `wire`"
        );
        assert_eq!(offset, RECORD);
    }

    fn wire(kind: u32, pid: u32, tid: u32, writes: u64, start: u64, end: u64) -> Vec<u8> {
        let mut r = vec![0u8; RECORD];
        r[0..4].copy_from_slice(&kind.to_ne_bytes());
        r[4..8].copy_from_slice(&pid.to_ne_bytes());
        r[8..12].copy_from_slice(&tid.to_ne_bytes());
        r[16..24].copy_from_slice(&writes.to_ne_bytes());
        r[24..32].copy_from_slice(&(writes * 10).to_ne_bytes());
        r[40..48].copy_from_slice(&start.to_ne_bytes());
        r[48..56].copy_from_slice(&end.to_ne_bytes());
        r
    }

    #[test]
    fn records_read_back_as_written() {
        let mut hello = wire(1, 7, 7, 0, 1, 1);
        hello[16..20].copy_from_slice(b"htop");
        assert_eq!(
            Record::parse(&hello),
            Some(Record::Hello {
                pid: 7,
                name: "htop".into()
            })
        );
        let Some(Record::Wait(w)) = Record::parse(&wire(2, 7, 8, 3, 100, 200)) else {
            panic!("not a wait");
        };
        assert_eq!((w.pid, w.tid, w.writes, w.bytes), (7, 8, 3, 30));
        assert_eq!((w.start_ns, w.end_ns), (100, 200));
        // A poll (1 in the high half of the kind), and a read of the terminal that took 3 bytes.
        let Some(Record::Wait(w)) = Record::parse(&wire(2 | 1 << 16, 7, 8, 0, 100, 200)) else {
            panic!("not a wait");
        };
        assert_eq!(w.how, 1);
        let Some(Record::Read(r)) = Record::parse(&wire(6, 7, 9, 0, 300, 400)) else {
            panic!("not a read");
        };
        assert_eq!((r.tid, r.start_ns, r.end_ns), (9, 300, 400));
        assert_eq!(Record::parse(&wire(11, 1, 1, 0, 0, 0)), None);
        // The kernel observer's account, as it is written; a run time not counted stays so.
        for run_ns in [Some(12_345), None] {
            let cost = Record::Kernel(KernelCost {
                pid: 3,
                sent: 40,
                lost: 2,
                run_ns,
                runs: run_ns.map(|_| 7),
                reader_cpu_ns: 99,
                programs: 5,
            });
            assert_eq!(Record::parse(&cost.to_wire()), Some(cost));
        }
        // A wait the kernel said: its kind of wait read without the kernel's bit.
        let Some(Record::Wait(w)) = Record::parse(&wire(2 | (1 | KERNEL) << 16, 7, 8, 0, 1, 2))
        else {
            panic!("not a wait");
        };
        assert_eq!(w.how, 1);
        assert_eq!(Record::parse(&[0u8; 10]), None);
    }

    /// `--try frame`'s writes are counted from every record that said them: the held bytes let
    /// out before a wait go with its WAITING record, which its WAIT replaces (they were lost
    /// with it: 2 write(2)s read for 10 frames), and with a terminal read's READ.
    #[test]
    fn the_held_writes_let_out_are_counted_from_every_record() {
        let with_flushed = |kind: u32, writes: u32, start: u64| {
            let mut r = wire(kind, 7, 8, 1, start, start + 10);
            r[wire::FLUSHED_WRITES..wire::FLUSHED_WRITES + 4]
                .copy_from_slice(&writes.to_ne_bytes());
            r[wire::FLUSHED_BYTES..wire::FLUSHED_BYTES + 4]
                .copy_from_slice(&(writes * 100).to_ne_bytes());
            r
        };
        let mut seen = Sightings::default();
        for record in [
            with_flushed(wire::WAITING | 2 << 16, 3, 100),
            with_flushed(wire::WAIT | 2 << 16, 0, 100),
            with_flushed(wire::READ, 2, 300),
            with_flushed(wire::TAIL, 1, 400),
        ] {
            seen.add(Record::parse(&record).unwrap());
        }
        assert!(seen.waiting.is_empty());
        assert_eq!(seen.flushed(), (6, 600));
    }

    /// A wait begun with writes before it (WAITING) is said again by its WAIT, and dropped
    /// then; one whose thread never returned (ended with the run) is a wait until the end.
    #[test]
    fn a_wait_still_going_at_the_end_keeps_the_writes_before_it() {
        let mut seen = Sightings::default();
        for record in [
            wire(9 | 2 << 16, 7, 8, 3, 100, 100),
            wire(2 | 2 << 16, 7, 8, 3, 100, 200),
            wire(9 | 7 << 16, 7, 8, 1, 300, 300),
            wire(9 | 1 << 16, 7, 9, 2, 250, 250),
        ] {
            seen.add(Record::parse(&record).unwrap());
        }
        assert_eq!(seen.waits.len(), 1);
        seen.close(1_000);
        let ends: Vec<(u32, u64, u64, u64, u16)> = seen
            .waits
            .iter()
            .map(|w| (w.tid, w.writes, w.start_ns, w.end_ns, w.how))
            .collect();
        assert_eq!(
            ends,
            [
                (8, 3, 100, 200, 2),
                (8, 1, 300, 1_000, 7),
                (9, 2, 250, 1_000, 1)
            ]
        );
        assert!(seen.waiting.is_empty());
        assert_eq!(seen.writes(), (6, 60));
        // A tail (exit) says them too.
        let mut ended = Sightings::default();
        ended.add(Record::parse(&wire(9, 7, 8, 3, 100, 100)).unwrap());
        ended.add(Record::parse(&wire(3, 7, 8, 3, 150, 150)).unwrap());
        ended.close(1_000);
        assert_eq!((ended.waits.len(), ended.tails.len()), (0, 1));
    }

    #[test]
    fn records_written_read_back_the_same() {
        let w = Wait {
            pid: 7,
            tid: 9,
            lost: 1,
            writes: 3,
            bytes: 300,
            first_write_ns: 10,
            start_ns: 20,
            end_ns: 30,
            flushed_writes: 0,
            flushed_bytes: 0,
            how: 6,
            timed_out: true,
            traced: true,
            opened_sync: true,
        };
        for record in [
            Record::Hello {
                pid: 7,
                name: "a-name-longer-than-twenty-three".into(),
            },
            Record::Wait(w),
            Record::Wait(Wait {
                timed_out: false,
                ..w
            }),
            Record::Tail(Wait {
                how: 0,
                timed_out: false,
                ..w
            }),
            Record::Read(Wait {
                how: 0,
                timed_out: false,
                ..w
            }),
            Record::Waiting(Wait {
                timed_out: false,
                traced: false,
                ..w
            }),
            Record::Wait(Wait {
                opened_sync: false,
                ..w
            }),
            Record::Fork { pid: 8, parent: 7 },
            Record::Untraced { pid: 5, errno: 1 },
            Record::Cost(TracerCost {
                pid: 5,
                stops: 1000,
                write_stops: 400,
                cpu_ns: 12_345_678,
                images: 2,
                left: 1,
            }),
        ] {
            let back = Record::parse(&record.to_wire()).unwrap();
            match (&record, &back) {
                (Record::Hello { name, .. }, Record::Hello { name: back, .. }) => {
                    assert_eq!(back.as_str(), &name[..23]);
                }
                _ => assert_eq!(back, record),
            }
        }
    }

    #[test]
    fn a_read_both_saw_is_the_preloads_and_one_only_the_tracer_saw_stands() {
        let read = |tid, start, end, traced| Wait {
            tid,
            start_ns: start,
            end_ns: end,
            bytes: 1,
            traced,
            ..Wait::default()
        };
        let mut s = Sightings::default();
        for r in [
            read(1, 100, 110, false),
            read(1, 102, 108, true),
            read(1, 200, 210, true),
            read(2, 104, 106, true),
        ] {
            s.add(Record::parse(&Record::Read(r).to_wire()).unwrap());
        }
        s.merge_reads();
        let kept: Vec<(u32, u64, bool)> = s
            .reads
            .iter()
            .map(|r| (r.tid, r.start_ns, r.traced))
            .collect();
        assert_eq!(kept, [(2, 104, true), (1, 100, false), (1, 200, true)]);
    }

    #[test]
    fn an_input_thread_beside_the_drawing_one_ends_no_frame() {
        let mut s = Sightings::default();
        // pid 1: thread 1 draws and waits, thread 2 only waits; pid 2 (a sleep) only waits.
        for (kind, pid, tid, writes, start) in [
            (2, 1, 1, 5, 10),
            (2, 1, 2, 0, 11),
            (2, 2, 2, 0, 30),
            (3, 3, 3, 1, 40),
        ] {
            s.add(Record::parse(&wire(kind, pid, tid, writes, start, start + 5)).unwrap());
        }
        assert_eq!(s.boundaries(), vec![(10, 15), (30, 35)]);
        assert_eq!(s.writes(), (6, 60));
    }

    #[test]
    fn a_process_waiting_beside_the_drawing_one_ends_no_frame() {
        let mut s = Sightings::default();
        // pid 1 draws and waits at 10 and 30; pid 2 (a script pushing keys, a subshell) waits
        // from 12 to 40, across both; pid 3 (a `sleep` between a shell's children) at 50.
        for (kind, pid, tid, writes, start, end) in [
            (2, 1, 1, 5, 10, 15),
            (2, 1, 1, 5, 30, 35),
            (2, 2, 2, 0, 12, 40),
            (2, 3, 3, 0, 50, 60),
        ] {
            let mut r = wire(kind, pid, tid, writes, start, end);
            r[48..56].copy_from_slice(&end.to_ne_bytes());
            s.add(Record::parse(&r).unwrap());
        }
        assert_eq!(s.boundaries(), vec![(10, 15), (30, 35), (50, 60)]);
    }

    #[test]
    fn the_object_is_built_and_is_a_shared_object() {
        assert!(SHARED_OBJECT.starts_with(b"\x7fELF"));
        assert!(SHARED_OBJECT.len() > 4096);
    }
}
