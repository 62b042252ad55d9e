//! What each key cost a program that draws when a key arrives: the time from the key to the
//! first byte of its answer and to its finished frame, and the frames, write(2) calls and bytes
//! it took. One clock for all: the keys' send times and the output's arrival are wrap's
//! `Instant`s, the program's waits come from inside it on CLOCK_MONOTONIC and are converted.
//!
//! A key's answer is what arrives between it and the next key (or the end of the run): its
//! bytes, its frames and writes. Its frame ends where the thread that drew it next waits after
//! writing, seen from inside (exact: the program is done with the frame) — the last such wait
//! before the next key, or, when the program was still drawing as the next key came (keys
//! queue up behind a slow frame), the first one after: what the user waits for. Where no such
//! wait is known (no observer, or the wait had not returned when the run ended) the frame ends
//! at the last byte before the output goes quiet for [`QUIET`] (an upper bound).

use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

/// Output that stops this long has finished its frame, when the frame's end is not known from
/// inside: far longer than the gaps between an unbuffered program's writes (microseconds),
/// shorter than a person's keys.
pub const QUIET: Duration = Duration::from_millis(5);

/// A key as it was sent: when its first byte was written to the pty (also on CLOCK_MONOTONIC,
/// to line it up with other tools' and the program's own times), and its name.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SentKey {
    pub at: Instant,
    pub at_ns: u64,
    pub key: String,
}

impl SentKey {
    /// `key`, sent now.
    pub fn now(key: String) -> SentKey {
        SentKey {
            at: Instant::now(),
            at_ns: crate::sys::monotonic_ns(),
            key,
        }
    }
}

/// A frame's end seen from inside: the drawing thread began to wait after writing; the writes
/// and bytes it made since its previous wait.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FrameEnd {
    pub at: Instant,
    pub writes: u64,
    pub bytes: u64,
}

/// Where a key's frame was taken to end.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum EndFrom {
    /// The drawing thread's next wait after writing, seen from inside.
    Wait,
    /// The answer's last byte before the next key or the end (an upper bound).
    QuietGap,
}

/// One key and its answer; times in milliseconds after the key was sent.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct KeyAnswer {
    pub key: String,
    /// After the first key.
    pub sent_ms: f64,
    /// When it was sent, CLOCK_MONOTONIC nanoseconds (the program's own clock, strace's and
    /// perf's can be held against it).
    pub sent_ns: u64,
    pub first_byte_ms: Option<f64>,
    pub frame_ms: Option<f64>,
    pub frame_end: Option<EndFrom>,
    /// Frames it took, seen from inside (`None` from outside).
    pub frames: Option<u64>,
    /// Terminal write(2) calls as the program made them, seen from inside.
    pub writes: Option<u64>,
    /// Bytes the terminal received.
    pub bytes: u64,
}

/// p50, p95 and max of some milliseconds (nearest rank).
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct Percentiles {
    pub p50: f64,
    pub p95: f64,
    pub max: f64,
}

impl Percentiles {
    pub fn of(values: impl IntoIterator<Item = f64>) -> Option<Percentiles> {
        let mut v: Vec<f64> = values.into_iter().filter(|x| x.is_finite()).collect();
        if v.is_empty() {
            return None;
        }
        v.sort_by(f64::total_cmp);
        let rank = |q: f64| v[((q * v.len() as f64).ceil() as usize).clamp(1, v.len()) - 1];
        Some(Percentiles {
            p50: rank(0.5),
            p95: rank(0.95),
            max: v[v.len() - 1],
        })
    }
}

/// Every key's answer, and their summary.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct KeyLatencies {
    pub keys: u64,
    /// Keys after which nothing reached the terminal before the next.
    pub unanswered: u64,
    pub first_byte_ms: Option<Percentiles>,
    pub key_to_frame_ms: Option<Percentiles>,
    /// Keys whose frame end was seen from inside, and from a quiet gap.
    pub frame_end_from_wait: u64,
    pub frame_end_from_quiet_gap: u64,
    pub frames_per_key: Option<f64>,
    pub writes_per_key: Option<f64>,
    pub bytes_per_key: f64,
    pub each: Vec<KeyAnswer>,
}

/// Each key's answer. `arrivals`: output read, as (first read, last read, bytes) stretches in
/// time order; `frame_ends`: from inside, in time order, `None` when not seen; `end`: the run's.
pub fn key_latencies(
    sent: &[SentKey],
    arrivals: &[(Instant, Instant, u64)],
    frame_ends: Option<&[FrameEnd]>,
    end: Instant,
) -> KeyLatencies {
    let ms = |d: Duration| d.as_secs_f64() * 1e3;
    let mut each = Vec::with_capacity(sent.len());
    let (mut a, mut f) = (0, 0);
    for (i, key) in sent.iter().enumerate() {
        let until = sent.get(i + 1).map_or(end, |next| next.at);
        while a < arrivals.len() && arrivals[a].0 < key.at {
            a += 1;
        }
        let mut first = None;
        let mut bytes = 0;
        while a < arrivals.len() && arrivals[a].0 < until {
            first.get_or_insert(arrivals[a].0);
            bytes += arrivals[a].2;
            a += 1;
        }
        let (mut frames, mut writes, mut frame_at) = (None, None, None);
        if let Some(ends) = frame_ends {
            while f < ends.len() && ends[f].at < key.at {
                f += 1;
            }
            let (mut n, mut w) = (0, 0);
            while f < ends.len() && ends[f].at < until {
                n += 1;
                w += ends[f].writes;
                frame_at = Some(ends[f].at);
                f += 1;
            }
            frames = Some(n);
            writes = Some(w);
            // Still drawing when the next key came: the first frame end after.
            if frame_at.is_none() && first.is_some() {
                frame_at = ends.get(f).map(|e| e.at);
            }
        }
        let quiet_end = || {
            let start = arrivals.partition_point(|x| x.0 < key.at);
            let mut end = arrivals.get(start)?.1;
            for next in &arrivals[start + 1..] {
                if next.0.saturating_duration_since(end) >= QUIET {
                    break;
                }
                end = next.1;
            }
            Some(end)
        };
        let (frame_ms, frame_end) = match frame_at {
            Some(at) => (Some(ms(at - key.at)), Some(EndFrom::Wait)),
            None if first.is_some() => (
                quiet_end().map(|at| ms(at - key.at)),
                Some(EndFrom::QuietGap),
            ),
            None => (None, None),
        };
        each.push(KeyAnswer {
            key: key.key.clone(),
            sent_ms: sent.first().map_or(0.0, |k0| ms(key.at - k0.at)),
            sent_ns: key.at_ns,
            first_byte_ms: first.map(|at| ms(at - key.at)),
            frame_ms,
            frame_end,
            frames,
            writes,
            bytes,
        });
    }
    KeyLatencies::of(each, frame_ends.is_some())
}

impl KeyLatencies {
    /// The summary of every key's answer; `inside`: the frames were seen from inside.
    fn of(each: Vec<KeyAnswer>, inside: bool) -> KeyLatencies {
        let n = each.len().max(1) as f64;
        let ended = |from| each.iter().filter(|k| k.frame_end == Some(from)).count() as u64;
        KeyLatencies {
            keys: each.len() as u64,
            unanswered: each.iter().filter(|k| k.first_byte_ms.is_none()).count() as u64,
            first_byte_ms: Percentiles::of(each.iter().filter_map(|k| k.first_byte_ms)),
            key_to_frame_ms: Percentiles::of(each.iter().filter_map(|k| k.frame_ms)),
            frame_end_from_wait: ended(EndFrom::Wait),
            frame_end_from_quiet_gap: ended(EndFrom::QuietGap),
            frames_per_key: inside
                .then(|| each.iter().filter_map(|k| k.frames).sum::<u64>() as f64 / n),
            writes_per_key: inside
                .then(|| each.iter().filter_map(|k| k.writes).sum::<u64>() as f64 / n),
            bytes_per_key: each.iter().map(|k| k.bytes).sum::<u64>() as f64 / n,
            each,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(base: Instant, us: u64) -> Instant {
        base + Duration::from_micros(us)
    }

    #[test]
    fn each_key_is_answered_by_what_arrives_before_the_next() {
        let base = Instant::now();
        let sent: Vec<SentKey> = [0, 10_000, 20_000, 30_000]
            .iter()
            .map(|&us| SentKey {
                at_ns: us,
                at: at(base, us),
                key: "j".into(),
            })
            .collect();
        // Key 0: answered at 1 ms, its frame ends (from inside) at 4 ms, 2 writes. Key 1: two
        // frames, the last ending at 18 ms. Key 2: nothing. Key 3: answered, its wait never
        // returned: the quiet gap (last byte at 33.5 ms).
        let arrivals = [
            (at(base, 1_000), at(base, 3_900), 500),
            (at(base, 11_000), at(base, 12_000), 100),
            (at(base, 15_000), at(base, 17_900), 100),
            (at(base, 31_000), at(base, 33_500), 50),
        ];
        let ends = [
            FrameEnd {
                at: at(base, 4_000),
                writes: 2,
                bytes: 500,
            },
            FrameEnd {
                at: at(base, 12_100),
                writes: 1,
                bytes: 100,
            },
            FrameEnd {
                at: at(base, 18_000),
                writes: 1,
                bytes: 100,
            },
        ];
        let k = key_latencies(&sent, &arrivals, Some(&ends), at(base, 40_000));
        let round = |x: Option<f64>| x.map(|x| (x * 1e3).round() / 1e3);
        let frame: Vec<Option<f64>> = k.each.iter().map(|e| round(e.frame_ms)).collect();
        assert_eq!(frame, [Some(4.0), Some(8.0), None, Some(3.5)]);
        let first: Vec<Option<f64>> = k.each.iter().map(|e| round(e.first_byte_ms)).collect();
        assert_eq!(first, [Some(1.0), Some(1.0), None, Some(1.0)]);
        assert_eq!(k.each[1].frames, Some(2));
        assert_eq!(k.each[3].frame_end, Some(EndFrom::QuietGap));
        assert_eq!(
            (
                k.unanswered,
                k.frame_end_from_wait,
                k.frame_end_from_quiet_gap
            ),
            (1, 2, 1)
        );
        assert_eq!(k.frames_per_key, Some(0.75));
        assert_eq!(k.bytes_per_key, 750.0 / 4.0);
        let p = k.key_to_frame_ms.unwrap();
        assert_eq!(
            (round(Some(p.p50)), round(Some(p.max))),
            (Some(4.0), Some(8.0))
        );
        // From outside: every frame from the quiet gap, no frame or write counts.
        let k = key_latencies(&sent, &arrivals, None, at(base, 40_000));
        assert_eq!(round(k.each[1].frame_ms), Some(7.9));
        assert_eq!((k.frames_per_key, k.frame_end_from_wait), (None, 0));
    }

    #[test]
    fn keys_that_queue_behind_a_slow_frame_wait_for_the_frame_that_follows() {
        let base = Instant::now();
        let sent: Vec<SentKey> = [0, 10_000]
            .iter()
            .map(|&us| SentKey {
                at_ns: us,
                at: at(base, us),
                key: "j".into(),
            })
            .collect();
        // Drawing without a pause from 1 ms to 25 ms: one wait at its end.
        let arrivals: Vec<(Instant, Instant, u64)> = (0..24)
            .map(|i| (at(base, 1_000 + i * 1_000), at(base, 1_900 + i * 1_000), 10))
            .collect();
        let ends = [FrameEnd {
            at: at(base, 25_000),
            writes: 9,
            bytes: 240,
        }];
        let k = key_latencies(&sent, &arrivals, Some(&ends), at(base, 40_000));
        let frame: Vec<Option<f64>> = k.each.iter().map(|e| e.frame_ms).collect();
        assert_eq!(frame, [Some(25.0), Some(15.0)]);
        // From outside, the quiet gap after the drawing: the same ends.
        let k = key_latencies(&sent, &arrivals, None, at(base, 40_000));
        let frame: Vec<f64> = k.each.iter().filter_map(|e| e.frame_ms).collect();
        assert!(
            (frame[0] - 24.9).abs() < 1e-6 && (frame[1] - 14.9).abs() < 1e-6,
            "{frame:?}"
        );
    }

    #[test]
    fn percentiles_are_nearest_rank() {
        let p = Percentiles::of((1..=100).map(f64::from)).unwrap();
        assert_eq!((p.p50, p.p95, p.max), (50.0, 95.0, 100.0));
        assert_eq!(Percentiles::of([]), None);
        let p = Percentiles::of([3.0]).unwrap();
        assert_eq!((p.p50, p.p95, p.max), (3.0, 3.0, 3.0));
    }
}
