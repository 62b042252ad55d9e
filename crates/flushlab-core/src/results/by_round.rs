//! Rows compared round by round: each backend's fastest mode against the first backend's, and
//! each keyed program against the first (`bench --command … --keys`) with the interval and
//! verdict of `wrap --against` — the runs of one round saw the same machine.

use super::conditions::{Reader, Sink, Size};
use super::row::Row;
use crate::backend::BackendKind;
use crate::statistics::Spread;
use crate::statistics::verdict::{Looks, Ratio, Verdict};
use crate::subject::Subject;

/// Two backends' fastest modes compared round by round, at one size, sink and reader: the
/// ratio of medians in the table hides how far it swung from one round to the next.
#[derive(Clone, Debug, PartialEq)]
pub struct BackendRounds {
    pub size: Size,
    pub sink: Sink,
    pub reader: Reader,
    pub backend: BackendKind,
    /// This backend's fastest mode (by median), and the base backend's.
    pub fastest: Subject,
    pub base: BackendKind,
    pub base_fastest: Subject,
    /// `fastest`'s fps over `base_fastest`'s, run against run of the same round.
    pub ratio: Spread,
    /// `fastest`'s fps over the lower of its own backend's ceilings in the same round.
    pub to_ceiling: Option<Spread>,
    /// The rounds both rows were counted in.
    pub rounds: usize,
}

/// Two programs driven by the same keys (`bench --command … --keys`), compared round by round:
/// key→frame p50 of `subject` over `base`'s, run against run of the same round, with the
/// interval and verdict of `wrap --against` ([`crate::statistics::verdict`]).
#[derive(Clone, Debug, PartialEq)]
pub struct KeyedRounds {
    pub size: Size,
    pub sink: Sink,
    pub reader: Reader,
    pub base: Subject,
    pub subject: Subject,
    pub ratio: Option<Ratio>,
    /// Against [`KEYED_THRESHOLD`].
    pub verdict: Verdict,
    /// The rounds both rows were counted in.
    pub rounds: usize,
}

/// A change of a keyed row within this share of the first's is no change (`wrap --against`'s
/// default threshold).
pub const KEYED_THRESHOLD: f64 = 0.05;

/// Every backend's fastest mode against the first backend's, round by round, for each
/// size, sink and reader (none with one backend). A run's round is the one it recorded, or,
/// in files older than that, its place among the row's runs when no run of the row failed.
pub fn backends_by_round(backends: &[BackendKind], results: &[Row]) -> Vec<BackendRounds> {
    let Some(&base) = backends.first() else {
        return Vec::new();
    };
    let fps_by_round = |row: &Row| -> Vec<(u32, f64)> {
        let numbered = row.runs.iter().all(|r| r.round.is_some());
        if !numbered && !row.failed_runs.is_empty() {
            return Vec::new();
        }
        row.runs
            .iter()
            .zip(1..)
            .map(|(run, nth)| (run.round.unwrap_or(nth), run.figures.fps))
            .collect()
    };
    let paired = |a: &[(u32, f64)], b: &[(u32, f64)]| -> Vec<f64> {
        a.iter()
            .filter_map(|(round, fa)| {
                let (_, fb) = b.iter().find(|(r, _)| r == round)?;
                (*fb > 0.0).then(|| fa / fb)
            })
            .collect()
    };
    let rows = || results.iter().filter(|r| r.subject.draws_the_frame());
    let fastest = |conditions: &(Size, Sink, Reader, BackendKind)| {
        rows()
            .filter(|r| !r.subject.is_baseline() && r.conditions() == *conditions)
            .filter_map(|r| Some((r, r.fps?.median)))
            .max_by(|a, b| a.1.total_cmp(&b.1))
            .map(|(r, _)| r)
    };
    // The lower ceiling of a round: each round's own lower of the two.
    let ceiling_by_round = |conditions: &(Size, Sink, Reader, BackendKind)| {
        let mut lowest: Vec<(u32, f64)> = Vec::new();
        for row in rows().filter(|r| r.subject.is_ceiling() && r.conditions() == *conditions) {
            for (round, fps) in fps_by_round(row) {
                match lowest.iter_mut().find(|(r, _)| *r == round) {
                    Some((_, low)) => *low = low.min(fps),
                    None => lowest.push((round, fps)),
                }
            }
        }
        lowest
    };
    let mut groups: Vec<(Size, Sink, Reader)> = Vec::new();
    for row in rows().filter(|r| r.backend == base) {
        let (size, sink, reader, _) = row.conditions();
        if !groups.contains(&(size, sink, reader.clone())) {
            groups.push((size, sink, reader));
        }
    }
    let mut compared = Vec::new();
    for (size, sink, reader) in groups {
        let Some(base_row) = fastest(&(size, sink, reader.clone(), base)) else {
            continue;
        };
        for &backend in backends.iter().skip(1) {
            let here = (size, sink, reader.clone(), backend);
            let Some(row) = fastest(&here) else {
                continue;
            };
            let runs = fps_by_round(row);
            let ratios = paired(&runs, &fps_by_round(base_row));
            let Some(ratio) = Spread::of(ratios.iter().copied()) else {
                continue;
            };
            compared.push(BackendRounds {
                size,
                sink,
                reader: reader.clone(),
                backend,
                fastest: row.subject.clone(),
                base,
                base_fastest: base_row.subject.clone(),
                ratio,
                to_ceiling: Spread::of(paired(&runs, &ceiling_by_round(&here))),
                rounds: ratios.len(),
            });
        }
    }
    compared
}

/// Every keyed program row against the first keyed row measured under the same conditions,
/// round by round (rows of a bench share its `--keys`).
pub fn keyed_by_round(results: &[Row]) -> Vec<KeyedRounds> {
    let p50_by_round = |row: &Row| -> Vec<(u32, f64)> {
        row.runs
            .iter()
            .filter_map(|run| Some((run.round?, run.key_to_frame_ms?.p50)))
            .collect()
    };
    let keyed: Vec<&Row> = results
        .iter()
        .filter(|r| r.key_to_frame_ms().is_some())
        .collect();
    let mut compared = Vec::new();
    for (i, row) in keyed.iter().enumerate() {
        let Some(base) = keyed[..i]
            .iter()
            .find(|b| b.conditions() == row.conditions())
        else {
            continue;
        };
        let base_p50 = p50_by_round(base);
        let pairs: Vec<(f64, f64)> = p50_by_round(row)
            .into_iter()
            .filter_map(|(round, p50)| {
                let (_, b) = base_p50.iter().find(|(r, _)| *r == round)?;
                Some((*b, p50))
            })
            .collect();
        // A fixed count of rounds, looked at once: `wrap --against --rounds N`'s rule.
        let looks = Looks::fixed(pairs.len());
        let ratio = Ratio::of_rounds_at(&pairs, looks.level());
        let (size, sink, reader, _) = row.conditions();
        compared.push(KeyedRounds {
            size,
            sink,
            reader,
            base: base.subject.clone(),
            subject: row.subject.clone(),
            ratio,
            verdict: Verdict::of_rounds(ratio, pairs.len(), KEYED_THRESHOLD),
            rounds: pairs.len(),
        });
    }
    compared
}
