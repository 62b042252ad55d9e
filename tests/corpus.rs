//! `flushlab wrap` against programs that count their own frames, in four languages (five where
//! Node is installed), and real Debian programs: its frames, write(2) counts and diagnoses
//! checked against truths from outside flushlab — each program's own frame count (written when
//! it ends) and strace's count of its write(2) calls.
//!
//! Every case runs headless three times, at 200x60, 80x24 and 200x60: a frame rate is within 10% of
//! the program's own, or "unknown" where the case allows it (never a number that is off); the
//! expected diagnoses are there, the wrong ones are not; the fix speaks the program's language.
//! Once (at 200x60 or 80x24, the cases taking turns) the program draws a fixed number of
//! frames under strace and once under wrap: wrap's write(2) count is within 5% of strace's.
//!
//! The corpus: `examples/corpus_ratatui.rs` (Rust, ratatui: the material's own program on
//! `stderr()`, `stdout()`, a `BufWriter`, DEC 2026, `ratatui::init()`), `tests/corpus/stdio.c`,
//! `frames.py`, `frames.sh`, `frames.js`. docs/wrap/costs.md shows the table this test checks.

// A test is one story from setup to its last assertion: the length limit is for src/.

mod common;
#[path = "common/example.rs"]
#[allow(dead_code)]
mod example;

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

/// One program of the corpus and what is true of it.
struct Case {
    name: &'static str,
    command: Vec<String>,
    /// Frames must be found (else "unknown" is allowed; a wrong number never is).
    known: bool,
    method: &'static str,
    /// Also right: a paced program that falls behind its pace on a loaded machine stops
    /// waiting between frames, and its frames are then found from what it draws.
    or_method: Option<&'static str>,
    language: &'static str,
    expect: &'static [&'static str],
    never: &'static [&'static str],
    /// What the tree's write(2) counts are (`terminal`, `more-than-terminal`).
    scope: &'static str,
    /// Seconds a run lasts: long enough for a few whole frames of the slowest case.
    seconds: f64,
    /// Frames drawn for the write(2) count under strace (0: not counted this way).
    counted_frames: u32,
}

fn example(name: &str) -> String {
    example::example_path(name).to_string_lossy().into_owned()
}

fn source(name: &str) -> String {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/corpus")
        .join(name)
        .to_string_lossy()
        .into_owned()
}

fn has(program: &str) -> bool {
    Command::new("sh")
        .args(["-c", &format!("command -v {program}")])
        .output()
        .is_ok_and(|o| o.status.success())
}

fn strings(parts: &[&str]) -> Vec<String> {
    parts.iter().map(|s| (*s).to_owned()).collect()
}

/// A case: frames found by `method` ("unknown": none may be), written in `language`.
fn case(
    name: &'static str,
    command: Vec<String>,
    method: &'static str,
    language: &'static str,
) -> Case {
    Case {
        name,
        command,
        known: method != "unknown",
        method,
        or_method: None,
        language,
        expect: &[],
        never: &[],
        scope: "terminal",
        seconds: 2.0,
        counted_frames: 3,
    }
}

impl Case {
    fn expect(self, expect: &'static [&'static str]) -> Case {
        Case { expect, ..self }
    }
    fn never(self, never: &'static [&'static str]) -> Case {
        Case { never, ..self }
    }
    fn or_method(self, method: &'static str) -> Case {
        Case {
            or_method: Some(method),
            ..self
        }
    }
    fn seconds(self, seconds: f64) -> Case {
        Case { seconds, ..self }
    }
    fn counted(self, counted_frames: u32) -> Case {
        Case {
            counted_frames,
            ..self
        }
    }
}

fn rust_cases() -> Vec<Case> {
    let program = example("corpus_ratatui");
    let with = |writer: &str| vec![program.clone(), writer.to_owned()];
    vec![
        // The material's program: ~2 fps at 200x60 — eight seconds see a dozen whole frames.
        case("rust/stderr", with("stderr"), "waits", "rust")
            .expect(&["unbuffered"])
            .never(&["line-buffered-1k", "reader-bound"])
            .seconds(8.0)
            .counted(2),
        case("rust/stdout", with("stdout"), "waits", "rust")
            .expect(&["line-buffered-1k"])
            .never(&["unbuffered", "reader-bound"]),
        case("rust/bufwriter", with("bufwriter"), "waits", "rust").never(&[
            "unbuffered",
            "line-buffered-1k",
            "reader-bound",
        ]),
        case("rust/sync", with("sync"), "sync-markers", "rust").never(&[
            "unbuffered",
            "line-buffered-1k",
            "reader-bound",
            "sync-unbalanced",
        ]),
        case("rust/ratatui-init", with("default"), "waits", "rust")
            .expect(&["line-buffered-1k"])
            .never(&["unbuffered", "reader-bound"]),
    ]
}

fn c_cases(binary: &Path) -> Vec<Case> {
    let with = |mode: &str| vec![binary.to_string_lossy().into_owned(), mode.to_owned()];
    vec![
        case("c/line", with("line"), "cursor-restarts", "c")
            .expect(&["line-buffered-1k"])
            .never(&["unbuffered"]),
        case("c/full-30fps", with("full"), "waits", "c")
            .or_method("cursor-restarts")
            .never(&["unbuffered", "line-buffered-1k", "reader-bound"]),
        case("c/unbuffered", with("unbuffered"), "cursor-restarts", "c")
            .expect(&["unbuffered"])
            .never(&["line-buffered-1k"]),
        case("c/two-writes-30fps", with("twophase"), "waits", "c")
            .or_method("cursor-restarts")
            .never(&["unbuffered", "line-buffered-1k", "reader-bound"]),
        case("c/continuous", with("continuous"), "cursor-restarts", "c")
            .never(&["unbuffered", "line-buffered-1k"]),
        case("c/sync-never-ended", with("unbalanced"), "waits", "c")
            .or_method("cursor-restarts")
            .expect(&["sync-unbalanced"])
            .never(&["unbuffered", "reader-bound"]),
    ]
}

fn python_cases() -> Vec<Case> {
    let with = |mode: &str| strings(&["python3", &source("frames.py"), mode]);
    vec![
        case(
            "python/print-flush",
            with("flush"),
            "cursor-restarts",
            "python",
        )
        .expect(&["unbuffered"])
        .never(&["line-buffered-1k"])
        .seconds(3.0)
        .counted(2),
        // sys.stdout on a terminal is line-buffered and writes through: one write(2) a call.
        case("python/write-30fps", with("buffered"), "waits", "python")
            .or_method("cursor-restarts")
            .expect(&["unbuffered"])
            .never(&["line-buffered-1k", "reader-bound"]),
        case("python/curses-30fps", with("curses"), "waits", "python")
            .or_method("cursor-restarts")
            .never(&["unbuffered", "line-buffered-1k", "reader-bound"]),
    ]
}

fn shell_and_node_cases() -> Vec<Case> {
    let mut cases = vec![
        case(
            "shell/printf-a-cell",
            strings(&["sh", &source("frames.sh"), "cells"]),
            "cursor-restarts",
            "shell",
        )
        .expect(&["unbuffered"])
        .never(&["line-buffered-1k"])
        .seconds(4.0)
        .counted(2),
        case(
            "shell/printf-a-row-30fps",
            strings(&["sh", &source("frames.sh"), "rows"]),
            "waits",
            "shell",
        )
        .or_method("cursor-restarts")
        .expect(&["unbuffered"])
        .never(&["line-buffered-1k", "reader-bound"]),
        // Real programs: lines, not frames; a pipeline whose pipe the observer does not count.
        case("debian/yes", strings(&["yes"]), "unknown", "c")
            .never(&["unbuffered", "line-buffered-1k"])
            .seconds(1.0)
            .counted(0),
        case(
            "debian/seq-pipe-cat",
            strings(&["sh", "-c", "seq 1 300000 | cat"]),
            "unknown",
            "c",
        )
        .never(&["unbuffered", "line-buffered-1k"])
        .counted(0),
    ];
    if has("node") {
        cases.push(
            case(
                "node/write-a-cell-30fps",
                strings(&["node", &source("frames.js")]),
                "waits",
                "node",
            )
            .or_method("cursor-restarts")
            .expect(&["unbuffered"])
            .never(&["line-buffered-1k", "reader-bound"]),
        );
    } else {
        eprintln!("node is not installed: its case is skipped");
    }
    cases
}

const SIZES: [&str; 2] = ["200x60", "80x24"];
/// Three runs a case, the sizes taking turns: each size is seen, one twice, and a case right only
/// once in a while fails (six runs a case made the corpus most of CI's time).
const RUNS: [&str; 3] = ["200x60", "80x24", "200x60"];

/// `flushlab wrap --duration SECONDS --size SIZE --report R -- env VARS… CMD`: its report.
fn wrap(size: &str, seconds: f64, envs: &[String], command: &[String], report: &Path) -> Value {
    wrap_with(size, seconds, envs, command, report, &[])
}

/// [`wrap`] with more of wrap's flags.
fn wrap_with(
    size: &str,
    seconds: f64,
    envs: &[String],
    command: &[String],
    report: &Path,
    flags: &[&str],
) -> Value {
    let out = Command::new(env!("CARGO_BIN_EXE_flushlab"))
        .args(["wrap", "--size", size])
        .args(flags)
        .arg("--duration")
        .arg(seconds.to_string())
        .arg("--report")
        .arg(report)
        .arg("--")
        .arg("env")
        .args(envs)
        .args(command)
        .output()
        .unwrap();
    let said = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success() || out.status.code() == Some(0),
        "{said}"
    );
    let bytes = std::fs::read(report).unwrap_or_else(|e| panic!("no report ({e}): {said}"));
    std::fs::remove_file(report).unwrap();
    serde_json::from_slice(&bytes).unwrap()
}

/// "FRAMES SECONDS", as the program wrote it when it ended: its frame rate.
fn truth(path: &Path) -> (u64, f64) {
    let text = std::fs::read_to_string(path)
        .unwrap_or_else(|e| panic!("the program wrote no count to {}: {e}", path.display()));
    std::fs::remove_file(path).unwrap();
    let mut fields = text.split_whitespace();
    let frames = fields.next().unwrap().parse().unwrap();
    let seconds: f64 = fields.next().unwrap().parse().unwrap();
    assert!(
        frames > 1 && seconds.is_finite() && seconds > 0.0,
        "{}: no count to check against: {text}",
        path.display()
    );
    (frames, seconds)
}

fn codes(report: &Value) -> Vec<String> {
    report["diagnoses"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| d["code"].as_str().unwrap().to_owned())
        .collect()
}

/// write(2)-family calls strace saw the program (and its children) make.
fn strace_writes(log: &Path) -> u64 {
    let text = std::fs::read_to_string(log).unwrap();
    std::fs::remove_file(log).unwrap();
    text.lines()
        .filter(|l| !l.contains("resumed>"))
        .filter(|l| {
            ["write(", "writev(", "pwrite64(", "pwritev("]
                .iter()
                .any(|call| l.contains(call))
        })
        .count() as u64
}

/// The report's diagnoses: those the case expects, none it must not get, advice in its language.
fn check_diagnoses(case: &Case, label: &str, report: &Value) -> Vec<String> {
    let found = codes(report);
    for code in case.expect {
        assert!(
            found.iter().any(|c| c == code),
            "{label}: no {code}: {report}"
        );
    }
    for code in case.never {
        assert!(
            !found.iter().any(|c| c == code),
            "{label}: {code}: {report}"
        );
    }
    assert_eq!(
        report["writer"]["language"], case.language,
        "{label}: {}",
        report["writer"]
    );
    if case.language != "rust" {
        let text = report["diagnoses"].to_string();
        assert!(
            !text.contains("BufWriter") && !text.contains("stdout()"),
            "{label}: Rust advice: {text}"
        );
    }
    found
}

/// The case's line of the accuracy table.
fn table_line(
    case: &Case,
    size: &str,
    own: Option<f64>,
    fps: Option<f64>,
    report: &Value,
    found: &[String],
) -> String {
    format!(
        "| {} | {size} | {} | {} | {} | {} | {} |",
        case.name,
        own.map_or("–".into(), |o| format!("{o:.1}")),
        fps.map_or("unknown".into(), |f| format!("{f:.1}")),
        report["frame_detection"]["confirmed_by"]
            .as_array()
            .map(|c| c
                .iter()
                .map(|c| c["detail"].as_str().unwrap_or("pauses"))
                .collect::<Vec<_>>()
                .join(", "))
            .filter(|c| !c.is_empty())
            .unwrap_or_else(|| "–".into()),
        report["figures"]["writes_per_frame"]
            .as_f64()
            .map_or("–".into(), |w| format!("{w:.1}")),
        found.join(", "),
    )
}

/// One line of the accuracy table, as docs/wrap/costs.md shows it.
fn check(case: &Case, index: usize, dir: &Path) -> Vec<String> {
    let mut lines = Vec::new();
    for (run, size) in RUNS.into_iter().enumerate() {
        let frames_file = dir.join(format!(
            "{}-{size}-{run}.frames",
            case.name.replace('/', "-")
        ));
        let report_file = dir.join("report.json");
        let envs = [format!("FRAMES_FILE={}", frames_file.display())];
        let mut report = wrap(size, case.seconds, &envs, &case.command, &report_file);
        if case.known && !frames_file.exists() {
            // Ended before it could say how many frames it drew (SIGKILL after the grace,
            // on a loaded machine): no truth to check against; run it again, once.
            eprintln!("{} {size}: no count from the program, run again", case.name);
            report = wrap(size, case.seconds, &envs, &case.command, &report_file);
        }
        let label = format!("{} {size} run {run}", case.name);
        let detection = &report["frame_detection"];
        let fps = report["figures"]["fps"].as_f64();
        let own = if case.known {
            let (frames, seconds) = truth(&frames_file);
            let own = frames as f64 / seconds;
            let fps = fps.unwrap_or_else(|| panic!("{label}: frames unknown: {detection}"));
            assert!(
                (fps - own).abs() <= 0.10 * own,
                "{label}: wrap {fps:.2} fps, the program {own:.2} ({frames} in {seconds:.2} s): {detection}"
            );
            let method = report["frame_method"].as_str().unwrap_or_default();
            assert!(
                method == case.method || Some(method) == case.or_method,
                "{label}: {method}: {detection}"
            );
            Some(own)
        } else {
            let _ = std::fs::remove_file(&frames_file);
            assert!(fps.is_none(), "{label}: invented frames: {report}");
            None
        };
        assert_eq!(
            report["write_scope"]["scope"], case.scope,
            "{label}: {report}"
        );
        if case.scope != "terminal" {
            assert!(
                report["figures"]["writes_per_frame"].is_null(),
                "{label}: {report}"
            );
        }
        if case.name == "rust/stderr" && size == "200x60" {
            // The material's program: ~200,000 write(2) of ~2 bytes a frame (strace agrees
            // below), one or two frames a second.
            let writes = report["figures"]["writes_per_frame"].as_f64().unwrap();
            assert!(
                (150_000.0..300_000.0).contains(&writes),
                "{label}: {report}"
            );
            assert!(own.is_some_and(|own| own < 5.0), "{label}: {report}");
        }
        let found = check_diagnoses(case, &label, &report);
        lines.push(table_line(case, size, own, fps, &report, &found));
    }
    if case.counted_frames > 0 {
        // strace slows a program by its write(2) count, most of the corpus's time at two sizes:
        // the cases take turns instead, so that each size is checked.
        lines.push(check_writes(case, SIZES[index % SIZES.len()], dir));
    }
    lines
}

/// The program draws `counted_frames` frames under strace, then under wrap: the same count.
fn check_writes(case: &Case, size: &str, dir: &Path) -> String {
    let frames = format!("FRAMES={}", case.counted_frames);
    let log = dir.join("strace.log");
    let report_file = dir.join("report.json");
    let mut traced = strings(&["strace", "-f", "-qq", "-o"]);
    traced.push(log.to_string_lossy().into_owned());
    traced.extend(strings(&[
        "-e",
        "trace=write,writev,pwrite64,pwritev",
        "--",
        "env",
        &frames,
    ]));
    traced.extend(case.command.iter().cloned());
    // strace's own run without the observer, whose records to wrap are writes too.
    wrap_with(size, 300.0, &[], &traced, &report_file, &["--no-observer"]);
    let truth = strace_writes(&log);
    let report = wrap(size, 300.0, &[frames], &case.command, &report_file);
    let counted = report["tree_write_calls"].as_u64().unwrap();
    let label = format!("{} {size}, {} frames", case.name, case.counted_frames);
    assert!(
        (counted as f64 - truth as f64).abs() <= 0.05 * truth as f64,
        "{label}: wrap counted {counted} write(2), strace {truth}"
    );
    format!(
        "| {} | {size} | write(2) for {} frames: strace {truth}, wrap {counted} |",
        case.name, case.counted_frames
    )
}

/// One case at a time: two wrapped programs at once on 2 cores would measure each other.
static ONE_AT_A_TIME: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn one_at_a_time() -> std::sync::MutexGuard<'static, ()> {
    ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner())
}

fn run_cases(group: &str, cases: Vec<Case>) {
    let _alone = one_at_a_time();
    let dir = common::scratch_dir(&format!("corpus-{group}"));
    let mut table = Vec::new();
    for (index, case) in cases.iter().enumerate() {
        table.extend(check(case, index, &dir));
    }
    eprintln!("{}", table.join("\n"));
    std::fs::remove_dir_all(dir).unwrap();
}

fn need_strace() {
    assert!(
        has("strace"),
        "strace is needed (apt-get install strace; .ci/run installs it)"
    );
}

/// Interactive, in a terminal the test plays (80x24, read as fast as it comes): the frames a
/// steady 30 fps C program and the material's ratatui program draw, against their own counts.
#[test]
fn interactive_wrap_counts_the_programs_own_frames() {
    let _alone = one_at_a_time();
    let dir = common::scratch_dir("corpus-interactive");
    let binary = compile_stdio(&dir);
    for (name, command) in [
        (
            "c-30fps",
            vec![binary.to_string_lossy().into_owned(), "full".into()],
        ),
        (
            "rust-stderr",
            vec![example("corpus_ratatui"), "stderr".into()],
        ),
    ] {
        let frames_file = dir.join(format!("{name}.frames"));
        let report_file = dir.join(format!("{name}.json"));
        let mut args: Vec<std::ffi::OsString> = vec!["wrap".into(), "--report".into()];
        args.push(report_file.clone().into());
        args.extend(["--".into(), "env".into()]);
        args.push(format!("FRAMES_FILE={}", frames_file.display()).into());
        args.extend(command.iter().map(Into::into));
        let args: Vec<&std::ffi::OsStr> = args.iter().map(|a| a.as_os_str()).collect();
        let running = common::start(&[], &args);
        std::thread::sleep(std::time::Duration::from_secs(3));
        running.signal(rustix::process::Signal::TERM);
        let run = running.finish(std::time::Duration::from_secs(10));
        assert_eq!(run.code, Some(143), "{name}");
        let report: Value = serde_json::from_slice(&std::fs::read(&report_file).unwrap()).unwrap();
        let (frames, seconds) = truth(&frames_file);
        let own = frames as f64 / seconds;
        let fps = report["figures"]["fps"]
            .as_f64()
            .unwrap_or_else(|| panic!("{name}: frames unknown: {report}"));
        assert!(
            (fps - own).abs() <= 0.10 * own,
            "{name}: wrap {fps:.2} fps, the program {own:.2}: {report}"
        );
        eprintln!("| {name} | 80x24 interactive | {own:.1} | {fps:.1} |");
    }
    std::fs::remove_dir_all(dir).unwrap();
}

fn compile_stdio(dir: &Path) -> PathBuf {
    let binary = dir.join("stdio");
    let out = Command::new("gcc")
        .args(["-O2", "-o"])
        .arg(&binary)
        .arg(source("stdio.c"))
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    binary
}

#[test]
fn rust_ratatui_programs() {
    need_strace();
    run_cases("rust", rust_cases());
}

#[test]
fn c_stdio_programs() {
    need_strace();
    let dir = common::scratch_dir("corpus-cc");
    let binary: PathBuf = dir.join("stdio");
    let out = Command::new("gcc")
        .args(["-O2", "-o"])
        .arg(&binary)
        .arg(source("stdio.c"))
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    run_cases("c", c_cases(&binary));
    std::fs::remove_dir_all(dir).unwrap();
}

#[test]
fn python_programs() {
    need_strace();
    run_cases("python", python_cases());
}

#[test]
fn shell_node_and_debian_programs() {
    need_strace();
    run_cases("shell", shell_and_node_cases());
}
