//! Flags several subcommands share: what a frame is made of (`bench`, `tour`), and how write(2)
//! calls are counted (every command that counts them).

use clap::Args;

use crate::accounting::Accounting;
use crate::scene::Scene;
use crate::units::{parse_capacity, parse_switch};
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

    /// Synchronized output (DEC mode 2026) around each frame (`--sync`, or `--sync on|off` as
    /// the explorer takes it).
    #[arg(long, value_parser = parse_switch, num_args = 0..=1, default_missing_value = "true",
          default_value = "false")]
    pub sync: bool,
}

/// `--accounting`, for the commands that count write(2) calls.
#[derive(Clone, Copy, Debug, Default, clap::Args)]
pub struct AccountingArg {
    /// How write(2) calls are counted: kernel (/proc/self/io, Linux: every write of the
    /// process, std's included, nothing per write) or counting (a layer under flushlab's own
    /// writer stacks; std's stdout() is then the same LineWriter over a dup of fd 1)
    /// [default: kernel where the kernel keeps the counters, else counting]
    #[arg(
        long,
        env = "ACCOUNTING",
        value_enum,
        help_heading = "Advanced",
        display_order = 1000
    )]
    pub accounting: Option<Accounting>,
}
