//! `flushlab bench`: every writer mode, headless, each in a fresh pseudo-terminal, measured the
//! same way, with the two ceilings beside them.
//!
//! Split like hyperfine: this module schedules (sizes × subjects, warm-up, rounds of runs,
//! exports after each run), [`executor`] runs one child, [`flushlab_core::statistics`]
//! summarises, [`flushlab_core::results`] is the plain data the [`flushlab_core::results::export`]ers and the
//! [`flushlab_core::results::drawings::plot`] read.

pub mod executor;

use std::io::IsTerminal;
use std::path::Path;
use std::sync::atomic::Ordering;
use std::time::Duration;

use anyhow::Context;
use clap::Args;
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

use self::executor::{RunSpec, run_once};
use crate::plumbing::frame_args::FrameArgs;
use flushlab_core::backend::BackendKind;
use flushlab_core::files::Destination;
use flushlab_core::outcome::{Outcome, Refusal, complain};
use flushlab_core::results::conditions::{Reader, ReaderModel, Sink, Size, Workload};
use flushlab_core::results::drawings::plot;
use flushlab_core::results::export::{
    CsvExporter, Export, Exporter, JsonExporter, MarkdownExporter,
};
use flushlab_core::results::{BenchResults, Machine, Row, Run, Settings};
use flushlab_core::subject::{Subject, parse_subjects};
use flushlab_core::units::{parse_duration, parse_size};
use flushlab_core::wait::Wait;

const BENCHARGS_EXAMPLES: &str = "\
Examples:
  flushlab bench                                       std's handles, stdout's block, frame, thread, the ceilings
  flushlab bench --modes all --size 200x60,80x24 --export-json r.json --plot r.svg
  flushlab bench --reader throttle:2MB/s --modes stdout/line,stdout/frame
  flushlab bench --export-json - | python3 -m json.tool   the JSON alone on stdout, the table on stderr
  flushlab bench --command mytui='./target/release/mytui --demo'
  flushlab bench --command pager='less /etc/services' --keys j*100@20ms   each key's time to its frame
  flushlab bench --workload flood --sink pipe,null";

#[derive(Debug, Args)]
#[command(after_help = BENCHARGS_EXAMPLES)]
pub struct BenchArgs {
    #[command(flatten)]
    pub accounting: crate::plumbing::frame_args::AccountingArg,

    /// What to measure: `tui` frames (the writer modes) or `flood` log lines (the flood
    /// writers).
    #[arg(long, value_enum, default_value_t = Workload::Tui)]
    pub workload: Workload,

    /// Modes to measure, comma-separated: stdout/raw, stderr/block, …, ceiling/cpu,
    /// ceiling/transport, flood/println, …; or `std` (std's stdout() and stderr(), stdout's
    /// block, frame and thread, the ceilings: 7 rows), `all`, `modes`, `ceilings`, `flood`, a
    /// stream (`stdout`: its every buffering) or a buffering (`frame`: both streams)
    /// [default: std for tui, flood for flood]
    #[arg(long, value_delimiter = ',', value_parser = flushlab_core::subject::MODES, hide_possible_values = true)]
    pub modes: Vec<Vec<Subject>>,

    /// Terminal sizes, comma-separated COLSxROWS.
    #[arg(long, value_delimiter = ',', value_parser = parse_size, default_value = "200x60")]
    pub size: Vec<(u16, u16)>,

    /// How the terminal (or pipe) side is read, comma-separated: drain, vt, throttle:RATE
    /// (e.g. throttle:20MB/s). Each reader is a row of its own.
    #[arg(long, value_delimiter = ',', value_parser = flushlab_core::results::conditions::READERS, hide_possible_values = true, default_value = "drain")]
    pub reader: Vec<ReaderModel>,

    /// What is behind the measured stream, comma-separated: pty, pipe, file, null. Files and
    /// /dev/null have no reader.
    #[arg(long, value_enum, value_delimiter = ',', default_value = "pty")]
    pub sink: Vec<Sink>,

    /// Counted runs per mode and size.
    #[arg(long, default_value_t = 3, value_parser = clap::value_parser!(u32).range(1..=1000))]
    pub runs: u32,

    /// Uncounted warm-up runs before the first round (of the first rows: every run is a fresh
    /// process in a fresh pty, so what a warm-up warms is shared by all rows).
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(0..=100))]
    pub warmup: u32,

    /// Seconds per run [default: 2; 1 for --workload flood, whose runs log millions of lines
    /// a second].
    #[arg(long, value_parser = parse_duration, allow_negative_numbers = true)]
    pub duration: Option<Duration>,

    /// Another program as a row, measured through `flushlab wrap`, NAME=COMMAND ARGS…
    /// (repeatable; arguments split at spaces, `sh -c '…'` for more): "my TUI vs stdout() vs
    /// BufWriter" in one table. Where wrap cannot find its frames, its row is per second.
    #[arg(long = "command", value_name = "NAME=CMD", value_parser = flushlab_core::subject::parse_command)]
    pub commands: Vec<Subject>,

    /// Type these keys into every --command row's program, as `wrap --keys` does (the key
    /// language: docs/wrap/keys.md), within each run's duration: the rows add the time from a key to
    /// its frame, p50 / p95
    #[arg(long, value_name = "SCRIPT", value_parser = flushlab_core::keyscript::KeyScript::parse)]
    pub keys: Option<flushlab_core::keyscript::KeyScript>,

    /// How the modes' writers wait when the terminal is full, and the thread modes' painter and
    /// writer for each other: sleep (in write(2), as std does), poll (100 µs, then sleep) or
    /// spin (never sleep), the polling ones in 4 KiB writes; tui workload only. The ceilings
    /// wait their own way whatever this says.
    #[arg(long, value_enum, default_value_t = Wait::Sleep)]
    pub wait: Wait,

    /// Flood workload only: busy CPU work before each line, seconds (0.000017 for a server
    /// answering ~57k requests/s): a line is then a request, and the rate requests/s.
    #[arg(long, value_parser = parse_duration)]
    pub work: Option<Duration>,

    /// Flood workload only: requests at this fixed rate per second, each one's latency measured
    /// from its scheduled start (the JSON's runs carry p50_ns and p99_ns).
    #[arg(long, value_parser = clap::value_parser!(u64).range(1..=100_000_000))]
    pub rate: Option<u64>,

    #[command(flatten)]
    pub frame: FrameArgs,

    /// Write all results as JSON, after every run (`-` = stdout, at the end; the table then
    /// goes to stderr).
    #[arg(long, value_name = "FILE", value_parser = Destination::parse)]
    pub export_json: Option<Destination>,

    /// Write one line per row as CSV, after every run (`-` = stdout, at the end).
    #[arg(long, value_name = "FILE", value_parser = Destination::parse)]
    pub export_csv: Option<Destination>,

    /// Write the table as Markdown, after every run (`-` = stdout, at the end).
    #[arg(long, value_name = "FILE", value_parser = Destination::parse)]
    pub export_markdown: Option<Destination>,

    /// An SVG chart of FPS, write(2) calls and the time split per row (`-` = stdout).
    #[arg(long, value_name = "FILE.svg", value_parser = Destination::parse)]
    pub plot: Option<Destination>,
}

/// The other workload, for a message that says which one a subject belongs to.
fn other(workload: Workload) -> Workload {
    match workload {
        Workload::Tui => Workload::Flood,
        Workload::Flood | Workload::Tour => Workload::Tui,
    }
}

impl BenchArgs {
    /// A run's length: the flood's default grid (12 writers, 3 runs each) answers in about a
    /// minute with 1 s runs; a frame mode's 2 s hold hundreds of frames.
    fn duration(&self) -> Duration {
        self.duration.unwrap_or(match self.workload {
            Workload::Flood => Duration::from_secs(1),
            Workload::Tui | Workload::Tour => Duration::from_secs(2),
        })
    }

    fn subjects(&self) -> Vec<Subject> {
        let mut subjects: Vec<Subject> = Vec::new();
        let default = match self.workload {
            // A tour visits the writer modes too (and is not a bench workload: clap skips it).
            Workload::Tui | Workload::Tour => "std",
            Workload::Flood => "flood",
        };
        let chosen = if self.modes.is_empty() {
            parse_subjects(default).unwrap_or_default()
        } else {
            self.modes.concat()
        };
        for s in chosen.into_iter().chain(self.commands.iter().cloned()) {
            if !subjects.contains(&s) {
                subjects.push(s);
            }
        }
        // Baselines first: every mode's row can then show its ratio as soon as it is written.
        subjects.sort_by_key(|s| !s.is_baseline());
        subjects
    }

    /// Every sink with every reader that applies to it: files and /dev/null have none.
    fn targets(&self) -> Vec<(Sink, Option<ReaderModel>)> {
        let mut targets = Vec::new();
        for &sink in &self.sink {
            if sink.has_reader() {
                targets.extend(self.reader.iter().map(|&r| (sink, Some(r))));
            } else {
                targets.push((sink, None));
            }
        }
        targets.dedup();
        targets
    }

    fn settings(&self) -> Settings {
        Settings {
            workload: self.workload,
            unit: self.workload.unit(),
            sizes: self.size.iter().map(|&s| Size::from(s)).collect(),
            readers: self.reader.iter().map(|&r| Reader::Model(r)).collect(),
            sinks: self.sink.clone(),
            runs: self.runs,
            warmup: self.warmup,
            duration_seconds: self.duration().as_secs_f64(),
            scene: self.frame.scene,
            sync: self.frame.sync,
            backends: self.backends(),
            wait: self.wait,
            capacity: self.frame.capacity,
            command: std::iter::once("flushlab".to_owned())
                .chain(std::env::args().skip(1).map(shell_word))
                .collect::<Vec<_>>()
                .join(" "),
        }
    }

    /// The backends asked for, each once, in the order given. A flood draws no frame, nor does
    /// another program through flushlab's backend: their rows are crossterm's, the default.
    fn backends(&self) -> Vec<BackendKind> {
        if self.workload == Workload::Flood {
            return vec![BackendKind::default()];
        }
        let mut backends = self.frame.backend.clone();
        backends.dedup();
        backends.sort_unstable();
        backends.dedup();
        backends
    }

    /// Every row (still without runs) with the spec of its runs, in table order: sizes, then
    /// sinks × readers, then backends, then subjects (ceilings first). Another program's rows
    /// come once, under the first backend: it draws with its own.
    fn cells(&self, binary: &Path, scratch: &Path) -> Vec<(Row, RunSpec)> {
        let mut cells = Vec::new();
        for &size in &self.size {
            for (sink, reader) in self.targets() {
                for (nth, backend) in self.backends().into_iter().enumerate() {
                    for subject in self.subjects() {
                        if nth > 0 && !subject.draws_the_frame() {
                            continue;
                        }
                        let mut row = Row::new(
                            subject.clone(),
                            Size::from(size),
                            reader.map_or(Reader::None, Reader::Model),
                            sink,
                        );
                        row.backend = backend;
                        let spec = RunSpec {
                            binary: binary.to_owned(),
                            subject,
                            capacity: self.frame.capacity,
                            scene: self.frame.scene,
                            sync: self.frame.sync,
                            backend,
                            wait: self.wait,
                            size,
                            duration: self.duration(),
                            sink,
                            reader: reader.unwrap_or(ReaderModel::Drain),
                            scratch: scratch.to_owned(),
                            grace: RunSpec::default_grace(self.duration()),
                            work: self.work,
                            rate: self.rate,
                            keys: self.keys.clone(),
                        };
                        cells.push((row, spec));
                    }
                }
            }
        }
        cells
    }

    fn exports(&self) -> Vec<Export> {
        let mut exports = Vec::new();
        let mut add = |destination: &Option<Destination>, exporter: Box<dyn Exporter>| {
            if let Some(destination) = destination {
                exports.push(Export {
                    exporter,
                    destination: destination.clone(),
                });
            }
        };
        add(&self.export_json, Box::new(JsonExporter));
        add(&self.export_csv, Box::new(CsvExporter));
        add(&self.export_markdown, Box::<MarkdownExporter>::default());
        add(&self.plot, Box::new(plot::SvgPlot));
        exports
    }
}

/// A bench the flags describe, validated: every check that can refuse them is made by
/// [`BenchArgs::plan`], none while measuring.
pub struct BenchPlan {
    args: BenchArgs,
    exports: Vec<Export>,
}

impl BenchArgs {
    /// The flags as a plan, or the one line that says why they cannot be one (ripgrep's
    /// `HiArgs::from_low_args`). Checks destinations too, writing nothing: an interrupted
    /// re-run must not wipe the results already there.
    pub fn plan(self) -> Result<BenchPlan, Refusal> {
        let flood = self.workload == Workload::Flood;
        if let Some(wrong) = self
            .subjects()
            .iter()
            .find(|s| matches!(s, Subject::Flood(_)) != flood)
        {
            return Err(Refusal::bad_input(format!(
                "'{wrong}' is not part of the {} workload (choose --workload {})",
                self.workload.name(),
                other(self.workload).name(),
            )));
        }
        let mut names: Vec<&str> = Vec::new();
        for command in &self.commands {
            let Subject::Command(external) = command else {
                continue;
            };
            if flushlab_core::files::find_program(external.argv[0].as_ref()).is_none() {
                return Err(Refusal::bad_input(format!(
                    "--command {}: '{}' is not a command (not found, or not executable)",
                    external.name,
                    flushlab_core::units::printable(&external.argv[0])
                )));
            }
            if names.contains(&external.name.as_str()) {
                return Err(Refusal::bad_input(format!(
                    "--command {0}=…: two rows named cmd/{0}; give each --command its own NAME",
                    external.name
                )));
            }
            names.push(&external.name);
        }
        if self.keys.is_some() && self.commands.is_empty() {
            return Err(Refusal::bad_input(
                "--keys types into --command rows' programs: give at least one --command \
                 NAME=CMD (flushlab's own modes draw without keys)",
            ));
        }
        if flood && !self.commands.is_empty() {
            return Err(Refusal::bad_input(
                "--command rows draw frames: they belong to --workload tui",
            ));
        }
        if flood && self.wait != Wait::Sleep {
            return Err(Refusal::bad_input(format!(
                "--wait {}: the flood's writers are std's and sleep as std does; --wait is for \
                 --workload tui",
                self.wait.name()
            )));
        }
        if !flood && (self.work.is_some() || self.rate.is_some()) {
            return Err(Refusal::bad_input(
                "--work and --rate shape the flood's requests: add --workload flood",
            ));
        }
        if let Some(plot) = &self.plot {
            plot.check_named_for("svg")
                .map_err(|e| Refusal::bad_input(format!("--plot {e}")))?;
        }
        let exports = self.exports();
        flushlab_core::results::export::distinct(
            &exports,
            "--export-json, --export-csv, --export-markdown, --plot",
        )?;
        for export in &exports {
            export
                .check()
                .map_err(|e| Refusal::bad_input(e.to_string()))?;
        }
        Ok(BenchPlan {
            args: self,
            exports,
        })
    }
}

pub fn run(args: BenchArgs) -> anyhow::Result<Outcome> {
    match args.plan() {
        Ok(plan) => plan.run(),
        Err(refusal) => Ok(refusal.of("bench").tell()),
    }
}

impl BenchPlan {
    /// Measures every row, writing the file exports after every run, then the table and the
    /// exports to stdout, and says what went wrong.
    pub fn run(self) -> anyhow::Result<Outcome> {
        let mut results = BenchResults {
            flushlab_version: env!("CARGO_PKG_VERSION").to_owned(),
            machine: Machine::this(),
            terminal: None,
            settings: self.args.settings(),
            results: Vec::new(),
            painted: Vec::new(),
        };
        // Ctrl-C (or SIGTERM, SIGHUP) stops the bench between runs or kills the current
        // child; what was measured is kept, printed and exported.
        let interrupt = flushlab_terminals::session::watch_termination_signals()
            .context("installing the signal handlers")?;
        self.measure(&mut results, &interrupt)?;
        flushlab_core::results::export::deliver(&results, &self.exports)?;
        if let Some(warning) = results.noise_warning() {
            complain(&format!("bench: {warning}"));
        }
        for warning in results.ceiling_warnings() {
            complain(&format!("bench: {warning}"));
        }
        let signal = interrupt.load(Ordering::Relaxed);
        if signal != 0 {
            let done: usize = results.results.iter().map(|r| r.runs.len()).sum();
            complain(&format!(
                "bench: interrupted after {done} counted run(s); the table and exports hold them"
            ));
            return Ok(Outcome::Signal(signal));
        }
        let failed: usize = results.results.iter().map(|r| r.failed_runs.len()).sum();
        if failed > 0 {
            complain(&format!(
                "bench: {failed} run(s) failed; see failed_runs in the JSON export"
            ));
            return Ok(Outcome::Failed);
        }
        Ok(Outcome::Finished)
    }

    /// Every step of the plan, each a child run; `results` holds every row measured so far,
    /// and the file exports are rewritten after each run, so that a late failure (or Ctrl-C)
    /// loses nothing already measured.
    fn measure(
        &self,
        results: &mut BenchResults,
        interrupt: &std::sync::atomic::AtomicUsize,
    ) -> anyhow::Result<()> {
        let args = &self.args;
        let binary = std::env::current_exe().context("finding flushlab's own binary")?;
        // Swept: a bench killed mid-run (SIGKILL) leaves nothing in TMPDIR either.
        let scratch = flushlab_core::files::Scratch::swept("flushlab-bench")
            .context("creating a scratch directory")?;
        let mut cells = args.cells(&binary, scratch.path());
        let steps = plan(cells.len(), args.warmup, args.runs);
        let progress = progress_bar(steps.len() as u64);
        for step in steps {
            let (row, spec) = &mut cells[step.row];
            progress.set_message(match step.round {
                Some(round) => {
                    format!("{} {} · round {round}/{}", row.subject, row.size, args.runs)
                }
                None => format!("{} {} · warm-up", row.subject, row.size),
            });
            let outcome = run_once(spec, interrupt);
            if interrupt.load(Ordering::Relaxed) != 0 {
                break;
            }
            match outcome {
                Ok(run) if step.round.is_some() => row.runs.push(Run {
                    round: step.round,
                    ..run
                }),
                Ok(_) => {}
                Err(failure) => {
                    // `complain`, not `eprintln!`: a stderr that is a closed pipe is no panic.
                    progress.suspend(|| {
                        complain(&format!(
                            "bench: {} at {}: {}",
                            row.subject, row.size, failure.reason
                        ));
                    });
                    row.failed_runs.push(failure);
                }
            }
            progress.inc(1);
            row.summarize();
            results.results = cells
                .iter()
                .map(|(row, _)| row)
                .filter(|row| !row.runs.is_empty() || !row.failed_runs.is_empty())
                .cloned()
                .collect();
            results.compute_ratios();
            for export in &self.exports {
                export.write_file(results)?;
            }
        }
        progress.finish_and_clear();
        Ok(())
    }
}

/// One child run, in the order the bench makes them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Step {
    /// Index of the row (in table order).
    pub row: usize,
    /// The counted round this run belongs to (1-based); `None` for a warm-up.
    pub round: Option<u32>,
}

/// The order of the runs: the warm-ups, then `runs` rounds that each visit every row once.
///
/// Rounds rather than each row's runs back to back, because this machine's speed drifts over
/// tens of seconds (CPU clock, neighbours on a shared host): measured row by row, a row took
/// whatever the machine did during its few seconds, and two identical writers (stdout/block and
/// stderr/block at 80x24) came out 1,270 vs 1,774 fps. Round-robin spreads the drift over every
/// row, where the [min–max] spread shows it instead of turning it into a difference between
/// rows. The price: a row is complete only after the last round, so a bench stopped early has
/// every row with fewer runs rather than the first rows with all of them.
///
/// Warm-ups are runs of the first rows, not of every row: each run is a fresh process in a fresh
/// pty, so all a warm-up can warm is shared by every row (the binary in the page cache, the CPU
/// clock).
pub fn plan(rows: usize, warmup: u32, runs: u32) -> Vec<Step> {
    if rows == 0 {
        return Vec::new();
    }
    let warmups = (0..warmup as usize).map(|i| Step {
        row: i % rows,
        round: None,
    });
    let rounds = (1..=runs).flat_map(|round| {
        (0..rows).map(move |row| Step {
            row,
            round: Some(round),
        })
    });
    warmups.chain(rounds).collect()
}

fn progress_bar(total: u64) -> ProgressBar {
    let target = if std::io::stderr().is_terminal() {
        ProgressDrawTarget::stderr()
    } else {
        ProgressDrawTarget::hidden()
    };
    let bar = ProgressBar::with_draw_target(Some(total), target);
    if let Ok(style) = ProgressStyle::with_template(
        // `wide_msg` takes what is left of the line and no more: the bar never wraps.
        "{bar:20} {pos}/{len} · ~{eta} left · {wide_msg}",
    ) {
        bar.set_style(style);
    }
    bar
}

/// Quotes an argument for the recorded command line when the shell would need it.
fn shell_word(arg: String) -> String {
    if !arg.is_empty()
        && arg
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_./:=,+@%".contains(c))
    {
        arg
    } else {
        format!("'{}'", arg.replace('\'', r"'\''"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plan_warms_up_then_visits_every_row_once_per_round() {
        let steps = plan(3, 1, 2);
        let warm = |row| Step { row, round: None };
        let run = |row, round| Step {
            row,
            round: Some(round),
        };
        assert_eq!(
            steps,
            [
                warm(0),
                run(0, 1),
                run(1, 1),
                run(2, 1),
                run(0, 2),
                run(1, 2),
                run(2, 2)
            ]
        );
    }

    #[test]
    fn plan_spreads_more_warm_ups_than_rows_and_handles_no_rows() {
        let rows: Vec<usize> = plan(2, 3, 1).iter().map(|s| s.row).collect();
        assert_eq!(rows, [0, 1, 0, 0, 1]);
        assert!(plan(0, 1, 3).is_empty());
    }
}
