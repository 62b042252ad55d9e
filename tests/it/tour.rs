//! `flushlab tour` in a pseudo-terminal whose "terminal" is this test: a vt100 parser keeps
//! the screen, and the test answers (or ignores) the cursor-position, DECRQM, XTVERSION and
//! device-attributes queries the tour sends.

use crate::common;

use common::scratch;

use std::io::{Read, Write};
use std::path::Path;
use std::time::{Duration, Instant};

use flushlab_core::sys::pty::Pty;
use serde_json::Value;

/// Which queries the fake terminal answers.
#[derive(Clone, Copy, PartialEq)]
enum Fake {
    /// All of them, as foot or kitty do.
    Modern,
    /// Cursor position and device attributes only, as rxvt-unicode does.
    Legacy,
    /// None.
    Silent,
}

/// Runs a tour of two modes in front of the `fake` terminal, with `timeout` for its answers.
fn tour(fake: Fake, timeout: &str, name: &str) -> (Option<i32>, Value, String) {
    tour_of("stdout/raw,stdout/frame", fake, timeout, name)
}

/// Runs a tour of `modes` in front of the `fake` terminal, with `timeout` for its answers.
fn tour_of(modes: &str, fake: Fake, timeout: &str, name: &str) -> (Option<i32>, Value, String) {
    let json = scratch(name);
    let flushlab = Path::new(env!("CARGO_BIN_EXE_flushlab"));
    let (code, output) = in_front_of(fake, flushlab, |cmd| {
        cmd.args(tour_args(timeout))
            .args(["--modes", modes, "--export-json"])
            .arg(&json);
    });
    let report = serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
    (code, report, output)
}

/// A short tour's flags: 0.4 s a mode, `timeout` for the answers, a question every 3 frames.
fn tour_args(timeout: &str) -> [&str; 7] {
    [
        "tour",
        "--seconds",
        "0.4",
        "--cpr-timeout",
        timeout,
        "--cpr-every",
        "3",
    ]
}

/// Runs `program` (configured by `configure`) in a pty whose terminal is the `fake` one; its
/// exit code and everything it drew.
fn in_front_of(
    fake: Fake,
    program: &Path,
    configure: impl FnOnce(&mut std::process::Command),
) -> (Option<i32>, String) {
    let pty = Pty::open(80, 24).unwrap();
    let mut child = pty.spawn(program, configure).unwrap();
    let mut master = pty.master.try_clone().unwrap();
    let mut replies = pty.master.try_clone().unwrap();
    let reader = std::thread::spawn(move || {
        // The fake terminal keeps a real screen: cursor-position answers come from it.
        let side = |n| std::num::NonZeroU16::new(n).unwrap();
        let mut screen = vt100::Parser::new(side(24), side(80), 0);
        let mut seen = Vec::new();
        let mut buf = [0u8; 65536];
        let mut answered = 0;
        loop {
            let n = match master.read(&mut buf) {
                Ok(0) | Err(_) => break,
                Ok(n) => n,
            };
            seen.extend_from_slice(&buf[..n]);
            screen.process(&buf[..n]);
            if fake == Fake::Silent {
                continue;
            }
            // Answer every query seen so far, once each, in order.
            let text = String::from_utf8_lossy(&seen).into_owned();
            let (row, col) = screen.screen().cursor_position();
            let cpr = format!("\x1b[{};{}R", row + 1, col + 1).into_bytes();
            let mut answers: Vec<(&str, Vec<u8>)> = vec![
                ("\x1b[6n", cpr),
                ("\x1b[>c", b"\x1b[>85;95;0c".to_vec()),
                ("\x1b[c", b"\x1b[?64;1;2c".to_vec()),
            ];
            if fake == Fake::Modern {
                answers.push(("\x1b[?2026$p", b"\x1b[?2026;2$y".to_vec()));
                answers.push(("\x1b[>0q", b"\x1bP>|fake-term(1)\x1b\\".to_vec()));
            }
            let queries: Vec<(usize, Vec<u8>)> = answers
                .iter()
                .flat_map(|(q, a)| text.match_indices(q).map(move |(i, _)| (i, a.clone())))
                .collect::<Vec<_>>();
            let mut queries = queries;
            queries.sort_by_key(|(i, _)| *i);
            for (_, reply) in queries.iter().skip(answered) {
                replies.write_all(reply).unwrap();
            }
            answered = queries.len();
        }
        String::from_utf8_lossy(&seen).into_owned()
    });
    let start = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        assert!(start.elapsed() < Duration::from_secs(30), "the tour hung");
        std::thread::sleep(Duration::from_millis(20));
    };
    drop(pty);
    let output = reader.join().unwrap();
    (status.code(), output)
}

/// `tour --export-json - | …`: stdout is a pipe, so the tour draws on /dev/tty (the terminal
/// the user sees) and the pipe gets the JSON alone.
#[test]
fn a_tour_piped_to_another_program_draws_on_the_terminal_and_pipes_only_json() {
    let json = scratch("piped.json");
    let flushlab = env!("CARGO_BIN_EXE_flushlab");
    let (code, output) = in_front_of(Fake::Modern, Path::new("/bin/bash"), |cmd| {
        cmd.arg("-c")
            .arg(r#"set -o pipefail; "$@" | cat > "$0""#)
            .arg(&json)
            .arg(flushlab)
            .args(tour_args("0.3"))
            .args(["--modes", "stdout/line,stderr/raw", "--export-json", "-"]);
    });
    assert_eq!(code, Some(0), "{output}");
    // The pipe got the JSON and nothing else...
    let report: Value =
        serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap_or_else(|e| {
            panic!(
                "not JSON alone ({e}): {}",
                std::fs::read_to_string(&json).unwrap()
            )
        });
    let rows = report["results"].as_array().unwrap();
    let modes: Vec<&str> = rows.iter().map(|r| r["mode"].as_str().unwrap()).collect();
    assert_eq!(modes, ["stdout/line", "stderr/raw"]);
    for row in rows {
        assert!(row["shown_fps"].as_f64().unwrap() > 0.0, "{row}");
    }
    // ...and the terminal got the frames (its cursor-position answers confirmed them) and the
    // table for people.
    assert!(
        output.contains("\x1b[?1049h"),
        "no alternate screen on the terminal"
    );
    assert!(
        output.contains("shown frames/s"),
        "no table on the terminal"
    );
    assert!(!output.contains("\"results\""), "JSON on the terminal");
    std::fs::remove_file(&json).unwrap();
}

#[test]
fn a_terminal_that_answers_gets_both_rates_per_mode() {
    let (code, report, output) = tour(Fake::Modern, "0.3", "answers.json");
    assert_eq!(code, Some(0), "{output}");
    let terminal = &report["terminal"];
    assert_eq!(terminal["sync_output"], "supported");
    assert_eq!(terminal["version_reply"], "fake-term(1)");
    let rows = report["results"].as_array().unwrap();
    let modes: Vec<&str> = rows.iter().map(|r| r["mode"].as_str().unwrap()).collect();
    assert_eq!(modes, ["stdout/raw", "stdout/frame"]);
    for row in rows {
        assert!(row["fps"]["median"].as_f64().unwrap() > 0.0, "{row}");
        assert!(row["shown_fps"].as_f64().unwrap() > 0.0, "{row}");
        // The terminal model on each mode's frames: a frame of the full scene reaches the
        // terminal in pieces, raw or in one write, and tears between them.
        assert!(
            row["torn_paints_per_second"].as_f64().unwrap() > 0.0,
            "{row}"
        );
    }
    assert!(
        output.contains("shown frames/s"),
        "the table is printed after the tour"
    );
    assert!(output.contains("torn paints/s"), "{output}");
}

#[test]
fn a_terminal_that_never_answers_does_not_hang_the_tour() {
    let (code, report, _) = tour(Fake::Silent, "0.3", "silent.json");
    assert_eq!(code, Some(0));
    assert_eq!(report["terminal"]["sync_output"], "no answer");
    for row in report["results"].as_array().unwrap() {
        assert!(row["fps"]["median"].as_f64().unwrap() > 0.0, "{row}");
        assert!(row["shown_fps"].is_null(), "shown must be unknown: {row}");
    }
}

#[test]
fn a_terminal_without_xtversion_is_named_by_its_device_attributes_without_waiting() {
    // The identification and every confirmation end at an answer, never at this timeout.
    let timeout = 20.0;
    let start = Instant::now();
    let (code, report, output) = tour(Fake::Legacy, &timeout.to_string(), "legacy.json");
    assert_eq!(code, Some(0), "{output}");
    assert!(start.elapsed().as_secs_f64() < timeout, "the tour waited");
    let terminal = &report["terminal"];
    assert_eq!(terminal["version_reply"], Value::Null);
    assert_eq!(terminal["secondary_attributes"], "85;95;0");
    assert_eq!(terminal["sync_output"], "no answer");
    assert_eq!(
        report["settings"]["readers"][0],
        "rxvt-unicode (DA2 85;95;0)"
    );
}

#[test]
fn tour_needs_a_terminal() {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_flushlab"))
        .args(["tour", "--seconds", "0.1"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("not one"));
}

/// What interrupts a tour that waits for a terminal's answer.
#[derive(Clone, Copy, Debug)]
enum Interrupt {
    Key(u8),
    Signal(rustix::process::Signal),
    /// The terminal goes away (its master side is closed).
    Hangup,
}

#[test]
fn a_tour_waiting_for_answers_quits_and_dies_at_once() {
    use rustix::process::Signal;
    let cases = [
        (Interrupt::Key(b'q'), &[0][..]),
        (Interrupt::Signal(Signal::TERM), &[143][..]),
        (Interrupt::Signal(Signal::HUP), &[129][..]),
        (Interrupt::Signal(Signal::QUIT), &[131][..]),
        (Interrupt::Signal(Signal::INT), &[130][..]),
        // The kernel's SIGHUP may come before the tour sees EIO.
        (Interrupt::Hangup, &[3, 129][..]),
    ];
    for (interrupt, codes) in cases {
        let pty = Pty::open(80, 24).unwrap();
        let mut child = pty
            .spawn(Path::new(env!("CARGO_BIN_EXE_flushlab")), |cmd| {
                // A silent terminal and a long timeout: the tour waits in identification.
                cmd.args(["tour", "--seconds", "5", "--cpr-timeout", "20"]);
            })
            .unwrap();
        let mut seen = Vec::new();
        let mut buf = [0u8; 4096];
        // Wait until the tour has asked its first question, and is waiting for the answer.
        while !seen.windows(3).any(|w| w == b"\x1b[c" || w == b"\x1b[>") {
            let n = (&pty.master).read(&mut buf).unwrap();
            seen.extend_from_slice(&buf[..n]);
        }
        let drain = match interrupt {
            Interrupt::Hangup => None,
            _ => {
                let master = pty.master.try_clone().unwrap();
                Some(std::thread::spawn(move || {
                    flushlab_core::sys::pty::read_to_end(&master, |_| {})
                }))
            }
        };
        let pid = rustix::process::Pid::from_child(&child);
        let pty = match interrupt {
            Interrupt::Key(key) => {
                (&pty.master).write_all(&[key]).unwrap();
                Some(pty)
            }
            Interrupt::Signal(signal) => {
                rustix::process::kill_process(pid, signal).unwrap();
                Some(pty)
            }
            Interrupt::Hangup => {
                drop(pty);
                None
            }
        };
        let sent = Instant::now();
        let status = common::wait_for(Duration::from_secs(10), &format!("{interrupt:?}"), || {
            child.try_wait().unwrap()
        });
        let took = sent.elapsed();
        assert!(
            codes.contains(&status.code().unwrap_or(-1)),
            "{interrupt:?}: {status:?}"
        );
        assert!(took < Duration::from_secs(2), "{interrupt:?}: {took:?}");
        drop(pty);
        if let Some(drain) = drain {
            let _ = drain.join();
        }
    }
}

#[test]
#[cfg_attr(
    not(feature = "slow-tests"),
    ignore = "slow tier (5 s): cargo test --features slow-tests"
)]
fn every_mode_of_a_tour_draws_the_same_frame_and_stdout_beats_stderr() {
    let (code, report, output) = tour_of("modes", Fake::Modern, "1", "ten-modes.json");
    assert_eq!(code, Some(0));
    // The table printed after the tour fits the 80-column terminal.
    let after = &output[output
        .rfind("\x1b[?1049l")
        .expect("never left the alternate screen")..];
    let table = common::table_lines(after);
    assert!(table.len() >= 12, "{after}");
    for line in table {
        assert!(line.chars().count() <= 80, "{line}");
    }
    let rows = report["results"].as_array().unwrap();
    assert_eq!(rows.len(), 10, "{report}");
    let bytes: Vec<f64> = rows
        .iter()
        .map(|r| r["bytes_per_frame"].as_f64().unwrap())
        .collect();
    let (min, max) = bytes
        .iter()
        .fold((f64::MAX, 0.0f64), |(lo, hi), &b| (lo.min(b), hi.max(b)));
    // Equal work: the compact HUD at 80x24 has the same size whatever the table holds.
    assert!(max / min < 1.03, "bytes/frame {bytes:?}");
    let fps = |mode: &str| {
        rows.iter()
            .find(|r| r["mode"] == mode)
            .and_then(|r| r["fps"]["median"].as_f64())
            .unwrap_or_else(|| panic!("no {mode} row: {report}"))
    };
    // The seed's lesson, which a tour must never contradict.
    assert!(
        fps("stdout/line") > fps("stderr/raw"),
        "stdout/line {} vs stderr/raw {}",
        fps("stdout/line"),
        fps("stderr/raw")
    );
}

/// Issue 33 #2 and the new surfaces: a `TERM` and a `DISPLAY` carrying an OSC (a window title
/// set by whoever set the environment) never reach the terminal as commands: the table after
/// the tour names the terminal escaped, and `--paint`'s one line about the display too.
#[test]
fn a_hostile_term_or_display_never_reaches_the_terminal_unescaped() {
    let json = scratch("hostile-env.json");
    let flushlab = Path::new(env!("CARGO_BIN_EXE_flushlab"));
    let (code, output) = in_front_of(Fake::Silent, flushlab, |cmd| {
        cmd.args(tour_args("0.05"))
            .args(["--modes", "stdout/frame", "--paint", "--export-json"])
            .arg(&json)
            .env("TERM", "xterm\x1b]0;pwned\x07")
            .env("DISPLAY", "\x1b]0;pwned-display\x07:99");
    });
    assert_eq!(code, Some(0), "{output}");
    assert!(
        !output.contains("\x1b]0;pwned"),
        "an OSC reached the terminal: {output:?}"
    );
    assert!(
        output.contains("pwned"),
        "the name is shown, escaped: {output:?}"
    );
    std::fs::remove_file(json).unwrap();
}
