//! Frames from the program's own waits, seen from inside it (`flushlab wrap`'s observer, an
//! `LD_PRELOAD` object): a program draws, then waits — for a key, a timer, the next tick — so
//! what reaches the terminal between two of its waits is a frame. Exact where the cursor model
//! can only guess: a pager or an editor scrolling (no repositioning to a frame's start), a
//! program that pauses mid-frame, a shell whose children draw.
//!
//! The output's arrival is timed here as it is read; the waits come later, from the observer,
//! with their start and end on the same clock. Output read before a wait ended belongs to the
//! frame that wait ends: bytes written just before the wait may be read while it lasts (and
//! `--try frame` writes a held frame as the wait begins). Overlapping waits of several
//! processes are one idle stretch. Only whole frames count: output after the last wait is not
//! a frame yet.
//!
//! A program may also wait in the middle of a frame (it draws half, sleeps, draws the rest).
//! Where the cursor model says the program's frames start with a restart (confirmed, see
//! [`CursorRestarts`](super::cursor_restarts)), output between two waits with no restart (nor a
//! home, clear or synchronized update's begin) in it continues the frame before:
//! [`Waits::found_continuing`].

use std::time::{Duration, Instant};

use super::detector::{Found, FrameDetector};
use super::frames::FrameMethod;
use super::screen::{Event, Mark};

/// Output read within this of the previous read is one arrival: an unbuffered program's frame
/// comes in thousands of reads, and a wait between frames lasts far longer.
const JOIN: Duration = Duration::from_micros(100);
/// Arrivals kept at most (~32 MB); beyond, the frames are not told from waits.
const MAX_ARRIVALS: usize = 1 << 20;

/// Output read in one stretch: when it began and ended, and its bytes.
#[derive(Clone, Copy, Debug)]
struct Arrival {
    first: Instant,
    last: Instant,
    bytes: u64,
}

#[derive(Clone, Debug, Default)]
pub struct Waits {
    arrivals: Vec<Arrival>,
    overflowed: bool,
    /// The waits that end frames, start and end, sorted by start; empty when nobody inside
    /// the program said any.
    boundaries: Vec<(Instant, Instant)>,
    /// The observer's bursts of terminal writes (each ended by its thread's wait, or its
    /// exit), as (end, bytes) sorted by end, where it saw every terminal write: the frames are
    /// then these, one a burst, whenever the terminal read them (a reader that falls behind
    /// reads two frames' output in one stretch). Each keeps its place in the order given.
    bursts: Option<Vec<(Instant, u64, usize)>>,
    /// When output that may start a frame was read: a cursor restart, a home, a clear or a
    /// synchronized update's begin (each moment once). Not a cursor hide: ratatui's comes at
    /// a frame's end.
    starts: Vec<Instant>,
}

impl Waits {
    /// `len` bytes of output were read at `at`.
    pub fn arrived(&mut self, at: Instant, len: usize) {
        let full = self.arrivals.len() >= MAX_ARRIVALS;
        match self.arrivals.last_mut() {
            Some(last) if at.saturating_duration_since(last.last) < JOIN => {
                last.last = at;
                last.bytes += len as u64;
            }
            _ if full => self.overflowed = true,
            _ => self.arrivals.push(Arrival {
                first: at,
                last: at,
                bytes: len as u64,
            }),
        }
    }

    /// The output read, as (first read, last read, bytes) stretches in time order; empty when
    /// more came than is kept.
    pub fn arrivals(&self) -> Vec<(Instant, Instant, u64)> {
        if self.overflowed {
            return Vec::new();
        }
        self.arrivals
            .iter()
            .map(|a| (a.first, a.last, a.bytes))
            .collect()
    }

    /// The waits the observer saw, as (start, end) on the clock `at` reads: each converted
    /// through one moment known on both clocks, `(Instant, nanoseconds)`.
    pub fn set_boundaries(&mut self, waits: &[(u64, u64)], base: (Instant, u64)) {
        let at = on_clock(base);
        self.boundaries = waits.iter().map(|&(s, e)| (at(s), at(e.max(s)))).collect();
        self.boundaries.sort_unstable();
    }

    /// The observer's bursts of terminal writes as (end, bytes) in nanoseconds, on the clock
    /// of [`Waits::set_boundaries`]: where it saw every terminal write, the frames are these.
    pub fn set_bursts(&mut self, bursts: &[(u64, u64)], base: (Instant, u64)) {
        let at = on_clock(base);
        let mut bursts: Vec<(Instant, u64, usize)> = (bursts.iter().enumerate())
            .map(|(i, &(e, b))| (at(e), b, i))
            .collect();
        bursts.sort_unstable();
        self.bursts = Some(bursts);
    }

    /// For each idle stretch that ends a frame: its start, the bytes of that frame, and whether
    /// something in them may start a frame (see [`Waits::starts`]).
    fn frames(&self) -> Vec<(Instant, u64, bool)> {
        let idle = self.idle();
        // The stretch whose end comes first at or after `at`: the frame output read at `at`
        // belongs to (read while the wait lasted: written before it).
        let stretch = |at: Instant| idle.partition_point(|&(_, end)| end < at);
        if let Some(bursts) = &self.bursts {
            return self.burst_frames(bursts, &idle, stretch);
        }
        let mut frames: Vec<(usize, u64, bool)> = Vec::new();
        for arrival in &self.arrivals {
            let next = stretch(arrival.first);
            if next >= idle.len() {
                break; // after the last wait: not a whole frame
            }
            match frames.last_mut() {
                Some(last) if last.0 == next => last.1 += arrival.bytes,
                _ => frames.push((next, arrival.bytes, false)),
            }
        }
        for &at in &self.starts {
            let next = stretch(at);
            if let Ok(i) = frames.binary_search_by_key(&next, |f| f.0) {
                frames[i].2 = true;
            }
        }
        frames
            .into_iter()
            .map(|(i, bytes, starts)| (idle[i].0, bytes, starts))
            .collect()
    }

    /// One frame a burst, at its end; what may start a frame marks the bursts of the idle
    /// stretch it was read before.
    fn burst_frames(
        &self,
        bursts: &[(Instant, u64, usize)],
        idle: &[(Instant, Instant)],
        stretch: impl Fn(Instant) -> usize,
    ) -> Vec<(Instant, u64, bool)> {
        let mut frames: Vec<(Instant, u64, bool)> = bursts
            .iter()
            .map(|&(end, bytes, _)| (end, bytes, false))
            .collect();
        // Sorted by end, the bursts' stretches never go down: each start marks one run of them
        // (a long run has up to a million starts: no scan of every burst for each).
        let of: Vec<usize> = bursts.iter().map(|&(end, ..)| stretch(end)).collect();
        for &at in &self.starts {
            let next = stretch(at).min(idle.len());
            let from = of.partition_point(|&i| i < next);
            let to = of.partition_point(|&i| i <= next);
            for frame in &mut frames[from..to] {
                frame.2 = true;
            }
        }
        frames
    }

    /// Where the frames are the observer's bursts: for each burst, in the order
    /// [`Waits::set_bursts`] was given them, whether it continues the frame before in
    /// [`Waits::found_continuing`]'s count (nothing in it may start a frame: a wait split it).
    pub fn continuing(&self) -> Option<Vec<bool>> {
        let bursts = self.bursts.as_ref()?;
        let mut continues = vec![false; bursts.len()];
        for (i, (frame, burst)) in self.frames().iter().zip(bursts).enumerate() {
            continues[burst.2] = i > 0 && !frame.2;
        }
        Some(continues)
    }

    /// Frames as [`FrameDetector::found`] tells them, except that a frame with nothing in it
    /// that may start one continues the frame before (a wait in the middle of a frame), for a
    /// program whose frames are known to start with a cursor restart.
    pub fn found_continuing(&self) -> Option<Found> {
        if self.boundaries.is_empty() || self.overflowed || self.starts.len() >= MAX_ARRIVALS {
            return None;
        }
        let mut frames: Vec<(Instant, u64)> = Vec::new();
        for (start, bytes, starts) in self.frames() {
            match frames.last_mut() {
                Some(last) if !starts => {
                    last.0 = start;
                    last.1 += bytes;
                }
                _ => frames.push((start, bytes)),
            }
        }
        found_of(&frames)
    }

    /// The waits merged where they overlap: stretches in which some part of the program waited.
    fn idle(&self) -> Vec<(Instant, Instant)> {
        let mut idle: Vec<(Instant, Instant)> = Vec::new();
        for &(start, end) in &self.boundaries {
            match idle.last_mut() {
                Some(last) if start <= last.1 => last.1 = last.1.max(end),
                _ => idle.push((start, end)),
            }
        }
        idle
    }
}

/// Nanoseconds of the observer's clock as instants of the reader's, through one moment known on
/// both, `(Instant, nanoseconds)`.
fn on_clock(base: (Instant, u64)) -> impl Fn(u64) -> Instant {
    let (instant, ns) = base;
    move |t: u64| match t.checked_sub(ns) {
        Some(after) => instant + Duration::from_nanos(after),
        None => instant
            .checked_sub(Duration::from_nanos(ns - t))
            .unwrap_or(instant),
    }
}

/// Frames (the start of the wait that ends each, its bytes) as found.
fn found_of(frames: &[(Instant, u64)]) -> Option<Found> {
    let (first, last) = (frames.first()?, frames.last()?);
    let count = frames.len() as u64;
    let seconds = last.0.saturating_duration_since(first.0).as_secs_f64();
    let bytes: u64 = frames.iter().map(|f| f.1).sum();
    Some(Found {
        method: FrameMethod::Waits,
        frames: count,
        fps: (count > 1 && seconds > 0.0).then(|| (count - 1) as f64 / seconds),
        bytes_per_frame: Some(bytes as f64 / count as f64),
        confirmed_by: Vec::new(),
    })
}

impl FrameDetector for Waits {
    fn on(&mut self, event: Event, _offset: u64, at: Instant) {
        if matches!(
            event,
            Event::Restart | Event::Mark(Mark::Home | Mark::Clear | Mark::SyncBegin)
        ) && self.starts.last() != Some(&at)
            && self.starts.len() < MAX_ARRIVALS
        {
            self.starts.push(at);
        }
    }

    fn found(&self) -> Option<Found> {
        if self.boundaries.is_empty() || self.overflowed {
            return None;
        }
        let frames: Vec<(Instant, u64)> = self
            .frames()
            .into_iter()
            .map(|(at, b, _)| (at, b))
            .collect();
        found_of(&frames)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(base: Instant, ms: u64) -> Instant {
        base + Duration::from_millis(ms)
    }

    #[test]
    fn output_between_waits_is_a_frame_however_it_was_read() {
        let base = Instant::now();
        let mut waits = Waits::default();
        // Frames drawn at 0, 20, 40, 60 ms, each in many small reads, one read late (inside
        // the wait after it), then a wait of 15 ms; a partial frame at the end.
        for frame in 0..4u64 {
            for piece in 0..50u64 {
                waits.arrived(
                    base + Duration::from_micros(frame * 20_000 + piece * 20),
                    10,
                );
            }
            waits.arrived(ms(base, frame * 20 + 3), 5);
        }
        waits.arrived(ms(base, 81), 7);
        let boundaries: Vec<(u64, u64)> = (0..4u64)
            .map(|f| {
                (
                    1_000_000 + f * 20_000_000 + 2_000_000,
                    f * 20_000_000 + 18_000_000,
                )
            })
            .collect();
        waits.set_boundaries(&boundaries, (base, 1_000_000));
        let found = waits.found().unwrap();
        assert_eq!(found.method, FrameMethod::Waits);
        assert_eq!(found.frames, 4);
        assert_eq!(found.bytes_per_frame, Some(505.0));
        let fps = found.fps.unwrap();
        assert!((fps - 50.0).abs() < 0.5, "{fps}");
    }

    #[test]
    fn where_every_write_was_seen_a_burst_is_a_frame_however_late_it_was_read() {
        let base = Instant::now();
        let mut waits = Waits::default();
        // Three frames at 0, 1 and 2 ms, each ended by a wait of 0.9 ms; the reader fell
        // behind and read the first two in one stretch at 1.05 ms.
        waits.arrived(ms(base, 0) + Duration::from_micros(1050), 20);
        waits.arrived(ms(base, 2) + Duration::from_micros(50), 10);
        let boundaries = [
            (100_000, 1_000_000),
            (1_100_000, 2_000_000),
            (2_100_000, 3_000_000),
        ];
        waits.set_boundaries(&boundaries, (base, 0));
        assert_eq!(waits.found().unwrap().frames, 2, "told from the reads");
        waits.set_bursts(
            &[(1_100_000, 10), (100_000, 10), (2_100_000, 10)],
            (base, 0),
        );
        let found = waits.found().unwrap();
        assert_eq!(found.frames, 3);
        assert_eq!(found.bytes_per_frame, Some(10.0));
        let fps = found.fps.unwrap();
        assert!((fps - 1000.0).abs() < 1.0, "{fps}");
    }

    #[test]
    fn overlapping_waits_of_two_processes_are_one_stretch_and_no_waits_say_nothing() {
        let base = Instant::now();
        let mut waits = Waits::default();
        assert!(waits.found().is_none());
        waits.arrived(ms(base, 1), 10);
        waits.arrived(ms(base, 30), 10);
        // A shell waiting for its child while the child sleeps: one idle stretch, one frame.
        waits.set_boundaries(
            &[(5_000_000, 20_000_000), (6_000_000, 25_000_000)],
            (base, 0),
        );
        let found = waits.found().unwrap();
        assert_eq!(found.frames, 1);
        assert_eq!(found.fps, None);
    }
}
