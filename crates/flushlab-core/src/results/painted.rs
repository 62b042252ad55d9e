//! What a terminal painted (`flushlab paint`, `flushlab tour --paint`), as plain data: a run's
//! figures ([`Painted`]), what was measured ([`PaintRun`]), and the table and CSV they are
//! shown as. The figures are made by `paint::analysis`; this room only holds and shows them.

use serde::{Deserialize, Serialize};

/// What a terminal painted of what it accepted, one run.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Painted {
    /// Frames written (accepted by the terminal: the writes returned), and per second.
    pub accepted_frames: u64,
    pub accepted_fps: f64,
    /// Frames seen whole or in part in the bottom marker, and per second.
    pub painted_frames: u64,
    pub painted_fps: f64,
    /// Accepted frames never seen painted.
    pub skipped_share: f64,
    /// Reads whose two markers named different frames, of the reads where both were readable.
    pub torn_share: f64,
    /// Repaints the observer read, and those where a marker was caught half painted.
    pub reads: u64,
    pub rejected_reads: u64,
    /// From the start of a frame's write(2) to the report of the repaint that first showed it.
    pub latency_p50_ms: Option<f64>,
    pub latency_p99_ms: Option<f64>,
    /// The observer's read round trip: paints shorter-lived than this can be missed.
    pub read_p50_ms: Option<f64>,
    pub read_p99_ms: Option<f64>,
    /// Self-checks that failed (none in a sound run), and warnings about the figures.
    pub failed_checks: Vec<String>,
    pub warnings: Vec<String>,
}

/// One run's painted figures, with what was measured: a row of `flushlab paint`, or a mode of
/// `flushlab tour --paint`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PaintRun {
    /// The terminal: as launched (`xterm`), or as the tour identified it.
    pub terminal: String,
    pub mode: crate::subject::Subject,
    pub sync: bool,
    pub cols: u16,
    pub rows: u16,
    /// Whether the window was read (`--no-observer`: not).
    pub observed: bool,
    /// The observer's CPU time (user + system) over its wall time: its share of a core.
    pub observer_cpu_share: f64,
    #[serde(flatten)]
    pub painted: Painted,
}

/// The runs grouped by what they measured (terminal, mode, sync, size, observed or not), in
/// the order they first came: a group's runs are the rounds of one row.
pub fn groups(runs: &[PaintRun]) -> Vec<Vec<&PaintRun>> {
    let key = |r: &PaintRun| {
        (
            r.terminal.clone(),
            r.mode.clone(),
            r.sync,
            r.cols,
            r.rows,
            r.observed,
        )
    };
    let mut groups: Vec<Vec<&PaintRun>> = Vec::new();
    for run in runs {
        match groups.iter_mut().find(|g| key(g[0]) == key(run)) {
            Some(group) => group.push(run),
            None => groups.push(vec![run]),
        }
    }
    groups
}
