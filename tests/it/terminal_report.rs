//! `flushlab report` on tour results recorded here: one from tmux 3.3a, one from the test
//! suite's fake terminal (tests/it/tour.rs).

// A test is one story from setup to its last assertion: the length limit is for src/.

use crate::common;

use std::path::Path;
use std::process::Command;

use flushlab::commands::report::pivot;
use flushlab_core::results::BenchResults;

fn fixture(name: &str) -> BenchResults {
    serde_json::from_slice(&std::fs::read(format!("tests/fixtures/tours/{name}.json")).unwrap())
        .unwrap()
}

#[test]
fn terminals_by_modes_snapshot() {
    insta::assert_snapshot!(pivot(&[fixture("tmux"), fixture("fake-term")]));
}

#[test]
fn report_writes_table_and_chart() {
    let dir = common::scratch_dir("report");
    let (md, svg) = (dir.join("terminals.md"), dir.join("terminals.svg"));
    let out = Command::new(env!("CARGO_BIN_EXE_flushlab"))
        .args([
            "report",
            "tests/fixtures/tours/tmux.json",
            "tests/fixtures/tours/fake-term.json",
            "--markdown",
        ])
        .arg(&md)
        .arg("--plot")
        .arg(&svg)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(std::fs::read(&md).unwrap(), out.stdout);
    let chart = std::fs::read_to_string(&svg).unwrap();
    assert!(chart.contains("tmux 3.3a") && chart.contains("fake-term(1)"));
    let bad = Command::new(env!("CARGO_BIN_EXE_flushlab"))
        .args(["report", "Cargo.toml"])
        .output()
        .unwrap();
    assert_eq!(bad.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&bad.stderr).contains("not a flushlab result file"));
    std::fs::remove_dir_all(dir).unwrap();
}

/// Outputs that cannot all be written are refused before any result file is read: one line
/// naming the flag and the value, exit 2, nothing written.
#[test]
fn outputs_are_checked_before_anything_is_read() {
    let dir = common::scratch_dir("report-plan");
    let same = dir.join("same");
    let cases: [(&[&std::ffi::OsStr], &str); 3] = [
        (
            &[
                "--export-markdown".as_ref(),
                same.as_os_str(),
                "--plot".as_ref(),
                same.as_os_str(),
            ],
            "is given to two of --export-markdown, --plot",
        ),
        (
            &["--plot".as_ref(), "/nonexistent-dir/x.svg".as_ref()],
            "--plot '/nonexistent-dir/x.svg'",
        ),
        (
            &[
                "--export-markdown".as_ref(),
                "-".as_ref(),
                "--plot".as_ref(),
                "-".as_ref(),
            ],
            "'-' is given to two of",
        ),
    ];
    for (flags, said) in cases {
        let out = Command::new(env!("CARGO_BIN_EXE_flushlab"))
            // Not a result file: the plan refuses before it would be read.
            .args(["report", "Cargo.toml"])
            .args(flags)
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{flags:?}: {stderr}");
        assert_eq!(stderr.lines().count(), 1, "{flags:?}: {stderr}");
        assert!(stderr.contains(said), "{flags:?}: {stderr}");
        assert!(out.stdout.is_empty());
    }
    assert!(!same.exists());
    std::fs::remove_dir_all(dir).unwrap();
}

/// A corruption of a good result file.
type Corrupt = fn(&mut serde_json::Value);

/// The tmux tour's result file, broken ten ways, and two files that are not one: (what, bytes,
/// the exit code `report` must give).
fn hostile_result_files() -> Vec<(String, Vec<u8>, i32)> {
    let tmux: serde_json::Value =
        serde_json::from_slice(&std::fs::read("tests/fixtures/tours/tmux.json").unwrap()).unwrap();
    // (what, how, exit code): a hostile name is printed escaped, a hostile number refused.
    let cases: [(&str, Corrupt, i32); 10] = [
        (
            "fps 1.7e308",
            |r| r["results"][0]["fps"]["max"] = 1.7e308.into(),
            1,
        ),
        (
            "a negative fps",
            |r| r["results"][0]["runs"][0]["fps"] = (-1.0).into(),
            1,
        ),
        (
            "writes 1e300",
            |r| r["results"][1]["writes_per_frame"] = 1e300.into(),
            1,
        ),
        (
            "ESC in a mode name",
            |r| r["results"][0]["mode"] = "stdout/\u{1b}[2J".into(),
            1,
        ),
        (
            "an unknown mode",
            |r| r["results"][0]["mode"] = "stdout/fast".into(),
            1,
        ),
        (
            "ESC in terminal.term",
            |r| {
                r["terminal"]["version_reply"] = serde_json::Value::Null;
                r["terminal"]["term"] = "\u{1b}]0;pwned\u{7}xterm\u{1b}[2J".into();
            },
            0,
        ),
        (
            "ESC in the version reply",
            |r| r["terminal"]["version_reply"] = "\u{1b}[31mred".into(),
            0,
        ),
        (
            "a string where a number goes",
            |r| r["results"][0]["fps"]["max"] = "9".into(),
            1,
        ),
        (
            "a size that is not COLSxROWS, with a line break and ESC",
            |r| r["settings"]["sizes"][0] = "80x24|\r\n\u{1b}[2J".into(),
            1,
        ),
        (
            "a sink flushlab has not",
            |r| r["results"][0]["sink"] = "socket".into(),
            1,
        ),
    ];
    let mut files: Vec<(String, Vec<u8>, i32)> = cases
        .iter()
        .map(|(what, corrupt, code)| {
            let mut results = tmux.clone();
            corrupt(&mut results);
            (
                what.to_string(),
                serde_json::to_vec(&results).unwrap(),
                *code,
            )
        })
        .collect();
    files.push((
        "JSON nested 100,000 deep".into(),
        "[".repeat(100_000).into_bytes(),
        1,
    ));
    files.push(("not JSON".into(), b"\x1b[2J\x1b]0;pwned\x07".to_vec(), 1));
    files
}

#[test]
fn hostile_result_files_get_one_line_never_a_panic_a_hang_or_an_escape() {
    let dir = common::scratch_dir("hostile-results");
    let files = hostile_result_files();
    for (i, (what, bytes, expected)) in files.iter().enumerate() {
        let path = dir.join(format!("case-{i}.json"));
        std::fs::write(&path, bytes).unwrap();
        let svg = dir.join(format!("case-{i}.svg"));
        let mut child = Command::new(env!("CARGO_BIN_EXE_flushlab"))
            .arg("report")
            .arg(&path)
            .arg("--plot")
            .arg(&svg)
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        common::wait_for(std::time::Duration::from_secs(20), what, || {
            child.try_wait().unwrap()
        });
        let out = child.wait_with_output().unwrap();
        let (stdout, stderr) = (
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr),
        );
        assert_eq!(out.status.code(), Some(*expected), "{what}: {stderr}");
        assert!(
            !stdout.contains('\x1b') && !stderr.contains('\x1b'),
            "{what}: {stdout}{stderr}"
        );
        assert!(
            !stdout.contains('\x07') && !stderr.contains('\x07'),
            "{what}"
        );
        if *expected == 1 {
            assert_eq!(stderr.lines().count(), 1, "{what}: {stderr}");
            assert!(
                stderr.contains(&format!("case-{i}.json")),
                "{what}: {stderr}"
            );
        }
    }
    std::fs::remove_dir_all(dir).unwrap();
}

/// Names from a result file reach the Markdown table and the SVG chart as text: no control
/// character (so no escape sequence and no invalid XML), no `|` or line break that would start
/// a cell or a row of its own.
#[test]
fn names_from_a_result_file_stay_text_in_markdown_and_svg() {
    let dir = common::scratch_dir("escaped-report");
    let mut tour: serde_json::Value =
        serde_json::from_slice(&std::fs::read("tests/fixtures/tours/tmux.json").unwrap()).unwrap();
    tour["terminal"]["version_reply"] = serde_json::Value::Null;
    tour["terminal"]["term_program"] = "tmux\u{1b}[2J\u{7} | injected |\n| row | 1 |\u{1}".into();
    let input = dir.join("tour.json");
    std::fs::write(&input, serde_json::to_vec(&tour).unwrap()).unwrap();
    let (markdown, svg) = (dir.join("table.md"), dir.join("chart.svg"));
    let out = Command::new(env!("CARGO_BIN_EXE_flushlab"))
        .arg("report")
        .arg(&input)
        .arg("--markdown")
        .arg(&markdown)
        .arg("--plot")
        .arg(&svg)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let table = std::fs::read_to_string(&markdown).unwrap();
    let chart = std::fs::read_to_string(&svg).unwrap();
    for (what, text) in [
        ("markdown", &table),
        ("svg", &chart),
        ("stdout", &String::from_utf8_lossy(&out.stdout).into_owned()),
    ] {
        assert!(
            !text.chars().any(|c| c.is_control() && c != '\n'),
            "{what}: {text:?}"
        );
        assert!(
            text.contains("\\u{1b}[2J"),
            "{what} shows the escape as text"
        );
    }
    // Header, rule and one row: the name's `|` and line break made no cell or row.
    let rows: Vec<&str> = table.lines().filter(|l| l.starts_with('|')).collect();
    assert_eq!(rows.len(), 3, "{table}");
    let cells = |line: &str| line.replace("\\|", "").matches('|').count();
    assert_eq!(cells(rows[2]), cells(rows[0]), "{table}");
    std::fs::remove_dir_all(dir).unwrap();
}

/// What `report` reads is bounded (4 MiB a result file, docs/reliability.md) and so is the
/// memory it takes to read it; an input that cannot be read (`/proc/self/mem` gives EIO) is
/// that file's error, named, never a silent "reader gone".
#[test]
fn result_files_are_bounded_and_unreadable_ones_are_named() {
    let dir = common::scratch_dir("bounded-report");
    let within = dir.join("zeros.json");
    let mut zeros = b"{\"x\":[".to_vec();
    zeros.extend(b"0,".repeat(((4 << 20) - 64) / 2));
    zeros.extend(b"0]}");
    std::fs::write(&within, &zeros).unwrap();
    let over = dir.join("over.json");
    let mut big = b"{\"x\":[".to_vec();
    big.extend(b"0,".repeat((4 << 20) / 2));
    big.extend(b"0]}");
    std::fs::write(&over, &big).unwrap();
    let mem = Path::new("/proc/self/mem");
    let cases: [(&Path, &str); 3] = [
        (&within, "is not a flushlab result file"),
        (&over, "larger than the 4 MiB flushlab reads"),
        (mem, "Input/output error"),
    ];
    for (path, expected) in cases {
        // 128 MiB of heap: reading the worst 4 MiB file measured 76 MB.
        let out = Command::new("prlimit")
            .arg(format!("--data={}", 128u64 << 20))
            .arg("--")
            .arg(env!("CARGO_BIN_EXE_flushlab"))
            .arg("report")
            .arg(path)
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{}: {stderr}", path.display());
        assert_eq!(stderr.lines().count(), 1, "{stderr}");
        assert!(stderr.contains(&*path.to_string_lossy()), "{stderr}");
        assert!(stderr.contains(expected), "{stderr}");
    }
    std::fs::remove_dir_all(dir).unwrap();
}

/// `flushlab paint` results merge too: a painted table, a row per terminal × mode × sync, and
/// their chart; a hostile name stays text, a number out of range is named.
#[test]
fn paint_results_merge_into_a_painted_table() {
    let report = |args: &[&str]| {
        Command::new(env!("CARGO_BIN_EXE_flushlab"))
            .arg("report")
            .args(args)
            .output()
            .unwrap()
    };
    let out = report(&[
        "docs/results/paint-80x24.json",
        "docs/results/paint-200x60.json",
    ]);
    let table = common::unpadded_tables(&String::from_utf8_lossy(&out.stdout));
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    for row in [
        "| xterm | stdout/frame | off | 80x24 | 3 |",
        "| kitty | stdout/frame | on | 200x60 | 3 |",
    ] {
        assert!(table.contains(row), "{row} in {table}");
    }
    let dir = common::scratch_dir("paint-report");
    let svg = dir.join("painted.svg");
    let out = report(&[
        "docs/results/paint-80x24.json",
        "--plot",
        svg.to_str().unwrap(),
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        std::fs::read_to_string(&svg)
            .unwrap()
            .contains("xterm stdout/frame 80x24")
    );

    let hostile = dir.join("hostile.json");
    let text = std::fs::read_to_string("docs/results/paint-80x24.json").unwrap();
    std::fs::write(
        &hostile,
        text.replacen("\"xterm\"", "\"x\\u001b[2J|\\nrow\"", 1),
    )
    .unwrap();
    let out = report(&[hostile.to_str().unwrap()]);
    let table = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success());
    assert!(!table.contains('\u{1b}'), "{table}");
    let negative = dir.join("negative.json");
    std::fs::write(
        &negative,
        text.replacen("\"torn_share\": ", "\"torn_share\": -", 1),
    )
    .unwrap();
    let out = report(&[negative.to_str().unwrap()]);
    assert_eq!(
        out.status.code(),
        Some(1),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(String::from_utf8_lossy(&out.stderr).contains("torn_share"));
}
