//! Painted frames, what `flushlab paint`, the explorer and the tour keep of their own (the
//! terminals themselves, the X server, the marker's codec and the window's watch are the
//! `flushlab-terminals` crate's): the probe that logs each frame's write inside the terminal
//! ([`probe`]), the analysis of what the watch read ([`analysis`]), the tour's own window
//! ([`own`]), the chart of painted rates ([`plot`]) and the `--paint` flag ([`paint_arg`]).

pub mod analysis;
pub mod own;
pub mod paint_arg;
pub mod plot;
pub mod probe;

use serde::{Deserialize, Serialize};

use flushlab_core::results::painted::PaintRun;

/// Every run of a `flushlab paint`.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct PaintResults {
    pub version: String,
    pub duration_s: f64,
    pub fps_cap: Option<f64>,
    pub runs: Vec<PaintRun>,
}
