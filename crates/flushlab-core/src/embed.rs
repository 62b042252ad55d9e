//! flushlab inside your own program: wrap the writer under your ratatui terminal in a
//! [`Counting`] layer, measure each `draw` with its [`DrawMeter`], and get what flushlab shows
//! for its own frames — write(2) calls, bytes, and where the frame's time went.
//!
//! ```no_run
//! use std::io::{BufWriter, stdout};
//! use std::os::fd::AsFd;
//!
//! // The layer goes directly on the file descriptor, under any buffering, so that each call
//! // it sees is one write(2). (Under std's `stdout()` it would see the LineWriter's input.)
//! let fd = std::fs::File::from(stdout().as_fd().try_clone_to_owned()?);
//! let (counting, mut meter) = flushlab_core::embed::counting(fd);
//! let backend = ratatui::backend::CrosstermBackend::new(BufWriter::with_capacity(1 << 16, counting));
//! let mut terminal = ratatui::Terminal::new(backend)?;
//! let (drawn, draw) = meter.measure(|| terminal.draw(|frame| { /* your UI */ }));
//! drawn?;
//! eprintln!("{} write(2) calls, {} bytes, {:?} asleep in write(2)",
//!     draw.writes, draw.bytes, draw.asleep());
//! # Ok::<(), std::io::Error>(())
//! ```
//!
//! What it costs: two atomic additions a write(2) in the layer; a draw's measure is two clock
//! reads, two `pread`s of the thread's scheduler statistics and two getrusage(2) — measured by
//! `cargo run --release --example embed -- --overhead` (docs/guide.md §8).

use std::io::{self, Write};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// Calls and bytes that reached the writer under a [`Counting`] layer.
#[derive(Debug, Default)]
struct Counts {
    writes: AtomicU64,
    bytes: AtomicU64,
}

/// A writer that passes every call through and counts it, with the bytes it took. Its counts
/// are its own (not the process's), so that several can be measured at once.
#[derive(Debug)]
pub struct Counting<W> {
    inner: W,
    counts: Arc<Counts>,
}

impl<W: Write> Write for Counting<W> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let result = self.inner.write(buf);
        self.counts.writes.fetch_add(1, Ordering::Relaxed);
        if let Ok(n) = result {
            self.counts.bytes.fetch_add(n as u64, Ordering::Relaxed);
        }
        result
    }

    /// Forwarded, so that a vectored write stays one writev(2) under the layer.
    fn write_vectored(&mut self, bufs: &[io::IoSlice<'_>]) -> io::Result<usize> {
        let result = self.inner.write_vectored(bufs);
        self.counts.writes.fetch_add(1, Ordering::Relaxed);
        if let Ok(n) = result {
            self.counts.bytes.fetch_add(n as u64, Ordering::Relaxed);
        }
        result
    }

    fn flush(&mut self) -> io::Result<()> {
        self.inner.flush()
    }
}

/// A [`Counting`] layer over `inner`, and the meter that reads it. Create it, and measure
/// with the meter, on the thread that draws: the time split is that thread's.
pub fn counting<W: Write>(inner: W) -> (Counting<W>, DrawMeter) {
    let counts = Arc::new(Counts::default());
    let schedstat = crate::sys::SchedstatFile::of_this_thread();
    // The split's sums start at zero where it is measured, and stay `None` where it is not.
    let zero = schedstat.as_ref().map(|_| Duration::ZERO);
    let meter = DrawMeter {
        counts: Arc::clone(&counts),
        schedstat,
        draws: 0,
        total: Draw {
            on_cpu: zero,
            cpu_wait: zero,
            ..Draw::default()
        },
    };
    (Counting { inner, counts }, meter)
}

/// What one draw (or, summed, many) cost. The time split is the drawing thread's: its time on
/// a CPU (user: building and encoding the frame; kernel: mostly inside write(2)), runnable but
/// waiting for a core, and the rest of the wall time asleep — for a draw, waiting in write(2)
/// for the reader: the terminal is the limit. `None` where the kernel keeps no scheduler
/// statistics.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Draw {
    pub writes: u64,
    pub bytes: u64,
    pub wall: Duration,
    pub user: Duration,
    pub kernel: Duration,
    pub on_cpu: Option<Duration>,
    pub cpu_wait: Option<Duration>,
}

impl Draw {
    /// Wall time neither on a CPU nor waiting for one.
    pub fn asleep(&self) -> Option<Duration> {
        Some(
            self.wall
                .saturating_sub(self.on_cpu?)
                .saturating_sub(self.cpu_wait?),
        )
    }

    fn add(&mut self, other: &Draw) {
        self.writes += other.writes;
        self.bytes += other.bytes;
        self.wall += other.wall;
        self.user += other.user;
        self.kernel += other.kernel;
        self.on_cpu = self.on_cpu.zip(other.on_cpu).map(|(a, b)| a + b);
        self.cpu_wait = self.cpu_wait.zip(other.cpu_wait).map(|(a, b)| a + b);
    }
}

/// Measures draws through the [`Counting`] layer it was made with.
#[derive(Debug)]
pub struct DrawMeter {
    counts: Arc<Counts>,
    schedstat: Option<crate::sys::SchedstatFile>,
    draws: u64,
    total: Draw,
}

/// Every counter a draw's cost is the difference of.
struct Reading {
    at: Instant,
    writes: u64,
    bytes: u64,
    cpu: (Duration, Duration),
    sched: Option<(Duration, Duration)>,
}

impl DrawMeter {
    fn read(&self) -> Reading {
        Reading {
            sched: self.schedstat.as_ref().and_then(|s| s.read()),
            cpu: crate::sys::cpu_time(crate::sys::Usage::Thread),
            writes: self.counts.writes.load(Ordering::Relaxed),
            bytes: self.counts.bytes.load(Ordering::Relaxed),
            at: Instant::now(),
        }
    }

    /// Runs `draw` (say, `|| terminal.draw(ui)`) and returns its result with what it cost. A
    /// writer thread under the layer (flushlab's thread mode) counts its writes to the draw in
    /// which they land.
    pub fn measure<T>(&mut self, draw: impl FnOnce() -> T) -> (T, Draw) {
        let start = self.read();
        let result = draw();
        let end = self.read();
        let since = |a: Option<(Duration, Duration)>, b: Option<(Duration, Duration)>| {
            a.zip(b)
                .map(|(a, b)| (b.0.saturating_sub(a.0), b.1.saturating_sub(a.1)))
        };
        let sched = since(start.sched, end.sched);
        let cost = Draw {
            writes: end.writes - start.writes,
            bytes: end.bytes - start.bytes,
            wall: end.at - start.at,
            user: end.cpu.0.saturating_sub(start.cpu.0),
            kernel: end.cpu.1.saturating_sub(start.cpu.1),
            on_cpu: sched.map(|s| s.0),
            cpu_wait: sched.map(|s| s.1),
        };
        self.draws += 1;
        self.total.add(&cost);
        (result, cost)
    }

    /// Draws measured so far.
    pub fn draws(&self) -> u64 {
        self.draws
    }

    /// The sum of every draw measured so far.
    pub fn total(&self) -> Draw {
        self.total
    }

    /// Everything that went through the layer so far, measured or not: (calls, bytes).
    pub fn written(&self) -> (u64, u64) {
        (
            self.counts.writes.load(Ordering::Relaxed),
            self.counts.bytes.load(Ordering::Relaxed),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_draw_counts_the_calls_and_bytes_that_reach_the_layer() {
        let (mut counting, mut meter) = counting(Vec::new());
        let ((), first) = meter.measure(|| {
            counting.write_all(b"hello").unwrap();
            counting.write_all(b", world").unwrap();
        });
        assert_eq!((first.writes, first.bytes), (2, 12));
        let ((), second) = meter.measure(|| counting.write_all(b"!").unwrap());
        assert_eq!((second.writes, second.bytes), (1, 1));
        assert_eq!(meter.draws(), 2);
        assert_eq!((meter.total().writes, meter.total().bytes), (3, 13));
        assert_eq!(meter.total().on_cpu.is_some(), first.on_cpu.is_some());
        // A draw that spins is on a CPU, not asleep.
        let ((), busy) = meter.measure(|| {
            let start = Instant::now();
            while start.elapsed() < Duration::from_millis(30) {}
        });
        if let (Some(on_cpu), Some(asleep)) = (busy.on_cpu, busy.asleep()) {
            assert!(on_cpu > asleep, "{busy:?}");
        }
        let ((), idle) = meter.measure(|| std::thread::sleep(Duration::from_millis(30)));
        if let Some(asleep) = idle.asleep() {
            assert!(asleep >= Duration::from_millis(20), "{idle:?}");
        }
    }
}
