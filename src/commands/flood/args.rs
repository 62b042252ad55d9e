//! `flushlab flood`'s flags (`FloodArgs`) and their own types (`OnFull`), below the rooms that
//! take them.

use std::time::Duration;

use clap::{Args, ValueEnum};
use serde::Serialize;

use flushlab_core::subject::FloodWriter;
use flushlab_core::units::{parse_capacity, parse_duration};
use flushlab_core::writer_mode::DEFAULT_CAPACITY;

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum OnFull {
    /// Wait for room: the hot loop slows to the writer's pace.
    Block,
    /// Drop the line and count it: the hot loop never waits.
    Drop,
}

const FLOODARGS_EXAMPLES: &str = "\
Examples:
  flushlab flood > /dev/null                        println!: one write(2) a line
  flushlab flood --writer block > /dev/null          a BufWriter: one write(2) per 8 KiB
  flushlab flood --writer thread --on-full drop --duration 2 > /dev/null
  flushlab flood --writer eprintln --export-json - 2>/dev/null | python3 -m json.tool";

#[derive(Debug, Args)]
#[command(after_help = FLOODARGS_EXAMPLES)]
pub struct FloodArgs {
    #[command(flatten)]
    pub accounting: crate::plumbing::frame_args::AccountingArg,

    /// How each log line is written (println!, a locked stdout, a BufWriter, raw, per byte, a
    /// writer thread, …).
    #[arg(long, value_enum, default_value_t = FloodWriter::Println)]
    pub writer: FloodWriter,

    /// Lines to write [default: 1000000, unless --duration is given].
    #[arg(long, conflicts_with = "duration", value_parser = clap::value_parser!(u64).range(1..))]
    pub lines: Option<u64>,

    /// Write for this many seconds instead of a number of lines.
    #[arg(long, value_parser = parse_duration, allow_negative_numbers = true)]
    pub duration: Option<Duration>,

    /// Buffer capacity of the block, per-byte and thread writers (64..=1MiB).
    #[arg(long, value_parser = parse_capacity, default_value_t = DEFAULT_CAPACITY)]
    pub capacity: usize,

    /// Lines the thread writer's channel holds.
    #[arg(long, default_value_t = 1024, value_parser = clap::value_parser!(u64).range(1..=1_000_000))]
    pub queue: u64,

    /// What the thread writer's hot loop does when the channel is full.
    #[arg(long, value_enum, default_value_t = OnFull::Block)]
    pub on_full: OnFull,

    /// Time one log call in this many (timing every call would cost as much as the fastest
    /// writers' calls themselves).
    #[arg(long, default_value_t = 64, value_parser = clap::value_parser!(u64).range(1..))]
    pub sample_every: u64,

    /// Busy CPU work (not sleep) before each line, seconds (e.g. 0.000017): each line is then a
    /// request of a server that logs once per request, and lines/s is requests/s.
    #[arg(long, value_parser = parse_duration)]
    pub work: Option<Duration>,

    /// Requests (lines) arrive at this fixed rate per second; the latency is then each
    /// request's, from its scheduled start to its end (no coordinated omission: a request that
    /// waited behind a blocked log call counts its wait), every request timed.
    #[arg(long, value_parser = clap::value_parser!(u64).range(1..=100_000_000))]
    pub rate: Option<u64>,

    /// Also write the results as JSON to this file (`-` = stdout, for a writer that logs to
    /// stderr; the summary then on stderr too).
    #[arg(long = "export-json", alias = "report", value_name = "FILE", value_parser = flushlab_core::files::Destination::parse)]
    pub report: Option<flushlab_core::files::Destination>,

    /// End (as on SIGTERM) when this process is no longer our parent: a bench's flood row must
    /// not outlive a bench that was killed.
    #[arg(long, hide = true, value_name = "PID")]
    pub exit_with_parent: Option<i32>,
}
