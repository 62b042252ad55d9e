//! Writers that hand a whole frame to the file descriptor at once: [`FrameWriter`] on the
//! painting thread, [`ThreadWriter`] on a writer thread of its own.

use std::io::{self, Write};
use std::mem;
use std::sync::mpsc::{self, Receiver, SyncSender};
use std::thread::JoinHandle;

use crate::wait::{Wait, receive};

/// Collects everything written between two flushes and passes it on in one `write_all`, which
/// on a blocking descriptor is one write(2) (a signal arriving mid-write can split it).
#[derive(Debug)]
pub struct FrameWriter<W: Write> {
    frame: Vec<u8>,
    inner: W,
}

impl<W: Write> FrameWriter<W> {
    pub fn new(inner: W) -> Self {
        FrameWriter {
            frame: Vec::new(),
            inner,
        }
    }
}

impl<W: Write> Write for FrameWriter<W> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.frame.extend_from_slice(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        if !self.frame.is_empty() {
            // Cleared even on error: a frame the reader refused is not retried.
            let result = self.inner.write_all(&self.frame);
            self.frame.clear();
            result?;
        }
        self.inner.flush()
    }
}

impl<W: Write> Drop for FrameWriter<W> {
    fn drop(&mut self) {
        let _ = self.flush();
    }
}

/// Collects a frame like [`FrameWriter`], and on `flush` hands it to a writer thread, so that
/// writing frame N overlaps painting frame N+1. At most one frame is in flight: `flush` waits
/// for the previous frame's write before handing over the next, which keeps memory at two
/// frames and lets a slow reader slow the painter down instead of queueing without bound. (A
/// third buffer was measured and bought nothing: the painter waits ~2% of its frame for the
/// writer thread; see docs/results/time-split.md.)
///
/// A write error on the thread is returned by the next `flush`. Dropping waits for the frame in
/// flight, so bytes written after the drop (like the terminal's restore sequence) come after it.
/// The painter waits for the frame in flight, and the writer for the next frame, as the
/// [`Wait`] it is made with says ([`crate::wait::receive`]).
pub struct ThreadWriter {
    frame: Vec<u8>,
    handoff: Wait,
    to_thread: Option<SyncSender<Vec<u8>>>,
    /// Emptied buffers coming back from the thread, or the error that stopped it.
    from_thread: Receiver<io::Result<Vec<u8>>>,
    in_flight: bool,
    thread: Option<JoinHandle<()>>,
}

impl ThreadWriter {
    /// A failed spawn (RLIMIT_NPROC, memory) is an error, not a panic.
    pub fn new<W: Write + Send + 'static>(inner: W) -> io::Result<Self> {
        Self::waiting(inner, Wait::Sleep)
    }

    /// [`ThreadWriter::new`], the painter and the writer waiting for each other as `handoff`
    /// says.
    pub fn waiting<W: Write + Send + 'static>(mut inner: W, handoff: Wait) -> io::Result<Self> {
        let (to_thread, frames) = mpsc::sync_channel::<Vec<u8>>(1);
        let (done, from_thread) = mpsc::sync_channel(1);
        let thread = crate::sys::spawn_thread("flushlab-writer", move || {
            let clock = crate::timing::timing().then(crate::timing::Registration::on_this_thread);
            let next = || match &clock {
                Some(clock) => clock.waiting(|| receive(&frames, handoff)),
                None => receive(&frames, handoff),
            };
            while let Ok(mut frame) = next() {
                let result = inner.write_all(&frame).and_then(|()| inner.flush());
                frame.clear();
                let failed = result.is_err();
                if done.send(result.map(|()| frame)).is_err() || failed {
                    break;
                }
            }
        })?;
        Ok(ThreadWriter {
            frame: Vec::new(),
            handoff,
            to_thread: Some(to_thread),
            from_thread,
            in_flight: false,
            thread: Some(thread),
        })
    }

    /// Waits for the frame in flight, returning its buffer for reuse.
    fn wait(&mut self) -> io::Result<Option<Vec<u8>>> {
        if !self.in_flight {
            return Ok(None);
        }
        self.in_flight = false;
        match receive(&self.from_thread, self.handoff) {
            Ok(result) => result.map(Some),
            Err(_) => Err(io::Error::other("the writer thread stopped")),
        }
    }
}

impl Write for ThreadWriter {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.frame.extend_from_slice(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        if self.frame.is_empty() {
            return Ok(());
        }
        let spare = self.wait()?.unwrap_or_default();
        let frame = mem::replace(&mut self.frame, spare);
        let to_thread = self.to_thread.as_ref().expect("sender lives until drop");
        to_thread
            .send(frame)
            .map_err(|_| io::Error::other("the writer thread stopped"))?;
        self.in_flight = true;
        Ok(())
    }
}

impl Drop for ThreadWriter {
    fn drop(&mut self) {
        let _ = self.flush();
        let _ = self.wait();
        self.to_thread = None;
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::{Arc, Mutex};

    /// Records each write call it receives.
    #[derive(Clone, Default)]
    struct Calls(Arc<Mutex<Vec<Vec<u8>>>>);

    impl Write for Calls {
        fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
            self.0.lock().unwrap().push(buf.to_vec());
            Ok(buf.len())
        }
        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }

    struct Broken;
    impl Write for Broken {
        fn write(&mut self, _: &[u8]) -> io::Result<usize> {
            Err(io::ErrorKind::BrokenPipe.into())
        }
        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }

    #[test]
    fn frame_writer_makes_one_call_per_flush_and_none_for_an_empty_frame() {
        let calls = Calls::default();
        let mut w = FrameWriter::new(calls.clone());
        for _ in 0..1000 {
            w.write_all(b"ab").unwrap();
        }
        w.flush().unwrap();
        w.flush().unwrap();
        assert_eq!(calls.0.lock().unwrap().len(), 1);
        assert_eq!(calls.0.lock().unwrap()[0].len(), 2000);
    }

    #[test]
    fn thread_writer_keeps_order_and_one_call_per_frame_however_it_waits() {
        for handoff in Wait::ALL {
            let calls = Calls::default();
            let mut w = ThreadWriter::waiting(calls.clone(), handoff).unwrap();
            for i in 0..50u8 {
                w.write_all(&[i; 3]).unwrap();
                w.write_all(&[i; 2]).unwrap();
                w.flush().unwrap();
            }
            drop(w);
            let calls = calls.0.lock().unwrap();
            assert_eq!(calls.len(), 50, "{handoff:?}");
            assert!(
                calls
                    .iter()
                    .enumerate()
                    .all(|(i, c)| c == &vec![i as u8; 5]),
                "{handoff:?}"
            );
        }
    }

    #[test]
    fn thread_writer_reports_a_write_error_on_a_later_flush() {
        for handoff in Wait::ALL {
            let mut w = ThreadWriter::waiting(Broken, handoff).unwrap();
            w.write_all(b"frame 1").unwrap();
            w.flush().unwrap();
            w.write_all(b"frame 2").unwrap();
            let err = w.flush().unwrap_err();
            assert_eq!(err.kind(), io::ErrorKind::BrokenPipe, "{handoff:?}");
        }
    }
}
