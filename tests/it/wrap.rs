//! `flushlab wrap`: flushlab measuring flushlab from outside agrees with its own report; frames
//! are found or honestly unknown; an interactive program runs through it untouched.

use crate::common;

use std::process::Command;
use std::time::Duration;

use common::{COLS, ROWS, assert_restored, scratch, start};
use serde_json::Value;

fn read_json(path: &std::path::Path) -> Value {
    serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap()
}

/// `flushlab wrap --duration 10 --report W -- ARGS…`, headless; its exit code and report.
fn wrap(name: &str, args: &[&str]) -> (Option<i32>, Value, String) {
    wrap_with(name, &[], args)
}

/// [`wrap`] with more of wrap's flags (`--no-observer`: seen from outside only).
fn wrap_with(name: &str, flags: &[&str], args: &[&str]) -> (Option<i32>, Value, String) {
    let report = scratch(&format!("wrap-{name}.json"));
    let out = Command::new(env!("CARGO_BIN_EXE_flushlab"))
        .args(["wrap", "--duration", "10", "--size", "80x24"])
        .args(flags)
        .arg("--report")
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
#[cfg_attr(
    not(feature = "slow-tests"),
    ignore = "slow tier (4 s): cargo test --features slow-tests"
)]
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
fn frames_come_from_what_is_drawn_or_are_said_to_be_unknown() {
    let frames = [
        "sh",
        "-c",
        "for i in 1 2 3 4 5 6 7 8; do printf '\\033[Hframe %s\\033[2;1Hxxxx\\033[3;1Hyyyy' $i; \
         sleep 0.08; done",
    ];
    // Eight frames drawn from the top (home, three rows), 80 ms apart, `sleep` between them:
    // from inside, the output between the waits; from outside, the cursor restarts, confirmed
    // by the home once a frame and a pause before each. Both find the eight.
    for (flags, method) in [
        (&[][..], "waits"),
        (&["--no-observer"][..], "cursor-restarts"),
    ] {
        let (code, report, said) = wrap_with("frames", flags, &frames);
        assert_eq!(code, Some(0), "{said}");
        assert_eq!(report["frame_method"], method, "{report}");
        // Eight frames begun (the first cell drawn starts the first).
        assert_eq!(report["figures"]["frames"], 8, "{report}");
        let fps = report["figures"]["fps"].as_f64().unwrap();
        assert!(fps > 5.0 && fps < 13.0, "{report}");
    }
    // Bursts with pauses but nothing drawn over anything. From outside, pauses alone never
    // make frames; from inside, the program waited between them: six write groups, which is
    // what holding its output until it waits would batch.
    let bursts = [
        "sh",
        "-c",
        "for i in 1 2 3 4 5 6; do head -c 2000 /dev/zero | tr '\\0' x; sleep 0.08; done",
    ];
    let (code, report, said) = wrap_with("bursts", &["--no-observer"], &bursts);
    assert_eq!(code, Some(0), "{said}");
    assert_eq!(report["frame_method"], "unknown", "{report}");
    let (code, report, said) = wrap("bursts-inside", &bursts);
    assert_eq!(code, Some(0), "{said}");
    assert_eq!(report["frame_method"], "waits", "{report}");
    assert_eq!(report["figures"]["frames"], 6, "{report}");
    // 8 MB without a pause: per-second figures only, never invented frames.
    let (code, report, said) = wrap("steady", &["head", "-c", "8000000", "/dev/zero"]);
    assert_eq!(code, Some(0), "{said}");
    assert_eq!(report["frame_method"], "unknown", "{report}");
    assert!(report["figures"].is_null(), "{report}");
    assert!(report["bytes"].as_u64().unwrap() >= 8_000_000, "{report}");
    assert!(
        report["bytes_per_second"].as_f64().unwrap() > 0.0,
        "{report}"
    );
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
fn a_cmd_that_fails_at_once_is_named_with_its_status_and_last_line() {
    // Issue 36 #5: a bad flag or a missing file named the writer /usr/bin/setsid and showed
    // neither CMD's status nor what it said.
    let (code, report, said) = wrap("fails", &["ls", "/no/such/file/here"]);
    assert_eq!(code, Some(2), "{said}");
    assert_eq!(report["exit_code"], 2);
    let writer = report["writer"]["executable"].as_str().unwrap();
    assert!(!writer.ends_with("setsid"), "{writer}");
    let last = report["last_line"].as_str().unwrap();
    assert!(last.contains("/no/such/file/here"), "{last}");
    assert!(
        said.contains("exited with status 2") && said.contains(last),
        "{said}"
    );
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
    interactive_wrap_is_transparent_with(&[]);
    // Tried: the shell's and stty's output held and let out (stty prints through stdio, made
    // fully buffered), the resize still reaching CMD, keys still read.
    interactive_wrap_is_transparent_with(&["--try", "frame"]);
}

fn interactive_wrap_is_transparent_with(flags: &[&str]) {
    // Keys in, output out, a resize forwarded, the exit status passed on.
    let script = "read a; stty size; echo \"got $a\"; exit 7";
    let mut args = flags.to_vec();
    args.extend(["--", "sh", "-c", script]);
    let args: Vec<&std::ffi::OsStr> = std::iter::once("wrap")
        .chain(args)
        .map(std::ffi::OsStr::new)
        .collect();
    let running = common::start(&[], &args);
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
}

#[test]
fn interactive_wrap_gives_the_terminal_back_however_cmd_ends() {
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

/// `program ARGS…` on a fresh pty of 80x24 (keys `typed_ahead` already waiting), whose
/// "terminal" answers DECRQM ?2026 with `answer` when asked (or stays silent): its exit code and
/// everything it wrote.
fn on_pty(
    program: &std::path::Path,
    args: &[&str],
    typed_ahead: &[u8],
    answer: Option<&'static [u8]>,
) -> (Option<i32>, Vec<u8>) {
    let pty = flushlab_core::sys::pty::Pty::open(COLS, ROWS).unwrap();
    std::io::Write::write_all(&mut &pty.master, typed_ahead).unwrap();
    let mut child = pty
        .spawn(program, |cmd| {
            cmd.args(args);
        })
        .unwrap();
    let master = pty.master.try_clone().unwrap();
    let reader = std::thread::spawn(move || {
        let mut output = Vec::new();
        let mut answered = false;
        let _ = flushlab_core::sys::pty::read_to_end(&master, |bytes| {
            output.extend_from_slice(bytes);
            let asked = output.windows(9).any(|w| w == b"\x1b[?2026$p");
            if asked && !answered {
                answered = true;
                if let Some(answer) = answer {
                    std::io::Write::write_all(&mut &master, answer).unwrap();
                }
            }
        });
        output
    });
    let status = common::wait_for(Duration::from_secs(10), "the program to exit", || {
        child.try_wait().unwrap()
    });
    drop(pty);
    (status.code(), reader.join().unwrap())
}

/// `flushlab wrap -- ARGS…` interactive on [`on_pty`].
fn wrapped_answering(args: &[&str], answer: Option<&'static [u8]>) -> (Option<i32>, Vec<u8>) {
    let args: Vec<&str> = ["wrap", "--"].iter().chain(args).copied().collect();
    on_pty(
        std::path::Path::new(env!("CARGO_BIN_EXE_flushlab")),
        &args,
        b"",
        answer,
    )
}

#[test]
fn a_terminal_that_syncs_hears_that_cmd_does_not() {
    // CMD draws frames without markers; the terminal answers "reset" (supported) when asked.
    let frames =
        "for i in 1 2 3 4 5 6; do printf '\\033[Hframe %s\\033[2;1Hxx' $i; sleep 0.05; done";
    let (code, output) = wrapped_answering(&["sh", "-c", frames], Some(b"\x1b[?2026;2$y"));
    let text = String::from_utf8_lossy(&output);
    assert_eq!(code, Some(0), "{text}");
    assert!(text.contains("sync-unused"), "{text}");
    // A terminal that says nothing: no such claim.
    let (_, output) = wrapped_answering(&["sh", "-c", frames], None);
    let text = String::from_utf8_lossy(&output);
    assert!(!text.contains("sync-unused"), "{text}");
    // CMD that draws no frames: the terminal is not even asked.
    let (_, output) = wrapped_answering(&["sh", "-c", "printf 'plain output'"], None);
    assert!(!output.windows(9).any(|w| w == b"\x1b[?2026$p"));
}

#[test]
fn a_program_on_the_main_screen_looks_as_it_does_without_wrap() {
    // `sh -c 'echo hello'` alone, then through wrap: the same bytes first, nothing before them,
    // no alternate-screen exit it never entered, the report below.
    let (_, plain) = on_pty(std::path::Path::new("sh"), &["-c", "echo hello"], b"", None);
    assert_eq!(plain, b"hello\r\n");
    let (code, output) = wrapped_answering(&["sh", "-c", "echo hello"], None);
    let text = String::from_utf8_lossy(&output);
    assert_eq!(code, Some(0), "{text}");
    assert!(output.starts_with(&plain), "{text:?}");
    for never in [&b"\x1b[?1049l"[..], b"\x1b[?25h", b"\x1b[0m", b"\x1b[?2026"] {
        assert!(
            !output.windows(never.len()).any(|w| w == never),
            "wrap wrote {:?}: {text:?}",
            String::from_utf8_lossy(never)
        );
    }
    let size = |n| std::num::NonZeroU16::new(n).unwrap();
    let mut screen = vt100::Parser::new(size(ROWS), size(COLS), 0);
    screen.process(&output);
    let rows: Vec<String> = screen.screen().rows(0, COLS).collect();
    assert_eq!(rows[0], "hello");
    assert!(
        rows[1].starts_with("flushlab: wrap sh -c echo hello"),
        "{rows:?}"
    );
    // CMD that ends mid-line: the report starts on a line of its own.
    let (_, output) = wrapped_answering(&["sh", "-c", "printf 'no newline'"], None);
    screen = vt100::Parser::new(size(ROWS), size(COLS), 0);
    screen.process(&output);
    let rows: Vec<String> = screen.screen().rows(0, COLS).collect();
    assert_eq!(rows[0], "no newline", "{rows:?}");
    assert!(rows[1].starts_with("flushlab: wrap"), "{rows:?}");
}

#[test]
fn keys_typed_before_cmd_reads_reach_it() {
    // Type-ahead: keys already waiting when wrap starts go to CMD, none is eaten.
    let script = "sleep 0.3; read a; echo \"got $a\"";
    let (code, output) = on_pty(
        std::path::Path::new(env!("CARGO_BIN_EXE_flushlab")),
        &["wrap", "--", "sh", "-c", script],
        b"early\r",
        None,
    );
    let text = String::from_utf8_lossy(&output);
    assert_eq!(code, Some(0), "{text}");
    assert!(text.contains("got early"), "{text}");
}

/// No process of ours whose command line holds `marker` is alive.
fn gone(marker: &str) -> bool {
    std::fs::read_dir("/proc").unwrap().flatten().all(|entry| {
        std::fs::read(entry.path().join("cmdline"))
            .map(|cmdline| !String::from_utf8_lossy(&cmdline).contains(marker))
            .unwrap_or(true)
    })
}

#[test]
#[cfg_attr(
    not(feature = "slow-tests"),
    ignore = "slow tier (5 s): cargo test --features slow-tests"
)]
fn everything_cmd_started_ends_with_it() {
    // A daemon that leaves CMD's session and ignores SIGHUP and SIGTERM outlives CMD's exit:
    // wrap (its subreaper) ends it, and counts what it wrote.
    let marker = "31.4159";
    let daemon = format!(
        "setsid sh -c 'trap \"\" HUP TERM; printf daemon; sleep {marker}' & sleep 0.3; echo started"
    );
    let (code, report, said) = wrap("daemon", &["sh", "-c", &daemon]);
    assert_eq!(code, Some(0), "{said}");
    assert!(gone(marker), "the daemon outlived wrap");
    assert!(
        report["tree_write_calls"].as_u64().unwrap() >= 2,
        "{report}"
    );
    // Ended by the duration too: a child that ignores SIGTERM.
    let marker = "27.1828";
    let out = Command::new(env!("CARGO_BIN_EXE_flushlab"))
        .args(["wrap", "--duration", "0.5", "--", "sh", "-c"])
        .arg(format!("trap '' TERM; sleep {marker} & sleep {marker}"))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    assert!(gone(marker), "a child outlived --duration");
}

#[test]
fn a_terminal_that_stopped_reading_does_not_hold_sigterm() {
    // Interactive wrap copying `yes` to a terminal nobody reads: SIGTERM still ends it all.
    let marker = "stalled-terminal-marker";
    let pty = flushlab_core::sys::pty::Pty::open(COLS, ROWS).unwrap();
    let mut child = pty
        .spawn(
            std::path::Path::new(env!("CARGO_BIN_EXE_flushlab")),
            |cmd| {
                cmd.args(["wrap", "--", "yes", marker]);
            },
        )
        .unwrap();
    std::thread::sleep(Duration::from_secs(1));
    let pid = rustix::process::Pid::from_child(&child);
    let asked = std::time::Instant::now();
    rustix::process::kill_process(pid, rustix::process::Signal::TERM).unwrap();
    let status = common::wait_for(Duration::from_secs(8), "wrap to exit", || {
        child.try_wait().unwrap()
    });
    // Issue 33 #4: it took 4.5 s; within 3 s is the promise (a count of seconds, not a
    // timing of work: the bound is wrap's own grace, which no machine load stretches).
    let took = asked.elapsed();
    assert!(took < Duration::from_secs(3), "SIGTERM took {took:?}");
    assert_eq!(status.code(), Some(143));
    common::wait_for(Duration::from_secs(2), "yes to be gone", || {
        gone(marker).then_some(())
    });
    drop(pty);
}

#[test]
fn frames_all_read_at_once_are_still_the_frames_the_markers_count() {
    // Issue 33 #5: 50 sync-marked frames in one write, so one read: the JSON said 50 frames
    // by sync markers and the summary "frames unknown".
    let (code, json, summary) = wrap(
        "fifty-marked",
        &[
            "sh",
            "-c",
            r#"printf '\033[?2026hframe\033[?2026l%.0s' $(seq 50)"#,
        ],
    );
    assert_eq!(code, Some(0), "{summary}");
    assert_eq!(json["frame_method"], "sync-markers", "{json}");
    assert_eq!(
        (json["sync_begins"].as_u64(), json["sync_ends"].as_u64()),
        (Some(50), Some(50))
    );
    assert!(summary.contains("50 frames (sync markers)"), "{summary}");
    assert!(!summary.contains("frames unknown"), "{summary}");
}

#[test]
fn a_misspelt_flag_is_a_usage_error_not_a_command() {
    // Issue 33 #7: `wrap --duraton 3 -- ls` said "'--duraton' is not a command", exit 127.
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_flushlab"))
        .args(["wrap", "--duraton", "3", "--", "ls"])
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("'--duration'") && stderr.lines().count() == 1,
        "{stderr}"
    );
    // CMD's own flags after CMD stay CMD's, with or without `--`.
    for args in [
        &["wrap", "ls", "-l", "/dev/null"][..],
        &["wrap", "--", "ls", "-l", "/dev/null"],
    ] {
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_flushlab"))
            .args(args)
            .stdin(std::process::Stdio::null())
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(0), "{args:?}");
    }
}

/// Issue 33 #6: interactive wrap of `cat >/dev/null` fed random keys (Ctrl-C among them) hung
/// for good once CMD had exited: its key forwarder waited in write(2) on a pty input queue the
/// keys had filled and nobody would read, and wrap waited for the forwarder. Before the fix
/// 12 of 15 such runs hung here; each of these must end.
///
/// The pty itself can stall first: now and then (a few attempts in a thousand here, more on a
/// loaded machine) `cat` waits in the kernel's tty read for a line while its input queue is
/// full and takes no more keys, the Ctrl-Cs among them. The same keys into
/// `sh -c 'cat >/dev/null'` on a pty of Python's `pty.fork()`, without flushlab, stalled once
/// in 120 attempts. wrap rightly waits for a CMD that does not end; what must hold is that wrap ends
/// once CMD is gone, its forwarder stuck in write(2) or not. So a CMD still alive after 10 s
/// with that stall's signature — every CMD process asleep, the last one in the tty layer
/// (`wait_woken`), wrap's key forwarder there too or waiting for more keys (under load, once,
/// the tty had dropped the keys a full line could not hold and the forwarder was done) — is
/// killed from outside, like a user's
/// `kill` from another terminal, and wrap must then end. Any other CMD still alive is wrap's
/// failure.
#[test]
fn random_keys_against_cmds_exit_never_hang_wrap() {
    use std::io::Write;
    let mut state = 0x9E37_79B9_7F4A_7C15_u64;
    let mut stalls = 0;
    for attempt in 0..8 {
        let running = wrapped(&["sh", "-c", "cat >/dev/null"]);
        // Ctrl-S would stop the user's terminal once wrap gave it back (a terminal's choice,
        // not wrap's hang) and Ctrl-Z would stop wrap: the rest of the 256 values are sent.
        let keys: Vec<u8> = (0..200_000)
            .map(|_| {
                state ^= state << 13;
                state ^= state >> 7;
                state ^= state << 17;
                (state >> 24) as u8
            })
            .filter(|b| ![0x13, 0x1a].contains(b))
            .collect();
        let mut master = running.pty.master.try_clone().unwrap();
        let typing = std::thread::spawn(move || {
            for chunk in keys.chunks(4096) {
                if master.write_all(chunk).is_err() {
                    break;
                }
            }
        });
        let mut child = running.child;
        let wrap_pid = child.id();
        let wait_for_wrap = |child: &mut std::process::Child, seconds| {
            let start = std::time::Instant::now();
            while child.try_wait().unwrap().is_none()
                && start.elapsed() < Duration::from_secs(seconds)
            {
                std::thread::sleep(Duration::from_millis(20));
            }
            child.try_wait().unwrap()
        };
        let mut status = wait_for_wrap(&mut child, 10);
        if status.is_none() {
            stalls += 1;
            let stalled = cmd_tree(wrap_pid);
            let threads = threads_of(wrap_pid);
            let in_the_tty = |seen: &Seen| seen.state == "S" && seen.wchan == "wait_woken";
            // wrap's key forwarder is either stuck in the tty too, or done with the keys and
            // waiting for more (the tty dropped what a full line could not hold).
            let idle = |seen: &Seen| seen.state == "S" && seen.wchan.starts_with("poll_schedule");
            let the_kernels_stall = stalled.iter().all(|p| p.state == "S")
                && stalled.last().is_some_and(in_the_tty)
                && threads
                    .iter()
                    .any(|t| t.comm == "wrap-input" && (in_the_tty(t) || idle(t)));
            if !the_kernels_stall {
                let _ = child.kill();
                let _ = child.wait();
                panic!(
                    "attempt {attempt}: wrap did not end in 10 s and CMD is not in the pty's \
                     stall; CMD: {stalled:?}; wrap's threads: {threads:?}"
                );
            }
            eprintln!("attempt {attempt}: CMD stalled in the pty, killed: {stalled:?}");
            for process in &stalled {
                let _ = Command::new("kill").args(["-KILL", &process.pid]).status();
            }
            status = wait_for_wrap(&mut child, 15);
            if status.is_none() {
                let threads = threads_of(wrap_pid);
                let _ = child.kill();
                let _ = child.wait();
                panic!(
                    "attempt {attempt}: wrap did not end in 15 s after CMD was killed; \
                     CMD was {stalled:?}; wrap's threads: {threads:?}"
                );
            }
        }
        // Our own typist may wait on the same full queue: emptied until it is out.
        while !typing.is_finished() {
            let _ = running.pty.discard_input();
            std::thread::sleep(Duration::from_millis(5));
        }
        typing.join().unwrap();
        drop(running.pty);
        let _ = running.reader.join();
    }
    // The keys themselves end CMD (a Ctrl-C, a Ctrl-D at a line's start) but for the kernel's
    // rare stall: most attempts must not need the kill.
    assert!(stalls <= 2, "{stalls} of 8 attempts needed CMD killed");
}

/// A process as a failure message shows it: its name, state (R, S, T, Z) and where in the
/// kernel it waits.
#[derive(Debug)]
#[allow(dead_code, reason = "read by the failure message's Debug")]
struct Seen {
    pid: String,
    comm: String,
    state: String,
    /// Where it sleeps in the kernel (readable by its owner).
    wchan: String,
    kernel_stack: Vec<String>,
}

fn seen(task: &std::path::Path, pid: String) -> Seen {
    let read = |f: &str| std::fs::read_to_string(task.join(f)).unwrap_or_default();
    let stat = read("stat");
    Seen {
        pid,
        comm: read("comm").trim().to_owned(),
        state: stat
            .rsplit(") ")
            .next()
            .and_then(|rest| rest.split(' ').next())
            .unwrap_or("")
            .to_owned(),
        wchan: read("wchan"),
        // Root only; empty otherwise.
        kernel_stack: read("stack")
            .lines()
            .take(4)
            .filter_map(|l| l.split_whitespace().nth(1).map(String::from))
            .collect(),
    }
}

/// Every thread of `pid`.
fn threads_of(pid: u32) -> Vec<Seen> {
    let tasks = std::fs::read_dir(format!("/proc/{pid}/task")).into_iter();
    tasks
        .flatten()
        .flatten()
        .map(|task| {
            seen(
                &task.path(),
                task.file_name().to_string_lossy().into_owned(),
            )
        })
        .collect()
}

/// Every descendant of `pid`, each before its children.
fn cmd_tree(pid: u32) -> Vec<Seen> {
    let children = |pid: &str| {
        let tasks = std::fs::read_dir(format!("/proc/{pid}/task")).into_iter();
        tasks
            .flatten()
            .flatten()
            .flat_map(|task| {
                let listed = std::fs::read_to_string(task.path().join("children"));
                let listed = listed.unwrap_or_default();
                listed
                    .split_whitespace()
                    .map(String::from)
                    .collect::<Vec<_>>()
            })
            .collect::<Vec<_>>()
    };
    let mut found = Vec::new();
    let mut queue = children(&pid.to_string());
    while let Some(pid) = queue.pop() {
        queue.extend(children(&pid));
        let task = std::path::PathBuf::from(format!("/proc/{pid}"));
        found.push(seen(&task, pid));
    }
    found
}

#[test]
fn wrap_counts_as_a_normal_user_and_without_path() {
    // /proc/PID/io of a finished child is closed to a normal user: wrap's counts come from its
    // own counters, so `nobody` gets them too.
    let reachable =
        rustix::process::geteuid().is_root() && std::path::Path::new("/usr/sbin/runuser").exists();
    if reachable {
        let (_dir, flushlab) = common::flushlab_for_anyone();
        let out = Command::new("runuser")
            .args(["-u", "nobody", "--"])
            .arg(&flushlab)
            .args([
                "wrap",
                "--duration",
                "5",
                "--size",
                "80x24",
                "--report",
                "-",
                "--",
            ])
            .args(["sh", "-c", "for i in 1 2 3 4 5 6 7 8; do printf x; done"])
            .current_dir("/")
            .output()
            .unwrap();
        let said = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(0), "{said}");
        let report: Value = serde_json::from_slice(&out.stdout).unwrap();
        assert!(
            report["tree_write_calls"].as_u64().unwrap() >= 8,
            "{report}"
        );
    } else {
        eprintln!("not root, or no runuser: not run as nobody");
    }
    // PATH empty: CMD by its path, and the pty's session still made.
    let out = Command::new(env!("CARGO_BIN_EXE_flushlab"))
        .args(["wrap", "--duration", "2", "--", "/bin/echo", "hi"])
        .env("PATH", "")
        .output()
        .unwrap();
    let said = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{said}");
    assert!(said.contains("wrap /bin/echo hi"), "{said}");
}

#[test]
fn a_report_to_dev_stdout_that_is_a_file_is_appended_not_renamed_over() {
    // `echo KEEP>log; flushlab wrap --report /dev/stdout -- true >>log`: the log keeps KEEP.
    let dir = common::scratch_dir("wrap-dev-stdout");
    let log = dir.join("log");
    std::fs::write(&log, b"KEEP\n").unwrap();
    for path in ["/dev/stdout", "/proc/self/fd/1"] {
        let status = Command::new(env!("CARGO_BIN_EXE_flushlab"))
            .args(["wrap", "--duration", "0.5", "--report", path, "--", "true"])
            .stdout(std::fs::OpenOptions::new().append(true).open(&log).unwrap())
            .status()
            .unwrap();
        assert_eq!(status.code(), Some(0), "{path}");
    }
    let text = std::fs::read_to_string(&log).unwrap();
    assert!(text.starts_with("KEEP\n"), "{text}");
    assert_eq!(text.matches("\"frame_method\"").count(), 2, "{text}");
    std::fs::remove_dir_all(dir).unwrap();
}

#[test]
fn wrap_stopped_as_a_job_gives_the_terminal_back_until_it_continues() {
    // bash with job control, as a user's shell: wrap is its foreground job, stopped by
    // `kill -TSTP`; bash's `fg` continues it 1.5 s later. (A session leader is never stopped:
    // nothing could continue it.)
    let script = "set -m; \"$0\" wrap -- sleep 20; sleep 1.5; fg";
    let running = common::start_program(
        std::path::Path::new("/bin/bash"),
        &[],
        &[
            "-c".as_ref(),
            script.as_ref(),
            env!("CARGO_BIN_EXE_flushlab").as_ref(),
        ],
    );
    let shell = running.child.id();
    let wrap = common::wait_for(Duration::from_secs(5), "wrap under bash", || {
        let children =
            std::fs::read_to_string(format!("/proc/{shell}/task/{shell}/children")).ok()?;
        let pid: i32 = children.split_whitespace().next()?.parse().ok()?;
        rustix::process::Pid::from_raw(pid)
    });
    let state = || {
        let stat = std::fs::read_to_string(format!("/proc/{}/stat", wrap.as_raw_nonzero()))
            .unwrap_or_default();
        stat.rsplit_once(')').map_or(' ', |(_, rest)| {
            rest.trim_start().chars().next().unwrap_or(' ')
        })
    };
    let cooked = |termios: &rustix::termios::Termios| {
        termios
            .local_modes
            .contains(rustix::termios::LocalModes::ICANON)
    };
    common::wait_for(Duration::from_secs(5), "wrap to take the terminal", || {
        (!cooked(&running.pty.slave_termios().unwrap())).then_some(())
    });
    rustix::process::kill_process(wrap, rustix::process::Signal::TSTP).unwrap();
    common::wait_for(Duration::from_secs(5), "wrap to stop", || {
        (state() == 'T').then_some(())
    });
    let stopped = running.pty.slave_termios().unwrap();
    assert!(cooked(&stopped), "left raw while stopped");
    common::wait_for(Duration::from_secs(5), "fg to continue wrap", || {
        (state() != 'T' && !cooked(&running.pty.slave_termios().unwrap())).then_some(())
    });
    rustix::process::kill_process(wrap, rustix::process::Signal::TERM).unwrap();
    let run = running.finish(Duration::from_secs(10));
    assert_eq!(run.code, Some(143));
    assert_eq!(
        run.termios_after.local_modes,
        run.termios_before.local_modes
    );
}

/// A status above 128+64 is the program's own, never a signal's (Linux's signals stop at 64):
/// ssh's 255 for a connection that ended read "ended by signal 127".
#[test]
fn a_status_no_signal_could_give_is_said_as_a_status() {
    for (script, said) in [
        ("exit 255", "exited with status 255"),
        ("kill -TERM $$", "was ended by signal 15"),
    ] {
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_flushlab"))
            .args(["wrap", "--duration", "5", "--", "sh", "-c", script])
            .stdin(std::process::Stdio::null())
            .output()
            .unwrap();
        let text = String::from_utf8_lossy(&out.stderr);
        assert!(text.contains(said), "{script}: {text}");
    }
}
