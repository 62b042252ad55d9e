//! The line both key→pixel probes end with, as scripts/pixel-probe.sh reads it.

/// How many keys changed the window, and the p50/p95 of key→first and key→last pixel, in ms.
pub fn summary(keys: usize, first: &mut [f64], last: &mut [f64]) -> String {
    format!(
        "probe: {} of {keys} keys answered; key→first pixel p50 {:.2} p95 {:.2} ms; key→last pixel p50 {:.2} p95 {:.2} ms",
        last.len(),
        rank(first, 0.50),
        rank(first, 0.95),
        rank(last, 0.50),
        rank(last, 0.95),
    )
}

/// The `q`-th quantile by flushlab's one meaning of a percentile (the nearest rank), NaN for
/// none.
pub fn rank(values: &mut [f64], q: f64) -> f64 {
    values.sort_by(f64::total_cmp);
    if values.is_empty() {
        return f64::NAN;
    }
    flushlab_core::statistics::percentile(values, q)
}
