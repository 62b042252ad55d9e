//! `flushlab wrap`: flushlab measuring flushlab from outside agrees with its own report; frames
//! are found or honestly unknown; an interactive program runs through it untouched.

mod common;

use std::process::Command;
use std::time::Duration;

use common::{COLS, ROWS, assert_restored, scratch, start};
use serde_json::Value;

fn read_json(path: &std::path::Path) -> Value {
    serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap()
}

/// `flushlab wrap --duration 10 --report W -- ARGS…`, headless; its exit code and report.
fn wrap(name: &str, args: &[&str]) -> (Option<i32>, Value, String) {
    let report = scratch(&format!("wrap-{name}.json"));
    let out = Command::new(env!("CARGO_BIN_EXE_flushlab"))
        .args(["wrap", "--duration", "10", "--size", "80x24", "--report"])
        .arg(&report)
        .arg("--")
        .args(args)
        .output()
        .unwrap();
    let said = String::from_utf8_lossy(&out.stderr).into_owned();
    (out.status.code(), read_json(&report), said)
}

/// `flushlab wrap -- ARGS…` on a fresh pty of its own: interactive.
fn wrapped(args: &[&str]) -> common::Running {
    let args: Vec<&std::ffi::OsStr> = ["wrap", "--"]
        .iter()
        .chain(args)
        .map(std::ffi::OsStr::new)
        .collect();
    start(&[], &args)
}

fn close(a: f64, b: f64, within: f64) -> bool {
    (a - b).abs() <= within * b.abs().max(1e-9)
}

#[test]
fn wrapping_flushlab_agrees_with_its_own_report() {
    for (buffering, expected) in [
        ("raw", Some("unbuffered")),
        ("line", Some("line-buffered-1k")),
        ("block", None),
        ("frame", None),
    ] {
        let inner = scratch(&format!("inner-{buffering}.json"));
        let inner_arg = inner.to_str().unwrap();
        let buffering_env = format!("BUFFERING={buffering}");
        let (code, outer, said) = wrap(
            buffering,
            &[
                "env",
                "STREAM=stderr",
                &buffering_env,
                "SYNC=1",
                "DURATION=1",
                "SIZE=80x24",
                env!("CARGO_BIN_EXE_flushlab"),
                "--report",
                inner_arg,
            ],
        );
        assert_eq!(code, Some(0), "{buffering}: {said}");
        let inner = read_json(&inner);
        assert_eq!(outer["frame_method"], "sync-markers", "{outer}");
        let figures = &outer["figures"];
        let frames = figures["frames"].as_f64().unwrap();
        let inner_frames = inner["frames"].as_f64().unwrap();
        assert!(
            (frames - inner_frames).abs() <= 1.0,
            "{buffering}: {frames} vs {inner_frames}"
        );
        for field in ["writes_per_frame", "bytes_per_frame"] {
            let (a, b) = (
                figures[field].as_f64().unwrap(),
                inner[field].as_f64().unwrap(),
            );
            assert!(
                close(a, b, 0.05),
                "{buffering} {field}: wrap {a} vs inner {b}"
            );
        }
        let codes: Vec<&str> = outer["diagnoses"]
            .as_array()
            .unwrap()
            .iter()
            .map(|d| d["code"].as_str().unwrap())
            .collect();
        let lesson = ["unbuffered", "line-buffered-1k"];
        match expected {
            Some(code) => assert!(codes.contains(&code), "{buffering}: {codes:?}"),
            None => assert!(
                !codes.iter().any(|c| lesson.contains(c)),
                "{buffering}: {codes:?}"
            ),
        }
    }
}

#[test]
fn frames_come_from_pauses_or_are_said_to_be_unknown() {
    // Six bursts of 2,000 bytes, 80 ms apart: six frames from the pauses.
    let (code, report, said) = wrap(
        "bursts",
        &[
            "sh",
            "-c",
            "for i in 1 2 3 4 5 6; do head -c 2000 /dev/zero; sleep 0.08; done",
        ],
    );
    assert_eq!(code, Some(0), "{said}");
    assert_eq!(report["frame_method"], "idle-gaps", "{report}");
    assert_eq!(report["figures"]["frames"], 6, "{report}");
    // 8 MB without a pause: per-second figures only, never invented frames.
    let (code, report, said) = wrap("steady", &["head", "-c", "8000000", "/dev/zero"]);
    assert_eq!(code, Some(0), "{said}");
    assert_eq!(report["frame_method"], "unknown", "{report}");
    assert!(report["figures"].is_null(), "{report}");
    assert!(report["bytes"].as_u64().unwrap() >= 8_000_000, "{report}");
    assert!(said.contains("frames unknown"), "{said}");
}

#[test]
fn the_wrapped_programs_exit_status_is_wraps() {
    let (code, report, _) = wrap("exit7", &["sh", "-c", "exit 7"]);
    assert_eq!(code, Some(7));
    assert_eq!(report["exit_code"], 7);
    let (code, _, _) = wrap("segv", &["sh", "-c", "kill -SEGV $$"]);
    assert_eq!(code, Some(128 + 11));
}

#[test]
fn bad_input_is_one_line() {
    for (args, code, says) in [
        (&["wrap"][..], 2, "CMD"),
        (
            &["wrap", "--", "no-such-command-here"][..],
            127,
            "no-such-command-here",
        ),
        (
            &["wrap", "--frame-gap", "0", "--", "true"][..],
            2,
            "--frame-gap",
        ),
        (
            &["wrap", "--frame-gap", "soon", "--", "true"][..],
            2,
            "--frame-gap",
        ),
        (
            &["wrap", "--reader", "slow", "--", "true"][..],
            2,
            "--reader",
        ),
    ] {
        let out = Command::new(env!("CARGO_BIN_EXE_flushlab"))
            .args(args)
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(code), "{args:?}: {err}");
        assert_eq!(err.lines().count(), 1, "{args:?}: {err}");
        assert!(err.contains(says), "{args:?}: {err}");
    }
}

#[test]
fn interactive_wrap_is_transparent() {
    // Keys in, output out, a resize forwarded, the exit status passed on.
    let script = "read a; stty size; echo \"got $a\"; exit 7";
    let running = wrapped(&["sh", "-c", script]);
    std::thread::sleep(Duration::from_millis(500));
    running.pty.resize(100, 30).unwrap();
    std::thread::sleep(Duration::from_millis(300));
    std::io::Write::write_all(&mut &running.pty.master, b"hello\r").unwrap();
    let run = running.finish(Duration::from_secs(10));
    let text = String::from_utf8_lossy(&run.output);
    assert_eq!(run.code, Some(7), "{text}");
    assert!(text.contains("got hello"), "{text}");
    assert!(
        text.contains("30 100"),
        "the resize did not reach CMD: {text}"
    );
    assert!(text.contains("wrap sh -c"), "no report: {text}");
    assert_eq!(
        run.termios_after.local_modes,
        run.termios_before.local_modes
    );

    // A program that dies on the alternate screen: the terminal is still given back.
    let script = "printf '\\033[?1049h\\033[?25l'; sleep 0.3; kill -SEGV $$";
    let run = wrapped(&["sh", "-c", script]).finish(Duration::from_secs(10));
    assert_eq!(run.code, Some(128 + 11));
    assert_restored(&run);

    // SIGTERM to wrap: CMD is ended, the terminal restored, 128+15.
    let running = wrapped(&["sleep", "30"]);
    std::thread::sleep(Duration::from_millis(500));
    running.signal(rustix::process::Signal::TERM);
    let run = running.finish(Duration::from_secs(10));
    assert_eq!(run.code, Some(143));
    assert_eq!(
        run.termios_after.local_modes,
        run.termios_before.local_modes
    );
    let _ = (COLS, ROWS);
}

#[test]
fn a_terminal_that_syncs_hears_that_cmd_does_not() {
    // The "terminal" answers DECRQM ?2026 with "reset" (supported) before wrap even asks.
    let running = wrapped(&["sh", "-c", "printf 'plain output'; sleep 0.3"]);
    std::io::Write::write_all(&mut &running.pty.master, b"\x1b[?2026;2$y").unwrap();
    let run = running.finish(Duration::from_secs(10));
    let text = String::from_utf8_lossy(&run.output);
    assert_eq!(run.code, Some(0), "{text}");
    assert!(text.contains("sync-unused"), "{text}");
    // A terminal that says nothing: no such claim.
    let run =
        wrapped(&["sh", "-c", "printf 'plain output'; sleep 0.3"]).finish(Duration::from_secs(10));
    let text = String::from_utf8_lossy(&run.output);
    assert!(!text.contains("sync-unused"), "{text}");
}
