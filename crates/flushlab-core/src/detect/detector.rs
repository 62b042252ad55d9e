//! The seam for frame detectors: one way each of telling where a program's frames are, fed the
//! events of the one parse of its output ([`Screen`](super::screen::Screen)). A new detector
//! (a program's own frame marks, OSC notifications, a terminal's report) is a file beside
//! [`sync_markers`](super::sync_markers) and [`cursor_restarts`](super::cursor_restarts), and a
//! place in [`FrameFinder`](super::finder::FrameFinder)'s order of trust.

use std::time::Instant;

use super::frames::{Confirmation, FrameMethod};
use super::screen::Event;

/// Frames a detector found.
#[derive(Clone, Debug, PartialEq)]
pub struct Found {
    pub method: FrameMethod,
    pub frames: u64,
    /// Frames a second, between the first and the last frame start.
    pub fps: Option<f64>,
    /// Bytes a frame, between the first and the last frame start.
    pub bytes_per_frame: Option<f64>,
    /// What agreed with the count, for a method that needs agreement.
    pub confirmed_by: Vec<Confirmation>,
}

/// One way of finding frames in a stream.
pub trait FrameDetector {
    /// A chunk of output was read at `at`. `after_silence`: nothing came for the frame gap
    /// before it; `first`: nothing came before it at all.
    fn chunk(&mut self, _at: Instant, _after_silence: bool, _first: bool) {}

    /// An event of the parse at byte `offset` of the stream, in the chunk read at `at`.
    fn on(&mut self, event: Event, offset: u64, at: Instant);

    /// The frames it found, or `None` when it cannot tell (the next detector is asked; when
    /// none can tell, the frames are unknown).
    fn found(&self) -> Option<Found>;
}
