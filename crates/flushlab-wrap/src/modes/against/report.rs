//! What `--against` says: its export (the verdict, every round, every run), the table of both
//! builds with the verdict, the rounds it took and why they stopped, the stages — and the same
//! as Markdown for a CI job's summary page.

use serde::Serialize;

use super::verdict::{AgainstVerdict, Build, Round, StageRatio, stages};
use crate::modes::side::RunReport;
use crate::plan::Until;
use crate::plan::run_figures::RunFigures;
use crate::plan::stored_run::Baseline;
use flushlab_core::results::export::markdown_table;
use flushlab_core::statistics::verdict::{DECISIVE_ROUNDS, Ratio, Verdict};
use flushlab_core::units::milliseconds;

/// The `--export-json` of `--against`.
#[derive(Clone, Debug, Serialize)]
pub struct Against {
    pub against: AgainstVerdict,
    pub rounds: Vec<Round>,
    pub old_runs: Vec<RunReport>,
    pub new_runs: Vec<RunReport>,
    /// `--against run.json`: the stored run, and what differs from it.
    pub stored: Option<Stored>,
}

/// A stored run as OLD, and what differs between it and this run.
#[derive(Clone, Debug, Serialize)]
pub struct Stored {
    pub baseline: Baseline,
    pub differences: Vec<String>,
}

impl Against {
    /// The summary printed after the rounds: one table, the verdict, the stage that moved.
    pub fn table(&self, command: &str, (cols, rows): (u16, u16), until: &Until) -> String {
        let v = &self.against;
        let mut out = match &self.stored {
            None => format!(
                "wrap --against: NEW {command}, OLD {}; {} rounds ABBA after a dropped warm-up, \
                 {cols}x{rows}\n",
                flushlab_core::units::one_line(&v.old.join(" ")),
                self.rounds.len()
            ),
            Some(stored) => format!(
                "wrap --against {}: NEW {command}, {} runs, {cols}x{rows}, against a stored run \
                 of {}\n",
                stored.baseline.path,
                self.rounds.len(),
                flushlab_core::units::one_line(&v.old.join(" ")),
            ),
        };
        let median = |pick: &dyn Fn(&Round) -> Option<f64>| {
            flushlab_core::statistics::Spread::of(self.rounds.iter().filter_map(pick))
                .map_or("unknown".to_owned(), |s| milliseconds(s.median))
        };
        let header: Vec<String> = ["build".to_owned(), format!("{} p50", v.measure.name())]
            .into_iter()
            .chain(["p95".to_owned()])
            .chain(stages(v.measure).map(|s| s.name().to_owned()))
            .collect();
        let rows: Vec<Vec<String>> = [Build::Old, Build::New]
            .into_iter()
            .map(|build| {
                let side = |r: &Round| -> RunFigures {
                    match build {
                        Build::Old => r.old.clone(),
                        Build::New => r.new.clone(),
                    }
                };
                let name = match (build, &self.stored) {
                    (Build::Old, Some(_)) => "STORED",
                    _ => build.name(),
                };
                [
                    name.to_owned(),
                    median(&|r| side(r).key_to_frame_p50_ms),
                    median(&|r| side(r).key_to_frame_p95_ms),
                ]
                .into_iter()
                .chain(stages(v.measure).map(|stage| median(&|r| side(r).stage(stage))))
                .collect()
            })
            .collect();
        out += &markdown_table(&header, &rows, 1);
        if self.stored.is_none() {
            out += &format!(
                "stopped after {} round(s): {}\n",
                v.rounds,
                v.stopped_because.words(until)
            );
        }
        out += &self.verdict_line();
        out
    }

    fn verdict_line(&self) -> String {
        let v = &self.against;
        let spread = |r: Ratio| format!("×{:.2} (×{:.2}–×{:.2})", r.estimate, r.low, r.high);
        let interval = |r: Ratio| {
            format!(
                "×{:.2} (×{:.2}–×{:.2}, {} interval)",
                r.estimate,
                r.low,
                r.high,
                v.looks.confidence()
            )
        };
        let mut out = match (&v.no_verdict, v.ratio) {
            (Some(why), _) => format!("no verdict: {why}"),
            (None, None) => format!(
                "{} p50, NEW over OLD: unknown (fewer than 3 rounds with both figures): \
                 inconclusive",
                v.measure.name()
            ),
            (None, Some(r)) => format!(
                "{} p50, NEW over OLD: {} over {} rounds: {} (threshold ±{:.0}%){}",
                v.measure.name(),
                interval(r),
                self.rounds.len(),
                v.verdict.map_or("none", Verdict::name),
                v.threshold * 100.0,
                if self.rounds.len() < DECISIVE_ROUNDS {
                    format!(
                        "; slower, faster or same needs {DECISIVE_ROUNDS} rounds or more (--rounds)"
                    )
                } else {
                    String::new()
                }
            ),
        };
        if let Some(p95) = v.p95_ratio {
            out += &format!("\n{} p95, NEW over OLD: {}", v.measure.name(), spread(p95));
        }
        let stages: Vec<String> = v
            .stages
            .iter()
            .map(
                |StageRatio { stage, change: c }| match (c.verdict, c.ratio) {
                    (None, _) => format!("{} under {} ms either way", stage.name(), 0.1),
                    (Some(verdict), Some(r)) => {
                        format!("{} ×{:.2} {}", stage.name(), r.estimate, verdict.name())
                    }
                    (Some(_), None) => format!("{} unknown", stage.name()),
                },
            )
            .collect();
        if !stages.is_empty() {
            let moved = v
                .moved
                .map_or("no stage moved beyond the threshold".to_owned(), |s| {
                    format!("{} moved", s.name())
                });
            out += &format!("\nstages, NEW over OLD: {}; {moved}", stages.join(", "));
        }
        if let Some(less) = &v.answers_with_less {
            out += &format!("\n{less}: never called faster or the same");
        }
        if let Some(more) = &v.draws_more {
            out += &format!("\n{more}");
        }
        if let Some(flicker) = &v.flicker {
            out += &format!("\n{}", flicker.line());
        }
        if let Some(stored) = &self.stored {
            out += "\nadvice only: one stored run has no spread of its own (exit 0 whatever it \
                    says; run both builds with --against 'OLD CMD' for a verdict to gate on)";
            for difference in &stored.differences {
                out += &format!("\nthe stored run differs: {difference}");
            }
        }
        out
    }

    /// The summary as Markdown: a CI job's summary page. The table is Markdown already; the
    /// title becomes a heading, and each line after it a paragraph.
    pub fn markdown(&self, table: &str) -> String {
        let mut lines = table.lines();
        let title = lines.next().unwrap_or_default();
        let mut out = format!("### {title}\n\n");
        let mut rest = String::new();
        for line in lines {
            if line.starts_with('|') {
                out += line;
                out += "\n";
            } else {
                rest += &format!("\n{line}\n");
            }
        }
        out + &rest
    }
}
