//! What a frame is made of, for the subcommands that render frames (`bench`, `tour`).

use clap::Args;

use crate::scene::Scene;
use crate::units::parse_capacity;
use crate::writer_mode::DEFAULT_CAPACITY;

/// What a frame is made of, for the subcommands that render frames (`bench`, `tour`).
#[derive(Debug, Args)]
pub struct FrameArgs {
    /// Block buffer capacity for the block modes (64..=1MiB).
    #[arg(long, value_parser = parse_capacity, default_value_t = DEFAULT_CAPACITY)]
    pub capacity: usize,

    /// What is drawn under the HUD.
    #[arg(long, value_enum, default_value_t = Scene::Full)]
    pub scene: Scene,

    /// Synchronized output (DEC mode 2026) around each frame.
    #[arg(long)]
    pub sync: bool,
}
