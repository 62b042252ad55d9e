//! Runs flushlab's headless run for every writer mode (and the two ceilings) in a fresh
//! pseudo-terminal whose master side is drained as fast as possible, and prints one report line
//! per run. The explorer issue's benchmark; `flushlab bench` is the full tool.
//!
//! cargo build --release && cargo run --release --example drained_pty -- 200x60 5

use std::path::Path;
use std::time::Duration;

use flushlab_core::sys::pty::{Pty, read_to_end};

fn main() -> anyhow::Result<()> {
    let mut args = std::env::args().skip(1);
    let size = args.next().unwrap_or_else(|| "200x60".into());
    let seconds = args.next().unwrap_or_else(|| "5".into());
    let (cols, rows) = size
        .split_once('x')
        .ok_or_else(|| anyhow::anyhow!("size must be COLSxROWS"))?;
    let (cols, rows): (u16, u16) = (cols.parse()?, rows.parse()?);
    let binary = Path::new(env!("CARGO_MANIFEST_DIR")).join("target/release/flushlab");
    anyhow::ensure!(binary.exists(), "build it first: cargo build --release");

    let mut runs: Vec<Vec<(&str, String)>> = vec![
        vec![("CEILING", "cpu".into())],
        vec![("CEILING", "transport".into())],
    ];
    for stream in ["stdout", "stderr"] {
        for buffering in ["raw", "line", "block", "frame", "thread"] {
            runs.push(vec![
                ("STREAM", stream.into()),
                ("BUFFERING", buffering.into()),
            ]);
        }
    }
    println!("| mode | fps | writes/frame | bytes/frame | kernel share |");
    println!("|---|---:|---:|---:|---:|");
    for envs in runs {
        let pty = Pty::open(cols, rows)?;
        let report =
            std::env::temp_dir().join(format!("flushlab-drained-{}.json", std::process::id()));
        let mut child = pty.spawn(&binary, |cmd| {
            cmd.envs(envs.iter().map(|(k, v)| (*k, v.as_str())))
                .env("DURATION", &seconds)
                .arg("--report")
                .arg(&report);
        })?;
        let master = pty.master.try_clone()?;
        let drain = std::thread::spawn(move || read_to_end(&master, |_| {}));
        let status = child.wait()?;
        drain
            .join()
            .map_err(|_| anyhow::anyhow!("drain thread panicked"))??;
        anyhow::ensure!(status.success(), "{envs:?} failed: {status}");
        let r: serde_json::Value = serde_json::from_slice(&std::fs::read(&report)?)?;
        println!(
            "| {} | {:.1} | {:.1} | {:.0} | {:.0}% |",
            r["mode"].as_str().unwrap_or("?"),
            r["fps"].as_f64().unwrap_or(0.0),
            r["writes_per_frame"].as_f64().unwrap_or(0.0),
            r["bytes_per_frame"].as_f64().unwrap_or(0.0),
            r["kernel_share"].as_f64().unwrap_or(0.0) * 100.0,
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    Ok(())
}
