//! The painted run's side inside the terminal (`flushlab --paint-log FILE`, started by
//! `flushlab paint`): draws the calibration pattern, waits for the observer to have found it,
//! then lets the frame loop run with the marker on and keeps each frame's write times.
//!
//! The times are kept in memory (two clock reads and 24 bytes a frame, no syscall: the clock is
//! the vDSO's) and written once, after the last frame.

use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use flushlab_core::writer_mode::Stream;

/// How long the run waits for the observer to say it found the calibration pattern. A
/// terminal on software GL (kitty, alacritty) can take seconds to show its first picture.
const OBSERVER_WAIT: Duration = Duration::from_secs(60);

/// One frame's write, CLOCK_MONOTONIC nanoseconds ([`flushlab_core::sys::monotonic_ns`]): from before
/// the frame's first write(2) to after its last.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FrameTime {
    /// The number its marker carries (24 bits).
    pub number: u32,
    pub start_ns: u64,
    pub end_ns: u64,
}

/// The frame log of a painted run.
#[derive(Debug)]
pub struct Probe {
    log: PathBuf,
    times: Vec<FrameTime>,
}

/// The file whose appearance tells the run that the observer is ready: `LOG.go`.
pub fn go_file(log: &Path) -> PathBuf {
    let mut name = log.as_os_str().to_owned();
    name.push(".go");
    PathBuf::from(name)
}

impl Probe {
    /// Draws the calibration pattern on `stream` (a `rows`-row terminal) and waits until the
    /// observer is ready; an error once it has waited a minute or `stop` says so.
    pub fn start(
        log: &Path,
        stream: Stream,
        rows: u16,
        stop: impl Fn() -> bool,
    ) -> io::Result<Probe> {
        let mut out = stream.raw()?;
        out.write_all(&flushlab_terminals::marker::calibration(rows))?;
        out.flush()?;
        let go = go_file(log);
        let waiting = Instant::now();
        while !go.exists() {
            if stop() {
                return Err(io::Error::new(
                    io::ErrorKind::Interrupted,
                    "stopped while waiting for the observer",
                ));
            }
            if waiting.elapsed() > OBSERVER_WAIT {
                return Err(io::Error::new(
                    io::ErrorKind::TimedOut,
                    format!(
                        "no observer came in {} s ({} never appeared)",
                        OBSERVER_WAIT.as_secs(),
                        go.display()
                    ),
                ));
            }
            std::thread::sleep(Duration::from_millis(5));
        }
        Ok(Probe {
            log: log.to_owned(),
            times: Vec::with_capacity(1 << 16),
        })
    }

    /// Frame `frame` was written from `start_ns` to now.
    pub fn record(&mut self, frame: u64, start_ns: u64) {
        self.times.push(FrameTime {
            number: (frame & flushlab_terminals::marker::NUMBER_MASK) as u32,
            start_ns,
            end_ns: flushlab_core::sys::monotonic_ns(),
        });
    }

    /// Writes the log: a line `NUMBER START_NS END_NS` a frame.
    pub fn finish(self) -> io::Result<()> {
        let mut text = String::with_capacity(self.times.len() * 32);
        for t in &self.times {
            text.push_str(&format!("{} {} {}\n", t.number, t.start_ns, t.end_ns));
        }
        flushlab_core::files::write_atomically(&self.log, text.as_bytes())
    }
}

/// Reads a log [`Probe::finish`] wrote; a line that is not three numbers, or times that run
/// backwards, make it an error naming the line.
pub fn read_log(path: &Path) -> io::Result<Vec<FrameTime>> {
    let bytes = flushlab_core::files::read_input(path, flushlab_core::files::InputKind::FrameLog)?;
    let text = String::from_utf8_lossy(&bytes);
    let bad = |n: usize| {
        io::Error::new(
            io::ErrorKind::InvalidData,
            format!("{}: line {n} is not a frame time", path.display()),
        )
    };
    let mut times = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let mut fields = line.split(' ').map(str::parse::<u64>);
        let (Some(Ok(number)), Some(Ok(start_ns)), Some(Ok(end_ns)), None) =
            (fields.next(), fields.next(), fields.next(), fields.next())
        else {
            return Err(bad(i + 1));
        };
        let number = u32::try_from(number)
            .ok()
            .filter(|n| u64::from(*n) <= flushlab_terminals::marker::NUMBER_MASK);
        let Some(number) = number.filter(|_| start_ns <= end_ns) else {
            return Err(bad(i + 1));
        };
        times.push(FrameTime {
            number,
            start_ns,
            end_ns,
        });
    }
    Ok(times)
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_log_round_trips_and_bad_lines_are_named() {
        let dir = flushlab_core::files::Scratch::new("flushlab-probe-test").unwrap();
        let log = dir.path().join("frames.log");
        let mut probe = super::Probe {
            log: log.clone(),
            times: Vec::new(),
        };
        probe.record(7, 100);
        probe.record(8, flushlab_core::sys::monotonic_ns());
        probe.finish().unwrap();
        let times = super::read_log(&log).unwrap();
        assert_eq!(times.iter().map(|t| t.number).collect::<Vec<_>>(), [7, 8]);
        assert!(times.iter().all(|t| t.start_ns <= t.end_ns));
        for bad in ["1 2\n", "1 2 3 4\n", "x 1 2\n", "1 5 4\n", "16777216 1 2\n"] {
            std::fs::write(&log, bad).unwrap();
            let e = super::read_log(&log).unwrap_err().to_string();
            assert!(e.contains("line 1"), "{bad:?}: {e}");
        }
        assert_eq!(super::go_file(&log), dir.path().join("frames.log.go"));
    }
}
