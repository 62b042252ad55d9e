//! Painted frames, the machinery four commands share: an X server of flushlab's own ([`display`]) and the
//! terminals' launch table ([`terminals`]), the frame marker painted into each frame and its codec
//! ([`marker`], a leaf), the probe that logs each frame's write inside the terminal ([`probe`]),
//! the X client that watches a terminal's window ([`window_watch`]) and the one that types into it
//! ([`keyboard`]), the analysis of what it read ([`analysis`]), the tour's own window ([`own`])
//! and the chart of painted rates ([`plot`]). `flushlab paint` runs them; `wrap --terminal`
//! types keys and times the window's changes; the explorer paints the marker and keeps the
//! probe's log; the tour reads its own window; `flushlab report` draws the chart.

pub mod analysis;
pub mod browser;
pub mod camera;
pub mod display;
pub mod keyboard;
pub mod marker;
pub mod own;
pub mod paint_arg;
pub mod plot;
pub mod probe;
pub mod strips;
pub mod terminals;
pub mod wayland;
pub mod window_watch;

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
