//! What measuring costs: the time of one counter sample (/proc/self/io or the counting layer's
//! atomics, plus getrusage), its share of a second at the rate `Meters` samples (once a second
//! per window, plus one per mode change), and what the counting layer adds to every write,
//! against the write(2) it counts.
//!
//! cargo run --release --example probe_overhead
//! ACCOUNTING=counting cargo run --release --example probe_overhead

use std::hint::black_box;
use std::io::Write;
use std::time::{Duration, Instant};

use flushlab_core::accounting::{Accounting, Counted, IoProbe, accounting, choose_accounting};
use flushlab_core::meters::CpuTimes;

/// Mean time of `f` over `n` calls.
fn time(n: u32, mut f: impl FnMut()) -> Duration {
    let start = Instant::now();
    for _ in 0..n {
        f();
    }
    start.elapsed() / n
}

fn main() -> anyhow::Result<()> {
    if std::env::var("ACCOUNTING").as_deref() == Ok("counting") {
        choose_accounting(Accounting::Counting).map_err(anyhow::Error::msg)?;
    }
    let probe = IoProbe::open();
    let io = time(20_000, || {
        black_box(probe.read());
    });
    let cpu = time(20_000, || {
        black_box(CpuTimes::now());
    });
    let sample = io + cpu;
    println!(
        "accounting {}: counter read {io:?}; getrusage {cpu:?}; one sample {sample:?}",
        accounting().name()
    );
    println!(
        "at one sample a second: {:.4}% of run time; per frame at 200 fps it would be {:.2}%",
        sample.as_secs_f64() * 100.0,
        sample.as_secs_f64() * 200.0 * 100.0
    );

    // Two bytes a call: what crossterm hands a raw writer on average.
    let n = 5_000_000;
    let mut sink = std::io::sink();
    let plain = time(n, || {
        black_box(sink.write(black_box(b"ab")).ok());
    });
    let mut counted = Counted::new(std::io::sink());
    let layered = time(n, || {
        black_box(counted.write(black_box(b"ab")).ok());
    });
    let mut null = std::fs::OpenOptions::new().write(true).open("/dev/null")?;
    let syscall = time(500_000, || {
        black_box(null.write(black_box(b"ab")).ok());
    });
    let added = layered.saturating_sub(plain);
    println!(
        "a write into io::sink(): {plain:?}; through the counting layer: {layered:?} (+{added:?}); \
         one write(2) of 2 bytes to /dev/null: {syscall:?}: the layer adds {:.2}% to each",
        added.as_secs_f64() / syscall.as_secs_f64() * 100.0
    );
    Ok(())
}
