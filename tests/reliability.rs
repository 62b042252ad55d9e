//! flushlab's promises, tested the hard way: every way out of every writer mode restores the
//! terminal, resizes and switches by the thousand, bad input, stalled readers.

// A test is one story from setup to its last assertion: the length limit is for src/.

mod common;

use std::ffi::OsStr;
use std::io::{Read, Write};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::*;
use flushlab_core::sys::pty::{Pty, read_to_end};
use rustix::process::Signal;
use serde_json::Value;

const LIMIT: Duration = Duration::from_secs(20);

#[derive(Clone, Copy, Debug)]
enum WayOut {
    Key(&'static [u8]),
    Signal(Signal, i32),
    Panic,
}

const WAYS_OUT: [WayOut; 8] = [
    WayOut::Key(b"q"),
    WayOut::Key(b"\x1b"),
    WayOut::Key(b"\x03"),
    WayOut::Signal(Signal::INT, 2),
    WayOut::Signal(Signal::TERM, 15),
    WayOut::Signal(Signal::HUP, 1),
    WayOut::Signal(Signal::QUIT, 3),
    WayOut::Panic,
];

fn every_way_out(buffering: &str) {
    for stream in ["stdout", "stderr"] {
        for way in WAYS_OUT {
            let envs = [("STREAM", stream), ("BUFFERING", buffering)];
            let args: Vec<&OsStr> = match way {
                WayOut::Panic => vec!["--inject-panic-at-frame".as_ref(), "2".as_ref()],
                _ => vec![],
            };
            let running = start(&envs, &args);
            std::thread::sleep(Duration::from_millis(400));
            let expected = match way {
                WayOut::Key(key) => {
                    (&running.pty.master).write_all(key).unwrap();
                    0
                }
                WayOut::Signal(signal, number) => {
                    running.signal(signal);
                    128 + number
                }
                WayOut::Panic => 101,
            };
            let run = running.finish(LIMIT);
            assert_eq!(run.code, Some(expected), "{stream}/{buffering} {way:?}");
            assert_restored(&run);
        }
    }
}

#[test]
fn raw_restores_after_every_way_out() {
    every_way_out("raw");
}

#[test]
fn line_restores_after_every_way_out() {
    every_way_out("line");
}

#[test]
fn block_restores_after_every_way_out() {
    every_way_out("block");
}

#[test]
fn frame_restores_after_every_way_out() {
    every_way_out("frame");
}

#[test]
fn thread_restores_after_every_way_out() {
    every_way_out("thread");
}

#[test]
fn a_closed_pipe_ends_every_mode_with_exit_3() {
    for stream in ["stdout", "stderr"] {
        for buffering in ["raw", "line", "block", "frame", "thread"] {
            let mut command = Command::new(env!("CARGO_BIN_EXE_flushlab"));
            command
                .env("STREAM", stream)
                .env("BUFFERING", buffering)
                .env("DURATION", "30");
            command.stdout(Stdio::piped()).stderr(Stdio::piped());
            let mut child = command.spawn().unwrap();
            let (out, err) = (child.stdout.take().unwrap(), child.stderr.take().unwrap());
            let (mut measured, mut other): (Box<dyn Read>, Box<dyn Read>) = if stream == "stdout" {
                (Box::new(out), Box::new(err))
            } else {
                (Box::new(err), Box::new(out))
            };
            let mut first = [0u8; 512];
            measured.read_exact(&mut first).unwrap();
            drop(measured);
            let mut message = String::new();
            other.read_to_string(&mut message).unwrap();
            let status = child.wait().unwrap();
            assert_eq!(status.code(), Some(3), "{stream}/{buffering}: {message}");
            assert!(
                message.contains("went away"),
                "{stream}/{buffering}: {message}"
            );
        }
    }
}

/// A deterministic stream of sizes, corners included.
fn sizes() -> impl Iterator<Item = (u16, u16)> {
    let corners = [
        (1, 1),
        (0, 0),
        (500, 200),
        (1, 200),
        (500, 1),
        (0, 24),
        (80, 0),
    ];
    let mut seed = 0x2545_f491_u32;
    (0..1000).map(move |i| {
        if i % 10 == 0 {
            return corners[(i / 10) % corners.len()];
        }
        seed ^= seed << 13;
        seed ^= seed >> 17;
        seed ^= seed << 5;
        ((seed % 501) as u16, ((seed >> 9) % 201) as u16)
    })
}

#[test]
fn a_thousand_resizes() {
    for buffering in ["frame", "line"] {
        let report = scratch(&format!("resizes-{buffering}.json"));
        let running = start(
            &[("BUFFERING", buffering), ("SCENE", "sparse")],
            &["--report".as_ref(), report.as_os_str()],
        );
        std::thread::sleep(Duration::from_millis(300));
        for (cols, rows) in sizes() {
            running.pty.resize(cols, rows).unwrap();
            std::thread::sleep(Duration::from_micros(500));
        }
        running.pty.resize(100, 30).unwrap();
        std::thread::sleep(Duration::from_millis(500));
        (&running.pty.master).write_all(b"q").unwrap();
        let run = running.finish(LIMIT);
        assert_eq!(
            run.code,
            Some(0),
            "{buffering}: {}",
            String::from_utf8_lossy(&run.output[run.output.len().saturating_sub(2000)..])
        );
        assert_restored(&run);
        let report: Value = serde_json::from_slice(&std::fs::read(&report).unwrap()).unwrap();
        assert_eq!(
            (report["cols"].as_u64(), report["rows"].as_u64()),
            (Some(100), Some(30)),
            "the frame did not follow the size"
        );
        assert!(report["total_frames"].as_u64().unwrap() > 0);
    }
}

fn open_fds(pid: u32) -> usize {
    std::fs::read_dir(format!("/proc/{pid}/fd"))
        .unwrap()
        .count()
}

#[test]
fn ten_thousand_switches_lose_nothing() {
    let report = scratch("switches.json");
    let running = start(
        &[("SCENE", "sparse")],
        &["--report".as_ref(), report.as_os_str()],
    );
    std::thread::sleep(Duration::from_millis(400));
    let pid = running.child.id();
    let fds_before = open_fds(pid);
    // 100 bursts of 100 spaces, so that frames are rendered between switches.
    for _ in 0..100 {
        (&running.pty.master).write_all(&[b' '; 100]).unwrap();
        std::thread::sleep(Duration::from_millis(10));
    }
    // Some modes hold one more descriptor (the dup of stdout) while they are current: wait for
    // the keys to be worked through and the count to settle back. A leak never would.
    let settled = Instant::now();
    let mut fds_after = open_fds(pid);
    while fds_after != fds_before && settled.elapsed() < Duration::from_secs(10) {
        std::thread::sleep(Duration::from_millis(50));
        fds_after = open_fds(pid);
    }
    for fd in [1, 2] {
        assert!(
            Path::new(&format!("/proc/{pid}/fd/{fd}")).exists(),
            "fd {fd} closed"
        );
    }
    (&running.pty.master).write_all(b"q").unwrap();
    let run = running.finish(LIMIT);
    assert_eq!(run.code, Some(0));
    assert_restored(&run);
    assert_eq!(fds_before, fds_after, "file descriptors leaked");
    let report: Value = serde_json::from_slice(&std::fs::read(&report).unwrap()).unwrap();
    let modes = report["modes"].as_array().unwrap();
    assert_eq!(modes.len(), 10, "every mode visited");
    let counted: u64 = modes.iter().map(|m| m["frames"].as_u64().unwrap()).sum();
    assert_eq!(
        counted,
        report["total_frames"].as_u64().unwrap(),
        "frames lost from the stats"
    );
    // 10,000 is a multiple of 10: back on the first mode, still drawing through fd 1.
    assert_eq!(report["mode"], "stdout/line");
    let (last_frame, _) = screens(&run.output);
    assert!(
        last_frame.contains("flushlab · stdout/line"),
        "{last_frame}"
    );
    // The summaries went to fd 2 after the run.
    let text = String::from_utf8_lossy(&run.output);
    assert!(text.matches(" frames in ").count() >= 10);
}

#[test]
fn bad_input_is_one_line_exit_2_and_leaves_the_terminal_alone() {
    let vars = flushlab::commands::run::RunArgs::env_vars();
    assert!(vars.len() >= 11, "{vars:?}");
    let values: [&[u8]; 5] = [b"", b"bogus", b"-1", b"99999999999999999999", b"\xff\xfe"];
    for var in &vars {
        for value in values {
            let value = std::ffi::OsStr::from_bytes_lossless(value);
            let pty = Pty::open(COLS, ROWS).unwrap();
            let before = pty.slave_termios().unwrap();
            let mut child = pty
                .spawn(Path::new(env!("CARGO_BIN_EXE_flushlab")), |cmd| {
                    cmd.env(var, value);
                })
                .unwrap();
            let mut output = Vec::new();
            read_to_end(&pty.master, |b| output.extend_from_slice(b)).unwrap();
            let status = child.wait().unwrap();
            let text = String::from_utf8_lossy(&output);
            assert_eq!(status.code(), Some(2), "{var}={value:?}: {text}");
            assert_eq!(text.trim().lines().count(), 1, "{var}={value:?}: {text}");
            assert!(text.contains(var), "{var}={value:?} not named: {text}");
            assert!(
                !output.contains(&0x1b),
                "{var}={value:?} wrote escape sequences: {text:?}"
            );
            assert_eq!(before.local_modes, pty.slave_termios().unwrap().local_modes);
        }
    }
}

trait FromBytes {
    fn from_bytes_lossless(bytes: &[u8]) -> &OsStr;
}

impl FromBytes for OsStr {
    fn from_bytes_lossless(bytes: &[u8]) -> &OsStr {
        std::os::unix::ffi::OsStrExt::from_bytes(bytes)
    }
}

#[test]
fn a_stalled_reader_still_lets_q_quit() {
    for buffering in ["raw", "frame"] {
        let (pty, mut child) = start_stalled(buffering);
        // The reader stops for 5 s: the pty fills and flushlab blocks in write(2).
        std::thread::sleep(Duration::from_secs(5));
        (&pty.master).write_all(b"q").unwrap();
        let resumed = Instant::now();
        let master = pty.master.try_clone().unwrap();
        let reader = std::thread::spawn(move || read_to_end(&master, |_| {}));
        let status = loop {
            if let Some(status) = child.try_wait().unwrap() {
                break status;
            }
            assert!(
                resumed.elapsed() < LIMIT,
                "{buffering}: q did not quit after the reader resumed"
            );
            std::thread::sleep(Duration::from_millis(5));
        };
        eprintln!(
            "{buffering}: quit {:?} after the reader resumed",
            resumed.elapsed()
        );
        reader.join().unwrap().unwrap();
        assert_eq!(status.code(), Some(0), "{buffering}");
    }
}

#[test]
fn the_bench_kills_and_reports_a_run_stalled_by_its_reader() {
    let json = scratch("stalled-bench.json");
    let out = quick_bench(
        &json,
        &["--modes", "stdout/frame", "--reader", "throttle:1KB/s"],
    );
    assert_eq!(
        out.status.code(),
        Some(1),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let results = read_json(&json);
    let failure = &results["results"][0]["failed_runs"][0];
    assert!(
        failure["reason"].as_str().unwrap().contains("hung"),
        "{failure}"
    );
}

/// Sends SIGTERM to `child` and returns its exit code and how long it took to exit.
fn terminate(child: &mut std::process::Child, limit: Duration) -> (Option<i32>, Duration) {
    let pid = rustix::process::Pid::from_child(child);
    rustix::process::kill_process(pid, rustix::process::Signal::TERM).unwrap();
    let sent = Instant::now();
    let status = wait_for(limit, "no exit after SIGTERM", || child.try_wait().unwrap());
    (status.code(), sent.elapsed())
}

#[test]
fn a_stalled_reader_does_not_hold_a_signal_hostage() {
    // A pipe nobody reads: every writer blocks in write(2) once the pipe is full.
    type Run<'a> = (String, Vec<&'a str>, Vec<(&'a str, &'a str)>);
    let runs: Vec<Run> = ["raw", "line", "frame", "thread"]
        .into_iter()
        .map(|b| {
            (
                format!("stdout/{b}"),
                vec![],
                vec![("STREAM", "stdout"), ("BUFFERING", b), ("DURATION", "30")],
            )
        })
        .chain([
            (
                "flood println".to_owned(),
                vec!["flood", "--duration", "30"],
                vec![],
            ),
            (
                "flood thread".to_owned(),
                vec!["flood", "--duration", "30", "--writer", "thread"],
                vec![],
            ),
        ])
        .collect();
    for (what, args, envs) in runs {
        let mut child = Command::new(env!("CARGO_BIN_EXE_flushlab"))
            .args(&args)
            .envs(envs)
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        // Long enough for the pipe (64 KiB) to fill many times over.
        std::thread::sleep(Duration::from_millis(800));
        let (code, took) = terminate(&mut child, Duration::from_secs(5));
        assert_eq!(code, Some(143), "{what}");
        assert!(took < Duration::from_secs(2), "{what}: {took:?}");
    }
}

#[test]
fn a_stalled_terminal_does_not_hold_a_signal_hostage_and_gets_its_mode_back() {
    for buffering in ["raw", "thread"] {
        let (pty, mut child) = start_stalled(buffering);
        // Cooked, as the kernel makes a new pty: what flushlab must give back.
        let before = Pty::open(COLS, ROWS).unwrap().slave_termios().unwrap();
        // Nobody reads the terminal any more: flushlab blocks in write(2), in raw mode.
        std::thread::sleep(Duration::from_millis(800));
        let (code, took) = terminate(&mut child, Duration::from_secs(5));
        assert_eq!(code, Some(143), "{buffering}");
        assert!(took < Duration::from_secs(2), "{buffering}: {took:?}");
        let after = pty.slave_termios().unwrap();
        assert_eq!(after.local_modes, before.local_modes, "{buffering}");
        assert_eq!(after.input_modes, before.input_modes, "{buffering}");
    }
}

/// How a run's stdout or stderr fails.
#[derive(Clone, Copy, Debug)]
enum Broken {
    /// Every write fails with ENOSPC.
    Full,
    /// A pipe whose reader has gone: EPIPE.
    Closed,
}

fn broken(how: Broken) -> (Stdio, Option<std::io::PipeReader>) {
    match how {
        Broken::Full => (
            std::fs::OpenOptions::new()
                .write(true)
                .open("/dev/full")
                .unwrap()
                .into(),
            None,
        ),
        Broken::Closed => {
            let (reader, writer) = std::io::pipe().unwrap();
            (writer.into(), Some(reader))
        }
    }
}

/// A command line and its environment.
type Case<'a> = (Vec<&'a str>, Vec<(&'a str, &'a str)>);

/// Every subcommand once, and the explorer headless in each stream and buffering.
fn every_subcommand() -> Vec<Case<'static>> {
    let profile = "tests/fixtures/profiles/stderr-raw.json.gz";
    let tour = "tests/fixtures/tours/tmux.json";
    let quick = [("DURATION", "0.3"), ("SIZE", "80x24")];
    vec![
        (vec!["profile", profile], vec![]),
        (vec!["profile", "--json", profile], vec![]),
        (vec!["report", tour], vec![]),
        (vec!["flood", "--lines", "20000"], vec![]),
        (
            vec!["flood", "--writer", "eprintln", "--lines", "20000"],
            vec![],
        ),
        (
            vec!["flood", "--writer", "thread", "--lines", "20000"],
            vec![],
        ),
        (
            vec![
                "bench",
                "--duration",
                "0.2",
                "--runs",
                "1",
                "--warmup",
                "0",
                "--modes",
                "stdout/frame",
                "--size",
                "80x24",
            ],
            vec![],
        ),
        (vec!["--help"], vec![]),
        (vec!["--no-such-flag"], vec![]),
        (vec!["profile", "no-such-file.json.gz"], vec![]),
    ]
    .into_iter()
    .chain(
        ["raw", "line", "block", "frame", "thread"]
            .into_iter()
            .flat_map(|b| {
                ["stdout", "stderr"].map(|s| {
                    let mut envs = quick.to_vec();
                    envs.extend([("STREAM", s), ("BUFFERING", b)]);
                    (vec![], envs)
                })
            }),
    )
    .collect()
}

#[test]
fn a_failing_stream_never_panics_in_any_subcommand() {
    let cases = every_subcommand();
    let mut tried = 0;
    for (args, envs) in &cases {
        for how in [Broken::Full, Broken::Closed] {
            for failing_stdout in [true, false] {
                let (failing, reader) = broken(how);
                drop(reader); // a closed pipe: its reader is gone before the first write
                let (mut other, witness) = std::io::pipe().unwrap();
                let mut command = Command::new(env!("CARGO_BIN_EXE_flushlab"));
                command.args(args).envs(envs.iter().copied());
                if failing_stdout {
                    command.stdout(failing).stderr(witness);
                } else {
                    command.stdout(witness).stderr(failing);
                }
                let mut child = command.spawn().unwrap();
                drop(command);
                let said = std::thread::spawn(move || {
                    let mut text = String::new();
                    let _ = other.read_to_string(&mut text);
                    text
                });
                let what = format!(
                    "{args:?} {envs:?}, {} {how:?}",
                    if failing_stdout { "stdout" } else { "stderr" }
                );
                let status = wait_for(LIMIT, &what, || child.try_wait().unwrap());
                let said = said.join().unwrap();
                assert_ne!(status.code(), Some(101), "{what}: {said}");
                assert!(status.code().is_some(), "{what}: {status:?} {said}");
                assert!(!said.contains("panicked"), "{what}: {said}");
                tried += 1;
            }
        }
    }
    assert_eq!(tried, cases.len() * 4);
}

#[test]
fn completion_scripts_are_generated_for_every_shell() {
    for (shell, mark) in [
        ("bash", "complete -F"),
        ("zsh", "#compdef flushlab"),
        ("fish", "complete -c flushlab"),
        ("elvish", "flushlab"),
        ("powershell", "flushlab"),
    ] {
        let out = Command::new(env!("CARGO_BIN_EXE_flushlab"))
            .args(["completions", shell])
            .output()
            .unwrap();
        assert!(out.status.success(), "{shell}");
        let script = String::from_utf8(out.stdout).unwrap();
        assert!(script.contains(mark), "{shell}");
        // Every subcommand is offered.
        for sub in ["bench", "tour", "flood", "profile", "report"] {
            assert!(script.contains(sub), "{shell} lacks {sub}");
        }
        // And, where the shell's generator completes values (bash, zsh, fish), the real values
        // of the free-form flags, not file names: modes, readers (zsh escapes the colon of
        // `throttle:2MB/s`), sinks.
        if ["bash", "zsh", "fish"].contains(&shell) {
            for value in ["stdout/thread", "flood/per-byte", "2MB/s", "pipe"] {
                assert!(script.contains(value), "{shell} lacks {value}");
            }
        }
    }
    let bad = Command::new(env!("CARGO_BIN_EXE_flushlab"))
        .args(["completions", "tcsh"])
        .output()
        .unwrap();
    assert_eq!(bad.status.code(), Some(2));
}

/// Whether this test run can run flushlab as `nobody` (root, util-linux's runuser, and a build
/// `nobody` can reach: not under a root's home).
fn nobody_can_run_flushlab() -> bool {
    rustix::process::geteuid().is_root()
        && std::path::Path::new("/usr/sbin/runuser").exists()
        && Command::new("runuser")
            .args(["-u", "nobody", "--", "test", "-x"])
            .arg(env!("CARGO_BIN_EXE_flushlab"))
            .status()
            .is_ok_and(|s| s.success())
}

/// A thread that cannot be started (RLIMIT_NPROC, counted per user: root is exempt, so the
/// runs are `nobody`'s) is an error with one line, never a panic — at every spawn point: each
/// limit from 1 to 8 tasks stops the command at a different one.
#[test]
fn a_thread_that_cannot_start_is_an_error_not_a_panic() {
    if !nobody_can_run_flushlab() {
        eprintln!("skipped: needs root, runuser and a build nobody can reach");
        return;
    }
    type Case<'a> = (&'a [&'a str], &'a [(&'a str, &'a str)]);
    let cases: [Case; 5] = [
        (&["flood", "--writer", "thread", "--lines", "1000"], &[]),
        (
            &[
                "flood",
                "--writer",
                "tracing-non-blocking",
                "--lines",
                "1000",
            ],
            &[],
        ),
        (
            &["wrap", "--duration", "0.3", "--size", "80x24", "--", "true"],
            &[],
        ),
        (
            &[
                "bench",
                "--duration",
                "0.2",
                "--runs",
                "1",
                "--warmup",
                "0",
                "--modes",
                "stdout/frame",
                "--size",
                "80x24",
                "--sink",
                "pipe",
            ],
            &[],
        ),
        (
            &[],
            &[
                ("DURATION", "0.2"),
                ("SIZE", "80x24"),
                ("BUFFERING", "thread"),
            ],
        ),
    ];
    for (args, envs) in cases {
        for tasks in 1..=8 {
            let out = Command::new("runuser")
                .args(["-u", "nobody", "--", "prlimit"])
                .arg(format!("--nproc={tasks}"))
                .arg("--")
                .arg(env!("CARGO_BIN_EXE_flushlab"))
                .args(args)
                .envs(envs.iter().copied())
                .stdin(Stdio::null())
                .output()
                .unwrap();
            let said = String::from_utf8_lossy(&out.stderr);
            let what = format!("{args:?} {envs:?} with {tasks} tasks");
            assert!(
                matches!(out.status.code(), Some(0 | 1)),
                "{what}: {:?} {said}",
                out.status
            );
            assert!(!said.contains("panicked"), "{what}: {said}");
            // The line says what could not start: a thread by its name, CMD, or a run.
            assert!(
                out.status.success() || said.contains("could not start"),
                "{what}: {said}"
            );
        }
    }
}

/// An address-space limit (RLIMIT_AS, which root is held to too) too small to run in: said in
/// words that name it, never an abort (Rust aborts on a failed allocation; the release build
/// did at 16 MiB). Above the least, a run goes. (Below about 17 MiB the dynamic loader itself
/// cannot map the debug build with libc — its segments are 12.8 MB since the kernel observer's
/// loader, aya, came in — and says so before any of flushlab's code runs: 20 MiB is the
/// smallest limit flushlab can speak at.)
#[test]
fn a_memory_limit_is_said_in_words_naming_it() {
    let wrap = |mib: u64| {
        Command::new("prlimit")
            .arg(format!("--as={}", mib << 20))
            .arg("--")
            .arg(env!("CARGO_BIN_EXE_flushlab"))
            .args(["wrap", "--keys", "j*3@20ms q", "--", "cat"])
            .stdin(Stdio::null())
            .output()
            .unwrap()
    };
    for mib in [20, 40] {
        let out = wrap(mib);
        let said = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{mib} MiB: {said}");
        assert_eq!(said.lines().count(), 1, "{said}");
        assert!(
            said.contains(&format!("ulimit -v, RLIMIT_AS) is {mib} MiB")),
            "{said}"
        );
    }
    let out = wrap(64);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// A mistyped flag or subcommand is one line that keeps clap's suggestion and says where more
/// help is (the subcommand's own --help); a setting that came from the environment is named
/// in the summary, so that an exported `SIZE` never changes a run silently.
#[test]
fn usage_errors_suggest_and_environment_settings_are_named() {
    let run = |args: &[&str], envs: &[(&str, &str)]| {
        std::process::Command::new(env!("CARGO_BIN_EXE_flushlab"))
            .args(args)
            .envs(envs.iter().copied())
            .stdin(std::process::Stdio::null())
            .output()
            .unwrap()
    };
    for (args, suggestion, help) in [
        (&["--sise", "3"][..], "'--size'", "'flushlab --help'"),
        (&["bnech"], "'bench'", "'flushlab --help'"),
        (
            &["bench", "--sink", "bogus"],
            "pty, pipe, file, null",
            "'flushlab bench --help'",
        ),
    ] {
        let out = run(args, &[]);
        let said = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {said}");
        assert_eq!(said.trim().lines().count(), 1, "{args:?}: {said}");
        assert!(said.contains(suggestion), "{args:?}: {said}");
        assert!(said.contains(&format!("try {help}")), "{args:?}: {said}");
    }
    let out = run(
        &["--duration", "0.2"],
        &[("SIZE", "40x10"), ("HUD", "compact")],
    );
    let summary = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{summary}");
    assert!(
        summary.contains("settings from the environment: SIZE=40x10, HUD=compact"),
        "{summary}"
    );
    let out = run(&["--duration", "0.2", "--size", "40x10"], &[]);
    assert!(!String::from_utf8_lossy(&out.stderr).contains("environment"));
}
