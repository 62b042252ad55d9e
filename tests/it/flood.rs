//! `flushlab flood`: every writer writes every line, in order, with the write(2) pattern it is
//! there to show.

use crate::common;

use common::scratch;

use std::io::Read;
use std::process::{Command, Stdio};
use std::time::Duration;

use serde_json::Value;

/// Runs a flood into a pipe that is read to the end; returns the report and what arrived.
fn flood(writer: &str, extra: &[&str]) -> (Value, String) {
    // Tests run in parallel and two of them flood with the same writer: a report each.
    static RUNS: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let n = RUNS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let report = scratch(&format!("{writer}-{n}.json"));
    let mut child = Command::new(env!("CARGO_BIN_EXE_flushlab"))
        .args(["flood", "--writer", writer, "--report"])
        .arg(&report)
        .args(extra)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let (stdout, stderr): (Box<dyn Read + Send>, Box<dyn Read + Send>) = (
        Box::new(child.stdout.take().unwrap()),
        Box::new(child.stderr.take().unwrap()),
    );
    let read = |mut source: Box<dyn Read + Send>| {
        std::thread::spawn(move || {
            let mut text = String::new();
            source.read_to_string(&mut text).unwrap();
            text
        })
    };
    let (stdout, stderr) = (read(stdout), read(stderr));
    let status = child.wait().unwrap();
    let (stdout, stderr) = (stdout.join().unwrap(), stderr.join().unwrap());
    let (text, other) = if writer == "eprintln" {
        (stderr, stdout)
    } else {
        (stdout, stderr)
    };
    // The other stream carries the summary, or why it failed.
    assert!(status.success(), "{writer}: {status}: {}", other.trim_end());
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
        assert_eq!(report["lines"], 20000, "{writer}");
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
        flood(writer, &["--lines", "20000"]).0["writes_per_line"]
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
        report["lines"].as_u64().unwrap(),
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
#[cfg_attr(
    not(feature = "slow-tests"),
    ignore = "slow tier (6 s; a 2-core race between loggers and their reader): cargo test --features slow-tests"
)]
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
            assert_eq!(report["lines"], lines, "{writer}");
            assert_eq!(arrived, lines - dropped, "{writer} pty={pty}: {report}");
            if writer != "tracing-non-blocking" {
                assert_eq!(dropped, 0, "{writer} blocks, it never drops");
            }
        }
    }
    // A reader that stalls 3 s while 400,000 events arrive: tracing-appender's default queue
    // (128,000 lines) overflows and it drops, counting the drops; its guard then gives up on
    // the queue at exit, and flood counts those lines as lost. Every line is one of the four.
    let (report, arrived) = logged(
        "tracing-non-blocking",
        400_000,
        false,
        Duration::from_millis(3000),
    );
    let field = |name: &str| report[name].as_u64().unwrap();
    let (dropped, delivered, in_flight) =
        (field("dropped"), field("delivered"), field("in_flight"));
    assert!(dropped > 0, "nothing dropped: {report}");
    assert!(
        (delivered..=delivered + in_flight).contains(&arrived),
        "{arrived} arrived: {report}"
    );
    assert_eq!(
        dropped + delivered + in_flight + field("lost"),
        400_000,
        "{report}"
    );
}

#[test]
fn a_request_loop_runs_at_its_rate_and_times_every_request() {
    // 2,000 requests a second for half a second, 20 µs of work each, no logging: the baseline.
    let (report, text) = flood(
        "none",
        &["--work", "0.00002", "--rate", "2000", "--duration", "0.5"],
    );
    assert!(text.is_empty(), "the baseline logs nothing: {text}");
    let requests = report["lines"].as_u64().unwrap();
    assert!((900..=1001).contains(&requests), "{report}");
    assert_eq!(report["latency_of"], "request");
    // Every request is timed, and none can take less than its own work.
    assert_eq!(report["latency_samples"].as_u64().unwrap(), requests);
    assert!(report["p50_ns"].as_u64().unwrap() >= 20_000, "{report}");
    assert_eq!(report["rate"], 2000);
    // With a writer, one line per request.
    let (report, text) = flood("println", &["--work", "0.00002", "--lines", "3000"]);
    assert_eq!(report["lines"], 3000);
    assert_eq!(text.lines().count(), 3000);
    assert_eq!(report["latency_of"], "log-call");
}

/// The logging libraries' writers, run with their measured stream set up by `stream` (the
/// other stream a pipe read to the end); the exit code and what the other stream said.
fn flood_into(
    writer: &str,
    lines: &str,
    stream: Stdio,
    envs: &[(&str, &str)],
) -> (Option<i32>, String) {
    let mut command = Command::new(env!("CARGO_BIN_EXE_flushlab"));
    command
        .args(["flood", "--writer", writer, "--lines", lines])
        .envs(envs.iter().copied());
    if writer == "env-logger" {
        command.stderr(stream).stdout(Stdio::piped());
    } else {
        command.stdout(stream).stderr(Stdio::piped());
    }
    let mut child = command.spawn().unwrap();
    let mut other: Box<dyn Read + Send> = match child.stdout.take() {
        Some(out) => Box::new(out),
        None => Box::new(child.stderr.take().unwrap()),
    };
    let said = std::thread::spawn(move || {
        let mut text = String::new();
        let _ = other.read_to_string(&mut text);
        text
    });
    let status = common::wait_for(Duration::from_secs(60), writer, || {
        child.try_wait().unwrap()
    });
    (status.code(), said.join().unwrap())
}

const LOGGING: [&str; 4] = [
    "tracing",
    "tracing-non-blocking",
    "tracing-lossless",
    "env-logger",
];

/// A logging library swallows its write errors; flood does not: a reader that went away is
/// exit 3 and a full disk exit 1, each said once — never "N lines, 0 dropped, exit 0".
#[test]
fn the_logging_writers_report_a_failed_stream() {
    for writer in LOGGING {
        let (closed, reader) = std::io::pipe().unwrap();
        drop(closed);
        let (code, said) = flood_into(writer, "200000", reader.into(), &[]);
        assert_eq!(code, Some(3), "{writer} into a closed pipe: {said}");
        assert!(said.contains("went away"), "{writer}: {said}");
        assert!(
            said.lines().count() <= 2,
            "{writer} said it more than once: {said}"
        );
        let full = std::fs::OpenOptions::new()
            .write(true)
            .open("/dev/full")
            .unwrap();
        let (code, said) = flood_into(writer, "200000", full.into(), &[]);
        assert_eq!(code, Some(1), "{writer} into /dev/full: {said}");
        assert!(said.contains("No space left on device"), "{writer}: {said}");
        assert_eq!(said.lines().count(), 1, "{writer}: {said}");
    }
}

/// A RUST_LOG a shell exports (`off`) does not filter out the lines flood measures: every line
/// logged is a line written, and the report says so from its own count.
#[test]
fn rust_log_in_the_environment_changes_nothing() {
    let path = scratch("rust-log-off.json");
    let (out, _) = std::io::pipe().unwrap();
    drop(out);
    let mut child = Command::new(env!("CARGO_BIN_EXE_flushlab"))
        .args([
            "flood",
            "--writer",
            "env-logger",
            "--lines",
            "1000",
            "--report",
        ])
        .arg(&path)
        .env("RUST_LOG", "off")
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut text = String::new();
    child
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut text)
        .unwrap();
    assert!(child.wait().unwrap().success());
    assert_eq!(text.matches("flushlab flood ").count(), 1000, "{text}");
    let report: Value = serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
    assert_eq!(report["lines"], 1000);
    assert_eq!(report["delivered"], 1000);
    assert_eq!(report["lost"], 0);
    std::fs::remove_file(path).unwrap();
}

/// Behind a reader of at most 64 KiB per 100 ms, tracing-appender's guard gives up at exit on
/// what its queue holds, `lossy(false)` or not. What reached the reader is what flood counted
/// as delivered (give or take the one write in flight), and the rest is reported lost, by name.
#[test]
#[cfg_attr(
    not(feature = "slow-tests"),
    ignore = "slow tier (3 s): cargo test --features slow-tests"
)]
fn lines_a_logging_library_loses_are_counted_and_named() {
    for writer in ["tracing-lossless", "tracing-non-blocking"] {
        let path = scratch(&format!("lost-{writer}.json"));
        let mut child = Command::new(env!("CARGO_BIN_EXE_flushlab"))
            .args(["flood", "--writer", writer, "--lines", "40000", "--report"])
            .arg(&path)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let mut out = child.stdout.take().unwrap();
        let slow = std::thread::spawn(move || {
            let (mut arrived, mut buf) = (0, vec![0u8; 64 << 10]);
            loop {
                match out.read(&mut buf) {
                    Ok(0) | Err(_) => break arrived,
                    Ok(n) => arrived += buf[..n].iter().filter(|&&b| b == b'\n').count() as u64,
                }
                std::thread::sleep(Duration::from_millis(100));
            }
        });
        let mut summary = String::new();
        child
            .stderr
            .take()
            .unwrap()
            .read_to_string(&mut summary)
            .unwrap();
        let status = common::wait_for(Duration::from_secs(60), writer, || {
            child.try_wait().unwrap()
        });
        assert!(status.success(), "{writer}: {summary}");
        let arrived = slow.join().unwrap();
        let report: Value = serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
        let field = |name: &str| report[name].as_u64().unwrap();
        let (delivered, in_flight, lost) = (field("delivered"), field("in_flight"), field("lost"));
        assert!(
            (delivered..=delivered + in_flight).contains(&arrived),
            "{writer}: {arrived} arrived: {report}"
        );
        assert_eq!(
            lost,
            40_000 - field("dropped") - delivered - in_flight,
            "{report}"
        );
        assert!(lost > 0, "{writer}: {report}");
        assert!(summary.contains("LOST"), "{writer}: {summary}");
        std::fs::remove_file(path).unwrap();
    }
}

/// A stream closed by whoever started flushlab (`>&-`) reaches nobody: flood and the explorer
/// end as a reader gone (exit 3) and say so, never "N lines, exit 0".
#[test]
fn a_closed_standard_stream_is_a_reader_gone() {
    // The summary goes to the other stream, kept open and read.
    let cases: [(&str, &str); 4] = [
        ("\"$0\" flood --lines 1000 2>&1 >&-", "stdout"),
        ("\"$0\" flood --writer eprintln --lines 1000 2>&-", "stderr"),
        (
            "\"$0\" flood --writer tracing --lines 1000 2>&1 >&-",
            "stdout",
        ),
        (
            "DURATION=0.3 SIZE=80x24 STREAM=stdout BUFFERING=line \"$0\" 2>&1 >&-",
            "stdout",
        ),
    ];
    for (args, stream) in cases {
        let script = format!("{args}; echo \"exit $?\"");
        let out = Command::new("sh")
            .args(["-c", &script, env!("CARGO_BIN_EXE_flushlab")])
            .output()
            .unwrap();
        let said = String::from_utf8_lossy(&out.stdout);
        assert!(said.ends_with("exit 3\n"), "{args}: {said}");
        if stream == "stdout" {
            assert!(said.contains("stdout was closed"), "{args}: {said}");
        }
    }
}
