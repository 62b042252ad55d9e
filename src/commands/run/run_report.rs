//! What a run measured, as one line of text per mode and as JSON.

use std::io;

use serde::Serialize;

use flushlab_core::accounting::Accounting;
use flushlab_core::condition::Condition;
use flushlab_core::figures::Figures;
use flushlab_core::meters::Totals;
use flushlab_core::scene::Scene;
use flushlab_core::seen::PaintPolicy;
use flushlab_core::seen::frames::FramesSeen;
use flushlab_core::units::{bytes, count, percent};
use flushlab_core::writer_mode::{Buffering, Mode, Stream};

/// One mode's figures over the whole run.
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct ModeReport {
    pub mode: String,
    pub stream: Stream,
    pub buffering: Buffering,
    /// Bytes; `null` unless the buffering is `block`. For `ceiling/transport`, the size of
    /// each write.
    pub capacity: Option<usize>,
    /// What the frames were drawn under: rows of different conditions did different work.
    pub condition: Condition,
    #[serde(flatten)]
    pub figures: Figures,
    pub cells_per_frame: f64,
    /// What the terminal model painted of the frames it was given (`--paint`); `null` where
    /// it was given none.
    pub seen: Option<FramesSeen>,
    /// Torn or flashed paints a second: the sample's torn paints a frame, at the mode's fps.
    pub torn_paints_per_second: Option<f64>,
}

impl ModeReport {
    /// `name` is the mode's, or the ceiling's a mode stood in for.
    pub fn new(name: String, mode: Mode, condition: Condition, t: &Totals) -> Self {
        ModeReport {
            mode: name,
            stream: mode.stream,
            buffering: mode.buffering,
            capacity: (mode.buffering == Buffering::Block).then_some(mode.capacity),
            condition,
            figures: t.figures(),
            cells_per_frame: t.cells_per_frame(),
            seen: (t.seen.frames > 0).then_some(t.seen),
            torn_paints_per_second: t.torn_per_second(),
        }
    }

    /// `stderr/raw: 12 frames in 1.02 s = 12 fps, 34,712 writes/frame, 67.0 kB/frame, 1.9 B/write, kernel 78%`
    pub fn summary_line(&self) -> String {
        let or_na = |v: Option<f64>, f: fn(f64) -> String| v.map_or_else(|| "n/a".to_owned(), f);
        let figures = &self.figures;
        format!(
            "{}: {} frames in {:.2} s = {} fps, {} writes/frame, {}/frame, {}/write, kernel {}",
            self.mode,
            flushlab_core::units::thousands(figures.frames),
            figures.seconds,
            count(figures.fps),
            or_na(figures.writes_per_frame, count),
            or_na(figures.bytes_per_frame, bytes),
            or_na(figures.bytes_per_write, bytes),
            percent(figures.kernel_share),
        ) + &self.seen_said()
    }

    /// `, torn 41,200 paints/s (100% of 24 sampled frames, 1,870 pieces each)`, where the
    /// model was given frames.
    fn seen_said(&self) -> String {
        let (Some(seen), Some(per_second)) = (&self.seen, self.torn_paints_per_second) else {
            return String::new();
        };
        format!(
            ", torn {} paints/s ({} of {} sampled frames, {} pieces each)",
            count(per_second),
            percent(seen.torn_share().unwrap_or(0.0)),
            flushlab_core::units::thousands(seen.frames),
            count(seen.pieces_per_frame().unwrap_or(0.0)),
        )
    }
}

/// The whole run: the figures of the mode it ended in at the top level (the only mode of a
/// headless run), every mode visited under `modes`, in the order they were first visited.
#[derive(Clone, Debug, Serialize)]
pub struct Report {
    pub version: &'static str,
    /// `finished` (duration over), `quit` (a key), `signal:N`.
    pub outcome: String,
    pub scene: Scene,
    pub sync: bool,
    /// The frame size at the end of the run (it follows resizes).
    pub cols: u16,
    pub rows: u16,
    /// Frames over the whole run, all modes: the sum of `modes[].frames`.
    pub total_frames: u64,
    pub terminal: bool,
    pub peak_rss_kib: u64,
    /// How the write(2) figures were counted: `kernel` or `counting`.
    pub accounting: Accounting,
    /// How the terminal model painted the sampled frames (`--paint`); `null`: no model.
    pub paint: Option<PaintPolicy>,
    #[serde(flatten)]
    pub last: ModeReport,
    pub modes: Vec<ModeReport>,
}

impl Report {
    /// Writes the JSON to `destination` (see [`flushlab_core::files::Destination::write`]): a reader
    /// never sees half a report, and a device stays a device.
    pub fn write_json(&self, destination: &flushlab_core::files::Destination) -> io::Result<()> {
        let mut json = serde_json::to_vec_pretty(self).map_err(io::Error::other)?;
        json.push(b'\n');
        destination.write(&json)
    }
}
