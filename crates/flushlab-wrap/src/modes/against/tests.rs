//! `--against`'s verdict and table, on rounds written by hand.

use super::*;
use crate::modes::rounds::Stopped;
use crate::plan::Until;
use flushlab_core::detect::keyed::Stage;
use flushlab_core::statistics::verdict::Looks;
use flushlab_core::statistics::verdict::{DECISIVE_ROUNDS, Verdict};

fn figures(p50: f64, emit: f64) -> RunFigures {
    RunFigures {
        key_to_frame_p50_ms: Some(p50),
        key_to_frame_p95_ms: Some(p50 * 1.5),
        stages_p50_ms: vec![
            (Stage::Processing, p50 - emit),
            (Stage::Emit, emit),
            (Stage::Drain, 0.01),
        ],
        answered: 10,
        keys: 10,
        bytes_per_key: 1000.0,
        exit_code: Some(0),
        flashed: None,
    }
}

/// Each round's (old key→frame p50, its emit) and (new's, its emit).
type Pair = ((f64, f64), (f64, f64));

fn rounds(pairs: &[Pair]) -> Vec<Round> {
    pairs
        .iter()
        .enumerate()
        .map(|(i, &((o, oe), (n, ne)))| Round {
            round: i as u32 + 1,
            order: [Build::Old, Build::New],
            old: figures(o, oe),
            new: figures(n, ne),
        })
        .collect()
}

/// The summary's table of a verdict over `rounds`, with no runs beside it.
fn table_of(against: AgainstVerdict, rounds: Vec<Round>) -> String {
    Against {
        against,
        rounds,
        old_runs: vec![],
        new_runs: vec![],
        stored: None,
    }
    .table("./new", (80, 24), &Until::Rounds(10))
}

fn verdict(rounds: &[Round]) -> AgainstVerdict {
    let words = vec!["x".to_owned()];
    let looks = Looks::fixed(rounds.len());
    AgainstVerdict::of(
        rounds,
        (0.05, Measure::KeyToFrame),
        (&looks, Stopped::Rounds),
        (&words, &words),
    )
}

/// Too few rounds for a verdict: whatever the interval, inconclusive, and said why.
#[test]
fn fewer_rounds_than_a_verdict_needs_are_inconclusive() {
    let r = rounds(&[((5.0, 1.0), (8.0, 4.0)); DECISIVE_ROUNDS - 1]);
    let v = verdict(&r);
    assert!(v.ratio.is_some_and(|ratio| ratio.low > 1.05));
    assert_eq!(v.verdict, Some(Verdict::Inconclusive));
    let table = table_of(v, r);
    assert!(table.contains("needs 6 rounds or more"), "{table}");
    let v = verdict(&rounds(&[((5.0, 1.0), (8.0, 4.0)); DECISIVE_ROUNDS]));
    assert_eq!(v.verdict, Some(Verdict::Slower));
}

#[test]
fn a_slower_emit_is_slower_and_named() {
    let r = rounds(&[((5.0, 1.0), (8.0, 4.0)); 10]);
    let v = verdict(&r);
    assert_eq!(v.verdict, Some(Verdict::Slower));
    assert_eq!(v.moved, Some(Stage::Emit));
    assert_eq!(v.outcome().exit_code(), 4);
    let drain = v
        .stages
        .iter()
        .find(|s| s.stage == Stage::Drain)
        .unwrap()
        .change;
    assert_eq!(drain.verdict, None, "0.01 ms either way is no change");
    let table = table_of(v, r);
    assert!(
        table.contains("slower") && table.contains("emit moved"),
        "{table}"
    );
}

#[test]
fn noise_around_one_is_the_same_and_exits_0() {
    let noise = [1.0, 1.01, 0.99, 1.02, 0.98, 1.0, 1.01, 0.99, 1.0, 1.0];
    let r: Vec<Round> = rounds(
        &noise
            .iter()
            .map(|&k| ((5.0, 1.0), (5.0 * k, 1.0)))
            .collect::<Vec<_>>(),
    );
    let v = verdict(&r);
    assert_eq!(v.verdict, Some(Verdict::Same));
    assert_eq!(v.moved, None);
    assert_eq!(v.outcome().exit_code(), 0);
}

#[test]
fn a_crash_or_an_unanswered_build_gives_no_verdict_and_never_0() {
    let mut r = rounds(&[((5.0, 1.0), (5.0, 1.0)); 10]);
    r[1].new.exit_code = Some(139);
    let v = verdict(&r);
    assert_eq!(v.verdict, None);
    assert!(
        v.no_verdict
            .as_deref()
            .unwrap()
            .contains("NEW exited 139 in round 2")
    );
    assert_eq!(v.outcome().exit_code(), 1);
    let mut r = rounds(&[((5.0, 1.0), (5.0, 1.0)); 10]);
    r[0].old.key_to_frame_p50_ms = None;
    assert!(
        verdict(&r)
            .no_verdict
            .unwrap()
            .contains("OLD answered none")
    );
}

#[test]
fn answering_with_less_is_never_faster() {
    let mut r = rounds(&[((5.0, 1.0), (2.0, 0.5)); 10]);
    for round in &mut r {
        round.new.bytes_per_key = 100.0;
    }
    let v = verdict(&r);
    assert_eq!(v.verdict, Some(Verdict::Inconclusive));
    assert!(v.answers_with_less.is_some() && v.draws_more.is_none());
    assert_eq!(v.outcome().exit_code(), 5);
}

#[test]
fn drawing_more_is_said_and_the_verdict_stands() {
    let mut r = rounds(&[((5.0, 1.0), (8.0, 4.0)); 10]);
    for round in &mut r {
        round.old.bytes_per_key = 100.0;
    }
    let v = verdict(&r);
    assert_eq!(v.verdict, Some(Verdict::Slower));
    assert!(v.answers_with_less.is_none());
    assert!(
        v.draws_more
            .as_deref()
            .is_some_and(|m| m.contains("10 of 10 rounds")),
        "{:?}",
        v.draws_more
    );
}

#[test]
fn the_markdown_is_a_table_with_its_rule() {
    let r = rounds(&[((5.0, 1.0), (8.0, 4.0)); 10]);
    let a = Against {
        against: verdict(&r),
        rounds: r,
        old_runs: vec![],
        new_runs: vec![],
        stored: None,
    };
    let md = a.markdown(&a.table("./new", (80, 24), &Until::Rounds(10)));
    assert!(md.starts_with("### wrap --against"), "{md}");
    let lines: Vec<&str> = md.lines().collect();
    let header = lines.iter().position(|l| l.starts_with("| build")).unwrap();
    assert!(lines[header + 1].starts_with("|---"), "{md}");
    assert!(md.contains("stopped after 10 round(s)"), "{md}");
}

/// `--compare` answers "how much faster" with `--against`'s statistic: on the same recorded
/// rounds the two give the same estimate and interval, bit for bit (the bootstrap's seed is
/// fixed), at the p50 (the verdict's) and the p95.
#[test]
fn compare_and_against_give_one_answer_on_the_same_rounds() {
    let pairs = [
        ((5.0, 1.0), (4.1, 0.2)),
        ((5.3, 1.1), (4.0, 0.2)),
        ((4.9, 0.9), (4.4, 0.3)),
        ((5.6, 1.2), (3.9, 0.2)),
        ((5.2, 1.0), (4.2, 0.3)),
    ];
    let against = verdict(&rounds(&pairs));
    let bits = |r: flushlab_core::statistics::verdict::Ratio| {
        (r.estimate.to_bits(), r.low.to_bits(), r.high.to_bits())
    };
    let olds: Vec<f64> = pairs.iter().map(|&((o, _), _)| o).collect();
    let news: Vec<f64> = pairs.iter().map(|&(_, (n, _))| n).collect();
    let compare =
        |scale: f64| crate::modes::ratio::tried_over_as_is(&olds, &news, |x| Some(x * scale));
    assert!(compare(1.0).is_some());
    assert_eq!(against.ratio.map(bits), compare(1.0).map(bits));
    assert_eq!(against.p95_ratio.map(bits), compare(1.5).map(bits));
}

/// A round where either side's figure is unknown is left out; under three rounds with both
/// there is no ratio, and the summary says why.
#[test]
fn the_one_ratio_skips_unknown_rounds_and_needs_three() {
    use crate::modes::ratio;
    let as_is = [Some(10.0), None, Some(20.0), Some(40.0), Some(8.0)];
    let tried = [Some(5.0), Some(1.0), Some(10.0), Some(20.0), None];
    let r = ratio::tried_over_as_is(&as_is, &tried, |x| *x).unwrap();
    assert!((r.estimate - 0.5).abs() < 1e-12, "{r:?}");
    assert!((r.low, r.high) == (r.estimate, r.estimate), "{r:?}");
    assert_eq!(
        ratio::tried_over_as_is(&as_is[..3], &tried[..3], |x| *x),
        None
    );
    assert!(ratio::answered(None, ratio::Better::Lower).contains("3 rounds"));
    assert!(ratio::answered(Some(r), ratio::Better::Lower).ends_with("2.0 times faster"));
    assert!(ratio::answered(Some(r), ratio::Better::Higher).ends_with("2.0 times slower"));
    let even = ratio::tried_over_as_is(&[1.0, 1.0, 1.0], &[0.9, 1.1, 1.0], |x| Some(*x));
    assert!(ratio::answered(even, ratio::Better::Lower).ends_with("no difference shown"));
}

/// A build that flashes the screen where the old one did not is a regression at the same
/// speed, and ends the rounds once every round of enough says so; fewer flashes is said, and
/// leaves the exit to the time.
#[test]
fn flashing_more_is_a_regression_whatever_the_time_says() {
    let same: Vec<Pair> = vec![((10.0, 2.0), (10.0, 2.0)); DECISIVE_ROUNDS];
    let flashing = |old: u64, new: u64| {
        let mut r = rounds(&same);
        for round in &mut r {
            round.old.flashed = Some(old);
            round.new.flashed = Some(new);
        }
        r
    };
    let looks = Looks::until_decisive(40);
    let words: (&[String], &[String]) = (&[], &[]);
    let verdict = |r: &[Round]| {
        AgainstVerdict::of(
            r,
            (0.05, Measure::KeyToFrame),
            (&looks, Stopped::Decided),
            words,
        )
    };
    let worse = verdict(&flashing(0, 20));
    let flicker = worse.flicker.as_ref().unwrap();
    assert_eq!(flicker.verdict, verdict::FlickerVerdict::More);
    assert!(flicker.decisively_more() && worse.decides());
    assert_eq!(worse.outcome(), flushlab_core::outcome::Outcome::Slower);
    assert!(
        flicker.line().contains("NEW flickers more, in every round"),
        "{}",
        flicker.line()
    );
    let better = verdict(&flashing(20, 0));
    assert_eq!(
        better.flicker.as_ref().unwrap().verdict,
        verdict::FlickerVerdict::Less
    );
    assert_ne!(better.outcome(), flushlab_core::outcome::Outcome::Slower);
    assert!(verdict(&rounds(&same)).flicker.is_none());
}
