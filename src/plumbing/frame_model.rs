//! The terminal model on the explorer's own frames: four times a second, two frames in a row
//! are copied as the mode's writer stack cuts them into write(2)s
//! ([`writer_mode::same_writes`], beside the real stack, never under it), and a thread of
//! their own paints the second on the screen the first left ([`FrameModel`]). What it counts
//! comes back to the meters of the mode and condition it was taken under: torn paints a
//! second in the HUD and the table.
//!
//! Between samples the copy costs one relaxed load a write. The model's thread takes what it
//! is given or drops it when busy: it never holds up a frame.

use std::io::{self, Write};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{Receiver, SyncSender, TryRecvError, TrySendError, sync_channel};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use crate::condition::Condition;
use crate::writer_mode::{self, Mode};
use flushlab_core::seen::PaintPolicy;
use flushlab_core::seen::frames::{FrameModel, FrameSeen, TimedWrite};

/// How often two frames are taken for the model.
pub const EVERY: Duration = Duration::from_millis(250);

/// Write(2)s as the copy cut them, shared by the copy and the watch.
type Writes = Arc<Mutex<Vec<TimedWrite>>>;

/// The bottom of the copy: each write(2) the stack makes, kept whole with when it was made
/// (the real write is made just before: the copy is fed after it).
struct Kept(Writes);

impl Write for Kept {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let at_ns = crate::sys::monotonic_ns();
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

/// The mode's writer, and while armed a copy of its stack fed the same bytes.
pub struct Teed {
    real: Box<dyn Write + Send>,
    copy: Box<dyn Write + Send>,
    armed: Arc<AtomicBool>,
}

impl Write for Teed {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let n = self.real.write(buf)?;
        if self.armed.load(Ordering::Relaxed) {
            self.copy.write_all(&buf[..n])?;
        }
        Ok(n)
    }

    fn flush(&mut self) -> io::Result<()> {
        if self.armed.load(Ordering::Relaxed) {
            self.copy.flush()?;
        }
        self.real.flush()
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
    /// Armed for the frame that brings the model's screen up to date.
    Settling,
    /// Armed for the frame that is seen; the one before it is kept.
    Seeing(Vec<TimedWrite>),
}

/// See the module's documentation.
pub struct FrameWatch {
    policy: PaintPolicy,
    armed: Arc<AtomicBool>,
    writes: Writes,
    phase: Phase,
    to_model: Option<SyncSender<Sample>>,
    seen: Receiver<(Mode, Condition, FrameSeen)>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl FrameWatch {
    /// The model's thread started, painting as `policy` says.
    pub fn start(policy: PaintPolicy) -> io::Result<FrameWatch> {
        let (to_model, samples) = sync_channel::<Sample>(1);
        let (to_meters, seen) = sync_channel(16);
        let thread = crate::sys::spawn_thread("flushlab-model", move || {
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
            policy,
            armed: Arc::new(AtomicBool::new(false)),
            writes: Writes::default(),
            phase: Phase::Idle {
                next: Instant::now(),
            },
            to_model: Some(to_model),
            seen,
            thread: Some(thread),
        })
    }

    pub fn policy(&self) -> PaintPolicy {
        self.policy
    }

    /// `real`, the writer of `mode`, with the copy of its stack beside it. A new writer starts
    /// the sample afresh: frames of two writers are never one sample.
    pub fn teed(&mut self, real: Box<dyn Write + Send>, mode: Mode) -> Box<dyn Write + Send> {
        self.disarm(Instant::now());
        Box::new(Teed {
            real,
            copy: writer_mode::same_writes(
                mode.buffering,
                mode.capacity,
                Kept(Arc::clone(&self.writes)),
            ),
            armed: Arc::clone(&self.armed),
        })
    }

    fn disarm(&mut self, next: Instant) {
        self.armed.store(false, Ordering::Relaxed);
        self.take();
        self.phase = Phase::Idle { next };
    }

    fn take(&self) -> Vec<TimedWrite> {
        std::mem::take(&mut *self.writes.lock().unwrap_or_else(PoisonError::into_inner))
    }

    /// A frame of `mode` under `condition` is about to be sent.
    pub fn before_frame(&mut self, now: Instant) {
        if let Phase::Idle { next } = self.phase
            && now >= next
        {
            self.take();
            self.armed.store(true, Ordering::Relaxed);
            self.phase = Phase::Settling;
        }
    }

    /// The frame was sent (and flushed): its write(2)s are taken, and a finished sample goes
    /// to the model unless it is still busy with the last.
    pub fn after_frame(&mut self, mode: Mode, condition: Condition, now: Instant) {
        match std::mem::replace(&mut self.phase, Phase::Settling) {
            Phase::Idle { next } => self.phase = Phase::Idle { next },
            Phase::Settling => self.phase = Phase::Seeing(self.take()),
            Phase::Seeing(before) => {
                let frame = self.take();
                self.disarm(now + EVERY);
                if let Some(to_model) = &self.to_model {
                    let _ = to_model.try_send(Sample {
                        mode: mode.key(),
                        condition,
                        before,
                        frame,
                    });
                }
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

impl Drop for FrameWatch {
    fn drop(&mut self) {
        self.to_model = None;
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}
