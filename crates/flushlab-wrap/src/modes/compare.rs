//! `wrap --compare FIX -- CMD`: what a fix would buy CMD, before anyone edits it. CMD runs as
//! it is and with the fix tried (the observer holding its frames), alternating, headless, in
//! rounds of equal duration and size, so that a machine that slows down meanwhile slows both;
//! one table, the speedup with its spread, and the permanent fix in CMD's language.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use anyhow::Context;
use serde::Serialize;

use crate::modes::ratio::{Better, answered, tried_over_as_is};
use crate::modes::rounds::{Schedule, play};
use crate::modes::side::{Executor, RunReport, Side};
use crate::observers::fix::Fix;
use crate::plan::keys::Keys;
use crate::plan::{Comparing, Plan};
use crate::report::outputs::{draw_keys, plot_title};
use crate::report::wrap_report::WrapReport;
use crate::run::running::How;
use flushlab_core::detect::keyed::{Percentiles, Stage, StageSummary};
use flushlab_core::detect::timeline::Timeline;
use flushlab_core::outcome::{Outcome, complain};
use flushlab_core::results::drawings::waterfall::Panel;
use flushlab_core::statistics::Spread;
use flushlab_core::statistics::verdict::Ratio;
use flushlab_core::units::{bytes, count, thousands};

/// What makes `--try sync` permanent, in any language.
const SYNC_FIX: &str = "write ESC[?2026h before the first byte of each answer and ESC[?2026l after \
     its last, before the program next waits for a key (DEC synchronized output: a terminal that \
     honours it paints the answer whole)";

/// A round's length when `--duration` is not given.
const DEFAULT_ROUND: Duration = Duration::from_secs(3);

/// The `--export-json` of a comparison: every run, and what the fix buys as one ratio.
#[derive(Clone, Debug, Serialize)]
pub struct Comparison {
    pub fix: Fix,
    pub rounds: u32,
    pub seconds_each: f64,
    pub as_is: Vec<WrapReport>,
    pub tried: Vec<WrapReport>,
    /// What the fix buys, tried over as is.
    pub tried_over_as_is: Ratios,
    /// What makes the fix permanent, in CMD's language.
    pub permanent_fix: String,
    /// With `--keys` and the terminal model: keys whose answer flashed the screen, round by
    /// round, as is and tried.
    pub flashed: Option<Flashed>,
}

/// Tried over as is (NEW over OLD), each one statistic: the rounds' trimmed geometric mean and
/// its 95% bootstrap interval (`Ratio::of_rounds`, as `--against` answers: ×2 frames a second
/// is twice the frames, ×0.5 key to frame a key answered in half the time). `null` under three
/// rounds or where a side's figure is unknown.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct Ratios {
    pub fps: Option<Ratio>,
    /// With `--keys`.
    pub keys: Option<KeyRatios>,
}

/// Key to frame at the median and the 95th percentile, and each stage's median: what the fix
/// changes (emit) and what it leaves (input delay, processing).
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct KeyRatios {
    pub key_to_frame_p50: Option<Ratio>,
    pub key_to_frame_p95: Option<Ratio>,
    pub stages_p50: StageRatios,
}

/// Each stage's p50.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct StageRatios {
    pub input_delay: Option<Ratio>,
    pub processing: Option<Ratio>,
    pub emit: Option<Ratio>,
    pub drain: Option<Ratio>,
}

/// Keys that flashed the screen in each round, as is and tried, of the keys sent, under the
/// model's policy (`null`: by the camera).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Flashed {
    pub policy: Option<flushlab_core::seen::PaintPolicy>,
    pub as_is: Vec<u64>,
    pub tried: Vec<u64>,
    pub keys: u64,
}

impl Flashed {
    fn of(as_is: &[WrapReport], tried: &[WrapReport]) -> Option<Flashed> {
        let each = |runs: &[WrapReport]| -> Option<Vec<u64>> {
            runs.iter()
                .map(|r| r.seen.as_ref().map(|s| s.keys_flashed))
                .collect()
        };
        let seen = as_is.first()?.seen.as_ref()?;
        Some(Flashed {
            policy: seen.policy,
            as_is: each(as_is)?,
            tried: each(tried)?,
            keys: seen.keys.len() as u64,
        })
    }

    /// One line: the keys that flashed, round by round.
    fn line(&self) -> String {
        let rounds = |v: &[u64]| v.iter().map(u64::to_string).collect::<Vec<_>>().join(", ");
        format!(
            "\nkeys that flashed the screen ({}), of {}, round by round: as is {}, tried {}",
            match self.policy {
                Some(policy) => format!("a terminal that paints {policy}"),
                None => "the camera".to_owned(),
            },
            thousands(self.keys),
            rounds(&self.as_is),
            rounds(&self.tried)
        )
    }
}

pub(crate) fn run(
    plan: &Plan,
    comparing: Comparing,
    keys: Option<&Keys>,
    executor: &mut dyn Executor,
    signal: &AtomicUsize,
) -> anyhow::Result<Outcome> {
    let (comparison, last) = compared(plan, comparing, keys, executor, signal)?;
    complain(&comparison.table(&plan.cmd.line()));
    if let Some(destination) = &plan.outputs.report {
        destination
            .write_json(&comparison)
            .with_context(|| format!("writing the comparison to {destination}"))?;
    }
    if let Some(destination) = &plan.outputs.plot {
        draw_last_round(destination, &plan.cmd.line(), &comparison, &last)?;
    }
    Ok(match signal.load(Ordering::Relaxed) {
        0 => Outcome::Finished,
        sig => Outcome::Signal(sig),
    })
}

/// The rounds of as is and tried, each side run by `executor`, and what they compare to; the
/// last round's timelines, as is and tried, for `--plot`.
pub(crate) fn compared(
    plan: &Plan,
    comparing: Comparing,
    keys: Option<&Keys>,
    executor: &mut dyn Executor,
    signal: &AtomicUsize,
) -> anyhow::Result<(Comparison, [Timeline; 2])> {
    let (fix, rounds) = (comparing.fix, comparing.rounds);
    // With keys, a round lasts as long as its keys (and CMD's settling) unless a duration is given.
    let duration = match keys {
        Some(_) => plan.duration,
        None => Some(plan.duration.unwrap_or(DEFAULT_ROUND)),
    };
    let sides = [None, Some(fix)];
    let schedule = Schedule::alternating(sides.len(), rounds as usize);
    let played = play(
        &schedule,
        &mut |i| {
            let side = Side {
                how: How {
                    keys,
                    interactive: false,
                    fix: sides[i],
                    duration,
                    profile: None,
                    via: None,
                },
                terminal: None,
            };
            let ran = executor.run(plan, side, signal)?;
            match ran.report {
                RunReport::Headless(report) => Ok((*report, Some(ran.timeline))),
                RunReport::Terminal(_) => anyhow::bail!("a headless run gave a terminal's report"),
            }
        },
        &|_| false,
        signal,
    )?;
    // The last round's timelines, as is and tried: `--plot` draws them.
    let last: [Timeline; 2] = played.last.try_into().unwrap_or_default();
    let (mut as_is, mut tried) = (Vec::new(), Vec::new());
    for round in played.rounds {
        let [a, t]: [WrapReport; 2] = round
            .sides
            .try_into()
            .map_err(|_| anyhow::anyhow!("a round without both sides"))?;
        as_is.push(a);
        tried.push(t);
    }
    let tried_over_as_is = Ratios {
        fps: tried_over_as_is(&as_is, &tried, fps),
        keys: keys.map(|_| key_ratios(&as_is, &tried)),
    };
    let permanent_fix = match fix {
        Fix::Frame => as_is
            .first()
            .map(|r| crate::report::diagnose::permanent_fix(&r.diagnoses, &r.writer).to_owned())
            .unwrap_or_default(),
        Fix::Sync => SYNC_FIX.to_owned(),
    };
    let flashed = Flashed::of(&as_is, &tried);
    let comparison = Comparison {
        fix,
        rounds,
        seconds_each: match duration {
            Some(d) => d.as_secs_f64(),
            None => {
                Spread::of(as_is.iter().chain(&tried).map(|r| r.seconds)).map_or(0.0, |s| s.median)
            }
        },
        as_is,
        tried,
        tried_over_as_is,
        permanent_fix,
        flashed,
    };
    Ok((comparison, last))
}

/// Key to frame and each stage, tried over as is.
fn key_ratios(as_is: &[WrapReport], tried: &[WrapReport]) -> KeyRatios {
    let ratio =
        |figure: &dyn Fn(&WrapReport) -> Option<f64>| tried_over_as_is(as_is, tried, figure);
    KeyRatios {
        key_to_frame_p50: ratio(&|r| Some(key_to_frame(r)?.p50)),
        key_to_frame_p95: ratio(&|r| Some(key_to_frame(r)?.p95)),
        stages_p50: StageRatios {
            input_delay: ratio(&|r| Some(stages(r)?.input_delay?.p50)),
            processing: ratio(&|r| Some(stages(r)?.processing?.p50)),
            emit: ratio(&|r| Some(stages(r)?.emit?.p50)),
            drain: ratio(&|r| Some(stages(r)?.drain?.p50)),
        },
    }
}

/// `--plot`: the last round's keys, as is and tried, side by side on one axis.
fn draw_last_round(
    destination: &flushlab_core::files::Destination,
    command: &str,
    comparison: &Comparison,
    last: &[Timeline; 2],
) -> anyhow::Result<()> {
    let rounds = comparison.as_is.len().min(comparison.tried.len());
    let at = rounds.checked_sub(1);
    let sides = at.and_then(|i| Some((comparison.as_is.get(i)?, comparison.tried.get(i)?)));
    let Some((a, t)) = sides else {
        return Ok(());
    };
    let panels: Vec<Panel> = [("as is", a, &last[0]), ("tried: --try frame", t, &last[1])]
        .into_iter()
        .filter_map(|(side, report, timeline)| {
            let keys = &report.keys.as_ref()?.latencies;
            Some(Panel::of(
                format!("{side} (round {rounds})"),
                timeline,
                keys,
            ))
        })
        .collect();
    draw_keys(destination, &plot_title(command, a), &panels)
}

fn key_to_frame(report: &WrapReport) -> Option<Percentiles> {
    report.keys.as_ref()?.latencies.key_to_frame_ms
}

fn stages(report: &WrapReport) -> Option<StageSummary> {
    report.keys.as_ref()?.latencies.stages_ms
}

fn fps(report: &WrapReport) -> Option<f64> {
    report
        .run
        .figures
        .as_ref()
        .map(|f| f.fps)
        .filter(|f| *f > 0.0)
}

impl Comparison {
    /// The table printed after the rounds.
    pub fn table(&self, command: &str) -> String {
        let size = self
            .as_is
            .first()
            .map_or(String::new(), |r| format!(" at {}x{}", r.cols, r.rows));
        let mut out = format!(
            "wrap --compare {}: {command}, {} round(s) of {:.1} s{size}\n",
            self.fix_name(),
            self.rounds,
            self.seconds_each
        );
        let keyed = self.tried_over_as_is.keys.is_some();
        let mut header: Vec<String> = [
            "run",
            "fps (min–max)",
            "write(2) a frame",
            "bytes a frame",
            "CPU ms a frame",
        ]
        .map(str::to_owned)
        .to_vec();
        if keyed {
            header.extend(["key→frame p50".to_owned(), "key→frame p95".to_owned()]);
        }
        let rows: Vec<Vec<String>> = [("as is", &self.as_is), ("tried", &self.tried)]
            .into_iter()
            .map(|(name, runs)| {
                let cell = |s: Option<Spread>, f: &dyn Fn(f64) -> String| {
                    s.map_or("unknown".to_owned(), |s| f(s.median))
                };
                let rate = Spread::of_each(runs, fps).map_or("unknown".to_owned(), |s| {
                    format!("{} ({}–{})", count(s.median), count(s.min), count(s.max))
                });
                let mut row = vec![
                    name.to_owned(),
                    rate,
                    cell(
                        Spread::of_each(runs, |r| r.run.figures.as_ref()?.writes_per_frame),
                        &|v| count(v),
                    ),
                    cell(
                        Spread::of_each(runs, |r| r.run.figures.as_ref()?.bytes_per_frame),
                        &|v| bytes(v),
                    ),
                    cell(
                        Spread::of_each(runs, |r| r.run.figures.as_ref()?.cpu_ms_per_frame()),
                        &|v| format!("{v:.2}"),
                    ),
                ];
                if keyed {
                    let ms = |v: f64| flushlab_core::units::milliseconds(v);
                    row.push(cell(
                        Spread::of_each(runs, |r| Some(key_to_frame(r)?.p50)),
                        &ms,
                    ));
                    row.push(cell(
                        Spread::of_each(runs, |r| Some(key_to_frame(r)?.p95)),
                        &ms,
                    ));
                }
                row
            })
            .collect();
        out += &flushlab_core::results::export::markdown_table(&header, &rows, 1);
        out += &self.fps_said();
        out += &self.keys_and_bytes();
        out += &self.flashed.as_ref().map(Flashed::line).unwrap_or_default();
        out += &match self.permanent_fix.is_empty() {
            true => String::new(),
            false => format!("\nto keep it: {}", self.permanent_fix),
        };
        out
    }

    /// Frames a second, tried over as is; unknown where a side's frames are.
    fn fps_said(&self) -> String {
        format!(
            "frames a second, tried over as is (the rounds' trimmed geometric mean, 95% bootstrap \
             interval, as --against answers): {}",
            match self.tried_over_as_is.fps {
                None if self
                    .as_is
                    .iter()
                    .chain(&self.tried)
                    .any(|r| fps(r).is_none()) =>
                {
                    "unknown: a side's frames are unknown (see --export-json)".to_owned()
                }
                ratio => answered(ratio, Better::Higher),
            }
        )
    }

    /// Key to frame tried over as is, and whether the terminal received the same bytes in every run.
    fn keys_and_bytes(&self) -> String {
        let mut out = String::new();
        if let Some(k) = self.tried_over_as_is.keys {
            out += &format!(
                "\nkey to frame, tried over as is: p50 {}, p95 {}",
                answered(k.key_to_frame_p50, Better::Lower),
                answered(k.key_to_frame_p95, Better::Lower)
            );
            out += &self.stages_lines(k.stages_p50);
        }
        let digests: std::collections::BTreeSet<&str> = self
            .as_is
            .iter()
            .chain(&self.tried)
            .map(|r| r.received_digest.as_str())
            .collect();
        out += &match digests.len() {
            1 => "\nthe terminal received the same bytes in every run, as is and tried".to_owned(),
            n => format!(
                "\nthe terminal received {n} different byte streams over the runs (CMD draws \
                 differently run to run, or the fix changed what it wrote: see received_digest)"
            ),
        };
        out
    }

    /// Each stage's p50 as is and tried (the median of the rounds), and what the fix changed.
    fn stages_lines(&self, ratios: StageRatios) -> String {
        let ms = flushlab_core::units::milliseconds;
        let each = [
            (Stage::InputDelay, ratios.input_delay),
            (Stage::Processing, ratios.processing),
            (Stage::Emit, ratios.emit),
            (Stage::Drain, ratios.drain),
        ];
        let p50 = |runs: &[WrapReport], stage: Stage| {
            Spread::of_each(runs, |r| {
                let (_, p) = stages(r)?.each().find(|&(s, _)| s == stage)?;
                Some(p.p50)
            })
        };
        let mut out = String::new();
        for (name, runs) in [("as is", &self.as_is), ("tried", &self.tried)] {
            let cells: Vec<String> = each
                .iter()
                .filter_map(|&(stage, _)| {
                    Some(format!("{} {}", stage.name(), ms(p50(runs, stage)?.median)))
                })
                .collect();
            if !cells.is_empty() {
                out += &format!("\nstages p50, {name}: {}", cells.join(" · "));
            }
        }
        // A stage under a tenth of a millisecond on both sides has no ratio worth reading.
        let small = |stage| {
            [&self.as_is, &self.tried]
                .iter()
                .all(|runs| p50(runs, stage).is_none_or(|p| p.median < 0.1))
        };
        let ratios: Vec<String> = each
            .iter()
            .map(|&(stage, s)| match s {
                _ if small(stage) => format!("{} under 0.1 ms either way", stage.name()),
                Some(r) => format!(
                    "{} ×{:.2} (×{:.2}–×{:.2})",
                    stage.name(),
                    r.estimate,
                    r.low,
                    r.high
                ),
                None => format!("{} unknown", stage.name()),
            })
            .collect();
        // Said wherever a side had stages, with the ones no three rounds had on both sides.
        if !out.is_empty() {
            let unknown = ratios.iter().any(|r| r.ends_with(" unknown"));
            out += &format!(
                "\nwhat the fix changes, stage by stage (tried over as is): {}{}",
                ratios.join(", "),
                match unknown {
                    true => " (unknown: fewer than 3 rounds have it on both sides)",
                    false => "",
                }
            );
        }
        out
    }

    fn fix_name(&self) -> &'static str {
        match self.fix {
            Fix::Frame => "frame",
            Fix::Sync => "sync",
        }
    }
}
