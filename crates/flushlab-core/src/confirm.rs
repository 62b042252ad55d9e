//! Frame confirmation: evidence from the terminal's side that a frame got there, beyond its
//! write(2) returning (which only says the kernel took the bytes).
//!
//! A confirmer may ask a question in the frame's own flush — a cursor-position query, which a
//! terminal answers only after it has parsed everything sent before it ([`CursorAnswers`]) — or
//! mark the frame so that it can be recognised where it shows (painted frames: a marker read
//! back from the window's pixels, `flushlab tour --paint`). The tour drives every confirmer
//! through [`FrameConfirmer`], frame by frame and segment (writer mode) by segment; each keeps
//! its own result, which its own `finish` hands over, so a new kind of evidence is one more
//! implementation and one more field of the tour, not another branch of its frame loop.

use std::collections::VecDeque;
use std::time::Instant;

use ratatui::buffer::Buffer;
use ratatui::layout::Rect;

/// One kind of evidence that frames reached the terminal. Every method has a default that does
/// nothing, so each confirmer says only what it takes part in.
pub trait FrameConfirmer {
    /// Segment `segment` (0, 1, …: the tour's modes, in order) begins at `at`; its frames are
    /// counted from 1.
    fn begin_segment(&mut self, _segment: usize, _at: Instant) {}

    /// Marks the frame about to be drawn on `canvas` (its `area`), so that it can be told apart
    /// where it shows.
    fn mark(&self, _area: Rect, _canvas: &mut Buffer) {}

    /// What to send right after frame `frame` of the segment, in the frame's own flush: a
    /// question the terminal answers once it has parsed the frame. Empty for none.
    fn ask(&mut self, _frame: u64) -> &'static [u8] {
        &[]
    }

    /// Whether this confirmer wants each frame's write times ([`Self::written`]): the frame
    /// loop reads the clock around the write only when one does.
    fn wants_write_times(&self) -> bool {
        false
    }

    /// The frame just drawn was written from `start_ns` until `end_ns` (CLOCK_MONOTONIC).
    fn written(&mut self, _start_ns: u64, _end_ns: u64) {}

    /// The terminal answered a cursor-position question; the answer was read at `at`.
    fn cursor_answered(&mut self, _at: Instant) {}

    /// The segment ends after `frames` frames: what to send, on its own, to ask about the last.
    fn end_segment(&mut self, _frames: u64) -> &'static [u8] {
        &[]
    }

    /// Whether answers about the segment that ended are still awaited (the caller waits for
    /// them, up to a timeout of its own).
    fn awaiting(&self) -> bool {
        false
    }

    /// No more waiting: a question still unanswered is never matched to its segment.
    fn give_up(&mut self) {}
}

/// The cursor-position query (`CSI 6 n`, DSR).
pub const CURSOR_POSITION_QUERY: &[u8] = b"\x1b[6n";

/// What a segment's answers confirmed: `frames` frames had been parsed by the terminal
/// `seconds` after the segment began.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Shown {
    pub frames: u64,
    pub seconds: f64,
}

impl Shown {
    /// Frames the terminal confirmed per second; `None` when no time had passed.
    pub fn fps(self) -> Option<f64> {
        (self.seconds > 0.0).then(|| self.frames as f64 / self.seconds)
    }
}

/// Frames confirmed by cursor-position answers: a query after every `every`-th frame and after
/// a segment's last; terminals answer in order, so the oldest question in flight is the one an
/// answer belongs to, and the answer to the question sent after frame N proves frames 1..=N
/// were parsed.
#[derive(Debug)]
pub struct CursorAnswers {
    every: u64,
    /// Questions in flight, oldest first: the segment and the frame count each one follows.
    pending: VecDeque<(usize, u64)>,
    started: Vec<Instant>,
    confirmed: Vec<Option<Shown>>,
}

impl CursorAnswers {
    /// A question every `every` frames (0 is taken as 1).
    pub fn new(every: u64) -> CursorAnswers {
        CursorAnswers {
            every: every.max(1),
            pending: VecDeque::new(),
            started: Vec::new(),
            confirmed: Vec::new(),
        }
    }

    fn current(&self) -> usize {
        self.started.len().saturating_sub(1)
    }

    /// What each segment's last answer confirmed, in segment order (`None`: nothing answered).
    pub fn finish(self) -> Vec<Option<Shown>> {
        self.confirmed
    }
}

impl FrameConfirmer for CursorAnswers {
    fn begin_segment(&mut self, segment: usize, at: Instant) {
        // Segments come in order; a skipped index is one that confirmed nothing.
        while self.started.len() <= segment {
            self.started.push(at);
            self.confirmed.push(None);
        }
    }

    fn ask(&mut self, frame: u64) -> &'static [u8] {
        if self.started.is_empty() || !frame.is_multiple_of(self.every) {
            return &[];
        }
        self.pending.push_back((self.current(), frame));
        CURSOR_POSITION_QUERY
    }

    fn cursor_answered(&mut self, at: Instant) {
        if let Some((segment, frames)) = self.pending.pop_front() {
            let seconds = at.duration_since(self.started[segment]).as_secs_f64();
            self.confirmed[segment] = Some(Shown { frames, seconds });
        }
    }

    fn end_segment(&mut self, frames: u64) -> &'static [u8] {
        if self.started.is_empty() {
            return &[];
        }
        self.pending.push_back((self.current(), frames));
        CURSOR_POSITION_QUERY
    }

    fn awaiting(&self) -> bool {
        !self.pending.is_empty()
    }

    fn give_up(&mut self) {
        self.pending.clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn asks_every_nth_frame_and_after_the_last() {
        let mut cpr = CursorAnswers::new(3);
        cpr.begin_segment(0, Instant::now());
        let asked: Vec<u64> = (1..=7).filter(|&f| !cpr.ask(f).is_empty()).collect();
        assert_eq!(asked, [3, 6]);
        assert_eq!(cpr.end_segment(7), CURSOR_POSITION_QUERY);
        assert!(cpr.awaiting());
    }

    #[test]
    fn answers_are_matched_oldest_first_to_their_segment() {
        let start = Instant::now();
        let mut cpr = CursorAnswers::new(2);
        cpr.begin_segment(0, start);
        cpr.ask(2);
        cpr.end_segment(3);
        cpr.cursor_answered(start + Duration::from_secs(1));
        assert!(cpr.awaiting());
        cpr.cursor_answered(start + Duration::from_secs(2));
        assert!(!cpr.awaiting());
        cpr.begin_segment(1, start + Duration::from_secs(3));
        cpr.ask(2);
        cpr.give_up();
        // An answer after giving up belongs to nothing.
        cpr.cursor_answered(start + Duration::from_secs(9));
        let shown = cpr.finish();
        assert_eq!(
            shown,
            [
                Some(Shown {
                    frames: 3,
                    seconds: 2.0
                }),
                None
            ]
        );
        assert_eq!(shown[0].and_then(Shown::fps), Some(1.5));
    }

    #[test]
    fn nothing_is_asked_outside_a_segment() {
        let mut cpr = CursorAnswers::new(1);
        assert!(cpr.ask(1).is_empty());
        assert!(cpr.end_segment(1).is_empty());
        cpr.cursor_answered(Instant::now());
        assert!(cpr.finish().is_empty());
    }

    #[test]
    fn a_confirmer_that_takes_no_part_asks_nothing() {
        struct Silent;
        impl FrameConfirmer for Silent {}
        let mut silent = Silent;
        assert!(silent.ask(10).is_empty() && silent.end_segment(10).is_empty());
        assert!(!silent.awaiting());
    }
}
