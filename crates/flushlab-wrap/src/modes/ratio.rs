//! The one ratio every comparison answers with: a figure tried over as is (NEW over OLD), the
//! rounds' trimmed geometric mean and its 95% bootstrap interval (`Ratio::of_rounds`, the
//! statistic `--against` decides on), and how the summary says it.

use flushlab_core::statistics::verdict::Ratio;

/// `figure` tried over as is (NEW over OLD) from each round's pair, where both sides have it:
/// `--against`'s statistic (its verdict's ratio, looked at once), so that no two statistics
/// answer "how much faster". The one ratio every comparison prints and exports.
pub fn tried_over_as_is<R>(
    as_is: &[R],
    tried: &[R],
    figure: impl Fn(&R) -> Option<f64>,
) -> Option<Ratio> {
    let rounds: Vec<(f64, f64)> = as_is
        .iter()
        .zip(tried)
        .filter_map(|(a, t)| Some((figure(a)?, figure(t)?)))
        .collect();
    Ratio::of_rounds(&rounds)
}

/// Which way a figure is better: a time lower, a rate higher.
#[derive(Clone, Copy, Debug)]
pub enum Better {
    Lower,
    Higher,
}

/// A tried-over-as-is ratio as the summary says it: the estimate, its interval and how many
/// times faster or slower (neither where the interval holds 1); unknown under three rounds.
pub fn answered(ratio: Option<Ratio>, better: Better) -> String {
    ratio.map_or("unknown (an interval needs 3 rounds)".to_owned(), |r| {
        let faster = match better {
            Better::Lower => 1.0 / r.estimate,
            Better::Higher => r.estimate,
        };
        let how = if r.low <= 1.0 && r.high >= 1.0 {
            "its interval holds ×1: no difference shown".to_owned()
        } else if faster >= 1.0 {
            format!("{faster:.1} times faster")
        } else {
            format!("{:.1} times slower", 1.0 / faster)
        };
        format!("×{:.3} (×{:.3}–×{:.3}), {how}", r.estimate, r.low, r.high)
    })
}
