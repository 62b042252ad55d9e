//! The observer wrap preloads into CMD (crates/flushlab-observer), checked against truths from
//! outside it: the bytes a terminal receives (as is and with frames held: identical), each
//! program's own frame count, strace's count of the writes to the terminal's fd.

use crate::common;
use crate::example;

use std::path::Path;
use std::process::Command;
use std::time::Duration;

use flushlab_core::sys::pty::{Pty, read_to_end};
use flushlab_observer::{Injection, Mode};
use serde_json::Value;

/// A program on a fresh pty with the observer in `mode`, what it draws coming through
/// [`Observed::output`].
struct Observed {
    pty: Pty,
    child: std::process::Child,
    _injection: Injection,
    stop: std::sync::Arc<std::sync::atomic::AtomicBool>,
    listening: flushlab_observer::Listening,
}

fn observed(
    mode: Mode,
    program: &Path,
    args: &[&str],
    envs: &[(&str, &str)],
    (cols, rows): (u16, u16),
) -> Observed {
    let pty = Pty::open(cols, rows).unwrap();
    let mut injection = Injection::new(pty.open_slave().unwrap(), mode).unwrap();
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let listening = injection
        .listen(std::sync::Arc::clone(&stop), None)
        .unwrap();
    let child = pty
        .spawn(program, |cmd| {
            cmd.args(args)
                .envs(envs.iter().copied())
                .envs(injection.environment(None));
        })
        .unwrap();
    Observed {
        pty,
        child,
        _injection: injection,
        stop,
        listening,
    }
}

impl Observed {
    /// Every byte the terminal receives, as it comes (until the pty is gone).
    fn output(&self) -> std::sync::mpsc::Receiver<Vec<u8>> {
        let master = self.pty.master.try_clone().unwrap();
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let _ = read_to_end(&master, |b| {
                let _ = tx.send(b.to_vec());
            });
        });
        rx
    }

    /// Waits for the program to end well, closes the pty, and checks the observer was in it.
    fn end(mut self, what: &str) {
        let status = common::wait_for(Duration::from_secs(60), "the program to end", || {
            self.child.try_wait().unwrap()
        });
        assert!(status.success(), "{what}: {status}");
        drop(self.pty);
        self.stop.store(true, std::sync::atomic::Ordering::Relaxed);
        let sightings = self.listening.finish().unwrap();
        assert!(
            !sightings.hellos.is_empty(),
            "{what}: the observer never said hello"
        );
    }
}

/// `program args…` on a fresh 200x60 pty with the observer in `mode`: every byte the
/// terminal received, once the program ended well.
fn terminal_bytes(mode: Mode, program: &str, args: &[&str], envs: &[(&str, &str)]) -> Vec<u8> {
    let run = observed(mode, Path::new(program), args, envs, (200, 60));
    let output = run.output();
    run.end(&format!("{program} {args:?}"));
    output.into_iter().flatten().collect()
}

fn stdio_program() -> common::ScratchFile {
    common::c_program("stdio")
}

fn hostile_program() -> common::ScratchFile {
    common::c_program("hostile")
}

fn example(name: &str) -> String {
    example::example_path(name).to_string_lossy().into_owned()
}

/// Programs whose output is fixed (a set number of frames, then exit): as is and with frames
/// held, the terminal receives the same bytes in the same order.
#[test]
#[cfg_attr(
    not(feature = "slow-tests"),
    ignore = "slow tier (9 s; every fixed-output program of the corpus, twice): cargo test --features slow-tests"
)]
fn held_frames_reach_the_terminal_byte_for_byte_as_unheld() {
    let ratatui = example("corpus_ratatui");
    let sh_loop = "i=0; while [ $i -lt 30 ]; do printf '\\033[H'; j=0; while [ $j -lt 20 ]; do \
                   printf 'row %d of frame %d\\n' $j $i; j=$((j+1)); done; i=$((i+1)); \
                   sleep 0.01; done";
    type Case<'a> = (&'a str, Vec<&'a str>, Vec<(&'a str, &'a str)>);
    let cases: Vec<Case> = vec![
        (&ratatui, vec!["stderr"], vec![("FRAMES", "4")]),
        (&ratatui, vec!["stdout"], vec![("FRAMES", "8")]),
        ("/bin/sh", vec!["-c", sh_loop], vec![]),
        (
            "python3",
            vec![
                concat!(env!("CARGO_MANIFEST_DIR"), "/tests/corpus/frames.py"),
                "flush",
            ],
            vec![("FRAMES", "10")],
        ),
    ];
    let hostile = hostile_program();
    let hostile = hostile.to_str().unwrap();
    let mut cases = cases;
    cases.push((hostile, vec!["dup2", "20"], vec![]));
    cases.push((hostile, vec!["vfork", "20"], vec![]));
    cases.push((hostile, vec!["mixed", "20"], vec![]));
    // The corpus's other programs that end by themselves: C stdio (writes the observer cannot
    // see, mixed with none it holds), a shell drawing a row at a time, Node where installed.
    let stdio = stdio_program();
    let stdio = stdio.to_str().unwrap();
    for mode in ["line", "full", "unbuffered", "twophase"] {
        cases.push((stdio, vec![mode], vec![("FRAMES", "5")]));
    }
    let frames_sh = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/corpus/frames.sh");
    cases.push(("/bin/sh", vec![frames_sh, "rows"], vec![("FRAMES", "5")]));
    let frames_js = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/corpus/frames.js");
    if flushlab_core::files::find_program("node".as_ref()).is_some() {
        cases.push(("node", vec![frames_js], vec![("FRAMES", "5")]));
    }
    for (program, args, envs) in &cases {
        let program = flushlab_core::files::find_program(program.as_ref())
            .unwrap()
            .to_string_lossy()
            .into_owned();
        let as_is = terminal_bytes(Mode::Observe, &program, args, envs);
        let held = terminal_bytes(Mode::HoldFrames, &program, args, envs);
        assert!(
            as_is.len() > 1000,
            "{program} {args:?}: {} bytes",
            as_is.len()
        );
        assert!(
            as_is == held,
            "{program} {args:?}: {} bytes as is, {} held, first difference at {:?}",
            as_is.len(),
            held.len(),
            as_is.iter().zip(&held).position(|(a, b)| a != b)
        );
    }
}

/// `flushlab wrap --size 80x24 --export-json F ARGS…`: the report and what wrap said.
fn wrap_json(args: &[&str], envs: &[(&str, &str)]) -> (Value, String) {
    let report = common::scratch("report.json");
    let out = Command::new(env!("CARGO_BIN_EXE_flushlab"))
        .arg("wrap")
        .args(["--size", "80x24", "--export-json"])
        .arg(&report)
        .args(args)
        .envs(envs.iter().copied())
        .output()
        .unwrap();
    let said = String::from_utf8_lossy(&out.stderr).into_owned();
    let json = serde_json::from_slice(&std::fs::read(&report).unwrap()).unwrap_or_else(|e| {
        panic!("{args:?}: {e}: {said}");
    });
    std::fs::remove_file(&report).unwrap();
    common::one_frame_count(&json, &said);
    (json, said)
}

/// A program that waits in the middle of each frame (half, 6 ms, the rest, 27 ms): its frames
/// are its own count, not one a wait (the report said 60 fps for its 30 before the cursor model
/// was asked whether the drawing went on after a wait).
#[test]
fn a_wait_in_the_middle_of_a_frame_ends_no_frame() {
    let program = common::c_program("halves");
    let (json, said) = wrap_json(&["--", program.to_str().unwrap(), "30"], &[]);
    assert_eq!(json["frame_method"], "waits", "{said}");
    assert_eq!(json["frame_detection"]["frames"], 30, "{said}");
    assert_eq!(json["inside"]["terminal_writes"], 60, "{said}");
    // Two counts, each named for what it counts: the terminal's (inside), the tree's (kernel).
    assert_eq!(json["terminal_write_calls"], 60, "{said}");
    assert!(json["tree_write_calls"].as_u64().unwrap() >= 60, "{said}");
    assert!(json.get("write_calls").is_none(), "{said}");
}

/// strace's words for a program's writes, its children's too, into the file named next.
const STRACE_WRITES: [&str; 7] = [
    "-f",
    "-qq",
    "-e",
    "trace=write,writev",
    "-e",
    "signal=none",
    "-o",
];

/// C stdio drawing to the terminal (its writes made inside libc, where no interposed write
/// is), seen by the preload through its streams' buffers: in each of stdio.c's buffering modes
/// the writes and bytes it says are strace's to the terminal (fds 1 and 2), exactly.
#[test]
#[cfg_attr(
    not(feature = "slow-tests"),
    ignore = "slow tier (strace of three stdio programs): cargo test --features slow-tests"
)]
fn stdios_own_writes_are_seen_by_the_preload_as_strace_counts_them() {
    if !Path::new("/usr/bin/strace").exists() {
        assert!(std::env::var_os("CI").is_none(), "CI must have strace");
        return;
    }
    let program = stdio_program();
    let dir = common::scratch_dir("stdio-seen");
    for mode in ["line", "full", "unbuffered"] {
        let log = dir.join(format!("strace-{mode}"));
        let mut args = vec!["--observer", "preload", "--", "/usr/bin/strace"];
        args.extend(STRACE_WRITES);
        args.extend([log.to_str().unwrap(), program.to_str().unwrap(), mode]);
        let (json, said) = wrap_json(&args, &[("FRAMES", "5")]);
        let traced = std::fs::read_to_string(&log).unwrap();
        let (writes, bytes) = traced
            .lines()
            .filter(|l| l.contains(" write(1,") || l.contains(" write(2,"))
            .filter_map(|l| l.rsplit(" = ").next()?.trim().parse::<u64>().ok())
            .fold((0, 0), |(w, b), n| (w + 1, b + n));
        assert!(writes > 0, "{mode}: strace saw no write: {traced}");
        let inside = &json["inside"];
        assert_eq!(inside["writes_from"]["from"], "inside", "{mode}: {said}");
        assert_eq!(
            (
                inside["terminal_writes"].as_u64(),
                inside["terminal_bytes"].as_u64()
            ),
            (Some(writes), Some(bytes)),
            "{mode}: the preload against strace: {said}"
        );
    }
}

/// The material's program, `stderr()` unbuffered: frames from its waits match its own count;
/// write(2) a frame match strace's count of writes to the terminal; held, one write a frame.
#[test]
#[cfg_attr(
    not(feature = "slow-tests"),
    ignore = "slow tier (29 s; strace of the material's program): cargo test --features slow-tests"
)]
fn frames_and_writes_seen_from_inside_match_the_programs_own_and_straces() {
    let dir = common::scratch_dir("observer-truth");
    let frames_file = dir.join("frames");
    let ratatui = example("corpus_ratatui");
    let frames_env = frames_file.to_str().unwrap();
    let (json, said) = wrap_json(
        &["--", &ratatui, "stderr"],
        &[("FRAMES", "5"), ("FRAMES_FILE", frames_env)],
    );
    let truth: u64 = std::fs::read_to_string(&frames_file)
        .unwrap()
        .split_whitespace()
        .next()
        .unwrap()
        .parse()
        .unwrap();
    assert_eq!(json["inside"]["frames_from"]["from"], "inside", "{said}");
    assert_eq!(json["inside"]["writes_from"]["from"], "inside", "{said}");
    assert_eq!(
        json["frame_method"], "waits",
        "{said}: {}",
        json["frame_detection"]
    );
    let frames = json["frame_detection"]["frames"].as_u64().unwrap();
    // The program's own count, and at most the teardown's group besides.
    assert!(
        frames.abs_diff(truth) <= 1,
        "{frames} frames, truth {truth}: {said}"
    );
    let writes = json["inside"]["terminal_writes"].as_u64().unwrap();

    // strace, writes to fd 2 (the terminal) of the same program drawing the same frames.
    if Path::new("/usr/bin/strace").exists() {
        let log = dir.join("strace");
        let pty = Pty::open(80, 24).unwrap();
        let mut child = pty
            .spawn(Path::new("/usr/bin/strace"), |cmd| {
                cmd.args(STRACE_WRITES)
                    .arg(&log)
                    .args([ratatui.as_str(), "stderr"])
                    .env("FRAMES", "5");
            })
            .unwrap();
        let master = pty.master.try_clone().unwrap();
        let reader = std::thread::spawn(move || read_to_end(&master, |_| {}).unwrap());
        child.wait().unwrap();
        drop(pty);
        reader.join().unwrap();
        let traced = std::fs::read_to_string(&log).unwrap();
        let to_terminal = traced
            .lines()
            .filter(|l| l.contains("write(2,") || l.contains("writev(2,"))
            .count() as f64;
        let within = (writes as f64 - to_terminal).abs() / to_terminal;
        assert!(within < 0.05, "observer {writes}, strace {to_terminal}");
    }

    // Held: about one write(2) a frame.
    let (tried, said) = wrap_json(
        &["--try", "frame", "--", &ratatui, "stderr"],
        &[("FRAMES", "5")],
    );
    let held = tried["inside"]["held_writes"].as_f64().unwrap();
    // At least one a frame (a frame's bytes go out when it waits: its writes were once lost
    // with the waiting record that carried them, 2 read for 10 frames), at most a few.
    assert!(
        held >= truth as f64 && held <= 3.0 * truth as f64,
        "{held} writes for {truth} frames: {said}"
    );
    std::fs::remove_dir_all(dir).unwrap();
}

/// A static program cannot load the observer: the report says so, and wrap measures it from
/// outside as before. An `LD_PRELOAD` the user had stays, after the observer.
#[test]
fn a_program_the_observer_cannot_enter_is_seen_from_outside_and_said_so() {
    let dir = common::scratch_dir("observer-static");
    let source = dir.join("s.c");
    std::fs::write(
        &source,
        "#include <unistd.h>\nint main(void){for(int i=0;i<20;i++){write(1,\"\\033[Hx\",4);usleep(10000);}return 0;}\n",
    )
    .unwrap();
    let binary = dir.join("s");
    let built = Command::new("gcc")
        .args(["-static", "-O1", "-o"])
        .arg(&binary)
        .arg(&source)
        .status()
        .unwrap();
    assert!(built.success(), "gcc -static needs libc6-dev's libc.a");
    // `auto` sees it from inside: the kernel where eBPF is allowed, else the tracer.
    let (json, said) = wrap_json(&["--", binary.to_str().unwrap()], &[]);
    let observer = json["inside"]["observer"].clone();
    assert!(observer == "kernel" || observer == "ptrace", "{said}");
    assert_eq!(json["inside"]["frames_from"]["from"], "inside", "{said}");
    assert_eq!(json["inside"]["terminal_writes"], 20, "{said}");
    assert!(
        !said.contains("encoder-bound"),
        "the observer taken for the writer: {said}"
    );
    // The preload alone cannot, and says so.
    let (json, said) = wrap_json(
        &["--observer", "preload", "--", binary.to_str().unwrap()],
        &[],
    );
    assert_eq!(json["inside"]["frames_from"]["from"], "outside", "{said}");
    assert_eq!(json["inside"]["writes_from"]["from"], "outside", "{said}");
    let why = json["inside"]["frames_from"]["why"].as_str().unwrap();
    assert!(why.contains("did not load the observer"), "{why}");
    assert_ne!(json["frame_method"], "waits");

    // A dynamic program with an LD_PRELOAD of its own: both are loaded, the user's after.
    let (json, said) = wrap_json(
        &[
            "--observer",
            "preload",
            "--",
            "sh",
            "-c",
            "echo \"$LD_PRELOAD\"; sleep 0.05",
        ],
        &[("LD_PRELOAD", "libc.so.6")],
    );
    assert_ne!(json["inside"]["frames_from"]["from"], "outside", "{said}");
    std::fs::remove_dir_all(dir).unwrap();
}

/// Nothing of the observer is ever on disk: wrap with TMPDIR pointing at an empty directory
/// leaves it empty, and the object CMD loads is a sealed in-memory file of wrap's.
#[test]
fn the_observer_never_touches_the_disk() {
    let dir = common::scratch_dir("observer-tmpdir");
    let (json, said) = wrap_json(
        &[
            "--observer",
            "preload",
            "--",
            "sh",
            "-c",
            "printf \"%s\" \"$LD_PRELOAD\" > /dev/tty; sleep 0.05",
        ],
        &[("TMPDIR", dir.to_str().unwrap())],
    );
    assert_ne!(json["inside"]["frames_from"]["from"], "outside", "{said}");
    assert_eq!(std::fs::read_dir(&dir).unwrap().count(), 0);
    std::fs::remove_dir_all(dir).unwrap();
}

/// A `watch`-like shell whose children draw (coreutils' printf writes through stdio) with
/// `sleep` between frames; and a pipeline through `cat` and through `tee` (stdio too) to a
/// file, whose file and pipe writes are no terminal writes. Frames from the waits, within 10%
/// of the frames drawn; write(2) counts of the terminal alone, one a frame, seen by the preload
/// (stdio's by its streams) and by the kernel.
#[test]
#[cfg_attr(
    not(feature = "slow-tests"),
    ignore = "slow tier (3 s): cargo test --features slow-tests"
)]
fn children_that_draw_and_a_pipeline_through_tee() {
    let dir = common::scratch_dir("observer-tee");
    let log = dir.join("log");
    let frames_into = |tail: &str| {
        format!(
            "i=0; while [ $i -lt 20 ]; do printf '\\033[Hframe %s' $i; i=$((i+1)); sleep 0.05; \
             done | {tail}"
        )
    };
    let children = "for i in $(seq 20); do /usr/bin/printf '\\033[Hframe %s\\033[2;1Hxx' $i; \
                    sleep 0.05; done";
    let (cat, tee) = (
        frames_into("cat"),
        frames_into(&format!("tee {}", log.display())),
    );
    let mut observers = vec!["preload"];
    if super::kernel::kernel_allowed() {
        observers.push("kernel");
    }
    for observer in observers {
        for command in [children, &cat, &tee] {
            let (json, said) = wrap_json(&["--observer", observer, "--", "sh", "-c", command], &[]);
            // The children's frames end at the shell's waits; a pipeline's reader waits on the
            // pipe, where its frames are its cursor restarts.
            if command == children {
                assert_eq!(json["frame_method"], "waits", "{observer}: {said}");
                assert_eq!(json["inside"]["frames_from"]["from"], "inside", "{said}");
            }
            let frames = json["figures"]["frames"].as_u64().unwrap();
            assert!(
                frames.abs_diff(20) <= 2,
                "{observer}: {frames} frames of 20: {said}"
            );
            assert_eq!(json["inside"]["writes_from"]["from"], "inside", "{said}");
            assert_eq!(json["write_scope"]["scope"], "terminal", "{said}");
            let per_frame = json["figures"]["writes_per_frame"].as_f64().unwrap();
            assert!(
                (0.9..=1.5).contains(&per_frame),
                "{observer}: {per_frame}: {said}"
            );
        }
    }
    std::fs::remove_dir_all(dir).unwrap();
}

/// A pager and an editor scrolling, driven by keys: they redraw after each key and then wait
/// for the next, never repositioning to a frame's start — frames an outside view cannot find.
/// The truth: the first screen and one redraw a key.
#[test]
#[cfg_attr(
    not(feature = "slow-tests"),
    ignore = "slow tier (5 s): cargo test --features slow-tests"
)]
fn a_pager_and_an_editor_scrolling_have_a_frame_a_key() {
    use std::io::Write;
    let text = "/usr/share/common-licenses/GPL-3";
    for (program, args, key, quit) in [
        ("less", vec![text], &b"j"[..], &b"q"[..]),
        (
            "vim",
            vec!["-u", "NONE", "-n", text],
            &b"\x05"[..],
            &b":q!\r"[..],
        ),
    ] {
        // CI installs both (.ci/run): there a missing one fails the test.
        if !common::has_programs(&[program]) || !Path::new(text).exists() {
            continue;
        }
        let dir = common::scratch_dir(&format!("observer-{program}"));
        let report = dir.join("report.json");
        let mut argv: Vec<&std::ffi::OsStr> = vec!["wrap".as_ref(), "--export-json".as_ref()];
        argv.push(report.as_os_str());
        argv.push("--".as_ref());
        argv.push(program.as_ref());
        argv.extend(args.iter().map(std::ffi::OsStr::new));
        let running = common::start(&[], &argv);
        let mut keys = running.pty.master.try_clone().unwrap();
        std::thread::sleep(Duration::from_millis(800));
        let presses = 20;
        for _ in 0..presses {
            keys.write_all(key).unwrap();
            std::thread::sleep(Duration::from_millis(80));
        }
        keys.write_all(quit).unwrap();
        let run = running.finish(Duration::from_secs(20));
        assert_eq!(run.code, Some(0), "{program}");
        let json: Value = serde_json::from_slice(&std::fs::read(&report).unwrap()).unwrap();
        assert_eq!(json["frame_method"], "waits", "{program}: {json}");
        let frames = json["frame_detection"]["frames"].as_u64().unwrap();
        let truth = presses + 1;
        assert!(
            frames.abs_diff(truth) * 10 <= truth,
            "{program}: {frames} frames, {truth} screens drawn: {json}"
        );
        std::fs::remove_dir_all(dir).unwrap();
    }
}

/// htop and `watch`: programs whose refreshes the outside view cannot confirm (their pauses
/// cover most of the run, their cursor restarts are fewer than their refreshes). Truths from
/// outside wrap: each refresh of `watch -n 0.1` runs its command, which appends a line to a file;
/// each of htop's refreshes reads /proc/stat and then writes to the terminal, which strace sees
/// (a refresh is a run of writes to fd 1 after an open of /proc/stat).
#[test]
#[cfg_attr(
    not(feature = "slow-tests"),
    ignore = "slow tier (7 s; htop under strace): cargo test --features slow-tests"
)]
fn htop_and_watch_have_a_frame_a_refresh() {
    // CI installs them (.ci/run): there a missing one fails the test.
    if !common::has_programs(&["htop", "watch", "strace"]) {
        return;
    }
    let dir = common::scratch_dir("observer-htop-watch");
    let within_a_tenth = |frames: u64, truth: u64, said: &str| {
        assert!(truth >= 10, "only {truth} refreshes: {said}");
        assert!(
            frames.abs_diff(truth) * 10 <= truth,
            "{frames} frames, {truth} refreshes: {said}"
        );
    };

    let runs = dir.join("runs");
    let command = format!("date +%N; echo >> {}", runs.display());
    let (json, said) = wrap_json(
        &["--duration", "3", "--", "watch", "-n", "0.1", &command],
        &[],
    );
    assert_eq!(json["frame_method"], "waits", "{said}");
    let truth = std::fs::read_to_string(&runs).unwrap().lines().count() as u64;
    within_a_tenth(json["figures"]["frames"].as_u64().unwrap(), truth, &said);

    let log = dir.join("htop.strace");
    let (json, said) = wrap_json(
        &[
            "--duration",
            "3",
            "--",
            "strace",
            "-f",
            "-qq",
            "--seccomp-bpf",
            "-e",
            "trace=openat,write",
            "-e",
            "signal=none",
            "-o",
            log.to_str().unwrap(),
            "htop",
            "-d",
            "1",
        ],
        &[],
    );
    assert_eq!(json["frame_method"], "waits", "{said}");
    let (mut refreshes, mut scanned) = (0, false);
    for line in std::fs::read_to_string(&log).unwrap().lines() {
        if line.contains("openat(") && line.contains("\"/proc/stat\"") {
            scanned = true;
        } else if line.contains(" write(1,") && scanned {
            refreshes += 1;
            scanned = false;
        }
    }
    within_a_tenth(
        json["figures"]["frames"].as_u64().unwrap(),
        refreshes,
        &said,
    );
}

/// A C program drawing through stdio, tried: stdout and stderr on the terminal are fully
/// buffered and flushed at each wait, so a frame drawn with a `fprintf` per cell on unbuffered
/// stderr (thousands of write(2) a frame as it is, the kernel's count) goes out in one or two.
#[test]
fn a_stdio_program_tried_writes_a_frame_at_once() {
    let stdio = stdio_program();
    let stdio = stdio.to_str().unwrap();
    let run = |flags: &[&str]| {
        let mut args = vec!["--duration", "1"];
        args.extend_from_slice(flags);
        args.extend(["--", stdio, "unbuffered"]);
        let (json, said) = wrap_json(&args, &[]);
        let per_frame = json["figures"]["writes_per_frame"].as_f64();
        (
            per_frame.unwrap_or_else(|| panic!("no write(2) a frame: {said}")),
            said,
        )
    };
    let (as_is, said) = run(&[]);
    assert!(as_is > 500.0, "{as_is} write(2) a frame as it is: {said}");
    let (tried, said) = run(&["--try", "frame"]);
    assert!(tried <= 2.5, "{tried} write(2) a frame tried: {said}");
}

/// A prompt written through stdio without a newline, then a line read from the terminal through
/// stdio: glibc flushes a line-buffered stdout before that read; tried, the observer has made
/// stdout fully buffered and must let the prompt out itself, or the program waits for an answer
/// to a question nobody sees.
#[test]
fn a_prompt_is_out_before_the_terminal_is_read() {
    use std::io::Write;
    let hostile = hostile_program();
    for mode in [Mode::Observe, Mode::HoldFrames] {
        let run = observed(mode, &hostile, &["prompt", "0"], &[], (80, 24));
        let output = run.output();
        let mut seen = Vec::new();
        let mut shown = |text: &str| {
            common::wait_for(Duration::from_secs(10), text, || {
                seen.extend(output.try_iter().flatten());
                String::from_utf8_lossy(&seen).contains(text).then_some(())
            })
        };
        shown("name? ");
        run.pty
            .master
            .try_clone()
            .unwrap()
            .write_all(b"you\n")
            .unwrap();
        shown("hello you");
        run.end(&format!("{mode:?}"));
    }
}

/// A signal handler that writes to the terminal every millisecond while frames are held: it
/// runs inside the observer's own code as often as not, and must neither wait for the lock its
/// thread holds (a deadlock) nor lose or duplicate a byte: the terminal gets exactly as many
/// '!' as the handler says it wrote.
#[test]
fn a_signal_handler_that_writes_while_frames_are_held_loses_nothing_and_never_deadlocks() {
    let hostile = hostile_program();
    for mode in [Mode::Observe, Mode::HoldFrames] {
        let out = terminal_bytes(mode, hostile.to_str().unwrap(), &["signals", "300"], &[]);
        let text = String::from_utf8_lossy(&out);
        let said: usize = text
            .rsplit("signals ")
            .next()
            .and_then(|n| n.trim().parse().ok())
            .unwrap_or_else(|| panic!("{mode:?}: no count said"));
        let seen = out.iter().filter(|&&b| b == b'!').count();
        assert!(said > 10, "{mode:?}: only {said} signals");
        assert_eq!(
            seen, said,
            "{mode:?}: the handler wrote {said} '!', the terminal got {seen}"
        );
    }
}

/// A setuid program, run by a normal user: the loader drops `LD_PRELOAD` (secure mode), the
/// program runs unobserved, and the report says so. (As root there is no secure mode: run as
/// `nobody` through util-linux's runuser, a copy of the build it can reach.)
#[test]
fn a_setuid_program_runs_unobserved_and_the_report_says_so() {
    let setuid = Path::new("/usr/bin/mount");
    let runuser = Path::new("/usr/sbin/runuser");
    let reachable = rustix::process::geteuid().is_root() && runuser.exists();
    let is_setuid = std::fs::metadata(setuid).is_ok_and(|m| {
        use std::os::unix::fs::PermissionsExt;
        m.permissions().mode() & 0o4000 != 0
    });
    if !reachable || !is_setuid {
        eprintln!("skipped: needs root, runuser and a setuid mount");
        return;
    }
    let (_dir, flushlab) = common::flushlab_for_anyone();
    let out = Command::new(runuser)
        .args(["-u", "nobody", "--"])
        .arg(&flushlab)
        .args(["wrap", "--duration", "5", "--export-json", "-", "--"])
        .arg(setuid)
        .arg("--version")
        .current_dir("/")
        .output()
        .unwrap();
    let said = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{said}");
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    let why = report["inside"]["frames_from"]["why"]
        .as_str()
        .unwrap_or_default();
    assert!(why.contains("did not load the observer"), "{report}");
    assert!(said.contains("seen from outside"), "{said}");
}

/// Slow tier: mc, whose startup writes bytes the preload does not see (glibc stdio's own):
/// every key it answers still gets its drain — the offsets line up again once the reader has
/// been quiet before a frame (all of mc's keys' drains were unknown before).
#[test]
#[cfg_attr(
    not(feature = "slow-tests"),
    ignore = "slow tier (3 s; mc): cargo test --features slow-tests"
)]
fn keys_after_bytes_the_preload_did_not_see_have_their_drain() {
    if !common::has_programs(&["mc"]) {
        return;
    }
    let home = common::scratch_dir("mc-home");
    let report = common::scratch("mc.json");
    let out = Command::new(env!("CARGO_BIN_EXE_flushlab"))
        .args([
            "wrap",
            "--observer",
            "preload",
            "--size",
            "120x40",
            "--keys",
            "<Down>*20@100ms <F10>",
        ])
        .arg("--export-json")
        .arg(&*report)
        .args(["--", "mc", "-u"])
        .env("HOME", &*home)
        .output()
        .unwrap();
    let said = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(out.status.success(), "{said}");
    let json = common::read_json(&report);
    assert_eq!(json["inside"]["observer"], "preload", "{said}");
    let (read, seen) = (
        json["bytes"].as_u64().unwrap(),
        json["terminal_bytes_written"].as_u64().unwrap(),
    );
    assert!(
        read > seen,
        "the preload saw every byte ({seen} of {read}): {said}"
    );
    let answered = json["keys"]["frames"]["answering"].as_u64().unwrap();
    assert!(answered >= 18, "{said}");
    let drained = json["keys"]["each"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|k| k["stages_ms"]["drain"].is_number())
        .count() as u64;
    assert_eq!(drained, answered, "{said}");
}

/// A static program a launcher starts (`env`), under the preload: the frames are seen from
/// outside, and the reason names the program that drew, its launcher, and the flags that see it.
#[test]
fn a_program_a_launcher_starts_unseen_is_named() {
    let program = common::c_program_with("stages", &["-static"]);
    let (json, said) = wrap_json(
        &[
            "--observer",
            "preload",
            "--keys",
            "j*4@100ms q",
            "--",
            "env",
            "A=1",
            program.to_str().unwrap(),
            "poll",
            "300",
            "rows",
        ],
        &[],
    );
    let why = json["inside"]["frames_from"]["why"]
        .as_str()
        .unwrap_or_default();
    assert!(
        why.starts_with("'stages-static', the program that drew, did not load the preload")
            && why.contains("started by env")
            && why.ends_with("--observer kernel or ptrace sees it"),
        "{said}"
    );
}

/// A program that stops itself (SIGSTOP) and is continued by a child of its own, under the
/// preload and under no observer (the tracer's and the kernel's are in tracer.rs and kernel.rs):
/// it goes on, its keys are all answered, its status is its own.
#[test]
fn a_program_that_stops_itself_goes_on_under_the_preload_and_unobserved() {
    let program = common::c_program_with("tracee", &["-pthread"]);
    for observer in ["preload", "none"] {
        let (code, report, said, _) = super::keyed::wrap_keys_with(
            &["--observer", observer],
            "80x24",
            "j*3@100ms q",
            &[program.to_str().unwrap(), "stopself"],
        );
        assert_eq!(code, Some(0), "{observer}: {said}");
        assert_eq!(report["keys"]["sent"], 4, "{observer}: {said}");
        assert_eq!(report["keys"]["unanswered"], 0, "{observer}: {said}");
    }
}
