//! Key→pixel: when a real terminal's window changed for each key (`wrap --terminal`), from the
//! times the window was seen to change (the X server's DAMAGE reports), as a pure function of
//! those times and the keys' answers.
//!
//! A key's *first pixel* is the window's first change at or after its frame's first write (a
//! change before it is someone else's: the previous frame's last paint); its *last pixel* is the
//! last change before the program's next frame began (whoever asked for it: a key, a clock) or
//! the next key was sent when its frame was never seen, before the run ended, and before the
//! window stayed unchanged for [`SETTLED`] after the frame ended. *Paint*
//! is the last pixel's distance from the frame's end. Keys one read took share their frame and
//! its pixels. A key without a frame seen from inside gets no pixels: a change then would be
//! nobody's in particular.

use std::time::Duration;

use super::keyed::{
    KeyAnswer, KeyLatencies, KeyPixels, Percentiles, PixelSummary, Stage, StageSummary,
};
use super::timeline::Timeline;

/// A window unchanged this long after its key's frame ended has finished painting it: ten times
/// the longest pause between one key's changes seen in xterm at 200x60 (under 10 ms, every
/// change reported), six GL refreshes at 60 Hz; short of a person's next key. A blinking cursor
/// would change the window by itself: the terminals are started with their cursor steady.
pub const SETTLED: Duration = Duration::from_millis(100);

/// Adds to each key its first and last pixel and its paint stage, and their summary, from
/// the window's changes in `timeline` (its [`Windows`](super::timeline::Windows)); where the
/// window's frame markers were read back, each key gets the frame on screen at its last change.
pub fn add_pixels(latencies: &mut KeyLatencies, timeline: &Timeline) {
    let (changes, markers) = (&timeline.windows.changes, &timeline.windows.shown);
    let frames: Vec<Option<(u64, u64)>> = latencies.each.iter().map(frame_of).collect();
    // Every frame's first write, whoever asked for it: the next one bounds a key's pixels.
    let mut starts: Vec<u64> = timeline
        .inside
        .iter()
        .flat_map(|i| i.bursts.iter().map(|b| b.first_write_ns))
        .collect();
    starts.sort_unstable();
    let limits: Vec<u64> = frames
        .iter()
        .enumerate()
        .map(|(i, frame)| {
            let mine = frame.map_or(0, |(first_write, _)| first_write);
            let next = starts.partition_point(|&s| s <= mine);
            let next_frame = starts.get(next).copied().unwrap_or(timeline.end_ns);
            // A next key whose frame was not seen (the run ended before its frame did) bounds
            // them by its send: what changed after it may be its.
            let unseen = (i + 1..frames.len())
                .find(|&j| frames[j].is_none_or(|(first_write, _)| first_write > mine))
                .filter(|&j| frames[j].is_none())
                .map_or(u64::MAX, |j| latencies.each[j].sent_ns);
            next_frame.min(unseen)
        })
        .collect();
    for (i, key) in latencies.each.iter_mut().enumerate() {
        let Some((first_write, frame_end)) = frames[i] else {
            continue;
        };
        let limit = limits[i];
        let Some((first, last)) = pixels_of(changes, first_write, frame_end, limit) else {
            continue;
        };
        let ms = |at: u64| at.saturating_sub(key.sent_ns) as f64 / 1e6;
        // Read back after the change it follows, stamped with that change's time.
        let shown = markers.partition_point(|m| m.0 < last);
        let stamped = timeline.windows.server.binary_search_by_key(&last, |s| s.0);
        key.pixels_ms = Some(KeyPixels {
            first: ms(first),
            last: ms(last),
            last_server: stamped.ok().map(|i| ms(timeline.windows.server[i].1)),
            frame_shown: markers.get(shown).filter(|m| m.0 < limit).and_then(|m| m.1),
        });
        if let Some(stages) = key.stages_ms.as_mut() {
            stages.paint = Some(last.saturating_sub(frame_end) as f64 / 1e6);
        }
    }
    let painted: Vec<KeyPixels> = latencies.each.iter().filter_map(|k| k.pixels_ms).collect();
    latencies.pixels_ms = Percentiles::of(painted.iter().map(|p| p.first))
        .zip(Percentiles::of(painted.iter().map(|p| p.last)))
        .map(|(first, last)| PixelSummary {
            first,
            last,
            last_server: Percentiles::of(painted.iter().filter_map(|p| p.last_server)),
            server_gap: Percentiles::of(
                timeline
                    .windows
                    .server
                    .iter()
                    .map(|&(arrival, stamp)| (arrival as f64 - stamp as f64) / 1e6),
            ),
            unpainted: frames.iter().flatten().count() as u64 - painted.len() as u64,
            changes: changes.len() as u64,
        });
    latencies.stages_ms = StageSummary::of_keys(&latencies.each);
    latencies.dominant_stage = latencies.stages_ms.and_then(|s| s.dominant());
}

/// A key's frame: its first write and its end, CLOCK_MONOTONIC ns.
fn frame_of(key: &KeyAnswer) -> Option<(u64, u64)> {
    let spans = key.stage_spans();
    let emit = spans.iter().find(|s| s.0 == Stage::Emit)?;
    Some((emit.1, emit.2))
}

/// The first and last change for a frame that began writing at `first_write` and ended at
/// `frame_end`, with changes from `limit` on another's.
fn pixels_of(changes: &[u64], first_write: u64, frame_end: u64, limit: u64) -> Option<(u64, u64)> {
    let start = changes.partition_point(|&c| c < first_write);
    let first = *changes.get(start).filter(|&&c| c < limit)?;
    let mut last = first;
    for &change in &changes[start + 1..] {
        if change >= limit
            || (change > frame_end && change - last.max(frame_end) >= SETTLED.as_nanos() as u64)
        {
            break;
        }
        last = change;
    }
    Some((first, last))
}

#[cfg(test)]
mod tests {
    use super::super::keyed::{EndFrom, Stages};
    use super::super::timeline::{Burst, Inside};
    use super::*;

    const MS: u64 = 1_000_000;

    /// A key sent at `sent` ms, read 1 ms later, its frame writing from `sent + 2` to
    /// `sent + 2 + emit` ms.
    fn key(sent: u64, emit: f64) -> KeyAnswer {
        KeyAnswer {
            key: "j".into(),
            sent_ms: sent as f64,
            sent_ns: sent * MS,
            first_byte_ms: None,
            frame_ms: Some(2.0 + emit),
            frame_end: Some(EndFrom::Wait),
            stages_ms: Some(Stages {
                input_delay: Some(1.0),
                processing: 1.0,
                presentation_delay: None,
                emit,
                drain: None,
                paint: None,
            }),
            frames: Some(1),
            writes: Some(3),
            bytes: 30,
            pixels_ms: None,
            near: Default::default(),
            burst: None,
            coalesced: false,
        }
    }

    fn latencies(each: Vec<KeyAnswer>) -> KeyLatencies {
        let mut l = KeyLatencies {
            keys: each.len() as u64,
            unanswered: 0,
            first_byte_ms: None,
            key_to_frame_ms: None,
            stages_ms: None,
            dominant_stage: None,
            frame_end_from_wait: 0,
            frame_end_from_quiet_gap: 0,
            frames: None,
            writes_per_key: None,
            bytes_per_key: 0.0,
            pixels_ms: None,
            key_to_last_byte_ms: None,
            pieces_per_frame: None,
            tear_ms: None,
            each,
        };
        l.stages_ms = StageSummary::of_keys(&l.each);
        l
    }

    /// The run: the keys' frames, and frames nobody asked for beginning at `unprompted` ms.
    fn timeline(l: &KeyLatencies, unprompted: &[u64], end_ms: u64) -> Timeline {
        let mut bursts: Vec<Burst> = l
            .each
            .iter()
            .filter_map(frame_of)
            .map(|(first_write_ns, end_ns)| Burst {
                pid: 1,
                tid: 1,
                first_write_ns,
                end_ns,
                writes: 3,
                bytes: 30,
                continues: false,
            })
            .collect();
        bursts.extend(unprompted.iter().map(|&at| Burst {
            pid: 1,
            tid: 1,
            first_write_ns: at * MS,
            end_ns: at * MS + MS,
            writes: 1,
            bytes: 10,
            continues: false,
        }));
        Timeline {
            keys: Vec::new(),
            inside: Some(Inside {
                bursts,
                ..Inside::default()
            }),
            end_ns: end_ms * MS,
            ..Timeline::default()
        }
    }

    fn add(l: &mut KeyLatencies, unprompted: &[u64], changes_ms: &[f64], end_ms: u64) {
        let mut run = timeline(l, unprompted, end_ms);
        run.windows.changes = changes_ms.iter().map(|&m| (m * 1e6) as u64).collect();
        add_pixels(l, &run);
    }

    fn pixels(first: f64, last: f64) -> Option<KeyPixels> {
        Some(KeyPixels {
            last_server: None,
            first,
            last,
            frame_shown: None,
        })
    }

    #[test]
    fn a_key_takes_the_changes_from_its_first_write_until_the_next_frame() {
        // Frame 100+2 .. 100+6 ms; the window changes at 101 (the previous frame's), 103,
        // 105, 107 (painting after the end), 130; a clock's frame begins at 299 and paints at
        // 300.
        let mut l = latencies(vec![key(100, 4.0)]);
        add(
            &mut l,
            &[299],
            &[101.0, 103.0, 105.0, 107.0, 130.0, 300.0],
            400,
        );
        let k = &l.each[0];
        assert_eq!(k.pixels_ms, pixels(3.0, 30.0));
        assert_eq!(k.stages_ms.unwrap().paint, Some(24.0));
        let p = l.pixels_ms.unwrap();
        assert_eq!(
            (p.first.p50, p.last.p50, p.changes, p.unpainted),
            (3.0, 30.0, 6, 0)
        );
        // Paint takes its place among the stages, after emit, from the frame's end.
        let spans = k.stage_spans();
        assert_eq!(spans.last(), Some(&(Stage::Paint, 106 * MS, 130 * MS)));
        assert_eq!(l.stages_ms.unwrap().paint.unwrap().p50, 24.0);
        assert_eq!(l.dominant_stage, Some(Stage::Paint));
    }

    #[test]
    fn a_frame_keeps_its_pauses_and_a_settled_window_ends_the_key() {
        // Emit 200 ms with the window changing 80 ms apart meanwhile (a program that writes in
        // pieces), then 57 ms after the end, then 1.5 s later (someone else's).
        let mut l = latencies(vec![key(0, 200.0)]);
        add(&mut l, &[], &[3.0, 83.0, 163.0, 203.0, 260.0, 1760.0], 5000);
        assert_eq!(l.each[0].pixels_ms, pixels(3.0, 260.0));
        assert_eq!(l.each[0].stages_ms.unwrap().paint, Some(58.0));
    }

    #[test]
    fn the_next_frame_bounds_a_key_and_a_window_that_never_changed_is_said() {
        // Key 1's frame 10+2..10+3; key 2's 12+2..12+3: key 1's changes stop at 14.
        let mut l = latencies(vec![key(10, 1.0), key(12, 1.0), key(500, 1.0)]);
        add(&mut l, &[], &[12.5, 13.5, 14.5, 15.5], 600);
        assert_eq!(l.each[0].pixels_ms, pixels(2.5, 3.5));
        assert_eq!(l.each[1].pixels_ms, pixels(2.5, 3.5));
        assert_eq!(l.each[2].pixels_ms, None);
        assert_eq!(l.pixels_ms.unwrap().unpainted, 1);
        // The last key's frame never ended (the run did first): the key before it keeps the
        // changes until it was sent, not the last key's.
        let mut unended = key(60, 1.0);
        unended.stages_ms = None;
        unended.frame_ms = None;
        let mut l = latencies(vec![key(10, 1.0), unended]);
        add(&mut l, &[], &[12.5, 13.5, 60.5, 62.5], 600);
        assert_eq!(l.each[0].pixels_ms, pixels(2.5, 3.5));
        // A key whose last change came before its frame's end (its last bytes changed no
        // pixel) paints for 0 ms.
        let mut l = latencies(vec![key(0, 10.0)]);
        add(&mut l, &[], &[3.0], 100);
        assert_eq!(l.each[0].stages_ms.unwrap().paint, Some(0.0));
    }

    #[test]
    fn keys_of_one_read_share_their_frame_and_its_pixels() {
        // Both keys' frame writes from 12 to 13 ms (the second key was read with the first).
        let mut second = key(11, 1.0);
        second.stages_ms = Some(Stages {
            input_delay: Some(0.0),
            processing: 1.0,
            presentation_delay: None,
            emit: 1.0,
            drain: None,
            paint: None,
        });
        let mut l = latencies(vec![key(10, 1.0), second]);
        add(&mut l, &[], &[12.5, 13.5], 100);
        assert_eq!(l.each[0].pixels_ms.map(|p| p.last), Some(3.5));
        assert_eq!(l.each[1].pixels_ms.map(|p| p.last), Some(2.5));
        assert_eq!(l.pixels_ms.unwrap().unpainted, 0);
    }

    #[test]
    fn the_frame_shown_is_the_one_read_back_after_the_last_change() {
        // Frames 12..13 and 14..15; markers read back after each change.
        let mut l = latencies(vec![key(10, 1.0), key(12, 1.0)]);
        let mut run = timeline(&l, &[], 600);
        let at = |ms: f64| (ms * 1e6) as u64;
        run.windows.changes = vec![at(12.5), at(13.5), at(14.5), at(15.5)];
        run.windows.shown = vec![
            (at(12.5), None),
            (at(13.5), Some(1)),
            (at(14.5), Some(1)),
            (at(15.5), Some(2)),
        ];
        add_pixels(&mut l, &run);
        let shown: Vec<Option<u32>> = l
            .each
            .iter()
            .map(|k| k.pixels_ms.and_then(|p| p.frame_shown))
            .collect();
        assert_eq!(shown, [Some(1), Some(2)]);
    }

    #[test]
    fn a_key_without_a_frame_has_no_pixels() {
        let mut lone = key(0, 1.0);
        lone.stages_ms = None;
        lone.frame_ms = None;
        let mut l = latencies(vec![lone]);
        add(&mut l, &[], &[1.0, 2.0], 100);
        assert_eq!(l.each[0].pixels_ms, None);
        assert_eq!(l.pixels_ms, None);
    }
}
