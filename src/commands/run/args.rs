//! The explorer's and the headless run's flags (`RunArgs`), below the rooms that take them.

use std::time::Duration;

use clap::Args;

use flushlab_core::backend::BackendKind;
use flushlab_core::condition::HudLayout;
use flushlab_core::scene::Scene;
use flushlab_core::subject::Ceiling;
use flushlab_core::wait::Wait;

use flushlab_core::units::{parse_capacity, parse_duration, parse_fps, parse_size, parse_switch};
use flushlab_core::writer_mode::{Buffering, DEFAULT_CAPACITY, Mode, Stream};

/// The explorer's and the headless run's settings.
#[derive(Debug, Args)]
pub struct RunArgs {
    #[command(flatten)]
    pub accounting: crate::plumbing::frame_args::AccountingArg,

    /// The stream the frames are written to.
    #[arg(long, env = "STREAM", value_enum, default_value_t = Stream::Stdout)]
    pub stream: Stream,

    /// How the stream is buffered [default: as std buffers it: line for stdout (`stdout()`),
    /// raw for stderr (`stderr()`)]
    #[arg(long, env = "BUFFERING", value_enum)]
    pub buffering: Option<Buffering>,

    /// Block buffer capacity in bytes (64..=1MiB); suffixes K, KiB, M, MiB are accepted.
    #[arg(long, env = "CAPACITY", value_parser = parse_capacity, default_value_t = DEFAULT_CAPACITY)]
    pub capacity: usize,

    /// Run headless for this many seconds (e.g. 5 or 0.5), then exit.
    #[arg(long, env = "DURATION", value_parser = parse_duration, allow_negative_numbers = true)]
    pub duration: Option<Duration>,

    /// Wrap each frame in synchronized-output markers (DEC mode 2026).
    #[arg(long, env = "SYNC", value_parser = parse_switch, num_args = 0..=1,
          default_missing_value = "true", default_value = "false")]
    pub sync: bool,

    /// What is drawn under the HUD.
    #[arg(long, env = "SCENE", value_enum, default_value_t = Scene::Full)]
    pub scene: Scene,

    /// The ratatui backend that encodes each frame (x switches it in the explorer).
    #[arg(long, env = "BACKEND", value_enum, default_value_t = BackendKind::Crossterm)]
    pub backend: BackendKind,

    /// How the writer waits when the terminal is full: sleep in write(2) as std does, poll
    /// 100 µs for room before sleeping, or spin (poll, never sleep) — in 4 KiB writes when it
    /// polls; measured runs only (with --duration; the HUD's expression shows the buffering
    /// alone). Where idle CPUs halt at once (many VMs) a sleeping writer gets about half of
    /// what the pty takes.
    #[arg(long, env = "WAIT", value_enum, default_value_t = Wait::Sleep)]
    pub wait: Wait,

    /// Frame size COLSxROWS when the stream is not a terminal [default: 200x60].
    #[arg(long, env = "SIZE", value_parser = parse_size)]
    pub size: Option<(u16, u16)>,

    /// Frames per second at most (default: as fast as the writer allows).
    #[arg(long, env = "FPS_CAP", value_parser = parse_fps, allow_negative_numbers = true)]
    pub fps_cap: Option<f64>,

    /// Seconds per mode in the tour (key t).
    #[arg(long, value_parser = parse_duration, default_value = "2", allow_negative_numbers = true)]
    pub tour_seconds: Duration,

    /// Also write the summary as JSON to this file (`-` = stdout, when the frames go to
    /// stderr).
    #[arg(long = "export-json", alias = "report", value_name = "FILE", value_parser = flushlab_core::files::Destination::parse)]
    pub report: Option<flushlab_core::files::Destination>,

    /// How much of the screen the HUD takes [default: full from 100x40, else compact]
    #[arg(long, env = "HUD", value_enum)]
    pub hud: Option<HudLayout>,

    /// How a terminal model paints a sample of the frames (two in a row, four times a
    /// second), for the torn paints a second in the HUD and the report: eager, vsync:HZ or
    /// delay:LOWER-UPPER, then ,sync=none|csi|dcs|csi+dcs (as `wrap --paint`); a terminal's
    /// name (xterm, kitty…); `off` [default: eager in the explorer, off in headless runs and
    /// ceilings, which benchmarks and profiles measure]
    #[arg(long, env = "PAINT", value_name = "POLICY", value_parser = crate::painting::paint_arg::Paint::parse)]
    pub paint: Option<crate::painting::paint_arg::Paint>,

    /// Measure a reference instead of a writer mode: `cpu` renders into io::sink(), `transport`
    /// writes one pre-encoded frame over and over.
    #[arg(long, env = "CEILING", value_enum)]
    pub ceiling: Option<Ceiling>,

    /// The settings that came from environment variables (`SIZE=80x24`), named in the summary:
    /// a shell may export `SIZE` or `HUD` for other reasons. Filled by `main`.
    #[arg(skip)]
    pub from_env: Vec<String>,

    /// The step `flushlab lesson` starts at (0-based); `None` for the explorer.
    #[arg(skip)]
    pub lesson: Option<usize>,

    /// Panic after this many frames, to test that the terminal is restored.
    #[arg(long, hide = true)]
    pub inject_panic_at_frame: Option<u64>,

    /// Stop (as if hung up) once this process is no longer our parent: a bench's child must not
    /// outlive a bench that was killed (SIGKILL leaves it no chance to kill its children).
    #[arg(long, hide = true, value_name = "PID")]
    pub exit_with_parent: Option<i32>,

    /// Do not time the frames' phases (the time split): for measuring what timing them costs.
    #[arg(long, hide = true)]
    pub no_time_split: bool,

    /// `flushlab paint`'s run inside a terminal: draw the calibration pattern, wait for
    /// `FILE.go`, draw the frame marker and log each frame's write times to FILE.
    #[arg(
        long,
        hide = true,
        value_name = "FILE",
        requires = "duration",
        conflicts_with = "ceiling"
    )]
    pub paint_log: Option<std::path::PathBuf>,
}

impl RunArgs {
    /// Every environment variable the run reads, from its clap definition (`ACCOUNTING`
    /// included): the list a parent clears so that its own environment never leaks into a
    /// child it configures.
    pub fn env_vars() -> Vec<String> {
        let command = <RunArgs as clap::Args>::augment_args(clap::Command::new("run"));
        command
            .get_arguments()
            .filter_map(|a| a.get_env())
            .map(|env| env.to_string_lossy().into_owned())
            .collect()
    }

    /// The terminal model's policy, if one runs: as `--paint` says, else in the explorer alone
    /// (on a terminal, with no `--duration`); never under a ceiling, which writes no mode.
    pub fn model(&self, terminal: bool) -> Option<flushlab_core::seen::PaintPolicy> {
        if self.ceiling.is_some() {
            return None;
        }
        match self.paint {
            Some(paint) => paint.0,
            None => (terminal && self.duration.is_none())
                .then(flushlab_core::seen::PaintPolicy::default),
        }
    }

    /// The mode the run starts in: std's own handle unless a buffering was chosen.
    pub fn mode(&self) -> Mode {
        let buffering = self.buffering.unwrap_or(self.stream.std_buffering());
        Mode::new(self.stream, buffering, self.capacity)
    }
}
