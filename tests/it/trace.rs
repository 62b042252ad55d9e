//! `wrap --trace`: the run's timeline as Chrome trace-event JSON, checked field by field
//! against the format's rules (no trace-event consumer runs offline here: Perfetto's
//! trace_processor downloads itself) and against the JSON report of the same run.

use std::collections::BTreeMap;
use std::process::Command;

use serde_json::Value;

use super::common;
use super::keyed::{one_at_a_time, stages_c, wrap_keys_with};

/// Slack for microseconds written with three decimals.
const EPS: f64 = 1e-3;

/// The format's rules: every event has a name, a phase it knows, a time, a pid and a tid; a
/// complete slice a duration, an instant its scope, metadata its name; on each track the times
/// rise and the slices nest. Returns the events.
fn assert_trace_holds_together(trace: &Value) -> Vec<Value> {
    assert_eq!(trace["displayTimeUnit"], "ms");
    let events = trace["traceEvents"]
        .as_array()
        .expect("traceEvents")
        .clone();
    let mut tracks: BTreeMap<(u64, u64), Vec<&Value>> = BTreeMap::new();
    for e in &events {
        assert!(e["name"].is_string(), "{e}");
        assert!(e["pid"].is_u64() && e["tid"].is_u64(), "{e}");
        let ts = e["ts"].as_f64().expect("ts");
        assert!(ts >= 0.0, "{e}");
        match e["ph"].as_str().unwrap() {
            "X" => assert!(e["dur"].as_f64().is_some_and(|d| d >= 0.0), "{e}"),
            "i" => assert!(["t", "p", "g"].contains(&e["s"].as_str().unwrap()), "{e}"),
            "M" => {
                assert!(["process_name", "thread_name"].contains(&e["name"].as_str().unwrap()));
                assert!(e["args"]["name"].is_string(), "{e}");
                continue;
            }
            other => panic!("phase {other}: {e}"),
        }
        let track = (e["pid"].as_u64().unwrap(), e["tid"].as_u64().unwrap());
        tracks.entry(track).or_default().push(e);
    }
    for (track, on) in &tracks {
        // Times rise within a track, and its slices nest: each ends inside every slice still
        // open when it begins.
        let mut open: Vec<f64> = Vec::new();
        let mut last = f64::MIN;
        for e in on {
            let ts = e["ts"].as_f64().unwrap();
            assert!(ts >= last, "{track:?}: {ts} after {last}");
            last = ts;
            while open.last().is_some_and(|&end| end <= ts + EPS) {
                open.pop();
            }
            if let Some(dur) = e["dur"].as_f64() {
                if let Some(&end) = open.last() {
                    assert!(
                        ts + dur <= end + EPS,
                        "{track:?}: {e} crosses a slice ending {end}"
                    );
                }
                open.push(ts + dur);
            }
        }
    }
    events
}

/// One key slice a key sent, in order, lasting the report's key→frame, its stages inside it,
/// adding up to it, each the report's figure.
fn assert_key_slices_are_the_reports(report: &Value, events: &[Value]) {
    let of = |cat: &str| -> Vec<&Value> { events.iter().filter(|e| e["cat"] == cat).collect() };
    let keys = report["keys"]["each"].as_array().unwrap();
    let key_slices = of("key");
    assert_eq!(
        key_slices.len() as u64,
        report["keys"]["sent"].as_u64().unwrap()
    );
    let stages = of("stage");
    for (k, slice) in keys.iter().zip(&key_slices) {
        let ts = slice["ts"].as_f64().unwrap();
        assert!(
            (ts - k["sent_ns"].as_f64().unwrap() / 1e3).abs() < EPS,
            "{slice}"
        );
        let Some(frame_ms) = k["frame_ms"].as_f64() else {
            assert_eq!(slice["ph"], "i", "{slice}");
            continue;
        };
        let dur = slice["dur"].as_f64().unwrap();
        assert!((dur - frame_ms * 1e3).abs() < EPS, "{slice} against {k}");
        // Its stages inside it, adding up to it, each the report's.
        let inside: Vec<&&Value> = stages
            .iter()
            .filter(|s| {
                s["tid"] == slice["tid"]
                    && s["name"] != "drain"
                    && s["ts"].as_f64().unwrap() >= ts - EPS
                    && s["ts"].as_f64().unwrap() < ts + dur
            })
            .collect();
        if k["stages_ms"].is_null() {
            // Its frame's end from outside (the quiet gap): no stages.
            assert!(inside.is_empty(), "{k}");
            continue;
        }
        let sum: f64 = inside.iter().map(|s| s["dur"].as_f64().unwrap()).sum();
        assert!((sum - dur).abs() < 1.0, "{sum} µs of stages in {dur}");
        for s in inside {
            let name = s["name"].as_str().unwrap().replace(' ', "_");
            let figure = k["stages_ms"][&name].as_f64().unwrap();
            assert!(
                (s["dur"].as_f64().unwrap() - figure * 1e3).abs() < EPS,
                "{s}"
            );
        }
    }
}

#[test]
fn a_runs_trace_holds_together_and_says_what_its_report_says() {
    let _serial = one_at_a_time();
    let program = stages_c();
    let dir = common::scratch_dir("trace");
    let path = dir.join("run.trace.json");
    // Keys, then a wait long enough for the clock to draw by itself, then keys again.
    let (code, report, said, _) = wrap_keys_with(
        &["--trace", path.to_str().unwrap()],
        "80x24",
        "j*6@150ms <wait 700ms> j*4@150ms q",
        &[program.to_str().unwrap(), "clock", "500", "raw"],
    );
    assert_eq!(code, Some(0), "{said}");
    let trace = common::read_json(&path);
    let events = assert_trace_holds_together(&trace);
    let of = |cat: &str| -> Vec<&Value> { events.iter().filter(|e| e["cat"] == cat).collect() };
    assert_key_slices_are_the_reports(&report, &events);
    // The frames: as many answering keys and unprompted as the report counts.
    let frames = of("frame");
    let named = |prefix: &str| {
        frames
            .iter()
            .filter(|f| f["name"].as_str().unwrap().starts_with(prefix))
            .count() as u64
    };
    let counts = &report["keys"]["frames"];
    assert_eq!(
        named("frame for key"),
        counts["answering"].as_u64().unwrap(),
        "{said}"
    );
    assert_eq!(
        named("unprompted frame"),
        counts["unprompted"].as_u64().unwrap(),
        "{said}"
    );
    assert!(counts["unprompted"].as_u64().unwrap() >= 2, "{said}");
    // CMD's threads by the kernel's ids, wrap's reader with what it read.
    let cmd_pids: Vec<u64> = frames.iter().map(|f| f["pid"].as_u64().unwrap()).collect();
    assert!(cmd_pids.iter().all(|&p| p != u64::from(std::process::id())));
    let read: u64 = events
        .iter()
        .filter(|e| e["name"] == "pty read")
        .map(|e| e["args"]["bytes"].as_u64().unwrap())
        .sum();
    assert_eq!(read, report["bytes"].as_u64().unwrap());
    assert!(!of("wait").is_empty() && !of("read").is_empty());
    std::fs::remove_dir_all(dir).unwrap();
}

/// A question the program asks its terminal is an instant on wrap's reader's track, answered.
#[test]
fn the_questions_a_program_asks_are_in_its_trace() {
    let out = Command::new(env!("CARGO_BIN_EXE_flushlab"))
        .args(["wrap", "--duration", "1", "--trace", "-", "--"])
        .args([
            "sh",
            "-c",
            "printf '\\033[6n'; sleep 0.3; printf '\\033[c'; sleep 0.3",
        ])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let trace: Value = serde_json::from_slice(&out.stdout).expect("the trace alone on stdout");
    let events = assert_trace_holds_together(&trace);
    let asked: Vec<&Value> = events.iter().filter(|e| e["cat"] == "query").collect();
    let names: Vec<&str> = asked.iter().map(|e| e["name"].as_str().unwrap()).collect();
    assert_eq!(
        names,
        ["ESC[6n cursor position", "ESC[c primary device attributes"]
    );
    assert!(asked.iter().all(|e| e["args"]["answered"] == true));
    assert!(asked[1]["ts"].as_f64().unwrap() - asked[0]["ts"].as_f64().unwrap() > 200e3);
}

/// A trace, a plot or a profile that cannot be written is refused in one line before CMD
/// starts, and so is one destination given twice, and a headless plot with no keys to draw.
#[test]
fn a_trace_or_plot_that_cannot_be_written_is_refused_before_cmd_starts() {
    let dir = common::scratch_dir("trace-refused");
    let marker = dir.join("ran");
    let touch = format!("touch {}", marker.display());
    let plot = dir.join("keys.svg");
    let plot = plot.to_str().unwrap();
    for (flags, named) in [
        (vec!["--trace", "/nonexistent-dir/t.json"], "--trace"),
        (vec!["--trace", "-", "--export-json", "-"], "--trace"),
        (
            vec!["--plot", "/nonexistent-dir/k.svg", "--keys", "j"],
            "--plot",
        ),
        (
            vec!["--plot", plot, "--trace", plot, "--keys", "j"],
            "--plot",
        ),
        // Headless without keys there is nothing to draw.
        (vec!["--plot", plot], "--keys"),
        // samply's file is checked as every output is, samply or not.
        (vec!["--profile", "/nonexistent-dir/p.json.gz"], "--profile"),
        (vec!["--profile", "-"], "--profile"),
    ] {
        let out = Command::new(env!("CARGO_BIN_EXE_flushlab"))
            .arg("wrap")
            .args(&flags)
            .args(["--duration", "1", "--", "sh", "-c", &touch])
            .output()
            .unwrap();
        let said = common::assert_refused(&out, named);
        assert!(!marker.exists(), "{flags:?}: CMD ran: {said}");
    }
    std::fs::remove_dir_all(dir).unwrap();
}
