//! Soak: flushlab's headless run in a drained pty for a long time, sampling the child's resident
//! memory and open file descriptors every second, from the fifth second on (before that, the
//! process is still starting). Prints first/last/min/max of each.
//!
//! cargo build --release && cargo run --release --example soak -- raw 600

use std::path::Path;
use std::time::{Duration, Instant};

use flushlab_core::sys::pty::{Pty, read_to_end};

fn rss_kib(pid: u32) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    status.lines().find_map(|l| {
        l.strip_prefix("VmRSS:")?
            .trim()
            .strip_suffix(" kB")?
            .parse()
            .ok()
    })
}

fn fds(pid: u32) -> Option<u64> {
    Some(std::fs::read_dir(format!("/proc/{pid}/fd")).ok()?.count() as u64)
}

fn summary(name: &str, samples: &[u64]) -> String {
    let (first, last) = (
        samples.first().copied().unwrap_or(0),
        samples.last().copied().unwrap_or(0),
    );
    let max = samples.iter().copied().max().unwrap_or(0);
    format!(
        "{name}: first {first}, last {last}, max {max} ({} samples)",
        samples.len()
    )
}

fn main() -> anyhow::Result<()> {
    let mut args = std::env::args().skip(1);
    let buffering = args.next().unwrap_or_else(|| "raw".into());
    let seconds: u64 = args.next().map_or(Ok(600), |s| s.parse())?;
    let binary = Path::new(env!("CARGO_MANIFEST_DIR")).join("target/release/flushlab");
    anyhow::ensure!(binary.exists(), "build it first: cargo build --release");
    let pty = Pty::open(200, 60)?;
    let mut child = pty.spawn(&binary, |cmd| {
        cmd.env("BUFFERING", &buffering)
            .env("DURATION", seconds.to_string());
    })?;
    let master = pty.master.try_clone()?;
    let drain = std::thread::spawn(move || read_to_end(&master, |_| {}));
    let pid = child.id();
    let (mut rss, mut open) = (Vec::new(), Vec::new());
    let start = Instant::now();
    while child.try_wait()?.is_none() {
        if start.elapsed() < Duration::from_secs(5) {
            std::thread::sleep(Duration::from_secs(1));
            continue;
        }
        if let (Some(r), Some(f)) = (rss_kib(pid), fds(pid)) {
            rss.push(r);
            open.push(f);
        }
        std::thread::sleep(Duration::from_secs(1));
    }
    let status = child.wait()?;
    drain
        .join()
        .map_err(|_| anyhow::anyhow!("drain thread panicked"))??;
    println!(
        "soak {buffering} for {:.0} s, exit {status}",
        start.elapsed().as_secs_f64()
    );
    println!("{}", summary("RSS KiB", &rss));
    println!("{}", summary("open fds", &open));
    Ok(())
}
