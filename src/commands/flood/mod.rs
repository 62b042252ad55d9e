//! `flushlab flood`: the log-flood workload. Much slow output is not a TUI but a hot loop that
//! logs: this writes numbered log lines as fast as it can through the chosen writer and reports
//! lines/s, write(2) calls, and the latency of one log call.

use std::io;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use anyhow::Context;
use serde::Serialize;

use flushlab_core::accounting::{IoProbe, std_handles_counted};
use flushlab_core::figures::PerLine;
use flushlab_core::latency::Histogram;
use flushlab_core::meters::{Sample, Totals};
use flushlab_core::outcome::{Outcome, Refusal, reader_gone};
use flushlab_core::subject::FloodWriter;

use flushlab_core::writer_mode::Stream;

mod args;
mod logger;

pub use args::{FloodArgs, OnFull};

use logger::{Finished, LINE_BYTES, Logger};

/// Spins for `work` of wall time on this core: a request's own work, which a sleep would not be.
fn busy(work: Duration) {
    let start = Instant::now();
    while start.elapsed() < work {
        std::hint::spin_loop();
    }
}

#[derive(Clone, Debug, Serialize)]
pub struct FloodReport {
    pub writer: FloodWriter,
    pub stream: Stream,
    pub capacity: usize,
    pub on_full: Option<OnFull>,
    /// `line`: the figures' unit (`lines` logged, `lines_per_second`, `writes_per_line`, …).
    pub unit: &'static str,
    #[serde(flatten)]
    pub figures: PerLine,
    /// Lines the writer dropped and counted itself (flushlab's thread writer with
    /// `--on-full drop`, tracing-appender's lossy queue).
    pub dropped: u64,
    /// Lines that reached the stream (a write(2) that returned carried them), counted by
    /// flushlab under the logging libraries' writers; `null` for the other writers, which
    /// stop the run at their first error instead.
    pub delivered: Option<u64>,
    /// Lines in a write still under way when flood ended (its reader had stopped): they may
    /// or may not arrive.
    pub in_flight: u64,
    /// Lines logged that neither reached the stream nor were counted as dropped (tracing-
    /// appender's guard gives up on what it holds after 1 s at exit): `lines − dropped −
    /// delivered − in_flight`.
    pub lost: u64,
    /// Bytes of one log line, newline included.
    pub line_bytes: u64,
    /// `null` where write accounting is not available (not Linux).
    pub write_calls: Option<u64>,
    pub bytes_written: Option<u64>,
    pub peak_rss_kib: u64,
    pub latency_samples: u64,
    pub p50_ns: u64,
    pub p99_ns: u64,
    pub max_ns: u64,
    /// What the latency figures time: `log-call` (one call in `--sample-every`) or `request`
    /// (with `--rate`: every request, from its scheduled start).
    pub latency_of: &'static str,
    /// Seconds the writer took to flush at exit, after the loop (`seconds` is the loop's):
    /// tracing-appender's guard waits at most 1 s and then gives up on what it holds.
    pub finish_seconds: f64,
    /// `--work` per line, seconds; `null` without.
    pub work_seconds: Option<f64>,
    /// `--rate`, requests per second; `null` without.
    pub rate: Option<u64>,
    pub outcome: String,
}

impl FloodReport {
    pub fn summary_line(&self) -> String {
        format!(
            "flood {}: {} lines in {:.3} s = {} lines/s, {} write(2) ({} per line), {} p50 {} p99 {} max {}, {} dropped",
            self.writer.name(),
            flushlab_core::units::thousands(self.figures.0.frames),
            self.figures.0.seconds,
            flushlab_core::units::count(self.figures.0.fps),
            self.write_calls
                .map_or("n/a".into(), flushlab_core::units::thousands),
            self.figures
                .0
                .writes_per_frame
                .map_or("n/a".into(), |w| format!("{w:.2}")),
            if self.rate.is_some() {
                "request"
            } else {
                "log call"
            },
            flushlab_core::units::nanoseconds(self.p50_ns),
            flushlab_core::units::nanoseconds(self.p99_ns),
            flushlab_core::units::nanoseconds(self.max_ns),
            flushlab_core::units::thousands(self.dropped),
        ) + &if self.lost > 0 {
            format!(
                ", {} LOST (logged, never written, never counted by {})",
                flushlab_core::units::thousands(self.lost),
                self.writer.name()
            )
        } else {
            String::new()
        }
    }
}

/// The stream the flood logs to, once its flags are checked; or why they are refused.
fn plan(args: &FloodArgs) -> Result<Stream, Refusal> {
    let stream = flushlab_core::subject::Subject::Flood(args.writer).stream();
    if let Some(e) = stream.closed_at_start() {
        // Said by the stream itself, in the words every command uses for it.
        stream.say_reader_gone(&e);
        return Err(Refusal {
            outcome: Outcome::ReaderGone,
            why: String::new(),
        });
    }
    if let Some(destination) = &args.report {
        if destination.is_stdout() && stream == Stream::Stdout {
            return Err(Refusal::bad_input(format!(
                "flood: --export-json - and --writer {} both use stdout: give --export-json a file, or \
                 a writer that logs to stderr (eprintln, env-logger)",
                args.writer.name()
            )));
        }
        destination
            .check()
            .map_err(|e| format!("flood: --export-json '{destination}': {e}"))?;
    }
    Ok(stream)
}

pub fn run(args: FloodArgs) -> anyhow::Result<Outcome> {
    let stream = match plan(&args) {
        Ok(stream) => stream,
        Err(refusal) => return Ok(refusal.tell()),
    };
    let signal = flushlab_terminals::session::watch_termination_signals()?;
    flushlab_terminals::session::end_stuck_runs()?;
    if let Some(parent) = args.exit_with_parent {
        flushlab_terminals::session::end_with_parent(parent)?;
    }
    let probe = IoProbe::open();
    let mut logger = Logger::open(&args)?;
    let before = Sample::now(&probe, 0);
    let mut logged = Logged {
        lines: 0,
        latency: Histogram::default(),
        outcome: Outcome::Finished,
    };
    let result = logged.log(&args, &mut logger, &signal, before.at);
    let logging_ended = Instant::now();
    let finished = result.and_then(|()| logger.finish());
    let after = Sample::now(&probe, logged.lines);
    let finished = match finished {
        Ok(finished) => finished,
        Err(e) if reader_gone(&e) => {
            stream.say_reader_gone(&e);
            return Ok(Outcome::ReaderGone);
        }
        Err(e) => {
            stream.say_failed("log lines", &e);
            return Ok(Outcome::Failed);
        }
    };
    let mut totals = Totals::between(&before, &after);
    // The rate is the hot loop's (a server's requests/s); flushing at exit is reported apart,
    // its writes still counted.
    totals.seconds = (logging_ended - before.at).as_secs_f64();
    let finish_seconds = after
        .at
        .saturating_duration_since(logging_ended)
        .as_secs_f64();
    let report = flood_report(&args, stream, &logged, finished, totals, finish_seconds);
    publish(&args, stream, &report)?;
    Ok(logged.outcome)
}

/// What the hot loop logged: lines, the latency of the sampled calls, and why it stopped.
struct Logged {
    lines: u64,
    latency: Histogram,
    outcome: Outcome,
}

impl Logged {
    /// Logs lines until `--lines`, `--duration` or a termination signal.
    fn log(
        &mut self,
        args: &FloodArgs,
        logger: &mut Logger,
        signal: &AtomicUsize,
        start: Instant,
    ) -> io::Result<()> {
        let limit = args.lines.unwrap_or(if args.duration.is_some() {
            u64::MAX
        } else {
            1_000_000
        });
        let interval = args.rate.map(|r| Duration::from_secs_f64(1.0 / r as f64));
        while self.lines < limit {
            // Clock and signals are looked at once per 1024 lines, not per line (at a fixed rate
            // the clock is read for every request anyway).
            if self.lines.is_multiple_of(1024) || interval.is_some() {
                if args.duration.is_some_and(|d| start.elapsed() >= d) {
                    break;
                }
                if let sig @ 1.. = signal.load(Ordering::Relaxed) {
                    self.outcome = Outcome::Signal(sig);
                    break;
                }
            }
            if let Some(interval) = interval {
                // Request `lines` is due at its slot whatever happened to the ones before it.
                let due = start + interval * u32::try_from(self.lines).unwrap_or(u32::MAX);
                while Instant::now() < due {
                    std::hint::spin_loop();
                }
                if let Some(work) = args.work {
                    busy(work);
                }
                logger.log(self.lines)?;
                self.latency.record(due.elapsed().as_nanos() as u64);
            } else {
                if let Some(work) = args.work {
                    busy(work);
                }
                if self.lines.is_multiple_of(args.sample_every) {
                    let t = Instant::now();
                    logger.log(self.lines)?;
                    self.latency.record(t.elapsed().as_nanos() as u64);
                } else {
                    logger.log(self.lines)?;
                }
            }
            self.lines += 1;
        }
        Ok(())
    }
}

fn flood_report(
    args: &FloodArgs,
    stream: Stream,
    logged: &Logged,
    finished: Finished,
    mut totals: Totals,
    finish_seconds: f64,
) -> FloodReport {
    // Only flushlab's own dups carry the counting layer; the rest write through std's handles.
    let std_handle = !matches!(
        args.writer,
        FloodWriter::Block | FloodWriter::Raw | FloodWriter::PerByte | FloodWriter::Thread
    );
    let counted = !std_handle || std_handles_counted();
    totals.io = totals.io.filter(|_| counted);
    let io = totals.io;
    let Finished {
        dropped,
        delivered,
        in_flight,
    } = finished;
    let latency = &logged.latency;
    FloodReport {
        writer: args.writer,
        stream,
        capacity: args.capacity,
        on_full: (args.writer == FloodWriter::Thread).then_some(args.on_full),
        unit: "line",
        figures: PerLine(totals.figures()),
        dropped,
        delivered,
        in_flight,
        lost: delivered.map_or(0, |d| {
            logged
                .lines
                .saturating_sub(dropped)
                .saturating_sub(d)
                .saturating_sub(in_flight)
        }),
        line_bytes: LINE_BYTES,
        write_calls: io.map(|io| io.write_calls),
        bytes_written: io.map(|io| io.bytes),
        peak_rss_kib: flushlab_core::sys::peak_rss_kib(flushlab_core::sys::Usage::Process),
        latency_samples: latency.count(),
        p50_ns: latency.percentile(0.5),
        p99_ns: latency.percentile(0.99),
        max_ns: latency.max(),
        latency_of: if args.rate.is_some() {
            "request"
        } else {
            "log-call"
        },
        finish_seconds,
        work_seconds: args.work.map(|w| w.as_secs_f64()),
        rate: args.rate,
        outcome: logged.outcome.describe(),
    }
}

/// The summary line, and the JSON report where `--export-json` says.
fn publish(args: &FloodArgs, stream: Stream, report: &FloodReport) -> anyhow::Result<()> {
    // The summary goes to the stream the lines did not use, unless the report is there.
    let aside = if args.report.as_ref().is_some_and(|d| d.is_stdout()) {
        Stream::Stderr
    } else {
        stream.other()
    };
    aside.write_line(&report.summary_line());
    if let Some(destination) = &args.report {
        let mut json = serde_json::to_vec_pretty(report)?;
        json.push(b'\n');
        destination
            .write(&json)
            .with_context(|| format!("writing the report to {destination}"))?;
    }
    Ok(())
}
