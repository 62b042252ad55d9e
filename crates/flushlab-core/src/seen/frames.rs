//! What a terminal paints of a program's own frames, each as it reaches the terminal in pieces:
//! the explorer's frames, held to the model as they leave its writer.
//!
//! A frame's pieces are its write(2)s as the mode's buffering makes them, each cut at the tty
//! layer's [`TTY_CHUNK`] (the kernel hands a larger write to the pty in pieces of that size).
//! Each write comes with when it was made, and the policy paints on that clock. An eager
//! terminal that keeps up reads each piece on its own and paints it; a slower one reads several
//! at once. So an eager policy's counts are what the fastest terminal could paint: an upper
//! bound that a real terminal's reads can only lower (its camera says by how much). A paint
//! here is a state, however briefly shown.

use serde::Serialize;

use super::painter::{Canvas, Painter};
use super::policy::PaintPolicy;
use super::states::{Kind, cells, classify};

/// The most a pty hands its reader of one write(2) at once: Linux's `tty_write` passes a write
/// to the line discipline in chunks of 2,048 bytes.
pub const TTY_CHUNK: usize = 2048;

/// Paints held against S0 and S1 in one frame at most: past that, evenly spaced paints are, and
/// the counts are scaled from them (a raw frame is painted thousands of times).
pub const CLASSIFIED: usize = 64;

/// What the model painted of one frame.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct FrameSeen {
    /// The frame's pieces (write(2)s cut at [`TTY_CHUNK`]).
    pub pieces: u64,
    /// States painted while it arrived, the last (S1) included.
    pub paints: u64,
    /// Of those, the tears and the flashes (scaled from [`CLASSIFIED`] paints where there were
    /// more).
    pub torn: u64,
    pub flashed: u64,
}

impl FrameSeen {
    /// Whether the frame showed a state between the screen before it and after it.
    pub fn showed_between(&self) -> bool {
        self.torn + self.flashed > 0
    }
}

/// Frames seen over a stretch: the sum of the frames the model was given.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct FramesSeen {
    /// Frames the model was given (a sample of the frames sent).
    pub frames: u64,
    /// Of those, frames that showed a tear or a flash.
    pub torn_frames: u64,
    pub pieces: u64,
    pub paints: u64,
    pub torn: u64,
    pub flashed: u64,
}

impl FramesSeen {
    pub fn add(&mut self, frame: &FrameSeen) {
        self.frames += 1;
        self.torn_frames += u64::from(frame.showed_between());
        self.pieces += frame.pieces;
        self.paints += frame.paints;
        self.torn += frame.torn;
        self.flashed += frame.flashed;
    }

    pub fn merge(&mut self, other: &FramesSeen) {
        self.frames += other.frames;
        self.torn_frames += other.torn_frames;
        self.pieces += other.pieces;
        self.paints += other.paints;
        self.torn += other.torn;
        self.flashed += other.flashed;
    }

    /// The share of the sampled frames that showed a tear or a flash.
    pub fn torn_share(&self) -> Option<f64> {
        (self.frames > 0).then(|| self.torn_frames as f64 / self.frames as f64)
    }

    /// Torn or flashed paints a frame, on average over the sample.
    pub fn torn_per_frame(&self) -> Option<f64> {
        (self.frames > 0).then(|| (self.torn + self.flashed) as f64 / self.frames as f64)
    }

    /// Pieces a frame, on average over the sample.
    pub fn pieces_per_frame(&self) -> Option<f64> {
        (self.frames > 0).then(|| self.pieces as f64 / self.frames as f64)
    }
}

/// One write(2): when it was made (CLOCK_MONOTONIC ns), and its bytes.
pub type TimedWrite = (u64, Vec<u8>);

/// A write(2)'s bytes as the pty hands them on: pieces of at most [`TTY_CHUNK`].
pub fn pieces_of(write: &[u8]) -> impl Iterator<Item = &[u8]> {
    write.chunks(TTY_CHUNK)
}

/// The model of one terminal's screen across a program's frames.
pub struct FrameModel {
    painter: Painter,
    policy: PaintPolicy,
    size: (u16, u16),
    /// The last write's time: writes are taken in order, never back in time.
    clock: u64,
}

/// Keeps every `every`-th paint's cells.
struct Sampler {
    every: u64,
    paints: u64,
    kept: Vec<Vec<vt100::Cell>>,
}

impl Canvas for Sampler {
    fn paint(&mut self, _at_ns: u64, screen: &vt100::Screen) {
        if self.paints.is_multiple_of(self.every) {
            self.kept.push(cells(screen));
        }
        self.paints += 1;
    }
}

impl FrameModel {
    /// A `cols` x `rows` screen, blank, painted as `policy` says.
    pub fn new(policy: PaintPolicy, size: (u16, u16)) -> FrameModel {
        FrameModel {
            painter: Painter::new(policy, size),
            policy,
            size,
            clock: 0,
        }
    }

    pub fn policy(&self) -> PaintPolicy {
        self.policy
    }

    pub fn size(&self) -> (u16, u16) {
        self.size
    }

    /// A frame that only brings the screen up to date (the frame before one that is seen).
    pub fn settle(&mut self, writes: &[TimedWrite]) {
        let mut none = Sampler {
            every: u64::MAX,
            paints: 1,
            kept: Vec::new(),
        };
        self.paint(writes, &mut none);
    }

    /// `writes` fed piece by piece, then everything due painted: a frame ends settled (S1).
    fn paint(&mut self, writes: &[TimedWrite], canvas: &mut Sampler) {
        for (at_ns, write) in writes {
            self.clock = self.clock.max(*at_ns);
            for piece in pieces_of(write) {
                self.painter.feed(piece, self.clock, canvas);
            }
        }
        // Whatever policy: the frame's last state is painted before the next frame starts.
        self.clock = self
            .clock
            .saturating_add(self.policy.hold.as_nanos() as u64);
        self.painter.finish(self.clock, canvas);
    }

    /// The frame written in `writes` (its write(2)s in order), painted piece by piece as the
    /// policy says, each state held against the screen before the frame (S0) and after it
    /// (S1).
    pub fn see(&mut self, writes: &[TimedWrite]) -> FrameSeen {
        let before = cells(self.painter.screen());
        let pieces = writes.iter().flat_map(|(_, w)| pieces_of(w)).count();
        let mut sampler = Sampler {
            every: (pieces as u64).div_ceil(CLASSIFIED as u64).max(1),
            paints: 0,
            kept: Vec::new(),
        };
        self.paint(writes, &mut sampler);
        let after = cells(self.painter.screen());
        let (mut torn, mut flashed) = (0u64, 0u64);
        for kept in &sampler.kept {
            match classify(kept, &before, &after) {
                Some((Kind::Tear, _)) => torn += 1,
                Some((Kind::Flash, _)) => flashed += 1,
                Some((Kind::Step, _)) | None => {}
            }
        }
        // The kept paints stand for all of them, in proportion; the last paint, S1 itself,
        // is never between.
        let kept = sampler.kept.len().max(1) as u64;
        let scale =
            |n: u64| ((n * sampler.paints + kept / 2) / kept).min(sampler.paints.saturating_sub(1));
        FrameSeen {
            pieces: pieces as u64,
            paints: sampler.paints,
            torn: scale(torn),
            flashed: scale(flashed),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::seen::policy::SyncForms;

    /// Writes a microsecond apart.
    fn timed(writes: Vec<Vec<u8>>) -> Vec<TimedWrite> {
        (1u64..).map(|i| i * 1000).zip(writes).collect()
    }

    /// A 4x2 frame of `c`, each cell placed by a cursor move: one write a cell.
    fn cell_by_cell(c: char) -> Vec<Vec<u8>> {
        (0..2)
            .flat_map(|row| (0..4).map(move |col| format!("\x1b[{};{}H{c}", row + 1, col + 1)))
            .map(String::into_bytes)
            .collect()
    }

    fn eager(sync: bool) -> PaintPolicy {
        PaintPolicy {
            sync: SyncForms {
                csi: sync,
                dcs: sync,
            },
            ..PaintPolicy::default()
        }
    }

    #[test]
    fn a_frame_written_cell_by_cell_tears_at_every_piece_but_its_last() {
        let mut model = FrameModel::new(eager(true), (4, 2));
        model.settle(&timed(cell_by_cell('a')));
        let seen = model.see(&timed(cell_by_cell('b')));
        assert_eq!(
            seen,
            FrameSeen {
                pieces: 8,
                paints: 8,
                torn: 7,
                flashed: 0
            }
        );
        // The same frame in one write: one paint, S1 itself.
        let whole = timed(vec![cell_by_cell('c').concat()]);
        let seen = model.see(&whole);
        assert_eq!((seen.pieces, seen.paints, seen.torn), (1, 1, 0));
    }

    #[test]
    fn a_block_the_policy_honours_shows_nothing_between_and_one_it_ignores_does() {
        let mut block = vec![b"\x1b[?2026h".to_vec()];
        block.extend(cell_by_cell('b'));
        block.push(b"\x1b[?2026l".to_vec());
        for (sync, torn) in [(true, 0), (false, 7)] {
            let mut model = FrameModel::new(eager(sync), (4, 2));
            model.settle(&timed(cell_by_cell('a')));
            assert_eq!(
                model.see(&timed(block.clone())).torn,
                torn,
                "sync honoured: {sync}"
            );
        }
    }

    #[test]
    fn a_clear_before_the_draw_flashes() {
        let mut model = FrameModel::new(eager(true), (4, 2));
        model.settle(&timed(cell_by_cell('a')));
        let mut cleared = vec![b"\x1b[2J".to_vec()];
        cleared.extend(cell_by_cell('a'));
        let seen = model.see(&timed(cleared));
        // Blank, then a cell at a time back to the same screen: every state but the last
        // shows cells that S0 and S1 agree on as something else.
        assert_eq!((seen.paints, seen.flashed, seen.torn), (9, 8, 0));
    }

    #[test]
    fn a_write_longer_than_the_ttys_chunk_arrives_in_pieces_and_many_paints_are_sampled() {
        let mut model = FrameModel::new(eager(true), (80, 24));
        let row = |c: char| c.to_string().repeat(80);
        let frame = |c: char| {
            let text: String = (0..24)
                .map(|r| format!("\x1b[{};1H{}", r + 1, row(c)))
                .collect();
            text.into_bytes()
        };
        model.settle(&timed(vec![frame('a')]));
        let whole = frame('b');
        let seen = model.see(&timed(vec![whole.clone()]));
        assert_eq!(seen.pieces, whole.len().div_ceil(TTY_CHUNK) as u64);
        assert_eq!(seen.torn, seen.pieces - 1);
        // A byte a write: far more paints than are classified, the counts scaled.
        let bytes = timed(frame('c').into_iter().map(|b| vec![b]).collect());
        let seen = model.see(&bytes);
        assert_eq!(seen.paints, bytes.len() as u64);
        assert!(seen.torn > seen.paints * 9 / 10, "{seen:?}");
        assert!(seen.torn < seen.paints, "{seen:?}");
    }

    #[test]
    fn a_vsync_terminal_paints_a_frame_written_cell_by_cell_once_a_tick() {
        let vsync = PaintPolicy {
            when: crate::seen::policy::When::Vsync { hz: 60.0 },
            ..eager(true)
        };
        let mut model = FrameModel::new(vsync, (4, 2));
        model.settle(&timed(cell_by_cell('a')));
        // Eight writes over 8 µs: within one tick, painted whole.
        assert_eq!(model.see(&timed(cell_by_cell('b'))).torn, 0);
        // Eight writes 10 ms apart: 80 ms, five ticks, four of them mid-frame.
        let slow: Vec<TimedWrite> = cell_by_cell('c')
            .into_iter()
            .enumerate()
            .map(|(i, w)| (1_000_000_000 + i as u64 * 10_000_000, w))
            .collect();
        let seen = model.see(&slow);
        assert!((3..=5).contains(&seen.torn), "{seen:?}");
    }
}
