//! What wrap writes itself while CMD runs — CMD's output copied to the user's terminal, keys
//! and the terminal's answers sent to CMD — counted, so that it can be taken off the counters
//! that also hold CMD's tree's.

use std::io::{self, Write};
use std::sync::atomic::{AtomicU64, Ordering};

use flushlab_core::accounting::IoCounters;

/// The writes wrap makes itself while CMD runs (copying CMD's output to the terminal, passing
/// keys to CMD): taken off its own counters, which also hold CMD's tree's.
#[derive(Debug, Default)]
pub struct OwnWrites {
    calls: AtomicU64,
    bytes: AtomicU64,
}

impl OwnWrites {
    /// Writes all of `bytes` to `out`, counting each write(2).
    pub fn write_all(&self, mut out: impl Write, mut bytes: &[u8]) -> io::Result<()> {
        while !bytes.is_empty() {
            self.calls.fetch_add(1, Ordering::Relaxed);
            match out.write(bytes) {
                Ok(0) => return Err(io::ErrorKind::WriteZero.into()),
                Ok(n) => {
                    self.bytes.fetch_add(n as u64, Ordering::Relaxed);
                    bytes = &bytes[n..];
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
        Ok(())
    }

    pub fn total(&self) -> IoCounters {
        IoCounters {
            write_calls: self.calls.load(Ordering::Relaxed),
            bytes: self.bytes.load(Ordering::Relaxed),
        }
    }
}
