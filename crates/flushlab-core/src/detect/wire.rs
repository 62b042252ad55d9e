//! A key's answer over a wire (`flushlab wrap --via`), on one clock: the far end's frame (its
//! program's waits, seen from inside it), followed to the near end as [`near`](super::near)
//! matches them (by bytes through ssh, by time through a layer that redraws): figures set on
//! the keys' answers from the run's [`Timeline`].
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

use super::keyed::{AtNearEnd, KeyLatencies, Percentiles, offsets};
use super::near::{LayerOwn, near_end};
use super::timeline::{PiecesFrom, Timeline};

/// What a run's near end says of itself, beside each key's figures.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize)]
pub struct NearEndRun {
    /// What the pieces were counted from (`None`: no key's frame was followed).
    pub pieces_from: Option<PiecesFrom>,
    /// Near-end pieces no frame of the far program explains, in the whole run.
    pub layer_own: Option<LayerOwn>,
    /// The far program's frames no near-end piece was matched to (by time: a later redraw
    /// carried them), in the whole run.
    pub superseded_frames: u64,
    /// Every far frame that reached the near end, asked for by a key or not (a program that
    /// draws on its own clock, the explorer's tour): how many, and their pieces and tear.
    pub every_frame: Option<EveryFrame>,
}

/// Every far frame that reached the near end.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct EveryFrame {
    pub frames: u64,
    pub pieces_per_frame: Percentiles,
    pub tear_ms: Percentiles,
}

/// Each answered key's frame followed to the near end: its last byte, pieces and tear set on
/// each key of `latencies`, and their percentiles on the keys' summary, with the uplink and the
/// downlink (the input delay and the drain, named as the wire's); returns what the near end
/// says of itself.
pub fn follow_over_the_wire(timeline: &Timeline, latencies: &mut KeyLatencies) -> NearEndRun {
    let ms = |ns: u64| ns as f64 / 1e6;
    let near = near_end(timeline, &offsets(timeline));
    for key in &mut latencies.each {
        let frame = key.burst.and_then(|f| near.frames.get(f));
        if let Some((last_byte, pieces)) = frame.and_then(|f| f.last_byte_ns.zip(f.pieces)) {
            key.near = AtNearEnd {
                last_byte_ms: Some(ms(last_byte.saturating_sub(key.sent_ns))),
                pieces: Some(pieces.count),
                tear_ms: Some(ms(pieces.last_ns.saturating_sub(pieces.first_ns))),
            };
        }
    }
    let each = &latencies.each;
    latencies.key_to_last_byte_ms =
        Percentiles::of(each.iter().filter_map(|k| k.near.last_byte_ms));
    latencies.pieces_per_frame =
        Percentiles::of(each.iter().filter_map(|k| k.near.pieces.map(|p| p as f64)));
    latencies.tear_ms = Percentiles::of(each.iter().filter_map(|k| k.near.tear_ms));
    if let Some(stages) = latencies.stages_ms.as_mut() {
        stages.uplink = stages.input_delay;
        stages.downlink = stages.drain;
    }
    let arrived: Vec<super::near::Pieces> = near.frames.iter().filter_map(|f| f.pieces).collect();
    let every_frame = Percentiles::of(arrived.iter().map(|p| p.count as f64))
        .zip(Percentiles::of(
            arrived
                .iter()
                .map(|p| ms(p.last_ns.saturating_sub(p.first_ns))),
        ))
        .map(|(pieces_per_frame, tear_ms)| EveryFrame {
            frames: arrived.len() as u64,
            pieces_per_frame,
            tear_ms,
        });
    NearEndRun {
        every_frame,
        pieces_from: each
            .iter()
            .any(|k| k.near.pieces.is_some())
            .then_some(near.pieces_from)
            .flatten(),
        layer_own: near.layer_own,
        superseded_frames: near.superseded,
    }
}
