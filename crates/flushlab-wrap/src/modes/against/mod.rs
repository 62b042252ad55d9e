//! `wrap --keys S --against 'OLD CMD ARGS' -- NEW CMD ARGS`: two builds of a program on the same
//! keys, one verdict. OLD and NEW run headless (or in `--terminal`) in rounds ordered ABBA (OLD,
//! NEW, then NEW, OLD: a machine that slows down across a round slows both alike), after a
//! warm-up round that is dropped, with the same size, keys, readiness rule, observer and reader
//! (the rounds engine, `rounds.rs`). Each round gives one ratio of key→frame p50, NEW over OLD; the
//! verdict is the rounds' ratio with an interval from resampling them
//! ([`flushlab_core::statistics::verdict`]) against `--threshold`: slower, faster, the same, or
//! inconclusive — and an exit code a CI job can gate on. The rounds run until a scheduled look
//! decides, within a budget ([`Looks`](flushlab_core::statistics::verdict::Looks)), or `--rounds N`.

mod report;
#[cfg(test)]
mod tests;
mod verdict;

use std::sync::atomic::{AtomicUsize, Ordering};

use anyhow::Context;

use crate::modes::rounds::{Order, Ran, Schedule, Stopped, play};
use crate::modes::side::{Executor, RunReport, Side};
use crate::plan::Until;
use crate::plan::keys::Keys;
use crate::plan::{AgainstPlan, Old, Plan};
use crate::report::outputs::{draw_keys, plot_title};
use flushlab_core::detect::keyed::KeyLatencies;
use flushlab_core::detect::timeline::Timeline;
use flushlab_core::outcome::{Outcome, complain};
use flushlab_core::results::drawings::waterfall::Panel;

pub use self::report::{Against, Stored};
pub use self::verdict::{AgainstVerdict, Build, Round};
use crate::plan::run_figures::{Measure, RunFigures};
use crate::plan::stored_run::Baseline;

/// A build's run as `--plot` draws it: its timeline and its keys.
type Drawn = (Build, Timeline, KeyLatencies);

/// The last round's runs, each build's (`--plot`).
type Last = Vec<Drawn>;

pub(crate) fn run(
    plan: &Plan,
    against: &AgainstPlan,
    keys: &Keys,
    via: Option<&crate::via::Wire>,
    executor: &mut dyn Executor,
    signal: &AtomicUsize,
) -> anyhow::Result<Outcome> {
    let old_plan = match &against.old {
        Old::Stored(baseline) => {
            return against_stored(plan, (baseline, against), keys, executor, signal);
        }
        Old::Build(old_plan) => old_plan,
    };
    let measure = Measure::of(plan.terminal.is_some(), via.is_some());
    let until = against.until.clone();
    let looks = until.looks();
    announce(&until);
    let judged = (against.threshold, measure);
    let new_words = plan.cmd.words_text();
    let old = &old_plan.cmd.words_text();
    let played = play(
        &Schedule {
            sides: 2,
            order: Order::Abba,
            warm_up: true,
            until: until.clone(),
        },
        &mut |i| {
            let build = [Build::Old, Build::New][i];
            match build {
                Build::Old => one(old_plan, (build, measure, keys, via), executor, signal),
                Build::New => one(plan, (build, measure, keys, via), executor, signal),
            }
        },
        &|rounds| {
            let rounds: Vec<Round> = rounds.iter().map(Round::of_sides).collect();
            AgainstVerdict::of(
                &rounds,
                judged,
                (&looks, Stopped::Decided),
                (old, &new_words),
            )
            .decides()
        },
        signal,
    )?;
    let mut old_runs = Vec::new();
    let mut new_runs = Vec::new();
    let rounds: Vec<Round> = played.rounds.iter().map(Round::of_sides).collect();
    for round in played.rounds {
        let [(_, old), (_, new)]: [(RunFigures, RunReport); 2] = round
            .sides
            .try_into()
            .map_err(|_| anyhow::anyhow!("a round without both builds"))?;
        old_runs.push(old);
        new_runs.push(new);
    }
    let mut verdict =
        AgainstVerdict::of(&rounds, judged, (&looks, played.stopped), (old, &new_words));
    if verdict.no_verdict.is_some() && verdict.stopped_because == Stopped::Decided {
        verdict.stopped_because = Stopped::NoVerdict;
    }
    let against = Against {
        against: verdict,
        rounds,
        old_runs,
        new_runs,
        stored: None,
    };
    tell(plan, &against, &until, &played.last)?;
    Ok(match signal.load(Ordering::Relaxed) {
        0 => against.against.outcome(),
        sig => Outcome::Signal(sig),
    })
}

/// One build's run of a round: its figures and report, and (headless) its timeline and keys
/// for `--plot`.
fn one(
    plan: &Plan,
    (build, measure, keys, via): (Build, Measure, &Keys, Option<&crate::via::Wire>),
    executor: &mut dyn Executor,
    signal: &AtomicUsize,
) -> anyhow::Result<Ran<(RunFigures, RunReport), Drawn>> {
    let terminal = plan.terminal.as_ref().map(|t| t.terminal);
    let side = Side::of_rounds(plan, Some(keys), (None, terminal), via);
    let ran = executor.run(plan, side, signal)?;
    let figures = RunFigures::of_keys(ran.report.keys(), ran.report.exit_code(), measure)
        .seeing(ran.report.seen().map(|s| s.keys_flashed));
    // A terminal's runs keep no timeline of wrap's reads to draw.
    let drawn = match &ran.report {
        RunReport::Headless(_) => ran.report.keys().map(|k| (build, ran.timeline, k.clone())),
        RunReport::Terminal(_) => None,
    };
    Ok(((figures, ran.report), drawn))
}

/// What the rounds will be, said before they start.
fn announce(until: &Until) {
    complain(&format!(
        "wrap --against: a warm-up round, then {}…",
        match until {
            Until::Rounds(n) => format!("{n} rounds (ABBA)"),
            Until::Decisive { looks, max_time } => format!(
                "rounds (ABBA) until the interval decides: it looks after rounds {}, within {} s",
                looks
                    .after
                    .iter()
                    .map(ToString::to_string)
                    .collect::<Vec<_>>()
                    .join(", "),
                max_time.as_secs()
            ),
        }
    ));
}

/// `--against run.json`: NEW alone, round after round, each against the stored run. One stored
/// run has no spread of its own (its machine may have been quieter or busier all along): the
/// verdict is advice, and the exit 0 whatever it says. A fixed count of runs (`--rounds`, 10).
fn against_stored(
    plan: &Plan,
    (baseline, against): (&Baseline, &AgainstPlan),
    keys: &Keys,
    executor: &mut dyn Executor,
    signal: &AtomicUsize,
) -> anyhow::Result<Outcome> {
    let baseline = baseline.clone();
    let until = against.until.clone();
    let looks = until.looks();
    complain(&format!(
        "wrap --against {}: a stored run; {} runs of NEW…",
        baseline.path,
        looks.most()
    ));
    let schedule = Schedule {
        sides: 1,
        order: Order::Same,
        warm_up: false,
        until: until.clone(),
    };
    let side = Side::of_rounds(plan, Some(keys), (None, None), None);
    let played = play(
        &schedule,
        &mut |_| {
            let ran = executor.run(plan, side, signal)?;
            let drawn = ran
                .report
                .keys()
                .map(|k| (Build::New, ran.timeline, k.clone()));
            Ok((ran.report, drawn))
        },
        &|_| false,
        signal,
    )?;
    let rounds: Vec<Round> = played
        .rounds
        .iter()
        .map(|r| Round {
            round: r.number as u32,
            order: [Build::Old, Build::New],
            old: baseline.figures.clone(),
            new: RunFigures::of_keys(
                r.sides[0].keys(),
                r.sides[0].exit_code(),
                Measure::KeyToFrame,
            ),
        })
        .collect();
    let new_runs = played.rounds.into_iter().flat_map(|r| r.sides).collect();
    let differences = baseline.differences(plan.size, &keys.script.source);
    let against = Against {
        against: AgainstVerdict::of(
            &rounds,
            (against.threshold, Measure::KeyToFrame),
            (&looks, played.stopped),
            (&baseline.command, &plan.cmd.words_text()),
        ),
        rounds,
        old_runs: Vec::new(),
        new_runs,
        stored: Some(Stored {
            baseline,
            differences,
        }),
    };
    tell(plan, &against, &until, &played.last)?;
    Ok(match signal.load(Ordering::Relaxed) {
        0 => Outcome::Finished,
        sig => Outcome::Signal(sig),
    })
}

/// The table on stderr, then the files asked for.
fn tell(plan: &Plan, against: &Against, until: &Until, last: &Last) -> anyhow::Result<()> {
    let table = against.table(&plan.cmd.line(), plan.size, until);
    complain(&table);
    if let Some(destination) = &plan.outputs.report {
        destination
            .write_json(against)
            .with_context(|| format!("writing the verdict to {destination}"))?;
    }
    if let Some(destination) = &plan.outputs.markdown {
        destination
            .write(against.markdown(&table).as_bytes())
            .with_context(|| format!("writing the verdict to {destination}"))?;
    }
    if let Some(destination) = &plan.outputs.plot {
        draw_last_round(destination, &plan.cmd.line(), against, last)?;
    }
    Ok(())
}

/// `--plot`: the last round's keys, OLD and NEW side by side on one axis (headless runs: a
/// terminal's runs keep no timeline of wrap's reads to draw).
fn draw_last_round(
    destination: &flushlab_core::files::Destination,
    command: &str,
    against: &Against,
    last: &Last,
) -> anyhow::Result<()> {
    let Some(RunReport::Headless(new)) = against.new_runs.last() else {
        return Ok(());
    };
    let panels: Vec<Panel> = last
        .iter()
        .map(|(build, timeline, keys)| {
            Panel::of(
                format!("{} (round {})", build.name(), against.rounds.len()),
                timeline,
                keys,
            )
        })
        .collect();
    draw_keys(destination, &plot_title(command, new), &panels)
}
