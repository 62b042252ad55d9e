//! `flushlab flood`: every writer writes every line, in order, with the write(2) pattern it is
//! there to show.

mod common;

use common::scratch;

use std::io::Read;
use std::process::{Command, Stdio};
use std::time::Duration;

use serde_json::Value;

/// Runs a flood into a pipe that is read to the end; returns the report and what arrived.
fn flood(writer: &str, extra: &[&str]) -> (Value, String) {
    let report = scratch(&format!("{writer}.json"));
    let mut child = Command::new(env!("CARGO_BIN_EXE_flushlab"))
        .args(["flood", "--writer", writer, "--report"])
        .arg(&report)
        .args(extra)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let flooded_stream: Box<dyn Read + Send> = if writer == "eprintln" {
        Box::new(child.stderr.take().unwrap())
    } else {
        Box::new(child.stdout.take().unwrap())
    };
    let reader = std::thread::spawn(move || {
        let mut text = String::new();
        let mut source = flooded_stream;
        source.read_to_string(&mut text).unwrap();
        text
    });
    let status = child.wait().unwrap();
    let text = reader.join().unwrap();
    assert!(status.success(), "{writer}: {status}");
    (
        serde_json::from_slice(&std::fs::read(&report).unwrap()).unwrap(),
        text,
    )
}

#[test]
fn every_writer_writes_every_line_in_order() {
    for writer in [
        "println", "eprintln", "lock", "block", "raw", "per-byte", "thread",
    ] {
        let (report, text) = flood(writer, &["--lines", "20000"]);
        assert_eq!(report["frames"], 20000, "{writer}");
        assert_eq!(report["dropped"], 0, "{writer}");
        let lines: Vec<&str> = text
            .lines()
            .filter(|l| l.starts_with("flushlab flood"))
            .collect();
        assert_eq!(lines.len(), 20000, "{writer}");
        assert!(
            lines[19999].contains(" 19999 "),
            "{writer}: {}",
            lines[19999]
        );
        assert!(report["latency_samples"].as_u64().unwrap() > 0);
        assert!(report["p99_ns"].as_u64().unwrap() >= report["p50_ns"].as_u64().unwrap());
    }
}

#[test]
fn the_write_patterns_the_lessons_are_about() {
    let writes = |writer: &str| {
        flood(writer, &["--lines", "20000"]).0["writes_per_frame"]
            .as_f64()
            .unwrap()
    };
    // std's stdout: one write(2) per line, locked per call or not.
    assert!((0.99..1.05).contains(&writes("println")));
    assert!((0.99..1.05).contains(&writes("lock")));
    // Unbuffered: one write(2) per formatting fragment, several per line.
    assert!(writes("raw") > 2.0);
    assert!(writes("eprintln") > 2.0);
    // Buffered: ~72 bytes a line into 8 KiB.
    assert!(writes("block") < 0.05);
    assert!(writes("per-byte") < 0.05);
    // The writer thread flushes whenever its queue runs dry, so how often depends on the
    // scheduler; what holds is that it never writes more than once per line.
    assert!(writes("thread") <= 1.01);
}

#[test]
fn a_full_queue_drops_lines_instead_of_waiting() {
    let report = scratch("drop.json");
    let mut child = Command::new(env!("CARGO_BIN_EXE_flushlab"))
        .args([
            "flood",
            "--writer",
            "thread",
            "--on-full",
            "drop",
            "--queue",
            "8",
            "--duration",
            "0.3",
        ])
        .arg("--report")
        .arg(&report)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    // Nobody reads for a while: the pipe fills, the writer thread blocks, the queue fills.
    std::thread::sleep(Duration::from_millis(600));
    let mut out = child.stdout.take().unwrap();
    let reader = std::thread::spawn(move || std::io::copy(&mut out, &mut std::io::sink()).unwrap());
    assert!(child.wait().unwrap().success());
    let written = reader.join().unwrap();
    let report: Value = serde_json::from_slice(&std::fs::read(&report).unwrap()).unwrap();
    let (lines, dropped) = (
        report["frames"].as_u64().unwrap(),
        report["dropped"].as_u64().unwrap(),
    );
    assert!(dropped > 0, "{report}");
    assert_eq!(written, (lines - dropped) * 72, "{report}");
}

#[test]
fn bad_input() {
    for args in [
        vec!["--writer", "fast"],
        vec!["--lines", "0"],
        vec!["--lines", "5", "--duration", "1"],
        vec!["--on-full", "explode"],
        vec!["--capacity", "1"],
    ] {
        let out = Command::new(env!("CARGO_BIN_EXE_flushlab"))
            .arg("flood")
            .args(&args)
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        assert_eq!(
            String::from_utf8_lossy(&out.stderr).trim().lines().count(),
            1,
            "{args:?}"
        );
        assert!(out.stdout.is_empty());
    }
}

/// The logging crates' writers, into a pipe whose reader stalls for `stall` first, or a pty read
/// from the start; returns the report and how many of the lines arrived.
fn logged(writer: &str, lines: u64, pty: bool, stall: Duration) -> (Value, u64) {
    let report = scratch(&format!("logged-{writer}-{pty}.json"));
    let args = [
        "flood",
        "--writer",
        writer,
        "--lines",
        &lines.to_string(),
        "--report",
        report.to_str().unwrap(),
    ];
    let count = |text: &[u8]| {
        String::from_utf8_lossy(text)
            .matches("flushlab flood ")
            .count() as u64
    };
    let arrived = if pty {
        let run =
            common::start(&[], &args.map(std::ffi::OsStr::new)).finish(Duration::from_secs(120));
        assert_eq!(run.code, Some(0), "{writer} in a pty");
        count(&run.output)
    } else {
        let logs_to_stderr = writer == "env-logger";
        let (out, err) = if logs_to_stderr {
            (Stdio::null(), Stdio::piped())
        } else {
            (Stdio::piped(), Stdio::null())
        };
        let mut child = Command::new(env!("CARGO_BIN_EXE_flushlab"))
            .args(args)
            .stdout(out)
            .stderr(err)
            .spawn()
            .unwrap();
        let flooded: Box<dyn Read + Send> = if logs_to_stderr {
            Box::new(child.stderr.take().unwrap())
        } else {
            Box::new(child.stdout.take().unwrap())
        };
        let reader = std::thread::spawn(move || {
            std::thread::sleep(stall);
            let mut text = Vec::new();
            let mut source = flooded;
            source.read_to_end(&mut text).unwrap();
            text
        });
        let status = common::wait_for(Duration::from_secs(120), writer, || {
            child.try_wait().unwrap()
        });
        assert!(status.success(), "{writer}: {status}");
        count(&reader.join().unwrap())
    };
    let report: Value = serde_json::from_slice(&std::fs::read(&report).unwrap()).unwrap();
    (report, arrived)
}

#[test]
fn the_logging_crates_lose_no_line_unless_they_count_it() {
    let lines = 20_000;
    for writer in [
        "tracing",
        "tracing-lossless",
        "env-logger",
        "tracing-non-blocking",
    ] {
        for pty in [false, true] {
            let (report, arrived) = logged(writer, lines, pty, Duration::ZERO);
            let dropped = report["dropped"].as_u64().unwrap();
            assert_eq!(report["frames"], lines, "{writer}");
            assert_eq!(arrived, lines - dropped, "{writer} pty={pty}: {report}");
            if writer != "tracing-non-blocking" {
                assert_eq!(dropped, 0, "{writer} blocks, it never drops");
            }
        }
    }
    // A reader that stalls while 400,000 events arrive: tracing-appender's default queue
    // (128,000 lines) overflows, it drops, and its count of the drops is exact.
    let (report, arrived) = logged(
        "tracing-non-blocking",
        400_000,
        false,
        Duration::from_millis(1500),
    );
    let dropped = report["dropped"].as_u64().unwrap();
    assert!(dropped > 0, "nothing dropped: {report}");
    assert_eq!(arrived, 400_000 - dropped, "{report}");
}

#[test]
fn a_request_loop_runs_at_its_rate_and_times_every_request() {
    // 2,000 requests a second for half a second, 20 µs of work each, no logging: the baseline.
    let (report, text) = flood(
        "none",
        &["--work", "0.00002", "--rate", "2000", "--duration", "0.5"],
    );
    assert!(text.is_empty(), "the baseline logs nothing: {text}");
    let requests = report["frames"].as_u64().unwrap();
    assert!((900..=1001).contains(&requests), "{report}");
    assert_eq!(report["latency_of"], "request");
    // Every request is timed, and none can take less than its own work.
    assert_eq!(report["latency_samples"].as_u64().unwrap(), requests);
    assert!(report["p50_ns"].as_u64().unwrap() >= 20_000, "{report}");
    assert_eq!(report["rate"], 2000);
    // With a writer, one line per request.
    let (report, text) = flood("println", &["--work", "0.00002", "--lines", "3000"]);
    assert_eq!(report["frames"], 3000);
    assert_eq!(text.lines().count(), 3000);
    assert_eq!(report["latency_of"], "log-call");
}
