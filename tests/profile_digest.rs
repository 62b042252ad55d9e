//! The profile digest on two small profiles recorded here by samply
//! (`scripts/record-profiles.sh --duration 0.5 --size 80x24 --out tests/fixtures/profiles
//! stderr/raw stdout/frame`).

use std::path::Path;
use std::process::Command;

use flushlab::profile_digest::{digest, render_table};

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
