//! The two ways of counting write(2) calls agree: the kernel's /proc/self/io (Linux) and the
//! counting layer flushlab falls back to elsewhere, forced here with ACCOUNTING=counting.

// A test is one story from setup to its last assertion: the length limit is for src/.

use crate::common;

use common::scratch;

use std::process::{Command, Stdio};

use serde_json::Value;

/// A headless run of `mode` into /dev/null, counted by `accounting`; its report.
fn headless(mode: &str, accounting: &str) -> Value {
    headless_with(mode, accounting, "crossterm")
}

fn headless_with(mode: &str, accounting: &str, backend: &str) -> Value {
    let (stream, buffering) = mode.split_once('/').unwrap();
    let report = scratch(&format!("{stream}-{buffering}-{accounting}-{backend}.json"));
    let status = Command::new(env!("CARGO_BIN_EXE_flushlab"))
        .args(["--report"])
        .arg(&report)
        .envs([
            ("ACCOUNTING", accounting),
            ("STREAM", stream),
            ("BUFFERING", buffering),
            ("DURATION", "0.3"),
            ("SIZE", "80x24"),
            ("BACKEND", backend),
        ])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .unwrap();
    assert!(status.success(), "{mode} {accounting}: {status}");
    serde_json::from_slice(&std::fs::read(&report).unwrap()).unwrap()
}

#[test]
#[cfg_attr(
    not(feature = "slow-tests"),
    ignore = "slow tier (6 s here: the kernel against the counting layer): cargo test --features slow-tests"
)]
fn the_counting_layer_sees_the_calls_the_kernel_sees() {
    for stream in ["stdout", "stderr"] {
        for buffering in ["raw", "line", "block", "frame", "thread"] {
            let mode = format!("{stream}/{buffering}");
            let (kernel, counting) = (headless(&mode, "kernel"), headless(&mode, "counting"));
            assert_eq!(kernel["accounting"], "kernel");
            assert_eq!(counting["accounting"], "counting");
            for figure in ["writes_per_frame", "bytes_per_frame"] {
                let (k, c) = (
                    kernel[figure].as_f64().unwrap(),
                    counting[figure].as_f64().unwrap(),
                );
                // Frames are the same from run to run; only the first (a full redraw) and the
                // number of frames differ.
                assert!(
                    (c / k - 1.0).abs() < 0.01,
                    "{mode} {figure}: kernel {k}, counting {c}"
                );
            }
        }
    }
}

#[test]
fn the_flood_counts_what_the_layer_can_see_and_says_na_for_std_handles() {
    let flood = |writer: &str, accounting: &str| -> Value {
        let report = scratch(&format!("flood-{writer}-{accounting}.json"));
        let status = Command::new(env!("CARGO_BIN_EXE_flushlab"))
            .args(["flood", "--writer", writer, "--lines", "10000", "--report"])
            .arg(&report)
            .env("ACCOUNTING", accounting)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .unwrap();
        assert!(status.success(), "{writer}: {status}");
        serde_json::from_slice(&std::fs::read(&report).unwrap()).unwrap()
    };
    // A fixed number of lines: both count exactly the same calls and bytes.
    for writer in ["raw", "block", "per-byte"] {
        let (kernel, counting) = (flood(writer, "kernel"), flood(writer, "counting"));
        for figure in ["write_calls", "bytes_written"] {
            assert!(kernel[figure].as_u64().unwrap() > 0, "{writer}: {kernel}");
            assert_eq!(kernel[figure], counting[figure], "{writer} {figure}");
        }
    }
    // println! writes inside std, where only the kernel sees the calls.
    assert!(flood("println", "kernel")["write_calls"].as_u64().unwrap() > 0);
    assert!(flood("println", "counting")["write_calls"].is_null());
}

#[test]
fn an_unknown_accounting_is_refused_with_the_choices() {
    let out = Command::new(env!("CARGO_BIN_EXE_flushlab"))
        .env("ACCOUNTING", "guess")
        .env("DURATION", "0.1")
        .stdout(Stdio::null())
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("guess") && stderr.contains("kernel") && stderr.contains("counting"),
        "{stderr}"
    );
}

/// The syscall number of write(2): what /proc/PID/task/TID/syscall starts with while the thread
/// is asleep inside it.
#[cfg(target_arch = "x86_64")]
const WRITE: &str = "1";
#[cfg(target_arch = "aarch64")]
const WRITE: &str = "64";

/// How often the kernel finds the thread that writes to the pipe asleep in write(2), sampled
/// every 2 ms until CHILD ends: (asleep, samples).
fn asleep_in_write(child: &mut std::process::Child, buffering: &str) -> (u32, u32) {
    let pid = child.id();
    // The thread that writes to the pipe: the frame loop (the main thread), or the writer
    // thread it starts.
    let writer = || -> Option<String> {
        if buffering == "frame" {
            return Some(pid.to_string());
        }
        std::fs::read_dir(format!("/proc/{pid}/task"))
            .ok()?
            .flatten()
            .find(|task| {
                std::fs::read_to_string(task.path().join("comm"))
                    .is_ok_and(|comm| comm.trim() == "flushlab-writer")
            })
            .map(|task| task.file_name().to_string_lossy().into_owned())
    };
    let (mut asleep_in_write, mut samples) = (0u32, 0u32);
    let started = std::time::Instant::now();
    // The first half second is the run's set-up; the report's figures are of the whole run.
    while child.try_wait().unwrap().is_none() {
        std::thread::sleep(std::time::Duration::from_millis(2));
        if started.elapsed() < std::time::Duration::from_millis(300) {
            continue;
        }
        let Some(tid) = writer() else { continue };
        let Ok(syscall) = std::fs::read_to_string(format!("/proc/{pid}/task/{tid}/syscall")) else {
            continue;
        };
        samples += 1;
        if syscall.split_whitespace().next() == Some(WRITE) {
            asleep_in_write += 1;
        }
    }
    (asleep_in_write, samples)
}

/// The time split's "reader wait" is checked against the kernel, not against flushlab: while a
/// headless run writes into a pipe the test reads slowly (or quickly), the test samples what
/// the writing thread is doing every 2 ms (`/proc/PID/task/TID/syscall`: asleep in write(2),
/// or running). The share of samples asleep in write(2) and the report's share of the frame
/// spent waiting for the reader agree within 0.15, for the frame loop (frame mode) and for the
/// writer thread (thread mode), behind a slow reader and a fast one.
#[test]
#[cfg_attr(
    not(feature = "slow-tests"),
    ignore = "slow tier (8 s; samples /proc 500 times a second, load-sensitive): cargo test --features slow-tests"
)]
fn the_reader_wait_is_the_time_the_kernel_sees_the_writer_asleep_in_write() {
    use std::io::Read;
    for (buffering, slow) in [
        ("frame", true),
        ("thread", true),
        ("frame", false),
        ("thread", false),
    ] {
        let report = scratch(&format!("reader-wait-{buffering}-{slow}.json"));
        let mut child = Command::new(env!("CARGO_BIN_EXE_flushlab"))
            .arg("--report")
            .arg(&report)
            .envs([
                ("STREAM", "stdout"),
                ("BUFFERING", buffering),
                ("DURATION", "2"),
                ("SIZE", "80x24"),
            ])
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let mut pipe = child.stdout.take().unwrap();
        let reader = std::thread::spawn(move || {
            let mut buf = vec![0u8; 16 * 1024];
            // Slow: 16 KiB every 10 ms, ~1.6 MB/s; fast: as fast as it comes.
            while pipe.read(&mut buf).is_ok_and(|n| n > 0) {
                if slow {
                    std::thread::sleep(std::time::Duration::from_millis(10));
                }
            }
        });
        let (asleep_in_write, samples) = asleep_in_write(&mut child, buffering);
        reader.join().unwrap();
        let run: Value = serde_json::from_slice(&std::fs::read(&report).unwrap()).unwrap();
        std::fs::remove_file(&report).unwrap();
        // Read with flushlab's own schema type: the parts, and their sum.
        let split: flushlab_core::figures::TimeSplit =
            serde_json::from_value(run["time_split"].clone()).unwrap();
        let (wait, total) = match split.writer {
            Some(w) => (w.reader_wait_ms, w.parts().iter().map(|p| p.1).sum::<f64>()),
            None => (split.reader_wait_ms, split.total_ms()),
        };
        assert_eq!(split.writer.is_some(), buffering == "thread", "{run}");
        let kernel = f64::from(asleep_in_write) / f64::from(samples.max(1));
        let flushlab = wait / total;
        eprintln!(
            "{buffering} slow={slow}: kernel {kernel:.2} ({samples} samples), flushlab {flushlab:.2}"
        );
        assert!(samples > 100, "{buffering}: {samples} samples");
        assert!(
            (kernel - flushlab).abs() < 0.15,
            "{buffering} slow={slow}: the kernel saw the writer asleep in write(2) {kernel:.2} of \
             the time, flushlab says {flushlab:.2}: {run}"
        );
        if slow {
            assert!(flushlab > 0.5, "{buffering}: {run}");
        }
    }
}

/// The lean backend, counted by the kernel: unbuffered, one write(2) for each cell the frame
/// sends and one for the draw's closing reset (crossterm: many a cell), the same bytes; buffered
/// a frame, one write(2) either way.
#[test]
fn the_kernel_counts_a_write_a_cell_from_the_lean_backend() {
    let raw = headless_with("stderr/raw", "kernel", "lean");
    assert_eq!(raw["condition"]["backend"], "lean");
    let (writes, cells) = (
        raw["writes_per_frame"].as_f64().unwrap(),
        raw["cells_per_frame"].as_f64().unwrap(),
    );
    assert!(
        (writes - (cells + 1.0)).abs() < 0.02 * cells,
        "{writes} write(2) a frame for {cells} cells"
    );
    let crossterm = headless_with("stderr/raw", "kernel", "crossterm");
    let ratio = crossterm["writes_per_frame"].as_f64().unwrap() / writes;
    assert!(ratio > 8.0, "crossterm makes {ratio:.1}x the writes");
    let bytes =
        |r: &Value| r["bytes_per_frame"].as_f64().unwrap() / r["cells_per_frame"].as_f64().unwrap();
    // The same encoding (tests/it/writer_stack.rs: byte for byte); the HUD's own figures differ
    // between two runs by a few cells, and a loaded machine's run of a few raw frames averages
    // over few of them (5.8% apart seen with a second test suite running).
    let (lean, theirs) = (bytes(&raw), bytes(&crossterm));
    assert!(
        (lean / theirs - 1.0).abs() < 0.1,
        "bytes a cell: lean {lean}, crossterm {theirs}"
    );
    let frame = headless_with("stdout/frame", "kernel", "lean");
    assert!(
        (frame["writes_per_frame"].as_f64().unwrap() - 1.0).abs() < 0.05,
        "{frame}"
    );
}
