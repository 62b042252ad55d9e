//! flushlab: a terminal lab that makes the cost of stdout/stderr buffering visible.
//!
//! See ARCHITECTURE.md for the code map and the invariants.

#![forbid(unsafe_code)]

// The measurement core is `flushlab_core`, named as such everywhere: the crate border shows
// in every path. The CLI and the screens are this crate's own.
pub mod cli;
pub mod commands;
pub mod explorer;
pub mod painting;
pub mod plumbing;
