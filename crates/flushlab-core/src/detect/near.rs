//! Where each of the far program's frames reached the near end (`flushlab wrap --via`), and
//! what reached it that no frame explains. Two rules, as the layer between them does:
//!
//! - **bytes** (ssh forwards a byte stream): a frame's bytes are its share of the near end's
//!   stream, in order, where `keyed::offsets` places them; its pieces
//!   are those that carried any of them;
//! - **time** (tmux and mosh redraw what changed): a frame's pieces are the near end's pieces
//!   done in its window ([`Redrawn`](super::timeline::Redrawn)): the first, and those that follow it with no longer pause.
//!   A frame whose window holds none was superseded: a later redraw carried it.
//!
//! Either way a frame's last byte is when wrap had read the last of its pieces (bytes: its
//! own last byte), never before its first write. Locally there are no pieces, only that.

use serde::Serialize;

use super::timeline::{Piece, PiecesFrom, Timeline};

/// The pieces a frame reached the near end in: how many write(2)s (or reads), when the first
/// began and the last was done.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Pieces {
    pub count: u64,
    pub first_ns: u64,
    pub last_ns: u64,
}

/// One far frame at the near end.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct NearFrame {
    /// When wrap had read its last byte.
    pub last_byte_ns: Option<u64>,
    /// Its pieces, where the near end's were kept.
    pub pieces: Option<Pieces>,
}

/// What reached the near end that no frame of the far program explains: a layer's own drawing
/// (tmux's status line, mosh's predictive echo), or bytes before the program's first frame.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct LayerOwn {
    pub pieces: u64,
    pub bytes: u64,
}

/// Every far frame at the near end.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct NearEnd {
    /// By the far frame's index; `None` where nothing of it is known to have reached it.
    pub frames: Vec<NearFrame>,
    /// What the pieces were counted from; `None` where none were kept (a local run).
    pub pieces_from: Option<PiecesFrom>,
    /// `None` where no pieces were kept.
    pub layer_own: Option<LayerOwn>,
    /// Frames whose window held no piece (matching by time only).
    pub superseded: u64,
}

/// The run's far frames followed to the near end; `offsets` are each frame's end in the near
/// end's stream (bytes matching).
pub fn near_end(timeline: &Timeline, offsets: &[Option<u64>]) -> NearEnd {
    let bursts = timeline.inside.as_ref().map_or(&[][..], |i| &i.bursts[..]);
    let chunks = &timeline.chunks;
    let kept = chunks.near_pieces();
    let pieces = kept.as_ref().map_or(&[][..], |k| &k.0[..]);
    let mut used = vec![false; pieces.len()];
    let mut superseded = 0;
    let mut frames = Vec::with_capacity(bursts.len());
    for (f, burst) in bursts.iter().enumerate() {
        let range = match chunks.redraws() {
            None => offsets
                .get(f)
                .copied()
                .flatten()
                .map(|end| (end.saturating_sub(burst.bytes), end))
                .and_then(|(start, end)| carrying(pieces, start, end)),
            Some(redrawn) => {
                let from = burst.first_write_ns + redrawn.delay_ns;
                let until = bursts
                    .get(f + 1)
                    .map_or(u64::MAX, |next| next.first_write_ns + redrawn.delay_ns);
                let range = in_window(pieces, (from, until), redrawn.quiet_ns);
                superseded += u64::from(range.is_none() && kept.is_some());
                range
            }
        };
        let last_offset = match (chunks.redraws(), &range) {
            (None, _) => offsets.get(f).copied().flatten(),
            (Some(_), Some((_, last))) => Some(pieces[*last].upto),
            (Some(_), None) => None,
        };
        let pieces = range.map(|(first, last)| {
            used[first..=last].iter_mut().for_each(|u| *u = true);
            Pieces {
                count: pieces[first..=last].iter().map(|p| p.count).sum(),
                first_ns: pieces[first].first_ns,
                last_ns: pieces[last].last_ns,
            }
        });
        frames.push(NearFrame {
            last_byte_ns: last_offset
                .and_then(|o| chunks.reached(o))
                .filter(|&at| at >= burst.first_write_ns),
            pieces,
        });
    }
    let layer_own = kept.as_ref().map(|_| {
        let mut before = 0;
        let mut own = LayerOwn::default();
        for (piece, used) in pieces.iter().zip(&used) {
            if !used {
                own.pieces += piece.count;
                own.bytes += piece.upto - before;
            }
            before = piece.upto;
        }
        own
    });
    NearEnd {
        frames,
        pieces_from: kept.map(|k| k.1),
        layer_own,
        superseded,
    }
}

/// Synchronized-output blocks (DEC 2026) at the near end: how many arrived, and how many
/// whole, their begin and their end in one of the near end's pieces (a terminal shows such a
/// block at once; one torn across pieces it may show half drawn, or hold).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct SyncArrived {
    pub arrived: u64,
    pub whole: u64,
}

/// `blocks` (each one's begin and end offset in the near end's stream) against the near end's
/// pieces; `None` where no pieces were kept.
pub fn sync_arrived(timeline: &Timeline, blocks: &[(u64, u64)]) -> Option<SyncArrived> {
    let (pieces, _) = timeline.chunks.near_pieces()?;
    let carrying = |offset: u64| pieces.partition_point(|p| p.upto <= offset);
    Some(SyncArrived {
        arrived: blocks.len() as u64,
        whole: blocks
            .iter()
            .filter(|(begin, end)| {
                carrying(*begin) == carrying(*end) && carrying(*end) < pieces.len()
            })
            .count() as u64,
    })
}

/// The pieces that carried any of the bytes `from..to` of the near end's stream, as indices;
/// `None` where they were not all kept.
fn carrying(pieces: &[Piece], from: u64, to: u64) -> Option<(usize, usize)> {
    if from >= to || pieces.last().is_none_or(|p| p.upto < to) {
        return None;
    }
    // A piece carries bytes (before, upto]: the first whose end passes `from`, on until the
    // first whose end reaches `to`.
    let first = pieces.partition_point(|p| p.upto <= from);
    let last = pieces.partition_point(|p| p.upto < to);
    Some((first, last))
}

/// The pieces of a frame whose window is `from..until`: the first done in it, and each after
/// it begun within `quiet_ns` of the one before and done in the window too.
fn in_window(pieces: &[Piece], (from, until): (u64, u64), quiet_ns: u64) -> Option<(usize, usize)> {
    let first = pieces.partition_point(|p| p.last_ns < from);
    if pieces.get(first).is_none_or(|p| p.last_ns >= until) {
        return None;
    }
    let mut last = first;
    while let Some(next) = pieces.get(last + 1) {
        if next.last_ns >= until || next.first_ns.saturating_sub(pieces[last].last_ns) > quiet_ns {
            break;
        }
        last += 1;
    }
    Some((first, last))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::detect::timeline::{Burst, Inside, NearWrites, Redrawn};

    fn frame(first_write_ns: u64, end_ns: u64, bytes: u64) -> Burst {
        Burst {
            pid: 1,
            tid: 1,
            first_write_ns,
            end_ns,
            writes: 1,
            bytes,
            continues: false,
        }
    }

    fn burst(first_ns: u64, end_ns: u64, writes: u64, bytes: u64) -> NearWrites {
        NearWrites {
            first_ns,
            end_ns,
            writes,
            bytes,
        }
    }

    const MS: u64 = 1_000_000;

    #[test]
    fn by_bytes_a_frame_is_carried_by_the_pieces_its_bytes_came_in() {
        let mut timeline = Timeline {
            inside: Some(Inside {
                bursts: vec![frame(0, MS / 2, 300), frame(4 * MS, 4 * MS, 100)],
                ..Inside::default()
            }),
            ..Timeline::default()
        };
        let chunks = &mut timeline.chunks;
        chunks.each_read();
        // The first frame's 300 bytes read in three pieces, 1 ms apart; then the second's.
        for i in 1..=3 {
            chunks.note(i * MS, 100);
        }
        chunks.note(5 * MS, 100);
        let by_reads = near_end(&timeline, &[Some(300), Some(400)]);
        assert_eq!(by_reads.pieces_from, Some(PiecesFrom::NearReads));
        let first = by_reads.frames[0];
        assert_eq!(first.last_byte_ns, Some(3 * MS));
        assert_eq!(
            first.pieces,
            Some(Pieces {
                count: 3,
                first_ns: MS,
                last_ns: 3 * MS
            })
        );
        // Seen written: one write of 300, then two writes of 50 in one burst.
        timeline.chunks.near_writes(&[
            burst(MS - 100, MS - 50, 1, 300),
            burst(5 * MS - 100, 5 * MS - 50, 2, 100),
        ]);
        let by_writes = near_end(&timeline, &[Some(300), Some(400)]);
        assert_eq!(by_writes.frames[0].pieces.unwrap().count, 1);
        assert_eq!(by_writes.frames[1].pieces.unwrap().count, 2);
        assert_eq!(by_writes.layer_own, Some(LayerOwn::default()));
        // An offset astray (its bytes not known) says nothing; nor do bytes never read.
        let astray = near_end(&timeline, &[None, Some(500)]);
        assert_eq!(
            astray.frames[0],
            NearFrame {
                last_byte_ns: None,
                pieces: None
            }
        );
        assert_eq!(astray.frames[1].pieces, None);
    }

    #[test]
    fn a_synchronized_block_is_whole_where_one_piece_carries_its_begin_and_its_end() {
        let mut timeline = Timeline::default();
        timeline.chunks.each_read();
        assert_eq!(sync_arrived(&timeline, &[(0, 10)]).unwrap().arrived, 1);
        for i in 1..=3 {
            timeline.chunks.note(i * MS, 100);
        }
        // Bytes 0..100, 100..200 and 200..300 in three pieces: the first block in the first,
        // the second torn across two, the third past what arrived.
        let at = sync_arrived(&timeline, &[(10, 90), (150, 250), (290, 400)]).unwrap();
        assert_eq!(
            at,
            SyncArrived {
                arrived: 3,
                whole: 1
            }
        );
        assert_eq!(sync_arrived(&Timeline::default(), &[(0, 10)]), None);
    }

    #[test]
    fn by_time_a_redraw_is_matched_to_the_frame_before_it_and_the_rest_is_the_layers() {
        let mut timeline = Timeline {
            inside: Some(Inside {
                bursts: vec![
                    frame(10 * MS, 11 * MS, 5_000),
                    frame(20 * MS, 21 * MS, 5_000),
                    frame(22 * MS, 23 * MS, 5_000),
                    frame(40 * MS, 41 * MS, 5_000),
                ],
                ..Inside::default()
            }),
            ..Timeline::default()
        };
        let chunks = &mut timeline.chunks;
        chunks.each_read();
        // A status line before any frame; the first frame redrawn in two pieces 1 ms apart,
        // and a status line 30 ms later in its window; the second and third frames in one
        // redraw after the third began; the fourth once.
        let near = [
            burst(2 * MS, 2 * MS, 1, 40),
            burst(11 * MS, 11 * MS, 1, 700),
            burst(12 * MS, 12 * MS, 1, 300),
            burst(18 * MS, 18 * MS, 1, 40),
            burst(23 * MS, 23 * MS, 2, 900),
            burst(41 * MS, 41 * MS, 1, 800),
        ];
        let mut upto = 0;
        for b in &near {
            upto += b.bytes;
            chunks.note(b.end_ns + 10_000, b.bytes as usize);
        }
        assert_eq!(upto, chunks.total());
        chunks.near_writes(&near);
        chunks.redrawn(Redrawn {
            delay_ns: 0,
            quiet_ns: 5 * MS,
        });
        let at = near_end(&timeline, &[]);
        let counts: Vec<Option<u64>> = at
            .frames
            .iter()
            .map(|f| f.pieces.map(|p| p.count))
            .collect();
        assert_eq!(counts, [Some(2), None, Some(2), Some(1)]);
        assert_eq!(at.frames[0].pieces.unwrap().last_ns, 12 * MS);
        assert_eq!(at.frames[0].last_byte_ns, Some(12 * MS + 10_000));
        assert_eq!(at.superseded, 1);
        assert_eq!(
            at.layer_own,
            Some(LayerOwn {
                pieces: 2,
                bytes: 80
            })
        );
        // The link's delay moves each window: at 7 ms, the first frame's pieces are too early
        // and its window holds the status line alone (the next redraw 5 ms after it, beyond a
        // quiet of 2).
        timeline.chunks.redrawn(Redrawn {
            delay_ns: 7 * MS,
            quiet_ns: 2 * MS,
        });
        let late = near_end(&timeline, &[]);
        assert_eq!(late.frames[0].pieces.unwrap().count, 1);
        assert_eq!(late.frames[0].pieces.unwrap().first_ns, 18 * MS);
    }
}
