//! The two ways of counting write(2) calls agree: the kernel's /proc/self/io (Linux) and the
//! counting layer flushlab falls back to elsewhere, forced here with ACCOUNTING=counting.

mod common;

use common::scratch;

use std::process::{Command, Stdio};

use serde_json::Value;

/// A headless run of `mode` into /dev/null, counted by `accounting`; its report.
fn headless(mode: &str, accounting: &str) -> Value {
    let (stream, buffering) = mode.split_once('/').unwrap();
    let report = scratch(&format!("{stream}-{buffering}-{accounting}.json"));
    let status = Command::new(env!("CARGO_BIN_EXE_flushlab"))
        .args(["--report"])
        .arg(&report)
        .envs([
            ("ACCOUNTING", accounting),
            ("STREAM", stream),
            ("BUFFERING", buffering),
            ("DURATION", "0.3"),
            ("SIZE", "80x24"),
        ])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .unwrap();
    assert!(status.success(), "{mode} {accounting}: {status}");
    serde_json::from_slice(&std::fs::read(&report).unwrap()).unwrap()
}

#[test]
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
