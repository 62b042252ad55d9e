//! The profile digest on two small profiles recorded here by samply
//! (`scripts/record-profiles.sh --duration 0.5 --size 80x24 --out tests/fixtures/profiles
//! stderr/raw stdout/frame`).

// A test is one story from setup to its last assertion: the length limit is for src/.

use crate::common;

use std::path::Path;
use std::process::{Command, Stdio};

use flushlab::commands::profile::{digest, render_table};

const RAW: &str = "tests/fixtures/profiles/stderr-raw.json.gz";
const FRAME: &str = "tests/fixtures/profiles/stdout-frame.json.gz";

#[test]
fn raw_spends_its_samples_in_write_and_frame_does_not() {
    let raw = digest(Path::new(RAW), 5).unwrap();
    let frame = digest(Path::new(FRAME), 5).unwrap();
    assert_eq!(raw.mode.as_deref(), Some("stderr/raw"));
    assert_eq!(frame.mode.as_deref(), Some("stdout/frame"));
    assert!(raw.samples > 100 && frame.samples > 100);
    assert!(raw.write_share > 0.5, "{raw:?}");
    assert!(
        raw.write_share > 3.0 * frame.write_share,
        "raw {raw:?}\nframe {frame:?}"
    );
    assert!(frame.ratatui_share > frame.write_share, "{frame:?}");
    // Per frame, raw costs far more samples: thousands of syscalls each.
    assert!(raw.samples_per_frame.unwrap() > 10.0 * frame.samples_per_frame.unwrap());
    for d in [&raw, &frame] {
        let sum = d.write_share + d.writer_share + d.ratatui_share + d.scene_share + d.other_share;
        assert!((sum - 1.0).abs() < 1e-9, "{sum}");
        assert_eq!(d.top.len(), 5);
        assert!(d.top.windows(2).all(|w| w[0].samples >= w[1].samples));
    }
    assert!(raw.top[0].function.contains("write"), "{:?}", raw.top[0]);
}

#[test]
fn digest_table_snapshot() {
    let digests = [
        digest(Path::new(RAW), 3).unwrap(),
        digest(Path::new(FRAME), 3).unwrap(),
    ];
    insta::assert_snapshot!(render_table(&digests));
}

#[test]
fn json_output_and_bad_input() {
    let out = Command::new(env!("CARGO_BIN_EXE_flushlab"))
        .args(["profile", "--json", RAW, FRAME])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let rows = json.as_array().unwrap();
    assert_eq!(rows.len(), 2);
    for row in rows {
        assert!(row["file"].as_str().unwrap().ends_with(".json.gz"));
        assert!(row["samples"].as_u64().unwrap() > 0);
        let share = row["write_share"].as_f64().unwrap();
        assert!((0.0..=1.0).contains(&share));
    }
    let missing = Command::new(env!("CARGO_BIN_EXE_flushlab"))
        .args(["profile", "nope.json.gz"])
        .output()
        .unwrap();
    assert_eq!(missing.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&missing.stderr).contains("nope.json.gz"));
    let none = Command::new(env!("CARGO_BIN_EXE_flushlab"))
        .arg("profile")
        .output()
        .unwrap();
    assert_eq!(none.status.code(), Some(2));
}

/// The fixture profile, decompressed and parsed, with the index of its flushlab thread.
fn fixture_profile() -> (serde_json::Value, usize) {
    use std::io::Read;
    let mut json = Vec::new();
    flate2::read::GzDecoder::new(std::fs::File::open(RAW).unwrap())
        .read_to_end(&mut json)
        .unwrap();
    let profile: serde_json::Value = serde_json::from_slice(&json).unwrap();
    let thread = profile["threads"]
        .as_array()
        .unwrap()
        .iter()
        .position(|t| t["processName"] == "flushlab")
        .unwrap();
    (profile, thread)
}

fn gzip(bytes: &[u8]) -> Vec<u8> {
    use std::io::Write;
    let mut encoder = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    encoder.write_all(bytes).unwrap();
    encoder.finish().unwrap()
}

/// The memory docs/reliability.md promises `flushlab profile` stays within, for any file
/// (a 16 MiB profile, decompressed, of the worst shape measured peaks at ~110 MB RSS): the
/// heap limit every run here gets, so a file that takes more fails the test by aborting.
const MEMORY_BOUND: u64 = 160 << 20;

/// Runs `flushlab profile FILE` with a deadline and [`MEMORY_BOUND`] as its heap limit (util-linux
/// `prlimit --data`); its exit code, stdout and stderr.
fn profile_of(file: &Path) -> (Option<i32>, Vec<u8>, String) {
    let mut child = Command::new("prlimit")
        .arg(format!("--data={MEMORY_BOUND}"))
        .arg("--")
        .arg(env!("CARGO_BIN_EXE_flushlab"))
        .arg("profile")
        .arg(file)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let started = std::time::Instant::now();
    while child.try_wait().unwrap().is_none() {
        if started.elapsed() > std::time::Duration::from_secs(30) {
            child.kill().unwrap();
            panic!("flushlab profile {} hung", file.display());
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    let out = child.wait_with_output().unwrap();
    (
        out.status.code(),
        out.stdout,
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
#[cfg_attr(
    not(feature = "slow-tests"),
    ignore = "slow tier (3 s): cargo test --features slow-tests"
)]
fn hostile_profiles_are_refused_with_one_line_never_a_panic_or_a_hang() {
    type Corrupt = fn(&mut serde_json::Value);
    let cases: [(&str, Corrupt); 8] = [
        ("frame's func out of range", |t| {
            t["frameTable"]["func"][0] = 1_000_000_000.into()
        }),
        ("stack's frame out of range", |t| {
            t["stackTable"]["frame"][0] = 1_000_000_000.into()
        }),
        ("sample's stack out of range", |t| {
            t["samples"]["stack"][0] = 1_000_000_000.into()
        }),
        ("func's name out of range", |t| {
            t["funcTable"]["name"][0] = 1_000_000_000.into()
        }),
        ("resource's lib out of range", |t| {
            t["resourceTable"]["lib"][0] = 1_000_000_000.into()
        }),
        ("a stack that is its own prefix", |t| {
            let last = t["stackTable"]["prefix"].as_array().unwrap().len() - 1;
            t["stackTable"]["prefix"][last] = last.into();
        }),
        ("a later stack as prefix", |t| {
            let last = t["stackTable"]["prefix"].as_array().unwrap().len() - 1;
            t["stackTable"]["prefix"][0] = last.into();
        }),
        ("prefix and frame of different lengths", |t| {
            t["stackTable"]["prefix"].as_array_mut().unwrap().pop();
        }),
    ];
    let dir = common::scratch_dir("hostile-profiles");
    let (profile, thread) = fixture_profile();
    let mut files: Vec<(String, Vec<u8>)> = cases
        .iter()
        .map(|(what, corrupt)| {
            let mut profile = profile.clone();
            corrupt(&mut profile["threads"][thread]);
            (
                what.to_string(),
                gzip(&serde_json::to_vec(&profile).unwrap()),
            )
        })
        .collect();
    let nested = "[".repeat(100_000);
    files.extend([
        ("JSON nested 100,000 deep".into(), nested.into_bytes()),
        // 300 MiB of zeros inflate from a few hundred KB: past the bound, never in memory.
        ("a gzip bomb".into(), gzip(&vec![0u8; 300 << 20])),
        (
            "a truncated gzip".into(),
            gzip(b"{\"meta\": {}}")[..12].to_vec(),
        ),
        ("not JSON".into(), b"\x1b[2J\x1b]0;pwned\x07".to_vec()),
        ("empty".into(), Vec::new()),
    ]);
    for (i, (what, bytes)) in files.iter().enumerate() {
        let path = dir.join(format!("case-{i}.json.gz"));
        std::fs::write(&path, bytes).unwrap();
        let (code, stdout, stderr) = profile_of(&path);
        assert_eq!(code, Some(1), "{what}: {stderr}");
        assert!(stdout.is_empty(), "{what}");
        assert!(
            stderr.contains(&format!("case-{i}.json.gz")),
            "{what}: {stderr}"
        );
        assert!(!stderr.contains('\x1b'), "{what}: {stderr}");
        assert!(!stderr.contains("panicked"), "{what}: {stderr}");
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn control_characters_in_a_profile_never_reach_the_terminal() {
    let dir = common::scratch_dir("escaped-profile");
    let (mut profile, thread) = fixture_profile();
    for name in profile["threads"][thread]["stringArray"]
        .as_array_mut()
        .unwrap()
    {
        *name = format!("\x1b]0;pwned\x07{}\x1b[2J", name.as_str().unwrap()).into();
    }
    let path = dir.join("escaped.json.gz");
    std::fs::write(&path, gzip(&serde_json::to_vec(&profile).unwrap())).unwrap();
    let (code, stdout, stderr) = profile_of(&path);
    assert_eq!(code, Some(0), "{stderr}");
    let stdout = String::from_utf8(stdout).unwrap();
    assert!(stdout.contains("pwned"), "{stdout}");
    assert!(
        !stdout.contains('\x1b') && !stdout.contains('\x07'),
        "{stdout}"
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

/// A profile of one flushlab thread whose tables are given as JSON text.
fn profile_json(
    interval: &str,
    samples: &str,
    stacks: &str,
    frames: &str,
    strings: &str,
) -> Vec<u8> {
    format!(
        r#"{{"meta":{{"interval":{interval}}},"libs":[],"threads":[{{"processName":"flushlab","samples":{samples},"stackTable":{stacks},"frameTable":{frames},"funcTable":{{"name":[0],"resource":[null]}},"resourceTable":{{"lib":[]}},"stringArray":{strings}}}]}}"#
    )
    .into_bytes()
}

/// `n` copies of `item`, comma-separated, in brackets.
fn json_list(item: &str, n: usize) -> String {
    let mut list = String::with_capacity(n * (item.len() + 1) + 2);
    list.push('[');
    for i in 0..n {
        if i > 0 {
            list.push(',');
        }
        list.push_str(item);
    }
    list.push(']');
    list
}

const ONE_STACK: &str = r#"{"frame":[0],"prefix":[null]}"#;
const ONE_FRAME: &str = r#"{"address":[null],"func":[0]}"#;
const ONE_NAME: &str = r#"["main"]"#;

/// CHAIN stacks, each the one before it and a frame, each sampled once.
fn a_chain_of_stacks(chain: usize) -> Vec<u8> {
    let prefixes: String = {
        let mut p = String::from("[null");
        for i in 0..chain - 1 {
            p.push_str(&format!(",{i}"));
        }
        p + "]"
    };
    let all: Vec<String> = (0..chain).map(|i| i.to_string()).collect();
    profile_json(
        "1",
        &format!(r#"{{"stack":[{}]}}"#, all.join(",")),
        &format!(
            r#"{{"frame":{},"prefix":{prefixes}}}"#,
            json_list("0", chain)
        ),
        ONE_FRAME,
        ONE_NAME,
    )
}

/// A hostile profile: what it is, its bytes, the exit code and a word the digest must say.
type Hostile = (&'static str, Vec<u8>, Option<i32>, &'static str);

/// Each shape filling the 16 MiB a profile may inflate to, a chain of 400,000 stacks, and a
/// byte too many.
fn hostile_profiles() -> Vec<Hostile> {
    let near_limit = |entry_bytes: usize| (16 << 20) / entry_bytes - 512;
    vec![
        (
            "a chain of 400,000 stacks",
            a_chain_of_stacks(400_000),
            Some(0),
            "400000",
        ),
        (
            "16 MiB of sampled stacks",
            profile_json(
                "1",
                &format!(r#"{{"stack":{}}}"#, json_list("0", near_limit(2))),
                ONE_STACK,
                ONE_FRAME,
                ONE_NAME,
            ),
            Some(0),
            "100%  main",
        ),
        (
            "16 MiB of empty names",
            profile_json(
                "1",
                r#"{"stack":[0]}"#,
                ONE_STACK,
                ONE_FRAME,
                // The first name is the function's; the rest only fill the table.
                &json_list(r#""""#, near_limit(3)).replacen('[', r#"["main","#, 1),
            ),
            Some(0),
            "100%  main",
        ),
        (
            "16 MiB of weights",
            profile_json(
                "1",
                &format!(
                    r#"{{"stack":[0],"weight":{}}}"#,
                    json_list("1", near_limit(2))
                ),
                ONE_STACK,
                ONE_FRAME,
                ONE_NAME,
            ),
            Some(0),
            "100%  main",
        ),
        (
            "16 MiB of addresses",
            profile_json(
                "1",
                r#"{"stack":[0]}"#,
                ONE_STACK,
                &format!(
                    r#"{{"address":{},"func":[0]}}"#,
                    json_list("null", near_limit(5))
                ),
                ONE_NAME,
            ),
            Some(0),
            "100%  main",
        ),
        (
            "a byte over 16 MiB",
            profile_json(
                "1",
                &format!(r#"{{"stack":{}}}"#, json_list("0", (16 << 20) / 2)),
                ONE_STACK,
                ONE_FRAME,
                ONE_NAME,
            ),
            Some(1),
            "larger than the 16 MiB flushlab reads",
        ),
    ]
}

/// Hostile but well-formed profiles cost time linear in their size and memory within
/// [`MEMORY_BOUND`]: each shape fills the 16 MiB a profile may inflate to with the entry that
/// is cheapest to write and dearest to hold, and a chain of 400,000 stacks each sampled once
/// (a walk up every stack would take 8·10^10 steps) finishes within the deadline.
#[test]
#[cfg_attr(
    not(feature = "slow-tests"),
    ignore = "slow tier (4 s): cargo test --features slow-tests"
)]
fn hostile_profiles_cost_bounded_time_and_memory() {
    let cases = hostile_profiles();
    let dir = common::scratch_dir("costly-profiles");
    for (i, (what, json, code, expected)) in cases.iter().enumerate() {
        let path = dir.join(format!("cost-{i}.json.gz"));
        std::fs::write(&path, gzip(json)).unwrap();
        let (got, stdout, stderr) = profile_of(&path);
        assert_eq!(got, *code, "{what}: {stderr}");
        let said = format!("{}{stderr}", String::from_utf8_lossy(&stdout));
        assert!(said.contains(expected), "{what}: {said}");
        assert!(!stderr.contains("memory"), "{what}: {stderr}");
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Figures a digest prints come from counts a run could have: a weight or an interval out of
/// range is refused by name, never summed into `inf` CPU seconds, 2^64 samples or a negative
/// share.
#[test]
fn figures_out_of_range_are_refused_by_name() {
    let weighted = |weight: &str| {
        profile_json(
            "1",
            &format!(r#"{{"stack":[0,0],"weight":[1,{weight}]}}"#),
            ONE_STACK,
            ONE_FRAME,
            ONE_NAME,
        )
    };
    let timed =
        |interval: &str| profile_json(interval, r#"{"stack":[0]}"#, ONE_STACK, ONE_FRAME, ONE_NAME);
    let cases: Vec<(&str, Vec<u8>, &str)> = vec![
        (
            "a negative weight",
            weighted("-1"),
            "samples.weight 1 is -1",
        ),
        (
            "2^64 samples",
            weighted("18446744073709551615"),
            "samples.weight 1 is",
        ),
        (
            "an infinite weight",
            weighted("1e39"),
            "samples.weight 1 is inf",
        ),
        (
            "an interval of 1e300 ms",
            timed("1e300"),
            "meta.interval is 1e300 ms",
        ),
        ("a negative interval", timed("-1"), "meta.interval is -1 ms"),
        ("a zero interval", timed("0"), "meta.interval is 0 ms"),
    ];
    let dir = common::scratch_dir("ranged-profiles");
    for (i, (what, json, expected)) in cases.iter().enumerate() {
        let path = dir.join(format!("range-{i}.json"));
        std::fs::write(&path, json).unwrap();
        let (code, stdout, stderr) = profile_of(&path);
        assert_eq!(code, Some(1), "{what}: {stderr}");
        assert!(stdout.is_empty(), "{what}");
        assert!(stderr.contains(expected), "{what}: {stderr}");
        assert_eq!(stderr.trim_end().lines().count(), 1, "{what}: {stderr}");
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

/// A profile `wrap --profile` recorded (tests/fixtures/profiles/keys-stages.json.gz: `flushlab
/// wrap --size 80x24 --keys 'j*20@60ms q' --profile … -- ./stages poll 3000 raw`, the program of
/// tests/corpus/stages.c with 3 ms of work a key in `busy_work`): read by key, the processing
/// spans are the program's busy work and the emit spans its write(2) calls.
#[test]
fn a_wrap_profile_is_read_by_key() {
    let d = digest(Path::new("tests/fixtures/profiles/keys-stages.json.gz"), 5).unwrap();
    let keys = d.keys.as_ref().expect("keys marked");
    assert_eq!(keys.keys, 20);
    assert_eq!(keys.process.as_deref(), Some("stages"));
    assert_eq!(
        keys.processing.in_program[0].function, "busy_work",
        "{keys:?}"
    );
    assert!(keys.processing.in_program[0].share > 0.8, "{keys:?}");
    assert!(keys.emit.top[0].function.contains("write"), "{keys:?}");
    assert!(keys.emit.top[0].share > 0.5, "{keys:?}");
    // 20 keys of 3 ms of work: the spans add up to at least that.
    assert!(keys.processing.milliseconds >= 60.0, "{keys:?}");
    let table = render_table(std::slice::from_ref(&d));
    assert!(
        table.contains("inside 20 keys' processing") && table.contains("in busy_work"),
        "{table}"
    );
}

/// `wrap --profile` where samply cannot be found: one line naming the fix, and the run still
/// measured.
#[test]
fn wrap_profile_without_samply_says_so_and_measures() {
    let dir = common::scratch_dir("profile-no-samply");
    let (profile, report) = (dir.join("p.json.gz"), dir.join("r.json"));
    let out = Command::new(env!("CARGO_BIN_EXE_flushlab"))
        .args(["wrap", "--duration", "0.5", "--profile"])
        .arg(&profile)
        .arg("--export-json")
        .arg(&report)
        .args(["--", "sh", "-c", "echo hi; sleep 0.2"])
        .env("PATH", "/usr/bin:/bin")
        .env("HOME", &dir)
        .output()
        .unwrap();
    let said = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{said}");
    assert!(
        said.lines()
            .any(|l| l.contains("samply is not installed: cargo install samply")),
        "{said}"
    );
    assert!(report.exists() && !profile.exists(), "{said}");
    std::fs::remove_dir_all(dir).unwrap();
}

/// `wrap --profile` on the self-timing program, recorded here by samply (slow tier: CI installs
/// samply and lets it record): one marker a key on the thread that drew it, lasting the report's
/// key→frame within 0.1 ms; the digest finds the busy work in processing and write in emit.
#[test]
#[cfg_attr(
    not(feature = "slow-tests"),
    ignore = "slow tier (samply records; CI installs it): cargo test --features slow-tests"
)]
fn wrap_profile_marks_each_key_with_the_reports_time() {
    let program = common::c_program("stages");
    let dir = common::scratch_dir("profile-keys");
    let (profile, report) = (dir.join("keys.json.gz"), dir.join("r.json"));
    let out = Command::new(env!("CARGO_BIN_EXE_flushlab"))
        .args([
            "wrap",
            "--size",
            "80x24",
            "--keys",
            "j*12@120ms q",
            "--profile",
        ])
        .arg(&profile)
        .arg("--export-json")
        .arg(&report)
        .arg("--")
        .arg(&program)
        .args(["poll", "3000", "raw"])
        .env("PATH", path_with_cargo_bin())
        .output()
        .unwrap();
    let said = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{said}");
    assert!(said.contains("12 key(s) marked"), "{said}");
    let report = common::read_json(&report);
    let raw = std::fs::read(&profile).unwrap();
    let mut json = String::new();
    std::io::Read::read_to_string(&mut flate2::read::GzDecoder::new(&raw[..]), &mut json).unwrap();
    let p: serde_json::Value = serde_json::from_str(&json).unwrap();
    // The markers are on one thread: the program's main thread, the one that drew.
    let marked: Vec<&serde_json::Value> = p["threads"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|t| {
            t["markers"]["data"]
                .as_array()
                .is_some_and(|d| d.iter().any(|m| m["type"] == "SimpleMarker"))
        })
        .collect();
    assert_eq!(marked.len(), 1, "{said}");
    let t = marked[0];
    assert_eq!(t["processName"], "stages");
    assert_eq!(t["pid"], t["tid"], "the drawing thread is the main thread");
    let strings = t["stringArray"].as_array().unwrap();
    let m = &t["markers"];
    let mut spans = std::collections::BTreeMap::new();
    for (i, data) in m["data"].as_array().unwrap().iter().enumerate() {
        let name = strings[data["name"].as_u64().unwrap() as usize]
            .as_str()
            .unwrap();
        if let Some((n, _)) = name.strip_prefix("key ").and_then(|r| r.split_once(" j: ")) {
            let ms = m["endTime"][i].as_f64().unwrap() - m["startTime"][i].as_f64().unwrap();
            spans.insert(n.parse::<usize>().unwrap(), ms);
        }
    }
    let each = report["keys"]["each"].as_array().unwrap();
    let framed: Vec<(usize, f64)> = each
        .iter()
        .enumerate()
        .filter(|(_, k)| !k["stages_ms"].is_null())
        .map(|(i, k)| (i + 1, k["frame_ms"].as_f64().unwrap()))
        .collect();
    assert_eq!(spans.len(), framed.len(), "{spans:?}");
    for (n, frame_ms) in framed {
        let marked = spans[&n];
        assert!(
            (marked - frame_ms).abs() < 0.1,
            "key {n}: marker {marked} ms, report {frame_ms} ms"
        );
    }
    let d = digest(&profile, 5).unwrap();
    let keys = d.keys.expect("keys marked");
    assert_eq!(
        keys.processing.in_program[0].function, "busy_work",
        "{keys:?}"
    );
    assert!(keys.emit.top[0].function.contains("write"), "{keys:?}");
    std::fs::remove_dir_all(dir).unwrap();
}

/// `wrap --profile` on a program drawing 4,000 writes a frame (tests/corpus/stages.c at 80x50,
/// one write(2) a cell), 20 keys, 10 runs: every run's file holds 20 key markers, and the
/// summary's count is the file's (wrap reads it back from what samply wrote).
#[test]
#[cfg_attr(
    not(feature = "slow-tests"),
    ignore = "slow tier (10 runs recorded by samply): cargo test --features slow-tests"
)]
fn wrap_profile_holds_every_keys_marker_in_every_run() {
    let program = common::c_program("stages");
    let dir = common::scratch_dir("profile-every-run");
    let profile = dir.join("keys.json.gz");
    for run in 1..=10 {
        let _ = std::fs::remove_file(&profile);
        let out = Command::new(env!("CARGO_BIN_EXE_flushlab"))
            .args([
                "wrap",
                "--size",
                "80x50",
                "--keys",
                "j*20@97ms q",
                "--profile",
            ])
            .arg(&profile)
            .arg("--")
            .arg(&program)
            .args(["poll", "1000", "raw"])
            .env("PATH", path_with_cargo_bin())
            .stdin(Stdio::null())
            .output()
            .unwrap();
        let said = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "run {run}: {said}");
        let d = digest(&profile, 5).unwrap();
        let in_file = d.keys.map_or(0, |k| k.keys);
        assert_eq!(
            in_file, 20,
            "run {run}: {in_file} keys marked in the file: {said}"
        );
        assert!(
            said.contains("20 key(s) marked on the thread that drew them ("),
            "run {run}: the summary's count is not the file's: {said}"
        );
    }
    std::fs::remove_dir_all(dir).unwrap();
}

/// PATH with cargo's bin directory first, where CI installs samply.
fn path_with_cargo_bin() -> String {
    format!(
        "{}/.cargo/bin:{}",
        std::env::var("HOME").unwrap(),
        std::env::var("PATH").unwrap()
    )
}
