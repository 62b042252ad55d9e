//! The figures README.md and docs/ quote from the bench results in docs/results, kept in one
//! place. A quoted figure carries, right after it, a mark naming where it comes from:
//!
//! ```text
//! 173,432<!--fig std-200x60 stderr/raw writes_per_frame-->
//! 4.6 [4.5–4.7]<!--fig std-200x60 stderr/raw fps-->
//! 26<!--fig std-200x60 stderr/raw cpu_ms_per_frame per:stdout/line-->×
//! 142.5<!--fig time-split stdout/line@200x60,throttle:2MB/s reader_wait_ms-->
//! ```
//!
//! `SOURCE` is `docs/results/SOURCE.json`; the row is a mode as the tables name it, with `@`
//! and the size, reader or sink that tell it apart where a file has several; then a field and
//! options: `per:ROW` (the figure is a ratio to another row's same field), a scale of a field
//! kept in bytes, ns or units (`kB`, `µs`: ÷ 10³; `MB`, `ms`, `M`: ÷ 10⁶), `%` (a share × 100),
//! `machine` (the figure is a choice this machine made, like the transport
//! ceiling's fastest write size) and `noisy` (the scheduler decides it, like how often a
//! writer thread finds its queue dry and flushes: one matrix here had the thread into
//! /dev/null at 1.4–5.0 M lines/s and the next run 0.28 then 0.05 write(2) a line): both are
//! checked against their file and never compared with a fresh run. The Markdown
//! renders the figure alone; the mark is a comment.
//!
//! `flushlab paint`'s files (`paint-*.json`) are quoted the same way, a row being a group of
//! runs, `kitty:stdout/frame@on,80x24`, and a field one of [`PAINT_FIELDS`]; a table copied
//! whole sits under `<!--table paint-80x24-->` and must be `paint::markdown` of its file.
//!
//! Three checks:
//! - **Every quoted figure is its file's** (`cargo test`): written as the quote is written —
//!   as many decimals, thousands separators — it is the same text; a quote starting with `~`
//!   is within 10%. An unknown file, row or field fails too.
//! - **They still hold** (`scripts/regenerate-docs.sh --short`, in CI): against a fresh run of
//!   the same commands on this machine, in `$FLUSHLAB_FRESH_RESULTS`, with the tolerance
//!   [`Kind::holds`] states (machines differ: counts within 15%, shares within 20 points, rates
//!   as ratios to std's `stdout()` (a log line's: `println!`'s) in the same conditions and
//!   ratios within a factor of 3, latencies within a factor of 10 —
//!   two machines of this project's kind put `stderr()` at 4.6 and 2.9 fps against `stdout()`'s
//!   129 and 171 at 200x60, a factor of 2.1 between their ratios). A fresh run the machine
//!   starved (a row waited for a core [`STARVED_POINTS`] more of its frames than quoted, as
//!   the kernel counts it) cannot speak for timings: its timing figures that do not hold are
//!   printed with the reason and set aside; its counts still must hold.
//! - `FLUSHLAB_WRITE_FIGURES=1` rewrites every quoted figure from its file instead of checking
//!   (`scripts/regenerate-docs.sh` does, after re-running the commands into docs/results).

use crate::common;

use flushlab_core::backend::BackendKind;

use flushlab_core::results::conditions::Workload;
use flushlab_core::results::painted::PaintRun;
use flushlab_core::results::{BenchResults, Row};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// The documents whose figures are marked.
const DOCS: [&str; 4] = [
    "README.md",
    "docs/guide.md",
    "docs/results/README.md",
    "docs/terminals.md",
];

/// The row every rate is compared with: std's `stdout()`, the lesson's "× stdout()"; for a
/// log line, `println!`.
fn reference(results: &BenchResults) -> &'static str {
    match results.settings.workload {
        Workload::Flood => "flood/println",
        Workload::Tui | Workload::Tour => "stdout/line",
    }
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum Field {
    Fps,
    ShownFps,
    WritesPerFrame,
    BytesPerFrame,
    BytesPerWrite,
    KernelShare,
    CpuMsPerFrame,
    /// The bench's reader thread's CPU a frame, ms.
    ReaderCpuMsPerFrame,
    /// The whole machine's busy time a frame, ms.
    MachineCpuMsPerFrame,
    RatioToCeiling,
    RatioToFastest,
    /// One part of the frame's time split, in ms: index into `TimeSplit::parts`.
    Split(usize),
    /// One part of the writer thread's frame, in ms: index into `WriterSplit::parts`.
    Writer(usize),
    /// A flood's latency percentiles, ns.
    P50,
    P99,
    /// Bytes the reader took in a run.
    ReaderBytes,
    /// Frames or lines a run wrote.
    Units,
    /// The largest run's peak RSS, bytes.
    PeakRss,
    /// A figure of `flushlab paint`'s results (index into [`PAINT_FIELDS`]): the median of a
    /// group's runs. Painted frames need a desktop and four terminals, so a fresh run in CI
    /// does not re-measure them; they are checked against their file.
    Painted(usize),
}

/// The fields of a paint run a document may quote, as `paint::markdown` shows them.
type PaintField = fn(&PaintRun) -> Option<f64>;
const PAINT_FIELDS: [(&str, PaintField); 8] = [
    ("accepted_fps", |r| Some(r.painted.accepted_fps)),
    ("painted_fps", |r| Some(r.painted.painted_fps)),
    ("skipped_share", |r| Some(r.painted.skipped_share)),
    ("torn_share", |r| Some(r.painted.torn_share)),
    ("latency_p50_ms", |r| r.painted.latency_p50_ms),
    ("latency_p99_ms", |r| r.painted.latency_p99_ms),
    ("read_p99_ms", |r| r.painted.read_p99_ms),
    ("observer_cpu_share", |r| Some(r.observer_cpu_share)),
];

use common::SPLIT_FIELDS as SPLIT_PARTS;

const WRITER_PARTS: [&str; 4] = [
    "writer_on_cpu_ms",
    "writer_cpu_wait_ms",
    "writer_frame_wait_ms",
    "writer_reader_wait_ms",
];

impl Field {
    fn parse(name: &str) -> Result<Field, String> {
        Ok(match name {
            "fps" => Field::Fps,
            "shown_fps" => Field::ShownFps,
            "writes_per_frame" => Field::WritesPerFrame,
            "bytes_per_frame" => Field::BytesPerFrame,
            "bytes_per_write" => Field::BytesPerWrite,
            "kernel_share" => Field::KernelShare,
            "cpu_ms_per_frame" => Field::CpuMsPerFrame,
            "reader_cpu_ms_per_frame" => Field::ReaderCpuMsPerFrame,
            "machine_cpu_ms_per_frame" => Field::MachineCpuMsPerFrame,
            "ratio_to_ceiling" => Field::RatioToCeiling,
            "ratio_to_fastest" => Field::RatioToFastest,
            "p50_ns" => Field::P50,
            "p99_ns" => Field::P99,
            "reader_bytes" => Field::ReaderBytes,
            "units" => Field::Units,
            "peak_rss" => Field::PeakRss,
            other if PAINT_FIELDS.iter().any(|(name, _)| *name == other) => Field::Painted(
                PAINT_FIELDS
                    .iter()
                    .position(|(name, _)| *name == other)
                    .unwrap_or_default(),
            ),
            other => {
                let split = SPLIT_PARTS.iter().position(|p| *p == other);
                let writer = WRITER_PARTS.iter().position(|p| *p == other);
                match (split, writer) {
                    (Some(i), _) => Field::Split(i),
                    (_, Some(i)) => Field::Writer(i),
                    _ => {
                        return Err(format!(
                            "no field '{other}': choose one of fps, shown_fps, \
                             writes_per_frame, bytes_per_frame, bytes_per_write, kernel_share, \
                             cpu_ms_per_frame, ratio_to_ceiling, ratio_to_fastest, p50_ns, \
                             p99_ns, reader_bytes, units, peak_rss, {}, {}, {}",
                            SPLIT_PARTS.join(", "),
                            WRITER_PARTS.join(", "),
                            PAINT_FIELDS.map(|(name, _)| name).join(", ")
                        ));
                    }
                }
            }
        })
    }

    /// The field of a row, with its fps spread where it has one.
    fn of(self, row: &Row) -> Option<Value> {
        let plain = |v: Option<f64>| v.map(Value::One);
        match self {
            Field::Fps => row.fps.map(|s| Value::Spread(s.median, s.min, s.max)),
            Field::ShownFps => plain(row.shown_fps),
            Field::WritesPerFrame => plain(row.writes_per_frame),
            Field::BytesPerFrame => plain(row.bytes_per_frame),
            Field::BytesPerWrite => plain(row.bytes_per_write),
            Field::KernelShare => plain(row.kernel_share),
            Field::CpuMsPerFrame => plain(row.cpu_ms_per_frame),
            Field::ReaderCpuMsPerFrame => plain(row.reader_cpu_ms_per_frame),
            Field::MachineCpuMsPerFrame => plain(row.machine_cpu_ms_per_frame),
            Field::RatioToCeiling => plain(row.ratio_to_ceiling),
            Field::RatioToFastest => plain(row.ratio_to_fastest),
            Field::Split(i) => plain(row.time_split.map(|t| t.parts()[i].1)),
            Field::Writer(i) => plain(
                row.time_split
                    .and_then(|t| t.writer)
                    .map(|w| w.parts()[i].1),
            ),
            Field::P50 => plain(row.latency_ns().map(|l| l.0)),
            Field::P99 => plain(row.latency_ns().map(|l| l.1)),
            Field::ReaderBytes => plain(row.reader_bytes_per_run()),
            Field::Units => plain(row.units_per_run()),
            Field::PeakRss => plain(row.peak_rss_kib.map(|k| k as f64 * 1024.0)),
            Field::Painted(_) => None,
        }
    }

    fn kind(self) -> Kind {
        match self {
            Field::WritesPerFrame | Field::BytesPerFrame | Field::BytesPerWrite => Kind::Count,
            // What a throttled reader took: its rate times the run's length, on any machine.
            Field::ReaderBytes => Kind::Count,
            Field::KernelShare | Field::Split(_) | Field::Writer(_) => Kind::Share,
            // Lines a run wrote and the memory a queue of them took follow the machine's speed.
            Field::Fps
            | Field::ShownFps
            | Field::CpuMsPerFrame
            | Field::ReaderCpuMsPerFrame
            | Field::MachineCpuMsPerFrame
            | Field::Units
            | Field::PeakRss
            | Field::Painted(_) => Kind::Rate,
            Field::P50 | Field::P99 => Kind::Latency,
            Field::RatioToCeiling | Field::RatioToFastest => Kind::Ratio,
        }
    }
}

/// What a figure is, which decides how a fresh run on another machine may differ from it.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Kind {
    /// Writes and bytes: the same code makes the same calls anywhere.
    Count,
    /// A share of the CPU time or of the frame: compared as shares, in points.
    Share,
    /// Frames a second, CPU a frame: compared as ratios to std's `stdout()` in the same
    /// conditions, since a faster machine moves every row.
    Rate,
    /// Already a ratio between rows.
    Ratio,
    /// A latency percentile, compared as it is: what it says is an order of magnitude (a
    /// 17 µs request against hundreds of ms behind a blocked stdout). A ratio to `println!`'s
    /// would carry that row's noise too. Tails of µs are the scheduler's (`noisy`): three runs
    /// here put `println!`'s p99 in a drained pty at 467, 51 and 123 µs.
    Latency,
}

impl Kind {
    /// The tolerance, stated once: a quoted figure holds against a fresh one when… (see the
    /// file's head for why a factor of 3)
    fn holds(self, quoted: f64, fresh: f64) -> bool {
        match self {
            Kind::Count => (fresh - quoted).abs() <= 0.15 * quoted.abs().max(1.0),
            Kind::Share => (fresh - quoted).abs() <= 0.20,
            Kind::Rate | Kind::Ratio | Kind::Latency => {
                let factor = if self == Kind::Latency { 10.0 } else { 3.0 };
                let (q, f) = (quoted.max(1e-9), fresh.max(1e-9));
                q / f <= factor && f / q <= factor
            }
        }
    }

    fn tolerance(self) -> &'static str {
        match self {
            Kind::Count => "15%",
            Kind::Share => "20 points",
            Kind::Rate => "a factor of 3, as a ratio to std's writer (stdout/line, flood/println)",
            Kind::Ratio => "a factor of 3",
            Kind::Latency => "a factor of 10",
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum Value {
    One(f64),
    /// median, min, max
    Spread(f64, f64, f64),
}

impl Value {
    fn main(self) -> f64 {
        match self {
            Value::One(v) | Value::Spread(v, _, _) => v,
        }
    }

    fn map(self, f: impl Fn(f64) -> f64) -> Value {
        match self {
            Value::One(v) => Value::One(f(v)),
            Value::Spread(m, lo, hi) => Value::Spread(f(m), f(lo), f(hi)),
        }
    }
}

/// How the document wrote a figure: the text it must stay, given the value.
#[derive(Debug, Clone, PartialEq)]
struct Quote {
    /// Byte range of the figure in the document.
    start: usize,
    end: usize,
    approximate: bool,
    decimals: usize,
    /// `4.6 [4.5–4.7]`: the median and its spread's ends, with their decimals.
    spread: Option<usize>,
    value: f64,
}

/// `1,234.5` → (value, decimals).
fn number(text: &str) -> Option<(f64, usize)> {
    let plain = text.replace(',', "");
    let value = plain.parse().ok()?;
    let decimals = plain.find('.').map_or(0, |dot| plain.len() - dot - 1);
    Some((value, decimals))
}

/// `173432.0, 0` → `173,432`; a `~` figure keeps two significant digits.
fn written(value: f64, decimals: usize) -> String {
    let fixed = format!("{value:.decimals$}");
    let (whole, fraction) = fixed.split_once('.').unwrap_or((&fixed, ""));
    let whole: u64 = whole.parse().unwrap_or(0);
    let whole = flushlab_core::units::thousands(whole);
    if fraction.is_empty() {
        whole
    } else {
        format!("{whole}.{fraction}")
    }
}

/// A `~` figure: as many decimals as the quote had, or for a whole number two significant
/// digits (`~170,000`).
fn approximately(value: f64, decimals: usize) -> String {
    if decimals > 0 {
        return format!("~{}", written(value, decimals));
    }
    let magnitude = 10f64.powi(value.abs().max(1.0).log10().floor() as i32 - 1);
    let rounded = (value / magnitude).round() * magnitude;
    format!("~{}", written(rounded, 0))
}

impl Quote {
    /// The figure that ends where a mark begins.
    fn before(text: &str, end: usize) -> Result<Quote, String> {
        let head = &text[..end];
        let is_digit = |c: char| c.is_ascii_digit() || c == ',' || c == '.';
        let number_start = |upto: usize| {
            head[..upto]
                .char_indices()
                .rev()
                .take_while(|(_, c)| is_digit(*c))
                .last()
                .map(|(i, _)| i)
        };
        let (median_end, spread) = match head.strip_suffix(']') {
            Some(inner_head) => {
                let open = inner_head
                    .rfind(" [")
                    .ok_or("a figure ending in ']' without ' [' before it")?;
                let (lo, hi) = inner_head[open + 2..]
                    .split_once('–')
                    .ok_or("a spread is written 'MEDIAN [MIN–MAX]'")?;
                let (_, d_lo) = number(lo).ok_or_else(|| format!("'{lo}' is not a number"))?;
                number(hi).ok_or_else(|| format!("'{hi}' is not a number"))?;
                (open, Some(d_lo))
            }
            None => (end, None),
        };
        let start = number_start(median_end)
            .ok_or_else(|| format!("no figure before the mark: '…{}'", tail(head)))?;
        let (value, decimals) = number(&head[start..median_end])
            .ok_or_else(|| format!("'{}' is not a number", &head[start..median_end]))?;
        let approximate = head[..start].ends_with('~');
        let start = if approximate { start - 1 } else { start };
        Ok(Quote {
            start,
            end,
            approximate,
            decimals,
            spread,
            value,
        })
    }

    /// The figure as the document writes it, for a value.
    fn render(&self, value: Value) -> String {
        if self.approximate {
            return approximately(value.main(), self.decimals);
        }
        match (value, self.spread) {
            (Value::Spread(m, lo, hi), Some(d)) => format!(
                "{} [{}–{}]",
                written(m, self.decimals),
                written(lo, d),
                written(hi, d)
            ),
            _ => written(value.main(), self.decimals),
        }
    }

    /// Whether the quoted text is what the value gives (`~` figures: within 10%).
    fn is(&self, text: &str, value: Value) -> bool {
        if self.approximate {
            return (self.value - value.main()).abs() <= 0.10 * value.main().abs();
        }
        self.render(value) == text[self.start..self.end]
    }
}

fn tail(text: &str) -> &str {
    let from = text.char_indices().rev().nth(20).map_or(0, |(i, _)| i);
    &text[from..]
}

/// One mark and the figure before it.
#[derive(Debug, Clone)]
struct Mark {
    line: usize,
    quote: Quote,
    source: String,
    row: String,
    field: Field,
    per: Option<String>,
    scale: f64,
    /// `machine` or `noisy`: not compared with a fresh run.
    not_rerun: bool,
}

const OPEN: &str = "<!--fig ";

fn marks(text: &str) -> Vec<Result<Mark, String>> {
    let mut found = Vec::new();
    let mut from = 0;
    while let Some(at) = text[from..].find(OPEN).map(|i| from + i) {
        let line = text[..at].lines().count().max(1);
        let close = text[at..].find("-->").map(|i| at + i);
        from = close.map_or(text.len(), |c| c + 3);
        let mark = close
            .ok_or_else(|| "a mark without its '-->'".to_owned())
            .and_then(|close| Mark::parse(text, at, &text[at + OPEN.len()..close], line));
        found.push(mark.map_err(|e| format!("line {line}: {e}")));
    }
    found
}

impl Mark {
    fn parse(text: &str, at: usize, inside: &str, line: usize) -> Result<Mark, String> {
        let mut words = inside.split_whitespace();
        let usage =
            "a mark is <!--fig SOURCE ROW FIELD [per:ROW] [kB|MB|M|µs|ms|%] [machine|noisy]-->";
        let (Some(source), Some(row), Some(field)) = (words.next(), words.next(), words.next())
        else {
            return Err(usage.to_owned());
        };
        let mut mark = Mark {
            line,
            quote: Quote::before(text, at)?,
            source: source.to_owned(),
            row: row.to_owned(),
            field: Field::parse(field)?,
            per: None,
            scale: 1.0,
            not_rerun: false,
        };
        for option in words {
            match option {
                // Of a field in bytes, ns or units.
                "kB" | "µs" => mark.scale = 1e-3,
                "M" | "MB" | "ms" => mark.scale = 1e-6,
                "%" => mark.scale = 100.0,
                "machine" | "noisy" => mark.not_rerun = true,
                per if per.starts_with("per:") => mark.per = Some(per[4..].to_owned()),
                other => return Err(format!("no option '{other}': {usage}")),
            }
        }
        Ok(mark)
    }

    fn kind(&self) -> Kind {
        if self.per.is_some() {
            Kind::Ratio
        } else {
            self.field.kind()
        }
    }

    /// The figure's value in its file, a bench's or a paint's, scaled as the document writes
    /// it.
    fn value_in(&self, sources: &mut Sources) -> Result<Value, String> {
        match self.field {
            Field::Painted(i) => {
                let runs = sources.painted(&self.source)?;
                let value = |spec: &str| paint_value(runs, spec, PAINT_FIELDS[i].1);
                let value = value(&self.row)?;
                let value = match &self.per {
                    Some(other) => Value::One(
                        value.main() / paint_value(runs, other, PAINT_FIELDS[i].1)?.main(),
                    ),
                    None => value,
                };
                Ok(value.map(|v| v * self.scale))
            }
            _ => sources.get(&self.source).and_then(|r| self.value(r)),
        }
    }

    /// The figure's value in a bench's result file, scaled as the document writes it.
    fn value(&self, results: &BenchResults) -> Result<Value, String> {
        let field = |name: &str| {
            let row = find_row(results, name)?;
            self.field
                .of(row)
                .ok_or_else(|| format!("{name} has no {:?}", self.field))
        };
        let value = field(&self.row)?;
        let value = match &self.per {
            Some(other) => Value::One(value.main() / field(other)?.main()),
            None => value,
        };
        Ok(value.map(|v| v * self.scale))
    }

    /// What a fresh run is compared on: rates become ratios to std's `stdout()` in the same
    /// conditions; a part of the time split becomes its share of the frame.
    fn comparable(&self, results: &BenchResults) -> Result<f64, String> {
        let value = self.value(results)?.main() / self.scale;
        let row = find_row(results, &self.row)?;
        match (self.kind(), self.field) {
            (Kind::Share, Field::Split(_) | Field::Writer(_)) => {
                let total = match self.field {
                    Field::Writer(_) => row
                        .time_split
                        .and_then(|t| t.writer)
                        .map(|w| w.parts().iter().map(|p| p.1).sum()),
                    _ => row.time_split.map(|t| t.total_ms()),
                };
                let total = total.unwrap_or(0.0);
                Ok(if total > 0.0 { value / total } else { 0.0 })
            }
            (Kind::Rate, field) => {
                let name = reference(results);
                let base = results
                    .results
                    .iter()
                    // std's writer through ratatui's own backend, in the same place: a lean
                    // row's rate is compared as a ratio to it too (the lean `stdout/line`
                    // swings most of all rows, a factor of 3 between runs here).
                    .find(|r| {
                        results.name(&r.subject) == name
                            && r.backend == BackendKind::default()
                            && (r.size, r.sink, &r.reader) == (row.size, row.sink, &row.reader)
                    })
                    .ok_or_else(|| format!("no {name} row beside {} to compare with", self.row))?;
                let base = field
                    .of(base)
                    .ok_or_else(|| format!("{name} has no {field:?}"))?
                    .main();
                Ok(value / base)
            }
            _ => Ok(value),
        }
    }
}

/// `stdout/line` or `stdout/line@200x60,throttle:2MB/s,lean`: exactly one row.
fn find_row<'a>(results: &'a BenchResults, spec: &str) -> Result<&'a Row, String> {
    let (name, conditions) = spec.split_once('@').unwrap_or((spec, ""));
    let matching: Vec<&Row> = results
        .results
        .iter()
        .filter(|r| {
            let named = results.name(&r.subject);
            (named == name || r.subject.to_string() == name)
                && conditions.split(',').filter(|c| !c.is_empty()).all(|c| {
                    c == r.size.to_string()
                        || c == r.reader.to_string()
                        || c == r.sink.to_string()
                        || c == r.backend.name()
                })
        })
        .collect();
    match matching.as_slice() {
        [row] => Ok(row),
        [] => Err(format!(
            "no row '{spec}': the rows are {}",
            results
                .results
                .iter()
                .map(|r| format!(
                    "{}@{},{},{}",
                    results.name(&r.subject),
                    r.size,
                    r.reader,
                    r.sink
                ))
                .collect::<Vec<_>>()
                .join(" ")
        )),
        _ => Err(format!(
            "'{spec}' is {} rows: add @SIZE, @READER or @SINK",
            matching.len()
        )),
    }
}

/// `kitty:stdout/frame@on,80x24`: the runs of exactly one group (terminal, mode, then sync
/// `on`/`off`, the size, `unobserved`), and the median [min–max] of a field over them.
fn paint_value(runs: &[PaintRun], spec: &str, field: PaintField) -> Result<Value, String> {
    use flushlab_core::results::painted::groups;
    let (name, conditions) = spec.split_once('@').unwrap_or((spec, ""));
    let all = groups(runs);
    let name_of = |r: &PaintRun| format!("{}:{}", r.terminal, r.mode);
    let matching: Vec<&Vec<&PaintRun>> = all
        .iter()
        .filter(|g| {
            let r = g[0];
            name_of(r) == name
                && conditions.split(',').filter(|c| !c.is_empty()).all(|c| {
                    c == if r.sync { "on" } else { "off" }
                        || c == format!("{}x{}", r.cols, r.rows)
                        || (c == "unobserved" && !r.observed)
                })
        })
        .collect();
    let group = match matching.as_slice() {
        [group] => group,
        [] => {
            let names: Vec<String> = all
                .iter()
                .map(|g| {
                    let r = g[0];
                    let sync = if r.sync { "on" } else { "off" };
                    format!("{}@{sync},{}x{}", name_of(r), r.cols, r.rows)
                })
                .collect();
            return Err(format!(
                "no group '{spec}': the groups are {}",
                names.join(" ")
            ));
        }
        _ => {
            return Err(format!(
                "'{spec}' is {} groups: add @on/off or @SIZE",
                matching.len()
            ));
        }
    };
    let spread = flushlab_core::statistics::Spread::of(group.iter().filter_map(|r| field(r)))
        .ok_or_else(|| format!("{spec} has no such figure"))?;
    Ok(Value::Spread(spread.median, spread.min, spread.max))
}

/// `SOURCE.json` in `dir`, parsed; an error names the file.
fn read<T>(
    dir: &Path,
    source: &str,
    parse: impl FnOnce(&[u8]) -> Result<T, String>,
) -> Result<T, String> {
    let path = dir.join(format!("{source}.json"));
    let bytes = std::fs::read(&path).map_err(|e| format!("{}: {e}", path.display()))?;
    parse(&bytes).map_err(|e| format!("{}: {e}", path.display()))
}

fn load_painted(dir: &Path, source: &str) -> Result<Vec<PaintRun>, String> {
    read(dir, source, |bytes| {
        serde_json::from_slice::<flushlab::painting::PaintResults>(bytes)
            .map(|p| p.runs)
            .map_err(|e| format!("not paint results: {e}"))
    })
}

fn load(dir: &Path, source: &str) -> Result<BenchResults, String> {
    read(dir, source, |bytes| {
        BenchResults::from_json(bytes).map_err(|e| format!("{e:#}"))
    })
}

struct Sources {
    dir: PathBuf,
    loaded: BTreeMap<String, Result<BenchResults, String>>,
    painted: BTreeMap<String, Result<Vec<PaintRun>, String>>,
}

impl Sources {
    fn new(dir: PathBuf) -> Sources {
        Sources {
            dir,
            loaded: BTreeMap::new(),
            painted: BTreeMap::new(),
        }
    }

    fn painted(&mut self, source: &str) -> Result<&[PaintRun], String> {
        cached(&mut self.painted, &self.dir, source, load_painted).map(Vec::as_slice)
    }

    fn get(&mut self, source: &str) -> Result<&BenchResults, String> {
        cached(&mut self.loaded, &self.dir, source, load)
    }
}

/// A file read once, or why it could not be.
fn cached<'a, T>(
    map: &'a mut BTreeMap<String, Result<T, String>>,
    dir: &Path,
    source: &str,
    load: fn(&Path, &str) -> Result<T, String>,
) -> Result<&'a T, String> {
    map.entry(source.to_owned())
        .or_insert_with(|| load(dir, source))
        .as_ref()
        .map_err(Clone::clone)
}

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

const TABLE: &str = "<!--table ";

/// Tables copied whole from a paint result: `<!--table paint-80x24-->` on the line before
/// the table, which must be `paint::markdown` of that file's runs. The problems, and the text
/// with every such table rewritten.
fn check_tables(text: &str, sources: &mut Sources) -> (Vec<String>, String) {
    let mut problems = Vec::new();
    let mut out = String::new();
    let mut lines = text.split_inclusive('\n').peekable();
    while let Some(line) = lines.next() {
        out.push_str(line);
        let Some(source) = line
            .trim()
            .strip_prefix(TABLE)
            .and_then(|rest| rest.strip_suffix("-->"))
        else {
            continue;
        };
        let mut table = String::new();
        while let Some(row) = lines.next_if(|l| l.starts_with('|')) {
            table.push_str(row);
        }
        let number = text[..text.find(line).unwrap_or(0)].lines().count() + 1;
        match sources.painted(source.trim()) {
            Ok(runs) => {
                let expected = flushlab_core::results::export::painted_markdown(runs);
                if table != expected {
                    problems.push(format!(
                        "line {number}: the table is not paint::markdown of {source}"
                    ));
                }
                out.push_str(&expected);
            }
            Err(e) => {
                problems.push(format!("line {number}: {e}"));
                out.push_str(&table);
            }
        }
    }
    (problems, out)
}

/// Every mark's problem against its file (an empty list when all agree), and the text with
/// every figure rewritten from its file.
fn check_doc(text: &str, sources: &mut Sources) -> (Vec<String>, String, usize) {
    let mut problems = Vec::new();
    let mut rewritten = String::new();
    let mut copied = 0;
    let mut count = 0;
    for mark in marks(text) {
        let mark = match mark {
            Ok(mark) => mark,
            Err(e) => {
                problems.push(e);
                continue;
            }
        };
        count += 1;
        let value = mark.value_in(sources);
        match value {
            Ok(value) => {
                if !mark.quote.is(text, value) {
                    problems.push(format!(
                        "line {}: '{}' but {} gives {} for {} {:?}",
                        mark.line,
                        &text[mark.quote.start..mark.quote.end],
                        mark.source,
                        mark.quote.render(value),
                        mark.row,
                        mark.field
                    ));
                }
                rewritten.push_str(&text[copied..mark.quote.start]);
                rewritten.push_str(&mark.quote.render(value));
                copied = mark.quote.end;
            }
            Err(e) => problems.push(format!("line {}: {e}", mark.line)),
        }
    }
    rewritten.push_str(&text[copied..]);
    (problems, rewritten, count)
}

/// How many points more of its frames a fresh row may spend runnable but not running than the
/// quoted row did before the fresh run counts as starved. Two `yes > /dev/null` beside a bench
/// here put 8–23 points on every row (stdout/line 6 → 18%, stderr/raw 9 → 32%); quiet runs
/// stay within 3 points of each other.
const STARVED_POINTS: f64 = 0.10;

/// Whether something else on the machine took the cores from a fresh run: the row that waited
/// for a core longest beyond its quoted twin, as the kernel counts it (`/proc/PID/schedstat`'s
/// run delay, the time split's "cpu wait"), when it is more than [`STARVED_POINTS`] beyond.
/// CI on a shared machine once ran every bench while another tenant held the cores: stdout/line
/// waited 28% of its frames (0.2% quoted) and reached a third of its quoted fps.
fn starved(quoted: &BenchResults, fresh: &BenchResults) -> Option<String> {
    let share = |row: &Row| {
        let split = row.time_split?;
        (split.total_ms() > 0.0).then(|| split.cpu_wait_ms / split.total_ms())
    };
    fresh
        .results
        .iter()
        .filter_map(|f| {
            let q = quoted
                .results
                .iter()
                .find(|q| q.subject == f.subject && q.conditions() == f.conditions())?;
            let (qs, fs) = (share(q)?, share(f)?);
            (fs - qs > STARVED_POINTS).then_some((fs - qs, f, qs, fs))
        })
        .max_by(|a, b| a.0.total_cmp(&b.0))
        .map(|(_, row, qs, fs)| {
            let (size, sink, reader, _) = row.conditions();
            format!(
                "{}@{size},{sink},{reader} waited for a core {:.0}% of its frames \
                 ({:.0}% quoted)",
                fresh.row_name(row),
                fs * 100.0,
                qs * 100.0
            )
        })
}

/// Every marked figure against a fresh run: the problems, how many were compared, and the
/// timing figures that did not hold in a run the machine starved (why, once a source).
fn check_fresh(
    text: &str,
    quoted: &mut Sources,
    fresh: &mut Sources,
) -> (Vec<String>, usize, BTreeMap<String, Vec<String>>) {
    let mut problems = Vec::new();
    let mut compared = 0;
    let mut excused: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for mark in marks(text).into_iter().flatten() {
        if mark.not_rerun || matches!(mark.field, Field::Painted(_)) {
            continue;
        }
        let is_reference = |results: &BenchResults| {
            mark.kind() == Kind::Rate
                && find_row(results, &mark.row)
                    .is_ok_and(|row| results.name(&row.subject) == reference(results))
        };
        if quoted.get(&mark.source).is_ok_and(is_reference) {
            continue; // its ratio to itself is 1 on every machine
        }
        let pair = quoted
            .get(&mark.source)
            .and_then(|q| mark.comparable(q))
            .and_then(|q| {
                let f = fresh.get(&mark.source).and_then(|f| mark.comparable(f))?;
                Ok((q, f))
            });
        match pair {
            Ok((q, f)) => {
                compared += 1;
                if !mark.kind().holds(q, f) {
                    let problem = format!(
                        "line {}: {} {} {:?} is {:.3} quoted and {:.3} fresh (as compared), \
                         beyond {}",
                        mark.line,
                        mark.source,
                        mark.row,
                        mark.field,
                        q,
                        f,
                        mark.kind().tolerance()
                    );
                    // Counts are the code's on any machine, however busy; timings are not.
                    let starvation = match mark.kind() {
                        Kind::Count => None,
                        _ => quoted
                            .get(&mark.source)
                            .ok()
                            .zip(fresh.get(&mark.source).ok())
                            .and_then(|(q, f)| starved(q, f)),
                    };
                    match starvation {
                        Some(why) => excused
                            .entry(format!("{}: {why}", mark.source))
                            .or_default()
                            .push(problem),
                        None => problems.push(problem),
                    }
                }
            }
            Err(e) => problems.push(format!("line {}: {e}", mark.line)),
        }
    }
    (problems, compared, excused)
}

#[test]
fn every_quoted_figure_is_its_result_files() {
    let mut sources = Sources::new(root().join("docs/results"));
    let write = std::env::var_os("FLUSHLAB_WRITE_FIGURES").is_some_and(|v| v == "1");
    let mut problems = Vec::new();
    let mut total = 0;
    for doc in DOCS {
        let path = root().join(doc);
        let text = std::fs::read_to_string(&path).unwrap();
        let (found, rewritten, count) = check_doc(&text, &mut sources);
        let (tables, rewritten) = check_tables(&rewritten, &mut sources);
        total += count;
        if write && rewritten != text {
            std::fs::write(&path, rewritten).unwrap();
        } else {
            problems.extend(found.into_iter().map(|p| format!("{doc} {p}")));
            problems.extend(tables.into_iter().map(|p| format!("{doc} {p}")));
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
    assert!(
        total >= 50,
        "only {total} figures are marked: the marks were lost"
    );
}

/// A problem's identity, whatever the fresh value: the line, file, row and field it is about.
fn problem_key(problem: &str) -> &str {
    problem.split(" is ").next().unwrap_or(problem)
}

/// `$FLUSHLAB_FRESH_RESULTS` is one directory of fresh results, or several (`DIR:DIR`): a
/// figure holds when it holds against one of them. `scripts/regenerate-docs.sh --short` runs
/// the benches again only when the first run fails, so that one noisy second of a 1 s run on a
/// shared machine does not fail CI, while a figure the code has moved (that fails twice) does.
#[test]
fn quoted_figures_hold_on_a_fresh_run() {
    let Some(fresh) = std::env::var_os("FLUSHLAB_FRESH_RESULTS") else {
        eprintln!("no FLUSHLAB_FRESH_RESULTS: scripts/regenerate-docs.sh --short sets it");
        return;
    };
    let mut quoted = Sources::new(root().join("docs/results"));
    let mut runs: Vec<(Vec<String>, usize)> = Vec::new();
    for dir in std::env::split_paths(&fresh) {
        let mut fresh = Sources::new(dir.clone());
        let mut problems = Vec::new();
        let mut total = 0;
        let mut excused: BTreeMap<String, Vec<String>> = BTreeMap::new();
        for doc in DOCS {
            let text = std::fs::read_to_string(root().join(doc)).unwrap();
            let (found, compared, starved) = check_fresh(&text, &mut quoted, &mut fresh);
            total += compared;
            problems.extend(found.into_iter().map(|p| format!("{doc} {p}")));
            for (why, figures) in starved {
                let figures = figures.into_iter().map(|p| format!("{doc} {p}"));
                excused.entry(why).or_default().extend(figures);
            }
        }
        // Said, never hidden: which timings this run could not speak for, and why.
        for (why, figures) in &excused {
            eprintln!(
                "{}: {} timing figure(s) off in a starved run, not counted against the docs \
                 ({why}):\n  {}",
                dir.display(),
                figures.len(),
                figures.join("\n  ")
            );
        }
        runs.push((problems, total));
    }
    let (first, total) = &runs[0];
    let failed_in_every_run: Vec<String> = first
        .iter()
        .filter(|p| {
            runs[1..]
                .iter()
                .all(|(others, _)| others.iter().any(|o| problem_key(o) == problem_key(p)))
        })
        .map(|p| {
            let fresh: Vec<&str> = runs[1..]
                .iter()
                .filter_map(|(others, _)| others.iter().find(|o| problem_key(o) == problem_key(p)))
                .map(|o| o.split(" is ").nth(1).unwrap_or_default())
                .collect();
            if fresh.is_empty() {
                p.clone()
            } else {
                format!("{p}; again: {}", fresh.join("; "))
            }
        })
        .collect();
    eprintln!(
        "{total} quoted figures compared with {} fresh run(s); {} held in none",
        runs.len(),
        failed_in_every_run.len()
    );
    assert!(
        failed_in_every_run.is_empty(),
        "{}",
        failed_in_every_run.join("\n")
    );
    assert!(*total > 0, "no figure was compared");
}

/// The checks themselves, on a document and results made here: each must be able to fail.
mod the_checker {
    use super::*;

    fn std_results() -> BenchResults {
        load(&root().join("docs/results"), "std-200x60").unwrap()
    }

    fn scratch_with(results: &BenchResults) -> PathBuf {
        let dir = std::env::temp_dir().join(format!(
            "flushlab-figures-{}-{:?}",
            std::process::id(),
            std::thread::current().id()
        ));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(
            dir.join("std-200x60.json"),
            serde_json::to_vec(results).unwrap(),
        )
        .unwrap();
        dir
    }

    #[test]
    fn reads_every_way_a_figure_is_written() {
        let text = "x 4.6 [4.5–4.7]<!--fig a b fps--> ~170,000<!--fig a b fps--> 1,093.25<!--fig a b fps-->";
        let quotes: Vec<Quote> = marks(text).into_iter().map(|m| m.unwrap().quote).collect();
        assert_eq!(&text[quotes[0].start..quotes[0].end], "4.6 [4.5–4.7]");
        assert_eq!(quotes[0].spread, Some(1));
        assert_eq!(&text[quotes[1].start..quotes[1].end], "~170,000");
        assert!(quotes[1].approximate);
        assert_eq!((quotes[2].value, quotes[2].decimals), (1093.25, 2));
        assert_eq!(
            quotes[0].render(Value::Spread(12.34, 1.0, 100.0)),
            "12.3 [1.0–100.0]"
        );
        assert_eq!(quotes[1].render(Value::One(173_432.0)), "~170,000");
        assert_eq!(
            approximately(0.75, 1),
            "~0.8",
            "a ~ figure keeps its decimals"
        );
        assert_eq!(quotes[2].render(Value::One(1_234_567.891)), "1,234,567.89");
    }

    #[test]
    fn a_figure_that_is_not_its_files_is_named() {
        let mut sources = Sources::new(root().join("docs/results"));
        let results = std_results();
        let raw = find_row(&results, "stderr/raw").unwrap();
        let writes = written(raw.writes_per_frame.unwrap(), 0);
        let kernel = written(raw.kernel_share.unwrap() * 100.0, 0);
        let good = format!(
            "| {writes}<!--fig std-200x60 stderr/raw writes_per_frame--> | \
             {kernel}<!--fig std-200x60 stderr/raw kernel_share %-->% |"
        );
        let (problems, _, count) = check_doc(&good, &mut sources);
        assert_eq!((problems, count), (vec![], 2));
        let wrong = written(raw.writes_per_frame.unwrap() + 1.0, 0);
        let bad = good.replacen(&writes, &wrong, 1);
        let (problems, rewritten, _) = check_doc(&bad, &mut sources);
        assert_eq!(problems.len(), 1, "{problems:?}");
        assert!(
            problems[0].contains(&format!("'{wrong}' but std-200x60 gives {writes}")),
            "{problems:?}"
        );
        assert_eq!(rewritten, good, "the rewrite puts the file's figure back");
        for typo in [
            "1<!--fig std-200x60 stdout/lime fps-->",
            "1<!--fig std-200x61 stdout/line fps-->",
            "1<!--fig std-200x60 stdout/line fsp-->",
            "1<!--fig std-200x60 stdout/line fps kb-->",
            "<!--fig std-200x60 stdout/line fps-->",
        ] {
            let (problems, _, _) = check_doc(typo, &mut sources);
            assert_eq!(problems.len(), 1, "{typo}: {problems:?}");
        }
    }

    #[test]
    fn a_paint_figure_or_table_not_its_files_is_named() {
        let mut sources = Sources::new(root().join("docs/results"));
        let runs = sources.painted("paint-80x24").unwrap().to_vec();
        let table = flushlab_core::results::export::painted_markdown(&runs);
        let good = format!("<!--table paint-80x24-->\n{table}\nafter\n");
        let (problems, rewritten) = check_tables(&good, &mut sources);
        assert_eq!((problems, rewritten.as_str()), (vec![], good.as_str()));
        let bad = good.replacen("| xterm ", "| xtern ", 1);
        let (problems, rewritten) = check_tables(&bad, &mut sources);
        assert_eq!(problems.len(), 1, "{problems:?}");
        assert_eq!(rewritten, good, "the rewrite puts the file's table back");
        // A figure: the median of a group's runs; a group named too loosely is refused.
        let accepted = paint_value(&runs, "kitty:stdout/frame@off", PAINT_FIELDS[0].1).unwrap();
        let text = format!(
            "{}<!--fig paint-80x24 kitty:stdout/frame@off accepted_fps-->",
            written(accepted.main(), 0)
        );
        assert_eq!(check_doc(&text, &mut sources).0, Vec::<String>::new());
        let wrong = format!(
            "{}<!--fig paint-80x24 kitty:stdout/frame@off accepted_fps-->",
            written(accepted.main() + 1.0, 0)
        );
        assert_eq!(check_doc(&wrong, &mut sources).0.len(), 1);
        assert!(paint_value(&runs, "kitty:stdout/frame", PAINT_FIELDS[0].1).is_err());
    }

    #[test]
    fn a_fresh_run_beyond_the_tolerance_fails() {
        // The quoted side is the file itself: marks are compared through their files.
        let text = "\
            1<!--fig std-200x60 stderr/raw writes_per_frame-->\n\
            1<!--fig std-200x60 stderr/raw fps-->\n\
            1<!--fig std-200x60 stderr/raw kernel_share %-->%\n\
            1<!--fig std-200x60 stderr/raw cpu_ms_per_frame per:stdout/line-->×\n";
        let mut quoted = Sources::new(root().join("docs/results"));
        let same = std_results();
        let dir = scratch_with(&same);
        let (problems, compared, _) =
            check_fresh(text, &mut quoted, &mut Sources::new(dir.clone()));
        assert_eq!((problems, compared), (vec![], 4));

        // A machine twice as fast moves every rate alike: the ratios hold.
        let mut faster = same.clone();
        for row in &mut faster.results {
            row.fps = row.fps.map(|mut s| {
                s.median *= 2.0;
                s
            });
        }
        let dir = scratch_with(&faster);
        let (problems, _, _) = check_fresh(text, &mut quoted, &mut Sources::new(dir.clone()));
        assert!(problems.is_empty(), "{problems:?}");

        // stderr() alone four times faster, 20% more writes, 30 points less kernel: each named.
        let mut off = same.clone();
        let raw = off
            .results
            .iter_mut()
            .find(|r| r.subject.to_string() == "stderr/raw")
            .unwrap();
        raw.fps = raw.fps.map(|mut s| {
            s.median *= 4.0;
            s
        });
        raw.writes_per_frame = raw.writes_per_frame.map(|w| w * 1.2);
        raw.kernel_share = raw.kernel_share.map(|k| k - 0.3);
        raw.cpu_ms_per_frame = raw.cpu_ms_per_frame.map(|c| c / 4.0);
        let dir = scratch_with(&off);
        let (problems, _, excused) = check_fresh(text, &mut quoted, &mut Sources::new(dir.clone()));
        assert_eq!(problems.len(), 4, "{problems:#?}");
        assert!(problems[0].contains("WritesPerFrame") && problems[0].contains("15%"));
        assert!(excused.is_empty(), "{excused:?}");

        // The same run with one row waiting for a core a third of its frames: the machine,
        // not the code, moved its timings, and they are set aside with the reason; the writes
        // a frame are the code's and still fail.
        let line = off
            .results
            .iter_mut()
            .find(|r| r.subject.to_string() == "stdout/line")
            .unwrap();
        let split = line.time_split.as_mut().unwrap();
        split.cpu_wait_ms += split.total_ms() * 0.5;
        let dir = scratch_with(&off);
        let (problems, _, excused) = check_fresh(text, &mut quoted, &mut Sources::new(dir.clone()));
        std::fs::remove_dir_all(&dir).unwrap();
        assert_eq!(problems.len(), 1, "{problems:#?}");
        assert!(problems[0].contains("WritesPerFrame"), "{problems:?}");
        let (why, figures) = excused.iter().next().unwrap();
        assert!(
            why.contains("stdout/line@200x60") && why.contains("waited for a core"),
            "{why}"
        );
        assert_eq!(figures.len(), 3, "{figures:#?}");
    }
}
