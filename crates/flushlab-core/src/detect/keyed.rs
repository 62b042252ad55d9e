//! What each key cost a program that draws when a key arrives, stage by stage, as a pure
//! function of the run's [`Timeline`]: in Event Timing's shape (what browsers report for
//! every input), a key's time from being written to the pty to its frame's end splits into
//!
//! - *input delay*: until the read that took it returned, in whichever thread read it (an input
//!   thread feeding a channel counts);
//! - *processing*: until the program, done with it, waits on its own clock (a render tick, a
//!   frame cap) or, where it does not, until the first terminal write of its frame;
//! - *presentation delay*: that wait, until the frame's first write: a wait that returned by
//!   its timeout, begun after the read and ended before the first write, in the drawing
//!   thread, or (a wait that is no sleep: poll, epoll, futex) in any thread of its process;
//! - *emit*: until that frame's end (the drawing thread's next wait, seen from inside);
//!
//! and *drain* follows: until wrap's reader took the frame's last byte off the pty — or, in a
//! real terminal (`wrap --terminal`), *paint*: until the window's last change for the key
//! ([`pixels`](super::pixels)).
//!
//! A key's frame is the first frame that answers it: the first burst of terminal writes that
//! began after the read that took it (before the next key's read), or, where no read was seen,
//! after the key was sent. Frames nobody asked for (a tick, a clock, a spinner) are
//! *unprompted*: counted apart, never in a key's time. Where nothing is known from inside (no
//! observer, or no wait returned) the frame ends at the last byte before the output goes quiet
//! for [`QUIET`] (an upper bound), and there are no stages.

use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::timeline::{Burst, SentKey, TerminalRead, Timeline, WaitKind, WaitSpan};
use crate::statistics::percentile;

/// Output that stops this long has finished its frame, when the frame's end is not known from
/// inside: far longer than the gaps between an unbuffered program's writes (microseconds),
/// shorter than a person's keys.
pub const QUIET: Duration = Duration::from_millis(5);

/// Where a key's frame was taken to end.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum EndFrom {
    /// The drawing thread's next wait after writing, seen from inside.
    Wait,
    /// The answer's last byte before the next key or the end (an upper bound).
    QuietGap,
}

/// A key's stages, in milliseconds. `input_delay + processing + emit` is the key's time to its
/// frame; without a read seen, processing runs from the key's send and `input_delay` is `None`.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct Stages {
    pub input_delay: Option<f64>,
    pub processing: f64,
    /// Waiting for the program's own tick after its processing (`None`: it drew at once).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub presentation_delay: Option<f64>,
    pub emit: f64,
    /// `None` when the frame's last byte cannot be placed in what wrap read (bytes reached the
    /// terminal that the observer did not see written).
    pub drain: Option<f64>,
    /// In a real terminal: from the frame's end to the window's last change for the key (0
    /// when the picture stopped changing before the frame ended: its last bytes changed no
    /// pixel).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub paint: Option<f64>,
}

impl Stages {
    /// A key sent at `sent`, read at `read` (when seen), answered by `frame`, whose last byte
    /// wrap read at `drained` (when known); all CLOCK_MONOTONIC nanoseconds.
    /// `tick`: when the program began waiting for its own tick, if it did.
    fn of(
        sent: u64,
        read: Option<u64>,
        (frame, tick): (&Burst, Option<u64>),
        drained: Option<u64>,
    ) -> Stages {
        let ms = |ns: u64| ns as f64 / 1e6;
        let from = read.unwrap_or(sent);
        let presented = tick.unwrap_or(frame.first_write_ns);
        Stages {
            input_delay: read.map(|r| ms(r - sent)),
            processing: ms(presented - from),
            presentation_delay: tick.map(|t| ms(frame.first_write_ns - t)),
            emit: ms(frame.end_ns - frame.first_write_ns),
            drain: drained.map(|at| ms(at.saturating_sub(frame.end_ns))),
            paint: None,
        }
    }
}

/// The stages named, for the summary and the diagnosis.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Stage {
    InputDelay,
    Processing,
    PresentationDelay,
    Emit,
    Drain,
    Paint,
}

impl Stage {
    /// Every stage, in the order a key goes through them.
    pub const ALL: [Stage; 6] = [
        Stage::InputDelay,
        Stage::Processing,
        Stage::PresentationDelay,
        Stage::Emit,
        Stage::Drain,
        Stage::Paint,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Stage::InputDelay => "input delay",
            Stage::Processing => "processing",
            Stage::PresentationDelay => "presentation delay",
            Stage::Emit => "emit",
            Stage::Drain => "drain",
            Stage::Paint => "paint",
        }
    }
}

/// p50, p95 and max of each stage over the keys that have it.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct StageSummary {
    pub input_delay: Option<Percentiles>,
    pub processing: Option<Percentiles>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub presentation_delay: Option<Percentiles>,
    pub emit: Option<Percentiles>,
    pub drain: Option<Percentiles>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub paint: Option<Percentiles>,
    /// Over a wire (`wrap --via`): the input delay, named as the wire's (the key at the near
    /// end to the far program's read of it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub uplink: Option<Percentiles>,
    /// Over a wire: the drain, named as the wire's (the far frame's end to its last byte at
    /// the near end).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub downlink: Option<Percentiles>,
}

impl StageSummary {
    pub(crate) fn of_keys(each: &[KeyAnswer]) -> Option<StageSummary> {
        let stages: Vec<&Stages> = each.iter().filter_map(|k| k.stages_ms.as_ref()).collect();
        if stages.is_empty() {
            return None;
        }
        Some(StageSummary {
            input_delay: Percentiles::of(stages.iter().filter_map(|s| s.input_delay)),
            processing: Percentiles::of(stages.iter().map(|s| s.processing)),
            // Over the keys that waited for a tick, each other key's 0: a key drawn at once
            // did not wait.
            presentation_delay: stages
                .iter()
                .any(|s| s.presentation_delay.is_some())
                .then(|| {
                    Percentiles::of(stages.iter().map(|s| s.presentation_delay.unwrap_or(0.0)))
                })
                .flatten(),
            emit: Percentiles::of(stages.iter().map(|s| s.emit)),
            drain: Percentiles::of(stages.iter().filter_map(|s| s.drain)),
            paint: Percentiles::of(stages.iter().filter_map(|s| s.paint)),
            uplink: None,
            downlink: None,
        })
    }

    /// Each stage known, in order.
    pub fn each(&self) -> impl Iterator<Item = (Stage, Percentiles)> {
        [
            (Stage::InputDelay, self.input_delay),
            (Stage::Processing, self.processing),
            (Stage::PresentationDelay, self.presentation_delay),
            (Stage::Emit, self.emit),
            (Stage::Drain, self.drain),
            (Stage::Paint, self.paint),
        ]
        .into_iter()
        .filter_map(|(stage, p)| Some((stage, p?)))
    }

    /// The stage with the largest median: where a key's time goes.
    pub fn dominant(&self) -> Option<Stage> {
        self.each()
            .max_by(|a, b| a.1.p50.total_cmp(&b.1.p50))
            .map(|(stage, _)| stage)
    }
}

/// One key and its answer; times in milliseconds after the key was sent.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct KeyAnswer {
    pub key: String,
    /// After the first key.
    pub sent_ms: f64,
    /// When it was sent, CLOCK_MONOTONIC nanoseconds (the program's own clock, strace's and
    /// perf's can be held against it).
    pub sent_ns: u64,
    pub first_byte_ms: Option<f64>,
    pub frame_ms: Option<f64>,
    pub frame_end: Option<EndFrom>,
    /// Its frame's stages, when its frame is known from inside.
    pub stages_ms: Option<Stages>,
    /// Frames that answered it, seen from inside: 1, or 0 for a key that drew nothing (`None`
    /// from outside).
    pub frames: Option<u64>,
    /// Terminal write(2) calls of its frame as the program made them, seen from inside.
    pub writes: Option<u64>,
    /// Bytes of its frame (seen from inside), else what reached the terminal before the next key.
    pub bytes: u64,
    /// In a real terminal: when the window first and last changed for it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pixels_ms: Option<KeyPixels>,
    /// Over a wire (`wrap --via`): its frame at the near end.
    #[serde(flatten)]
    pub near: AtNearEnd,
    /// Its frame: which of the timeline's bursts (for drawing the run, not for the report).
    #[serde(skip)]
    pub burst: Option<usize>,
    /// Its frame also answered the key before: the program took both in one read (typed
    /// faster than it, or than a link's round trip), and one frame answered both.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub coalesced: bool,
}

/// A key's frame at the near end of a wire (`wrap --via`, [`wire`](super::wire)): its last
/// byte there, the pieces it came in and the first to the last of them; none locally.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize)]
pub struct AtNearEnd {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub last_byte_ms: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pieces: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tear_ms: Option<f64>,
}

/// Milliseconds of a key's figures back to the whole nanoseconds they were taken from.
fn ns(ms: f64) -> u64 {
    (ms * 1e6).round().max(0.0) as u64
}

impl KeyAnswer {
    /// When its frame ended, CLOCK_MONOTONIC ns (`None` without a frame).
    pub fn frame_end_ns(&self) -> Option<u64> {
        Some(self.sent_ns + ns(self.frame_ms?))
    }

    /// Each of its stages as a span, CLOCK_MONOTONIC ns: input delay (where a read was seen),
    /// processing and emit, end to end from the key's send to its frame's end, then drain and
    /// paint after it (where known), each from the frame's end. Drawn from the figures above in
    /// whole nanoseconds, so the spans meet exactly and the first three add up to `frame_ms`:
    /// what a trace, a profile's markers and a waterfall draw is the report's. Empty without
    /// stages.
    pub fn stage_spans(&self) -> Vec<(Stage, u64, u64)> {
        let Some(s) = self.stages_ms else {
            return Vec::new();
        };
        let mut at = self.sent_ns;
        let mut spans: Vec<(Stage, u64, u64)> = [
            (Stage::InputDelay, s.input_delay),
            (Stage::Processing, Some(s.processing)),
            (Stage::PresentationDelay, s.presentation_delay),
            (Stage::Emit, Some(s.emit)),
        ]
        .into_iter()
        .filter_map(|(stage, ms)| {
            let from = at;
            at += ns(ms?);
            Some((stage, from, at))
        })
        .collect();
        for (stage, ms) in [(Stage::Drain, s.drain), (Stage::Paint, s.paint)] {
            if let Some(ms) = ms {
                spans.push((stage, at, at + ns(ms)));
            }
        }
        spans
    }
}

/// In a real terminal (`wrap --terminal`, [`pixels`](super::pixels)): when the window first
/// and last changed for one key, in milliseconds after the key was sent; and where the program
/// paints frame markers, the frame the window showed at its last change.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct KeyPixels {
    pub first: f64,
    pub last: f64,
    /// The last pixel as the display server stamped it (X11: its DamageNotify's own time, taken
    /// as the rectangle was drawn, in whole milliseconds; `last` is when wrap read the report).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub last_server: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub frame_shown: Option<u32>,
}

/// Key→first and last pixel, and how often the window changed in the run.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct PixelSummary {
    pub first: Percentiles,
    pub last: Percentiles,
    /// Key→last pixel by the display server's own stamps, where it stamps (X11).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub last_server: Option<Percentiles>,
    /// Each window change's arrival at wrap after the server's own stamp of it (ms, every
    /// change of the run; the stamp is whole milliseconds, so a gap reads up to 1 ms high and
    /// never below -1): how long the server held the report before wrap heard of it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub server_gap: Option<Percentiles>,
    /// Keys with a frame whose window never changed for it.
    pub unpainted: u64,
    /// The window's changes seen in the whole run.
    pub changes: u64,
}

/// p50, p95 and max of some milliseconds ([`rank`](crate::statistics::rank)).
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct Percentiles {
    pub p50: f64,
    pub p95: f64,
    pub max: f64,
}

impl Percentiles {
    pub fn of(values: impl IntoIterator<Item = f64>) -> Option<Percentiles> {
        let mut v: Vec<f64> = values.into_iter().filter(|x| x.is_finite()).collect();
        if v.is_empty() {
            return None;
        }
        v.sort_by(f64::total_cmp);
        Some(Percentiles {
            p50: percentile(&v, 0.5),
            p95: percentile(&v, 0.95),
            max: v[v.len() - 1],
        })
    }
}

/// What the bench reads back of a wrap report's `keys` (wrap's `--keys`; absent without):
/// the time from a key to its frame, over the run's keys.
#[derive(Clone, Copy, Debug, Default, PartialEq, Deserialize)]
pub struct WrapKeys {
    pub key_to_frame_ms: Option<Percentiles>,
    pub stages_ms: Option<StageSummary>,
}

/// The `keys` of a wrap report, read back (other fields of the report are WrapRun's).
#[derive(Clone, Copy, Debug, Default, PartialEq, Deserialize)]
pub struct WrapKeysRun {
    #[serde(default)]
    pub keys: Option<WrapKeys>,
}

/// The run's frames seen from inside, one count: those that answered keys, those nobody asked
/// for after the first key, those before it (the program's start).
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct FrameCounts {
    pub answering: u64,
    pub unprompted: u64,
    /// Unprompted frames a second, from the first key to the end of the run.
    pub unprompted_per_second: f64,
    pub before_keys: u64,
}

impl FrameCounts {
    /// `answering[i]`: burst `i` answered a key; `start`: the first key's send; `end`: the run's.
    /// A burst that continues the one before (a wait split its frame) is that frame's: frames
    /// are counted as the summary counts them.
    fn of(bursts: &[Burst], answering: &[bool], start: u64, end: u64) -> FrameCounts {
        // Each frame: whether it answered a key, when its first burst ended.
        let mut frames: Vec<(bool, u64)> = Vec::with_capacity(bursts.len());
        for (b, &answers) in bursts.iter().zip(answering) {
            match frames.last_mut() {
                Some(frame) if b.continues => frame.0 |= answers,
                _ => frames.push((answers, b.end_ns)),
            }
        }
        let unprompted = frames
            .iter()
            .filter(|&&(answers, end)| !answers && end >= start)
            .count() as u64;
        let seconds = end.saturating_sub(start) as f64 / 1e9;
        FrameCounts {
            answering: frames.iter().filter(|f| f.0).count() as u64,
            unprompted,
            unprompted_per_second: if seconds > 0.0 {
                unprompted as f64 / seconds
            } else {
                0.0
            },
            before_keys: frames.iter().filter(|f| !f.0 && f.1 < start).count() as u64,
        }
    }
}

/// Every key's answer, and their summary.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct KeyLatencies {
    pub keys: u64,
    /// Keys after which nothing reached the terminal before the next (no byte, no frame).
    pub unanswered: u64,
    pub first_byte_ms: Option<Percentiles>,
    pub key_to_frame_ms: Option<Percentiles>,
    /// Each stage over the keys whose frame is known from inside.
    pub stages_ms: Option<StageSummary>,
    /// The stage with the largest median.
    pub dominant_stage: Option<Stage>,
    /// Keys whose frame end was seen from inside, and from a quiet gap.
    pub frame_end_from_wait: u64,
    pub frame_end_from_quiet_gap: u64,
    /// Seen from inside.
    pub frames: Option<FrameCounts>,
    pub writes_per_key: Option<f64>,
    pub bytes_per_key: f64,
    /// In a real terminal: key→first and last pixel over the keys whose picture changed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pixels_ms: Option<PixelSummary>,
    /// Over a wire (`wrap --via`): key→last byte at the near end, pieces a frame and tear.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub key_to_last_byte_ms: Option<Percentiles>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pieces_per_frame: Option<Percentiles>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tear_ms: Option<Percentiles>,
    pub each: Vec<KeyAnswer>,
}

/// Where each frame's last byte is in the output, the bytes of every burst that ended by then
/// and of every byte the observer did not see written before it, where that can be known.
/// Unseen bytes the reader had taken before a frame began leave it unknown (the offsets would
/// not line up) — until a frame begins after the reader has taken nothing for [`QUIET`]: all
/// written before had been read, so the bytes read by then are every byte before that frame,
/// seen or not, and the offsets line up again from there (mc's startup, written through
/// stdio the preload does not see, had left all its keys' drains unknown). Bytes unseen after
/// a frame (a last write as the run ends, its wait never returned) leave it known.
pub(crate) fn offsets(timeline: &Timeline) -> Vec<Option<u64>> {
    let Some(inside) = timeline.inside.as_ref() else {
        return Vec::new();
    };
    let chunks = &timeline.chunks;
    let all_seen = inside.bytes() == chunks.total();
    let quiet = QUIET.as_nanos() as u64;
    let (mut upto, mut unseen) = (0, 0);
    inside
        .bursts
        .iter()
        .map(|b| {
            let before = upto;
            upto += b.bytes;
            if all_seen {
                return Some(upto);
            }
            let read = chunks.read_before(b.first_write_ns);
            if read > before + unseen && chunks.quiet_before(b.first_write_ns, quiet) {
                unseen = read - before;
            }
            let lined_up = read <= before + unseen && upto + unseen <= chunks.total();
            lined_up.then_some(upto + unseen)
        })
        .collect()
}

/// A key's read: the first read of the terminal that returned after it was sent and took bytes
/// (when it returned, and its thread).
fn read_after(reads: &[TerminalRead], sent: u64) -> Option<(u64, u32)> {
    let i = reads.partition_point(|r| r.end_ns < sent);
    reads.get(i).map(|r| (r.end_ns, r.tid))
}

/// Each key's read (when it returned, and its thread), the keys taken in order as the program
/// reads them. A program reads its input in order, so a key is in the read that took its bytes:
/// the read that took the key before it, where that read took more bytes than the key before
/// (one read for both: the later key is coalesced into it), else the next read after that one
/// which returned after the key was sent. Over a link, keys sent faster than the round trip are
/// still in flight when the first arrives: the first read after a key's send may be an earlier
/// key's, which the time alone would credit it with. A key whose bytes are unknown (typed into
/// a terminal, which encodes it) is found by time.
fn reads_of_keys(reads: &[TerminalRead], keys: &[SentKey]) -> Vec<Option<(u64, u32)>> {
    // The read the previous key was found in, and how many of its bytes are not yet a key's.
    let mut at: Option<(usize, u64)> = None;
    keys.iter()
        .map(|key| {
            if key.bytes == 0 {
                at = None;
                return read_after(reads, key.at_ns);
            }
            let index = match at {
                Some((i, left)) if left >= key.bytes => {
                    at = Some((i, left - key.bytes));
                    return Some((reads[i].end_ns, reads[i].tid));
                }
                Some((i, _)) => reads.partition_point(|r| r.end_ns < key.at_ns).max(i + 1),
                None => reads.partition_point(|r| r.end_ns < key.at_ns),
            };
            let read = reads.get(index)?;
            at = Some((index, read.bytes.saturating_sub(key.bytes)));
            Some((read.end_ns, read.tid))
        })
        .collect()
}

/// Each key's answer and stages, from the run's timeline.
pub fn key_latencies(timeline: &Timeline) -> KeyLatencies {
    let ms = |ns: u64| ns as f64 / 1e6;
    let keys = &timeline.keys;
    let arrivals: Vec<(u64, u64, u64)> = timeline.chunks.stretches().collect();
    let inside = timeline.inside.as_ref();
    let bursts: &[Burst] = inside.map_or(&[], |i| &i.bursts);
    let reads = inside.map_or(&[][..], |i| &i.reads[..]);
    let near = super::near::near_end(timeline, &offsets(timeline));
    let key_reads = reads_of_keys(reads, keys);
    let mut answering = vec![false; bursts.len()];
    let mut each = Vec::with_capacity(keys.len());
    let mut queue = FrameQueue {
        bursts,
        next_free: 0,
        last: None,
    };
    for (i, key) in keys.iter().enumerate() {
        let until = keys.get(i + 1).map_or(timeline.end_ns, |next| next.at_ns);
        let window: Vec<&(u64, u64, u64)> = arrivals
            .iter()
            .filter(|a| a.0 >= key.at_ns && a.0 < until)
            .collect();
        let first = window.first().map(|a| a.0);
        let read = key_reads[i];
        // The next key's read, when another: a thread that read it was done with this key, so
        // a frame it began after that answers the next (a single-threaded loop's key that drew
        // nothing). An input thread's reads say nothing of where the drawing thread is: keys
        // queued behind a slow frame are answered by the frames that follow, in order.
        let next_read = key_reads
            .get(i + 1)
            .copied()
            .flatten()
            .filter(|&r| Some(r) != read);
        let from = read.map_or(key.at_ns, |r| r.0);
        let frame = queue.answer(read, from, next_read);
        let (read, reader) = (read.map(|r| r.0), read.map(|r| r.1));
        let waits = inside.map_or(&[][..], |i| &i.waits[..]);
        let (frame_ms, frame_end, stages_ms, writes, bytes) = match frame {
            Some(f) => {
                answering[f] = true;
                let b = &bursts[f];
                let drained = near.frames.get(f).and_then(|n| n.last_byte_ns);
                let tick = tick_wait(waits, (from, reader), b);
                (
                    Some(ms(b.end_ns - key.at_ns)),
                    Some(EndFrom::Wait),
                    Some(Stages::of(key.at_ns, read, (b, tick), drained)),
                    Some(b.writes),
                    b.bytes,
                )
            }
            None => {
                let bytes = window.iter().map(|a| a.2).sum();
                let quiet = quiet_end(&arrivals, key.at_ns).map(|at| ms(at - key.at_ns));
                let end_from = first.map(|_| EndFrom::QuietGap);
                // From inside, a key that drew nothing made no write; one whose frame never
                // ended (no wait returned) made writes nobody counted yet.
                let writes = inside.and(first.is_none().then_some(0));
                (
                    quiet.filter(|_| first.is_some()),
                    end_from,
                    None,
                    writes,
                    bytes,
                )
            }
        };
        each.push(KeyAnswer {
            key: key.key.clone(),
            sent_ms: keys.first().map_or(0.0, |k0| ms(key.at_ns - k0.at_ns)),
            sent_ns: key.at_ns,
            first_byte_ms: first.map(|at| ms(at - key.at_ns)),
            frame_ms,
            frame_end,
            frames: inside.map(|_| u64::from(frame.is_some())),
            stages_ms,
            writes,
            bytes,
            pixels_ms: None,
            near: AtNearEnd::default(),
            burst: frame,
            coalesced: frame.is_some() && each.last().is_some_and(|k: &KeyAnswer| k.burst == frame),
        });
    }
    let start = keys.first().map_or(timeline.end_ns, |k| k.at_ns);
    let frames = inside.map(|_| FrameCounts::of(bursts, &answering, start, timeline.end_ns));
    KeyLatencies::of(each, frames)
}

/// When the program, done with a key read at `from`, began waiting for its own tick before
/// `frame`, if it did. The tick: the last wait begun after the read that returned by its
/// timeout by the frame's first write. The program waited for it from the earliest start,
/// after the read, of a wait still going when the tick's wait began (its thread idle until the
/// tick came: a thread parked beside the one that waits on the timer). Waits count in the
/// drawing thread, or, waits that are no sleep, in any thread of its process but an input
/// thread (`reader`, which read the key and waits for the next: nothing of the frame): a sleep
/// of another thread (Go's monitor wakes every few ms) says nothing of the frame either.
fn tick_wait(waits: &[WaitSpan], (from, reader): (u64, Option<u32>), frame: &Burst) -> Option<u64> {
    let first = frame.first_write_ns;
    let counted = |w: &&WaitSpan| {
        w.pid == frame.pid
            && w.start_ns >= from
            && w.start_ns < first
            && (w.tid == frame.tid || (w.kind != Some(WaitKind::Sleep) && Some(w.tid) != reader))
    };
    let tick = waits
        .iter()
        .filter(counted)
        .filter(|w| w.timed_out && w.end_ns <= first)
        .max_by_key(|w| w.end_ns)?;
    waits
        .iter()
        .filter(counted)
        .filter(|w| w.end_ns >= tick.start_ns)
        .map(|w| w.start_ns)
        .min()
}

/// The frames, taken in order by the keys: one a key, or one for all the keys of one read.
struct FrameQueue<'a> {
    bursts: &'a [Burst],
    /// Bursts before this one answered earlier keys.
    next_free: usize,
    /// The last key's read (its end) and its frame.
    last: Option<(u64, usize)>,
}

impl FrameQueue<'_> {
    /// The frame of a key read by `read` (end, thread) — looked for from `from` on — whose next
    /// key was read by `next_read`, if another read.
    fn answer(
        &mut self,
        read: Option<(u64, u32)>,
        from: u64,
        next_read: Option<(u64, u32)>,
    ) -> Option<usize> {
        let bursts = self.bursts;
        let frame = match (read, self.last) {
            (Some((end, _)), Some((shared, f))) if end == shared => Some(f),
            _ => {
                // Bursts are sorted by their end; one that began after `from` ended after it.
                let start = bursts
                    .partition_point(|b| b.end_ns < from)
                    .max(self.next_free);
                (start..bursts.len())
                    .find(|&f| bursts[f].first_write_ns >= from)
                    .filter(|&f| {
                        next_read.is_none_or(|(r, tid)| {
                            tid != bursts[f].tid || bursts[f].first_write_ns < r
                        })
                    })
            }
        };
        if let Some(f) = frame {
            self.next_free = f + 1;
            self.last = read.map(|r| (r.0, f));
        }
        frame
    }
}

/// The last byte before the output goes quiet for [`QUIET`], from the first after `from`.
fn quiet_end(arrivals: &[(u64, u64, u64)], from: u64) -> Option<u64> {
    let start = arrivals.partition_point(|a| a.0 < from);
    let mut end = arrivals.get(start)?.1;
    for next in &arrivals[start + 1..] {
        if next.0.saturating_sub(end) >= QUIET.as_nanos() as u64 {
            break;
        }
        end = next.1;
    }
    Some(end)
}

impl KeyLatencies {
    /// The summary of every key's answer.
    fn of(each: Vec<KeyAnswer>, frames: Option<FrameCounts>) -> KeyLatencies {
        let ended = |from| each.iter().filter(|k| k.frame_end == Some(from)).count() as u64;
        let stages_ms = StageSummary::of_keys(&each);
        KeyLatencies {
            keys: each.len() as u64,
            unanswered: each
                .iter()
                .filter(|k| k.first_byte_ms.is_none() && k.frame_ms.is_none())
                .count() as u64,
            first_byte_ms: Percentiles::of(each.iter().filter_map(|k| k.first_byte_ms)),
            key_to_frame_ms: Percentiles::of(each.iter().filter_map(|k| k.frame_ms)),
            dominant_stage: stages_ms.and_then(|s| s.dominant()),
            stages_ms,
            frame_end_from_wait: ended(EndFrom::Wait),
            frame_end_from_quiet_gap: ended(EndFrom::QuietGap),
            frames,
            // Over the keys whose writes are known (a last key whose frame never ended is not).
            writes_per_key: frames.and_then(|_| {
                let known: Vec<u64> = each.iter().filter_map(|k| k.writes).collect();
                (!known.is_empty()).then(|| known.iter().sum::<u64>() as f64 / known.len() as f64)
            }),
            // From inside, over the keys whose frame is known (their bytes are the frame's, the
            // same run after run; a last key whose frame never ended has only what arrived).
            bytes_per_key: {
                let known: Vec<u64> = each
                    .iter()
                    .filter(|k| frames.is_none() || k.writes.is_some())
                    .map(|k| k.bytes)
                    .collect();
                known.iter().sum::<u64>() as f64 / known.len().max(1) as f64
            },
            pixels_ms: None,
            key_to_last_byte_ms: None,
            pieces_per_frame: None,
            tear_ms: None,
            each,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::timeline::{Chunks, Inside};
    use super::*;

    /// Keys 50 ms apart over a one-way delay of 100 ms: each key's read is its own, in order,
    /// not the first read after its send (an earlier key's, still arriving); two keys in one
    /// read share it; a key whose bytes are unknown is found by time.
    #[test]
    fn keys_in_flight_are_matched_to_their_own_reads_in_order() {
        let key = |at_ms: u64, bytes: u64| SentKey {
            at: std::time::Instant::now(),
            at_ns: at_ms * MS,
            key: "a".into(),
            bytes,
        };
        let read = |end_ms: u64, bytes: u64| TerminalRead {
            pid: 1,
            tid: 1,
            end_ns: end_ms * MS,
            bytes,
        };
        let keys: Vec<SentKey> = (0..6).map(|i| key(i * 50, 1)).collect();
        let reads: Vec<TerminalRead> = (0..6).map(|i| read(i * 50 + 100, 1)).collect();
        let found: Vec<u64> = reads_of_keys(&reads, &keys)
            .into_iter()
            .map(|r| r.unwrap().0 / MS)
            .collect();
        assert_eq!(found, [100, 150, 200, 250, 300, 350]);
        // Keys 2 and 3 (3-byte keys) in one read of 6 bytes; key 4 in the next.
        let keys = [key(0, 3), key(10, 3), key(20, 3), key(30, 3)];
        let reads = [read(100, 3), read(110, 6), read(130, 3)];
        let found: Vec<u64> = reads_of_keys(&reads, &keys)
            .into_iter()
            .map(|r| r.unwrap().0 / MS)
            .collect();
        assert_eq!(found, [100, 110, 110, 130]);
        // Unknown bytes: by time, as before.
        let keys = [key(0, 0), key(50, 0)];
        let reads = [read(100, 1), read(150, 1)];
        let found: Vec<u64> = reads_of_keys(&reads, &keys)
            .into_iter()
            .map(|r| r.unwrap().0 / MS)
            .collect();
        assert_eq!(found, [100, 100]);
        // More keys than reads: the last ones have none.
        let keys = [key(0, 1), key(10, 1)];
        assert_eq!(reads_of_keys(&[read(100, 1)], &keys)[1], None);
    }

    const MS: u64 = 1_000_000;

    fn keys(at_ms: &[u64]) -> Vec<SentKey> {
        at_ms
            .iter()
            .map(|&t| SentKey {
                at: std::time::Instant::now(),
                at_ns: t * MS,
                key: "j".into(),
                bytes: 0,
            })
            .collect()
    }

    fn burst(first_ms: f64, end_ms: f64, bytes: u64) -> Burst {
        Burst {
            pid: 1,
            tid: 1,
            first_write_ns: (first_ms * 1e6) as u64,
            end_ns: (end_ms * 1e6) as u64,
            writes: bytes / 10,
            bytes,
            continues: false,
        }
    }

    fn read(end_ms: f64) -> TerminalRead {
        TerminalRead {
            pid: 1,
            tid: 2,
            end_ns: (end_ms * 1e6) as u64,
            bytes: 1,
        }
    }

    /// Wrap read each burst's bytes `lag_ms` after its end, in one read.
    fn chunks_of(bursts: &[Burst], lag_ms: f64) -> Chunks {
        let mut c = Chunks::default();
        for b in bursts {
            c.note(b.end_ns + (lag_ms * 1e6) as u64, b.bytes as usize);
        }
        c
    }

    fn round(x: f64) -> f64 {
        (x * 1e3).round() / 1e3
    }

    fn wait(tid: u32, kind: WaitKind, (start_ms, end_ms): (f64, f64), timed_out: bool) -> WaitSpan {
        WaitSpan {
            pid: 1,
            tid,
            kind: Some(kind),
            start_ns: (start_ms * 1e6) as u64,
            end_ns: (end_ms * 1e6) as u64,
            timed_out,
        }
    }

    /// A program that draws on its own tick (bubbletea's renderer): a key read at 3 ms, 2 ms
    /// of work, then the drawing waits in epoll until the tick at 16.7 ms, and writes. Another
    /// thread's sleeps (Go's monitor) and a wait that something ended (a key, not the clock)
    /// are no tick.
    #[test]
    fn a_key_that_waits_for_the_programs_tick_has_a_presentation_delay() {
        let frames = vec![burst(17.0, 18.0, 1000), burst(45.0, 46.0, 1000)];
        let waits = vec![
            // Key 1: the monitor sleeps meanwhile; thread 3 waits in epoll until the tick.
            wait(4, WaitKind::Sleep, (3.5, 16.0), true),
            wait(3, WaitKind::Epoll, (5.0, 16.7), true),
            // Key 2: drawn at once; a wait that ended by a key (not timed out) is no tick.
            wait(3, WaitKind::Epoll, (42.0, 43.0), false),
            wait(4, WaitKind::Sleep, (41.5, 44.0), true),
        ];
        let timeline = Timeline {
            keys: keys(&[1, 40]),
            inside: Some(
                Inside {
                    reads: vec![read(3.0), read(41.0)],
                    bursts: frames.clone(),
                    waits,
                    ..Inside::default()
                }
                .sorted(),
            ),
            chunks: chunks_of(&frames, 0.5),
            queries: Vec::new(),
            windows: Default::default(),
            end_ns: 60 * MS,
        };
        let k = key_latencies(&timeline);
        let ticked = k.each[0].stages_ms.unwrap();
        assert_eq!(round(ticked.processing), 2.0);
        assert_eq!(round(ticked.presentation_delay.unwrap()), 12.0);
        assert_eq!(round(ticked.emit), 1.0);
        let sum = ticked.input_delay.unwrap() + ticked.processing + 12.0 + ticked.emit;
        assert_eq!(round(sum), round(k.each[0].frame_ms.unwrap()));
        let at_once = k.each[1].stages_ms.unwrap();
        assert_eq!(at_once.presentation_delay, None);
        assert_eq!(round(at_once.processing), 4.0);
        // The spans meet, in order, the presentation delay between processing and emit.
        let spans = k.each[0].stage_spans();
        let order: Vec<Stage> = spans.iter().map(|s| s.0).collect();
        assert_eq!(
            &order[..4],
            [
                Stage::InputDelay,
                Stage::Processing,
                Stage::PresentationDelay,
                Stage::Emit
            ]
        );
        assert!(spans.windows(2).take(3).all(|w| w[0].2 == w[1].1));
        // Over both keys: the drawn-at-once key waited 0.
        let summary = k.stages_ms.unwrap().presentation_delay.unwrap();
        assert_eq!((round(summary.p50), round(summary.max)), (0.0, 12.0));
    }

    /// Bytes the observer did not see written cost the drain of the frames after them only:
    /// an unseen last write (its wait never returned as the run ends) none; an unseen write
    /// the reader took just before a frame began, that frame's — the next frame, begun after
    /// the reader had been quiet for [`QUIET`], lines up again.
    #[test]
    fn unseen_bytes_cost_the_drain_of_the_frames_after_them_only() {
        let frames = vec![burst(5.0, 6.0, 100), burst(25.0, 26.0, 100)];
        let mut trailing = chunks_of(&frames, 0.5);
        trailing.note(40 * MS, 1);
        let mut early = Chunks::default();
        early.note(2 * MS, 7);
        for b in &frames {
            early.note(b.end_ns + MS / 2, b.bytes as usize);
        }
        let drains = |chunks: Chunks| {
            let timeline = Timeline {
                keys: keys(&[1, 20]),
                inside: Some(
                    Inside {
                        reads: vec![read(3.0), read(21.0)],
                        bursts: frames.clone(),
                        ..Inside::default()
                    }
                    .sorted(),
                ),
                chunks,
                queries: Vec::new(),
                windows: Default::default(),
                end_ns: 50 * MS,
            };
            key_latencies(&timeline)
                .each
                .iter()
                .map(|k| k.stages_ms.unwrap().drain.map(round))
                .collect::<Vec<_>>()
        };
        assert_eq!(drains(trailing), vec![Some(0.5), Some(0.5)]);
        assert_eq!(drains(early), vec![None, Some(0.5)]);
    }

    #[test]
    fn each_key_is_answered_by_the_first_frame_after_its_read_in_four_stages() {
        // Keys at 1, 101, 201 ms, each read 2 ms later (a loop that sleeps before it reads),
        // its frame begun 2 ms after the read, written in 4 ms, read by wrap 0.5 ms after. A
        // clock redraws by itself at 50, 150 and 250 ms (2 ms each); the frame that ends at
        // 0.5 ms is the program's start.
        let all = vec![
            burst(0.0, 0.5, 50),
            burst(5.0, 9.0, 1000),
            burst(50.0, 52.0, 100),
            burst(105.0, 109.0, 1000),
            burst(150.0, 152.0, 100),
            burst(205.0, 209.0, 1000),
            burst(250.0, 252.0, 100),
        ];
        let timeline = Timeline {
            keys: keys(&[1, 101, 201]),
            inside: Some(
                Inside {
                    reads: vec![read(3.0), read(103.0), read(203.0)],
                    bursts: all.clone(),
                    ..Inside::default()
                }
                .sorted(),
            ),
            chunks: chunks_of(&all, 0.5),
            queries: Vec::new(),
            windows: Default::default(),
            end_ns: 300 * MS,
        };
        let k = key_latencies(&timeline);
        for answer in &k.each {
            let s = answer.stages_ms.unwrap();
            assert_eq!(round(s.input_delay.unwrap()), 2.0);
            assert_eq!(round(s.processing), 2.0);
            assert_eq!(round(s.emit), 4.0);
            assert_eq!(round(s.drain.unwrap()), 0.5);
            let sum = s.input_delay.unwrap() + s.processing + s.emit;
            assert!((sum - answer.frame_ms.unwrap()).abs() < 1e-9);
            assert_eq!((answer.writes, answer.bytes), (Some(100), 1000));
            // As spans: end to end from the send to the frame's end, the drain after it.
            let spans = answer.stage_spans();
            let sent = answer.sent_ns;
            assert_eq!(
                spans,
                [
                    (Stage::InputDelay, sent, sent + 2 * MS),
                    (Stage::Processing, sent + 2 * MS, sent + 4 * MS),
                    (Stage::Emit, sent + 4 * MS, sent + 8 * MS),
                    (Stage::Drain, sent + 8 * MS, sent + 8 * MS + MS / 2),
                ]
            );
            assert_eq!(answer.frame_end_ns(), Some(sent + 8 * MS));
        }
        // The clock's frames are nobody's key: the last key's time is its own frame's.
        assert_eq!(round(k.key_to_frame_ms.unwrap().max), 8.0);
        let frames = k.frames.unwrap();
        assert_eq!(
            (frames.answering, frames.unprompted, frames.before_keys),
            (3, 3, 1)
        );
        assert!((frames.unprompted_per_second - 3.0 / 0.299).abs() < 1e-6);
        assert_eq!(k.dominant_stage, Some(Stage::Emit));
        let summary = k.stages_ms.unwrap();
        assert_eq!(round(summary.input_delay.unwrap().p50), 2.0);
        assert_eq!(k.writes_per_key, Some(100.0));
    }

    #[test]
    fn keys_that_queue_behind_a_slow_frame_wait_for_the_frame_after_their_read() {
        // An input thread reads each key at once; the drawing thread was busy with a frame
        // from 1 to 25 ms when the second key came (10 ms) and answers it with the next, 25 to
        // 45 ms. Both keys read in threads that never write.
        // A third key, read at 20.1 ms, while the second's frame has not begun: each key is
        // answered by the next frame in order.
        let bursts = vec![
            burst(1.0, 25.0, 240),
            burst(25.5, 45.0, 240),
            burst(45.5, 65.0, 240),
        ];
        let timeline = Timeline {
            keys: keys(&[0, 10, 20]),
            inside: Some(Inside {
                reads: vec![read(0.1), read(10.1), read(20.1)],
                bursts: bursts.clone(),
                ..Inside::default()
            }),
            chunks: chunks_of(&bursts, 0.0),
            queries: Vec::new(),
            windows: Default::default(),
            end_ns: 80 * MS,
        };
        let k = key_latencies(&timeline);
        let frame: Vec<f64> = k.each.iter().map(|e| round(e.frame_ms.unwrap())).collect();
        assert_eq!(frame, [25.0, 35.0, 45.0]);
        let second = k.each[1].stages_ms.unwrap();
        assert_eq!(round(second.input_delay.unwrap()), 0.1);
        assert_eq!(round(second.processing), 15.4);
        assert_eq!(k.frames.unwrap().unprompted, 0);
    }

    #[test]
    fn without_a_read_processing_runs_from_the_key_and_from_outside_the_quiet_gap_ends_it() {
        let bursts = vec![burst(1.0, 4.0, 500), burst(11.0, 12.0, 100)];
        let mut timeline = Timeline {
            keys: keys(&[0, 10, 20]),
            inside: Some(Inside {
                bursts: bursts.clone(),
                ..Inside::default()
            }),
            chunks: chunks_of(&bursts, 0.0),
            queries: Vec::new(),
            windows: Default::default(),
            end_ns: 40 * MS,
        };
        let k = key_latencies(&timeline);
        let s = k.each[0].stages_ms.unwrap();
        assert_eq!((s.input_delay, round(s.processing)), (None, 1.0));
        // The third key drew nothing: no frame, no write, no byte.
        assert_eq!(k.each[2].frame_ms, None);
        assert_eq!(
            (k.each[2].writes, k.each[2].bytes, k.unanswered),
            (Some(0), 0, 1)
        );
        // Bytes the observer did not see (a C program's stdio), read before the frames: no
        // drain, the rest stands.
        timeline.chunks = Chunks::default();
        timeline.chunks.note(MS / 2, 7);
        for b in &bursts {
            timeline.chunks.note(b.end_ns, b.bytes as usize);
        }
        let k = key_latencies(&timeline);
        assert_eq!(k.each[0].stages_ms.unwrap().drain, None);
        assert_eq!(round(k.each[0].frame_ms.unwrap()), 4.0);
        // From outside: the last byte before 5 ms of quiet, no stages, no counts.
        timeline.inside = None;
        let k = key_latencies(&timeline);
        assert_eq!(k.each[0].frame_end, Some(EndFrom::QuietGap));
        assert_eq!(round(k.each[0].frame_ms.unwrap()), 4.0);
        assert_eq!(
            (k.stages_ms, k.frames, k.writes_per_key),
            (None, None, None)
        );
    }

    #[test]
    fn percentiles_are_nearest_rank() {
        let p = Percentiles::of((1..=100).map(f64::from)).unwrap();
        assert_eq!((p.p50, p.p95, p.max), (50.0, 95.0, 100.0));
        assert_eq!(Percentiles::of([]), None);
        let p = Percentiles::of([3.0]).unwrap();
        assert_eq!((p.p50, p.p95, p.max), (3.0, 3.0, 3.0));
    }
}
