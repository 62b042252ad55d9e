//! What frame detection found: the method, the count and rates, and the evidence behind
//! "unknown" — plain data, read by wrap's report and diagnosis.

use serde::Serialize;

/// How a report's frames were found.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum FrameMethod {
    /// Counted between synchronized-output markers: exact.
    SyncMarkers,
    /// Between the program's own waits, seen from inside it (wrap's observer).
    Waits,
    /// Counted from cursor restarts, and confirmed (see [`Frames::confirmed_by`]).
    CursorRestarts,
    /// Not known: per-second figures only.
    Unknown,
}

/// What confirmed a count of cursor restarts.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case", tag = "by", content = "detail")]
pub enum Confirmation {
    /// This control sequence came exactly once in the share of frames given.
    Sequence(String),
    /// A pause of at least `--frame-gap` came before the frames, and almost nowhere else.
    Pauses,
}

/// The frames found, or why not.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Frames {
    pub method: FrameMethod,
    /// Frames seen (begun), when known.
    pub frames: Option<u64>,
    /// Frames a second, between the first and the last frame start.
    pub fps: Option<f64>,
    /// Bytes a frame, between the first and the last frame start.
    pub bytes_per_frame: Option<f64>,
    /// For cursor restarts: what agreed with them (two methods agreeing).
    pub confirmed_by: Vec<Confirmation>,
    /// Cursor restarts seen, whether or not they were confirmed: the evidence for "unknown".
    pub cursor_restarts: u64,
    /// The share of whole frames (between restarts) in which the best sequence came once.
    pub sequence_share: f64,
    /// The share of restarts that came after a pause, and pauses per restart.
    pub pause_share: f64,
    pub pauses_per_frame: f64,
}
