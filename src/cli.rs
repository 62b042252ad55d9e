//! Command-line flags and their environment variables, validated before anything touches the
//! terminal: bad input is a one-line error naming the value and what is allowed, exit code 2.

use std::path::PathBuf;
use std::time::Duration;

use clap::{Args, Parser, Subcommand};

use crate::ceiling::Ceiling;
use crate::meters::Accounting;
use crate::scene::Scene;
use crate::writer_mode::{Buffering, DEFAULT_CAPACITY, MAX_CAPACITY, MIN_CAPACITY, Stream};

/// A terminal lab that makes the cost of stdout/stderr buffering visible.
///
/// Without --duration, an interactive explorer (press h for the keys). With --duration, a
/// headless run of one mode that prints a summary line to the other stream and exits; that
/// works whatever the stream is: a terminal, a file, a pipe or /dev/null.
#[derive(Debug, Parser)]
#[command(
    name = "flushlab",
    version,
    about,
    long_about,
    args_conflicts_with_subcommands = true
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Option<Command>,

    /// How write(2) calls are counted: kernel (/proc/self/io, Linux: every write of the
    /// process, std's included, nothing per write) or counting (a layer under flushlab's own
    /// writer stacks; std's stdout() is then the same LineWriter over a dup of fd 1)
    /// [default: kernel where the kernel keeps the counters, else counting]
    #[arg(long, env = "ACCOUNTING", value_enum, global = true)]
    pub accounting: Option<Accounting>,

    #[command(flatten)]
    pub run: RunArgs,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Benchmark every writer mode headless, each in a fresh pseudo-terminal (or pipe, file,
    /// /dev/null), and report FPS, write(2) calls and bytes per frame.
    Bench(crate::bench::BenchArgs),
    /// Digest samply profiles of headless runs: samples, CPU time, frames, and the share of
    /// samples in write(2), the writer stack, ratatui/crossterm and the scene painter.
    Profile(crate::profile_digest::ProfileArgs),
    /// The log-flood workload: numbered log lines as fast as a chosen writer takes them, with
    /// lines/s, write(2) calls and the latency of one log call.
    Flood(crate::flood::FloodArgs),
    /// Every writer mode in turn in this terminal, then the comparison: accepted FPS (writes
    /// returned) and shown FPS (confirmed by cursor-position round trips).
    Tour(crate::tour::TourArgs),
    /// Merge tour results from several terminals into one terminals × modes table and chart.
    Report(crate::terminal_report::ReportArgs),
}

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

/// The explorer's and the headless run's settings.
#[derive(Debug, Args)]
pub struct RunArgs {
    /// The stream the frames are written to.
    #[arg(long, env = "STREAM", value_enum, default_value_t = Stream::Stdout)]
    pub stream: Stream,

    /// How the stream is buffered.
    #[arg(long, env = "BUFFERING", value_enum, default_value_t = Buffering::Line)]
    pub buffering: Buffering,

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

    /// Frame size COLSxROWS when the stream is not a terminal [default: 200x60].
    #[arg(long, env = "SIZE", value_parser = parse_size)]
    pub size: Option<(u16, u16)>,

    /// Frames per second at most (default: as fast as the writer allows).
    #[arg(long, env = "FPS_CAP", value_parser = parse_fps, allow_negative_numbers = true)]
    pub fps_cap: Option<f64>,

    /// Seconds per mode in the tour (key t).
    #[arg(long, value_parser = parse_duration, default_value = "2", allow_negative_numbers = true)]
    pub tour_seconds: Duration,

    /// Also write the summary as JSON to this file.
    #[arg(long, value_name = "FILE")]
    pub report: Option<PathBuf>,

    /// Measure a reference instead of a writer mode: `cpu` renders into io::sink(), `transport`
    /// writes one pre-encoded frame over and over.
    #[arg(long, env = "CEILING", value_enum)]
    pub ceiling: Option<Ceiling>,

    /// Panic after this many frames, to test that the terminal is restored.
    #[arg(long, hide = true)]
    pub inject_panic_at_frame: Option<u64>,
}

impl RunArgs {
    /// Checks what clap cannot: a run that is not on a terminal must know when to stop.
    pub fn validate(&self) -> Result<(), clap::Error> {
        use clap::CommandFactory;
        if self.duration.is_none() && !self.stream.is_terminal() {
            let message = format!(
                "{} is not a terminal, so flushlab cannot run interactively: give --duration SECONDS (or DURATION=SECONDS) for a headless run",
                self.stream.name()
            );
            return Err(
                Cli::command().error(clap::error::ErrorKind::MissingRequiredArgument, message)
            );
        }
        Ok(())
    }
}

pub const DEFAULT_SIZE: (u16, u16) = (200, 60);
const MAX_SIDE: u16 = 4096;

pub fn parse_size(text: &str) -> Result<(u16, u16), String> {
    let bad = || format!("expected COLSxROWS, each 1..={MAX_SIDE}, e.g. 200x60");
    let (cols, rows) = text.trim().split_once(['x', 'X']).ok_or_else(bad)?;
    let side = |s: &str| {
        s.trim()
            .parse::<u16>()
            .ok()
            .filter(|n| (1..=MAX_SIDE).contains(n))
    };
    Ok((side(cols).ok_or_else(bad)?, side(rows).ok_or_else(bad)?))
}

/// On or off, as people write it in environment variables.
fn parse_switch(text: &str) -> Result<bool, String> {
    match text.trim().to_ascii_lowercase().as_str() {
        "1" | "true" | "yes" | "on" => Ok(true),
        "0" | "false" | "no" | "off" => Ok(false),
        _ => Err("expected one of: 1, 0, true, false, yes, no, on, off".to_owned()),
    }
}

pub fn parse_duration(text: &str) -> Result<Duration, String> {
    text.trim()
        .parse::<f64>()
        .ok()
        .filter(|s| s.is_finite() && *s > 0.0 && *s <= 1e6)
        .map(Duration::from_secs_f64)
        .ok_or_else(|| "expected a number of seconds greater than 0, e.g. 5 or 0.5".to_owned())
}

fn parse_fps(text: &str) -> Result<f64, String> {
    text.trim()
        .parse::<f64>()
        .ok()
        .filter(|f| f.is_finite() && *f > 0.0 && *f <= 1e6)
        .ok_or_else(|| "expected frames per second from above 0 to 1000000, e.g. 60".to_owned())
}

pub fn parse_capacity(text: &str) -> Result<usize, String> {
    let bad = || {
        format!(
            "expected a number of bytes from {MIN_CAPACITY} to {MAX_CAPACITY} (1MiB), e.g. 8192 or 64KiB"
        )
    };
    let text = text.trim();
    let split = text
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(text.len());
    let (number, unit) = text.split_at(split);
    let scale = match unit.trim().to_ascii_lowercase().as_str() {
        "" | "b" => 1,
        "k" | "kib" | "kb" => 1 << 10,
        "m" | "mib" | "mb" => 1 << 20,
        _ => return Err(bad()),
    };
    number
        .parse::<usize>()
        .ok()
        .and_then(|n| n.checked_mul(scale))
        .filter(|n| (MIN_CAPACITY..=MAX_CAPACITY).contains(n))
        .ok_or_else(bad)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes() {
        assert_eq!(parse_size("200x60"), Ok((200, 60)));
        assert_eq!(parse_size("80X24"), Ok((80, 24)));
        for bad in ["0x0", "200", "x60", "-1x5", "5000x10", "axb", ""] {
            assert!(parse_size(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn durations() {
        assert_eq!(parse_duration("0.5"), Ok(Duration::from_millis(500)));
        for bad in ["-1", "0", "nan", "inf", "five", ""] {
            assert!(parse_duration(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn capacities() {
        assert_eq!(parse_capacity("8192"), Ok(8192));
        assert_eq!(parse_capacity("64KiB"), Ok(65536));
        assert_eq!(parse_capacity("1M"), Ok(1 << 20));
        for bad in [
            "0",
            "63",
            "2MiB",
            "8 parsecs",
            "",
            "-8",
            "99999999999999999999",
        ] {
            assert!(parse_capacity(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn clap_definition_is_consistent() {
        use clap::CommandFactory;
        Cli::command().debug_assert();
    }
}
