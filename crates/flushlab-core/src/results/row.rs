//! A row of results: a subject measured under its conditions, its runs (each in the schema of
//! every flushlab report) and those that failed, and the medians and ratios the tables show.

use serde::{Deserialize, Serialize};

use super::conditions::{Reader, Sink, Size};
use crate::backend::BackendKind;
use crate::detect::keyed::{Percentiles, Stage, StageSummary};
use crate::figures::{Figures, PerSecond, TimeSplit, WriterSplit};
use crate::statistics::{Spread, median};
use crate::subject::Subject;

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
    /// Torn or flashed paints a second that a terminal model counted in a sample of the
    /// frames (`flushlab tour`: [`crate::seen::frames`]); `null` where no model ran.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub torn_paints_per_second: Option<f64>,
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
    /// Median of the runs' torn paints a second, where a terminal model counted them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub torn_paints_per_second: Option<f64>,
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
            torn_paints_per_second: None,
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
        self.torn_paints_per_second = median(runs.iter().filter_map(|r| r.torn_paints_per_second));
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
