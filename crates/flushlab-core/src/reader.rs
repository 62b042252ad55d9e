//! Reader models for the other side of the pty or pipe: how fast "the terminal" takes bytes.

use std::io::{self, Read};
use std::num::NonZeroU16;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use crate::results::conditions::ReaderModel;

/// Keeps the last bytes read, so that a failed run can show what it printed last.
#[derive(Debug, Default)]
pub struct Tail(Vec<u8>);

const TAIL: usize = 4096;

impl Tail {
    pub fn push(&mut self, bytes: &[u8]) {
        self.0
            .extend_from_slice(&bytes[bytes.len().saturating_sub(TAIL)..]);
        let excess = self.0.len().saturating_sub(TAIL);
        self.0.drain(..excess);
    }

    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.0).into_owned()
    }
}

/// Reads `source` to its end (EIO from a pty master counts as the end) the way `model` says,
/// shows every chunk to `seen` as it arrives (with the vt model's screen after it, for `vt`),
/// and returns the bytes read. Once `writer_gone` is set, a throttle stops pacing: what is left in
/// the kernel's buffer is read at once instead of holding the bench up.
pub fn consume(
    model: ReaderModel,
    mut source: impl Read,
    size: (u16, u16),
    seen: &mut dyn FnMut(&[u8], Option<&vt100::Screen>),
    writer_gone: &AtomicBool,
) -> io::Result<u64> {
    let mut buf = vec![0u8; 64 * 1024];
    let mut parser = (model == ReaderModel::Vt).then(|| {
        let side = |n: u16| NonZeroU16::new(n).unwrap_or(NonZeroU16::MIN);
        vt100::Parser::new(side(size.1), side(size.0), 0)
    });
    let (chunk, pace) = match model {
        // Small reads, paced: the kernel buffer fills and the writer blocks, as on a slow terminal.
        ReaderModel::Throttle { bytes_per_second } => (
            (bytes_per_second / 50).clamp(1, buf.len() as u64) as usize,
            Some(bytes_per_second),
        ),
        _ => (buf.len(), None),
    };
    let start = Instant::now();
    let mut total = 0u64;
    loop {
        let n = match source.read(&mut buf[..chunk]) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) if e.raw_os_error() == Some(rustix::io::Errno::IO.raw_os_error()) => break,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        total += n as u64;
        if let Some(parser) = &mut parser {
            parser.process(&buf[..n]);
        }
        seen(&buf[..n], parser.as_ref().map(vt100::Parser::screen));
        if let Some(rate) = pace.filter(|_| !writer_gone.load(Ordering::Relaxed)) {
            let due = start + Duration::from_secs_f64(total as f64 / rate as f64);
            let now = Instant::now();
            if due > now {
                std::thread::sleep(due - now);
            }
        }
    }
    Ok(total)
}

#[cfg(test)]
mod tests {
    use super::*;

    static GOING: AtomicBool = AtomicBool::new(false);

    /// An endless source that ends after a fixed wall time.
    struct Until(Instant);
    impl Read for Until {
        fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
            if Instant::now() >= self.0 {
                return Ok(0);
            }
            buf.fill(b'x');
            Ok(buf.len())
        }
    }

    #[test]
    fn throttle_limits_the_bytes_read() {
        let rate = 1_000_000;
        let mut tail = Tail::default();
        let source = Until(Instant::now() + Duration::from_millis(500));
        let read = consume(
            ReaderModel::Throttle {
                bytes_per_second: rate,
            },
            source,
            (80, 24),
            &mut |b, _| tail.push(b),
            &GOING,
        )
        .unwrap();
        // Half a second at 1 MB/s is 500 kB; an unthrottled read would be gigabytes.
        assert!(read <= 2 * rate / 2 + 64 * 1024, "{read} bytes");
        assert!(read >= rate / 10, "{read} bytes");
        let drained = consume(
            ReaderModel::Drain,
            Until(Instant::now() + Duration::from_millis(100)),
            (80, 24),
            &mut |b, _| tail.push(b),
            &GOING,
        )
        .unwrap();
        assert!(drained > read, "drain {drained} vs throttle {read}");
    }

    #[test]
    fn vt_parses_what_it_reads_and_tail_keeps_the_end() {
        let mut tail = Tail::default();
        let text = format!("{}\x1b[31mend", "a".repeat(10_000));
        let read = consume(
            ReaderModel::Vt,
            text.as_bytes(),
            (80, 24),
            &mut |b, _| tail.push(b),
            &GOING,
        )
        .unwrap();
        assert_eq!(read as usize, text.len());
        assert!(tail.text().ends_with("\x1b[31mend"));
        assert_eq!(tail.text().len(), TAIL);
    }
}
