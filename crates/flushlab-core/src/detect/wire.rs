//! A key's answer over a wire (`flushlab wrap --via`), on one clock: the far end's frame (its
//! program's waits, seen from inside it), followed to the near end as [`near`](super::near)
//! matches them (by bytes through ssh, by time through a layer that redraws). Pure: a function
//! of the run's [`Timeline`] and its keys' answers.
//!
//! - **uplink**: the key at the near end to the far program's read of it (its input delay);
//! - **downlink**: the far frame's end to its last byte at the near end (its drain);
//! - **key→last byte**: the key to that last byte, the headline over a wire;
//! - **pieces**: the near end's writer's write(2)s that carried the frame, where an observer saw
//!   them (`pieces_from: near-writes`); else wrap's reads of the near pty that did
//!   (`near-reads`: a large write comes in several, the pty passing it on in pieces);
//! - **tear**: the first of those pieces to the last: how long a terminal could show the frame
//!   half drawn;
//! - **the layer's own**: near-end pieces no frame explains, and frames a later redraw carried.

use serde::Serialize;

use super::keyed::{KeyLatencies, Percentiles, offsets};
use super::near::{LayerOwn, near_end};
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
    /// Near-end pieces no frame of the far program explains, in the whole run.
    pub layer_own: Option<LayerOwn>,
    /// The far program's frames no near-end piece was matched to (by time: a later redraw
    /// carried them), in the whole run.
    pub superseded_frames: u64,
    /// Key by key, in the order of `keys.each`.
    pub each: Vec<KeyOverTheWire>,
}

/// Each answered key's frame followed to the near end.
pub fn over_the_wire(timeline: &Timeline, latencies: &KeyLatencies) -> OverTheWire {
    let ms = |ns: u64| ns as f64 / 1e6;
    let near = near_end(timeline, &offsets(timeline));
    let each: Vec<KeyOverTheWire> = latencies
        .each
        .iter()
        .map(|key| {
            let Some(frame) = key.burst.and_then(|f| near.frames.get(f)) else {
                return KeyOverTheWire::default();
            };
            match (frame.last_byte_ns, frame.pieces) {
                (Some(last_byte), Some(pieces)) => KeyOverTheWire {
                    last_byte_ms: Some(ms(last_byte.saturating_sub(key.sent_ns))),
                    pieces: Some(pieces.count),
                    tear_ms: Some(ms(pieces.last_ns.saturating_sub(pieces.first_ns))),
                },
                _ => KeyOverTheWire::default(),
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
        pieces_from: each
            .iter()
            .any(|k| k.pieces.is_some())
            .then_some(near.pieces_from)
            .flatten(),
        layer_own: near.layer_own,
        superseded_frames: near.superseded,
        each,
    }
}
