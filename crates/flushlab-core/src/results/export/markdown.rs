use std::fmt::Write;

use super::table::{cell, column_width, table, unpadded_table, write_table};
use super::{Exporter, or_dash};
use crate::results::conditions::{Unit, Workload};
use crate::results::{BenchResults, Row, Spread};
use crate::units::{bytes, count, percent};

/// The table a person reads, padded so that it reads as well in a terminal as rendered; the
/// bench and the tour print the same to stdout, narrowed to the terminal's width.
#[derive(Clone, Copy, Debug, Default)]
pub struct MarkdownExporter {
    /// The widest a line may be: columns give way, least telling first, until the table fits.
    /// `None` (exports): every column.
    pub width: Option<usize>,
}

/// The columns that give way when a table is too wide, first to go first. The mode and its
/// rate always stay.
const GIVE_WAY: [Column; 14] = [
    Column::PeakRss,
    Column::MachineCpu,
    Column::ReaderCpu,
    Column::Sink,
    Column::Reader,
    Column::Size,
    Column::BytesPerWrite,
    Column::XFastest,
    Column::Shown,
    Column::Latency,
    Column::Kernel,
    Column::Bytes,
    Column::Cpu,
    Column::XCeiling,
];

/// A frame's time reads in ms, a log line's in µs: (unit's name, factor from ms).
fn time_unit(unit: Unit) -> (&'static str, f64) {
    match unit {
        Unit::Frame => ("ms", 1.0),
        Unit::Line => ("µs", 1000.0),
    }
}

impl MarkdownExporter {
    /// For a table printed on stdout: as wide as the terminal, if stdout is one.
    pub fn for_stdout() -> Self {
        let width = crate::sys::window_size(std::io::stdout())
            .ok()
            .map(|(cols, _)| usize::from(cols))
            .filter(|&cols| cols > 0);
        MarkdownExporter { width }
    }
}

/// Text columns (left-aligned) come first.
const TEXT_COLUMNS: usize = 4;

/// Rates below 1,000 with a decimal, above with thousands separators.
fn rate(v: f64) -> String {
    if v < 1000.0 {
        format!("{v:.1}")
    } else {
        count(v)
    }
}

impl MarkdownExporter {
    /// A table of a split's parts, one line a row, under `intro`; where it does not fit the
    /// width, a line that says so. Nothing when no row has the split.
    fn parts_table(
        &self,
        out: &mut impl std::fmt::Write,
        intro: &str,
        parts: &[(&str, f64)],
        rows: &[Vec<String>],
    ) -> std::fmt::Result {
        if rows.is_empty() {
            return Ok(());
        }
        let header: Vec<String> = ["mode", "size", "sink", "reader"]
            .into_iter()
            .chain(parts.iter().map(|(name, _)| *name))
            .map(str::to_owned)
            .collect();
        let fits = |table: &String| {
            let fits = |line: &str| self.width.is_none_or(|w| line.chars().count() <= w);
            table.lines().all(fits)
        };
        let tables = [
            table(&header, rows, TEXT_COLUMNS),
            unpadded_table(&header, rows, TEXT_COLUMNS),
        ];
        match tables.iter().find(|t| fits(t)) {
            Some(table) => write!(out, "\n{intro}:\n\n{table}")?,
            None => writeln!(out, "\n({intro}: too wide here, in the exports.)")?,
        }
        Ok(())
    }
}

impl Exporter for MarkdownExporter {
    fn serialize(&self, results: &BenchResults) -> anyhow::Result<Vec<u8>> {
        let mut out = String::new();
        self.main_table(&mut out, results)?;
        self.split_tables(&mut out, results)?;
        if !results.painted.is_empty() {
            out.push_str("\nWhat the terminal painted (read from its window):\n\n");
            out.push_str(&super::painted::painted_markdown(&results.painted));
        }
        notes(&mut out, results)?;
        Ok(out.into_bytes())
    }
}

/// A column of the main table. Which appear depends on the results ([`columns`]); each
/// names itself and fills its cells, so that a header and its cells cannot drift apart.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Column {
    Mode,
    Size,
    Sink,
    Reader,
    Rate,
    /// What a tour's terminal confirmed it showed.
    Shown,
    /// Torn paints a second, where a terminal model counted them (a tour).
    Torn,
    Writes,
    Bytes,
    BytesPerWrite,
    Kernel,
    Cpu,
    /// The CPU the bench's reader thread used a frame: the other side of the pty.
    ReaderCpu,
    /// The whole machine's busy time a frame.
    MachineCpu,
    /// A flood's p50 / p99 latency (of a log call, or with `--rate` of a request).
    Latency,
    /// A keyed program's p50 / p95 time from a key to its frame (`--command … --keys`).
    KeyToFrame,
    PeakRss,
    XCeiling,
    XFastest,
}

/// The columns these results have, in the table's order; the first [`TEXT_COLUMNS`] are text.
fn columns(results: &BenchResults) -> Vec<Column> {
    use Column::*;
    let rows = &results.results;
    let shown = rows.iter().any(|r| r.shown_fps.is_some());
    let torn = rows.iter().any(|r| r.torn_paints_per_second.is_some());
    let latency = rows.iter().any(|r| r.latency_ns().is_some());
    let keyed = rows.iter().any(|r| r.key_to_frame_ms().is_some());
    let reader_cpu = rows.iter().any(|r| r.reader_cpu_ms_per_frame.is_some());
    let machine_cpu = rows.iter().any(|r| r.machine_cpu_ms_per_frame.is_some());
    [
        Mode,
        Size,
        Sink,
        Reader,
        Rate,
        Shown,
        Torn,
        Writes,
        Bytes,
        BytesPerWrite,
        Kernel,
        Cpu,
        ReaderCpu,
        MachineCpu,
        Latency,
        KeyToFrame,
        PeakRss,
        XCeiling,
        XFastest,
    ]
    .into_iter()
    .filter(|c| match c {
        Shown => shown,
        Torn => torn,
        ReaderCpu => reader_cpu,
        MachineCpu => machine_cpu,
        Latency => latency,
        KeyToFrame => keyed,
        _ => true,
    })
    .collect()
}

impl Column {
    fn header(self, unit: Unit) -> String {
        match self {
            Column::Mode => "mode".into(),
            Column::Size => "size".into(),
            Column::Sink => "sink".into(),
            Column::Reader => "reader".into(),
            Column::Rate => format!("{unit}s/s median [min–max]"),
            Column::Shown => format!("shown {unit}s/s"),
            Column::Torn => "torn paints/s".into(),
            Column::Writes => format!("writes/{unit}"),
            Column::Bytes => format!("bytes/{unit}"),
            Column::BytesPerWrite => "bytes/write".into(),
            Column::Kernel => "kernel".into(),
            Column::Cpu => format!("CPU {}/{unit}", time_unit(unit).0),
            Column::ReaderCpu => format!("reader CPU {}/{unit}", time_unit(unit).0),
            Column::MachineCpu => format!("machine busy {}/{unit}", time_unit(unit).0),
            Column::Latency => "latency p50 / p99".into(),
            Column::KeyToFrame => {
                "key→frame p50 / p95 (input delay + processing + emit + drain, p50s)".into()
            }
            Column::PeakRss => "peak RSS".into(),
            Column::XCeiling => "× ceiling".into(),
            Column::XFastest => "× fastest".into(),
        }
    }

    fn cell(self, results: &BenchResults, row: &Row) -> String {
        let ratio = |v: Option<f64>| or_dash(v, |r| format!("{r:.2}"));
        match self {
            Column::Mode => results.row_name(row),
            Column::Size => cell(&row.size.to_string()),
            Column::Sink => cell(row.sink.name()),
            Column::Reader => cell(&row.reader.to_string()),
            Column::Rate => rate_cell(row),
            Column::Shown => or_dash(row.shown_fps, rate),
            Column::Torn => or_dash(row.torn_paints_per_second, count),
            Column::Writes => or_dash(row.writes_per_frame, count),
            Column::Bytes => or_dash(row.bytes_per_frame, bytes),
            Column::BytesPerWrite => or_dash(row.bytes_per_write, bytes),
            Column::Kernel => or_dash(row.kernel_share, percent),
            Column::Cpu => or_dash(row.cpu_ms_per_frame, |ms| cpu(results.settings.unit, ms)),
            Column::ReaderCpu => or_dash(row.reader_cpu_ms_per_frame, |ms| {
                cpu(results.settings.unit, ms)
            }),
            Column::MachineCpu => or_dash(row.machine_cpu_ms_per_frame, |ms| {
                cpu(results.settings.unit, ms)
            }),
            Column::Latency => row.latency_ns().map_or_else(
                || "–".into(),
                |(p50, p99)| {
                    let ns = |v: f64| crate::units::nanoseconds(v.round() as u64);
                    format!("{} / {}", ns(p50), ns(p99))
                },
            ),
            Column::KeyToFrame => row.key_to_frame_ms().map_or_else(
                || "–".into(),
                |(p50, p95)| {
                    let ms = crate::units::milliseconds;
                    let mut cell = format!("{} / {}", ms(p50), ms(p95));
                    // Where the p50 goes, stage by stage (input delay, processing, emit, drain).
                    if let Some(stages) = row.key_stages_p50_ms() {
                        let parts: Vec<String> = stages.iter().map(|&(_, v)| ms(v)).collect();
                        cell += &format!(" ({})", parts.join(" + "));
                    }
                    cell
                },
            ),
            Column::PeakRss => row
                .peak_rss_kib
                .map_or_else(|| "–".into(), |k| bytes(k as f64 * 1024.0)),
            Column::XCeiling => ratio(row.ratio_to_ceiling),
            // The flood's loop without logging is what the others are measured against.
            Column::XFastest if row.subject.is_baseline() && !row.subject.is_ceiling() => {
                "baseline".into()
            }
            Column::XFastest => ratio(row.ratio_to_fastest),
        }
    }
}

/// A frame's ms to the µs; a line's µs to a hundredth, as far as its runs agree.
fn cpu(unit: Unit, ms: f64) -> String {
    match unit {
        Unit::Frame => format!("{ms:.3}"),
        Unit::Line => format!("{:.2}", ms * time_unit(Unit::Line).1),
    }
}

/// The rate with its spread, or why there is none.
fn rate_cell(row: &Row) -> String {
    let failed = if row.failed_runs.is_empty() {
        String::new()
    } else {
        format!(" ({} failed)", row.failed_runs.len())
    };
    row.fps.map_or_else(
        || match row.per_second {
            // Another program whose frames are unknown: per second only.
            Some(p) => format!(
                "frames unknown: {}/s, {} write(2)/s{failed}",
                bytes(p.bytes_per_second),
                p.writes_per_second.map_or_else(|| "–".into(), count)
            ),
            None => format!("failed{failed}"),
        },
        // One run has no range to show.
        |f| match row.runs.len() {
            1 => format!("{}{failed}", rate(f.median)),
            _ => format!(
                "{} [{}–{}]{failed}",
                rate(f.median),
                rate(f.min),
                rate(f.max)
            ),
        },
    )
}

impl MarkdownExporter {
    /// The table of every row, narrowed to the width (columns give way, and say so).
    fn main_table(&self, out: &mut String, results: &BenchResults) -> anyhow::Result<()> {
        let unit = results.settings.unit;
        let columns = columns(results);
        let mut header: Vec<String> = columns.iter().map(|c| c.header(unit)).collect();
        let rows: Vec<Vec<String>> = results
            .results
            .iter()
            .map(|row| columns.iter().map(|c| c.cell(results, row)).collect())
            .collect();
        let mut widths: Vec<usize> = (0..header.len())
            .map(|i| column_width(&header, &rows, i))
            .collect();
        // A column with nothing in it (ratios of a tour, which has no ceilings) is not shown.
        for (i, width) in widths.iter_mut().enumerate().skip(TEXT_COLUMNS) {
            if rows.iter().all(|r| r[i] == "–") {
                *width = 0;
            }
        }
        // Narrow the table: a column gives way (its width set to none) until the lines fit.
        let total = |widths: &[usize]| {
            let shown: Vec<&usize> = widths.iter().filter(|w| **w > 0).collect();
            shown.iter().copied().sum::<usize>() + 3 * shown.len() + 1
        };
        let mut left_out: Vec<String> = Vec::new();
        if let Some(limit) = self.width {
            for gives_way in GIVE_WAY {
                if total(&widths) <= limit {
                    break;
                }
                // A column already empty (not shown) is not left out.
                if let Some(i) = columns
                    .iter()
                    .position(|c| *c == gives_way)
                    .filter(|&i| widths[i] > 0)
                {
                    widths[i] = 0;
                    left_out.push(header[i].clone());
                }
            }
            // Shorter words for the rate's header.
            if total(&widths) > limit {
                header[TEXT_COLUMNS] = format!("{unit}s/s [min–max]");
                widths[TEXT_COLUMNS] = column_width(&header, &rows, TEXT_COLUMNS);
            }
        }
        write_table(out, &header, &rows, (&widths, TEXT_COLUMNS))?;
        if !left_out.is_empty() {
            writeln!(
                out,
                "\n(Left out to fit {} columns: {}; the exports have every column.)",
                self.width.unwrap_or_default(),
                left_out.join(", ")
            )?;
        }
        Ok(())
    }

    /// Where each row's frame went: the frame loop's thread, then the writer thread's.
    fn split_tables(&self, out: &mut String, results: &BenchResults) -> std::fmt::Result {
        let unit = results.settings.unit;
        let (time, scale) = time_unit(unit);
        let named = |row: &Row, parts: &[(&str, f64)]| {
            let named = [
                results.row_name(row),
                cell(&row.size.to_string()),
                cell(row.sink.name()),
                cell(&row.reader.to_string()),
            ];
            named
                .into_iter()
                .chain(parts.iter().map(|(_, ms)| format!("{:.2}", ms * scale)))
                .collect::<Vec<String>>()
        };
        let painter: Vec<Vec<String>> = results
            .results
            .iter()
            .filter_map(|row| Some(named(row, &row.time_split?.parts())))
            .collect();
        self.parts_table(
            out,
            &format!(
                "Where a {unit}'s time goes ({time} a {unit}, median of the runs; the loop's \
                 thread — in the thread modes its reader wait is its wait for the writer thread)"
            ),
            &crate::figures::TimeSplit::default().parts(),
            &painter,
        )?;
        let writer: Vec<Vec<String>> = results
            .results
            .iter()
            .filter_map(|row| Some(named(row, &row.time_split?.writer?.parts())))
            .collect();
        self.parts_table(
            out,
            &format!(
                "The writer thread's {unit} in the thread modes ({time} a {unit}, median of the runs)"
            ),
            &crate::figures::WriterSplit::default().parts(),
            &writer,
        )
    }
}

/// Each backend's fastest mode against the first backend's, round by round (see
/// [`BenchResults::backends_by_round`]); the sink and the reader named where rows differ in them.
fn backends_by_round(
    out: &mut String,
    results: &BenchResults,
    sinks: bool,
    readers: bool,
) -> std::fmt::Result {
    let rounds: Vec<String> = results
        .backends_by_round()
        .into_iter()
        .map(|c| {
            let mut at = c.size.to_string();
            if sinks {
                at = format!("{at}, {}", c.sink);
            }
            if readers {
                at = format!("{at}, {}", cell(&c.reader.to_string()));
            }
            let spread = |s: Spread| format!("{:.2} [{:.2}–{:.2}]", s.median, s.min, s.max);
            let ceiling = c.to_ceiling.map_or(String::new(), |s| {
                format!(", to its own lower ceiling {}", spread(s))
            });
            format!(
                "{at}: {}'s fastest mode ({}) against {}'s ({}) {}{ceiling}, over {} round(s)",
                c.backend.name(),
                results.name(&c.fastest),
                c.base.name(),
                results.name(&c.base_fastest),
                spread(c.ratio),
                c.rounds
            )
        })
        .collect();
    if !rounds.is_empty() {
        writeln!(
            out,
            "\nBackends round by round (a round runs every row once: each ratio is of two runs of one round, median [min–max] of the rounds) — {}.",
            rounds.join("; ")
        )?;
    }
    Ok(())
}

/// Each keyed program against the first under the same conditions, round by round, with the
/// interval and verdict `wrap --against` gives (see [`BenchResults::keyed_by_round`]).
fn keyed_by_round(out: &mut String, results: &BenchResults) -> std::fmt::Result {
    let lines: Vec<String> = results
        .keyed_by_round()
        .into_iter()
        .map(|k| {
            let ratio = k
                .ratio
                .map_or("unknown (fewer than 3 rounds)".to_owned(), |r| {
                    format!("×{:.2} [{:.2}–{:.2}]", r.estimate, r.low, r.high)
                });
            format!(
                "{}: {} over {} {ratio}, {} (±{:.0}%), over {} round(s)",
                k.size,
                results.name(&k.subject),
                results.name(&k.base),
                k.verdict.name(),
                crate::results::KEYED_THRESHOLD * 100.0,
                k.rounds
            )
        })
        .collect();
    if !lines.is_empty() {
        writeln!(
            out,
            "\nKeyed programs round by round (key→frame p50, each ratio of two runs of one round; the 95% interval from resampling the rounds, as `flushlab wrap --against`) — {}.",
            lines.join("; ")
        )?;
    }
    Ok(())
}

/// Under the tables: the rows the runs cannot tell apart, the backends round by round, how and
/// where it was measured, and the command.
fn notes(out: &mut String, results: &BenchResults) -> std::fmt::Result {
    let alike = results.indistinguishable();
    let first = results.results.first();
    let rows = &results.results;
    let sinks = first.is_some_and(|f| rows.iter().any(|r| r.sink != f.sink));
    let readers = first.is_some_and(|f| rows.iter().any(|r| r.reader != f.reader));
    if !alike.is_empty() {
        // Grouped by all that tells a group of rows apart from the others.
        let mut groups: Vec<(String, Vec<String>)> = Vec::new();
        for (a, b) in &alike {
            let mut at = a.size.to_string();
            if sinks {
                at = format!("{at}, {}", a.sink);
            }
            if readers {
                at = format!("{at}, {}", cell(&a.reader.to_string()));
            }
            let pair = format!("{} ≈ {}", results.row_name(a), results.row_name(b));
            match groups.iter_mut().find(|(g, _)| *g == at) {
                Some((_, pairs)) => pairs.push(pair),
                None => groups.push((at, vec![pair])),
            }
        }
        let groups: Vec<String> = groups
            .into_iter()
            .map(|(at, pairs)| format!("{at}: {}", pairs.join(", ")))
            .collect();
        writeln!(
            out,
            "\nThe runs cannot tell these apart (their [min–max] overlap; no ratio between them means anything) — {}.",
            groups.join("; ")
        )?;
    }
    backends_by_round(out, results, sinks, readers)?;
    keyed_by_round(out, results)?;
    let s = &results.settings;
    writeln!(
        out,
        "\n{} workload: {} run(s) of {} s per row after {} warm-up{}; flushlab {} on {} ({} cores, {}{}).",
        s.workload,
        s.runs,
        s.duration_seconds,
        s.warmup,
        if s.workload == Workload::Tui {
            format!(
                ", scene {}, sync {}, backend {}",
                s.scene.name(),
                if s.sync { "on" } else { "off" },
                s.backends
                    .iter()
                    .map(|b| b.name())
                    .collect::<Vec<_>>()
                    .join(", ")
            ) + &s
                .wait
                .describe()
                .map_or(String::new(), |w| format!(", {w}"))
        } else {
            String::new()
        },
        results.flushlab_version,
        results.machine.cpu_model,
        results.machine.cores,
        results.machine.kernel,
        match &results.machine.idle {
            Some(idle) => format!("; {idle}"),
            None => String::new(),
        },
    )?;
    writeln!(out, "Command: `{}`", s.command)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn markdown_snapshot() {
        let bytes = MarkdownExporter::default()
            .serialize(&crate::results::export::fixture::results())
            .unwrap();
        insta::assert_snapshot!(String::from_utf8(bytes).unwrap());
    }

    #[test]
    fn a_second_backend_is_compared_round_by_round() {
        use crate::backend::BackendKind;
        let mut results = crate::results::export::fixture::results();
        let one = String::from_utf8(MarkdownExporter::default().serialize(&results).unwrap());
        assert!(!one.unwrap().contains("round by round"));
        let mut lean = results.results[4].clone();
        lean.backend = BackendKind::Lean;
        for run in &mut lean.runs {
            run.figures.fps *= 2.0;
        }
        lean.summarize();
        results.results.push(lean);
        results.settings.backends = vec![BackendKind::Crossterm, BackendKind::Lean];
        let text = String::from_utf8(MarkdownExporter::default().serialize(&results).unwrap());
        let text = text.unwrap();
        assert!(
            text.contains(
                "200x60: lean's fastest mode (stdout/thread) against crossterm's (stdout/thread) \
                 2.00 [2.00–2.00], over 3 round(s)."
            ),
            "{text}"
        );
    }

    #[test]
    fn a_table_narrows_to_the_width_it_is_given() {
        let results = crate::results::export::fixture::results();
        let full = MarkdownExporter::default().serialize(&results).unwrap();
        let full = String::from_utf8(full).unwrap();
        assert!(full.lines().any(|l| l.chars().count() > 120));
        for width in [80, 100, 120] {
            let narrow = MarkdownExporter { width: Some(width) };
            let text = String::from_utf8(narrow.serialize(&results).unwrap()).unwrap();
            for line in text.lines().filter(|l| l.starts_with('|')) {
                assert!(line.chars().count() <= width, "{width}: {line}");
            }
            // The mode and its rate always stay, and the reader is told what left.
            assert!(
                text.contains("stderr/raw") && text.contains("[min–max]"),
                "{text}"
            );
            assert!(text.contains("Left out to fit"), "{text}");
        }
        insta::assert_snapshot!(
            String::from_utf8(
                MarkdownExporter { width: Some(80) }
                    .serialize(&results)
                    .unwrap()
            )
            .unwrap()
        );
    }

    #[test]
    fn a_flood_table_speaks_of_lines_against_no_logging() {
        use crate::results::conditions::{Reader, ReaderModel, Sink, Size, Unit, Workload};
        use crate::subject::{FloodWriter, Subject};
        let mut results = crate::results::export::fixture::results();
        results.settings.workload = Workload::Flood;
        results.settings.unit = Unit::Line;
        let size = Size { cols: 80, rows: 24 };
        let row = |writer, sink, fps: f64| {
            let mut row = Row::new(
                Subject::Flood(writer),
                size,
                Reader::Model(ReaderModel::Drain),
                sink,
            );
            row.runs = [0.99, 1.0, 1.01]
                .map(|f| crate::results::export::fixture::run(fps * f, 0.01))
                .to_vec();
            row.summarize();
            row
        };
        results.results = vec![
            row(FloodWriter::None, Sink::Pty, 90e6),
            row(FloodWriter::Println, Sink::Pty, 1e6),
            row(FloodWriter::Lock, Sink::Pty, 1e6),
            row(FloodWriter::None, Sink::Pipe, 90e6),
            row(FloodWriter::Println, Sink::Pipe, 2e6),
            row(FloodWriter::Lock, Sink::Pipe, 2e6),
        ];
        // Timed runs (with --rate): the median of the runs' percentiles, in their unit.
        for (run, p50) in results.results[1]
            .runs
            .iter_mut()
            .zip([31_000, 32_000, 90_000])
        {
            run.p50_ns = Some(p50);
            run.p99_ns = Some(p50 * 10_000);
        }
        results.compute_ratios();
        let text = MarkdownExporter::default().serialize(&results).unwrap();
        let text = String::from_utf8(text).unwrap();
        assert!(text.contains("CPU µs/line"), "{text}");
        assert!(text.contains("latency p50 / p99"), "{text}");
        assert!(text.contains(" 32 µs / 320 ms |"), "{text}");
        // No ceiling in a flood: the column is not there; no logging is the baseline.
        assert!(!text.contains("× ceiling"), "{text}");
        let none = text
            .lines()
            .find(|l| l.starts_with("| flood/none"))
            .unwrap();
        assert!(none.trim_end().ends_with("baseline |"), "{none}");
        assert!(!text.contains("frame"), "{text}");
        // The baseline is no one's fastest: println is 1.00 of the fastest *writer*.
        let println = text
            .lines()
            .find(|l| l.starts_with("| flood/println"))
            .unwrap();
        assert!(println.trim_end().ends_with("1.00 |"), "{println}");
        // Alike pairs, grouped by the sink that tells them apart.
        assert!(
            text.contains(
                "pty: flood/println ≈ flood/lock; 80x24, pipe: flood/println ≈ flood/lock"
            ),
            "{text}"
        );
        assert!(!text.contains("flood/none ≈"), "{text}");
    }
}
