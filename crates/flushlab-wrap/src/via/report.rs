//! What a run says of its wire: the settings, each key's frame at the near end (core's
//! [`follow_over_the_wire`](flushlab_core::detect::wire::follow_over_the_wire)), what crossed the link, and the
//! summary's line.

use serde::Serialize;

use super::layers::Layer;
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

/// Synchronized-output blocks (DEC 2026): how many CMD opened (its frames that did, as the
/// observer at the far end saw its writes; `None` where it did not look), how many reached the
/// near end, and how many whole (begin and end in one piece).
#[derive(Clone, Copy, Debug, Serialize)]
pub struct SyncBlocks {
    pub sent: Option<u64>,
    pub arrived: u64,
    pub whole: u64,
}

/// CMD's synchronized-output blocks that did not reach the near end whole: how many it opened,
/// how many arrived, and the layer that dropped them — the one nearest CMD that redraws the
/// near terminal from a screen of its own (a byte stream, ssh, forwards them as they are). A
/// layer's own blocks around its own redraws would count as arrived: tmux 3.3a writes none.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct SyncLost {
    pub opened: u64,
    /// Blocks that reached the near end, where wrap read it (headless); `None` in a real
    /// terminal, which reads the near end itself: there the camera judged (the terminal holds
    /// both forms, yet keys flashed or tore).
    pub arrived: Option<u64>,
    pub by: Option<Layer>,
}

impl SyncLost {
    /// Fewer blocks arrived than CMD opened, through `layers` (listed from the near end).
    pub fn judge(layers: &[Layer], opened: u64, arrived: u64) -> Option<SyncLost> {
        (arrived < opened).then(|| SyncLost {
            opened,
            arrived: Some(arrived),
            by: nearest_cmd_that_redraws(layers),
        })
    }

    /// In a real terminal that holds every block (`holds`): CMD opened blocks, yet `shown`
    /// keys flashed or tore on its screen, so they were lost on the way.
    pub fn judge_on_screen(
        layers: &[Layer],
        opened: u64,
        (holds, shown): (bool, u64),
    ) -> Option<SyncLost> {
        (holds && opened > 0 && shown > 0).then(|| SyncLost {
            opened,
            arrived: None,
            by: nearest_cmd_that_redraws(layers),
        })
    }

    /// The summary's clause.
    pub fn clause(&self) -> String {
        use flushlab_core::units::thousands;
        format!(
            "CMD's 2026 blocks were dropped {} ({} of its frames opened one, {})",
            self.by.map_or(
                "on the way (by no layer that redraws)".to_owned(),
                |l| format!("by {}", l.name())
            ),
            thousands(self.opened),
            self.arrived.map_or(
                "yet keys flashed or tore in a terminal that holds them".to_owned(),
                |a| format!("{} reached the near end", thousands(a))
            )
        )
    }
}

fn nearest_cmd_that_redraws(layers: &[Layer]) -> Option<Layer> {
    layers.iter().rev().copied().find(|l| l.redraws())
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
    /// `opened`: CMD's frames that opened a block, where the observer looked at the far end.
    pub fn of(
        wire: &Wire,
        (timeline, blocks, opened): (
            &flushlab_core::detect::timeline::Timeline,
            &[(u64, u64)],
            Option<u64>,
        ),
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
        let sync_blocks =
            flushlab_core::detect::near::sync_arrived(timeline, blocks).map(|arrived| SyncBlocks {
                sent: opened,
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

    /// CMD's blocks lost on the way, where the observer saw CMD open any.
    pub fn sync_lost(&self) -> Option<SyncLost> {
        let blocks = self.sync_blocks?;
        SyncLost::judge(&self.settings.layers, blocks.sent?, blocks.arrived)
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

#[cfg(test)]
mod tests {
    use super::{Layer, SyncLost};

    #[test]
    fn blocks_lost_are_laid_on_the_layer_nearest_cmd_that_redraws() {
        let judged = |layers: &[Layer], opened, arrived| {
            SyncLost::judge(layers, opened, arrived).map(|lost| lost.by)
        };
        assert_eq!(judged(&[Layer::Ssh], 20, 20), None);
        assert_eq!(judged(&[Layer::Tmux], 20, 0), Some(Some(Layer::Tmux)));
        assert_eq!(
            judged(&[Layer::Ssh, Layer::Tmux], 20, 0),
            Some(Some(Layer::Tmux))
        );
        assert_eq!(judged(&[Layer::Mosh], 20, 3), Some(Some(Layer::Mosh)));
        // A byte stream alone loses none: where some are missing, no layer is blamed.
        assert_eq!(judged(&[Layer::Ssh], 20, 19), Some(None));
        // CMD opened none: nothing to lose.
        assert_eq!(judged(&[Layer::Tmux], 0, 0), None);
        let clause = SyncLost::judge(&[Layer::Tmux], 20, 0).unwrap().clause();
        assert!(clause.starts_with("CMD's 2026 blocks were dropped by tmux (20 of its frames"));
        // On a real terminal's screen: judged only where it holds the blocks and keys showed.
        let on_screen = |holds, shown| {
            SyncLost::judge_on_screen(&[Layer::Ssh, Layer::Tmux], 20, (holds, shown))
                .map(|lost| lost.by)
        };
        assert_eq!(on_screen(true, 18), Some(Some(Layer::Tmux)));
        assert_eq!(on_screen(true, 0), None);
        assert_eq!(on_screen(false, 18), None);
    }
}
