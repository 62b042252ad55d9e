//! The terminal model on the explorer's own frames: once a second, two frames in a row
//! are copied as the mode's writer stack cuts them into write(2)s
//! ([`writer_mode::same_writes`], beside the real stack, never under it), and a thread of
//! their own paints the second on the screen the first left ([`FrameModel`]). What it counts
//! comes back to the meters of the mode and condition it was taken under: torn paints a
//! second in the HUD and the table.
//!
//! The copy is put in front of the mode's writer for those two frames only: a layer there at
//! every frame cost 10–25% of `stdout/frame`'s frames a second (tens of thousands of encoder
//! writes a frame, each through one more call). The model's thread takes what it is given or
//! drops it when busy: it never holds up a frame.

use std::io::{self, Write};
use std::sync::mpsc::{Receiver, SyncSender, TryRecvError, TrySendError, sync_channel};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use crate::plumbing::renderer::BoxedWriter;
use flushlab_core::condition::Condition;
use flushlab_core::seen::PaintPolicy;
use flushlab_core::seen::frames::{FrameModel, FrameSeen, TimedWrite};
use flushlab_core::writer_mode::{self, Mode};

/// How often two frames are taken for the model.
pub const EVERY: Duration = Duration::from_secs(1);

/// Write(2)s as the copy cut them, shared by the copy and the watch.
type Writes = Arc<Mutex<Vec<TimedWrite>>>;

/// The bottom of the copy: each write(2) the stack makes, kept whole with when it was made
/// (the real write is made just before: the copy is fed after it).
struct Kept(Writes);

impl Write for Kept {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let at_ns = flushlab_core::sys::monotonic_ns();
        self.0
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push((at_ns, buf.to_vec()));
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// For the two frames of a sample, the mode's writer with a copy of its stack fed the same
/// bytes; between samples it is not there at all, so it costs the frames nothing.
struct Teed {
    real: Shared,
    copy: Box<dyn Write + Send>,
}

/// The mode's writer while a [`Teed`] holds it: handed back whole when the sample ends.
type Shared = Arc<Mutex<Option<BoxedWriter>>>;

fn taken() -> io::Error {
    io::Error::other("the mode's writer was handed back")
}

impl Write for Teed {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let mut real = self.real.lock().unwrap_or_else(PoisonError::into_inner);
        let n = real.as_mut().ok_or_else(taken)?.write(buf)?;
        self.copy.write_all(&buf[..n])?;
        Ok(n)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.copy.flush()?;
        let mut real = self.real.lock().unwrap_or_else(PoisonError::into_inner);
        real.as_mut().ok_or_else(taken)?.flush()
    }
}

/// What the model is given: two frames' write(2)s and where they were taken.
struct Sample {
    mode: Mode,
    condition: Condition,
    before: Vec<TimedWrite>,
    frame: Vec<TimedWrite>,
}

/// Where a sample is in its two frames.
enum Phase {
    Idle {
        next: Instant,
    },
    /// The frame that brings the model's screen up to date is being copied.
    Settling,
    /// The frame that is seen is being copied; the one before it is kept.
    Seeing(Vec<TimedWrite>),
}

/// See the module's documentation.
pub struct FrameWatch {
    writes: Writes,
    /// The mode's writer while it is teed.
    real: Option<Shared>,
    phase: Phase,
    to_model: Option<SyncSender<Sample>>,
    seen: Receiver<(Mode, Condition, FrameSeen)>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl FrameWatch {
    /// The model's thread started, painting as `policy` says; the first sample is taken from
    /// the next frame.
    pub fn start(policy: PaintPolicy) -> io::Result<FrameWatch> {
        let (to_model, samples) = sync_channel::<Sample>(1);
        let (to_meters, seen) = sync_channel(16);
        let thread = flushlab_core::sys::spawn_thread("flushlab-model", move || {
            let mut model: Option<FrameModel> = None;
            while let Ok(sample) = samples.recv() {
                let size = (sample.condition.cols, sample.condition.rows);
                let model = match &mut model {
                    Some(model) if model.size() == size => model,
                    _ => model.insert(FrameModel::new(policy, size)),
                };
                model.settle(&sample.before);
                let seen = model.see(&sample.frame);
                if to_meters
                    .try_send((sample.mode, sample.condition, seen))
                    .is_err_and(|e| matches!(e, TrySendError::Disconnected(_)))
                {
                    return;
                }
            }
        })?;
        Ok(FrameWatch {
            writes: Writes::default(),
            real: None,
            phase: Phase::Idle {
                next: Instant::now(),
            },
            to_model: Some(to_model),
            seen,
            thread: Some(thread),
        })
    }

    /// The next sample at the next frame: a new mode's first figures come at once, not a
    /// second later (the tour's visits may be shorter than that).
    pub fn sample_soon(&mut self) {
        if let Phase::Idle { next } = &mut self.phase {
            *next = Instant::now();
        }
    }

    /// Whether a sample is due: the next frame is to be copied.
    pub fn due(&self, now: Instant) -> bool {
        matches!(self.phase, Phase::Idle { next } if now >= next)
    }

    /// Whether the mode's writer is teed (a sample is under way).
    pub fn teed(&self) -> bool {
        self.real.is_some()
    }

    /// `real`, the writer of `mode`, teed for the two frames of a sample: what to write them
    /// through.
    pub fn tee(&mut self, real: BoxedWriter, mode: Mode) -> BoxedWriter {
        self.take();
        let shared: Shared = Arc::new(Mutex::new(Some(real)));
        self.real = Some(Arc::clone(&shared));
        self.phase = Phase::Settling;
        Box::new(Teed {
            real: shared,
            copy: writer_mode::same_writes(
                mode.buffering,
                mode.capacity,
                Kept(Arc::clone(&self.writes)),
            ),
        })
    }

    /// The mode's writer handed back (the sample ends, finished or not): the tee that held it
    /// writes nothing more.
    pub fn untee(&mut self, now: Instant) -> Option<BoxedWriter> {
        self.take();
        self.phase = Phase::Idle { next: now + EVERY };
        let shared = self.real.take()?;
        shared.lock().unwrap_or_else(PoisonError::into_inner).take()
    }

    fn take(&self) -> Vec<TimedWrite> {
        std::mem::take(&mut *self.writes.lock().unwrap_or_else(PoisonError::into_inner))
    }

    /// A frame of `mode` under `condition` was sent (and flushed): its write(2)s are taken.
    /// Returns true when the sample is complete (it went to the model, unless the model was
    /// still busy with the last): the writer is to be untee'd.
    pub fn after_frame(&mut self, mode: Mode, condition: Condition) -> bool {
        match std::mem::replace(&mut self.phase, Phase::Settling) {
            Phase::Idle { next } => {
                self.phase = Phase::Idle { next };
                false
            }
            Phase::Settling => {
                self.phase = Phase::Seeing(self.take());
                false
            }
            Phase::Seeing(before) => {
                let frame = self.take();
                if let Some(to_model) = &self.to_model {
                    let _ = to_model.try_send(Sample {
                        mode: mode.key(),
                        condition,
                        before,
                        frame,
                    });
                }
                true
            }
        }
    }

    /// What the model has seen since the last call, each with where it was taken.
    pub fn seen(&self) -> Vec<(Mode, Condition, FrameSeen)> {
        let mut all = Vec::new();
        loop {
            match self.seen.try_recv() {
                Ok(seen) => all.push(seen),
                Err(TryRecvError::Empty | TryRecvError::Disconnected) => return all,
            }
        }
    }
}

impl FrameWatch {
    /// The model's last samples painted (it is waited for): what it saw that was not yet
    /// taken.
    pub fn finish(mut self) -> Vec<(Mode, Condition, FrameSeen)> {
        self.to_model = None;
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
        self.seen()
    }
}

impl Drop for FrameWatch {
    fn drop(&mut self) {
        self.to_model = None;
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}
