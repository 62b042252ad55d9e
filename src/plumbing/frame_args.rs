//! Flags several subcommands share: what a frame is made of (`bench`, `tour`), how write(2)
//! calls are counted (every command that counts them), and what a bench tells every child it
//! starts ([`ChildOf`]).

use std::ffi::OsString;
use std::path::PathBuf;

use clap::Args;

use flushlab_core::accounting::Accounting;
use flushlab_core::backend::BackendKind;
use flushlab_core::scene::Scene;
use flushlab_core::units::{parse_capacity, parse_switch};
use flushlab_core::writer_mode::DEFAULT_CAPACITY;

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

    /// The ratatui backends that encode the frames: crossterm (ratatui's) or lean (flushlab's,
    /// the same screen built without `fmt`); a bench takes a list (a row each, ceilings too),
    /// a tour one.
    #[arg(long, value_enum, value_delimiter = ',', default_value = "crossterm")]
    pub backend: Vec<BackendKind>,
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

/// What a bench tells every child flushlab it starts (a run, a flood, a wrap) besides the
/// child's own settings: the bench it must not outlive (`--exit-with-parent`) and the file its
/// report goes to (`--export-json`). Each child's typed settings (`HeadlessRun`,
/// `HeadlessFlood`, `HeadlessWrap`) carry one and write it as the flags their command parses.
#[derive(Clone, Debug, PartialEq)]
pub struct ChildOf {
    pub parent: i32,
    pub report: PathBuf,
}

impl ChildOf {
    /// The bench that is this process, and its child's report file.
    pub fn this_process(report: PathBuf) -> ChildOf {
        ChildOf {
            parent: std::process::id() as i32,
            report,
        }
    }

    pub fn args(&self) -> [OsString; 4] {
        [
            "--exit-with-parent".into(),
            self.parent.to_string().into(),
            "--export-json".into(),
            self.report.clone().into(),
        ]
    }
}
