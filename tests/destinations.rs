//! Every output flag takes `-` for standard output: what it writes there is the format alone
//! (the table for people goes to stderr then), and no file named `-` is ever created.

mod common;

use std::path::Path;
use std::process::{Command, Output, Stdio};

use common::scratch_dir;

/// flushlab with `args` and `envs`, run in `dir` (where a file named `-` would appear).
fn flushlab(dir: &Path, envs: &[(&str, &str)], args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_flushlab"))
        .current_dir(dir)
        .envs(envs.iter().copied())
        .args(args)
        .stdin(Stdio::null())
        .output()
        .unwrap()
}

fn json(out: &Output, what: &str) -> serde_json::Value {
    assert!(
        out.status.success(),
        "{what}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "{what}: stdout is not JSON alone ({e}): {}",
            String::from_utf8_lossy(&out.stdout)
        )
    })
}

const QUICK: [&str; 9] = [
    "bench",
    "--duration",
    "0.3",
    "--runs",
    "1",
    "--warmup",
    "0",
    "--modes",
    "stdout/frame",
];

#[test]
fn every_output_flag_writes_only_its_format_to_stdout() {
    let dir = scratch_dir("destinations");
    // bench: each export alone on stdout, the table on stderr.
    let bench = flushlab(&dir, &[], &[&QUICK[..], &["--export-json", "-"]].concat());
    let results = json(&bench, "bench --export-json -");
    assert_eq!(results["results"][0]["mode"], "stdout/frame");
    assert!(String::from_utf8_lossy(&bench.stderr).contains("| stdout/frame"));
    let csv = flushlab(&dir, &[], &[&QUICK[..], &["--export-csv", "-"]].concat());
    assert!(csv.status.success());
    let csv = String::from_utf8(csv.stdout).unwrap();
    assert!(csv.starts_with("mode,size,"), "{csv}");
    assert_eq!(csv.lines().count(), 2, "{csv}");
    let plot = flushlab(&dir, &[], &[&QUICK[..], &["--plot", "-"]].concat());
    assert!(plot.status.success());
    let svg = String::from_utf8(plot.stdout).unwrap();
    assert!(svg.starts_with("<svg") && svg.trim_end().ends_with("</svg>"));
    // Without `-`, the table is on stdout as before.
    let table = flushlab(&dir, &[], &QUICK);
    assert!(String::from_utf8_lossy(&table.stdout).contains("| stdout/frame"));

    // report: the chart or the Markdown table on stdout, the table for people on stderr.
    let file = dir.join("results.json");
    std::fs::write(&file, &bench.stdout).unwrap();
    let file = file.to_str().unwrap();
    let report = flushlab(&dir, &[], &["report", file, "--plot", "-"]);
    assert!(report.status.success());
    assert!(report.stdout.starts_with(b"<svg"));
    let both = flushlab(
        &dir,
        &[],
        &["report", file, "--plot", "-", "--export-markdown", "-"],
    );
    assert_eq!(both.status.code(), Some(2));

    // Two exports to one destination, stdout included, are refused before anything runs.
    let twice = flushlab(
        &dir,
        &[],
        &[&QUICK[..], &["--export-json", "-", "--export-csv", "-"]].concat(),
    );
    assert_eq!(twice.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&twice.stderr).contains("'-' is given to two of"));
    // An empty destination is a usage error that names the flag.
    let empty = flushlab(&dir, &[], &["report", file, "--plot", ""]);
    assert_eq!(empty.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&empty.stderr).contains("--plot"));

    assert!(
        !dir.join("-").exists(),
        "a file named '-' was created: {:?}",
        std::fs::read_dir(&dir).unwrap().collect::<Vec<_>>()
    );
    std::fs::remove_dir_all(dir).unwrap();
}

#[test]
fn the_run_the_flood_and_wrap_put_their_json_alone_on_stdout() {
    let dir = scratch_dir("destinations-json");
    // The headless run and the flood: the report on stdout when the output is on stderr.
    let run = flushlab(
        &dir,
        &[("STREAM", "stderr"), ("DURATION", "0.3"), ("SIZE", "40x10")],
        &["--export-json", "-"],
    );
    assert_eq!(json(&run, "--export-json -")["stream"], "stderr");
    // The old spelling is kept, hidden.
    let old = flushlab(
        &dir,
        &[("STREAM", "stderr"), ("DURATION", "0.3"), ("SIZE", "40x10")],
        &["--report", "-"],
    );
    assert_eq!(json(&old, "--report -")["stream"], "stderr");
    let flood = flushlab(
        &dir,
        &[],
        &[
            "flood",
            "--writer",
            "eprintln",
            "--lines",
            "1000",
            "--export-json",
            "-",
        ],
    );
    assert_eq!(json(&flood, "flood --export-json -")["writer"], "eprintln");
    // Where stdout already carries the frames or the lines, `-` is refused in one line.
    for (envs, args) in [
        (
            &[("STREAM", "stdout"), ("DURATION", "0.3")][..],
            &["--export-json", "-"][..],
        ),
        (&[], &["flood", "--lines", "10", "--export-json", "-"]),
    ] {
        let refused = flushlab(&dir, envs, args);
        assert_eq!(refused.status.code(), Some(2), "{args:?}");
        let said = String::from_utf8_lossy(&refused.stderr);
        assert!(
            said.contains("both use stdout") && said.lines().count() == 1,
            "{said}"
        );
        assert!(refused.stdout.is_empty());
    }

    // wrap: the report alone on stdout, the summary on stderr.
    let wrap = flushlab(
        &dir,
        &[],
        &[
            "wrap",
            "--duration",
            "0.3",
            "--export-json",
            "-",
            "--",
            "true",
        ],
    );
    assert!(json(&wrap, "wrap --export-json -")["bytes"].is_u64());
    assert!(!dir.join("-").exists(), "a file named '-' was created");
    std::fs::remove_dir_all(&dir).unwrap();
}
