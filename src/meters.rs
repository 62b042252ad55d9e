//! What the HUD and the report measure: frames per second, write(2) calls and bytes, and the
//! split of CPU time between user space and the kernel.
//!
//! Counters are read only when a window closes (once a second) and when the mode changes, never
//! per frame, so that measuring costs two system calls a second whatever the frame rate.

use std::collections::VecDeque;
use std::fs::File;
use std::io::{self, Write};
use std::os::unix::fs::FileExt;
use std::sync::OnceLock;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use clap::ValueEnum;
use serde::Serialize;

use crate::writer_mode::Mode;

/// How write(2) calls and bytes are counted.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Accounting {
    /// The kernel's own counters in /proc/self/io (Linux): every write of the process, std's
    /// `stdout()` included, at no cost per write.
    Kernel,
    /// A layer under flushlab's own writer stacks ([`Counted`]): one branch and two atomic
    /// additions per write; std's `stdout()` is invisible to it, so the `stdout/line` mode
    /// becomes the same 1 KiB `LineWriter` over a duplicate of fd 1.
    Counting,
}

impl Accounting {
    pub fn name(self) -> &'static str {
        match self {
            Accounting::Kernel => "kernel",
            Accounting::Counting => "counting",
        }
    }
}

static ACCOUNTING: OnceLock<Accounting> = OnceLock::new();

/// The accounting of this process, fixed at its first use: the kernel's where it keeps the
/// counters, else the counting layer.
pub fn accounting() -> Accounting {
    *ACCOUNTING.get_or_init(|| {
        if IoProbe::kernel().is_some() {
            Accounting::Kernel
        } else {
            Accounting::Counting
        }
    })
}

/// Whether writes through std's own handles (`stdout()`, `stderr()`, `println!`) are counted:
/// they happen inside std, where only the kernel's accounting sees them.
pub fn std_handles_counted() -> bool {
    accounting() == Accounting::Kernel
}

/// Chooses the accounting, before any writer stack is built or counter read.
pub fn choose_accounting(choice: Accounting) -> Result<(), String> {
    if choice == Accounting::Kernel && IoProbe::kernel().is_none() {
        return Err(
            "the kernel keeps no write counters here (/proc/self/io is Linux's); \
                    valid: counting"
                .to_owned(),
        );
    }
    let chosen = *ACCOUNTING.get_or_init(|| choice);
    if chosen != choice {
        return Err(format!("already counting by {}", chosen.name()));
    }
    Ok(())
}

/// What the counting layer has counted in this process, all threads.
static COUNTED: [AtomicU64; 2] = [AtomicU64::new(0), AtomicU64::new(0)];

/// The counting layer: a writer that passes every call through and, when the accounting is
/// [`Accounting::Counting`], counts it as one write(2) (whatever it returned) and the bytes it
/// took. It sits directly on the file descriptor, under any buffering, so that it sees the
/// calls the kernel would.
#[derive(Debug)]
pub struct Counted<W> {
    inner: W,
    enabled: bool,
}

impl<W> Counted<W> {
    pub fn new(inner: W) -> Self {
        Counted {
            inner,
            enabled: accounting() == Accounting::Counting,
        }
    }

    /// One call into the kernel, and the bytes it took.
    fn count(&self, result: &io::Result<usize>) {
        if self.enabled {
            COUNTED[0].fetch_add(1, Ordering::Relaxed);
            if let Ok(n) = result {
                COUNTED[1].fetch_add(*n as u64, Ordering::Relaxed);
            }
        }
    }
}

impl<W: Write> Write for Counted<W> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let result = self.inner.write(buf);
        self.count(&result);
        result
    }

    /// Forwarded, so that a vectored write stays one writev(2) under the layer.
    fn write_vectored(&mut self, bufs: &[io::IoSlice<'_>]) -> io::Result<usize> {
        let result = self.inner.write_vectored(bufs);
        self.count(&result);
        result
    }

    fn flush(&mut self) -> io::Result<()> {
        self.inner.flush()
    }
}

/// Write-family system calls and bytes written by the whole process, all threads.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct IoCounters {
    pub write_calls: u64,
    pub bytes: u64,
}

/// Reads [`IoCounters`] as the [`accounting`] says. With the kernel's, from `/proc/self/io`,
/// which the kernel keeps for every write whoever makes it (std's own `Stdout` included, which
/// no wrapper of ours could see); the file is opened once and re-read with `pread`: one system
/// call per sample, and not a write, so it does not count itself. With the counting layer,
/// from its two atomics.
#[derive(Debug)]
pub struct IoProbe {
    kernel: Option<File>,
}

impl IoProbe {
    pub fn open() -> Self {
        IoProbe {
            kernel: match accounting() {
                Accounting::Kernel => IoProbe::kernel(),
                Accounting::Counting => None,
            },
        }
    }

    /// The kernel's counters, if it keeps them (Linux with /proc mounted).
    fn kernel() -> Option<File> {
        let file = File::open("/proc/self/io").ok()?;
        read_proc_io(&file).map(|_| file)
    }

    /// `None` only where the kernel's counters were chosen and cannot be read.
    pub fn read(&self) -> Option<IoCounters> {
        match accounting() {
            Accounting::Kernel => read_proc_io(self.kernel.as_ref()?),
            Accounting::Counting => Some(IoCounters {
                write_calls: COUNTED[0].load(Ordering::Relaxed),
                bytes: COUNTED[1].load(Ordering::Relaxed),
            }),
        }
    }
}

fn read_proc_io(file: &File) -> Option<IoCounters> {
    let mut buf = [0u8; 512];
    let n = file.read_at(&mut buf, 0).ok()?;
    parse_proc_io(std::str::from_utf8(&buf[..n]).ok()?)
}

fn parse_proc_io(text: &str) -> Option<IoCounters> {
    let field = |name: &str| {
        text.lines()
            .find_map(|line| line.strip_prefix(name)?.strip_prefix(':'))
            .and_then(|value| value.trim().parse().ok())
    };
    Some(IoCounters {
        write_calls: field("syscw")?,
        bytes: field("wchar")?,
    })
}

/// CPU time of the whole process so far, from getrusage(RUSAGE_SELF).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct CpuTimes {
    pub user: Duration,
    pub kernel: Duration,
}

impl CpuTimes {
    pub fn now() -> Self {
        use nix::sys::resource::{UsageWho, getrusage};
        let to_duration = |tv: nix::sys::time::TimeVal| {
            Duration::new(
                tv.tv_sec().max(0) as u64,
                (tv.tv_usec().max(0) as u32) * 1000,
            )
        };
        match getrusage(UsageWho::RUSAGE_SELF) {
            Ok(usage) => CpuTimes {
                user: to_duration(usage.user_time()),
                kernel: to_duration(usage.system_time()),
            },
            Err(_) => CpuTimes::default(),
        }
    }
}

/// The largest resident set this process has had, in KiB (Linux counts `ru_maxrss` in KiB).
pub fn peak_rss_kib() -> u64 {
    nix::sys::resource::getrusage(nix::sys::resource::UsageWho::RUSAGE_SELF)
        .map_or(0, |usage| usage.max_rss().max(0) as u64)
}

/// A reading of every counter at one instant.
#[derive(Clone, Copy, Debug)]
pub struct Sample {
    pub at: Instant,
    pub frames: u64,
    pub io: Option<IoCounters>,
    pub cpu: CpuTimes,
}

/// What happened between two samples.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Totals {
    pub frames: u64,
    pub seconds: f64,
    /// `None` when write accounting is not available here.
    pub io: Option<IoCounters>,
    pub cpu: CpuTimes,
    /// Terminal cells the frames sent (those ratatui's diff found changed).
    pub cells: u64,
}

impl Totals {
    pub fn between(start: &Sample, end: &Sample) -> Totals {
        Totals {
            frames: end.frames - start.frames,
            seconds: (end.at - start.at).as_secs_f64(),
            io: start.io.zip(end.io).map(|(a, b)| IoCounters {
                write_calls: b.write_calls.saturating_sub(a.write_calls),
                bytes: b.bytes.saturating_sub(a.bytes),
            }),
            cpu: CpuTimes {
                user: end.cpu.user.saturating_sub(start.cpu.user),
                kernel: end.cpu.kernel.saturating_sub(start.cpu.kernel),
            },
            cells: 0,
        }
    }

    pub fn add(&mut self, other: &Totals) {
        self.frames += other.frames;
        self.seconds += other.seconds;
        self.io = self.io.zip(other.io).map(|(a, b)| IoCounters {
            write_calls: a.write_calls + b.write_calls,
            bytes: a.bytes + b.bytes,
        });
        self.cpu.user += other.cpu.user;
        self.cpu.kernel += other.cpu.kernel;
        self.cells += other.cells;
    }

    pub fn fps(&self) -> f64 {
        per(self.frames as f64, self.seconds)
    }

    pub fn writes_per_frame(&self) -> Option<f64> {
        self.io
            .map(|io| per(io.write_calls as f64, self.frames as f64))
    }

    pub fn bytes_per_frame(&self) -> Option<f64> {
        self.io.map(|io| per(io.bytes as f64, self.frames as f64))
    }

    /// `None` also when nothing was written (the CPU ceiling): there is no write to divide by.
    pub fn bytes_per_write(&self) -> Option<f64> {
        self.io
            .filter(|io| io.write_calls > 0)
            .map(|io| io.bytes as f64 / io.write_calls as f64)
    }

    pub fn cells_per_frame(&self) -> f64 {
        per(self.cells as f64, self.frames as f64)
    }

    /// Kernel CPU time as a share of all CPU time, 0..=1: how much of the work is system calls.
    pub fn kernel_share(&self) -> f64 {
        let kernel = self.cpu.kernel.as_secs_f64();
        per(kernel, kernel + self.cpu.user.as_secs_f64())
    }
}

fn per(x: f64, y: f64) -> f64 {
    if y > 0.0 { x / y } else { 0.0 }
}

/// How many one-second FPS readings the sparkline keeps.
pub const FPS_HISTORY: usize = 60;
const WINDOW: Duration = Duration::from_secs(1);

/// Frame counting for the whole run: the live window the HUD shows, the FPS history, and the
/// totals of every mode visited, in the order they were first visited.
#[derive(Debug)]
pub struct Meters {
    probe: IoProbe,
    frames: u64,
    cells_in_window: u64,
    cells_in_segment: u64,
    window_start: Sample,
    segment_start: Sample,
    /// The last closed window; `None` until one second has passed in the current mode.
    pub window: Option<Totals>,
    pub fps_history: VecDeque<u64>,
    pub per_mode: Vec<(Mode, Totals)>,
    pub started: Instant,
    /// Bumped whenever a window or a segment closes: the figures on show changed.
    generation: u64,
}

impl Meters {
    pub fn new() -> Self {
        let probe = IoProbe::open();
        let start = Self::sample_with(&probe, 0);
        Meters {
            probe,
            frames: 0,
            cells_in_window: 0,
            cells_in_segment: 0,
            window_start: start,
            segment_start: start,
            window: None,
            fps_history: VecDeque::with_capacity(FPS_HISTORY),
            per_mode: Vec::new(),
            started: start.at,
            generation: 0,
        }
    }

    fn sample_with(probe: &IoProbe, frames: u64) -> Sample {
        Sample {
            at: Instant::now(),
            frames,
            io: probe.read(),
            cpu: CpuTimes::now(),
        }
    }

    pub fn frames(&self) -> u64 {
        self.frames
    }

    /// Changes whenever the figures a display shows change (once a second, and per mode).
    pub fn generation(&self) -> u64 {
        self.generation
    }

    /// Frames counted when the figures were last sampled: what a display updated once a
    /// second shows.
    pub fn sampled_frames(&self) -> u64 {
        self.window_start.frames
    }

    pub fn accounting_available(&self) -> bool {
        self.window_start.io.is_some()
    }

    /// Counts a frame that sent `cells` cells. Returns true when a window closed, i.e. when the
    /// HUD's figures changed.
    pub fn frame_done(&mut self, cells: usize, now: Instant) -> bool {
        self.frames += 1;
        self.cells_in_window += cells as u64;
        self.cells_in_segment += cells as u64;
        if now - self.window_start.at < WINDOW {
            return false;
        }
        let end = Self::sample_with(&self.probe, self.frames);
        let mut window = Totals::between(&self.window_start, &end);
        window.cells = std::mem::take(&mut self.cells_in_window);
        if self.fps_history.len() == FPS_HISTORY {
            self.fps_history.pop_front();
        }
        self.fps_history.push_back(window.fps().round() as u64);
        self.window = Some(window);
        self.window_start = end;
        self.generation += 1;
        true
    }

    /// Closes the current mode's segment, adding it to that mode's totals, and starts a new
    /// window so the HUD never mixes two modes' figures.
    pub fn end_segment(&mut self, mode: Mode) {
        let end = Self::sample_with(&self.probe, self.frames);
        let mut segment = Totals::between(&self.segment_start, &end);
        segment.cells = std::mem::take(&mut self.cells_in_segment);
        match self.per_mode.iter_mut().find(|(m, _)| *m == mode.key()) {
            Some((_, totals)) => totals.add(&segment),
            None => self.per_mode.push((mode.key(), segment)),
        }
        self.segment_start = end;
        self.window_start = end;
        self.cells_in_window = 0;
        self.window = None;
        self.generation += 1;
    }

    pub fn totals_for(&self, mode: Mode) -> Option<&Totals> {
        self.per_mode
            .iter()
            .find(|(m, _)| *m == mode.key())
            .map(|(_, t)| t)
    }
}

impl Default for Meters {
    fn default() -> Self {
        Self::new()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Takes the first `n` bytes of every write, then fails.
    struct Short(usize, bool);

    impl Write for Short {
        fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
            if self.1 {
                return Err(io::ErrorKind::BrokenPipe.into());
            }
            self.1 = true;
            Ok(buf.len().min(self.0))
        }
        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }

    #[test]
    fn the_counting_layer_counts_calls_and_the_bytes_they_took() {
        // Enabled by hand: this test process counts by the kernel, so nothing else adds to the
        // counters meanwhile.
        let before = COUNTED.each_ref().map(|c| c.load(Ordering::Relaxed));
        let mut out = Counted {
            inner: Short(3, false),
            enabled: true,
        };
        assert_eq!(out.write(b"hello").unwrap(), 3);
        assert!(out.write(b"lo").is_err());
        let after = COUNTED.each_ref().map(|c| c.load(Ordering::Relaxed));
        assert_eq!([after[0] - before[0], after[1] - before[1]], [2, 3]);
    }

    #[test]
    fn parses_proc_self_io() {
        let text = "rchar: 10\nwchar: 4096\nsyscr: 3\nsyscw: 7\nread_bytes: 0\n";
        assert_eq!(
            parse_proc_io(text),
            Some(IoCounters {
                write_calls: 7,
                bytes: 4096
            })
        );
        assert_eq!(parse_proc_io("rchar: 1\n"), None);
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn probe_sees_this_process_write() {
        use std::io::Write;
        let probe = IoProbe::open();
        let before = probe.read().expect("/proc/self/io on Linux");
        let mut null = File::create("/dev/null").unwrap();
        null.write_all(&[0; 100]).unwrap();
        let after = probe.read().unwrap();
        // Other test threads may write too: at least ours is counted.
        assert!(after.write_calls > before.write_calls);
        assert!(after.bytes >= before.bytes + 100);
    }

    #[test]
    fn totals_derive_rates_and_never_divide_by_zero() {
        let t = Totals {
            frames: 4,
            seconds: 2.0,
            io: Some(IoCounters {
                write_calls: 40,
                bytes: 4000,
            }),
            cpu: CpuTimes {
                user: Duration::from_millis(300),
                kernel: Duration::from_millis(100),
            },
            cells: 80,
        };
        assert_eq!(t.fps(), 2.0);
        assert_eq!(t.writes_per_frame(), Some(10.0));
        assert_eq!(t.bytes_per_write(), Some(100.0));
        assert_eq!(t.kernel_share(), 0.25);
        assert_eq!(t.cells_per_frame(), 20.0);
        assert_eq!(Totals::default().fps(), 0.0);
        assert_eq!(Totals::default().kernel_share(), 0.0);
    }
}
