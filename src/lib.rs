//! flushlab: a terminal lab that makes the cost of stdout/stderr buffering visible.
//!
//! See ARCHITECTURE.md for the code map and the invariants.

#![forbid(unsafe_code)]

// The measurement core, re-exported: the binary's rooms name its modules `crate::meters`, …,
// and tests `flushlab::meters`; the CLI and the screens are this crate's own.
pub use flushlab_core::{
    accounting, backend, condition, confirm, detect, embed, figures, files, frame_writer,
    keyscript, latency, meters, outcome, results, scene, statistics, subject, sys, timing, units,
    wait, writer_mode,
};

pub mod cli;
pub mod commands;
pub mod explorer;
pub mod painting;
pub mod plumbing;
pub mod samply;
