//! wrap's reader of CMD's pty: every chunk read is timed for the run's timeline, copied to the
//! user's terminal (interactive) or answered as a terminal would (headless), and parsed beside
//! the reading by the frame finder.

use std::io;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::run::answers::{Answerer, Exchange, SharedModes};
use crate::run::own_writes::OwnWrites;
use flushlab_core::detect::finder::FrameFinder;
use flushlab_core::detect::recording::Recording;
use flushlab_core::reader::consume;
use flushlab_core::results::conditions::ReaderModel;
use flushlab_core::seen::Transcript;
use flushlab_core::sys::pty::Pty;

/// Reads CMD's output in a thread: through the reader model when headless, copied to the
/// user's terminal as it comes when interactive; every chunk is recorded in `recording` (and
/// each question CMD asks, headless) and goes through the frame finder.
pub(crate) fn read_output(
    pty: &Pty,
    (reader, size, interactive, epoch): (ReaderModel, (u16, u16), bool, Instant),
    transcribe: bool,
    (recording, finder): (&Arc<Recording>, &Arc<Mutex<FrameFinder>>),
    own: &Arc<OwnWrites>,
    child_gone: &Arc<AtomicBool>,
    modes: &Arc<SharedModes>,
) -> io::Result<Reading> {
    let master = pty.master.try_clone()?;
    let read = Arc::new(AtomicBool::new(false));
    let done = Arc::clone(&read);
    let last_read = Arc::new(AtomicU64::new(0));
    let exchanges = Arc::new(Mutex::new(Vec::new()));
    let transcript = transcribe.then(|| Arc::new(Mutex::new(Transcript::default())));
    let kept = transcript.clone();
    let noted = Arc::clone(recording);
    // Headless, wrap is CMD's terminal and answers what it asks; interactive, the user's does.
    let mut answering = if interactive {
        None
    } else {
        Some((
            Answerer::new(size, Arc::clone(recording)),
            pty.master.try_clone()?,
        ))
    };
    let (last, asked, modes) = (
        Arc::clone(&last_read),
        Arc::clone(&exchanges),
        Arc::clone(modes),
    );
    let (finder, own, child_gone) = (Arc::clone(finder), Arc::clone(own), Arc::clone(child_gone));
    // Straight to the fd, as it came: no LineWriter between CMD and the terminal.
    let mut out = if interactive {
        Some(flushlab_core::writer_mode::Stream::Stdout.raw()?)
    } else {
        None
    };
    let thread = flushlab_core::sys::spawn_thread("wrap-reader", move || {
        // Parsing happens beside the reading, not between two reads: a read is never late
        // because the previous chunk is still being parsed (measured: 4% of a 16 MB/s
        // program's frame rate when it was). Chunks go over in batches, each chunk with the
        // time it was read: an unbuffered program's reads are a few bytes each, and a hand-off
        // per read cost it 20%. The queue is bounded, so memory is too.
        noted.read_by(flushlab_core::sys::thread_id().unsigned_abs());
        let (batches, parser) = parse_beside(finder, kept)?;
        let mut batch = Batch::default();
        let mut answers = Vec::new();
        let mut seen = |chunk: &[u8], vt: Option<&vt100::Screen>| {
            let at = Instant::now();
            let at_ns = flushlab_core::sys::monotonic_ns();
            last.store((at - epoch).as_nanos() as u64, Ordering::Relaxed);
            noted.read(at_ns, chunk.len());
            if let Some(out) = &mut out {
                let _ = own.write_all(&mut *out, chunk);
            }
            if let Some((answerer, to_cmd)) = &mut answering {
                // `--reader vt`: the cursor the vt model has after the chunk (a program asks
                // where it is after drawing, then waits for the answer).
                let cursor = vt.map(vt100::Screen::cursor_position);
                answerer.feed((chunk, at_ns), (&mut answers, cursor), &modes);
                // Only when CMD's input has room: a CMD that asks and never reads must not
                // stop the reading of its output.
                if !answers.is_empty() && input_has_room(to_cmd) {
                    let _ = own.write_all(&*to_cmd, &answers);
                }
                answers.clear();
            }
            batch.bytes.extend_from_slice(chunk);
            batch.chunks.push((batch.bytes.len(), at, at_ns));
            let first = batch.chunks[0].1;
            if batch.bytes.len() >= BATCH_BYTES || at - first >= BATCH_AGE {
                let _ = batches.send(std::mem::take(&mut batch));
            }
        };
        let read = consume(reader, master, size, &mut seen, &child_gone);
        done.store(true, Ordering::Relaxed);
        if let Some((answerer, _)) = answering {
            *asked.lock().unwrap_or_else(|e| e.into_inner()) = answerer.exchanges();
        }
        if !batch.chunks.is_empty() {
            let _ = batches.send(batch);
        }
        drop(batches);
        let _ = parser.join();
        read
    })?;
    Ok(Reading {
        thread,
        read,
        last_read,
        exchanges,
        transcript,
    })
}

impl Reading {
    /// Once the reader is done: what CMD asked the terminal (headless), and the transcript.
    pub(crate) fn take_results(&mut self) -> (Vec<Exchange>, Option<Transcript>) {
        let exchanges =
            std::mem::take(&mut *self.exchanges.lock().unwrap_or_else(|e| e.into_inner()));
        let transcript = self
            .transcript
            .take()
            .map(|t| std::mem::take(&mut *t.lock().unwrap_or_else(|e| e.into_inner())));
        (exchanges, transcript)
    }
}

/// Whether CMD's pty takes input now (its input queue has room).
fn input_has_room(master: &std::fs::File) -> bool {
    use rustix::event::{PollFd, PollFlags, Timespec, poll};
    let mut fds = [PollFd::new(master, PollFlags::OUT)];
    matches!(poll(&mut fds, Some(&Timespec::default())), Ok(1..))
}

/// The reader thread, and whether it has read everything (the parser may still be at work).
pub(crate) struct Reading {
    pub(crate) thread: std::thread::JoinHandle<io::Result<u64>>,
    pub(crate) read: Arc<AtomicBool>,
    /// When output was last read, in nanoseconds after CMD started.
    pub(crate) last_read: Arc<AtomicU64>,
    /// Headless: what CMD asked the terminal, once the reader is done.
    pub(crate) exchanges: Arc<Mutex<Vec<Exchange>>>,
    /// What the terminal model reads after the run: every byte as it came.
    pub(crate) transcript: Option<Arc<Mutex<Transcript>>>,
}

/// Chunks read and not parsed yet: their bytes, and where each ends with when it was read
/// (as an `Instant` for the finder, as CLOCK_MONOTONIC ns for the transcript).
#[derive(Debug, Default)]
struct Batch {
    bytes: Vec<u8>,
    chunks: Vec<(usize, Instant, u64)>,
}

/// A batch goes to the parser at this size, or when its first chunk is this old.
const BATCH_BYTES: usize = 64 * 1024;
const BATCH_AGE: Duration = Duration::from_millis(5);
/// Batches read and not parsed yet, at most (each 64 KiB and a read at most).
const PARSE_QUEUE: usize = 64;

/// The parser thread: each batch the reader sends goes through the frame finder, and into the
/// transcript when there is one.
fn parse_beside(
    finder: Arc<Mutex<FrameFinder>>,
    transcript: Option<Arc<Mutex<Transcript>>>,
) -> io::Result<(
    std::sync::mpsc::SyncSender<Batch>,
    std::thread::JoinHandle<()>,
)> {
    let (batches, parse) = std::sync::mpsc::sync_channel::<Batch>(PARSE_QUEUE);
    let parser = flushlab_core::sys::spawn_thread("wrap-parser", move || {
        for batch in parse {
            let mut finder = finder.lock().unwrap_or_else(|e| e.into_inner());
            let mut transcript = transcript
                .as_ref()
                .map(|t| t.lock().unwrap_or_else(|e| e.into_inner()));
            let mut start = 0;
            for &(end, at, at_ns) in &batch.chunks {
                finder.feed(&batch.bytes[start..end], at);
                if let Some(transcript) = &mut transcript {
                    transcript.push(&batch.bytes[start..end], at_ns);
                }
                start = end;
            }
        }
    })?;
    Ok((batches, parser))
}
