//! Summaries of repeated runs.

use serde::{Deserialize, Serialize};

pub mod verdict;

/// Median, minimum and maximum of a set of runs.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Spread {
    pub median: f64,
    pub min: f64,
    pub max: f64,
}

/// The one meaning of a percentile in flushlab, wherever a p50 or a p95 is printed or exported
/// (a key's times, a run's median, a histogram's): the nearest rank. The `q`-th quantile of `n`
/// sorted values is the ⌈q·n⌉-th of them, counting from 1 (the first for `q` = 0): every
/// percentile is a value that was measured, and the p50 of an even count is the lower of the
/// middle two. `n` ≥ 1.
pub fn rank(q: f64, n: usize) -> usize {
    ((q.clamp(0.0, 1.0) * n as f64).ceil() as usize).clamp(1, n)
}

/// The `q`-th quantile of `sorted` (ascending, not empty) by [`rank`].
pub fn percentile(sorted: &[f64], q: f64) -> f64 {
    sorted[rank(q, sorted.len()) - 1]
}

impl Spread {
    /// `None` for no values. The median is the p50 of [`rank`].
    pub fn of(values: impl IntoIterator<Item = f64>) -> Option<Spread> {
        let mut v: Vec<f64> = values.into_iter().filter(|x| x.is_finite()).collect();
        if v.is_empty() {
            return None;
        }
        v.sort_by(f64::total_cmp);
        Some(Spread {
            median: percentile(&v, 0.5),
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
        // The nearest rank: of an even count, the lower middle value, one that was measured.
        assert_eq!(Spread::of([4.0, 1.0, 2.0, 3.0]).unwrap().median, 2.0);
        assert_eq!(Spread::of([]), None);
        assert_eq!(median([f64::NAN, 5.0]), Some(5.0));
    }

    #[test]
    fn a_percentile_is_the_nearest_rank() {
        let v = [1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0, 10.0];
        assert_eq!(percentile(&v, 0.5), 5.0);
        assert_eq!(percentile(&v, 0.95), 10.0);
        assert_eq!(percentile(&v, 0.9), 9.0);
        assert_eq!(percentile(&v, 0.0), 1.0);
        assert_eq!(percentile(&[7.0], 0.95), 7.0);
        assert_eq!((rank(0.5, 3), rank(0.5, 4), rank(1.0, 4)), (2, 2, 4));
    }
}
