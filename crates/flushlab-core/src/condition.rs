//! The conditions a mode is measured under. Two modes are compared only under one condition:
//! the same scene, frame size, synchronized output, HUD layout and backend, so that they do the
//! same work per frame. Changing any of these starts new rows; it never mixes into the old ones.

use std::fmt;

use serde::Serialize;

use crate::backend::BackendKind;
use crate::scene::Scene;

/// How much of the screen the HUD takes. Fixed for a condition: the HUD never grows as modes
/// are visited, so every mode draws the same scene cells.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
#[cfg_attr(feature = "clap", derive(clap::ValueEnum))]
#[serde(rename_all = "lowercase")]
pub enum HudLayout {
    /// A few lines at the top: the mode, its expression and the figures.
    Compact,
    /// A panel with the gauge, the sparkline and the table of modes.
    Full,
}

impl HudLayout {
    pub fn name(self) -> &'static str {
        match self {
            HudLayout::Compact => "compact",
            HudLayout::Full => "full",
        }
    }

    pub fn other(self) -> HudLayout {
        match self {
            HudLayout::Compact => HudLayout::Full,
            HudLayout::Full => HudLayout::Compact,
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
pub struct Condition {
    pub scene: Scene,
    pub cols: u16,
    pub rows: u16,
    pub sync: bool,
    pub hud: HudLayout,
    /// Which ratatui backend encodes the frame.
    pub backend: BackendKind,
}

/// `full 200x60 sync off, compact HUD, crossterm`.
impl fmt::Display for Condition {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} {}x{} sync {}, {} HUD, {}",
            self.scene.name(),
            self.cols,
            self.rows,
            if self.sync { "on" } else { "off" },
            self.hud.name(),
            self.backend.name()
        )
    }
}
