//! A key's answer over a wire (`flushlab wrap --via`), on one clock: the far end's frame (its
//! program's waits, seen from inside it), matched by bytes to what reached the near end (ssh
//! forwards a byte stream: a frame's bytes are its share of the near end's, in order, as
//! [`keyed`](super::keyed)'s offsets place them), and the reads of the near end that carried
//! them. Pure: a function of the run's [`Timeline`] and its keys' answers.
//!
//! - **uplink**: the key at the near end to the far program's read of it (its input delay);
//! - **downlink**: the far frame's end to its last byte at the near end (its drain);
//! - **key→last byte**: the key to that last byte, the headline over a wire;
//! - **pieces**: the near end's writer's write(2)s that carried the frame, where an observer saw
//!   them (`pieces_from: near-writes`); else wrap's reads of the near pty that did
//!   (`near-reads`: a large write comes in several, the pty passing it on in pieces);
//! - **tear**: the first of those pieces to the last: how long a terminal could show the frame
//!   half drawn.

use serde::Serialize;

use super::keyed::{KeyLatencies, Percentiles, offsets};
use super::timeline::{PiecesFrom, Timeline};

/// One key's frame at the near end.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize)]
pub struct KeyOverTheWire {
    pub last_byte_ms: Option<f64>,
    pub pieces: Option<u64>,
    pub tear_ms: Option<f64>,
}

/// The keys' frames at the near end, and their percentiles.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct OverTheWire {
    pub key_to_last_byte_ms: Option<Percentiles>,
    pub uplink_ms: Option<Percentiles>,
    pub downlink_ms: Option<Percentiles>,
    pub pieces_per_frame: Option<Percentiles>,
    pub tear_ms: Option<Percentiles>,
    /// What the pieces were counted from (`None`: no key's frame was followed).
    pub pieces_from: Option<PiecesFrom>,
    /// Key by key, in the order of `keys.each`.
    pub each: Vec<KeyOverTheWire>,
}

/// Each answered key's frame followed to the near end.
pub fn over_the_wire(timeline: &Timeline, latencies: &KeyLatencies) -> OverTheWire {
    let ms = |ns: u64| ns as f64 / 1e6;
    let ends = offsets(timeline);
    let bursts = timeline.inside.as_ref().map_or(&[][..], |i| &i.bursts[..]);
    let mut counted_from = None;
    let each: Vec<KeyOverTheWire> = latencies
        .each
        .iter()
        .map(|key| {
            let Some(f) = key.burst else {
                return KeyOverTheWire::default();
            };
            let Some(end) = ends.get(f).copied().flatten() else {
                return KeyOverTheWire::default();
            };
            let start = end.saturating_sub(bursts[f].bytes);
            // Bytes at the near end before the far frame's first write are not its (the
            // offsets went astray): nothing is said of the key then.
            let first_write = bursts[f].first_write_ns;
            let Some(last_byte) = timeline
                .chunks
                .reads_carrying(start, end)
                .map(|r| r.2)
                .filter(|&at| at >= first_write)
            else {
                return KeyOverTheWire::default();
            };
            match timeline.chunks.pieces(start, end) {
                Some((pieces, from)) => {
                    counted_from.get_or_insert(from);
                    KeyOverTheWire {
                        last_byte_ms: Some(ms(last_byte.saturating_sub(key.sent_ns))),
                        pieces: Some(pieces.count),
                        tear_ms: Some(ms(pieces.last_ns.saturating_sub(pieces.first_ns))),
                    }
                }
                None => KeyOverTheWire::default(),
            }
        })
        .collect();
    let stages = || latencies.each.iter().filter_map(|k| k.stages_ms);
    OverTheWire {
        key_to_last_byte_ms: Percentiles::of(each.iter().filter_map(|k| k.last_byte_ms)),
        uplink_ms: Percentiles::of(stages().filter_map(|s| s.input_delay)),
        downlink_ms: Percentiles::of(stages().filter_map(|s| s.drain)),
        pieces_per_frame: Percentiles::of(each.iter().filter_map(|k| k.pieces.map(|p| p as f64))),
        tear_ms: Percentiles::of(each.iter().filter_map(|k| k.tear_ms)),
        pieces_from: counted_from,
        each,
    }
}

#[cfg(test)]
mod tests {
    use super::super::timeline::Chunks;

    #[test]
    fn a_frame_is_carried_by_the_reads_its_bytes_came_in() {
        let mut chunks = Chunks::default();
        chunks.each_read();
        // Three reads of 100 bytes, 1 ms apart; a frame of bytes 50..250 spans all three.
        for i in 0..3 {
            chunks.note(1_000_000 * (i + 1), 100);
        }
        assert_eq!(
            chunks.reads_carrying(50, 250),
            Some((3, 1_000_000, 3_000_000))
        );
        assert_eq!(
            chunks.reads_carrying(100, 200),
            Some((1, 2_000_000, 2_000_000))
        );
        assert_eq!(
            chunks.reads_carrying(0, 100),
            Some((1, 1_000_000, 1_000_000))
        );
        // Bytes that never came, or reads not kept, say nothing.
        assert_eq!(chunks.reads_carrying(250, 400), None);
        assert_eq!(Chunks::default().reads_carrying(0, 10), None);
    }

    #[test]
    fn where_the_near_writer_was_seen_its_writes_are_the_pieces() {
        use super::super::timeline::{NearWrites, Pieces, PiecesFrom};
        let mut chunks = Chunks::default();
        chunks.each_read();
        // One write of 300 bytes, read in three pieces; then two writes of 50 in one burst.
        for i in 0..3 {
            chunks.note(1_000_000 * (i + 1), 100);
        }
        chunks.note(5_000_000, 100);
        assert_eq!(chunks.pieces(0, 300).unwrap().1, PiecesFrom::NearReads);
        let burst = |first_ns, end_ns, writes, bytes| NearWrites {
            first_ns,
            end_ns,
            writes,
            bytes,
        };
        chunks.near_writes(&[
            burst(900_000, 950_000, 1, 300),
            burst(4_900_000, 4_950_000, 2, 100),
        ]);
        let whole = Pieces {
            count: 1,
            first_ns: 900_000,
            last_ns: 950_000,
        };
        assert_eq!(chunks.pieces(0, 300), Some((whole, PiecesFrom::NearWrites)));
        let both = chunks.pieces(250, 400).unwrap().0;
        assert_eq!(
            (both.count, both.first_ns, both.last_ns),
            (3, 900_000, 4_950_000)
        );
        assert_eq!(chunks.pieces(300, 500), None);
    }
}
