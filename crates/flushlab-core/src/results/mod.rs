//! Results as plain data — of the bench, the tour and the terminal report — with their
//! statistics, exporters and chart: what every exporter reads, and nothing else.

use serde::{Deserialize, Serialize};

pub mod conditions;
pub mod export;
pub mod painted;
pub mod plot;
pub mod statistics;
pub mod trace;
pub mod verdict;
pub mod waterfall;

use self::conditions::{Reader, Sink, Size, SyncOutput, Unit, Workload};
use self::statistics::{NOISY, Spread, median};
use crate::backend::BackendKind;
use crate::detect::keyed::{Percentiles, Stage, StageSummary};
use crate::figures::{Figures, PerSecond, TimeSplit, WriterSplit};
use crate::scene::Scene;
use crate::subject::{FloodWriter, Subject};
use crate::units::format_capacity;
use crate::wait::Wait;
use crate::writer_mode::Buffering;

/// One counted run of one subject at one size: the figures of the child's report (a frame's, or
/// for the flood workload a log line's) and what the bench saw from outside.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Run {
    #[serde(flatten)]
    pub figures: Figures,
    pub peak_rss_kib: u64,
    /// The flood's latency percentiles (of a log call, or with `--rate` of a request), ns.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub p50_ns: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub p99_ns: Option<u64>,
    /// Another program's run driven by keys (`bench --command … --keys`): the time from a key to
    /// its frame over the run's keys, ms.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub key_to_frame_ms: Option<Percentiles>,
    /// And each key's stages over the run's keys (seen from inside), ms.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub key_stages_ms: Option<StageSummary>,
    /// Bytes the reader model took from the pty or pipe (not in the child's report).
    #[serde(default)]
    pub reader_bytes: u64,
    /// CPU the bench's reader thread used (user and kernel), from the child's start to its
    /// end: the other side of the pty or pipe, which shares the cores with the writer. Files
    /// older than it, and readers that are no thread of the bench (a terminal): `None`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reader_cpu_seconds: Option<f64>,
    /// The whole machine's busy time from the child's start to its end (`/proc/stat`): the
    /// child, the reader, the kernel's workers that move the bytes — and anything else the
    /// machine ran meanwhile, so an upper bound. Files older than it: `None`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub machine_busy_seconds: Option<f64>,
    /// Frames per second the terminal confirmed it had processed (cursor-position round trips),
    /// in `flushlab tour`; `null` elsewhere or when the terminal never answered.
    #[serde(default)]
    pub shown_fps: Option<f64>,
    /// Another program's run whose frames wrap could not find: its per-second figures, and
    /// `figures` holds no frames.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub per_second: Option<PerSecond>,
    /// The bench's round this run was counted in (1-based): the runs of one round ran one
    /// after the other, so two rows' runs of a round saw the same machine. Files older than
    /// it: `None`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub round: Option<u32>,
}

/// Two backends' fastest modes compared round by round, at one size, sink and reader: the
/// ratio of medians in the table hides how far it swung from one round to the next.
#[derive(Clone, Debug, PartialEq)]
pub struct BackendRounds {
    pub size: Size,
    pub sink: Sink,
    pub reader: Reader,
    pub backend: BackendKind,
    /// This backend's fastest mode (by median), and the base backend's.
    pub fastest: Subject,
    pub base: BackendKind,
    pub base_fastest: Subject,
    /// `fastest`'s fps over `base_fastest`'s, run against run of the same round.
    pub ratio: Spread,
    /// `fastest`'s fps over the lower of its own backend's ceilings in the same round.
    pub to_ceiling: Option<Spread>,
    /// The rounds both rows were counted in.
    pub rounds: usize,
}

/// Two programs driven by the same keys (`bench --command … --keys`), compared round by round:
/// key→frame p50 of `subject` over `base`'s, run against run of the same round, with the
/// interval and verdict of `wrap --against` ([`verdict`]).
#[derive(Clone, Debug, PartialEq)]
pub struct KeyedRounds {
    pub size: Size,
    pub sink: Sink,
    pub reader: Reader,
    pub base: Subject,
    pub subject: Subject,
    pub ratio: Option<verdict::Ratio>,
    /// Against [`KEYED_THRESHOLD`].
    pub verdict: verdict::Verdict,
    /// The rounds both rows were counted in.
    pub rounds: usize,
}

/// A change of a keyed row within this share of the first's is no change (`wrap --against`'s
/// default threshold).
pub const KEYED_THRESHOLD: f64 = 0.05;

/// A run that did not produce a report: it crashed, failed or hung and was killed.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct FailedRun {
    pub reason: String,
    /// The end of what it printed.
    pub output: String,
}

/// One row of the table: a subject at a size, over all its counted runs.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Row {
    /// `stderr/raw`, `ceiling/cpu`, `flood/println`: what was measured.
    #[serde(rename = "mode")]
    pub subject: Subject,
    pub size: Size,
    pub reader: Reader,
    pub sink: Sink,
    /// The ratatui backend the frames were encoded with (files older than the choice, and
    /// rows that draw no frame of flushlab's: crossterm).
    #[serde(default)]
    pub backend: BackendKind,
    /// `None` when no run succeeded.
    pub fps: Option<Spread>,
    pub writes_per_frame: Option<f64>,
    pub bytes_per_frame: Option<f64>,
    pub bytes_per_write: Option<f64>,
    pub kernel_share: Option<f64>,
    /// Median CPU time (user + kernel, all threads of the measured process) per frame, in ms:
    /// what a frame costs whatever the machine's speed did meanwhile.
    #[serde(default)]
    pub cpu_ms_per_frame: Option<f64>,
    /// Median CPU time of the bench's reader thread per frame's worth of the bytes it read,
    /// in ms: what reading a frame cost the other side (the kernel's work done in the reader's
    /// name included; what its workers do for the pty is not). `None` where nothing is written.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reader_cpu_ms_per_frame: Option<f64>,
    /// Median of the machine's busy time per frame's worth of bytes read, in ms (see
    /// [`Run::machine_busy_seconds`]): with two cores, a row cannot draw more than 2,000 ms /
    /// this a second however its waits go.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub machine_cpu_ms_per_frame: Option<f64>,
    /// Where a frame's time went: each part the median of the runs' (ms a frame).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub time_split: Option<TimeSplit>,
    pub peak_rss_kib: Option<u64>,
    /// Median of the runs' confirmed ("shown") FPS, where measured.
    pub shown_fps: Option<f64>,
    /// Medians of the per-second figures of runs whose frames are unknown (another program's).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub per_second: Option<PerSecond>,
    /// Median FPS over the lower of the two ceilings' medians at this size.
    pub ratio_to_ceiling: Option<f64>,
    /// Median FPS over the fastest mode's (not ceiling's) median at this size.
    pub ratio_to_fastest: Option<f64>,
    pub runs: Vec<Run>,
    pub failed_runs: Vec<FailedRun>,
}

impl Row {
    /// What a row was measured under: rows are compared only when these are equal (a ceiling
    /// too is the ceiling of its backend).
    pub fn conditions(&self) -> (Size, Sink, Reader, BackendKind) {
        (self.size, self.sink, self.reader.clone(), self.backend)
    }

    pub fn new(subject: Subject, size: Size, reader: Reader, sink: Sink) -> Row {
        Row {
            subject,
            size,
            reader,
            sink,
            backend: BackendKind::default(),
            fps: None,
            writes_per_frame: None,
            bytes_per_frame: None,
            bytes_per_write: None,
            kernel_share: None,
            cpu_ms_per_frame: None,
            reader_cpu_ms_per_frame: None,
            machine_cpu_ms_per_frame: None,
            time_split: None,
            peak_rss_kib: None,
            shown_fps: None,
            per_second: None,
            ratio_to_ceiling: None,
            ratio_to_fastest: None,
            runs: Vec::new(),
            failed_runs: Vec::new(),
        }
    }

    /// The flood's latency, p50 and p99 in ns, each the median of the runs' (a log call's, or
    /// with `--rate` a request's from its scheduled start); `None` where runs did not time it.
    pub fn latency_ns(&self) -> Option<(f64, f64)> {
        let p50 = median(self.runs.iter().filter_map(|r| r.p50_ns).map(|n| n as f64))?;
        let p99 = median(self.runs.iter().filter_map(|r| r.p99_ns).map(|n| n as f64))?;
        Some((p50, p99))
    }

    /// A keyed program's key→frame p50 and p95 in ms, each the median of the runs'; `None`
    /// where no run was driven by keys.
    pub fn key_to_frame_ms(&self) -> Option<(f64, f64)> {
        let of = |q: fn(&Percentiles) -> f64| {
            median(
                self.runs
                    .iter()
                    .filter_map(|r| r.key_to_frame_ms.as_ref())
                    .map(q),
            )
        };
        Some((of(|p| p.p50)?, of(|p| p.p95)?))
    }

    /// A keyed program's stages, each stage's p50 the median of the runs' (in the order of
    /// [`StageSummary::each`]); `None` where no run saw them.
    pub fn key_stages_p50_ms(&self) -> Option<Vec<(Stage, f64)>> {
        let summaries: Vec<&StageSummary> = self
            .runs
            .iter()
            .filter_map(|r| r.key_stages_ms.as_ref())
            .collect();
        let first = summaries.first()?;
        let stages = first
            .each()
            .filter_map(|(stage, _)| {
                let p50s = summaries
                    .iter()
                    .filter_map(|s| s.each().find(|&(x, _)| x == stage).map(|(_, p)| p.p50));
                Some((stage, median(p50s)?))
            })
            .collect();
        Some(stages)
    }

    /// Units (frames or lines) a run wrote, median of the runs.
    pub fn units_per_run(&self) -> Option<f64> {
        median(self.runs.iter().map(|r| r.figures.frames as f64))
    }

    /// Bytes the reader model took from the pty or pipe in a run, median of the runs; `None`
    /// when nothing read (a file, /dev/null). Below the bytes the writer accepted when it lost
    /// lines before they reached its write(2) (a lossy log writer at exit).
    pub fn reader_bytes_per_run(&self) -> Option<f64> {
        median(
            self.runs
                .iter()
                .filter(|r| r.reader_bytes > 0)
                .map(|r| r.reader_bytes as f64),
        )
    }

    /// Recomputes the summary figures from `runs`.
    pub fn summarize(&mut self) {
        // Runs with frames: a per-second run has none to count.
        let runs = || {
            self.runs
                .iter()
                .filter(|r| r.per_second.is_none())
                .map(|r| &r.figures)
        };
        self.fps = Spread::of(runs().map(|r| r.fps));
        self.writes_per_frame = median(runs().filter_map(|r| r.writes_per_frame));
        self.bytes_per_frame = median(runs().filter_map(|r| r.bytes_per_frame));
        self.bytes_per_write = median(runs().filter_map(|r| r.bytes_per_write));
        self.kernel_share = median(runs().map(|r| r.kernel_share));
        self.cpu_ms_per_frame = median(runs().filter_map(Figures::cpu_ms_per_frame));
        let splits = || runs().filter_map(|r| r.time_split);
        let part = |of: fn(&TimeSplit) -> f64| median(splits().map(|s| of(&s)));
        self.time_split = part(|s| s.build_ms).map(|build_ms| TimeSplit {
            build_ms,
            encode_ms: part(|s| s.encode_ms).unwrap_or_default(),
            kernel_ms: part(|s| s.kernel_ms).unwrap_or_default(),
            cpu_wait_ms: part(|s| s.cpu_wait_ms).unwrap_or_default(),
            reader_wait_ms: part(|s| s.reader_wait_ms).unwrap_or_default(),
            idle_ms: part(|s| s.idle_ms).unwrap_or_default(),
            writer: {
                let writers = || splits().filter_map(|s| s.writer);
                let part = |of: fn(&WriterSplit) -> f64| median(writers().map(|w| of(&w)));
                part(|w| w.on_cpu_ms).map(|on_cpu_ms| WriterSplit {
                    on_cpu_ms,
                    cpu_wait_ms: part(|w| w.cpu_wait_ms).unwrap_or_default(),
                    frame_wait_ms: part(|w| w.frame_wait_ms).unwrap_or_default(),
                    reader_wait_ms: part(|w| w.reader_wait_ms).unwrap_or_default(),
                })
            },
        });
        let runs = &self.runs;
        self.peak_rss_kib = runs.iter().map(|r| r.peak_rss_kib).max();
        self.shown_fps = median(runs.iter().filter_map(|r| r.shown_fps));
        // Per frame's worth of the bytes the reader read: the transport ceiling writes frames
        // in several write sizes and reports the best size's frames, the reader reads them all.
        let per_frame_read = |seconds: fn(&Run) -> Option<f64>| {
            median(runs.iter().filter_map(|r| {
                let frame = r.figures.bytes_per_frame.filter(|&b| b > 0.0)?;
                let frames_read = r.reader_bytes as f64 / frame;
                (frames_read >= 1.0 && r.per_second.is_none())
                    .then_some(seconds(r)? * 1000.0 / frames_read)
            }))
        };
        self.reader_cpu_ms_per_frame = per_frame_read(|r| r.reader_cpu_seconds);
        self.machine_cpu_ms_per_frame = per_frame_read(|r| r.machine_busy_seconds);
        let per_second = || runs.iter().filter_map(|r| r.per_second);
        self.per_second = median(per_second().map(|p| p.bytes_per_second)).map(|bytes| PerSecond {
            bytes_per_second: bytes,
            writes_per_second: median(per_second().filter_map(|p| p.writes_per_second)),
        });
    }
}

/// The machine the results were measured on.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Machine {
    pub cores: usize,
    pub kernel: String,
    pub cpu_model: String,
    /// How its idle CPUs wait, where the kernel says: on a VM whose idle vCPUs halt at once,
    /// every blocking hand-off (a writer sleeping on a full pty) costs an exit to the host, and
    /// a writer that sleeps gets half of what one that polls does (docs/results/writer-wait.md).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub idle: Option<Idle>,
}

/// The kernel's cpuidle driver and, for `haltpoll` (a KVM guest), how long an idle vCPU polls
/// for work before it halts.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Idle {
    pub driver: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub halt_poll_ns: Option<u64>,
}

impl Idle {
    /// This machine's, where the kernel says.
    pub fn this() -> Option<Idle> {
        let read = |path: &str| {
            std::fs::read_to_string(path)
                .ok()
                .map(|s| s.trim().to_owned())
        };
        let driver = read("/sys/devices/system/cpu/cpuidle/current_driver")?;
        let halt_poll_ns = (driver == "haltpoll")
            .then(|| {
                read("/sys/module/haltpoll/parameters/guest_halt_poll_ns")?
                    .parse()
                    .ok()
            })
            .flatten();
        Some(Idle {
            driver,
            halt_poll_ns,
        })
    }

    /// Whether an idle vCPU halts at once (`haltpoll` polling 0 ns): every wake of a sleeping
    /// thread is then an exit to the host.
    pub fn halts_at_once(&self) -> bool {
        self.halt_poll_ns == Some(0)
    }
}

impl std::fmt::Display for Idle {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.halt_poll_ns {
            Some(0) => write!(f, "{}: idle vCPUs halt at once", self.driver),
            Some(ns) => write!(
                f,
                "{}: idle vCPUs poll {} µs, then halt",
                self.driver,
                ns / 1000
            ),
            None => write!(f, "cpuidle {}", self.driver),
        }
    }
}

impl Machine {
    pub fn this() -> Machine {
        let cpu_model = crate::sys::process::cpu_model().unwrap_or_else(|| "unknown".to_owned());
        let uname = rustix::system::uname();
        Machine {
            cores: std::thread::available_parallelism().map_or(1, |n| n.get()),
            kernel: format!(
                "{} {}",
                uname.sysname().to_string_lossy(),
                uname.release().to_string_lossy()
            ),
            cpu_model,
            idle: Idle::this(),
        }
    }
}

fn default_backends() -> Vec<BackendKind> {
    vec![BackendKind::default()]
}

/// How the benchmark was run.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Settings {
    pub workload: Workload,
    /// What a row's rate counts (the workload's unit, kept for readers of the file).
    pub unit: Unit,
    pub sizes: Vec<Size>,
    pub readers: Vec<Reader>,
    pub sinks: Vec<Sink>,
    pub runs: u32,
    pub warmup: u32,
    pub duration_seconds: f64,
    pub scene: Scene,
    pub sync: bool,
    /// The ratatui backends the frames were encoded with, a row each (files older than the
    /// choice: crossterm).
    #[serde(default = "default_backends")]
    pub backends: Vec<BackendKind>,
    /// How the modes' writers waited for room (files older than the choice: they slept).
    #[serde(default)]
    pub wait: Wait,
    pub capacity: usize,
    pub command: String,
}

/// The terminal a tour ran in, as far as it tells.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TerminalIdentity {
    pub term: Option<String>,
    pub term_program: Option<String>,
    pub term_program_version: Option<String>,
    /// The reply to XTVERSION (`CSI > 0 q`), if any.
    pub version_reply: Option<String>,
    /// The reply to DA2 (`CSI > c`): type; version; ROM, e.g. `85;95;0` from rxvt-unicode.
    #[serde(default)]
    pub secondary_attributes: Option<String>,
    pub cols: u16,
    pub rows: u16,
    /// Synchronized output (DEC mode 2026) per DECRQM.
    pub sync_output: SyncOutput,
}

impl TerminalIdentity {
    /// What the terminal calls itself: its XTVERSION answer; else its DA2 answer when the type
    /// there names a terminal (terminals without XTVERSION, such as rxvt-unicode, often do);
    /// else $TERM_PROGRAM (and version); else $TERM.
    pub fn name(&self) -> Option<String> {
        // DA2 types that name one program rather than a DEC model many terminals claim.
        const PROGRAMS: [(&str, &str); 4] = [
            ("77", "mintty"),
            ("83", "screen"),
            ("84", "tmux"),
            ("85", "rxvt-unicode"),
        ];
        let by_attributes = self.secondary_attributes.as_ref().and_then(|params| {
            let kind = params.split(';').next()?;
            let (_, program) = PROGRAMS.iter().find(|(k, _)| *k == kind)?;
            Some(format!("{program} (DA2 {params})"))
        });
        let by_program =
            self.term_program
                .as_ref()
                .map(|program| match &self.term_program_version {
                    Some(version) => format!("{program} {version}"),
                    None => program.clone(),
                });
        // Every source is someone else's text ($TERM, a terminal's answer): a name is printed
        // in tables and on the terminal, so its control characters are escaped here, once.
        self.version_reply
            .clone()
            .or(by_attributes)
            .or(by_program)
            .or_else(|| self.term.clone())
            .map(|name| crate::units::one_line(&name))
    }
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct BenchResults {
    pub flushlab_version: String,
    pub machine: Machine,
    /// Set by `flushlab tour`: where the rows were measured.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub terminal: Option<TerminalIdentity>,
    pub settings: Settings,
    pub results: Vec<Row>,
    /// Set by `flushlab tour --paint`: what the terminal painted of each mode.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub painted: Vec<painted::PaintRun>,
}

/// The largest number a result file may hold: a petabyte, 10^15 fps. Anything larger (or
/// negative, or not finite) was not measured by flushlab, and would stall the chart's axes.
const MAX_FIGURE: f64 = 1e15;

/// A result file someone sent, read as `T`: every number checked to be a figure flushlab could
/// have measured, then the schema. The error names the first number out of range. Every
/// string's control characters are escaped here, once: a name from the file reaches the
/// terminal, a Markdown table or an SVG chart as text, never as a command, a row or invalid XML.
pub fn from_sent_json<T: serde::de::DeserializeOwned>(bytes: &[u8]) -> anyhow::Result<T> {
    fn check(value: &mut serde_json::Value, at: &mut Vec<String>) -> Result<(), String> {
        match value {
            serde_json::Value::Number(n) => match n.as_f64() {
                Some(v) if (0.0..=MAX_FIGURE).contains(&v) => Ok(()),
                _ => Err(format!(
                    "{} is {n}, outside 0 to {MAX_FIGURE:e}",
                    crate::units::one_line(&at.join("."))
                )),
            },
            serde_json::Value::String(text) => {
                *text = crate::units::one_line(text);
                Ok(())
            }
            serde_json::Value::Array(items) => {
                items.iter_mut().enumerate().try_for_each(|(i, v)| {
                    at.push(i.to_string());
                    let checked = check(v, at);
                    at.pop();
                    checked
                })
            }
            serde_json::Value::Object(fields) => fields.iter_mut().try_for_each(|(k, v)| {
                at.push(k.clone());
                let checked = check(v, at);
                at.pop();
                checked
            }),
            _ => Ok(()),
        }
    }
    let mut value: serde_json::Value = serde_json::from_slice(bytes)?;
    check(&mut value, &mut Vec::new()).map_err(anyhow::Error::msg)?;
    Ok(serde_json::from_value(value)?)
}

impl BenchResults {
    /// A bench or tour result file someone sent, checked ([`from_sent_json`]).
    pub fn from_json(bytes: &[u8]) -> anyhow::Result<BenchResults> {
        from_sent_json(bytes)
    }

    /// A subject as the tables name it: a block row carries the capacity it ran with, as in
    /// the explorer (`stdout/block:8KiB`).
    pub fn name(&self, subject: &Subject) -> String {
        match subject {
            Subject::Mode(_, Buffering::Block) | Subject::Flood(FloodWriter::Block) => {
                format!("{subject}:{}", format_capacity(self.settings.capacity))
            }
            _ => subject.to_string(),
        }
    }

    /// A row as the tables name it: [`BenchResults::name`], and the backend where it is not
    /// the default (`stdout/frame (lean)`).
    pub fn row_name(&self, row: &Row) -> String {
        let name = self.name(&row.subject);
        if row.backend == BackendKind::default() {
            name
        } else {
            format!("{name} ({})", row.backend.name())
        }
    }

    /// Like hyperfine's outlier warning: which rows' runs were further apart than
    /// [`NOISY`], since the table cannot tell rows apart by less than their runs varied.
    pub fn noise_warning(&self) -> Option<String> {
        let ratio = |r: &Row| r.fps.map_or(1.0, |f| f.ratio());
        let noisy: Vec<&Row> = self.results.iter().filter(|r| ratio(r) > NOISY).collect();
        let worst = noisy.iter().max_by(|a, b| ratio(a).total_cmp(&ratio(b)))?;
        let fps = worst.fps.unwrap_or_default();
        Some(format!(
            "{} of {} rows varied by more than {:.0}% between runs (most: {} at {}, {}–{}); \
             differences of that size between rows are noise: quiet the machine or add --runs",
            noisy.len(),
            self.results.len(),
            (NOISY - 1.0) * 100.0,
            self.row_name(worst),
            worst.size,
            crate::units::count(fps.min),
            crate::units::count(fps.max),
        ))
    }

    /// A ceiling is what no mode can beat. A mode whose median is above the lower ceiling's by
    /// more than the runs' spread (the wider of the two rows') means the method or the machine
    /// is wrong, and every ratio to that ceiling with it: said loudly, one line per such row.
    pub fn ceiling_warnings(&self) -> Vec<String> {
        let conditions = Row::conditions;
        let mut warnings = Vec::new();
        for row in self
            .results
            .iter()
            .filter(|r| !r.subject.is_baseline() && r.subject.draws_the_frame())
        {
            let Some(fps) = row.fps else { continue };
            let lower = self
                .results
                .iter()
                .filter(|c| c.subject.is_baseline() && conditions(c) == conditions(row))
                .filter_map(|c| Some((c, c.fps?)))
                .min_by(|a, b| a.1.median.total_cmp(&b.1.median));
            let Some((ceiling, limit)) = lower else {
                continue;
            };
            let spread = (fps.max - fps.min).max(limit.max - limit.min);
            if fps.median - limit.median > spread {
                warnings.push(format!(
                    "A CEILING WAS BEATEN: {} at {} made {} fps, {} made {} (runs spread {}): \
                     the method or the machine is wrong; do not trust the ratios to it",
                    self.row_name(row),
                    row.size,
                    crate::units::count(fps.median),
                    self.name(&ceiling.subject),
                    crate::units::count(limit.median),
                    crate::units::count(spread),
                ));
            }
        }
        warnings
    }

    /// Pairs of rows measured under the same conditions whose runs overlap ([min–max] of one
    /// meets the other's): the runs cannot tell them apart, so no ratio between them means
    /// anything. With 3 runs, [min–max] is a 75% interval for the median (order statistics).
    pub fn indistinguishable(&self) -> Vec<(&Row, &Row)> {
        let conditions = Row::conditions;
        let mut pairs = Vec::new();
        for (i, a) in self.results.iter().enumerate() {
            for b in &self.results[i + 1..] {
                if a.subject.is_baseline()
                    || b.subject.is_baseline()
                    || !a.subject.draws_the_frame()
                    || !b.subject.draws_the_frame()
                    || conditions(a) != conditions(b)
                {
                    continue;
                }
                if let (Some(x), Some(y)) = (a.fps, b.fps)
                    && x.min <= y.max
                    && y.min <= x.max
                {
                    pairs.push((a, b));
                }
            }
        }
        pairs
    }

    /// Fills in the ratios from the rows measured so far. A row is compared only with the rows
    /// measured under the same conditions: same size, same sink, same reader.
    /// Every backend's fastest mode against the first backend's, round by round, for each
    /// size, sink and reader (none with one backend). A run's round is the one it recorded, or,
    /// in files older than that, its place among the row's runs when no run of the row failed.
    pub fn backends_by_round(&self) -> Vec<BackendRounds> {
        let Some(&base) = self.settings.backends.first() else {
            return Vec::new();
        };
        let fps_by_round = |row: &Row| -> Vec<(u32, f64)> {
            let numbered = row.runs.iter().all(|r| r.round.is_some());
            if !numbered && !row.failed_runs.is_empty() {
                return Vec::new();
            }
            row.runs
                .iter()
                .zip(1..)
                .map(|(run, nth)| (run.round.unwrap_or(nth), run.figures.fps))
                .collect()
        };
        let paired = |a: &[(u32, f64)], b: &[(u32, f64)]| -> Vec<f64> {
            a.iter()
                .filter_map(|(round, fa)| {
                    let (_, fb) = b.iter().find(|(r, _)| r == round)?;
                    (*fb > 0.0).then(|| fa / fb)
                })
                .collect()
        };
        let rows = || self.results.iter().filter(|r| r.subject.draws_the_frame());
        let fastest = |conditions: &(Size, Sink, Reader, BackendKind)| {
            rows()
                .filter(|r| !r.subject.is_baseline() && r.conditions() == *conditions)
                .filter_map(|r| Some((r, r.fps?.median)))
                .max_by(|a, b| a.1.total_cmp(&b.1))
                .map(|(r, _)| r)
        };
        // The lower ceiling of a round: each round's own lower of the two.
        let ceiling_by_round = |conditions: &(Size, Sink, Reader, BackendKind)| {
            let mut lowest: Vec<(u32, f64)> = Vec::new();
            for row in rows().filter(|r| r.subject.is_ceiling() && r.conditions() == *conditions) {
                for (round, fps) in fps_by_round(row) {
                    match lowest.iter_mut().find(|(r, _)| *r == round) {
                        Some((_, low)) => *low = low.min(fps),
                        None => lowest.push((round, fps)),
                    }
                }
            }
            lowest
        };
        let mut groups: Vec<(Size, Sink, Reader)> = Vec::new();
        for row in rows().filter(|r| r.backend == base) {
            let (size, sink, reader, _) = row.conditions();
            if !groups.contains(&(size, sink, reader.clone())) {
                groups.push((size, sink, reader));
            }
        }
        let mut compared = Vec::new();
        for (size, sink, reader) in groups {
            let Some(base_row) = fastest(&(size, sink, reader.clone(), base)) else {
                continue;
            };
            for &backend in self.settings.backends.iter().skip(1) {
                let here = (size, sink, reader.clone(), backend);
                let Some(row) = fastest(&here) else {
                    continue;
                };
                let runs = fps_by_round(row);
                let ratios = paired(&runs, &fps_by_round(base_row));
                let Some(ratio) = Spread::of(ratios.iter().copied()) else {
                    continue;
                };
                compared.push(BackendRounds {
                    size,
                    sink,
                    reader: reader.clone(),
                    backend,
                    fastest: row.subject.clone(),
                    base,
                    base_fastest: base_row.subject.clone(),
                    ratio,
                    to_ceiling: Spread::of(paired(&runs, &ceiling_by_round(&here))),
                    rounds: ratios.len(),
                });
            }
        }
        compared
    }

    /// Every keyed program row against the first keyed row measured under the same conditions,
    /// round by round (rows of a bench share its `--keys`).
    pub fn keyed_by_round(&self) -> Vec<KeyedRounds> {
        let p50_by_round = |row: &Row| -> Vec<(u32, f64)> {
            row.runs
                .iter()
                .filter_map(|run| Some((run.round?, run.key_to_frame_ms?.p50)))
                .collect()
        };
        let keyed: Vec<&Row> = self
            .results
            .iter()
            .filter(|r| r.key_to_frame_ms().is_some())
            .collect();
        let mut compared = Vec::new();
        for (i, row) in keyed.iter().enumerate() {
            let Some(base) = keyed[..i]
                .iter()
                .find(|b| b.conditions() == row.conditions())
            else {
                continue;
            };
            let base_p50 = p50_by_round(base);
            let pairs: Vec<(f64, f64)> = p50_by_round(row)
                .into_iter()
                .filter_map(|(round, p50)| {
                    let (_, b) = base_p50.iter().find(|(r, _)| *r == round)?;
                    Some((*b, p50))
                })
                .collect();
            let ratio = verdict::Ratio::of_rounds(&pairs);
            let (size, sink, reader, _) = row.conditions();
            compared.push(KeyedRounds {
                size,
                sink,
                reader,
                base: base.subject.clone(),
                subject: row.subject.clone(),
                ratio,
                verdict: verdict::Verdict::of_rounds(ratio, pairs.len(), KEYED_THRESHOLD),
                rounds: pairs.len(),
            });
        }
        compared
    }

    pub fn compute_ratios(&mut self) {
        let conditions = Row::conditions;
        let medians: Vec<_> = self
            .results
            .iter()
            // Another program's rows did other work: they are neither compared nor a base.
            .filter(|r| r.subject.draws_the_frame())
            .map(|r| {
                (
                    conditions(r),
                    r.subject.is_ceiling(),
                    r.subject.is_baseline(),
                    r.fps.map(|f| f.median),
                )
            })
            .collect();
        for row in &mut self.results {
            let here = conditions(row);
            let alike = || medians.iter().filter(|(c, _, _, _)| *c == here);
            // The flood's baseline (no logging) is no ceiling: a writer's share of it says
            // nothing a per-line cost does not say better.
            let ceiling = alike()
                .filter(|(_, ceiling, _, _)| *ceiling)
                .filter_map(|m| m.3)
                .reduce(f64::min);
            let fastest = alike()
                .filter(|(_, _, baseline, _)| !*baseline)
                .filter_map(|m| m.3)
                .reduce(f64::max);
            let fps = row.fps.map(|f| f.median);
            let ratio =
                |base: Option<f64>| fps.zip(base).filter(|(_, b)| *b > 0.0).map(|(f, b)| f / b);
            if !row.subject.draws_the_frame() {
                (row.ratio_to_ceiling, row.ratio_to_fastest) = (None, None);
                continue;
            }
            row.ratio_to_ceiling = ratio(ceiling);
            row.ratio_to_fastest = if row.subject.is_baseline() {
                None
            } else {
                ratio(fastest)
            };
        }
    }
}

#[cfg(test)]
mod tests {
    use super::TerminalIdentity;
    use super::conditions::{Reader, ReaderModel, SyncOutput};
    use crate::results::export::fixture;

    /// Two programs driven by the bench's keys, each run's key→frame p50 paired with the other's
    /// of the same round: the interval and verdict `wrap --against` gives, in the Markdown.
    #[test]
    fn keyed_programs_are_compared_round_by_round() {
        use crate::detect::keyed::Percentiles;
        use crate::subject::parse_command;
        let mut results = fixture::results();
        let size = results.results[0].size;
        let keyed = |text: &str, p50s: &[f64]| {
            let mut row = super::Row::new(
                parse_command(text).unwrap(),
                size,
                Reader::Model(ReaderModel::Drain),
                super::Sink::Pty,
            );
            row.runs = p50s
                .iter()
                .zip(1..)
                .map(|(&p50, round)| super::Run {
                    round: Some(round),
                    key_to_frame_ms: Some(Percentiles {
                        p50,
                        p95: p50 * 2.0,
                        max: p50 * 3.0,
                    }),
                    ..fixture::run(100.0, 1.0)
                })
                .collect();
            row.summarize();
            row
        };
        results.results.extend([
            keyed("old=./old", &[4.0, 4.2, 3.9, 4.1, 4.0, 4.1]),
            keyed("new=./new", &[6.0, 6.3, 5.8, 6.2, 6.0, 6.1]),
        ]);
        let compared = results.keyed_by_round();
        assert_eq!(compared.len(), 1, "{compared:?}");
        let k = &compared[0];
        assert_eq!((k.rounds, k.verdict), (6, super::verdict::Verdict::Slower));
        assert!((k.ratio.unwrap().estimate - 1.5).abs() < 0.02, "{k:?}");
        let md = String::from_utf8(
            crate::results::export::Exporter::serialize(
                &crate::results::export::MarkdownExporter::default(),
                &results,
            )
            .unwrap(),
        )
        .unwrap();
        assert!(
            md.contains("Keyed programs round by round") && md.contains("slower"),
            "{md}"
        );
    }

    /// Two backends' fastest modes, paired run against run of the same round; rows whose runs
    /// cannot be placed in rounds are left out, never paired by guess.
    #[test]
    fn backends_are_compared_round_by_round() {
        use crate::backend::BackendKind;
        use crate::subject::{Ceiling, Subject};
        use crate::writer_mode::{Buffering, Stream};
        let mut results = fixture::results();
        let size = results.results[0].size;
        let row = |subject, backend, fps: &[(u32, f64)]| {
            let mut row = super::Row::new(
                subject,
                size,
                Reader::Model(ReaderModel::Drain),
                super::Sink::Pty,
            );
            row.backend = backend;
            row.runs = fps
                .iter()
                .map(|&(round, fps)| super::Run {
                    round: Some(round),
                    ..fixture::run(fps, 1.0)
                })
                .collect();
            row.summarize();
            row
        };
        let (lean, termion) = (BackendKind::Lean, BackendKind::Termion);
        let thread = Subject::Mode(Stream::Stdout, Buffering::Thread);
        let block = Subject::Mode(Stream::Stdout, Buffering::Block);
        results.results.extend([
            // Recorded out of order: the round, not the place, pairs them.
            row(thread.clone(), lean, &[(2, 100.0), (1, 360.0), (3, 400.0)]),
            row(block.clone(), lean, &[(1, 50.0), (2, 60.0), (3, 70.0)]),
            row(
                Subject::Ceiling(Ceiling::Cpu),
                lean,
                &[(1, 800.0), (2, 200.0), (3, 800.0)],
            ),
            row(
                Subject::Ceiling(Ceiling::Transport),
                lean,
                &[(1, 400.0), (2, 900.0), (3, 500.0)],
            ),
            row(thread.clone(), termion, &[(1, 90.0), (2, 95.0)]),
        ]);
        results.settings.backends = vec![BackendKind::Crossterm, lean, termion];
        // The base's fastest mode is the fixture's stdout/thread: 180, 190, 170 in rounds 1–3.
        for run in &mut results.results[4].runs {
            run.round = None;
        }
        let compared = results.backends_by_round();
        assert_eq!(compared.len(), 2, "{compared:?}");
        let lean_rounds = &compared[0];
        assert_eq!(
            (
                lean_rounds.backend,
                &lean_rounds.fastest,
                &lean_rounds.base_fastest
            ),
            (lean, &thread, &thread)
        );
        assert_eq!(lean_rounds.rounds, 3);
        // 360/180, 100/190, 400/170; against each round's lower ceiling 360/400, 100/200, 400/500.
        let ratio = lean_rounds.ratio;
        assert!((ratio.median - 2.0).abs() < 1e-9 && (ratio.min - 100.0 / 190.0).abs() < 1e-9);
        assert!((ratio.max - 400.0 / 170.0).abs() < 1e-9);
        let to_ceiling = lean_rounds.to_ceiling.unwrap();
        assert!((to_ceiling.median - 0.8).abs() < 1e-9 && (to_ceiling.min - 0.5).abs() < 1e-9);
        // termion has no ceiling rows here, and two rounds.
        assert_eq!((compared[1].rounds, compared[1].to_ceiling), (2, None));

        // A base whose runs carry no round and one of which failed cannot be placed in rounds.
        results.results[4].failed_runs.push(super::FailedRun {
            reason: "killed".into(),
            output: String::new(),
        });
        assert!(results.backends_by_round().is_empty());
        // One backend: nothing to compare.
        results.settings.backends = vec![BackendKind::Crossterm];
        assert!(results.backends_by_round().is_empty());
    }

    /// The reader's CPU is per frame of what it read, not of the frames the row reports: the
    /// transport ceiling reports its best write size's frames, its reader read every size's.
    #[test]
    fn the_readers_cpu_is_per_frame_it_read() {
        let mut row = fixture::results().results[3].clone();
        for run in &mut row.runs {
            let frame = run.figures.bytes_per_frame.unwrap();
            run.reader_bytes = (frame * 500.0) as u64;
            run.reader_cpu_seconds = Some(1.0);
        }
        row.summarize();
        assert!((row.reader_cpu_ms_per_frame.unwrap() - 2.0).abs() < 1e-9);
        // No bytes a frame (the CPU ceiling), or no reader: no figure.
        for run in &mut row.runs {
            run.figures.bytes_per_frame = Some(0.0);
        }
        row.summarize();
        assert_eq!(row.reader_cpu_ms_per_frame, None);
        row.runs
            .iter_mut()
            .for_each(|r| r.reader_cpu_seconds = None);
        row.summarize();
        assert_eq!(row.reader_cpu_ms_per_frame, None);
    }

    #[test]
    fn the_idle_policy_says_whether_idle_vcpus_halt_at_once() {
        use super::Idle;
        let idle = |driver: &str, halt_poll_ns| Idle {
            driver: driver.into(),
            halt_poll_ns,
        };
        assert_eq!(
            idle("haltpoll", Some(0)).to_string(),
            "haltpoll: idle vCPUs halt at once"
        );
        assert_eq!(
            idle("haltpoll", Some(200_000)).to_string(),
            "haltpoll: idle vCPUs poll 200 µs, then halt"
        );
        assert_eq!(idle("intel_idle", None).to_string(), "cpuidle intel_idle");
        // Results written before the field existed still read.
        let old: super::Machine =
            serde_json::from_str(r#"{"cores":2,"kernel":"Linux","cpu_model":"x"}"#).unwrap();
        assert_eq!(old.idle, None);
    }

    #[test]
    fn a_terminal_is_named_by_its_own_answers_first() {
        let mut t = TerminalIdentity {
            term: Some("xterm-256color".into()),
            term_program: None,
            term_program_version: None,
            version_reply: None,
            secondary_attributes: Some("0;1101;1".into()),
            cols: 80,
            rows: 24,
            sync_output: SyncOutput::NoAnswer,
        };
        // DA2 type 0 is "VT100", which many terminals claim: it names nobody.
        assert_eq!(t.name().as_deref(), Some("xterm-256color"));
        t.term_program = Some("WezTerm".into());
        t.term_program_version = Some("20240203".into());
        assert_eq!(t.name().as_deref(), Some("WezTerm 20240203"));
        t.secondary_attributes = Some("85;95;0".into());
        assert_eq!(t.name().as_deref(), Some("rxvt-unicode (DA2 85;95;0)"));
        t.version_reply = Some("XTerm(379)".into());
        assert_eq!(t.name().as_deref(), Some("XTerm(379)"));
    }

    #[test]
    fn a_terminal_name_never_carries_escapes_to_the_terminal() {
        // Issue 33 #2: `TERM=$'xterm\e]0;pwned\a' flushlab tour` printed the OSC in its table.
        let t = TerminalIdentity {
            term: Some("xterm\u{1b}]0;pwned\u{7}".into()),
            term_program: None,
            term_program_version: None,
            version_reply: None,
            secondary_attributes: None,
            cols: 80,
            rows: 24,
            sync_output: SyncOutput::NoAnswer,
        };
        let name = t.name().unwrap();
        assert!(!name.chars().any(char::is_control), "{name:?}");
        assert!(name.contains("pwned"), "{name:?}");
    }

    #[test]
    fn rows_whose_runs_overlap_are_marked_alike() {
        let mut results = fixture::results();
        // stderr/raw (1.4–1.5) and stdout/frame (120–140) are far apart.
        assert!(results.indistinguishable().is_empty());
        results.results[2].runs = vec![fixture::run(110.0, 1.0), fixture::run(125.0, 1.0)];
        results.results[2].summarize();
        let pairs: Vec<_> = results
            .indistinguishable()
            .iter()
            .map(|(a, b)| (a.subject.to_string(), b.subject.to_string()))
            .collect();
        assert_eq!(
            pairs,
            [("stderr/raw".to_owned(), "stdout/frame".to_owned())]
        );
    }

    #[test]
    fn a_beaten_ceiling_is_said_loudly() {
        let mut results = fixture::results();
        // The fixture's modes stay under the lower ceiling (cpu, ~260 fps).
        assert!(results.ceiling_warnings().is_empty());
        results.results[3].runs = vec![fixture::run(400.0, 1.0), fixture::run(410.0, 1.0)];
        results.results[3].summarize();
        let warnings = results.ceiling_warnings();
        assert_eq!(warnings.len(), 1, "{warnings:?}");
        assert!(
            warnings[0].contains("A CEILING WAS BEATEN: stdout/frame"),
            "{warnings:?}"
        );
        assert!(warnings[0].contains("ceiling/cpu"), "{warnings:?}");
        // Within the runs' spread it is noise, not a beaten ceiling.
        results.results[3].runs = vec![fixture::run(200.0, 1.0), fixture::run(300.0, 1.0)];
        results.results[3].summarize();
        assert!(results.ceiling_warnings().is_empty());
    }

    #[test]
    fn rows_whose_runs_disagree_are_named_in_a_warning() {
        let mut results = fixture::results();
        // The fixture's runs agree within 17%.
        assert_eq!(results.noise_warning(), None);
        results.results[3].runs = vec![fixture::run(100.0, 1.0), fixture::run(150.0, 1.0)];
        results.results[3].summarize();
        let warning = results.noise_warning().unwrap();
        assert!(
            warning.starts_with("1 of 5 rows varied by more than 25%"),
            "{warning}"
        );
        assert!(warning.contains("stdout/frame at 200x60"), "{warning}");
    }

    #[test]
    fn ratios_compare_only_rows_measured_under_the_same_conditions() {
        let mut results = fixture::results();
        let drain = results.clone();
        // The same rows behind a reader twice as slow: every figure halves, every ratio holds.
        let mut slow = results.results.clone();
        for row in &mut slow {
            row.reader = Reader::Model(ReaderModel::Vt);
            for run in &mut row.runs {
                run.figures.fps /= 2.0;
            }
            row.summarize();
        }
        results.results.extend(slow);
        results.compute_ratios();
        for (i, row) in results.results.iter().enumerate() {
            let same = &drain.results[i % drain.results.len()];
            let close = |a: Option<f64>, b: Option<f64>| match (a, b) {
                (Some(a), Some(b)) => (a - b).abs() < 1e-9,
                (a, b) => a == b,
            };
            assert!(
                close(row.ratio_to_ceiling, same.ratio_to_ceiling),
                "{row:?}"
            );
            assert!(
                close(row.ratio_to_fastest, same.ratio_to_fastest),
                "{row:?}"
            );
        }
    }
}
