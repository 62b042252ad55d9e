//! Summaries of repeated runs.

use serde::{Deserialize, Serialize};

/// Median, minimum and maximum of a set of runs.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Spread {
    pub median: f64,
    pub min: f64,
    pub max: f64,
}

impl Spread {
    /// `None` for no values. The median of an even count is the mean of the middle two.
    pub fn of(values: impl IntoIterator<Item = f64>) -> Option<Spread> {
        let mut v: Vec<f64> = values.into_iter().filter(|x| x.is_finite()).collect();
        if v.is_empty() {
            return None;
        }
        v.sort_by(f64::total_cmp);
        let mid = v.len() / 2;
        let median = if v.len() % 2 == 1 {
            v[mid]
        } else {
            (v[mid - 1] + v[mid]) / 2.0
        };
        Some(Spread {
            median,
            min: v[0],
            max: v[v.len() - 1],
        })
    }
}

impl Spread {
    /// The spread of what `figure` gives for each run that has it.
    pub fn of_each<T>(runs: &[T], figure: impl Fn(&T) -> Option<f64>) -> Option<Spread> {
        Spread::of(runs.iter().filter_map(figure))
    }

    /// `figure` of `over`'s run over `under`'s, round by round (the i-th of each ran in the
    /// same round, beside the same load): a pair where either figure is unknown, or the ratio
    /// is not finite, is left out.
    pub fn of_ratios<T>(
        over: &[T],
        under: &[T],
        figure: impl Fn(&T) -> Option<f64>,
    ) -> Option<Spread> {
        Spread::of(
            over.iter()
                .zip(under)
                .filter_map(|(o, u)| Some(figure(o)? / figure(u)?)),
        )
    }

    /// Fastest over slowest run: 1.0 when every run agreed.
    pub fn ratio(&self) -> f64 {
        if self.min > 0.0 {
            self.max / self.min
        } else {
            f64::INFINITY
        }
    }
}

/// How far apart a row's fastest and slowest run may be before the bench warns that the
/// machine was too noisy to trust differences of that size.
pub const NOISY: f64 = 1.25;

/// The median alone, for figures that do not need their spread in the table.
pub fn median(values: impl IntoIterator<Item = f64>) -> Option<f64> {
    Spread::of(values).map(|s| s.median)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spreads() {
        assert_eq!(
            Spread::of([3.0, 1.0, 2.0]),
            Some(Spread {
                median: 2.0,
                min: 1.0,
                max: 3.0
            })
        );
        assert_eq!(Spread::of([4.0, 1.0, 2.0, 3.0]).unwrap().median, 2.5);
        assert_eq!(Spread::of([]), None);
        assert_eq!(median([f64::NAN, 5.0]), Some(5.0));
    }

    #[test]
    fn ratios_go_round_by_round_and_skip_what_is_unknown() {
        let over = [Some(4.0), None, Some(9.0), Some(1.0)];
        let under = [Some(2.0), Some(1.0), Some(3.0), Some(0.0)];
        let s = Spread::of_ratios(&over, &under, |x| *x).unwrap();
        assert_eq!((s.median, s.min, s.max), (2.5, 2.0, 3.0));
        assert_eq!(Spread::of_ratios(&over[1..2], &under, |x| *x), None);
    }
}
