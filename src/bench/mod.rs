//! `flushlab bench`: every writer mode, headless, each in a fresh pseudo-terminal, measured the
//! same way, with the two ceilings beside them.
//!
//! Split like hyperfine: this module schedules (sizes × subjects, warm-up, runs, exports after
//! each row), [`executor`] runs one child, [`statistics`] summarises, [`results`] is the plain
//! data the [`export`]ers and the [`plot`] read.

pub mod executor;
pub mod export;
pub mod plot;
pub mod reader;
pub mod results;
pub mod statistics;
pub mod subject;

use std::io::IsTerminal;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use anyhow::Context;
use clap::{Args, ValueEnum};
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

use self::executor::{RunSpec, Sink, run_once};
use self::export::{CsvExporter, Export, Exporter, JsonExporter, MarkdownExporter};
use self::reader::{ReaderModel, parse_reader};
use self::results::{BenchResults, Machine, Row, Settings};
use self::subject::{Subject, parse_subjects};
use crate::cli::{FrameArgs, parse_duration, parse_size};
use crate::writer_mode::Mode;

#[derive(Debug, Args)]
pub struct BenchArgs {
    /// What to measure: `tui` frames (the writer modes) or `flood` log lines (the flood
    /// writers).
    #[arg(long, value_enum, default_value_t = Workload::Tui)]
    pub workload: Workload,

    /// Modes to measure, comma-separated: stdout/raw, stderr/block, …, ceiling/cpu,
    /// ceiling/transport, flood/println, …; or `all`, `modes`, `ceilings`, `flood`
    /// [default: all for tui, flood for flood]
    #[arg(long, value_delimiter = ',', value_parser = parse_subjects)]
    pub modes: Vec<Vec<Subject>>,

    /// Terminal sizes, comma-separated COLSxROWS.
    #[arg(long, value_delimiter = ',', value_parser = parse_size, default_value = "200x60")]
    pub size: Vec<(u16, u16)>,

    /// How the terminal (or pipe) side is read, comma-separated: drain, vt, throttle:RATE
    /// (e.g. throttle:20MB/s). Each reader is a row of its own.
    #[arg(long, value_delimiter = ',', value_parser = parse_reader, default_value = "drain")]
    pub reader: Vec<ReaderModel>,

    /// What is behind the measured stream, comma-separated: pty, pipe, file, null. Files and
    /// /dev/null have no reader.
    #[arg(long, value_enum, value_delimiter = ',', default_value = "pty")]
    pub sink: Vec<Sink>,

    /// Counted runs per mode and size.
    #[arg(long, default_value_t = 3, value_parser = clap::value_parser!(u32).range(1..=1000))]
    pub runs: u32,

    /// Uncounted warm-up runs per mode and size, before the counted ones.
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(0..=100))]
    pub warmup: u32,

    /// Seconds per run.
    #[arg(long, value_parser = parse_duration, default_value = "2", allow_negative_numbers = true)]
    pub duration: Duration,

    #[command(flatten)]
    pub frame: FrameArgs,

    /// Write all results as JSON, after every row (`-` = stdout, at the end).
    #[arg(long, value_name = "FILE")]
    pub export_json: Option<PathBuf>,

    #[arg(long, value_name = "FILE")]
    pub export_csv: Option<PathBuf>,

    #[arg(long, value_name = "FILE")]
    pub export_markdown: Option<PathBuf>,

    /// An SVG chart of FPS per mode and write(2) calls per frame.
    #[arg(long, value_name = "FILE.svg")]
    pub plot: Option<PathBuf>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum Workload {
    /// Full-screen frames through the writer modes.
    Tui,
    /// Numbered log lines through the flood writers.
    Flood,
}

impl BenchArgs {
    fn subjects(&self) -> Vec<Subject> {
        let mut subjects: Vec<Subject> = Vec::new();
        let default = match self.workload {
            Workload::Tui => "all",
            Workload::Flood => "flood",
        };
        let chosen = if self.modes.is_empty() {
            parse_subjects(default).unwrap_or_default()
        } else {
            self.modes.concat()
        };
        for s in chosen {
            if !subjects.contains(&s) {
                subjects.push(s);
            }
        }
        // Ceilings first: every mode's row can then show its ratio as soon as it is written.
        subjects.sort_by_key(|s| !s.is_ceiling());
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

    fn exports(&self) -> Vec<Export> {
        let mut exports = Vec::new();
        let mut add = |path: &Option<PathBuf>, exporter: Box<dyn Exporter>| {
            if let Some(path) = path {
                exports.push(Export {
                    exporter,
                    path: path.clone(),
                });
            }
        };
        add(&self.export_json, Box::new(JsonExporter));
        add(&self.export_csv, Box::new(CsvExporter));
        add(&self.export_markdown, Box::new(MarkdownExporter));
        exports
    }
}

/// The name a row's mode goes by: block rows carry their capacity, as in the explorer.
fn row_name(subject: Subject, capacity: usize) -> String {
    match subject {
        Subject::Mode(stream, buffering) => Mode::new(stream, buffering, capacity).to_string(),
        ceiling => ceiling.to_string(),
    }
}

pub fn run(args: BenchArgs) -> anyhow::Result<ExitCode> {
    let subjects = args.subjects();
    if let Some(wrong) = subjects
        .iter()
        .find(|s| matches!(s, Subject::Flood(_)) != (args.workload == Workload::Flood))
    {
        eprintln!(
            "flushlab bench: '{wrong}' is not part of the {} workload (choose --workload {})",
            if args.workload == Workload::Flood {
                "flood"
            } else {
                "tui"
            },
            if args.workload == Workload::Flood {
                "tui"
            } else {
                "flood"
            },
        );
        return Ok(ExitCode::from(2));
    }
    let targets = args.targets();
    let exports = args.exports();
    let mut results = BenchResults {
        flushlab_version: env!("CARGO_PKG_VERSION").to_owned(),
        machine: Machine::this(),
        terminal: None,
        settings: Settings {
            workload: match args.workload {
                Workload::Tui => "tui".into(),
                Workload::Flood => "flood".into(),
            },
            unit: match args.workload {
                Workload::Tui => "frame".into(),
                Workload::Flood => "line".into(),
            },
            sizes: args.size.iter().map(|(c, r)| format!("{c}x{r}")).collect(),
            readers: args.reader.iter().map(ToString::to_string).collect(),
            sinks: args.sink.iter().map(|s| s.name().to_owned()).collect(),
            runs: args.runs,
            warmup: args.warmup,
            duration_seconds: args.duration.as_secs_f64(),
            scene: args.frame.scene.name().to_owned(),
            sync: args.frame.sync,
            capacity: args.frame.capacity,
            command: std::iter::once("flushlab".to_owned())
                .chain(std::env::args().skip(1).map(shell_word))
                .collect::<Vec<_>>()
                .join(" "),
        },
        results: Vec::new(),
    };
    // Refuse unwritable destinations before spending minutes measuring.
    for export in &exports {
        if let Err(e) = export.write_file(&results) {
            eprintln!("flushlab bench: {e}");
            return Ok(ExitCode::from(2));
        }
    }

    let binary = std::env::current_exe().context("finding flushlab's own binary")?;
    let scratch = std::env::temp_dir().join(format!("flushlab-bench-{}", std::process::id()));
    std::fs::create_dir_all(&scratch).with_context(|| format!("creating {}", scratch.display()))?;
    let total = (args.size.len() * targets.len() * subjects.len()) as u64
        * u64::from(args.warmup + args.runs);
    let progress = progress_bar(total);

    for &size in &args.size {
        for &(sink, reader) in &targets {
            for &subject in &subjects {
                let name = row_name(subject, args.frame.capacity);
                let reader_name = reader.map_or_else(|| "none".to_owned(), |r| r.to_string());
                let mut row = Row::new(
                    name.clone(),
                    subject.is_ceiling(),
                    format!("{}x{}", size.0, size.1),
                    reader_name,
                    sink.name().to_owned(),
                );
                let spec = RunSpec {
                    binary: binary.clone(),
                    subject,
                    capacity: args.frame.capacity,
                    scene: args.frame.scene.name(),
                    sync: args.frame.sync,
                    size,
                    duration: args.duration,
                    sink,
                    reader: reader.unwrap_or(ReaderModel::Drain),
                    scratch: scratch.clone(),
                    grace: RunSpec::default_grace(args.duration),
                };
                for i in 0..args.warmup + args.runs {
                    let counted = i >= args.warmup;
                    progress.set_message(format!(
                        "{name} {} {}",
                        row.size,
                        if counted { "run" } else { "warm-up" }
                    ));
                    match run_once(&spec) {
                        Ok(run) if counted => row.runs.push(run),
                        Ok(_) => {}
                        Err(failure) => {
                            progress.suspend(|| {
                                eprintln!(
                                    "flushlab bench: {name} at {}: {}",
                                    row.size, failure.reason
                                );
                            });
                            row.failed_runs.push(failure);
                        }
                    }
                    progress.inc(1);
                }
                row.summarize();
                results.results.push(row);
                results.compute_ratios();
                for export in &exports {
                    export.write_file(&results)?;
                }
            }
        }
    }
    progress.finish_and_clear();
    let _ = std::fs::remove_dir_all(&scratch);

    print!(
        "{}",
        String::from_utf8_lossy(&MarkdownExporter.serialize(&results)?)
    );
    for export in &exports {
        export.write_stdout(&results)?;
    }
    if let Some(path) = &args.plot {
        plot::write_svg(&results, path)
            .with_context(|| format!("writing the plot {}", path.display()))?;
    }
    let failed: usize = results.results.iter().map(|r| r.failed_runs.len()).sum();
    if failed > 0 {
        eprintln!("flushlab bench: {failed} run(s) failed; see failed_runs in the JSON export");
        return Ok(ExitCode::FAILURE);
    }
    Ok(ExitCode::SUCCESS)
}

fn progress_bar(total: u64) -> ProgressBar {
    let target = if std::io::stderr().is_terminal() {
        ProgressDrawTarget::stderr()
    } else {
        ProgressDrawTarget::hidden()
    };
    let bar = ProgressBar::with_draw_target(Some(total), target);
    if let Ok(style) = ProgressStyle::with_template("{bar:30} {pos}/{len} runs, {elapsed} · {msg}")
    {
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
