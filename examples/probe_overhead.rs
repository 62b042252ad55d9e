//! What measuring costs: the time of one counter sample (pread of /proc/self/io + getrusage),
//! and its share of a second at the rate `Meters` samples (once a second per window, plus one
//! per mode change).
//!
//! cargo run --release --example probe_overhead

use std::time::Instant;

use flushlab::meters::{CpuTimes, IoProbe};

fn main() {
    let probe = IoProbe::open();
    let n = 20_000;
    let start = Instant::now();
    for _ in 0..n {
        std::hint::black_box(probe.read());
    }
    let io = start.elapsed() / n;
    let start = Instant::now();
    for _ in 0..n {
        std::hint::black_box(CpuTimes::now());
    }
    let cpu = start.elapsed() / n;
    let sample = io + cpu;
    println!("/proc/self/io read: {io:?}; getrusage: {cpu:?}; one sample: {sample:?}");
    println!(
        "at one sample a second: {:.4}% of run time; per frame at 200 fps it would be {:.2}%",
        sample.as_secs_f64() * 100.0,
        sample.as_secs_f64() * 200.0 * 100.0
    );
}
