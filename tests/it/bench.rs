//! `flushlab bench` end to end: real children in real ptys.

// A test is one story from setup to its last assertion: the length limit is for src/.

use crate::common;

use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::sync::atomic::AtomicUsize;
use std::time::Duration;

use flushlab::commands::bench::executor::{RunSpec, run_once};
use flushlab_core::results::conditions::{ReaderModel, Sink};
use flushlab_core::subject::Subject;
use flushlab_core::writer_mode::{Buffering, Stream};
use serde_json::Value;

use common::{bench, quick_bench, read_json, scratch_dir as scratch, wait_for};

#[test]
fn two_modes_end_to_end() {
    let dir = scratch("e2e");
    let json = dir.join("results.json");
    let markdown = dir.join("results.md");
    let out = quick_bench(
        &json,
        &[
            "--modes",
            "stdout/raw,stdout/block",
            "--export-markdown",
            markdown.to_str().unwrap(),
        ],
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    for mode in ["| stdout/raw ", "| stdout/block:8KiB "] {
        assert!(stdout.contains(mode), "{mode} missing:\n{stdout}");
    }
    assert_eq!(std::fs::read_to_string(&markdown).unwrap(), stdout);
    let results: Value = read_json(&json);
    let rows = results["results"].as_array().unwrap();
    assert_eq!(rows.len(), 2);
    for row in rows {
        assert_eq!(row["size"], "80x24");
        assert_eq!(row["reader"], "drain");
        assert!(row["runs"][0]["frames"].as_u64().unwrap() > 0, "{row}");
        assert!(
            row["runs"][0]["reader_bytes"].as_u64().unwrap() > 0,
            "{row}"
        );
        // The reader thread's CPU, as the kernel accounts it: some, and no more than one core
        // for the run's life (its duration, and a second to start and end).
        let run = &row["runs"][0];
        let reader_cpu = run["reader_cpu_seconds"].as_f64().unwrap();
        let seconds = run["seconds"].as_f64().unwrap();
        assert!(0.0 < reader_cpu && reader_cpu < seconds + 1.0, "{row}");
        assert!(
            row["reader_cpu_ms_per_frame"].as_f64().unwrap() > 0.0,
            "{row}"
        );
        // The whole machine's busy time (/proc/stat, sampled in ticks) holds at least what the
        // child and the reader used (getrusage), give or take a few ticks on each CPU.
        let child_cpu =
            run["user_seconds"].as_f64().unwrap() + run["kernel_seconds"].as_f64().unwrap();
        let machine = run["machine_busy_seconds"].as_f64().unwrap();
        assert!(
            machine >= child_cpu + reader_cpu - 0.1,
            "machine {machine} s, child {child_cpu} s, reader {reader_cpu} s"
        );
        assert!(
            row["machine_cpu_ms_per_frame"].as_f64().unwrap() > 0.0,
            "{row}"
        );
    }
    let writes = |i: usize| rows[i]["writes_per_frame"].as_f64().unwrap();
    assert!(
        writes(0) > writes(1),
        "raw {} vs block {}",
        writes(0),
        writes(1)
    );
    assert!(results["machine"]["cores"].as_u64().unwrap() >= 1);
    std::fs::remove_dir_all(dir).unwrap();
}

#[test]
fn other_sinks_measure_the_same_frames() {
    for sink in ["pipe", "file", "null"] {
        let dir = scratch(sink);
        let json = dir.join("results.json");
        let out = quick_bench(&json, &["--modes", "stderr/frame", "--sink", sink]);
        assert!(
            out.status.success(),
            "{sink}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let results: Value = read_json(&json);
        let row = &results["results"][0];
        assert_eq!(row["sink"], sink);
        assert!(row["runs"][0]["frames"].as_u64().unwrap() > 0, "{row}");
        // Only a pipe has a reader whose CPU the bench could count.
        let reader_cpu = row["runs"][0].get("reader_cpu_seconds");
        assert_eq!(reader_cpu.is_some(), sink == "pipe", "{row}");
        assert_eq!(
            row["writes_per_frame"].as_f64().unwrap().round(),
            1.0,
            "{row}"
        );
        std::fs::remove_dir_all(dir).unwrap();
    }
}

#[test]
fn bad_input_is_refused_before_anything_runs() {
    let dir = scratch("bad");
    let unwritable = dir.join("missing-dir").join("out.json");
    for args in [
        vec!["--modes", "stdout/fast"],
        vec!["--runs", "0"],
        vec!["--size", "0x0"],
        vec!["--reader", "throttle:fast"],
        vec!["--duration", "-1"],
        vec!["--export-json", unwritable.to_str().unwrap()],
        vec!["--wait", "nap"],
        vec!["--workload", "flood", "--wait", "poll"],
    ] {
        let out = bench(&args);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
        assert!(out.stdout.is_empty(), "{args:?}");
    }
    assert!(
        std::fs::read_dir(&dir).unwrap().next().is_none(),
        "something was left behind"
    );
    std::fs::remove_dir_all(dir).unwrap();
}

fn spec(binary: PathBuf, dir: PathBuf) -> RunSpec {
    RunSpec {
        binary,
        subject: Subject::Mode(Stream::Stdout, Buffering::Frame),
        capacity: 8192,
        scene: flushlab_core::scene::Scene::Full,
        sync: false,
        backend: flushlab_core::backend::BackendKind::Crossterm,
        wait: flushlab_core::wait::Wait::Sleep,
        size: (80, 24),
        duration: Duration::from_millis(100),
        sink: Sink::Pty,
        reader: ReaderModel::Drain,
        scratch: dir,
        grace: Duration::from_millis(500),
        work: None,
        rate: None,
        keys: None,
    }
}

fn script(dir: &std::path::Path, body: &str) -> PathBuf {
    use std::os::unix::fs::PermissionsExt;
    let path = dir.join("child.sh");
    std::fs::write(&path, format!("#!/bin/sh\n{body}\n")).unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    path
}

#[test]
fn a_crashing_child_is_a_failed_run_with_its_output() {
    let dir = scratch("crash");
    let failure = run_once(
        &spec(
            script(&dir, "echo 'something broke' >&2; exit 7"),
            dir.to_path_buf(),
        ),
        &AtomicUsize::new(0),
    )
    .unwrap_err();
    assert!(failure.reason.contains("exit status: 7"), "{failure:?}");
    assert!(failure.output.contains("something broke"), "{failure:?}");
    std::fs::remove_dir_all(dir).unwrap();
}

#[test]
fn a_hanging_child_is_killed_after_the_grace() {
    let dir = scratch("hang");
    let start = std::time::Instant::now();
    let failure = run_once(
        &spec(script(&dir, "exec sleep 60"), dir.to_path_buf()),
        &AtomicUsize::new(0),
    )
    .unwrap_err();
    assert!(failure.reason.contains("hung"), "{failure:?}");
    assert!(start.elapsed() < Duration::from_secs(30));
    std::fs::remove_dir_all(dir).unwrap();
}

#[test]
#[cfg_attr(
    not(feature = "slow-tests"),
    ignore = "slow tier (3 s): cargo test --features slow-tests"
)]
fn the_flood_workload_runs_writers_across_sinks() {
    let dir = scratch("flood");
    let json = dir.join("results.json");
    let out = quick_bench(
        &json,
        &[
            "--workload",
            "flood",
            "--modes",
            "flood/println,flood/block",
            "--sink",
            "pty,pipe,null",
        ],
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(stdout.contains("lines/s median"), "{stdout}");
    let results: Value = read_json(&json);
    assert_eq!(results["settings"]["unit"], "line");
    let rows = results["results"].as_array().unwrap();
    assert_eq!(rows.len(), 6);
    for row in rows {
        assert!(row["runs"][0]["frames"].as_u64().unwrap() > 0, "{row}");
        let writes = row["writes_per_frame"].as_f64().unwrap();
        match row["mode"].as_str().unwrap() {
            "flood/println" => assert!((0.99..1.05).contains(&writes), "{row}"),
            "flood/block" => assert!(writes < 0.05, "{row}"),
            other => panic!("unexpected row {other}"),
        }
    }
    let sinks: Vec<&str> = rows.iter().map(|r| r["sink"].as_str().unwrap()).collect();
    assert_eq!(sinks, ["pty", "pty", "pipe", "pipe", "null", "null"]);
    let wrong = bench(&["--workload", "flood", "--modes", "stdout/raw"]);
    assert_eq!(wrong.status.code(), Some(2));
    std::fs::remove_dir_all(dir).unwrap();
}

#[test]
fn ctrl_c_stops_the_bench_and_keeps_what_it_measured() {
    let dir = scratch("interrupt");
    let tmp = dir.join("tmp");
    std::fs::create_dir_all(&tmp).unwrap();
    let json = dir.join("results.json");
    let child = Command::new(env!("CARGO_BIN_EXE_flushlab"))
        .args(["bench", "--modes", "stdout/block,stdout/frame"])
        .args(["--duration", "0.3", "--runs", "1000", "--warmup", "0"])
        .args(["--size", "80x24", "--export-json"])
        .arg(&json)
        .env("TMPDIR", &tmp)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let counted = || -> usize {
        std::fs::read(&json)
            .ok()
            .and_then(|bytes| serde_json::from_slice::<Value>(&bytes).ok())
            .map_or(0, |r| {
                r["results"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|row| row["runs"].as_array().unwrap().len())
                    .sum()
            })
    };
    wait_for(Duration::from_secs(120), "no runs", || {
        (counted() >= 3).then_some(())
    });
    let pid = rustix::process::Pid::from_child(&child);
    rustix::process::kill_process(pid, rustix::process::Signal::INT).unwrap();
    let out = child.wait_with_output().unwrap();
    let (stdout, stderr) = (
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
    );
    assert_eq!(out.status.code(), Some(130), "{stdout}\n{stderr}");
    assert!(stderr.contains("interrupted after"), "{stderr}");
    assert!(stdout.contains("| stdout/block:8KiB "), "{stdout}");
    // The run the signal cut short is neither counted nor a failure.
    let results: Value = read_json(&json);
    let runs = counted();
    assert!((3..1000).contains(&runs), "{runs} runs");
    for row in results["results"].as_array().unwrap() {
        assert!(row["failed_runs"].as_array().unwrap().is_empty(), "{row}");
    }
    assert_eq!(std::fs::read_dir(&tmp).unwrap().count(), 0, "scratch left");
    std::fs::remove_dir_all(dir).unwrap();
}

#[test]
fn the_transport_ceiling_writes_the_frames_the_modes_write() {
    let dir = scratch("transport");
    let json = dir.join("results.json");
    let out = quick_bench(&json, &["--modes", "ceiling/transport,stdout/frame"]);
    assert!(out.status.success(), "{out:?}");
    let results: Value = read_json(&json);
    let bytes = |mode: &str| {
        results["results"]
            .as_array()
            .unwrap()
            .iter()
            .find(|row| row["mode"] == mode)
            .and_then(|row| row["bytes_per_frame"].as_f64())
            .unwrap_or_else(|| panic!("no {mode} row: {results}"))
    };
    // A ceiling with heavier frames than the modes' would be one they could beat.
    let (transport, frame) = (bytes("ceiling/transport"), bytes("stdout/frame"));
    assert!(
        (transport / frame - 1.0).abs() < 0.05,
        "transport {transport} B vs stdout/frame {frame} B per frame"
    );
    std::fs::remove_dir_all(dir).unwrap();
}

/// `--wait poll`: every byte of every frame reaches the reader (the bench's own count, from
/// the pty's other side), in write(2) calls (the kernel's count) of at most 4 KiB, and the
/// results say how the writers waited.
#[test]
fn a_polling_writer_loses_no_byte_and_writes_what_a_pty_takes() {
    let dir = scratch("wait");
    let json = dir.join("results.json");
    let out = quick_bench(
        &json,
        &["--modes", "stdout/frame,stdout/thread", "--wait", "poll"],
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{stdout}\n{out:?}");
    assert!(
        stdout.contains("writers poll 100 µs for room, then sleep"),
        "{stdout}"
    );
    let results: Value = read_json(&json);
    assert_eq!(results["settings"]["wait"], "poll");
    let rows = results["results"].as_array().unwrap();
    assert_eq!(rows.len(), 2);
    for row in rows {
        let run = &row["runs"][0];
        let frames = run["frames"].as_f64().unwrap();
        let frame = run["bytes_per_frame"].as_f64().unwrap();
        let read = run["reader_bytes"].as_f64().unwrap();
        assert!(frames > 0.0 && frame > 8192.0, "{row}");
        // What the session writes besides the frames (the screen's setup and restore) is a few
        // hundred bytes.
        assert!(
            read >= frames * frame && read - frames * frame < 4096.0,
            "{}: read {read} B of {frames} frames of {frame} B",
            row["mode"]
        );
        let writes = run["writes_per_frame"].as_f64().unwrap();
        let chunks = (frame / 4096.0).ceil();
        assert!(
            (writes - chunks).abs() <= 1.0,
            "{}: {writes} write(2) a frame of {frame} B, not {chunks} of 4 KiB",
            row["mode"]
        );
    }
    std::fs::remove_dir_all(dir).unwrap();
}

/// The explorer's HUD shows writers that sleep: it refuses another wait in one line.
#[test]
fn the_explorer_refuses_a_wait_it_would_not_show() {
    let run = common::run_in_pty(&[], &["--wait", "spin"], Duration::from_secs(20));
    assert_eq!(run.code, Some(2));
    let said = String::from_utf8_lossy(&run.output);
    assert!(
        said.contains("--wait spin") && said.contains("give --duration"),
        "{said}"
    );
    // Refused before the terminal was taken: nothing to restore, nothing changed.
    assert!(!said.contains("\x1b[?1049h"), "{said}");
    assert_eq!(
        run.termios_before.local_modes,
        run.termios_after.local_modes
    );
}

/// The children of this process, by /proc's parent field.
fn children_of(pid: u32) -> Vec<u32> {
    std::fs::read_dir("/proc")
        .unwrap()
        .filter_map(|e| e.ok()?.file_name().to_str()?.parse::<u32>().ok())
        .filter(|child| {
            std::fs::read_to_string(format!("/proc/{child}/stat")).is_ok_and(|stat| {
                // pid (comm) state ppid …: the fields after the last ')'.
                let after = stat.rsplit_once(')').map_or("", |(_, rest)| rest);
                after.split_whitespace().nth(1) == Some(&pid.to_string())
            })
        })
        .collect()
}

/// Alive and not a zombie.
fn running(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|stat| {
        let after = stat.rsplit_once(')').map_or("", |(_, rest)| rest);
        after.split_whitespace().next() != Some("Z")
    })
}

/// A bench killed with SIGKILL cannot kill its child; the child (writing to /dev/null, so no
/// hang-up ever reaches it) notices within a second that its parent is gone, and stops; and
/// the bench's scratch directory (where the child's report goes) is gone within 5 s, removed by
/// its sweeper.
#[test]
fn a_child_does_not_outlive_a_killed_bench() {
    let tmp = common::scratch_dir("killed-bench-tmp");
    let mut bench = Command::new(env!("CARGO_BIN_EXE_flushlab"))
        .args(["bench", "--modes", "stdout/line", "--sink", "null"])
        .args(["--duration", "30", "--runs", "1", "--warmup", "0"])
        .env("TMPDIR", &*tmp)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let child = wait_for(Duration::from_secs(10), "no child started", || {
        children_of(bench.id()).into_iter().find(|&pid| {
            std::fs::read_to_string(format!("/proc/{pid}/comm")).is_ok_and(|c| c.trim() != "sh")
        })
    });
    std::thread::sleep(Duration::from_millis(500));
    let scratch = || -> Vec<String> {
        std::fs::read_dir(&*tmp)
            .unwrap()
            .flatten()
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .filter(|name| name.starts_with("flushlab-bench-"))
            .collect()
    };
    assert_eq!(scratch().len(), 1, "the bench's scratch directory");
    bench.kill().unwrap();
    bench.wait().unwrap();
    wait_for(
        Duration::from_secs(5),
        "the child of a killed bench still runs",
        || (!running(child)).then_some(()),
    );
    wait_for(
        Duration::from_secs(5),
        "the killed bench's scratch directory is still there",
        || scratch().is_empty().then_some(()),
    );
}

/// Destinations are checked, not written, before measuring: a refused run (here, for its plot)
/// leaves the results already at the export path as they were.
#[test]
fn a_refused_rerun_keeps_the_previous_results() {
    let dir = scratch("rerun");
    let json = dir.join("results.json");
    std::fs::write(&json, b"{\"previous\": true}").unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_flushlab"))
        .args(["bench", "--modes", "stdout/line", "--export-json"])
        .arg(&json)
        .args(["--plot", "/nonexistent-flushlab-dir/plot.svg"])
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(2),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(std::fs::read(&json).unwrap(), b"{\"previous\": true}");
    std::fs::remove_dir_all(&dir).unwrap();
}

/// A subcommand's bad flag is named without the top-level run's environment variable: `bench`
/// reads no DURATION.
#[test]
fn bench_messages_name_no_variable_it_does_not_read() {
    let out = Command::new(env!("CARGO_BIN_EXE_flushlab"))
        .args(["bench", "--duration", "-1"])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("--duration") && !stderr.contains("(env"),
        "{stderr}"
    );
}

#[test]
fn in_an_80_column_terminal_the_table_fits() {
    let args: Vec<&std::ffi::OsStr> = [
        "bench",
        "--duration",
        "0.2",
        "--runs",
        "2",
        "--warmup",
        "0",
        "--modes",
        "stdout/frame,stderr/raw,ceilings",
        "--size",
        "80x24",
    ]
    .iter()
    .map(std::ffi::OsStr::new)
    .collect();
    let run = common::start(&[], &args).finish(Duration::from_secs(60));
    let text = String::from_utf8_lossy(&run.output);
    assert_eq!(run.code, Some(0), "{text}");
    let table = common::table_lines(&text);
    assert!(table.len() >= 6, "{text}");
    for line in table {
        assert!(line.chars().count() <= common::COLS.into(), "{line}");
    }
}

#[test]
fn another_program_is_a_row_beside_the_modes() {
    let dir = common::scratch_dir("bench-command");
    let json = dir.join("results.json");
    // flushlab itself, run as any program: its row must match the mode's own row.
    let me = format!(
        "me=env STREAM=stdout BUFFERING=frame SYNC=1 DURATION=30 SIZE=80x24 {}",
        env!("CARGO_BIN_EXE_flushlab")
    );
    let out = common::quick_bench(
        &json,
        &["--modes", "stdout/frame", "--sync", "--command", &me],
    );
    assert!(out.status.success(), "{out:?}");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("| cmd/me "), "{stdout}");
    let results = common::read_json(&json);
    let row = |mode: &str| {
        results["results"]
            .as_array()
            .unwrap()
            .iter()
            .find(|r| r["mode"] == mode)
            .unwrap_or_else(|| panic!("no {mode}: {results}"))
            .clone()
    };
    let (mode, command) = (row("stdout/frame"), row("cmd/me"));
    let bytes = |r: &Value| r["bytes_per_frame"].as_f64().unwrap();
    assert!(
        (bytes(&command) - bytes(&mode)).abs() < 0.05 * bytes(&mode),
        "{command}\n{mode}"
    );
    assert!(
        command["writes_per_frame"].as_f64().unwrap() < 1.5,
        "{command}"
    );
    // Another program did other work: no ratio compares it.
    assert!(command["ratio_to_fastest"].is_null(), "{command}");
    // A program whose frames cannot be known (`yes`: lines) is a row of per-second figures,
    // not a failure.
    let out = common::quick_bench(
        &json,
        &["--modes", "stdout/frame", "--command", "lines=yes"],
    );
    assert!(out.status.success(), "{out:?}");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("frames unknown:"), "{stdout}");
    let results = common::read_json(&json);
    let lines = results["results"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["mode"] == "cmd/lines")
        .unwrap_or_else(|| panic!("no cmd/lines: {results}"))
        .clone();
    assert!(lines["fps"].is_null(), "{lines}");
    assert!(
        lines["failed_runs"].as_array().unwrap().is_empty(),
        "{lines}"
    );
    assert!(
        lines["per_second"]["bytes_per_second"].as_f64().unwrap() > 1e5,
        "{lines}"
    );
    assert!(
        lines["per_second"]["writes_per_second"].as_f64().unwrap() > 0.0,
        "{lines}"
    );
    std::fs::remove_dir_all(dir).unwrap();
}

/// A bad `--command`, or a row named twice, or one file for two exports: one line, exit 2.
#[test]
fn a_bad_command_row_is_one_line_and_exit_2() {
    for (bad, says) in [
        (&["--command", "nameless"][..], "NAME=COMMAND"),
        (
            &["--command", "x=no-such-program-here"][..],
            "no-such-program-here",
        ),
        (
            &["--workload", "flood", "--command", "x=true"][..],
            "--workload tui",
        ),
        (&["--modes", "cmd/x"][..], "--command NAME=CMD"),
        (
            &["--command", "a=true", "--command", "a=sh"][..],
            "two rows named cmd/a",
        ),
        (
            &["--export-json", "same.out", "--export-csv", "same.out"][..],
            "same.out",
        ),
    ] {
        let out = common::bench(bad);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{bad:?}: {err}");
        assert_eq!(err.lines().count(), 1, "{bad:?}: {err}");
        assert!(err.contains(says), "{bad:?}: {err}");
    }
}

/// keyed.c's own log: each read's time from the read to its drained frame, ms, sorted.
fn own_key_times(log: &std::path::Path) -> Vec<f64> {
    let mut own: Vec<f64> = std::fs::read_to_string(log)
        .unwrap()
        .lines()
        .map(|l| {
            let f: Vec<f64> = l.split(' ').map(|x| x.parse().unwrap_or(0.0)).collect();
            (f[2] - f[1]) / 1e6
        })
        .collect();
    own.sort_by(f64::total_cmp);
    own
}

/// A program that draws when a key arrives, as a row: its key→frame figures beside the mode's,
/// agreeing with the program's own clock (it logs each key's read and finished frame).
#[test]
fn a_keyed_program_is_a_row_with_its_time_from_a_key_to_its_frame() {
    let dir = common::scratch_dir("bench-keys");
    let json = dir.join("results.json");
    let log = dir.join("keys.log");
    let program = common::c_program("keyed");
    let command = format!("keyed={} normal frame", program.display());
    let out = Command::new(env!("CARGO_BIN_EXE_flushlab"))
        .args(["bench", "--duration", "1.5", "--runs", "1", "--warmup", "0"])
        .args([
            "--size",
            "80x24",
            "--modes",
            "stdout/frame",
            "--command",
            &command,
        ])
        .args([
            "--keys",
            "j*15@40ms",
            "--export-json",
            json.to_str().unwrap(),
        ])
        .env("KEYS_LOG", &log)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{out:?}");
    assert!(stdout.contains("key→frame p50 / p95"), "{stdout}");
    let results = common::read_json(&json);
    let row = results["results"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["mode"] == "cmd/keyed")
        .unwrap_or_else(|| panic!("no cmd/keyed: {results}"))
        .clone();
    let p50 = row["runs"][0]["key_to_frame_ms"]["p50"].as_f64().unwrap();
    // The program's own median (read to drained frame), over the keys of the same run.
    let own = own_key_times(&log);
    // One line a read: a program left unscheduled for over 40 ms takes two keys in one read
    // (13 lines seen beside two test suites); a line lost beyond that is lost, not merged.
    assert!(
        (10..=15).contains(&own.len()),
        "keys the program read: {}",
        own.len()
    );
    let own_p50 = own[(own.len() - 1) / 2];
    // The bench's time runs from the key's send, the program's from its read: the program's
    // wake-up on the key (its input delay) is allowed on top — up to its p95, as a loaded
    // machine stretches some keys' and the median of a sum is not the sum of medians (CI, both
    // tiers at once: 2.03 ms against 0.95 + 0.22 at the wake-up's p50).
    let woke = row["runs"][0]["key_stages_ms"]["input_delay"]["p95"]
        .as_f64()
        .unwrap_or_else(|| panic!("the run's stages: {row}"));
    let bound = (0.1 * own_p50).max(0.5);
    assert!(
        p50 >= own_p50 - bound && p50 <= own_p50 + bound + woke,
        "bench's p50 {p50} ms, the program's own {own_p50} ms, its wake-up {woke} ms"
    );
    let mode = results["results"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["mode"] == "stdout/frame")
        .unwrap()
        .clone();
    assert!(mode["runs"][0]["key_to_frame_ms"].is_null(), "{mode}");
    // The row carries the keys' stages, as wrap saw them; they add up to the key's time (each
    // p50 is its own median, so only roughly), and the table shows them.
    let stages = &row["runs"][0]["key_stages_ms"];
    let sum: f64 = ["input_delay", "processing", "emit"]
        .iter()
        .map(|s| stages[*s]["p50"].as_f64().unwrap())
        .sum();
    assert!(
        sum > 0.5 * p50 && sum < 1.5 * p50,
        "stages {stages}, key {p50} ms"
    );
    assert!(
        stdout.contains("(input delay + processing + emit + drain"),
        "{stdout}"
    );
    // Keys need a program to type into.
    let out = common::bench(&["--keys", "j"]);
    common::assert_refused(&out, "--keys without --command");
    std::fs::remove_dir_all(dir).unwrap();
}

#[test]
fn a_failed_run_reported_to_a_closed_stderr_is_no_panic() {
    // `flushlab bench --command x=false … 2>&1 >/dev/null | true`: stderr is a pipe nobody reads.
    let mut child = Command::new(env!("CARGO_BIN_EXE_flushlab"))
        .args([
            "bench",
            "--command",
            "x=false",
            "--modes",
            "ceiling/cpu",
            "--sink",
            "null",
        ])
        .args(["--duration", "0.3", "--runs", "1", "--warmup", "0"])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    drop(child.stderr.take());
    let status = common::wait_for(Duration::from_secs(60), "the bench", || {
        child.try_wait().unwrap()
    });
    assert_ne!(status.code(), Some(101), "a panic");
    assert_eq!(status.code(), Some(1), "{status}");
}

/// Processes whose command line contains `needle` (as one argument).
fn processes_with_arg(needle: &str) -> Vec<u32> {
    std::fs::read_dir("/proc")
        .unwrap()
        .filter_map(|e| e.ok()?.file_name().to_str()?.parse::<u32>().ok())
        .filter(|pid| {
            std::fs::read(format!("/proc/{pid}/cmdline"))
                .is_ok_and(|c| c.split(|&b| b == 0).any(|a| a == needle.as_bytes()))
        })
        .filter(|&pid| running(pid))
        .collect()
}

/// A bench SIGKILLed during a flood row or a `--command` row (wrap, and CMD under it) leaves
/// nothing running, whatever the sink: the kernel tells the row's process (its parent-death
/// signal), which ends as on SIGTERM — wrap with CMD's whole tree.
#[test]
#[cfg_attr(
    not(feature = "slow-tests"),
    ignore = "slow tier (6 s): cargo test --features slow-tests"
)]
fn no_row_outlives_a_killed_bench() {
    let cases: [(&str, &[&str]); 4] = [
        (
            "flood",
            &[
                "--workload",
                "flood",
                "--modes",
                "flood/none",
                "--sink",
                "null",
            ],
        ),
        (
            "771",
            &[
                "--modes",
                "ceiling/cpu",
                "--sink",
                "null",
                "--command",
                "z=sleep 771",
            ],
        ),
        (
            "772",
            &[
                "--modes",
                "ceiling/cpu",
                "--sink",
                "pipe",
                "--command",
                "z=sleep 772",
            ],
        ),
        (
            "773",
            &[
                "--modes",
                "ceiling/cpu",
                "--sink",
                "file",
                "--command",
                "z=sleep 773",
            ],
        ),
    ];
    let killed: Vec<_> = cases
        .into_iter()
        .map(|(marker, args)| {
            std::thread::spawn(move || {
                // A killed bench cannot remove its scratch directory: it makes it in a
                // temporary directory of the test's, which the test removes.
                let tmp = common::scratch_dir(&format!("killed-bench-{marker}"));
                let mut bench = Command::new(env!("CARGO_BIN_EXE_flushlab"))
                    .arg("bench")
                    .args(args)
                    .args(["--duration", "6", "--runs", "1", "--warmup", "0"])
                    .env("TMPDIR", &tmp)
                    .stdout(Stdio::null())
                    .stderr(Stdio::null())
                    .spawn()
                    .unwrap();
                // The row's processes: the flood, or wrap and CMD.
                let row = wait_for(Duration::from_secs(30), marker, || {
                    let pids = if marker == "flood" {
                        children_of(bench.id())
                    } else {
                        processes_with_arg(marker)
                    };
                    (!pids.is_empty()).then_some(pids)
                });
                bench.kill().unwrap();
                bench.wait().unwrap();
                wait_for(Duration::from_secs(3), marker, || {
                    row.iter().all(|&pid| !running(pid)).then_some(())
                });
                std::fs::remove_dir_all(&tmp).unwrap();
            })
        })
        .collect();
    for case in killed {
        case.join().unwrap();
    }
}

/// Where a frame's time goes, checked by its shape: in a drained pty, stderr()'s frames are
/// mostly kernel time (thousands of write(2)s); behind a 2 MB/s reader, one write a frame waits
/// for the reader longer than the loop works. The parts add up to the frame's wall time, and the
/// frame loop's on-CPU parts (its thread's scheduler statistics) agree with the process's CPU
/// time (getrusage) within 15% where the loop is the only busy thread.
#[test]
fn the_time_split_shows_where_each_frame_goes() {
    let dir = scratch("time-split");
    let json = dir.join("results.json");
    let out = quick_bench(
        &json,
        &[
            "--modes",
            "stderr/raw,stdout/frame",
            "--sink",
            "pty",
            "--reader",
            "drain,throttle:2MB/s",
        ],
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let results = read_json(&json);
    let run = |mode: &str, reader: &str| {
        results["results"]
            .as_array()
            .unwrap()
            .iter()
            .find(|r| r["mode"] == mode && r["reader"] == reader)
            .map(|r| r["runs"][0].clone())
            .unwrap_or_else(|| panic!("no {mode} {reader}: {results}"))
    };
    for (mode, reader) in [
        ("stderr/raw", "drain"),
        ("stdout/frame", "drain"),
        ("stderr/raw", "throttle:2MB/s"),
        ("stdout/frame", "throttle:2MB/s"),
    ] {
        let r = run(mode, reader);
        let split = &r["time_split"];
        let part = |name: &str| split[name].as_f64().unwrap();
        let sum: f64 = common::SPLIT_FIELDS.iter().map(|p| part(p)).sum();
        let frame_ms = 1000.0 / r["fps"].as_f64().unwrap();
        assert!(
            (sum / frame_ms - 1.0).abs() < 0.05,
            "{mode} {reader}: {sum} of {frame_ms}: {r}"
        );
        let on_cpu = (part("build_ms") + part("encode_ms") + part("kernel_ms"))
            * r["frames"].as_f64().unwrap()
            / 1000.0;
        let process = r["user_seconds"].as_f64().unwrap() + r["kernel_seconds"].as_f64().unwrap();
        assert!(
            (on_cpu / process - 1.0).abs() < 0.15,
            "{mode} {reader}: the loop's {on_cpu} s on a CPU, the process's {process} s: {r}"
        );
    }
    let raw = run("stderr/raw", "drain");
    let kernel = raw["time_split"]["kernel_ms"].as_f64().unwrap();
    // Not its wait for the reader: a drain starved of a core by a busy machine lets the pty's
    // buffer fill, and then raw stderr waits too — the reader is the machine's, not the mode's.
    for other in ["build_ms", "encode_ms", "idle_ms"] {
        assert!(kernel > raw["time_split"][other].as_f64().unwrap(), "{raw}");
    }
    let throttled = run("stdout/frame", "throttle:2MB/s");
    // It waits for the reader longer than it works, builds, encodes and sleeps together; the
    // time it waits for a core is the machine's (a busy one stretches every frame with it).
    let part = |name: &str| throttled["time_split"][name].as_f64().unwrap();
    let waiting = part("reader_wait_ms");
    let rest: f64 = ["build_ms", "encode_ms", "kernel_ms", "idle_ms"]
        .iter()
        .map(|p| part(p))
        .sum();
    assert!(waiting > rest, "{throttled}");
    std::fs::remove_dir_all(dir).unwrap();
}
