//! The flood's writers at work: the 72-byte line, the writer thread of `flood/thread`, the
//! logging crates (tracing, its non-blocking appender lossy and lossless, env_logger) installed
//! over a stdout whose deliveries are witnessed, and what each says at the end (lines dropped,
//! delivered, still in flight). The command (flags, the loop, the report) is the room above.

use std::io::{self, BufWriter, Write};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc::{self, SyncSender, TrySendError};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;

use std::fs::File;

use super::args::{FloodArgs, OnFull};
use flushlab_core::accounting::Counted;
use flushlab_core::subject::FloodWriter;
use flushlab_core::writer_mode::stdout_dup;

/// The line every writer writes: 72 bytes with the newline (the logging crates add their own
/// prefix: time, level, target).
fn write_line(out: &mut impl Write, i: u64) -> io::Result<()> {
    writeln!(out, "{}", Line(i))
}

/// Line `i`'s text, without the newline.
struct Line(u64);

impl std::fmt::Display for Line {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "flushlab flood {:>12} the quick brown fox jumps over the lazy dog",
            self.0
        )
    }
}

pub(super) const LINE_BYTES: u64 = 72;

/// The writer thread of `FloodWriter::Thread`: it owns the BufWriter, and flushes whenever the
/// channel runs dry, so lines never wait in its buffer while the hot loop is idle.
pub(super) struct LineThread {
    to_thread: Option<SyncSender<Vec<u8>>>,
    thread: Option<JoinHandle<io::Result<()>>>,
    on_full: OnFull,
    dropped: u64,
}

impl LineThread {
    fn start(
        out: Counted<File>,
        capacity: usize,
        queue: usize,
        on_full: OnFull,
    ) -> io::Result<LineThread> {
        let (to_thread, lines) = mpsc::sync_channel::<Vec<u8>>(queue);
        let thread = flushlab_core::sys::spawn_thread("flushlab-log-writer", move || {
            let mut out = BufWriter::with_capacity(capacity, out);
            loop {
                let line = match lines.try_recv() {
                    Ok(line) => line,
                    Err(mpsc::TryRecvError::Empty) => {
                        out.flush()?;
                        match lines.recv() {
                            Ok(line) => line,
                            Err(_) => break,
                        }
                    }
                    Err(mpsc::TryRecvError::Disconnected) => break,
                };
                out.write_all(&line)?;
            }
            out.flush()
        })?;
        Ok(LineThread {
            to_thread: Some(to_thread),
            thread: Some(thread),
            on_full,
            dropped: 0,
        })
    }

    fn send(&mut self, line: Vec<u8>) -> io::Result<()> {
        let sender = self.to_thread.as_ref().expect("sender lives until finish");
        let result = match self.on_full {
            OnFull::Block => sender.send(line).map_err(|_| ()),
            OnFull::Drop => match sender.try_send(line) {
                Err(TrySendError::Full(_)) => {
                    self.dropped += 1;
                    Ok(())
                }
                other => other.map_err(|_| ()),
            },
        };
        // The thread only stops early on a write error: finish() reports it.
        result.or_else(|()| self.finish().map(|_| ()))
    }

    fn finish(&mut self) -> io::Result<u64> {
        self.to_thread = None;
        if let Some(thread) = self.thread.take() {
            thread
                .join()
                .map_err(|_| io::Error::other("the log writer thread panicked"))??;
        }
        Ok(self.dropped)
    }
}

/// One writer, ready to log.
pub(super) enum Logger {
    Println,
    Eprintln,
    Lock(io::StdoutLock<'static>),
    Block(BufWriter<Counted<File>>),
    Raw(Counted<File>),
    PerByte(BufWriter<Counted<File>>, Vec<u8>),
    Thread(LineThread),
    /// A logging library (tracing, env_logger) installed globally, writing through a
    /// [`Witnessed`] stream; for the non-blocking writers, the guard whose drop flushes and the
    /// library's own count of dropped events.
    Library {
        delivery: Arc<Delivery>,
        guard: Option<(tracing_appender::non_blocking::WorkerGuard, ErrorCounter)>,
        log: fn(u64),
    },
    Nothing,
}

use tracing_appender::non_blocking::ErrorCounter;

/// What a logging library's writer delivered: the lines that a returned write(2) carried to
/// the stream, and the first error. The libraries swallow write errors (tracing prints one
/// line to stderr per failed event, env_logger and tracing-appender's worker say nothing) and
/// tracing-appender's guard gives up on queued lines at exit: this is how flood knows.
///
/// The counts cost two atomic additions a write (no lock: measured, a mutex took 12% of
/// tracing's lines/s): lines delivered in the high 48 bits of one word and lines in the write
/// under way in the low 16, so that [`Delivery::close`] reads both at one instant.
#[derive(Debug, Default)]
pub(super) struct Delivery {
    counts: AtomicU64,
    closed: AtomicBool,
    failed: AtomicBool,
    first_error: Mutex<Option<io::Error>>,
}

/// Bits of [`Delivery::counts`] that hold the lines in flight.
const IN_FLIGHT_BITS: u32 = 16;

/// The final figures of a closed [`Delivery`].
#[derive(Clone, Copy, Debug, Default)]
struct Counts {
    /// Lines in returned writes.
    delivered: u64,
    /// Lines in the write under way when it closed (one writer thread: at most one write).
    in_flight: u64,
}

/// A copy of an `io::Error` (which is not `Clone`): its errno, or its kind and words.
fn copy_error(e: &io::Error) -> io::Error {
    match e.raw_os_error() {
        Some(code) => io::Error::from_raw_os_error(code),
        None => io::Error::new(e.kind(), e.to_string()),
    }
}

impl Delivery {
    fn fail(&self, e: &io::Error) {
        let mut first = self.first_error.lock().unwrap_or_else(|p| p.into_inner());
        first.get_or_insert_with(|| copy_error(e));
        self.failed.store(true, Ordering::Release);
    }

    /// The first write error, once one happened. One atomic load on the hot path.
    fn check(&self) -> io::Result<()> {
        if !self.failed.load(Ordering::Acquire) {
            return Ok(());
        }
        let first = self.first_error.lock().unwrap_or_else(|p| p.into_inner());
        Err(first
            .as_ref()
            .map_or_else(|| io::Error::other("the log writer failed"), copy_error))
    }

    /// Takes the final figures: a write that had not begun is refused from now on, so no line
    /// arrives that the figures do not count (the one in flight may or may not).
    fn close(&self) -> Counts {
        self.closed.store(true, Ordering::SeqCst);
        let counts = self.counts.load(Ordering::SeqCst);
        Counts {
            delivered: counts >> IN_FLIGHT_BITS,
            in_flight: counts & ((1 << IN_FLIGHT_BITS) - 1),
        }
    }
}

/// A stream a logging library writes to, counting into a [`Delivery`] (owned by the worker
/// thread of tracing-appender, borrowed by tracing's per-event writer).
struct Witnessed<W, D: std::ops::Deref<Target = Delivery>> {
    inner: W,
    delivery: D,
}

impl<W: Write, D: std::ops::Deref<Target = Delivery>> Write for Witnessed<W, D> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let lines = |bytes: &[u8]| bytes.iter().filter(|&&b| b == b'\n').count() as u64;
        let delivery = &*self.delivery;
        let flying = lines(buf).min((1 << IN_FLIGHT_BITS) - 1);
        // In flight first, then the look at `closed`: either close() sees this write, or this
        // write sees it closed.
        delivery.counts.fetch_add(flying, Ordering::SeqCst);
        if delivery.closed.load(Ordering::SeqCst) {
            delivery.counts.fetch_sub(flying, Ordering::SeqCst);
            return Err(io::Error::other("flood has ended: this line is lost"));
        }
        let written = self.inner.write(buf);
        let landed = written.as_ref().map_or(0, |&n| lines(&buf[..n]));
        // Landed lines in, this write's in-flight out, in one step.
        delivery.counts.fetch_add(
            (landed << IN_FLIGHT_BITS).wrapping_sub(flying),
            Ordering::SeqCst,
        );
        written.inspect_err(|e| {
            if e.kind() != io::ErrorKind::Interrupted {
                delivery.fail(e);
            }
        })
    }

    fn flush(&mut self) -> io::Result<()> {
        if self.delivery.closed.load(Ordering::SeqCst) {
            return Ok(());
        }
        self.inner.flush().inspect_err(|e| self.delivery.fail(e))
    }
}

/// tracing's `MakeWriter` for the blocking writer: stdout, witnessed, per event.
struct WitnessedStdout(Arc<Delivery>);

impl<'a> tracing_subscriber::fmt::MakeWriter<'a> for WitnessedStdout {
    type Writer = Witnessed<io::Stdout, &'a Delivery>;

    fn make_writer(&'a self) -> Self::Writer {
        Witnessed {
            inner: io::stdout(),
            delivery: &self.0,
        }
    }
}

/// Installs tracing-subscriber's fmt layer as the global subscriber, writing through `writer`.
/// Its own complaint about each failed write is off: the [`Delivery`] reports the error once.
fn install_tracing<W>(writer: W) -> io::Result<()>
where
    W: for<'w> tracing_subscriber::fmt::MakeWriter<'w> + Send + Sync + 'static,
{
    let subscriber = tracing_subscriber::fmt()
        .with_writer(writer)
        .log_internal_errors(false)
        .finish();
    tracing::subscriber::set_global_default(subscriber).map_err(io::Error::other)
}

/// tracing-appender's non-blocking writer. Its worker thread is spawned with `expect`: a
/// failed spawn (RLIMIT_NPROC) is caught here and becomes an error, not a panic.
fn non_blocking(
    lossy: bool,
    delivery: &Arc<Delivery>,
) -> io::Result<(
    tracing_appender::non_blocking::NonBlocking,
    tracing_appender::non_blocking::WorkerGuard,
)> {
    let stdout = Witnessed {
        inner: io::stdout(),
        delivery: Arc::clone(delivery),
    };
    let quiet = std::panic::take_hook();
    std::panic::set_hook(Box::new(|_| {}));
    let built = std::panic::catch_unwind(move || {
        tracing_appender::non_blocking::NonBlockingBuilder::default()
            .lossy(lossy)
            .finish(stdout)
    });
    std::panic::set_hook(quiet);
    built.map_err(|_| io::Error::other("tracing-appender could not start its writer thread"))
}

/// The logging crates' target, which their lines carry: fixed, so that a line's size (quoted
/// in the docs) does not follow where this file sits in the source tree.
const TARGET: &str = "flushlab::flood";

fn tracing_line(i: u64) {
    tracing::info!(target: TARGET, "{}", Line(i));
}

fn log_line(i: u64) {
    log::info!(target: TARGET, "{}", Line(i));
}

impl Logger {
    pub(super) fn open(args: &FloodArgs) -> io::Result<Logger> {
        let stdout = || stdout_dup().map(Counted::new);
        Ok(match args.writer {
            FloodWriter::Println => Logger::Println,
            FloodWriter::Eprintln => Logger::Eprintln,
            FloodWriter::Lock => Logger::Lock(io::stdout().lock()),
            FloodWriter::Block => Logger::Block(BufWriter::with_capacity(args.capacity, stdout()?)),
            FloodWriter::Raw => Logger::Raw(stdout()?),
            FloodWriter::PerByte => Logger::PerByte(
                BufWriter::with_capacity(args.capacity, stdout()?),
                Vec::new(),
            ),
            FloodWriter::Thread => Logger::Thread(LineThread::start(
                stdout()?,
                args.capacity,
                args.queue as usize,
                args.on_full,
            )?),
            FloodWriter::Tracing => {
                let delivery = Arc::new(Delivery::default());
                install_tracing(WitnessedStdout(Arc::clone(&delivery)))?;
                Logger::Library {
                    delivery,
                    guard: None,
                    log: tracing_line,
                }
            }
            FloodWriter::TracingNonBlocking | FloodWriter::TracingLossless => {
                let delivery = Arc::new(Delivery::default());
                let lossy = args.writer == FloodWriter::TracingNonBlocking;
                let (writer, guard) = non_blocking(lossy, &delivery)?;
                let dropped = writer.error_counter();
                install_tracing(writer)?;
                Logger::Library {
                    delivery,
                    guard: Some((guard, dropped)),
                    log: tracing_line,
                }
            }
            FloodWriter::None => Logger::Nothing,
            FloodWriter::EnvLogger => {
                let delivery = Arc::new(Delivery::default());
                // Not `from_env`: a RUST_LOG the shell happens to export (`off`, `warn`) would
                // filter out the very lines flood measures.
                env_logger::Builder::new()
                    .filter_level(log::LevelFilter::Info)
                    .target(env_logger::Target::Pipe(Box::new(Witnessed {
                        inner: io::stderr(),
                        delivery: Arc::clone(&delivery),
                    })))
                    .try_init()
                    .map_err(io::Error::other)?;
                Logger::Library {
                    delivery,
                    guard: None,
                    log: log_line,
                }
            }
        })
    }

    pub(super) fn log(&mut self, i: u64) -> io::Result<()> {
        match self {
            Logger::Println => write_line(&mut io::stdout(), i),
            Logger::Eprintln => write_line(&mut io::stderr(), i),
            Logger::Lock(out) => write_line(out, i),
            Logger::Block(out) => write_line(out, i),
            Logger::Raw(out) => write_line(out, i),
            Logger::PerByte(out, line) => {
                line.clear();
                write_line(line, i)?;
                line.iter()
                    .try_for_each(|byte| out.write_all(std::slice::from_ref(byte)))
            }
            Logger::Thread(thread) => {
                let mut line = Vec::with_capacity(LINE_BYTES as usize);
                write_line(&mut line, i)?;
                thread.send(line)
            }
            Logger::Library { delivery, log, .. } => {
                log(i);
                delivery.check()
            }
            Logger::Nothing => Ok(()),
        }
    }

    /// Flushes what is buffered; returns the lines dropped (counted by the writer) and, when
    /// flushlab counted them itself, the lines delivered.
    pub(super) fn finish(self) -> io::Result<Finished> {
        let dropped = |n| Finished {
            dropped: n,
            delivered: None,
            in_flight: 0,
        };
        match self {
            Logger::Println => io::stdout().flush().map(|()| dropped(0)),
            Logger::Eprintln => Ok(dropped(0)),
            Logger::Lock(mut out) => out.flush().map(|()| dropped(0)),
            Logger::Block(mut out) | Logger::PerByte(mut out, _) => {
                out.flush().map(|()| dropped(0))
            }
            Logger::Raw(_) => Ok(dropped(0)),
            Logger::Thread(mut thread) => thread.finish().map(dropped),
            Logger::Library {
                delivery, guard, ..
            } => {
                // Dropping the guard waits (at most 1 s) for the worker to write what it holds.
                let library_dropped = guard.map_or(0, |(guard, counter)| {
                    drop(guard);
                    counter.dropped_lines() as u64
                });
                io::stdout().flush()?;
                io::stderr().flush()?;
                delivery.check()?;
                let counts = delivery.close();
                Ok(Finished {
                    dropped: library_dropped,
                    delivered: Some(counts.delivered),
                    in_flight: counts.in_flight,
                })
            }
            Logger::Nothing => Ok(dropped(0)),
        }
    }
}

/// What a writer says at the end of a flood.
pub(super) struct Finished {
    pub(super) dropped: u64,
    pub(super) delivered: Option<u64>,
    pub(super) in_flight: u64,
}
