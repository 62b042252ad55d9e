//! Exporters: one per format, each a pure function from [`BenchResults`] to bytes. Writing the
//! bytes somewhere is [`write_atomically`]'s job, not theirs.

mod csv;
mod json;
mod markdown;
mod painted;
mod table;

pub use self::csv::{CsvExporter, field as csv_field};
pub use self::json::JsonExporter;
pub use self::markdown::MarkdownExporter;
pub use self::painted::{painted_csv, painted_markdown};
pub use self::table::{cell as markdown_cell, table as markdown_table};
use super::BenchResults;
use crate::files::{Destination, write_atomically};

pub trait Exporter {
    fn serialize(&self, results: &BenchResults) -> anyhow::Result<Vec<u8>>;
}

/// An exporter and where its output goes: a file (written after every run) or standard
/// output (written once, at the end).
pub struct Export {
    pub exporter: Box<dyn Exporter>,
    pub destination: Destination,
}

impl Export {
    /// Writes the current results to the file (not stdout): called after every run, so a late
    /// failure loses nothing.
    pub fn write_file(&self, results: &BenchResults) -> anyhow::Result<()> {
        let Destination::File(path) = &self.destination else {
            return Ok(());
        };
        let bytes = self.exporter.serialize(results)?;
        write_atomically(path, &bytes)
            .map_err(|e| anyhow::anyhow!("cannot write '{}': {e}", path.display()))
    }

    /// Refuses, before any measuring, a destination that cannot be written; writes nothing.
    pub fn check(&self) -> anyhow::Result<()> {
        self.destination
            .check()
            .map_err(|e| anyhow::anyhow!("cannot write '{}': {e}", self.destination))
    }

    /// Writes the results to standard output, when that is the destination.
    pub fn write_stdout(&self, results: &BenchResults) -> anyhow::Result<()> {
        if self.destination.is_stdout() {
            self.destination.write(&self.exporter.serialize(results)?)?;
        }
        Ok(())
    }
}

/// The end of a command that measured `results`: the table for people on stdout (on stderr
/// when stdout carries one of the `exports`, so that `| jq` reads only JSON), then the export
/// whose destination is stdout. Files were written by [`Export::write_file`].
pub fn deliver(results: &BenchResults, exports: &[Export]) -> anyhow::Result<()> {
    let table = MarkdownExporter::for_stdout().serialize(results)?;
    if exports.iter().any(|e| e.destination.is_stdout()) {
        crate::outcome::print_aside(&table)?;
    } else {
        crate::outcome::print(&table)?;
    }
    for export in exports {
        export.write_stdout(results)?;
    }
    Ok(())
}

/// Refuses two exports to one destination (the last would overwrite the others, or two
/// formats would run together on stdout); `flags` names the flags, for the message.
pub fn distinct(exports: &[Export], flags: &str) -> Result<(), String> {
    let destinations: Vec<&Destination> = exports.iter().map(|e| &e.destination).collect();
    distinct_destinations(&destinations, flags)
}

/// [`distinct`] for destinations whatever writes them.
pub fn distinct_destinations(destinations: &[&Destination], flags: &str) -> Result<(), String> {
    let same = |a: &Destination, b: &Destination| match (a, b) {
        (Destination::Stdout, Destination::Stdout) => true,
        (Destination::File(a), Destination::File(b)) => {
            a == b
                || std::fs::canonicalize(a)
                    .is_ok_and(|a| std::fs::canonicalize(b).is_ok_and(|b| a == b))
        }
        _ => false,
    };
    match destinations
        .iter()
        .enumerate()
        .find_map(|(i, d)| destinations[..i].iter().any(|e| same(d, e)).then_some(d))
    {
        Some(twice) => Err(format!(
            "'{twice}' is given to two of {flags}: one destination each"
        )),
        None => Ok(()),
    }
}

/// Figures as the table shows them: `–` for unknown.
pub fn or_dash(value: Option<f64>, format: impl Fn(f64) -> String) -> String {
    value.map_or_else(|| "–".to_owned(), format)
}

#[cfg(test)]
pub(crate) mod fixture {
    use crate::figures::Figures;
    use crate::results::conditions::{Reader, ReaderModel, Sink, Size, Unit, Workload};
    use crate::results::*;
    use crate::subject::{Ceiling, Subject};
    use crate::writer_mode::{Buffering, Stream};

    pub fn run(fps: f64, writes: f64) -> Run {
        Run {
            figures: Figures {
                frames: (fps * 2.0) as u64,
                seconds: 2.0,
                fps,
                writes_per_frame: Some(writes),
                bytes_per_frame: Some(370_500.0),
                bytes_per_write: Some(370_500.0 / writes),
                kernel_share: 0.25,
                user_seconds: 0.75,
                kernel_seconds: 0.25,
                time_split: Some(crate::figures::TimeSplit {
                    build_ms: 0.3,
                    encode_ms: 2.9,
                    kernel_ms: 0.5,
                    cpu_wait_ms: 0.1,
                    reader_wait_ms: (1000.0 / fps - 3.8).max(0.0),
                    idle_ms: 0.0,
                    writer: None,
                }),
            },
            peak_rss_kib: 9_000,
            p50_ns: None,
            p99_ns: None,
            key_to_frame_ms: None,
            key_stages_ms: None,
            reader_bytes: (fps * 2.0 * 370_500.0) as u64,
            reader_cpu_seconds: None,
            machine_busy_seconds: None,
            shown_fps: None,
            torn_paints_per_second: None,
            per_second: None,
            round: None,
        }
    }

    /// Fixed results: two ceilings, three modes (one with a failed run), one size.
    pub fn results() -> BenchResults {
        let size = Size {
            cols: 200,
            rows: 60,
        };
        let mut rows: Vec<Row> = [
            Subject::Ceiling(Ceiling::Cpu),
            Subject::Ceiling(Ceiling::Transport),
            Subject::Mode(Stream::Stderr, Buffering::Raw),
            Subject::Mode(Stream::Stdout, Buffering::Frame),
            Subject::Mode(Stream::Stdout, Buffering::Thread),
        ]
        .into_iter()
        .map(|subject| Row::new(subject, size, Reader::Model(ReaderModel::Drain), Sink::Pty))
        .collect();
        rows[0].runs = vec![run(260.0, 0.0), run(250.0, 0.0), run(270.0, 0.0)];
        rows[1].runs = vec![run(410.0, 1.0), run(400.0, 1.0), run(420.0, 1.0)];
        rows[2].runs = vec![run(1.5, 198_000.0), run(1.4, 198_100.0)];
        rows[2].failed_runs = vec![FailedRun {
            reason: "killed after 7.0 s".into(),
            output: "last words".into(),
        }];
        rows[3].runs = vec![run(130.0, 1.0), run(140.0, 1.0), run(120.0, 1.0)];
        // The thread mode's writer thread: 0.4 ms a frame on a CPU, 1.5 waiting for frames.
        rows[4].runs = [180.0, 190.0, 170.0]
            .map(|fps| {
                let mut run = run(fps, 1.0);
                if let Some(split) = &mut run.figures.time_split {
                    split.writer = Some(crate::figures::WriterSplit {
                        on_cpu_ms: 0.4,
                        cpu_wait_ms: 0.1,
                        frame_wait_ms: 1.5,
                        reader_wait_ms: 1000.0 / fps - 2.0,
                    });
                }
                run
            })
            .into();
        for row in &mut rows {
            row.summarize();
        }
        let mut results = BenchResults {
            flushlab_version: "0.1.0".into(),
            machine: Machine {
                cores: 2,
                kernel: "Linux 6.1.0".into(),
                cpu_model: "Test CPU".into(),
                idle: None,
            },
            terminal: None,
            painted: Vec::new(),
            settings: Settings {
                workload: Workload::Tui,
                unit: Unit::Frame,
                sizes: vec![size],
                readers: vec![Reader::Model(ReaderModel::Drain)],
                sinks: vec![Sink::Pty],
                runs: 3,
                warmup: 1,
                duration_seconds: 2.0,
                scene: crate::scene::Scene::Full,
                sync: false,
                backends: vec![crate::backend::BackendKind::Crossterm],
                wait: crate::wait::Wait::Sleep,
                capacity: 8192,
                command: "flushlab bench".into(),
            },
            results: rows,
        };
        results.compute_ratios();
        results
    }
}
