//! How write(2) calls and bytes are counted: the kernel's counters (`/proc/self/io`) where they
//! exist, else [`Counted`], a layer under every writer stack. Chosen once per process, before
//! any writer is built; a leaf that the writer stacks and the meters both use.

use std::fs::File;
use std::io::{self, Write};
use std::sync::OnceLock;
use std::sync::atomic::{AtomicU64, Ordering};

use serde::Serialize;

pub use crate::sys::io::{IoCounters, process_io, read_proc_io};

/// How write(2) calls and bytes are counted.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "clap", derive(clap::ValueEnum))]
#[serde(rename_all = "lowercase")]
pub enum Accounting {
    /// The kernel's own counters in /proc/self/io (Linux): every write of the process, std's
    /// `stdout()` included, at no cost per write.
    Kernel,
    /// A layer under flushlab's own writer stacks (the Counted layer): one branch and two atomic
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
        crate::sys::io::open_own()
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
}
