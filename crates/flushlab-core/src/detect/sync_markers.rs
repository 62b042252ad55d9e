//! Frames the program marks itself: synchronized output (DEC 2026) begin … end. Exact, even for
//! one frame; nested begins are one frame, an end outside a frame closes nothing.

use std::time::Instant;

use super::detector::{Found, FrameDetector};
use super::frames::FrameMethod;
use super::screen::{Event, Mark};

#[derive(Clone, Debug, Default)]
pub struct SyncMarkers {
    depth: u32,
    begins: u64,
    ends: u64,
    /// Outermost begin … end pairs, and where the first began and the last ended.
    pairs: u64,
    first_begin: Option<(u64, Instant)>,
    last_end: Option<(u64, Instant)>,
    /// Each outermost block's begin and end, as offsets in the stream (at most [`MAX_BLOCKS`]).
    blocks: Vec<(u64, u64)>,
    /// The open block's outermost begin.
    open_at: Option<u64>,
}

/// Blocks kept at most (1 MiB): a program that draws 60 blocks a second, for five hours.
const MAX_BLOCKS: usize = 1 << 16;

impl SyncMarkers {
    pub fn begins(&self) -> u64 {
        self.begins
    }

    pub fn ends(&self) -> u64 {
        self.ends
    }

    /// Begins still open at the end: 1 is a frame cut short, more are begins never ended.
    pub fn open(&self) -> u32 {
        self.depth
    }

    pub fn pairs(&self) -> u64 {
        self.pairs
    }

    /// Each outermost begin … end block, where its begin and its end are in the stream.
    pub fn blocks(&self) -> &[(u64, u64)] {
        &self.blocks
    }
}

impl FrameDetector for SyncMarkers {
    fn on(&mut self, event: Event, offset: u64, at: Instant) {
        match event {
            Event::Mark(Mark::SyncBegin) => {
                self.begins += 1;
                if self.depth == 0 {
                    self.first_begin.get_or_insert((offset, at));
                    self.open_at = Some(offset);
                }
                self.depth = self.depth.saturating_add(1);
            }
            Event::Mark(Mark::SyncEnd) => {
                self.ends += 1;
                // An end outside a frame (a reset at start or exit) closes nothing.
                if self.depth > 0 {
                    self.depth -= 1;
                    if self.depth == 0 {
                        self.pairs += 1;
                        self.last_end = Some((offset, at));
                        if let Some(begin) = self.open_at.take()
                            && self.blocks.len() < MAX_BLOCKS
                        {
                            self.blocks.push((begin, offset));
                        }
                    }
                }
            }
            _ => {}
        }
    }

    fn found(&self) -> Option<Found> {
        if self.pairs == 0 {
            return None;
        }
        // Whole frames, from the first begin to the last end.
        let mut found = Found {
            method: FrameMethod::SyncMarkers,
            frames: self.pairs,
            fps: None,
            bytes_per_frame: None,
            confirmed_by: Vec::new(),
        };
        if let Some(((first_offset, first_at), (last_offset, last_at))) =
            self.first_begin.zip(self.last_end)
        {
            let pairs = self.pairs as f64;
            let seconds = last_at.saturating_duration_since(first_at).as_secs_f64();
            found.bytes_per_frame = Some(last_offset.saturating_sub(first_offset) as f64 / pairs);
            // Begin and end read at once (one read holds the whole frame): the time is the
            // read's, too short to be a rate.
            found.fps = (seconds > 0.0).then(|| pairs / seconds);
        }
        Some(found)
    }
}
