//! `wrap --keys S --against 'OLD CMD ARGS' -- NEW CMD ARGS`: two builds of a program on the same
//! keys, one verdict. OLD and NEW run headless (or in `--terminal`) in rounds ordered ABBA (OLD,
//! NEW, then NEW, OLD: a machine that slows down across a round slows both alike), after a
//! warm-up round that is dropped, with the same size, keys, readiness rule, observer and reader
//! (the rounds engine, `rounds.rs`). Each round gives one ratio of key→frame p50, NEW over OLD; the
//! verdict is the rounds' ratio with an interval from resampling them
//! ([`crate::statistics::verdict`]) against `--threshold`: slower, faster, the same, or
//! inconclusive — and an exit code a CI job can gate on. The rounds run until a scheduled look
//! decides, within a budget ([`Looks`](crate::statistics::verdict::Looks)), or `--rounds N`.

mod report;
mod stored;
#[cfg(test)]
mod tests;
mod verdict;

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};

use anyhow::Context;

use super::args::{OldBuild, WrapArgs};
use super::outputs::{draw_keys, plot_title};
use super::rounds::{Order, Plan, Ran, Stopped, Until, play};
use super::side::{RunReport, Side};
use super::typing::Keys;
use crate::detect::keyed::KeyLatencies;
use crate::detect::timeline::Timeline;
use crate::outcome::{Outcome, Refusal, complain};
use crate::results::drawings::waterfall::Panel;
use crate::units::printable;

pub use self::report::{Against, Stored};
pub use self::stored::{Baseline, stored_run};
pub use self::verdict::{AgainstVerdict, Build, Measure, Round, RunFigures, StageRatio};

/// `--against`'s flags, checked before anything starts: keys to time, and OLD a command (one
/// line naming it, NEW never started).
pub(super) fn check(args: &WrapArgs, has_keys: bool) -> Result<(), Refusal> {
    let Some(OldBuild(old)) = &args.against else {
        return Ok(());
    };
    if !has_keys {
        return Err(
            "wrap --against: the verdict is on each key's time to its frame: give \
                    --keys or --keys-file"
                .to_owned()
                .into(),
        );
    }
    let shown = printable(&old[0]);
    if let Some(path) = stored_run(old) {
        if let Some(terminal) = args.terminal {
            return Err(format!(
                "wrap --against '{shown}' --terminal {}: a stored run against a terminal's \
                 pixels is not built: give the old build's command",
                terminal.name()
            )
            .into());
        }
        return Baseline::load(path)
            .map(|_| ())
            .map_err(|why| format!("wrap --against '{shown}': {why}").into());
    }
    if crate::files::find_program(old[0].as_ref()).is_none() {
        return Err(format!(
            "wrap --against '{shown}': not a command (not found, or not executable): the old \
             build's program and its arguments, as a shell splits them"
        )
        .into());
    }
    Ok(())
}

/// A build's run as `--plot` draws it: its timeline and its keys.
type Drawn = (Build, Timeline, KeyLatencies);

/// The last round's runs, each build's (`--plot`).
type Last = Vec<Drawn>;

pub(super) fn run(
    args: &WrapArgs,
    (old, new_program): (&[String], &Path),
    (keys, via): (&Keys, Option<&super::via::Wire>),
    signal: &AtomicUsize,
) -> anyhow::Result<Outcome> {
    if let Some(path) = stored_run(old) {
        anyhow::ensure!(
            via.is_none(),
            "wrap --against '{}' --via: a stored run is not compared over a wire yet; give the \
             old build's command",
            printable(&old[0])
        );
        let baseline = Baseline::load(path)
            .map_err(|why| anyhow::anyhow!("wrap --against '{}': {why}", printable(&old[0])))?;
        return against_stored(args, (baseline, new_program), keys, signal);
    }
    let old_program: PathBuf = crate::files::find_program(old[0].as_ref())
        .with_context(|| format!("'{}' is not a command", printable(&old[0])))?;
    let old_args = WrapArgs {
        command: old.iter().map(Into::into).collect(),
        ..args.clone()
    };
    let measure = Measure::of(args.terminal.is_some(), via.is_some());
    let until = args.until();
    let looks = until.looks();
    announce(&until);
    let judged = (args.threshold, measure);
    let new_words = args.command_words();
    let played = play(
        &Plan {
            sides: 2,
            order: Order::Abba,
            warm_up: true,
            until: until.clone(),
        },
        &mut |i| {
            let build = [Build::Old, Build::New][i];
            match build {
                Build::Old => one(&old_args, &old_program, (build, measure, keys, via), signal),
                Build::New => one(args, new_program, (build, measure, keys, via), signal),
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
    tell(args, &against, &until, &played.last)?;
    Ok(match signal.load(Ordering::Relaxed) {
        0 => against.against.outcome(),
        sig => Outcome::Signal(sig),
    })
}

/// One build's run of a round: its figures and report, and (headless) its timeline and keys
/// for `--plot`.
fn one(
    args: &WrapArgs,
    program: &Path,
    (build, measure, keys, via): (Build, Measure, &Keys, Option<&super::via::Wire>),
    signal: &AtomicUsize,
) -> anyhow::Result<Ran<(RunFigures, RunReport), Drawn>> {
    let side = Side::of_rounds(args, Some(keys), (None, args.terminal), via);
    let ran = super::side::run(args, program, side, signal)?;
    let figures = RunFigures::of(&ran.report, measure);
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
    args: &WrapArgs,
    (baseline, new_program): (Baseline, &Path),
    keys: &Keys,
    signal: &AtomicUsize,
) -> anyhow::Result<Outcome> {
    let until = Until::Rounds(args.rounds.unwrap_or(10) as usize);
    let looks = until.looks();
    complain(&format!(
        "wrap --against {}: a stored run; {} runs of NEW…",
        baseline.path,
        looks.most()
    ));
    let plan = Plan {
        sides: 1,
        order: Order::Same,
        warm_up: false,
        until: until.clone(),
    };
    let side = Side::of_rounds(args, Some(keys), (None, None), None);
    let played = play(
        &plan,
        &mut |_| {
            let ran = super::side::run(args, new_program, side, signal)?;
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
            new: RunFigures::of(&r.sides[0], Measure::KeyToFrame),
        })
        .collect();
    let new_runs = played.rounds.into_iter().flat_map(|r| r.sides).collect();
    let differences = baseline.differences(args, &keys.script.source);
    let against = Against {
        against: AgainstVerdict::of(
            &rounds,
            (args.threshold, Measure::KeyToFrame),
            (&looks, played.stopped),
            (&baseline.command, &args.command_words()),
        ),
        rounds,
        old_runs: Vec::new(),
        new_runs,
        stored: Some(Stored {
            baseline,
            differences,
        }),
    };
    tell(args, &against, &until, &played.last)?;
    Ok(match signal.load(Ordering::Relaxed) {
        0 => Outcome::Finished,
        sig => Outcome::Signal(sig),
    })
}

/// The table on stderr, then the files asked for.
fn tell(args: &WrapArgs, against: &Against, until: &Until, last: &Last) -> anyhow::Result<()> {
    let table = against.table(&args.command_line(), args.size, until);
    complain(&table);
    if let Some(destination) = &args.report {
        destination
            .write_json(against)
            .with_context(|| format!("writing the verdict to {destination}"))?;
    }
    if let Some(destination) = &args.export_markdown {
        destination
            .write(against.markdown(&table).as_bytes())
            .with_context(|| format!("writing the verdict to {destination}"))?;
    }
    if let Some(destination) = &args.plot {
        draw_last_round(destination, &args.command_line(), against, last)?;
    }
    Ok(())
}

/// `--plot`: the last round's keys, OLD and NEW side by side on one axis (headless runs: a
/// terminal's runs keep no timeline of wrap's reads to draw).
fn draw_last_round(
    destination: &crate::files::Destination,
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
