//! What a person sees while a frame arrives: a model of a terminal fed the bytes as they came,
//! painting when its [`PaintPolicy`] says.
//!
//! For each key, S0 is the screen settled before it (when it was sent) and S1 the screen
//! settled after it (when the next key was sent, or the run ended). Every other state the
//! terminal paints in between is a *visible state*, with the time it stayed on screen, and one
//! of these, in this order (the cursor's cell is left out):
//! - a **flash** where a cell that is the same in S0 and S1 shows something else (the frame
//!   blanked or overwrote what it then put back);
//! - a **tear** where the state is neither S0 nor S1 but every cell is S0's or S1's;
//! - otherwise a **step** (a frame's way from one to the other, e.g. a list scrolling).
//!
//! The counts are of states on screen for at least one 60 Hz refresh ([`policy::REFRESH`]);
//! shorter ones are counted apart, as `brief`. Per key also: the scrollback churn (lines pushed
//! into the scrollback that copy lines already there or on screen) and the share of its bytes
//! inside synchronized-output blocks.
//!
//! The model reads a [`Transcript`] after the run, twice (the screens at the keys' edges, then
//! the paints held against them): nothing of it runs beside the reading of the program.

pub mod frames;
pub mod painter;
pub mod policy;
pub mod states;

pub use policy::PaintPolicy;

/// The bytes a terminal read, in the reads they came in, each with when it came
/// (CLOCK_MONOTONIC ns); kept up to [`Transcript::LIMIT`] bytes, then cut.
#[derive(Clone, Debug, Default)]
pub struct Transcript {
    bytes: Vec<u8>,
    /// Where each read ends in `bytes`, and when it came.
    reads: Vec<(usize, u64)>,
    /// Bytes that came after the limit, not kept.
    pub cut: u64,
}

impl Transcript {
    /// 256 MiB: 16 s of the fastest program measured here (a raw 200x60 frame at 16 MB/s).
    pub const LIMIT: usize = 256 << 20;

    pub fn push(&mut self, chunk: &[u8], at_ns: u64) {
        if self.cut > 0 || self.bytes.len() + chunk.len() > Self::LIMIT {
            self.cut += chunk.len() as u64;
            return;
        }
        self.bytes.extend_from_slice(chunk);
        self.reads.push((self.bytes.len(), at_ns));
    }

    /// Each read's bytes and when it came.
    pub fn reads(&self) -> impl Iterator<Item = (&[u8], u64)> {
        let mut start = 0;
        self.reads.iter().map(move |&(end, at)| {
            let chunk = &self.bytes[start..end];
            start = end;
            (chunk, at)
        })
    }

    pub fn len(&self) -> usize {
        self.bytes.len()
    }

    pub fn is_empty(&self) -> bool {
        self.bytes.is_empty()
    }
}
