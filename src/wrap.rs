//! `flushlab wrap -- CMD`: any program's terminal output measured the way flushlab measures its
//! own modes. CMD runs in a new pseudo-terminal; what it writes is read from the master side
//! (by a reader model when headless, copied to the user's terminal when interactive), its frames
//! are found from synchronized-output markers or from idle gaps, its write(2) calls are the
//! kernel's count for its process, and a diagnosis says what to change.

use std::ffi::OsString;
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::Context;
use clap::Args;
use serde::Serialize;

use crate::accounting::{IoCounters, process_io};
use crate::bench::reader::{ReaderModel, consume, parse_reader};
use crate::figures::Figures;
use crate::meters::{CpuTimes, Totals};
use crate::outcome::{Outcome, complain};
use crate::pty::Pty;
use crate::units::{bytes, count, parse_duration, parse_size, percent};

#[derive(Debug, Args)]
pub struct WrapArgs {
    /// Run CMD headless for this many seconds, then end it (SIGTERM to its process group,
    /// SIGKILL 2 s later) [default: until CMD exits; headless when stdout is not a terminal]
    #[arg(long, value_parser = parse_duration)]
    pub duration: Option<Duration>,

    /// The pseudo-terminal's size when headless, COLSxROWS (interactive: this terminal's)
    #[arg(long, value_parser = parse_size, default_value = "200x60")]
    pub size: (u16, u16),

    /// How the headless pty is read: drain, vt, throttle:RATE (a slow terminal)
    #[arg(long, value_parser = parse_reader, default_value = "drain")]
    pub reader: ReaderModel,

    /// Without synchronized-output markers, a pause this long (seconds) ends a frame
    #[arg(long, value_parser = parse_duration, default_value = "0.002")]
    pub frame_gap: Duration,

    /// Also write the results as JSON to this file (`-` = stdout)
    #[arg(long, value_name = "FILE")]
    pub report: Option<PathBuf>,

    /// The program to run, and its arguments (after `--`)
    #[arg(
        required = true,
        trailing_var_arg = true,
        allow_hyphen_values = true,
        value_name = "CMD"
    )]
    pub command: Vec<OsString>,
}

const SYNC_BEGIN: &[u8] = b"\x1b[?2026h";
const SYNC_END: &[u8] = b"\x1b[?2026l";
/// How long CMD has between SIGTERM and SIGKILL.
const GRACE: Duration = Duration::from_secs(2);

/// Finds frames in a stream of output: from DEC 2026 markers when CMD sends them, else from
/// pauses of at least `gap` between bursts. Fed each chunk as it is read, with when.
#[derive(Clone, Debug)]
pub struct FrameCounter {
    gap: Duration,
    /// Whether pauses can be trusted: a throttled reader pauses on its own.
    gaps_mean_frames: bool,
    pub bytes: u64,
    pub begins: u64,
    pub ends: u64,
    /// Begin…end pairs: the frames, when CMD marks them.
    pub pairs: u64,
    /// Inside a begin that has not ended yet.
    open: bool,
    /// The end of the previous chunk, so a marker split across two reads is still found.
    carry: Vec<u8>,
    first: Option<Instant>,
    last: Option<Instant>,
    pub pauses: u64,
    idle: Duration,
}

/// How a report's frames were found.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum FrameMethod {
    /// Counted between synchronized-output markers: exact.
    SyncMarkers,
    /// Counted between pauses of `--frame-gap`: as good as CMD's bursts are distinct.
    IdleGaps,
    /// Neither: CMD wrote continuously (or sent nothing). Only per-second figures.
    Unknown,
}

impl FrameCounter {
    pub fn new(gap: Duration, gaps_mean_frames: bool) -> Self {
        FrameCounter {
            gap,
            gaps_mean_frames,
            bytes: 0,
            begins: 0,
            ends: 0,
            pairs: 0,
            open: false,
            carry: Vec::new(),
            first: None,
            last: None,
            pauses: 0,
            idle: Duration::ZERO,
        }
    }

    pub fn feed(&mut self, chunk: &[u8], at: Instant) {
        if chunk.is_empty() {
            return;
        }
        match self.last {
            Some(last) if at.saturating_duration_since(last) >= self.gap => {
                self.pauses += 1;
                self.idle += at - last;
            }
            Some(_) => {}
            None => self.first = Some(at),
        }
        self.last = Some(at);
        self.bytes += chunk.len() as u64;
        // Shorter than a marker: a match in carry + chunk always ends in this chunk.
        let mut joined = std::mem::take(&mut self.carry);
        joined.extend_from_slice(chunk);
        for window in joined.windows(SYNC_BEGIN.len()) {
            if window == SYNC_BEGIN {
                self.begins += 1;
                self.open = true;
            } else if window == SYNC_END {
                self.ends += 1;
                // An end outside a frame (a reset at start or exit) closes nothing.
                if std::mem::take(&mut self.open) {
                    self.pairs += 1;
                }
            }
        }
        let keep = joined.len().saturating_sub(SYNC_BEGIN.len() - 1);
        self.carry = joined.split_off(keep);
    }

    /// The frames, and how they were found. Gaps count only when CMD was idle for at least a
    /// tenth of the time it wrote: a continuous writer's scheduling hiccups are not frames.
    pub fn frames(&self) -> (FrameMethod, Option<u64>) {
        if self.pairs > 0 {
            return (FrameMethod::SyncMarkers, Some(self.pairs));
        }
        let span = match (self.first, self.last) {
            (Some(first), Some(last)) => last - first,
            _ => Duration::ZERO,
        };
        if self.gaps_mean_frames && self.pauses >= 2 && self.idle * 10 >= span {
            (FrameMethod::IdleGaps, Some(self.pauses + 1))
        } else {
            (FrameMethod::Unknown, None)
        }
    }
}

/// One finding: a stable code for scripts, a sentence with the fix and the figure behind it.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Diagnosis {
    pub code: &'static str,
    pub message: String,
    /// Where the guide explains it.
    pub guide: &'static str,
}

/// What the figures say CMD should change. `writes` and `bytes_written` are the kernel's count
/// for CMD's process; `frames` what [`FrameCounter::frames`] found.
pub fn diagnose(
    writes: Option<IoCounters>,
    frames: Option<u64>,
    counter: &FrameCounter,
    cpu_share: f64,
    terminal_syncs: bool,
) -> Vec<Diagnosis> {
    let mut found = Vec::new();
    if terminal_syncs && counter.begins == 0 && counter.bytes > 0 {
        found.push(Diagnosis {
            code: "sync-unused",
            message: "this terminal supports synchronized output (it answered DECRQM ?2026) but \
                      CMD sent no markers: wrapping each frame in ESC[?2026h … ESC[?2026l keeps \
                      half-drawn frames off the screen"
                .to_owned(),
            guide: "docs/guide.md#6-synchronized-output",
        });
    }
    if let Some(io) = writes.filter(|io| io.write_calls >= 100) {
        let per_write = io.bytes as f64 / io.write_calls as f64;
        let per_frame = frames.map(|f| io.write_calls as f64 / f.max(1) as f64);
        let per_frame_text =
            per_frame.map_or_else(String::new, |w| format!(", {} write(2) a frame", count(w)));
        if per_write < 16.0 {
            found.push(Diagnosis {
                code: "unbuffered",
                message: format!(
                    "{} a write(2){per_frame_text}: every escape sequence is a system call; put \
                     a BufWriter between the backend and the fd (or use stdout(), not stderr())",
                    bytes(per_write)
                ),
                guide: "docs/guide.md#4-the-writer-modes-measured",
            });
        } else if (900.0..=1100.0).contains(&per_write) && per_frame.is_none_or(|w| w > 2.0) {
            found.push(Diagnosis {
                code: "line-buffered-1k",
                message: format!(
                    "{} a write(2){per_frame_text}: std's stdout() LineWriter flushing every 1 \
                     KiB; a BufWriter as large as a frame cuts the write(2) calls that many times",
                    bytes(per_write)
                ),
                guide: "docs/guide.md#2-what-rusts-stdout-and-stderr-are",
            });
        }
    }
    // An end without a begin is harmless (programs reset the mode on start and exit); a begin
    // without an end is not.
    if counter.begins > counter.pairs {
        found.push(Diagnosis {
            code: "sync-unbalanced",
            message: format!(
                "{} synchronized-output begins, {} of them ended: a begin without an end (a \
                 crash or an early exit) leaves the terminal frozen until it times out",
                counter.begins, counter.pairs
            ),
            guide: "docs/guide.md#6-synchronized-output",
        });
    }
    if cpu_share < 0.2 && counter.bytes > 1 << 20 {
        found.push(Diagnosis {
            code: "reader-bound",
            message: format!(
                "CMD used the CPU {} of the time while writing {}: it spent the rest waiting, \
                 most likely blocked on the reader (the terminal); a writer thread keeps its \
                 loop going",
                percent(cpu_share),
                bytes(counter.bytes as f64)
            ),
            guide: "docs/guide.md#8-recipes-what-to-change-in-your-program",
        });
    }
    found
}

/// What wrap measured: the `--report` JSON.
#[derive(Clone, Debug, Serialize)]
pub struct WrapReport {
    pub version: &'static str,
    pub command: Vec<String>,
    pub cols: u16,
    pub rows: u16,
    pub reader: String,
    pub seconds: f64,
    /// CMD's exit status (128+N when a signal ended it); `null` when wrap ended it.
    pub exit_code: Option<i32>,
    /// Bytes read from the pty: everything CMD's process tree wrote to the terminal.
    pub bytes: u64,
    /// write(2) calls and bytes of CMD's process and the children it reaped, to any fd
    /// (`/proc/PID/io`); `null` where the kernel keeps no such counters.
    pub write_calls: Option<u64>,
    pub bytes_written: Option<u64>,
    pub bytes_per_second: f64,
    pub writes_per_second: Option<f64>,
    pub frame_method: FrameMethod,
    pub sync_begins: u64,
    pub sync_ends: u64,
    /// Per-frame figures in the schema of every flushlab report; `null` when the frames are
    /// unknown.
    pub figures: Option<Figures>,
    /// The largest resident set of CMD or a child it reaped, KiB.
    pub peak_rss_kib: u64,
    pub diagnoses: Vec<Diagnosis>,
}

impl WrapReport {
    /// The summary printed after the run.
    pub fn summary(&self) -> String {
        let mut out = format!(
            "wrap {}: {} in {:.2} s ({}/s), ",
            crate::units::printable(&self.command.join(" ")),
            bytes(self.bytes as f64),
            self.seconds,
            bytes(self.bytes_per_second),
        );
        out += &match self.write_calls {
            Some(w) => format!(
                "{} write(2) ({}/s)",
                count(w as f64),
                count(per(w, self.seconds))
            ),
            None => "write(2) n/a".to_owned(),
        };
        out += &match &self.figures {
            Some(f) => format!(
                "; {} frames ({}) = {} fps, {} a frame, {} write(2) a frame",
                crate::units::thousands(f.frames),
                match self.frame_method {
                    FrameMethod::SyncMarkers => "sync markers",
                    _ => "idle gaps",
                },
                count(f.fps),
                f.bytes_per_frame.map_or("n/a".into(), bytes),
                f.writes_per_frame.map_or("n/a".into(), count),
            ),
            None => "; frames unknown (no sync markers, no idle gaps)".to_owned(),
        };
        for d in &self.diagnoses {
            out += &format!("\n  {}: {}", d.code, d.message);
        }
        out
    }
}

fn per(x: u64, seconds: f64) -> f64 {
    if seconds > 0.0 {
        x as f64 / seconds
    } else {
        0.0
    }
}

pub fn run(args: WrapArgs) -> anyhow::Result<Outcome> {
    let program = &args.command[0];
    let Some(resolved) = crate::files::find_program(program) else {
        complain(&format!(
            "wrap: '{}' is not a command (not found, or not executable)",
            crate::units::printable(&program.to_string_lossy())
        ));
        return Ok(Outcome::NotFound);
    };
    if let Some(path) = args.report.as_deref().filter(|p| *p != Path::new("-"))
        && let Err(e) = crate::files::check_writable(path)
    {
        complain(&format!("wrap: --report '{}': {e}", path.display()));
        return Ok(Outcome::BadInput);
    }
    let interactive = args.duration.is_none() && std::io::IsTerminal::is_terminal(&io::stdout());
    let signal = crate::terminal_session::watch_termination_signals()?;
    let size = if interactive {
        let size = rustix::termios::tcgetwinsize(rustix::stdio::stdout())?;
        (size.ws_col.max(1), size.ws_row.max(1))
    } else {
        args.size
    };
    let pty = Pty::open(size.0, size.1)?;
    // Interactive: the keys go to CMD, the user's terminal is raw until CMD is done.
    let session = if interactive {
        Some(crate::terminal_session::TerminalSession::raw_only(
            crate::writer_mode::Stream::Stdout,
        )?)
    } else {
        None
    };
    // Whether the user's terminal would hold frames for CMD: asked before CMD owns the keys.
    let terminal_syncs = interactive && terminal_supports_sync();
    let cpu_before = CpuTimes::children();
    let started = Instant::now();
    let mut child = pty.spawn(&resolved, |command| {
        command.args(&args.command[1..]);
    })?;
    let pid = rustix::process::Pid::from_child(&child);

    let reader_model = if interactive {
        ReaderModel::Drain
    } else {
        args.reader
    };
    let counter = Arc::new(Mutex::new(FrameCounter::new(
        args.frame_gap,
        !matches!(reader_model, ReaderModel::Throttle { .. }),
    )));
    let child_gone = Arc::new(AtomicBool::new(false));
    let reader = {
        let master = pty.master.try_clone()?;
        let counter = Arc::clone(&counter);
        let child_gone = Arc::clone(&child_gone);
        std::thread::spawn(move || {
            // Straight to the fd, as it came: no LineWriter between CMD and the terminal.
            let mut out = interactive
                .then(|| crate::writer_mode::Stream::Stdout.raw().ok())
                .flatten();
            let mut seen = |chunk: &[u8]| {
                let at = Instant::now();
                if let Some(out) = &mut out {
                    let _ = out.write_all(chunk);
                }
                counter
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .feed(chunk, at);
            };
            consume(reader_model, master, size, &mut seen, &child_gone)
        })
    };
    if interactive {
        forward_keys_and_resizes(&pty, Arc::clone(&child_gone))?;
    }

    // Until CMD exits, the duration is over, or a signal asks wrap to stop.
    let mut ended_by_wrap = false;
    let deadline = args.duration.map(|d| started + d);
    loop {
        if wait_exited(pid) {
            break;
        }
        let sig = signal.load(Ordering::Relaxed);
        if sig != 0 || deadline.is_some_and(|d| Instant::now() >= d) {
            ended_by_wrap = sig == 0;
            end_group(pid, &mut child);
            break;
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    // The process's own counters, read while it is a zombie: they include its reaped children.
    let io = process_io(pid.as_raw_nonzero().get());
    let status = child.wait()?;
    let seconds = started.elapsed().as_secs_f64();
    child_gone.store(true, Ordering::Relaxed);
    // The reader ends when every holder of the pty's slave is gone; a daemonized grandchild may
    // keep it: then what was read so far is the answer.
    drop(pty);
    let until = Instant::now() + Duration::from_secs(1);
    while !reader.is_finished() && Instant::now() < until {
        std::thread::sleep(Duration::from_millis(5));
    }
    drop(session);
    let cpu = CpuTimes::children();
    let cpu = CpuTimes {
        user: cpu.user.saturating_sub(cpu_before.user),
        kernel: cpu.kernel.saturating_sub(cpu_before.kernel),
    };
    let counter = counter.lock().unwrap_or_else(|e| e.into_inner()).clone();
    let report = report(
        &args,
        (size, reader_model),
        seconds,
        status,
        ended_by_wrap,
        io,
        cpu,
        &counter,
        terminal_syncs,
    );
    complain(&report.summary());
    if let Some(path) = &args.report {
        let mut json = serde_json::to_vec_pretty(&report)?;
        json.push(b'\n');
        if path == Path::new("-") {
            crate::outcome::print(&json)?;
        } else {
            crate::files::write_atomically(path, &json)
                .with_context(|| format!("writing the report to {}", path.display()))?;
        }
    }
    let outcome = match signal.load(Ordering::Relaxed) {
        0 if ended_by_wrap => Outcome::Finished,
        0 => Outcome::Exited(report.exit_code.unwrap_or(0)),
        sig => Outcome::Signal(sig),
    };
    Ok(outcome)
}

#[allow(clippy::too_many_arguments)]
fn report(
    args: &WrapArgs,
    // The pty as it was read: interactive runs are copied to the terminal as they come.
    (size, reader): ((u16, u16), ReaderModel),
    seconds: f64,
    status: std::process::ExitStatus,
    ended_by_wrap: bool,
    io: Option<IoCounters>,
    cpu: CpuTimes,
    counter: &FrameCounter,
    terminal_syncs: bool,
) -> WrapReport {
    use std::os::unix::process::ExitStatusExt;
    let (frame_method, frames) = counter.frames();
    let totals = Totals {
        frames: frames.unwrap_or(0),
        seconds,
        io,
        cpu,
        cells: 0,
    };
    let mut figures = frames.map(|_| totals.figures());
    // The bytes a frame is what reached the terminal, whoever in CMD's tree wrote it.
    if let Some(f) = &mut figures {
        f.bytes_per_frame = Some(counter.bytes as f64 / f.frames.max(1) as f64);
    }
    let cpu_share = (cpu.user + cpu.kernel).as_secs_f64() / seconds.max(1e-9);
    let exit_code = if ended_by_wrap {
        None
    } else {
        status.code().or_else(|| status.signal().map(|s| 128 + s))
    };
    WrapReport {
        version: env!("CARGO_PKG_VERSION"),
        command: args
            .command
            .iter()
            .map(|a| a.to_string_lossy().into_owned())
            .collect(),
        cols: size.0,
        rows: size.1,
        reader: reader.to_string(),
        seconds,
        exit_code,
        bytes: counter.bytes,
        write_calls: io.map(|io| io.write_calls),
        bytes_written: io.map(|io| io.bytes),
        bytes_per_second: per(counter.bytes, seconds),
        writes_per_second: io.map(|io| per(io.write_calls, seconds)),
        frame_method,
        sync_begins: counter.begins,
        sync_ends: counter.ends,
        figures,
        peak_rss_kib: nix::sys::resource::getrusage(nix::sys::resource::UsageWho::RUSAGE_CHILDREN)
            .map_or(0, |usage| usage.max_rss().max(0) as u64),
        diagnoses: diagnose(io, frames, counter, cpu_share, terminal_syncs),
    }
}

/// Asks the terminal (DECRQM ?2026) whether it supports synchronized output; waits at most
/// 200 ms for the answer (a terminal that does not know the query says nothing).
fn terminal_supports_sync() -> bool {
    let Ok(mut keyboard) = crate::keyboard::Keyboard::open() else {
        return false;
    };
    if io::stdout()
        .write_all(b"\x1b[?2026$p")
        .and_then(|()| io::stdout().flush())
        .is_err()
    {
        return false;
    }
    let until = Instant::now() + Duration::from_millis(200);
    while Instant::now() < until {
        for input in keyboard.pending_input().unwrap_or_default() {
            if let crate::keyboard::Input::PrivateMode { mode: 2026, status } = input {
                // 1 set, 2 reset: known; 0 not recognized, 4 permanently reset.
                return matches!(status, 1 | 2);
            }
        }
        keyboard.wait(Duration::from_millis(5));
    }
    false
}

/// Whether CMD has exited, without reaping it: its counters stay readable until it is.
fn wait_exited(pid: rustix::process::Pid) -> bool {
    use rustix::process::{WaitId, WaitIdOptions, waitid};
    waitid(
        WaitId::Pid(pid),
        WaitIdOptions::EXITED | WaitIdOptions::NOWAIT | WaitIdOptions::NOHANG,
    )
    .is_ok_and(|status| status.is_some())
}

/// SIGTERM to CMD's process group (it leads a session of its own), SIGKILL after [`GRACE`];
/// returns once CMD has exited (not reaped).
fn end_group(pid: rustix::process::Pid, child: &mut std::process::Child) {
    use rustix::process::{Signal, kill_process_group};
    let _ = kill_process_group(pid, Signal::TERM);
    let until = Instant::now() + GRACE;
    while Instant::now() < until {
        if wait_exited(pid) {
            return;
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    let _ = kill_process_group(pid, Signal::KILL);
    let _ = child.kill();
    while !wait_exited(pid) {
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// Interactive: the user's keys go to CMD as they come, and a resize of the user's terminal
/// becomes a resize of CMD's (the kernel sends CMD its SIGWINCH).
fn forward_keys_and_resizes(pty: &Pty, stop: Arc<AtomicBool>) -> io::Result<()> {
    let resized = Arc::new(AtomicUsize::new(0));
    signal_hook::flag::register_usize(signal_hook::consts::SIGWINCH, Arc::clone(&resized), 1)?;
    let master = pty.master.try_clone()?;
    std::thread::spawn(move || {
        use rustix::event::{PollFd, PollFlags, Timespec, poll};
        let stdin = rustix::stdio::stdin();
        let mut buf = [0u8; 4096];
        let tick = Timespec {
            tv_sec: 0,
            tv_nsec: 50_000_000,
        };
        while !stop.load(Ordering::Relaxed) {
            if resized.swap(0, Ordering::Relaxed) != 0
                && let Ok(size) = rustix::termios::tcgetwinsize(rustix::stdio::stdout())
            {
                let _ = rustix::termios::tcsetwinsize(&master, size);
            }
            let mut fds = [PollFd::new(&stdin, PollFlags::IN)];
            if !matches!(poll(&mut fds, Some(&tick)), Ok(1..)) {
                continue;
            }
            match rustix::io::read(stdin, &mut buf) {
                Ok(0) | Err(_) => break,
                Ok(n) => {
                    if (&master).write_all(&buf[..n]).is_err() {
                        break;
                    }
                }
            }
        }
    });
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(start: Instant, ms: u64) -> Instant {
        start + Duration::from_millis(ms)
    }

    #[test]
    fn frames_from_sync_markers_even_split_across_reads() {
        let start = Instant::now();
        let mut counter = FrameCounter::new(Duration::from_millis(2), true);
        let frame = b"\x1b[?2026hsome cells\x1b[?2026l";
        for i in 0..10 {
            let (a, b) = frame.split_at(3 + i);
            counter.feed(a, at(start, i as u64));
            counter.feed(b, at(start, i as u64));
        }
        assert_eq!((counter.begins, counter.ends, counter.pairs), (10, 10, 10));
        assert_eq!(counter.frames(), (FrameMethod::SyncMarkers, Some(10)));
    }

    #[test]
    fn frames_from_gaps_and_never_invented_for_a_continuous_writer() {
        let start = Instant::now();
        let mut bursts = FrameCounter::new(Duration::from_millis(2), true);
        // Five bursts of three chunks, 50 ms apart.
        for burst in 0..5u64 {
            for chunk in 0..3 {
                bursts.feed(b"xxxx", at(start, burst * 50 + chunk));
            }
        }
        assert_eq!(bursts.frames(), (FrameMethod::IdleGaps, Some(5)));
        let mut steady = FrameCounter::new(Duration::from_millis(2), true);
        // A chunk every millisecond for a second, and two hiccups of 3 ms.
        let mut t = 0;
        for i in 0..1000 {
            t += if i == 300 || i == 700 { 3 } else { 1 };
            steady.feed(b"yyyy", at(start, t));
        }
        assert_eq!(steady.pauses, 2);
        assert_eq!(steady.frames(), (FrameMethod::Unknown, None));
        // A throttled reader pauses on its own: its pauses are no frames.
        let mut throttled = FrameCounter::new(Duration::from_millis(2), false);
        for burst in 0..5u64 {
            throttled.feed(b"xxxx", at(start, burst * 50));
        }
        assert_eq!(throttled.frames(), (FrameMethod::Unknown, None));
    }

    #[test]
    fn diagnoses_name_the_pattern() {
        let counter = FrameCounter::new(Duration::from_millis(2), true);
        let io = |calls, bytes| {
            Some(IoCounters {
                write_calls: calls,
                bytes,
            })
        };
        let codes = |d: Vec<Diagnosis>| d.into_iter().map(|d| d.code).collect::<Vec<_>>();
        assert_eq!(
            codes(diagnose(
                io(100_000, 190_000),
                Some(10),
                &counter,
                0.9,
                false
            )),
            ["unbuffered"]
        );
        assert_eq!(
            codes(diagnose(
                io(3_600, 3_600 * 1020),
                Some(10),
                &counter,
                0.9,
                false
            )),
            ["line-buffered-1k"]
        );
        assert!(codes(diagnose(io(10, 3_000_000), Some(10), &counter, 0.9, false)).is_empty());
        let mut open = FrameCounter::new(Duration::from_millis(2), true);
        open.feed(b"\x1b[?2026l\x1b[?2026h\x1b[?2026l", Instant::now());
        // A stray end (a reset) is harmless.
        assert!(codes(diagnose(None, Some(1), &open, 0.9, false)).is_empty());
        open.feed(b"\x1b[?2026h", Instant::now());
        assert_eq!(
            codes(diagnose(None, Some(1), &open, 0.9, false)),
            ["sync-unbalanced"]
        );
        let mut plain = FrameCounter::new(Duration::from_millis(2), true);
        plain.feed(b"no markers here", Instant::now());
        assert_eq!(
            codes(diagnose(None, Some(1), &plain, 0.9, true)),
            ["sync-unused"]
        );
        assert!(codes(diagnose(None, Some(1), &plain, 0.9, false)).is_empty());
    }
}
