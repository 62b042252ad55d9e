//! One run of a wrapped program as one record of what happened, every time on CLOCK_MONOTONIC
//! nanoseconds: the keys sent, the program's reads of its terminal, its bursts of terminal
//! writes (a thread's writes between two of its waits: what the observer sees without paying
//! for every write), its waits, the held bytes the bound let out, and the chunks wrap's reader
//! took off the pty. Frames, keys and their stages are pure functions of it
//! ([`keyed`](super::keyed)), tested on timelines written by hand.

use serde::Serialize;

/// What a thread waited in, as the observer saw it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum WaitKind {
    /// poll, ppoll.
    Poll,
    /// select, pselect.
    Select,
    /// epoll_wait, epoll_pwait.
    Epoll,
    /// nanosleep, clock_nanosleep, usleep, sleep: a loop that sleeps a tick.
    Sleep,
    /// sigsuspend, pause.
    Signal,
    /// A futex wait of 0.5 ms or more (Rust's channels, condition variables, park).
    Futex,
    /// A blocking read of the terminal.
    Read,
}

impl WaitKind {
    /// The observer's code for it (observer.c's `enum wait_kind`); `None` for an unknown one.
    pub fn from_wire(code: u16) -> Option<WaitKind> {
        Some(match code {
            1 => WaitKind::Poll,
            2 => WaitKind::Select,
            3 => WaitKind::Epoll,
            4 => WaitKind::Sleep,
            5 => WaitKind::Signal,
            6 => WaitKind::Futex,
            7 => WaitKind::Read,
            _ => return None,
        })
    }

    /// Its name, as the JSON spells it.
    pub fn name(self) -> &'static str {
        match self {
            WaitKind::Poll => "poll",
            WaitKind::Select => "select",
            WaitKind::Epoll => "epoll",
            WaitKind::Sleep => "sleep",
            WaitKind::Signal => "signal",
            WaitKind::Futex => "futex",
            WaitKind::Read => "read",
        }
    }
}

/// A key as it was sent: when its first byte was written to the pty (on CLOCK_MONOTONIC, to
/// line it up with the program's own times and other tools'; and as an `Instant`, for pacing
/// the next), and its name (`j`, `<Down>`; a typed key by its kind only).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SentKey {
    pub at: std::time::Instant,
    pub at_ns: u64,
    pub key: String,
    /// How many bytes it was on the pty, where wrap wrote them (0 where a terminal did): the
    /// program reads keys in order, so a key's read is found by its bytes, not by its time.
    pub bytes: u64,
}

impl SentKey {
    /// `key`, sent now as `bytes` bytes (0: not known).
    pub fn now(key: String, bytes: usize) -> SentKey {
        SentKey {
            at: std::time::Instant::now(),
            at_ns: crate::sys::monotonic_ns(),
            key,
            bytes: bytes as u64,
        }
    }
}

/// A read of the terminal by the program that took bytes (keys, or the terminal's answers).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TerminalRead {
    pub pid: u32,
    pub tid: u32,
    /// When the read returned: the key is in the program's hands.
    pub end_ns: u64,
    pub bytes: u64,
}

/// A thread's terminal writes between two of its waits, ended by the second: a frame, seen
/// from inside.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Burst {
    pub pid: u32,
    pub tid: u32,
    pub first_write_ns: u64,
    /// When the thread began to wait after them: the frame's end.
    pub end_ns: u64,
    pub writes: u64,
    pub bytes: u64,
    /// It continues the burst before it: a wait split one frame (the frame finder's cursor
    /// model saw nothing in it that may start a frame).
    pub continues: bool,
}

/// A blocking wait of a thread of the program.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct WaitSpan {
    pub pid: u32,
    pub tid: u32,
    pub kind: Option<WaitKind>,
    pub start_ns: u64,
    pub end_ns: u64,
    /// It returned because its time was up (a tick, a timer), not because something came.
    pub timed_out: bool,
}

/// `--try frame`: held bytes the bound let out, and when.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Release {
    pub at_ns: u64,
    pub bytes: u64,
}

/// A question the program asked its terminal (cursor position, device attributes, a mode) and
/// whether wrap answered it, when the chunk that held it was read.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Query {
    pub at_ns: u64,
    /// The question's name (`ESC[6n cursor position`).
    pub asked: &'static str,
    pub answered: bool,
}

/// Questions kept at most in a run's timeline (a program that asks each frame, for minutes).
pub const MAX_QUERIES: usize = 1 << 16;

/// Reads closer than this to the previous one join it, unless the stretch would grow longer
/// than [`CHUNK_SPAN_NS`]: an unbuffered program's frame comes in thousands of reads, and a
/// drain known within a fifth of a millisecond is all a key's stages need.
const CHUNK_JOIN_NS: u64 = 50_000;
const CHUNK_SPAN_NS: u64 = 200_000;
/// Stretches kept at most (~100 MB at 24 B each); beyond, the drain is not known.
const MAX_CHUNKS: usize = 4 << 20;

/// What wrap's reader took off the pty: stretches of reads, each with when it began, when its
/// last read returned, and the bytes read by then since the start.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Chunks {
    stretches: Vec<(u64, u64, u64)>,
    total: u64,
    overflowed: bool,
    reader_tid: Option<u32>,
    /// Each read on its own, (when, bytes read by then), where asked for ([`Chunks::each_read`]:
    /// `wrap --via`, whose near end writes a frame in pieces a person can see apart); `None`
    /// otherwise, as a local unbuffered program's millions of reads would fill memory.
    reads: Option<Vec<(u64, u64)>>,
    /// The near end's writer's writes, as an observer saw them (`wrap --via`: the ssh client's
    /// bursts of writes to the near pty, each between two of its waits): (first write, last
    /// write's end, bytes written by then, writes), in order. What it wrote is what was read.
    writes: Option<Vec<NearWrites>>,
    /// The near end redraws instead of forwarding (`wrap --via tmux`, mosh): its bytes are a
    /// layer's, and frames are matched to them by time ([`Redrawn`]); `None`: by bytes.
    redrawn: Option<Redrawn>,
}

/// How a layer that redraws is matched to the far program's frames: a frame's pieces are the
/// near end's pieces done from its first write plus `delay_ns` (the link's one-way delay) until
/// the next frame's first write plus the same, the first of them and those that follow it with
/// no pause longer than `quiet_ns`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Redrawn {
    pub delay_ns: u64,
    pub quiet_ns: u64,
}

/// One piece of the near end: a burst of its writer's writes, or one of wrap's reads.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Piece {
    pub first_ns: u64,
    pub last_ns: u64,
    /// write(2)s in it (a read is one piece).
    pub count: u64,
    /// Bytes of the near end's stream by its end.
    pub upto: u64,
}

/// One burst of the near end's writer: its writes between two of its waits.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct NearWrites {
    pub first_ns: u64,
    pub end_ns: u64,
    pub writes: u64,
    pub bytes: u64,
}

impl Chunks {
    /// The near end's writer's bursts, in order (see [`NearWrites`]); their bytes placed on
    /// the stream from its start.
    pub fn near_writes(&mut self, bursts: &[NearWrites]) {
        self.writes = Some(bursts.to_vec());
    }

    /// The near end redraws (see [`Redrawn`]).
    pub fn redrawn(&mut self, redrawn: Redrawn) {
        self.redrawn = Some(redrawn);
    }

    /// How frames are matched to the near end: by time where it redraws, else by bytes.
    pub fn redraws(&self) -> Option<Redrawn> {
        self.redrawn
    }

    /// The near end's pieces, in order: its writer's bursts where an observer saw it write
    /// (each burst's writes all counted; its first write to its last), else wrap's reads; and
    /// which of the two. `None` where neither was kept.
    pub fn near_pieces(&self) -> Option<(Vec<Piece>, PiecesFrom)> {
        if let Some(bursts) = self.writes.as_ref() {
            let mut upto = 0;
            let pieces = bursts
                .iter()
                .map(|b| {
                    upto += b.bytes;
                    Piece {
                        first_ns: b.first_ns,
                        last_ns: b.end_ns,
                        count: b.writes,
                        upto,
                    }
                })
                .collect();
            return Some((pieces, PiecesFrom::NearWrites));
        }
        let reads = self.reads.as_ref()?;
        let pieces = reads
            .iter()
            .map(|&(at_ns, upto)| Piece {
                first_ns: at_ns,
                last_ns: at_ns,
                count: 1,
                upto,
            })
            .collect();
        Some((pieces, PiecesFrom::NearReads))
    }

    /// Keep each read apart from now on, up to as many as the stretches keep (4 M).
    pub fn each_read(&mut self) {
        self.reads.get_or_insert_with(Vec::new);
    }

    /// `len` bytes read at `at_ns`.
    pub fn note(&mut self, at_ns: u64, len: usize) {
        self.total += len as u64;
        if let Some(reads) = self.reads.as_mut().filter(|r| r.len() < MAX_CHUNKS) {
            reads.push((at_ns, self.total));
        }
        let full = self.stretches.len() >= MAX_CHUNKS;
        match self.stretches.last_mut() {
            Some(last)
                if at_ns.saturating_sub(last.1) < CHUNK_JOIN_NS
                    && at_ns.saturating_sub(last.0) < CHUNK_SPAN_NS =>
            {
                last.1 = at_ns;
                last.2 = self.total;
            }
            _ if full => self.overflowed = true,
            _ => self.stretches.push((at_ns, at_ns, self.total)),
        }
    }

    /// The reads are made by this thread of wrap's.
    pub fn read_by(&mut self, tid: u32) {
        self.reader_tid = Some(tid);
    }

    /// The thread of wrap's that made the reads, when it said.
    pub fn reader_tid(&self) -> Option<u32> {
        self.reader_tid
    }

    /// Bytes read in all.
    pub fn total(&self) -> u64 {
        self.total
    }

    /// When the reader had read `offset` bytes since the start (at most a fifth of a millisecond
    /// late); `None` if it never did or the stretches overflowed.
    pub fn reached(&self, offset: u64) -> Option<u64> {
        if self.overflowed {
            return None;
        }
        let i = self.stretches.partition_point(|s| s.2 < offset);
        self.stretches.get(i).map(|s| s.1)
    }

    /// Bytes the reader had surely read by `at_ns`: those of every stretch over by then (one
    /// that spans it counts none of its bytes).
    pub fn read_before(&self, at_ns: u64) -> u64 {
        let i = self.stretches.partition_point(|s| s.1 <= at_ns);
        i.checked_sub(1).map_or(0, |i| self.stretches[i].2)
    }

    /// Whether nothing was read in the `gap_ns` up to `at_ns` (a stretch that ends in it, or
    /// spans it, was).
    pub fn quiet_before(&self, at_ns: u64, gap_ns: u64) -> bool {
        let i = self.stretches.partition_point(|s| s.0 <= at_ns);
        i.checked_sub(1)
            .is_none_or(|i| self.stretches[i].1 < at_ns.saturating_sub(gap_ns))
    }

    /// The reads as (first, last, bytes) stretches.
    pub fn stretches(&self) -> impl Iterator<Item = (u64, u64, u64)> + '_ {
        let mut before = 0;
        self.stretches.iter().map(move |&(first, last, upto)| {
            let bytes = upto - before;
            before = upto;
            (first, last, bytes)
        })
    }
}

/// What a frame's pieces were counted from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum PiecesFrom {
    /// The near writer's write(2)s, seen by an observer.
    NearWrites,
    /// wrap's reads of the near pty: a large write arrives in several (the pty passes it on in
    /// pieces), writes closer together than wrap read arrive in one.
    NearReads,
}

/// One run, in time.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Timeline {
    pub keys: Vec<SentKey>,
    /// `None`: nobody inside the program said anything (no observer, or it could not load):
    /// reads, bursts, waits and releases are then unknown, not absent.
    pub inside: Option<Inside>,
    pub chunks: Chunks,
    /// What the program asked its terminal and whether it was answered (headless), in order; at
    /// most [`MAX_QUERIES`].
    pub queries: Vec<Query>,
    /// `wrap --terminal`: what a real terminal's window showed.
    pub windows: Windows,
    /// When the run ended.
    pub end_ns: u64,
}

/// When a real terminal's window changed (the X server's DAMAGE reports, or a Wayland
/// compositor's damaged copies), and the frame its markers showed when they were read back.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Windows {
    /// Sorted.
    pub changes: Vec<u64>,
    /// When the markers were read (after the change stamped so), and the frame both showed
    /// (`None`: they disagreed, or showed none). Empty when the program draws no markers.
    pub shown: Vec<(u64, Option<u32>)>,
    /// A change's arrival and the display server's own stamp of it (X11's DamageNotify
    /// `timestamp`, whole milliseconds of CLOCK_MONOTONIC, as ns), sorted by arrival. Empty
    /// where the server stamps nothing (Wayland's screencopy).
    pub server: Vec<(u64, u64)>,
}

/// What the observer inside the program said, sorted by time.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Inside {
    pub reads: Vec<TerminalRead>,
    /// Sorted by their end.
    pub bursts: Vec<Burst>,
    pub waits: Vec<WaitSpan>,
    pub releases: Vec<Release>,
    /// Terminal bytes the program wrote that no burst holds (after its last wait, at exit).
    pub tail_bytes: u64,
}

impl Inside {
    /// Sorts what it holds by time (records arrive in the order threads sent them).
    pub fn sorted(mut self) -> Inside {
        self.reads.sort_by_key(|r| r.end_ns);
        self.bursts.sort_by_key(|b| (b.end_ns, b.first_write_ns));
        self.waits.sort_by_key(|w| (w.start_ns, w.end_ns));
        self.releases.sort_by_key(|r| r.at_ns);
        self
    }

    /// Every terminal byte the program wrote, as the observer saw them.
    pub fn bytes(&self) -> u64 {
        self.bursts.iter().map(|b| b.bytes).sum::<u64>() + self.tail_bytes
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chunks_join_close_reads_and_say_when_an_offset_was_reached() {
        let mut c = Chunks::default();
        // Three reads 10 µs apart, then one 1 ms later, then a run of reads longer than a
        // stretch may be.
        c.note(1_000_000, 100);
        c.note(1_010_000, 100);
        c.note(1_020_000, 100);
        c.note(2_000_000, 50);
        for i in 0..30 {
            c.note(3_000_000 + i * 10_000, 10);
        }
        assert_eq!(c.total(), 650);
        assert_eq!(c.reached(1), Some(1_020_000));
        assert_eq!(c.reached(300), Some(1_020_000));
        assert_eq!(c.reached(301), Some(2_000_000));
        // The long run is cut into stretches of at most 200 µs: the last byte's is late by less.
        assert_eq!(c.reached(650), Some(3_290_000));
        assert!(c.reached(360).unwrap() < 3_200_000);
        assert_eq!(c.reached(651), None);
        let bytes: u64 = c.stretches().map(|s| s.2).sum();
        assert_eq!(bytes, 650);
    }

    #[test]
    fn wait_kinds_read_from_the_wire() {
        assert_eq!(WaitKind::from_wire(6), Some(WaitKind::Futex));
        assert_eq!(WaitKind::from_wire(7), Some(WaitKind::Read));
        assert_eq!(WaitKind::from_wire(0), None);
        assert_eq!(WaitKind::from_wire(99), None);
        // The name said is the one the JSON says.
        for code in 1..=7 {
            let kind = WaitKind::from_wire(code).unwrap();
            assert_eq!(
                serde_json::to_value(kind).unwrap(),
                serde_json::Value::from(kind.name())
            );
        }
    }
}
