//! Two builds, one verdict (`wrap --against`): a figure of NEW over OLD, round by round, with
//! an interval from resampling the rounds, and what it says against a threshold. Pure: tested
//! on figures written by hand.
//!
//! Each round runs both builds (ABBA), so a round's ratio NEW/OLD has both sides on the machine
//! as it was then; keys within a run share its phase against any tick, so they are not
//! independent draws and the round, not the key, is what is resampled. The estimate is the
//! geometric mean of the rounds' ratios (a ratio and its inverse weigh the same), trimmed of
//! its highest and lowest tenth (a round in which the shared machine stalled one build moves a
//! plain mean far: seen here, ×0.81 and ×2.05 among rounds of ×1.1), the interval the 2.5th and
//! 97.5th percentiles of that trimmed mean over [`RESAMPLES`] resamplings of the rounds with
//! replacement (a bootstrap), drawn from a fixed seed: the same rounds give the same interval.

use serde::{Deserialize, Serialize};

use crate::statistics::{median, percentile};

/// Resamplings of the rounds for an interval.
pub const RESAMPLES: usize = 4000;

/// Rounds under which no interval is drawn: a resampling of fewer says little.
pub const FEWEST_ROUNDS: usize = 3;

/// Rounds under which a comparison's verdict is inconclusive whatever its interval says: ABBA
/// cancels a drift of the machine only over pairs of rounds, and a resampling of three to five
/// rounds draws an interval hardly wider than their spread — the same build against itself in
/// xterm on a busy CI machine, three rounds: ×1.32 (×1.15–×1.66), which would have said "slower".
pub const DECISIVE_ROUNDS: usize = 6;

/// The chance, over every look a comparison takes together, that its verdict of slower, faster
/// or the same is wrong: a 95% interval when it looks once.
pub const ALPHA: f64 = 0.05;

/// The rounds after which a comparison that runs until it knows looks at its interval: the
/// first at [`DECISIVE_ROUNDS`], each later one about half again as many rounds (a look adds
/// little until the interval has had time to narrow, and each look costs every look width).
pub const LOOKS: [usize; 7] = [6, 10, 16, 24, 34, 46, 60];

/// When a comparison looks at its rounds, and at what level: α shared equally among the looks
/// (Bonferroni). However the looks depend on each other — each holds the rounds of the one
/// before — the chance that any look's interval misses the truth is at most the sum of their
/// levels, α; the price is intervals a third wider than one look's at 95%.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Looks {
    /// The rounds after which it looks, in order; the last is the budget's.
    pub after: Vec<usize>,
    /// The error rate over them all.
    pub alpha: f64,
}

impl Looks {
    /// One look, after `rounds`: the whole α on it (`--rounds N`).
    pub fn fixed(rounds: usize) -> Looks {
        Looks {
            after: vec![rounds],
            alpha: ALPHA,
        }
    }

    /// The looks of [`LOOKS`] before `max_rounds`, and one at `max_rounds` (which a time budget
    /// may bring forward: a last look taken early replaces the scheduled ones it never reaches,
    /// so the count, and each look's level, still hold).
    pub fn until_decisive(max_rounds: usize) -> Looks {
        let mut after: Vec<usize> = LOOKS.into_iter().filter(|&r| r < max_rounds).collect();
        after.push(max_rounds);
        Looks {
            after,
            alpha: ALPHA,
        }
    }

    /// Each look's level: the chance its interval misses.
    pub fn level(&self) -> f64 {
        self.alpha / self.after.len() as f64
    }

    /// Whether it looks after `rounds` rounds.
    pub fn after(&self, rounds: usize) -> bool {
        self.after.contains(&rounds)
    }

    /// The rounds of its last look: the most it runs.
    pub fn most(&self) -> usize {
        self.after.last().copied().unwrap_or(0)
    }

    /// Where these rounds stop, looked at as a run that runs until it knows looks at them: the
    /// first look whose verdict is slower, faster or the same, and its rounds; else
    /// inconclusive at the last look the rounds reach. What a run does, replayed on rounds
    /// already measured.
    pub fn replay(&self, rounds: &[(f64, f64)], threshold: f64) -> (Verdict, usize) {
        let mut last = (Verdict::Inconclusive, 0);
        for &n in self.after.iter().filter(|&&n| n <= rounds.len()) {
            let interval = Ratio::of_rounds_at(&rounds[..n], self.level());
            last = (Verdict::of_rounds(interval, n, threshold), n);
            if last.0 != Verdict::Inconclusive {
                break;
            }
        }
        last
    }

    /// The interval's confidence at each look, for a summary: `95%`, `99.3%`.
    pub fn confidence(&self) -> String {
        let percent = 100.0 * (1.0 - self.level());
        if percent.fract().abs() < 1e-9 {
            format!("{percent:.0}%")
        } else {
            format!("{percent:.1}%")
        }
    }
}

/// A ratio, NEW over OLD, and its interval (95% unless said).
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct Ratio {
    pub estimate: f64,
    pub low: f64,
    pub high: f64,
}

/// What an interval says against a threshold.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Verdict {
    /// The whole interval above 1 + threshold.
    Slower,
    /// The whole interval below 1 − threshold.
    Faster,
    /// The whole interval within 1 ± threshold.
    Same,
    /// None of these.
    Inconclusive,
}

impl Verdict {
    pub fn name(self) -> &'static str {
        match self {
            Verdict::Slower => "slower",
            Verdict::Faster => "faster",
            Verdict::Same => "same",
            Verdict::Inconclusive => "inconclusive",
        }
    }

    /// The verdict of `rounds` rounds whose ratio is `interval` (`None`: too few had both
    /// figures): inconclusive under [`DECISIVE_ROUNDS`] whatever the interval, else [`Verdict::of`].
    pub fn of_rounds(interval: Option<Ratio>, rounds: usize, threshold: f64) -> Verdict {
        match interval {
            Some(interval) if rounds >= DECISIVE_ROUNDS => Verdict::of(interval, threshold),
            _ => Verdict::Inconclusive,
        }
    }

    /// `interval` (NEW over OLD) against 1 ± `threshold`.
    pub fn of(interval: Ratio, threshold: f64) -> Verdict {
        if interval.low > 1.0 + threshold {
            Verdict::Slower
        } else if interval.high < 1.0 - threshold {
            Verdict::Faster
        } else if interval.low >= 1.0 - threshold && interval.high <= 1.0 + threshold {
            Verdict::Same
        } else {
            Verdict::Inconclusive
        }
    }
}

impl Ratio {
    /// NEW over OLD from each round's (old, new) figures; `None` with fewer than
    /// [`FEWEST_ROUNDS`] rounds that have both (a figure of 0 or not finite has none).
    pub fn of_rounds(rounds: &[(f64, f64)]) -> Option<Ratio> {
        Ratio::of_rounds_at(rounds, ALPHA)
    }

    /// [`Ratio::of_rounds`] with an interval that misses the truth with chance `level`.
    pub fn of_rounds_at(rounds: &[(f64, f64)], level: f64) -> Option<Ratio> {
        let logs: Vec<f64> = rounds
            .iter()
            .filter(|(old, new)| *old > 0.0 && *new > 0.0 && old.is_finite() && new.is_finite())
            .map(|(old, new)| (new / old).ln())
            .collect();
        if logs.len() < FEWEST_ROUNDS {
            return None;
        }
        let estimate = trimmed_mean(logs.clone()).exp();
        let mut rng = XorShift(0x9e37_79b9_7f4a_7c15);
        // A resampling is a count of each round; walked in the rounds' sorted order, its trimmed
        // mean needs no sort (a stopping rule replayed looks thousands of times).
        let mut order: Vec<usize> = (0..logs.len()).collect();
        order.sort_by(|&a, &b| logs[a].total_cmp(&logs[b]));
        let mut counts = vec![0usize; logs.len()];
        let mut means: Vec<f64> = (0..RESAMPLES)
            .map(|_| {
                counts.fill(0);
                for _ in 0..logs.len() {
                    counts[rng.below(logs.len())] += 1;
                }
                trimmed_mean_of_counts(&logs, &order, &counts)
            })
            .collect();
        means.sort_by(f64::total_cmp);
        let at = |q: f64| percentile(&means, q).exp();
        Some(Ratio {
            estimate,
            low: at(level / 2.0),
            high: at(1.0 - level / 2.0),
        })
    }
}

/// The mean without the highest and lowest tenth (none of fewer than ten).
fn trimmed_mean(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    let cut = v.len() / 10;
    let kept = &v[cut..v.len() - cut];
    kept.iter().sum::<f64>() / kept.len() as f64
}

/// [`trimmed_mean`] of a resampling: `counts[i]` draws of `values[i]`, walked in `order` (the
/// values' indices, sorted by value).
fn trimmed_mean_of_counts(values: &[f64], order: &[usize], counts: &[usize]) -> f64 {
    let n = values.len();
    let cut = n / 10;
    let (mut seen, mut sum) = (0, 0.0);
    for &i in order {
        // The draws of this value that fall between the cut ends.
        let (from, to) = (seen, seen + counts[i]);
        let kept = to.min(n - cut).saturating_sub(from.max(cut));
        sum += kept as f64 * values[i];
        seen = to;
    }
    sum / (n - 2 * cut) as f64
}

/// A small deterministic generator (xorshift64*): the interval of the same rounds is the same.
struct XorShift(u64);

impl XorShift {
    fn below(&mut self, n: usize) -> usize {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        (self.0.wrapping_mul(0x2545_f491_4f6c_dd1d) >> 33) as usize % n
    }
}

/// A stage's p50 over the rounds, old and new (medians of the rounds), and its ratio.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct StageChange {
    pub old_ms: f64,
    pub new_ms: f64,
    pub ratio: Option<Ratio>,
    /// What the ratio says, where the stage is large enough to say anything: `None` where both
    /// sides are under [`STAGE_FLOOR_MS`] (a drain of 0.01 → 0.04 ms is not "×4 slower").
    pub verdict: Option<Verdict>,
}

/// A stage this short on both sides has no ratio worth a verdict.
pub const STAGE_FLOOR_MS: f64 = 0.1;

impl StageChange {
    /// From each round's (old, new) p50 of the stage.
    pub fn of_rounds(rounds: &[(f64, f64)], threshold: f64) -> Option<StageChange> {
        let (old_ms, new_ms) = (
            median(rounds.iter().map(|r| r.0))?,
            median(rounds.iter().map(|r| r.1))?,
        );
        let ratio = Ratio::of_rounds(rounds);
        let large = old_ms.max(new_ms) >= STAGE_FLOOR_MS;
        Some(StageChange {
            old_ms,
            new_ms,
            ratio,
            verdict: ratio.filter(|_| large).map(|r| Verdict::of(r, threshold)),
        })
    }
}

/// The stage that moved most, among those whose verdict is slower or faster: its name, its
/// change, in the words of a summary ("emit ×4.1 slower; processing the same").
pub fn moved<'a>(stages: &[(&'a str, StageChange)]) -> Option<(&'a str, StageChange)> {
    stages
        .iter()
        .filter(|(_, s)| matches!(s.verdict, Some(Verdict::Slower | Verdict::Faster)))
        .max_by(|a, b| {
            let size = |s: &StageChange| s.ratio.map_or(0.0, |r| r.estimate.ln().abs());
            size(&a.1).total_cmp(&size(&b.1))
        })
        .copied()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rounds(old: f64, ratios: &[f64]) -> Vec<(f64, f64)> {
        ratios.iter().map(|r| (old, old * r)).collect()
    }

    #[test]
    fn an_interval_from_the_rounds_holds_their_ratio() {
        let r = Ratio::of_rounds(&rounds(10.0, &[1.2; 10])).unwrap();
        assert!((r.estimate - 1.2).abs() < 1e-9 && (r.low - 1.2).abs() < 1e-9);
        assert!((r.high - 1.2).abs() < 1e-9);
        let noisy = [1.1, 1.3, 1.2, 1.25, 1.15, 1.2, 1.22, 1.18, 1.3, 1.1];
        let r = Ratio::of_rounds(&rounds(10.0, &noisy)).unwrap();
        assert!(r.low < r.estimate && r.estimate < r.high, "{r:?}");
        assert!(r.low > 1.1 && r.high < 1.3, "{r:?}");
        // The same rounds, the same interval.
        assert_eq!(Ratio::of_rounds(&rounds(10.0, &noisy)), Some(r));
        // The old side's level does not matter, only the ratio.
        let r2 = Ratio::of_rounds(&rounds(3.0, &noisy)).unwrap();
        assert!((r2.low - r.low).abs() < 1e-9);
    }

    #[test]
    fn one_stalled_round_in_ten_moves_the_estimate_little() {
        let mut ratios = vec![1.1; 10];
        ratios[3] = 2.05;
        let r = Ratio::of_rounds(&rounds(10.0, &ratios)).unwrap();
        assert!((r.estimate - 1.1).abs() < 1e-9, "{r:?}");
    }

    #[test]
    fn too_few_rounds_or_figures_give_no_interval() {
        assert_eq!(Ratio::of_rounds(&rounds(10.0, &[1.2, 1.3])), None);
        assert_eq!(
            Ratio::of_rounds(&[(0.0, 1.0), (1.0, f64::NAN), (1.0, 0.0), (2.0, 2.0)]),
            None
        );
    }

    #[test]
    fn the_threshold_decides_what_an_interval_says() {
        let at = |low, high| {
            Verdict::of(
                Ratio {
                    estimate: (low + high) / 2.0,
                    low,
                    high,
                },
                0.05,
            )
        };
        assert_eq!(at(1.10, 1.30), Verdict::Slower);
        assert_eq!(at(0.70, 0.90), Verdict::Faster);
        assert_eq!(at(0.97, 1.04), Verdict::Same);
        // Above 1 but not beyond the threshold, or across it: neither.
        assert_eq!(at(1.02, 1.20), Verdict::Inconclusive);
        assert_eq!(at(0.90, 1.10), Verdict::Inconclusive);
        assert_eq!(at(1.04, 1.06), Verdict::Inconclusive);
    }

    #[test]
    fn the_stage_that_moved_is_named_and_small_ones_never() {
        let emit = StageChange::of_rounds(&rounds(2.0, &[4.0, 4.2, 3.9, 4.1, 4.0]), 0.05).unwrap();
        let processing =
            StageChange::of_rounds(&rounds(3.0, &[1.0, 1.01, 0.99, 1.0, 1.0]), 0.05).unwrap();
        let drain = StageChange::of_rounds(&rounds(0.01, &[4.0; 5]), 0.05).unwrap();
        assert_eq!(emit.verdict, Some(Verdict::Slower));
        assert_eq!(processing.verdict, Some(Verdict::Same));
        assert_eq!(drain.verdict, None, "0.01 → 0.04 ms is no change");
        let stages = [("processing", processing), ("emit", emit), ("drain", drain)];
        assert_eq!(moved(&stages).map(|m| m.0), Some("emit"));
        assert_eq!(moved(&stages[..1]), None);
    }

    #[test]
    fn a_resampling_counted_has_the_trimmed_mean_of_its_draws() {
        let values: [f64; 12] = [
            0.3, -0.1, 0.7, 0.2, 0.0, 0.9, -0.4, 0.1, 0.5, 0.6, 0.05, -0.2,
        ];
        let mut order: Vec<usize> = (0..values.len()).collect();
        order.sort_by(|&a, &b| values[a].total_cmp(&values[b]));
        let mut rng = XorShift(7);
        for _ in 0..100 {
            let mut counts = vec![0; values.len()];
            let mut drawn = Vec::new();
            for _ in 0..values.len() {
                let i = rng.below(values.len());
                counts[i] += 1;
                drawn.push(values[i]);
            }
            let counted = trimmed_mean_of_counts(&values, &order, &counts);
            assert!((counted - trimmed_mean(drawn)).abs() < 1e-12);
        }
    }

    /// Rounds measured on this kind of machine: one build of tests/corpus/stages.c against
    /// itself beside a CPU burner (`KEEP=DIR scripts/against-noise.sh`), each round's key→frame
    /// p50, OLD and NEW (ms): stalls and all.
    const RECORDED: &str = include_str!("testdata/against-rounds-beside-a-burner.json");

    /// How often the stopping rule says `verdict` when NEW is truly `truth` times OLD: `replays`
    /// runs, each of rounds drawn from the recorded rounds' ratios (centred on their trimmed
    /// mean, then shifted to `truth`), each run as `wrap --against` would run it by default.
    fn replayed(looks: &Looks, truth: f64, verdict: Verdict, replays: usize) -> usize {
        let recorded: Vec<(f64, f64)> = serde_json::from_str(RECORDED).unwrap();
        let logs: Vec<f64> = recorded.iter().map(|(o, n)| (n / o).ln()).collect();
        let centre = trimmed_mean(logs.clone());
        let mut rng = XorShift(0x5eed);
        (0..replays)
            .filter(|_| {
                let rounds: Vec<(f64, f64)> = (0..looks.most())
                    .map(|_| {
                        let log = logs[rng.below(logs.len())] - centre + truth.ln();
                        (1.0, log.exp())
                    })
                    .collect();
                looks.replay(&rounds, 0.05).0 == verdict
            })
            .count()
    }

    /// On the band's edge, the rule's errors stay within α however often it looks: ×1.05 is
    /// called slower, and ×1.08 the same, in at most α of the replays (7 and 1 of 200 with the
    /// rounds recorded). The same looks each at 95%, uncorrected, call ×1.05 slower in 19 of
    /// 200: the test tells the two apart. And the rule decides what it should: ×1.0 the same,
    /// ×1.08 slower in most replays, within the budget.
    #[test]
    fn rounds_replayed_on_the_bands_edge_err_within_alpha() {
        let replays = 200;
        let most = (ALPHA * replays as f64) as usize;
        let rule = Looks::until_decisive(60);
        let slower = replayed(&rule, 1.05, Verdict::Slower, replays);
        assert!(
            slower <= most,
            "×1.05 called slower in {slower} of {replays}"
        );
        let same = replayed(&rule, 1.08, Verdict::Same, replays);
        assert!(same <= most, "×1.08 called the same in {same} of {replays}");
        let uncorrected = Looks {
            after: LOOKS.to_vec(),
            alpha: ALPHA * LOOKS.len() as f64,
        };
        let naive = replayed(&uncorrected, 1.05, Verdict::Slower, replays);
        assert!(
            naive > most,
            "looks at 95% each: ×1.05 slower in {naive} of {replays}"
        );
        assert!(replayed(&rule, 1.0, Verdict::Same, replays) > replays * 9 / 10);
        assert!(replayed(&rule, 1.08, Verdict::Slower, replays) > replays * 3 / 4);
    }

    #[test]
    fn the_looks_share_alpha_and_end_at_the_budget() {
        let looks = Looks::until_decisive(60);
        assert_eq!(looks.after, LOOKS);
        assert!((looks.level() - ALPHA / 7.0).abs() < 1e-12);
        assert_eq!(looks.confidence(), "99.3%");
        assert_eq!(Looks::until_decisive(20).after, [6, 10, 16, 20]);
        assert_eq!(Looks::fixed(10).confidence(), "95%");
        // A clear regression decides at the first look; noise on one never says slower.
        let slower: Vec<(f64, f64)> = (0..60)
            .map(|i| (1.0, 1.2 + 0.01 * (i % 3) as f64))
            .collect();
        assert_eq!(looks.replay(&slower, 0.05), (Verdict::Slower, 6));
    }
}
