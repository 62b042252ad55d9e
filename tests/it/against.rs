//! `wrap --against`: two builds on the same keys, one verdict. A small regression of a
//! self-timing program (20% more work a key) is slower by the ratio its own stamps give; an OLD
//! that is no command is one line and NEW never starts; CI's recipe runs as written. The mode's
//! logic (ABBA after a warm-up, exits 0/4/1, a stored run's advice, a terminal's last pixel, a
//! build that flashes) is tested without processes, on the mock executor
//! (crates/flushlab-wrap/src/modes/tests.rs).

use std::process::Command;

use serde_json::Value;

use super::common;
use super::keyed::one_at_a_time;

#[test]
fn an_old_build_that_is_no_command_is_one_line_and_new_never_starts() {
    let dir = common::scratch_dir("against");
    let mark = dir.join("new-started");
    let new = format!("touch {}", mark.display());
    for old in ["/nonexistent/old --flag", "'unclosed", ""] {
        let out = Command::new(env!("CARGO_BIN_EXE_flushlab"))
            .args([
                "wrap",
                "--keys",
                "j",
                "--against",
                old,
                "--",
                "sh",
                "-c",
                &new,
            ])
            .output()
            .unwrap();
        let said = common::assert_refused(&out, old);
        assert!(said.contains("--against"), "{said}");
        assert!(!mark.exists(), "NEW started for {old:?}");
    }
    let out = Command::new(env!("CARGO_BIN_EXE_flushlab"))
        .args(["wrap", "--against", "true", "--", "true"])
        .output()
        .unwrap();
    let said = common::assert_refused(&out, "--against without keys");
    assert!(said.contains("--keys"), "{said}");
}

/// A stored run that is none is one line naming it, before anything runs: an empty file, JSON
/// that is no run, a binary, a directory, a FIFO, a run without keys; exit 2.
#[test]
fn a_stored_run_that_is_none_is_one_line() {
    let dir = common::scratch_dir("against-stored");
    let write = |name: &str, bytes: &[u8]| {
        let path = dir.join(name);
        std::fs::write(&path, bytes).unwrap();
        path
    };
    let keyless =
        br#"{"version":"0.1.0","command":["x"],"cols":80,"rows":24,"exit_code":0,"keys":null}"#;
    let mut cases = vec![
        (write("empty.json", b""), "empty"),
        (write("other.json", b"{\"a\":1}"), "not a stored run"),
        (
            write("binary.json", b"\x7fELF\x02\x01\x1b[31m"),
            "not a stored run",
        ),
        (write("keyless.json", keyless), "without keys"),
        // A figure no run gives: refused, the field named.
        (
            write(
                "negative.json",
                br#"{"version":"0.1.0","command":["x"],"cols":80,"rows":24,"exit_code":0,"keys":{"script":"j","keys":1,"unanswered":0,"key_to_frame_ms":{"p50":-1.0,"p95":1.0,"max":1.0},"stages_ms":null,"bytes_per_key":10.0}}"#,
            ),
            "keys.key_to_frame_ms.p50",
        ),
    ];
    let sub = dir.join("dir.json");
    std::fs::create_dir(&sub).unwrap();
    cases.push((sub, "a directory"));
    let fifo = dir.join("fifo.json");
    assert!(
        Command::new("mkfifo")
            .arg(&fifo)
            .status()
            .unwrap()
            .success()
    );
    cases.push((fifo, "FIFO"));
    for (path, what) in cases {
        let out = Command::new(env!("CARGO_BIN_EXE_flushlab"))
            .args(["wrap", "--keys", "j", "--against"])
            .arg(&path)
            .args(["--", "true"])
            .output()
            .unwrap();
        let said = common::assert_refused(&out, what);
        assert!(said.contains(what), "{what}: {said}");
    }
}

/// A stored run over a wire is refused by the plan, before the wire or CMD starts: one line,
/// exit 2 (it once failed only after the wire was up, exit 1).
#[test]
fn a_stored_run_over_a_wire_is_refused_before_anything_starts() {
    let out = Command::new(env!("CARGO_BIN_EXE_flushlab"))
        .args([
            "wrap",
            "--keys",
            "j",
            "--via",
            "ssh",
            "--against",
            "old.json",
        ])
        .args(["--", "true"])
        .output()
        .unwrap();
    let said = common::assert_refused(&out, "--against run.json --via");
    // Where the wire itself cannot run here (not root, no sshd), its own refusal comes first.
    assert!(
        said.contains("a stored run is not compared over a wire") || said.contains("--via"),
        "{said}"
    );
}

/// Slow tier: 3.0 against 3.6 ms of work a key (tests/corpus/stages.c), rounds until the
/// interval decides (at a look of the schedule, said): slower, exit 4, the interval above 1, the ratio within 0.05 of the one the program's own stamps give
/// in the same runs (each key's send to its frame's last write, as the program stamped it; the
/// rounds' ratios of p50 taken as wrap takes them), processing named — on a quiet machine.
/// CI's machine is busy (both tiers' tests side by side): there the interval widens, and
/// "inconclusive" (exit 5) with an interval that still reaches above the threshold is the honest
/// answer; "same" or "faster" never is, and the stamps' ratio must then lie as close as half
/// the interval's width.
#[test]
#[cfg_attr(
    not(feature = "slow-tests"),
    ignore = "slow tier (rounds until decisive): cargo test --features slow-tests"
)]
fn a_small_regression_is_slower_by_what_its_own_stamps_say() {
    let _serial = one_at_a_time();
    let program = common::c_program("stages");
    let program = program.to_str().unwrap();
    let log = common::scratch("against-stamps.log");
    let report = common::scratch("against.json");
    let out = Command::new(env!("CARGO_BIN_EXE_flushlab"))
        .args(["wrap", "--size", "80x24", "--keys", "j*40@30ms q"])
        .args([
            "--against",
            &format!("{program} poll 3000 rows"),
            "--export-json",
        ])
        .arg(&*report)
        .args(["--", program, "poll", "3600", "rows"])
        .env("KEYS_LOG", &*log)
        .env("KEYS_LOG_APPEND", "1")
        .output()
        .unwrap();
    let said = String::from_utf8_lossy(&out.stderr).into_owned();
    let report = common::read_json(&report);
    let a = &report["against"];
    let ratio = |end: &str| a["ratio"][end].as_f64().unwrap();
    let (low, estimate, high) = (ratio("low"), ratio("estimate"), ratio("high"));
    let above = 1.0 + a["threshold"].as_f64().unwrap();
    match a["verdict"].as_str() {
        Some("slower") => {
            assert_eq!(out.status.code(), Some(4), "{said}");
            assert!(low > above, "{said}");
        }
        Some("inconclusive") => {
            assert_eq!(out.status.code(), Some(5), "{said}");
            assert!(low <= above && high > above, "{said}");
        }
        _ => panic!("20% more work a key is never same or faster: {said}"),
    }
    // Processing grew, as far as its own interval can tell, and no other stage is named. (A
    // busy machine can make a drain look ×1.25 "inconclusive" too: seen beside two burners.)
    let processing = a["stages"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["stage"] == "processing")
        .unwrap();
    assert!(
        ["slower", "inconclusive"].contains(&processing["verdict"].as_str().unwrap()),
        "{said}"
    );
    assert!(
        processing["ratio"]["high"].as_f64().unwrap() > above,
        "{said}"
    );
    assert!(a["moved"].is_null() || a["moved"] == "processing", "{said}");
    // Until it knew: the rounds it says it took, at a look of the schedule, and why it stopped.
    let rounds = report["rounds"].as_array().unwrap();
    assert_eq!(a["rounds"].as_u64(), Some(rounds.len() as u64), "{said}");
    let stopped = a["stopped_because"].as_str().unwrap();
    match a["verdict"].as_str() {
        Some("slower") => {
            assert_eq!(stopped, "decided", "{said}");
            assert!(
                [6, 10, 16, 24, 34, 46, 60].contains(&rounds.len()),
                "{said}"
            );
        }
        _ => assert!(["max-rounds", "max-time"].contains(&stopped), "{said}"),
    }
    assert!(
        said.contains(&format!("stopped after {} round(s)", rounds.len())),
        "{said}"
    );
    assert_eq!(rounds[1]["order"][0], "new", "ABBA");
    let truth = own_stamps_ratio(&std::fs::read_to_string(&*log).unwrap(), &report);
    let within = f64::max(0.05, (high - low) / 2.0);
    assert!(
        (estimate - truth).abs() <= within,
        "×{estimate:.3} against its own stamps' ×{truth:.3} (within {within:.3}): {said}"
    );
}

/// The ratio the program's own stamps give in the runs of an `--against` report, as wrap takes
/// the rounds': each key's send (wrap's) to its frame's last write (the program's stamp).
fn own_stamps_ratio(log: &str, report: &Value) -> f64 {
    // The program's own stamps, a run each, in the order the runs went: the warm-up (OLD, NEW),
    // then each round's order.
    let mut runs: Vec<Vec<f64>> = vec![vec![]];
    for line in log.lines() {
        if line.starts_with("clock") {
            runs.push(vec![]);
        } else {
            runs.last_mut()
                .unwrap()
                .push(line.split(' ').nth(2).unwrap().parse().unwrap());
        }
    }
    runs.pop();
    let rounds = report["rounds"].as_array().unwrap();
    assert_eq!(runs.len(), 2 + 2 * rounds.len(), "a log a run");
    let (mut old_runs, mut new_runs) = (
        report["old_runs"].as_array().unwrap().iter(),
        report["new_runs"].as_array().unwrap().iter(),
    );
    let own_p50 = |stamps: &[f64], run: &Value| {
        let mut t: Vec<f64> = run["keys"]["each"]
            .as_array()
            .unwrap()
            .iter()
            .zip(stamps)
            .map(|(k, last)| (last - k["sent_ns"].as_f64().unwrap()) / 1e6)
            .collect();
        t.sort_by(f64::total_cmp);
        // The nearest rank, as wrap takes a p50.
        t[t.len().div_ceil(2) - 1]
    };
    let mut logs = runs[2..].iter();
    let mut log_ratios = Vec::new();
    for round in rounds {
        let mut p50 = [0.0; 2];
        for build in round["order"].as_array().unwrap() {
            let (i, run) = match build.as_str().unwrap() {
                "old" => (0, old_runs.next().unwrap()),
                _ => (1, new_runs.next().unwrap()),
            };
            p50[i] = own_p50(logs.next().unwrap(), run);
        }
        log_ratios.push((p50[1] / p50[0]).ln());
    }
    // As wrap takes them: the mean of the rounds' log ratios without the highest and lowest
    // tenth.
    log_ratios.sort_by(f64::total_cmp);
    let cut = log_ratios.len() / 10;
    let kept = &log_ratios[cut..log_ratios.len() - cut];
    (kept.iter().sum::<f64>() / kept.len() as f64).exp()
}

// A build that crashes or never answers: the verdict's logic is held on the mock executor
// (crates/flushlab-wrap/src/modes/tests.rs, no process); a crash's status reaching the report
// is held by `keyed::a_cmd_that_crashes_or_is_killed_mid_script_ends_wrap_with_its_status`.

/// Slow tier: the CI job's command in docs/ci.md, run as written there, with the corpus program
/// built twice for `./my-tui-base` (3 ms of work a key) and `./target/release/my-tui` (the same):
/// it ends with a verdict (0, or 5 on a busy machine) and writes the summary page. Within 10 s
/// of rounds (`--max-time 10` added): two identical builds decide only on a quiet machine, and
/// otherwise ran the whole 240 s budget, holding every serial test behind it; the rounds until
/// decisive are `rounds.rs`'s tests' and `a_small_regression_is_slower_by_what_its_own_stamps_say`'s.
#[test]
#[cfg_attr(
    not(feature = "slow-tests"),
    ignore = "slow tier (the CI recipe, rounds until decisive): cargo test --features slow-tests"
)]
fn the_ci_recipes_command_runs_as_written() {
    let _serial = one_at_a_time();
    let page = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/docs/ci.md")).unwrap();
    let start = page
        .find("flushlab wrap --size 200x60 --keys 'j*30")
        .unwrap();
    let end = start + page[start..].find("./target/release/my-tui").unwrap();
    let line = page[start..end + "./target/release/my-tui".len()].replace("\\\n", " ");
    let words = flushlab_core::units::parse_words(&line).unwrap();
    let program = common::c_program("stages");
    let program = program.to_str().unwrap();
    let dir = common::scratch_dir("against-ci");
    let page_out = dir.join("verdict.md");
    let mut args: Vec<String> = Vec::new();
    for word in &words[1..] {
        if word == "--against" {
            args.extend(["--max-time", "10"].map(str::to_owned));
        }
        match word.as_str() {
            "./my-tui-base" => args.push(format!("{program} poll 3000 rows")),
            "./target/release/my-tui" => {
                args.extend([program, "poll", "3000", "rows"].map(str::to_owned))
            }
            "verdict.md" => args.push(page_out.to_str().unwrap().to_owned()),
            other => args.push(other.to_owned()),
        }
    }
    let out = Command::new(env!("CARGO_BIN_EXE_flushlab"))
        .args(&args)
        .output()
        .unwrap();
    let said = String::from_utf8_lossy(&out.stderr);
    assert!(matches!(out.status.code(), Some(0 | 5)), "{said}");
    let md = std::fs::read_to_string(&page_out).unwrap();
    assert!(md.starts_with("### wrap --against"), "{md}");
}
