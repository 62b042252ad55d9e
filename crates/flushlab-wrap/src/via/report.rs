//! What a run says of its wire: the settings, each key's frame at the near end (core's
//! [`follow_over_the_wire`](flushlab_core::detect::wire::follow_over_the_wire)), what crossed the link, and the
//! summary's line.

use serde::Serialize;

use super::wire::{ViaSettings, Wire};

/// What a run says of its wire: the settings, each key's frame at the near end, and what
/// crossed the link.
#[derive(Clone, Debug, Serialize)]
pub struct ViaReport {
    #[serde(flatten)]
    pub settings: ViaSettings,
    #[serde(flatten)]
    pub near: flushlab_core::detect::wire::NearEndRun,
    pub wire: WireFigures,
    /// Synchronized-output blocks through the layers; `None` where the near end's pieces were
    /// not kept.
    pub sync_blocks: Option<SyncBlocks>,
}

/// Synchronized-output blocks (DEC 2026): how many CMD wrote (`None` where a layer redraws:
/// what CMD wrote to the far pty is the layer's to read, and only ssh forwards it as it is),
/// how many reached the near end, and how many whole (begin and end in one piece).
#[derive(Clone, Copy, Debug, Serialize)]
pub struct SyncBlocks {
    pub sent: Option<u64>,
    pub arrived: u64,
    pub whole: u64,
}

/// What crossed the link towards the near end while each answered key's frame did (from the
/// far frame's first write to its last byte at the near end): IP packets, headers included,
/// and how many the link dropped in the whole run. Without a link (`--via tmux`), none.
#[derive(Clone, Debug, Default, Serialize)]
pub struct WireFigures {
    pub packets_per_frame: Option<flushlab_core::detect::keyed::Percentiles>,
    pub bytes_per_frame: Option<flushlab_core::detect::keyed::Percentiles>,
    pub dropped_up: u64,
    pub dropped_down: u64,
}

impl ViaReport {
    /// The run's keys followed through `wire`: each key's figures at the near end set on
    /// `keys`, and what the run says of its wire.
    /// `blocks`: the synchronized-output blocks at the near end, where each began and ended in
    /// its stream.
    pub fn of(
        wire: &Wire,
        (timeline, blocks): (&flushlab_core::detect::timeline::Timeline, &[(u64, u64)]),
        keys: &mut flushlab_core::detect::keyed::KeyLatencies,
    ) -> ViaReport {
        use flushlab_core::detect::keyed::Percentiles;
        let near = flushlab_core::detect::wire::follow_over_the_wire(timeline, keys);
        let figures = wire.link().map(|link| {
            let crossed: Vec<(u64, u64)> = keys
                .each
                .iter()
                .filter_map(|key| {
                    // From the frame's first write: an unbuffered frame crosses while drawn.
                    let (_, first, _) = key.stage_spans().into_iter().find(|(stage, _, _)| {
                        *stage == flushlab_core::detect::keyed::Stage::Emit
                    })?;
                    let last = key.sent_ns + (key.near.last_byte_ms? * 1e6) as u64;
                    link.down_between(first, last + 1)
                })
                .collect();
            let (dropped_up, dropped_down) = link.dropped();
            WireFigures {
                packets_per_frame: Percentiles::of(crossed.iter().map(|c| c.0 as f64)),
                bytes_per_frame: Percentiles::of(crossed.iter().map(|c| c.1 as f64)),
                dropped_up,
                dropped_down,
            }
        });
        let forwarded = wire.settings().matching == "bytes";
        let sync_blocks =
            flushlab_core::detect::near::sync_arrived(timeline, blocks).map(|arrived| SyncBlocks {
                sent: forwarded.then_some(arrived.arrived),
                arrived: arrived.arrived,
                whole: arrived.whole,
            });
        ViaReport {
            settings: wire.settings().clone(),
            near,
            wire: figures.unwrap_or_default(),
            sync_blocks,
        }
    }

    /// The summary's line, with the figures `keys` carry.
    pub fn summary(&self, keys: &flushlab_core::detect::keyed::KeyLatencies) -> String {
        let p = |p: Option<flushlab_core::detect::keyed::Percentiles>, unit: &str| {
            p.map_or("n/a".to_owned(), |p| {
                format!(
                    "{:.2}{unit} / {:.2}{unit} / {:.2}{unit}",
                    p.p50, p.p95, p.max
                )
            })
        };
        let layers: Vec<&str> = self.settings.layers.iter().map(|l| l.name()).collect();
        let rate = self
            .settings
            .rate_bytes_per_s
            .map_or("unlimited".to_owned(), |r| format!("{r} B/s"));
        let own = self.near.layer_own.map_or("n/a".to_owned(), |own| {
            format!("{} pieces, {} B", own.pieces, own.bytes)
        });
        let stages = keys.stages_ms;
        format!(
            "wrap via {}{} (rtt {} ms, rate {rate}, loss {}; frames matched by {}, pieces from \
             {}), p50 / p95 / max: key→last byte {} · uplink {} · downlink {} · pieces a frame \
             {} · tear {} · on the wire a frame {} packets; dropped {} up, {} down; the \
             layers' own {own}; {} frames carried by a later one",
            layers.join(","),
            if self.settings.loopback {
                " over loopback, no relay"
            } else {
                ""
            },
            self.settings.rtt_ms,
            self.settings.loss,
            self.settings.matching,
            match self.near.pieces_from {
                Some(flushlab_core::detect::timeline::PiecesFrom::NearWrites) =>
                    "the near writer's writes",
                Some(flushlab_core::detect::timeline::PiecesFrom::NearReads) => "wrap's reads",
                None => "nothing",
            },
            p(keys.key_to_last_byte_ms, " ms"),
            p(stages.and_then(|s| s.uplink), " ms"),
            p(stages.and_then(|s| s.downlink), " ms"),
            p(keys.pieces_per_frame, ""),
            p(keys.tear_ms, " ms"),
            p(self.wire.packets_per_frame, ""),
            self.wire.dropped_up,
            self.wire.dropped_down,
            self.near.superseded_frames,
        )
    }
}
