//! From what was written (the run's frame log) and what was seen (the observer's reads) to the
//! painted figures, with the checks that every result carries. Pure: no clock, no display.

use std::collections::HashMap;

use super::probe::FrameTime;
use flushlab_core::latency::Histogram;
pub use flushlab_core::results::painted::{PaintRun, Painted};
pub use flushlab_terminals::window_watch::Read;

fn ms(ns: u64) -> f64 {
    ns as f64 / 1e6
}

/// What the reads showed, against what was written.
#[derive(Default)]
struct Tally {
    /// The first read that showed each number, at that read's time.
    first_seen: HashMap<u32, u64>,
    rejected: u64,
    /// Numbers never written; numbers lower than the one before; numbers seen before their
    /// write began.
    phantom: u64,
    backwards: u64,
    early: u64,
    /// Reads that decoded both markers, and those whose two markers differ.
    both: u64,
    torn: u64,
    round_trips: Histogram,
}

impl Tally {
    fn of(reads: &[Read], written: &HashMap<u32, u64>) -> Tally {
        let mut tally = Tally::default();
        let mut previous: Option<u32> = None;
        for read in reads {
            tally.round_trips.record(read.round_trip.as_nanos() as u64);
            if read.top.is_none() || read.bottom.is_none() {
                tally.rejected += 1;
            }
            if let (Some(top), Some(bottom)) = (read.top, read.bottom) {
                tally.both += 1;
                tally.torn += u64::from(top != bottom);
            }
            let Some(number) = read.bottom else { continue };
            let Some(&start_ns) = written.get(&number) else {
                tally.phantom += 1;
                continue;
            };
            if previous.is_some_and(|p| number < p) {
                tally.backwards += 1;
            }
            previous = Some(number);
            if read.at_ns < start_ns {
                tally.early += 1;
            }
            tally.first_seen.entry(number).or_insert(read.at_ns);
        }
        tally
    }
}

/// The painted figures of a run. Checks: every painted number was written; the bottom marker's
/// number never goes backwards; painted ≤ accepted; no frame is painted before its write began.
pub fn analyse(times: &[FrameTime], reads: &[Read]) -> Painted {
    let mut painted = Painted {
        accepted_frames: times.len() as u64,
        reads: reads.len() as u64,
        ..Painted::default()
    };
    let (Some(first), Some(last)) = (times.first(), times.last()) else {
        painted
            .failed_checks
            .push("no frame was written".to_owned());
        return painted;
    };
    let span = last.end_ns.saturating_sub(first.start_ns).max(1) as f64 / 1e9;
    let written: HashMap<u32, u64> = times.iter().map(|t| (t.number, t.start_ns)).collect();
    let tally = Tally::of(reads, &written);

    let mut latency = Histogram::default();
    for (number, seen) in &tally.first_seen {
        latency.record(seen.saturating_sub(written[number]));
    }
    painted.rejected_reads = tally.rejected;
    painted.painted_frames = tally.first_seen.len() as u64;
    painted.accepted_fps = times.len() as f64 / span;
    painted.painted_fps = painted.painted_frames as f64 / span;
    painted.skipped_share = 1.0 - painted.painted_frames as f64 / times.len() as f64;
    painted.torn_share = if tally.both == 0 {
        0.0
    } else {
        tally.torn as f64 / tally.both as f64
    };
    let percentile = |h: &Histogram, q| (h.count() > 0).then(|| ms(h.percentile(q)));
    painted.latency_p50_ms = percentile(&latency, 0.5);
    painted.latency_p99_ms = percentile(&latency, 0.99);
    painted.read_p50_ms = percentile(&tally.round_trips, 0.5);
    painted.read_p99_ms = percentile(&tally.round_trips, 0.99);
    check(&mut painted, &tally);
    painted
}

/// The self-checks every result carries, and the warnings.
fn check(painted: &mut Painted, tally: &Tally) {
    let checks = &mut painted.failed_checks;
    if tally.phantom > 0 {
        checks.push(format!(
            "{} reads showed a frame number that was never written",
            tally.phantom
        ));
    }
    if tally.backwards > 0 {
        checks.push(format!(
            "the painted frame number went backwards {} times",
            tally.backwards
        ));
    }
    if painted.painted_frames > painted.accepted_frames {
        checks.push("more frames painted than written".to_owned());
    }
    if tally.early > 0 {
        checks.push(format!(
            "{} reads showed a frame before its write began",
            tally.early
        ));
    }
    if painted.painted_frames == 0 {
        painted
            .warnings
            .push("no frame was seen painted".to_owned());
    }
    // A paint that lasts less than the read round trip can be missed by the observer, not
    // skipped by the terminal.
    if let Some(read) = painted.read_p50_ms
        && painted.painted_fps > 0.0
        && 1000.0 / painted.painted_fps < 2.0 * read
    {
        painted.warnings.push(format!(
            "paints come every {:.1} ms, under twice the observer's read ({read:.1} ms): some skipped frames may be the observer's",
            1000.0 / painted.painted_fps
        ));
    }
}

/// The painted figures of each segment of one observation (the tour's modes, one after the
/// other, frame numbers running on): a segment has its own frames, the reads that showed one of
/// them, and the reads that decoded nothing while it was being written. The checks are of the
/// whole observation, and every segment carries them.
pub fn analyse_segments(segments: &[Vec<FrameTime>], reads: &[Read]) -> Vec<Painted> {
    let whole: Vec<FrameTime> = segments.concat();
    let checks = analyse(&whole, reads).failed_checks;
    segments
        .iter()
        .enumerate()
        .map(|(i, times)| {
            let numbers: std::collections::HashSet<u32> = times.iter().map(|t| t.number).collect();
            let from = times.first().map_or(u64::MAX, |t| t.start_ns);
            let until = segments[i + 1..]
                .iter()
                .find_map(|s| s.first())
                .map_or(u64::MAX, |t| t.start_ns);
            let mine: Vec<Read> = reads
                .iter()
                .filter(|r| match r.bottom {
                    Some(n) => numbers.contains(&n),
                    None => (from..until).contains(&r.at_ns),
                })
                .copied()
                .collect();
            let mut painted = analyse(times, &mine);
            painted.failed_checks = checks.clone();
            painted
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn frames(n: u32, every_ns: u64) -> Vec<FrameTime> {
        (0..n)
            .map(|i| FrameTime {
                number: i,
                start_ns: 1_000_000 + u64::from(i) * every_ns,
                end_ns: 1_000_000 + u64::from(i) * every_ns + 100_000,
            })
            .collect()
    }

    fn read(at_ns: u64, top: Option<u32>, bottom: Option<u32>) -> Read {
        Read {
            at_ns,
            round_trip: Duration::from_micros(500),
            top,
            bottom,
        }
    }

    #[test]
    fn every_other_frame_painted_is_half_skipped() {
        let times = frames(100, 10_000_000); // 100 fps for a second
        let reads: Vec<Read> = times
            .iter()
            .step_by(2)
            .map(|t| read(t.end_ns + 2_000_000, Some(t.number), Some(t.number)))
            .collect();
        let p = analyse(&times, &reads);
        assert_eq!((p.accepted_frames, p.painted_frames), (100, 50));
        assert!((p.skipped_share - 0.5).abs() < 1e-9);
        assert!((p.accepted_fps - 100.0).abs() < 1.5, "{}", p.accepted_fps);
        assert!((p.painted_fps - 50.0).abs() < 1.0);
        assert_eq!(p.torn_share, 0.0);
        // 2.1 ms from the write's start, within the histogram's 3%.
        let latency = p.latency_p50_ms.unwrap();
        assert!((2.0..2.2).contains(&latency), "{latency}");
        assert!(p.failed_checks.is_empty(), "{:?}", p.failed_checks);
    }

    #[test]
    fn torn_and_half_painted_reads_are_counted_apart() {
        let times = frames(10, 10_000_000);
        let reads = [
            read(times[1].end_ns, Some(2), Some(1)),
            read(times[2].end_ns + 1, Some(2), Some(2)),
            read(times[3].end_ns + 1, None, Some(3)),
            read(times[4].end_ns + 1, Some(4), None),
        ];
        let p = analyse(&times, &reads);
        assert_eq!(p.painted_frames, 3);
        assert!((p.torn_share - 0.5).abs() < 1e-9);
        assert_eq!(p.rejected_reads, 2);
        assert!(p.failed_checks.is_empty(), "{:?}", p.failed_checks);
    }

    #[test]
    fn segments_keep_their_own_frames_and_share_the_checks() {
        let times = frames(20, 10_000_000);
        let segments = vec![times[..10].to_vec(), times[10..].to_vec()];
        // Every frame of the first segment painted, every other of the second; one read of a
        // frame of the first after the second began, and one that decoded nothing.
        let mut reads: Vec<Read> = times[..10]
            .iter()
            .map(|t| read(t.end_ns + 1, Some(t.number), Some(t.number)))
            .collect();
        reads.extend(
            times[10..]
                .iter()
                .step_by(2)
                .map(|t| read(t.end_ns + 1, Some(t.number), Some(t.number))),
        );
        reads.push(read(times[12].end_ns, Some(9), Some(9)));
        reads.push(read(times[15].end_ns, None, None));
        reads.sort_by_key(|r| r.at_ns);
        let painted = analyse_segments(&segments, &reads);
        assert_eq!(painted[0].painted_frames, 10);
        assert_eq!(painted[1].painted_frames, 5);
        assert_eq!(painted[1].rejected_reads, 1);
        assert_eq!(painted[0].rejected_reads, 0);
        // Frame 9 seen after frame 11: the number went backwards, in the whole observation.
        assert!(
            painted
                .iter()
                .all(|p| p.failed_checks.iter().any(|c| c.contains("backwards")))
        );
    }

    #[test]
    fn impossible_reads_fail_the_checks() {
        let times = frames(10, 10_000_000);
        let reads = [
            read(times[5].end_ns, Some(5), Some(5)),
            read(times[6].end_ns, Some(3), Some(3)),
            read(times[6].end_ns, Some(77), Some(77)),
            read(times[8].start_ns - 1, Some(8), Some(8)),
        ];
        let failed = analyse(&times, &reads).failed_checks.join("; ");
        assert!(failed.contains("never written"), "{failed}");
        assert!(failed.contains("backwards"), "{failed}");
        assert!(failed.contains("before its write began"), "{failed}");
        assert!(analyse(&[], &[]).failed_checks[0].contains("no frame"));
    }
}
