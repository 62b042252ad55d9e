//! Results as plain data — of the bench, the tour and the terminal report — with their
//! statistics, exporters and chart: what every exporter reads, and nothing else.

use serde::{Deserialize, Serialize};

mod by_round;
pub mod conditions;
pub mod drawings;
pub mod export;
mod machine;
pub mod painted;
mod row;
mod sent;

pub use self::by_round::{BackendRounds, KEYED_THRESHOLD, KeyedRounds};
pub use self::machine::{Idle, Machine, TerminalIdentity};
pub use self::row::{FailedRun, Row, Run};
pub use self::sent::from_sent_json;

use self::conditions::{Reader, Sink, Size, Unit, Workload};
use crate::backend::BackendKind;
use crate::scene::Scene;
use crate::statistics::{NOISY, Spread};
use crate::subject::{FloodWriter, Subject};
use crate::units::format_capacity;
use crate::wait::Wait;
use crate::writer_mode::Buffering;

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

impl BenchResults {
    /// Every backend's fastest mode against the first backend's, round by round, for each
    /// size, sink and reader (none with one backend).
    pub fn backends_by_round(&self) -> Vec<BackendRounds> {
        by_round::backends_by_round(&self.settings.backends, &self.results)
    }

    /// Every keyed program row against the first keyed row under the same conditions, round
    /// by round, with `wrap --against`'s interval and verdict (one look).
    pub fn keyed_by_round(&self) -> Vec<KeyedRounds> {
        by_round::keyed_by_round(&self.results)
    }

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
        assert_eq!(
            (k.rounds, k.verdict),
            (6, crate::statistics::verdict::Verdict::Slower)
        );
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
