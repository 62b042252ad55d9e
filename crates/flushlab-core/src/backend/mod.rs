//! The encoders a frame can be drawn with: ratatui's crossterm and termion backends, and
//! [`LeanBackend`], which sends crossterm's bytes for a fraction of the CPU. Which one draws is
//! a condition of a measurement, as the writer mode is. The buffering lesson holds through
//! crossterm and lean, which hand the writer a piece at a time; termion formats the frame into
//! a string first, so unbuffered output costs it a few write(2) a frame.

use serde::{Deserialize, Serialize};

/// The lean encoder lives in a crate of its own (`crates/flushlab-lean-backend`), for any
/// ratatui app to take; flushlab draws through that same code.
pub use flushlab_lean_backend::LeanBackend;

/// Which ratatui `Backend` encodes the frame.
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize,
)]
#[cfg_attr(feature = "clap", derive(clap::ValueEnum))]
#[serde(rename_all = "lowercase")]
pub enum BackendKind {
    /// ratatui's `CrosstermBackend`: every sequence and number formatted through `fmt`, one
    /// `write` a formatted piece.
    #[default]
    Crossterm,
    /// flushlab's `LeanBackend`: the same bytes built with a digit table, one `write` a cell.
    Lean,
    /// ratatui's `TermionBackend` (the `ratatui-termion` crate): termion's own sequences, the
    /// frame's cells formatted into a string, then written with the closing resets (~4 writes).
    Termion,
}

impl BackendKind {
    pub const ALL: [BackendKind; 3] = [
        BackendKind::Crossterm,
        BackendKind::Lean,
        BackendKind::Termion,
    ];

    pub fn name(self) -> &'static str {
        match self {
            BackendKind::Crossterm => "crossterm",
            BackendKind::Lean => "lean",
            BackendKind::Termion => "termion",
        }
    }

    /// The one after this, round: what the explorer's key switches to.
    pub fn next(self) -> BackendKind {
        match self {
            BackendKind::Crossterm => BackendKind::Lean,
            BackendKind::Lean => BackendKind::Termion,
            BackendKind::Termion => BackendKind::Crossterm,
        }
    }

    /// `crossterm`, `lean`: the names [`BackendKind::name`] writes.
    pub fn from_name(name: &str) -> Option<BackendKind> {
        BackendKind::ALL.into_iter().find(|b| b.name() == name)
    }
}
