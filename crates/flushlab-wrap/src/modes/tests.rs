//! The modes on the mock executor: `--compare` and `--against` from their rounds to their
//! answer, every side made up (`mock.rs`), no process started.

use std::sync::atomic::AtomicUsize;
use std::time::Duration;

use super::against;
use super::compare::{Comparison, compared};
use super::mock::{Asked, Gives, Mock};
use crate::observers::fix::Fix;
use crate::plan::Until;
use crate::plan::for_tests::{comparing, keys, plan};
use flushlab_core::statistics::verdict::{Looks, Ratio};

static NO_SIGNAL: AtomicUsize = AtomicUsize::new(0);

/// `--compare FIX` over `rounds`, each side's figures from `gives(fix, n)`.
fn compare_with(
    rounds: u32,
    with_keys: bool,
    gives: impl FnMut(&Asked, usize) -> anyhow::Result<Gives>,
) -> (anyhow::Result<Comparison>, Vec<Asked>) {
    let plan = plan(&["./tui"]);
    let keys = keys();
    let mut mock = Mock::new(gives);
    let compared = compared(
        &plan,
        comparing(Fix::Frame, rounds),
        with_keys.then_some(&keys),
        &mut mock,
        &NO_SIGNAL,
    )
    .map(|(comparison, _)| comparison);
    (compared, mock.asked)
}

fn near(ratio: Option<Ratio>, want: f64) -> bool {
    ratio.is_some_and(|r| (r.estimate - want).abs() < 1e-9 * want && r.low <= r.high)
}

#[test]
fn compare_runs_as_is_then_tried_in_every_round() {
    let (comparison, asked) = compare_with(3, true, |_, _| Ok(Gives::keys(30.0, 10.0)));
    let fixes: Vec<Option<Fix>> = asked.iter().map(|a| a.fix).collect();
    assert_eq!(fixes, [None, Some(Fix::Frame)].repeat(3));
    assert!(asked.iter().all(|a| a.keys && a.program == "./tui"));
    let comparison = comparison.unwrap();
    assert_eq!((comparison.as_is.len(), comparison.tried.len()), (3, 3));
}

#[test]
fn compare_answers_frames_a_second_tried_over_as_is() {
    // The tried side draws three times the frames, whatever the round's pace (a round is two
    // sides).
    let (comparison, _) = compare_with(4, false, |a, n| {
        let pace = 1.0 + (n / 2) as f64 / 10.0;
        Ok(Gives::frames(match a.fix {
            None => 10.0 * pace,
            Some(_) => 30.0 * pace,
        }))
    });
    let ratios = comparison.unwrap().tried_over_as_is;
    assert!(near(ratios.fps, 3.0), "{:?}", ratios.fps);
    assert!(ratios.keys.is_none(), "no keys, no key ratios");
}

#[test]
fn compare_answers_key_to_frame_and_each_stage_tried_over_as_is() {
    let (comparison, _) = compare_with(3, true, |a, _| {
        Ok(match a.fix {
            None => Gives::keys(30.0, 40.0),
            Some(_) => Gives::keys(30.0, 4.0),
        })
    });
    let ratios = comparison.unwrap().tried_over_as_is;
    let keys = ratios.keys.unwrap();
    assert!(near(keys.key_to_frame_p50, 0.1), "{keys:?}");
    assert!(near(keys.key_to_frame_p95, 0.1), "{keys:?}");
    assert!(near(keys.stages_p50.processing, 0.1), "{keys:?}");
    assert!(near(keys.stages_p50.input_delay, 1.0), "{keys:?}");
    assert!(near(ratios.fps, 1.0));
}

#[test]
fn compare_under_three_rounds_says_its_ratio_is_unknown() {
    let (comparison, asked) = compare_with(2, true, |_, _| Ok(Gives::keys(30.0, 10.0)));
    assert_eq!(asked.len(), 4);
    let ratios = comparison.unwrap().tried_over_as_is;
    assert_eq!(ratios.fps, None);
    assert_eq!(ratios.keys.unwrap().key_to_frame_p50, None);
}

#[test]
fn compare_with_a_side_of_unknown_frames_says_its_fps_ratio_is_unknown() {
    let (comparison, _) = compare_with(3, false, |a, _| {
        Ok(Gives::frames(if a.fix.is_some() { 0.0 } else { 20.0 }))
    });
    assert_eq!(comparison.unwrap().tried_over_as_is.fps, None);
}

#[test]
fn compare_ends_with_the_error_of_the_side_that_failed() {
    let (comparison, asked) = compare_with(3, true, |_, n| match n {
        3 => anyhow::bail!("CMD could not start"),
        _ => Ok(Gives::keys(30.0, 10.0)),
    });
    assert_eq!(comparison.unwrap_err().to_string(), "CMD could not start");
    assert_eq!(asked.len(), 4, "nothing runs after the failed side");
}

#[test]
fn compare_after_a_signal_runs_no_side() {
    let plan = plan(&["./tui"]);
    let mut mock = Mock::new(|_: &Asked, _| Ok(Gives::frames(30.0)));
    let signal = AtomicUsize::new(15);
    let (comparison, _) =
        compared(&plan, comparing(Fix::Frame, 3), None, &mut mock, &signal).unwrap();
    assert!(mock.asked.is_empty());
    assert!(comparison.as_is.is_empty() && comparison.tried.is_empty());
    assert_eq!(comparison.tried_over_as_is.fps, None);
}

#[test]
fn compare_with_keys_and_no_duration_says_the_rounds_median_length() {
    let (comparison, _) = compare_with(3, true, |_, n| {
        Ok(Gives {
            seconds: [1.0, 9.0, 5.0, 5.0, 2.0, 8.0][n],
            ..Gives::keys(30.0, 10.0)
        })
    });
    assert_eq!(comparison.unwrap().seconds_each, 5.0);
}

/// `--against ./old -- ./new` until `until`, each build's key to frame p50 from `p50(program)`.
fn against_with(
    until: Until,
    gives: impl FnMut(&Asked, usize) -> anyhow::Result<Gives>,
) -> (u8, Vec<String>) {
    let new = plan(&["./new"]);
    let against = crate::plan::for_tests::against(&["./old"], until);
    let mut mock = Mock::new(gives);
    let outcome = against::run(&new, &against, &keys(), None, &mut mock, &NO_SIGNAL).unwrap();
    let programs = mock.asked.into_iter().map(|a| a.program).collect();
    (outcome.exit_code(), programs)
}

/// Key to frame p50 of each build: OLD's and NEW's, with a little noise a round.
fn builds(old: f64, new: f64) -> impl FnMut(&Asked, usize) -> anyhow::Result<Gives> {
    move |asked, n| {
        let noise = 1.0 + (n % 3) as f64 / 100.0;
        let p50 = if asked.program == "./old" { old } else { new };
        Ok(Gives::keys(30.0, p50 * noise))
    }
}

#[test]
fn against_drops_a_warm_up_then_runs_old_and_new_abba() {
    let (_, programs) = against_with(Until::Rounds(4), builds(10.0, 10.0));
    let (old, new) = ("./old".to_owned(), "./new".to_owned());
    let abba = [
        [&old, &new], // the warm-up, dropped
        [&old, &new],
        [&new, &old],
        [&old, &new],
        [&new, &old],
    ];
    let want: Vec<String> = abba.iter().flatten().map(|p| (*p).clone()).collect();
    assert_eq!(programs, want);
}

#[test]
fn against_a_slower_new_build_exits_4() {
    let (code, _) = against_with(Until::Rounds(8), builds(10.0, 20.0));
    assert_eq!(code, 4);
}

#[test]
fn against_the_same_build_exits_0() {
    let (code, _) = against_with(Until::Rounds(8), builds(10.0, 10.0));
    assert_eq!(code, 0);
}

#[test]
fn against_until_decisive_stops_at_the_first_look_that_decides() {
    let until = Until::Decisive {
        looks: Looks::until_decisive(60),
        max_time: Duration::from_secs(3600),
    };
    let (code, programs) = against_with(until, builds(10.0, 30.0));
    assert_eq!(code, 4);
    let rounds = programs.len() / 2 - 1;
    assert!(rounds < 60, "{rounds} rounds: a look should have decided");
}

#[test]
fn against_a_new_build_that_crashes_has_no_verdict() {
    let (code, _) = against_with(Until::Rounds(6), |asked, n| {
        let crashed = (asked.program == "./new").then_some(139);
        Ok(Gives {
            exit_code: crashed,
            ..builds(10.0, 10.0)(asked, n)?
        })
    });
    assert_eq!(code, 1);
}

#[test]
fn against_a_new_build_that_answers_no_key_has_no_verdict() {
    let (code, _) = against_with(Until::Rounds(6), |asked, n| match asked.program.as_str() {
        "./new" => Ok(Gives::frames(30.0)),
        _ => builds(10.0, 10.0)(asked, n),
    });
    assert_eq!(code, 1);
}

/// `--compare sync` with the model looking: the keys that flashed, round by round, as is and
/// tried, and the one change that keeps the fix.
#[test]
fn compare_counts_the_keys_that_flashed_round_by_round() {
    let plan = plan(&["./flash", "clear"]);
    let keys = keys();
    let mut mock = Mock::new(|a: &Asked, _| {
        let gives = Gives::keys(30.0, 10.0);
        Ok(gives.flashing(if a.fix.is_some() { 0 } else { 10 }))
    });
    let (comparison, _) = compared(
        &plan,
        comparing(Fix::Sync, 2),
        Some(&keys),
        &mut mock,
        &NO_SIGNAL,
    )
    .unwrap();
    let flashed = comparison.flashed.unwrap();
    assert_eq!((flashed.as_is, flashed.tried), (vec![10, 10], vec![0, 0]));
    assert!(
        comparison.permanent_fix.contains("ESC[?2026h"),
        "{}",
        comparison.permanent_fix
    );
}

/// A build that flashes the screen where the old one did not is a regression (exit 4) at the
/// same speed, decided before the rounds' budget; the other way round it is no regression.
#[test]
fn against_a_build_that_flashes_where_the_old_did_not_is_a_regression() {
    let until = || Until::Decisive {
        looks: Looks::until_decisive(40),
        max_time: Duration::from_secs(3600),
    };
    let flashing = |old: u64, new: u64| {
        move |asked: &Asked, n: usize| {
            let flashed = if asked.program == "./old" { old } else { new };
            Ok(builds(10.0, 10.0)(asked, n)?.flashing(flashed))
        }
    };
    let (code, programs) = against_with(until(), flashing(0, 10));
    assert_eq!(code, 4);
    assert!(programs.len() / 2 - 1 < 40, "a look should have decided");
    let (code, _) = against_with(until(), flashing(10, 0));
    assert_ne!(code, 4, "flashing less is no regression");
}

/// A scratch directory of the test's, and the JSON `--export-json` wrote there.
fn exported(plan: &mut crate::plan::Plan) -> flushlab_core::files::Scratch {
    let scratch = flushlab_core::files::Scratch::new("flushlab-mock-test").unwrap();
    let file = scratch.path().join("report.json");
    plan.outputs.report = Some(flushlab_core::files::Destination::File(file));
    scratch
}

fn read_exported(scratch: &flushlab_core::files::Scratch) -> serde_json::Value {
    serde_json::from_slice(&std::fs::read(scratch.path().join("report.json")).unwrap()).unwrap()
}

/// `--against run.json`: NEW alone, round after round, against the stored run; slower, yet
/// advice and exit 0 (one stored run has no spread of its own); what differs from the stored
/// run is said (here its size).
#[test]
fn against_a_stored_run_is_advice_that_says_what_differs() {
    use crate::plan::run_figures::{Measure, RunFigures};
    use crate::plan::stored_run::Baseline;
    let mut new = plan(&["./new"]);
    new.size = (100, 30);
    let scratch = exported(&mut new);
    let old = super::mock::keys_report(10.0).latencies;
    let baseline = Baseline {
        path: "run.json".to_owned(),
        version: env!("CARGO_PKG_VERSION").to_owned(),
        machine: flushlab_core::sys::process::cpu_model(),
        command: vec!["./old".to_owned()],
        size: (80, 24),
        script: keys().script.source.clone(),
        figures: RunFigures::of_keys(Some(&old), None, Measure::KeyToFrame),
    };
    let against = crate::plan::for_tests::against_stored(baseline, Until::Rounds(6));
    let mut mock = Mock::new(|_: &Asked, _| Ok(Gives::keys(30.0, 20.0)));
    let outcome = against::run(&new, &against, &keys(), None, &mut mock, &NO_SIGNAL).unwrap();
    assert_eq!(outcome.exit_code(), 0, "advice never fails");
    assert!(mock.asked.iter().all(|a| a.program == "./new"));
    assert_eq!(mock.asked.len(), 6);
    let report = read_exported(&scratch);
    assert_eq!(report["against"]["verdict"], "slower", "{report}");
    assert_eq!(
        report["stored"]["differences"],
        serde_json::json!(["another size (80x24 then, 100x30 now)"]),
        "{report}"
    );
    assert_eq!(report["new_runs"].as_array().unwrap().len(), 6);
}

/// `--against` in a real terminal: both builds typed into it, the verdict on key→last pixel,
/// and the stages named the terminal's (its paint; wrap never sees a drain there).
#[test]
fn against_in_a_terminal_is_judged_on_the_last_pixel() {
    let terminal = flushlab_terminals::emulators::Terminal::Xterm;
    let mut new = plan(&["./new"]);
    new.terminal = Some(crate::plan::for_tests::in_terminal(terminal));
    let scratch = exported(&mut new);
    let mut against = crate::plan::for_tests::against(&["./old"], Until::Rounds(3));
    if let crate::plan::Old::Build(old) = &mut against.old {
        old.terminal = new.terminal.clone();
    }
    let mut mock = Mock::new(builds(10.0, 10.0));
    let outcome = against::run(&new, &against, &keys(), None, &mut mock, &NO_SIGNAL).unwrap();
    assert!(matches!(outcome.exit_code(), 0 | 5), "the same build");
    assert!(mock.asked.iter().all(|a| a.terminal == Some(terminal)));
    let report = read_exported(&scratch);
    let verdict = &report["against"];
    assert_eq!(verdict["measure"], "key-to-last-pixel", "{report}");
    assert!(verdict["ratio"]["estimate"].as_f64().is_some(), "{report}");
    let stages: Vec<&str> = verdict["stages"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|s| s["stage"].as_str())
        .collect();
    assert!(
        stages.contains(&"paint") && !stages.contains(&"drain"),
        "{stages:?}"
    );
    assert_eq!(report["new_runs"][0]["terminal"], "xterm", "{report}");
}

/// `--compare frame --terminal xterm`: each round in the terminal as is then tried, then
/// headless as is then tried; the answer, key to last pixel p50, tried over as is, and the
/// headless key to frame beside it.
#[test]
fn compare_in_a_terminal_alternates_terminal_and_headless_sides_and_answers_on_the_last_pixel() {
    let terminal = flushlab_terminals::emulators::Terminal::Xterm;
    let mut plan = plan(&["./tui"]);
    let scratch = exported(&mut plan);
    let mut mock = Mock::new(|a: &Asked, _| {
        Ok(match (a.terminal, a.fix) {
            (Some(_), None) => Gives::keys(30.0, 40.0),
            (Some(_), Some(_)) => Gives::keys(30.0, 10.0),
            (None, None) => Gives::keys(30.0, 20.0),
            (None, Some(_)) => Gives::keys(30.0, 10.0),
        })
    });
    let outcome = super::pixel_compare::run(
        &plan,
        comparing(Fix::Frame, 3),
        terminal,
        &keys(),
        &mut mock,
        &NO_SIGNAL,
    )
    .unwrap();
    assert_eq!(outcome.exit_code(), 0);
    let sides: Vec<(Option<_>, Option<Fix>)> =
        mock.asked.iter().map(|a| (a.terminal, a.fix)).collect();
    let round = [
        (Some(terminal), None),
        (Some(terminal), Some(Fix::Frame)),
        (None, None),
        (None, Some(Fix::Frame)),
    ];
    assert_eq!(sides, round.repeat(3));
    let report = read_exported(&scratch);
    let estimate = |name: &str| report[name]["estimate"].as_f64().unwrap();
    // The last pixel 5 ms after the frame: (10 + 5) / (40 + 5).
    assert!(
        (estimate("last_pixel_p50") - 1.0 / 3.0).abs() < 1e-9,
        "{report}"
    );
    assert!(
        (estimate("first_pixel_p50") - 0.25).abs() < 1e-9,
        "{report}"
    );
    assert!(
        (estimate("headless_key_to_frame_p50") - 0.5).abs() < 1e-9,
        "{report}"
    );
    assert_eq!(report["as_is"].as_array().unwrap().len(), 3);
    assert_eq!(report["headless_tried"].as_array().unwrap().len(), 3);
}
