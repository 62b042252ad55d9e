//! How a writer waits for room in a pty decides how much of the pty it gets: the same frame,
//! the same drained pty, five ways of waiting.
//!
//! ```sh
//! cargo run --release --example writer_wait -- [ROUNDS] [SECONDS] [--one-core]
//! ```
//!
//! The frame is the one `flushlab bench` writes in its transport ceiling (the explorer's second
//! frame through the lean backend, HUD included), at 80x24 and 200x60. A thread drains the
//! pty's master side as the bench's reader does; this thread writes the frame again and again:
//!
//! - `sleep, one write a frame`: `write_all` of the frame, as the frame and thread modes write
//!   it; the kernel puts the writer to sleep whenever the pty is full.
//! - `sleep, 4 KiB writes`: the same in 4 KiB writes (block buffering's shape).
//! - `spin, 4 KiB writes`: the transport ceiling's writer (`flushlab_core::wait::Wait::Spin`): it
//!   asks `poll` with a zero timeout until there is room, yielding the core in between, and never
//!   sleeps.
//! - `spin 100 µs, then sleep`: `flushlab_core::wait::Wait::Poll` (`flushlab bench --wait poll`):
//!   spins like the ceiling for up to 100 µs, then sleeps in write(2).
//! - `spin without yielding`: the ceiling's way before it yielded the core between polls.
//!
//! With `--one-core` the writer and the reader are both pinned to the first CPU, as the
//! scheduler sometimes places them: a writer that spins without yielding then takes the core
//! from the reader it waits for.
//!
//! Each round runs every way once, in an order that rotates; the median of the rounds is kept,
//! with the CPU this thread used a frame (`CLOCK_THREAD_CPUTIME_ID`): what waiting costs. A run
//! counts only if the reader received every byte of the frames it counts.

use std::io::{self, Write};
use std::os::fd::AsFd;
use std::time::{Duration, Instant};

use flushlab::explorer::app::App;
use flushlab::explorer::hud::Hud;
use flushlab::plumbing::ceiling::encode_steady_frame;
use flushlab_core::backend::BackendKind;
use flushlab_core::scene::Scene;
use flushlab_core::sys::pty::{Pty, read_to_end};
use flushlab_core::wait::Waiting;
use flushlab_core::writer_mode::{Buffering, Mode, Stream};
use rustix::event::{PollFd, PollFlags, Timespec, poll};

#[derive(Clone, Copy)]
enum Wait {
    SleepWholeFrame,
    Sleep4K,
    Spin4K,
    SpinThenSleep4K,
    SpinNoYield4K,
}

impl Wait {
    const ALL: [Wait; 5] = [
        Wait::SleepWholeFrame,
        Wait::Sleep4K,
        Wait::Spin4K,
        Wait::SpinThenSleep4K,
        Wait::SpinNoYield4K,
    ];

    fn name(self) -> &'static str {
        match self {
            Wait::SleepWholeFrame => "sleep, one write a frame",
            Wait::Sleep4K => "sleep, 4 KiB writes",
            Wait::Spin4K => "spin, 4 KiB writes",
            Wait::SpinThenSleep4K => "spin 100 µs, then sleep, 4 KiB writes",
            Wait::SpinNoYield4K => "spin without yielding, 4 KiB writes",
        }
    }
}

/// Waits for room by asking `poll` with a zero timeout until there is some, without ever
/// yielding the core: the way [`flushlab_core::wait::wait_for_room`] does not wait.
struct NoYield<W> {
    inner: W,
}

impl<W: Write + AsFd> Write for NoYield<W> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let zero = Timespec {
            tv_sec: 0,
            tv_nsec: 0,
        };
        loop {
            let mut fds = [PollFd::new(&self.inner, PollFlags::OUT)];
            match poll(&mut fds, Some(&zero)) {
                Ok(0) | Err(rustix::io::Errno::INTR) => std::hint::spin_loop(),
                _ => break,
            }
        }
        self.inner.write(buf)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.inner.flush()
    }
}

/// Keeps this thread on the first CPU.
fn pin_to_first_cpu() -> io::Result<()> {
    let mut cpus = rustix::thread::CpuSet::new();
    cpus.set(0);
    Ok(rustix::thread::sched_setaffinity(None, &cpus)?)
}

fn thread_cpu() -> Duration {
    let t = rustix::time::clock_gettime(rustix::time::ClockId::ThreadCPUTime);
    Duration::new(t.tv_sec as u64, t.tv_nsec as u32)
}

/// Writes `frame` through `wait` into a fresh drained pty for `seconds`: (fps, CPU ms a frame).
fn run(
    wait: Wait,
    frame: &[u8],
    size: (u16, u16),
    seconds: f64,
    one_core: bool,
) -> io::Result<(f64, f64)> {
    let pty = Pty::open(size.0, size.1)?;
    let master = pty.master.try_clone()?;
    let drain = std::thread::spawn(move || {
        if one_core {
            pin_to_first_cpu()?;
        }
        let mut read = 0u64;
        read_to_end(&master, |bytes| read += bytes.len() as u64)?;
        Ok::<u64, io::Error>(read)
    });
    let slave = std::fs::File::from(pty.open_slave()?);
    // As the explorer's terminal session leaves it: raw, no output processing.
    let mut termios = rustix::termios::tcgetattr(&slave)?;
    termios.make_raw();
    rustix::termios::tcsetattr(&slave, rustix::termios::OptionalActions::Now, &termios)?;
    let mut out: Box<dyn Write> = match wait {
        Wait::SleepWholeFrame | Wait::Sleep4K => Box::new(slave),
        Wait::Spin4K => Box::new(Waiting::new(slave, flushlab_core::wait::Wait::Spin)),
        Wait::SpinThenSleep4K => Box::new(Waiting::new(slave, flushlab_core::wait::Wait::Poll)),
        Wait::SpinNoYield4K => Box::new(NoYield { inner: slave }),
    };
    let piece = match wait {
        Wait::SleepWholeFrame => frame.len(),
        _ => 4096,
    };
    let (start, cpu) = (Instant::now(), thread_cpu());
    let mut frames = 0u64;
    while start.elapsed().as_secs_f64() < seconds {
        for chunk in frame.chunks(piece) {
            out.write_all(chunk)?;
        }
        frames += 1;
    }
    let (elapsed, cpu) = (start.elapsed().as_secs_f64(), thread_cpu() - cpu);
    drop(out);
    drop(pty);
    // The reader's own count is the truth the rate stands on: every frame written arrived.
    let read = drain
        .join()
        .map_err(|_| io::Error::other("the drain thread panicked"))??;
    let written = frames * frame.len() as u64;
    if read != written {
        return Err(io::Error::other(format!(
            "{}: {written} bytes written, the reader got {read}",
            wait.name()
        )));
    }
    Ok((
        frames as f64 / elapsed,
        cpu.as_secs_f64() * 1e3 / frames as f64,
    ))
}

/// The p50 by the one percentile (`flushlab_core::statistics::rank`, the nearest rank).
fn p50(values: Vec<f64>) -> f64 {
    flushlab_core::statistics::median(values).unwrap_or(f64::NAN)
}

fn main() -> anyhow::Result<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let one_core = args.iter().any(|a| a == "--one-core");
    let mut numbers = args.iter().filter(|a| *a != "--one-core");
    let rounds: usize = numbers.next().map_or(Ok(5), |r| r.parse())?;
    let seconds: f64 = numbers.next().map_or(Ok(1.0), |s| s.parse())?;
    anyhow::ensure!(
        rounds > 0 && seconds > 0.0,
        "ROUNDS and SECONDS must be above 0"
    );
    if one_core {
        pin_to_first_cpu()?;
        println!("writer and reader pinned to the first CPU\n");
    }
    println!("| size | frame | how the writer waits | fps median [min–max] | CPU ms a frame |");
    println!("|---|---:|---|---:|---:|");
    for size in [(80u16, 24u16), (200, 60)] {
        let mut app = App::new(
            Mode::new(Stream::Stdout, Buffering::Frame, 8192),
            Scene::Full,
            false,
        );
        app.backend = BackendKind::Lean;
        let condition = flushlab::explorer::hud::fit(&mut app, size.0, size.1);
        let frame = encode_steady_frame(&app, &Hud::default(), condition);
        let mut results = vec![(Vec::new(), Vec::new()); Wait::ALL.len()];
        for round in 0..rounds {
            for k in 0..Wait::ALL.len() {
                let i = (k + round) % Wait::ALL.len();
                let (fps, cpu) = run(Wait::ALL[i], &frame, size, seconds, one_core)?;
                results[i].0.push(fps);
                results[i].1.push(cpu);
            }
        }
        for (wait, (fps, cpu)) in Wait::ALL.into_iter().zip(results) {
            let (lo, hi) = (
                fps.iter().copied().fold(f64::INFINITY, f64::min),
                fps.iter().copied().fold(0.0, f64::max),
            );
            println!(
                "| {}x{} | {:.1} kB | {} | {:.0} [{lo:.0}–{hi:.0}] | {:.3} |",
                size.0,
                size.1,
                frame.len() as f64 / 1e3,
                wait.name(),
                p50(fps),
                p50(cpu),
            );
        }
    }
    Ok(())
}
