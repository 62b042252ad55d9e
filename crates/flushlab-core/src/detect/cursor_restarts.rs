//! Frames by content: the first cell drawn, and every cell drawn before the previous drawn cell,
//! starts a frame — a writer descheduled in the middle of a frame pauses without starting one.
//! A count of restarts is reported only once something else agrees with it: a control sequence
//! seen exactly once in (nearly) every frame (ratatui's cursor hide, a C loop's home), or a
//! pause before (nearly) every frame and (nearly) no pause inside one. A program that mostly
//! scrolls prints lines: its rare jumps back are not frames.

use std::time::Instant;

use super::detector::{Found, FrameDetector};
use super::frames::{Confirmation, FrameMethod};
use super::screen::{Event, Mark};

/// The share of frames a confirmation must hold in, and how many pauses a frame may have
/// (0.1 of a pause per frame: a rare hiccup). Chosen from the corpus (docs/wrap/costs.md shows the
/// shares measured): programs whose frames a confirmation matched were at 1.00 and 0.98–1.00;
/// the ones it must reject (unbuffered writers, paused mid-frame; a border drawn after the
/// content) at 0.50 or below.
const CONFIRMING_SHARE: f64 = 0.9;
/// Fewer frame starts than this tell nothing (two whole frames between them).
const MIN_STARTS: u64 = 3;

/// Where frames start, counted without keeping them all.
#[derive(Clone, Copy, Debug, Default)]
struct Starts {
    count: u64,
    first: Option<(u64, Instant)>,
    last: Option<(u64, Instant)>,
}

impl Starts {
    fn push(&mut self, offset: u64, at: Instant) {
        self.count += 1;
        self.first.get_or_insert((offset, at));
        self.last = Some((offset, at));
    }

    /// (frames a second, bytes a frame) between the first and the last start.
    fn rates(&self) -> Option<(f64, f64)> {
        let ((first_offset, first_at), (last_offset, last_at)) = self.first.zip(self.last)?;
        let whole = (self.count - 1) as f64;
        let seconds = last_at.saturating_duration_since(first_at).as_secs_f64();
        (self.count >= MIN_STARTS && seconds > 0.0)
            .then(|| (whole / seconds, (last_offset - first_offset) as f64 / whole))
    }
}

/// What the restarts showed, whether or not they were confirmed: the evidence for "unknown".
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Evidence {
    pub restarts: u64,
    /// The share of whole frames (between restarts) in which the best sequence came once.
    pub sequence_share: f64,
    /// The share of restarts that came after a pause, and pauses per restart.
    pub pause_share: f64,
    pub pauses_per_frame: f64,
}

#[derive(Clone, Debug, Default)]
pub struct CursorRestarts {
    /// Whether pauses can be trusted: a throttled reader pauses on its own.
    pauses_are_the_programs: bool,
    restarts: Starts,
    /// The chunk being parsed came after a pause and its first restart has not been seen.
    pending_pause: bool,
    restarts_after_pause: u64,
    pauses: u64,
    scrolls: u64,
    /// Marks seen in the frame being drawn, and whole frames in which each came exactly once.
    marks_now: [u32; Mark::ALL.len()],
    marks_once: [u64; Mark::ALL.len()],
    whole_frames: u64,
}

impl CursorRestarts {
    pub fn new(pauses_are_the_programs: bool) -> CursorRestarts {
        CursorRestarts {
            pauses_are_the_programs,
            ..CursorRestarts::default()
        }
    }

    /// The sequence (not a sync marker) that came exactly once in most whole frames.
    fn best_sequence(&self) -> Option<(Mark, u64)> {
        Mark::ALL
            .iter()
            .filter(|m| !matches!(m, Mark::SyncBegin | Mark::SyncEnd))
            .map(|&m| (m, self.marks_once[m as usize]))
            .max_by_key(|&(_, once)| once)
    }

    pub fn evidence(&self) -> Evidence {
        let share = |n: u64, of: u64| if of == 0 { 0.0 } else { n as f64 / of as f64 };
        let restarts = self.restarts.count;
        Evidence {
            restarts,
            sequence_share: self
                .best_sequence()
                .map_or(0.0, |(_, once)| share(once, self.whole_frames)),
            pause_share: share(self.restarts_after_pause, restarts),
            pauses_per_frame: share(self.pauses, restarts),
        }
    }

    /// What agrees with the count of restarts; empty when nothing does.
    fn confirmations(&self) -> Vec<Confirmation> {
        let evidence = self.evidence();
        let mut confirmed_by = Vec::new();
        if let Some((mark, _)) = self
            .best_sequence()
            .filter(|_| evidence.sequence_share >= CONFIRMING_SHARE)
        {
            confirmed_by.push(Confirmation::Sequence(mark.sequence().to_owned()));
        }
        if self.pauses_are_the_programs
            && evidence.pause_share >= CONFIRMING_SHARE
            && evidence.pauses_per_frame <= 1.0 + (1.0 - CONFIRMING_SHARE)
        {
            confirmed_by.push(Confirmation::Pauses);
        }
        confirmed_by
    }
}

impl FrameDetector for CursorRestarts {
    fn chunk(&mut self, _at: Instant, after_silence: bool, first: bool) {
        self.pending_pause = after_silence;
        self.pauses += u64::from(after_silence && !first);
    }

    fn on(&mut self, event: Event, offset: u64, at: Instant) {
        match event {
            Event::Restart => {
                if self.restarts.count > 0 {
                    self.whole_frames += 1;
                    for (once, now) in self.marks_once.iter_mut().zip(&self.marks_now) {
                        *once += u64::from(*now == 1);
                    }
                }
                self.marks_now = [0; Mark::ALL.len()];
                self.restarts.push(offset, at);
                if std::mem::take(&mut self.pending_pause) {
                    self.restarts_after_pause += 1;
                }
            }
            Event::Scroll => self.scrolls += 1,
            Event::Mark(mark) => self.marks_now[mark as usize] += 1,
            Event::Query(_) | Event::SyncDcs(_) => {}
        }
    }

    fn found(&self) -> Option<Found> {
        let lines = self.scrolls > self.restarts.count;
        let confirmed_by = self.confirmations();
        if confirmed_by.is_empty() || lines {
            return None;
        }
        let (fps, bytes) = self.restarts.rates()?;
        Some(Found {
            method: FrameMethod::CursorRestarts,
            frames: self.restarts.count,
            fps: Some(fps),
            bytes_per_frame: Some(bytes),
            confirmed_by,
        })
    }
}
