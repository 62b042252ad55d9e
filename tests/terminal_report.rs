//! `flushlab report` on tour results recorded here: one from tmux 3.3a, one from the test
//! suite's fake terminal (tests/tour.rs).

mod common;

use std::process::Command;

use flushlab::results::BenchResults;
use flushlab::terminal_report::pivot;

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
