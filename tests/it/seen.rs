//! `flushlab wrap --paint`: the terminal model's flashes, tears and synchronized output, held
//! to a program that knows what it drew (tests/corpus/flash.c counts the screens it blanked).

use std::process::Command;

use serde_json::Value;

use crate::common;

const KEYS: &str = "a*20@150ms q";

/// One run of flash.c in MODE under `--paint POLICY` (none: the default): the report's `seen`,
/// the summary, and the program's own count of blanked screens.
fn run(mode: &str, policy: Option<&str>) -> (Value, String, u64) {
    let program = common::c_program("flash");
    let count = common::scratch("flash.count");
    let policy: Vec<&str> = policy.map(|p| vec!["--paint", p]).unwrap_or_default();
    let (code, report, said, _) = super::keyed::wrap_keys_with(
        &policy,
        "80x24",
        KEYS,
        &[program.to_str().unwrap(), mode, count.to_str().unwrap()],
    );
    assert_eq!(code, Some(0), "{said}");
    let blanked = std::fs::read_to_string(&count)
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    (report["seen"].clone(), said, blanked)
}

/// Keys whose answer showed a state of `kind` for any time (brief ones too): a count that
/// does not move with the machine's load.
fn keys_with(seen: &Value, kind: &str) -> usize {
    let keys = seen["keys"].as_array().unwrap();
    keys.iter()
        .filter(|k| {
            k["states"]
                .as_array()
                .unwrap()
                .iter()
                .any(|s| s["kind"] == kind)
        })
        .count()
}

#[test]
fn a_clear_then_a_draw_flashes_every_key_as_often_as_the_program_blanked_its_screen() {
    let (seen, said, blanked) = run("clear", None);
    assert_eq!(blanked, 20);
    assert_eq!(keys_with(&seen, "flash") as u64, blanked, "{seen}");
    assert_eq!(keys_with(&seen, "tear"), 0, "{seen}");
    // The blank screen stays for the program's 30 ms sleep: read a p50 from both ends' reads.
    let p50 = seen["flash_p50_ms"].as_f64().unwrap();
    assert!(p50 >= 25.0, "{p50} ms");
    assert_eq!(seen["policy"], "eager,sync=csi+dcs,hold=150");
    assert!(said.contains("keys flashed the screen (visible"), "{said}");
    let first = &seen["keys"][0]["states"][0];
    assert_eq!(first["kind"], "flash");
    // A blank screen: every cell but the first row's differs from what it turns into.
    assert!(first["unsettled_share"].as_f64().unwrap() > 0.5, "{first}");
}

#[test]
fn a_block_the_policy_honours_holds_the_blank_and_one_it_ignores_does_not() {
    for (mode, ignored) in [("csi", "eager,sync=dcs"), ("dcs", "eager,sync=csi")] {
        let (seen, said, blanked) = run(mode, None);
        assert_eq!(blanked, 20);
        assert_eq!(keys_with(&seen, "flash"), 0, "{mode}: {seen}");
        assert_eq!(seen["keys_flashed"], 0, "{mode}");
        assert_eq!(seen["sync_honoured_share"], 1.0, "{mode}: {said}");
        let (seen, said, _) = run(mode, Some(ignored));
        assert_eq!(
            keys_with(&seen, "flash"),
            20,
            "{mode} under {ignored}: {seen}"
        );
        assert!(said.contains("of a form this policy ignores"), "{said}");
    }
}

#[test]
fn a_frame_redrawn_in_place_in_one_write_shows_nothing_between_under_any_policy() {
    for policy in ["eager", "vsync:60", "delay:0.5-8.3"] {
        let (seen, _, blanked) = run("place", Some(policy));
        assert_eq!(blanked, 0);
        assert_eq!(keys_with(&seen, "flash"), 0, "{policy}: {seen}");
        assert_eq!(keys_with(&seen, "tear"), 0, "{policy}: {seen}");
        assert_eq!(seen["keys"].as_array().unwrap().len(), 21, "{policy}");
    }
}

#[test]
fn the_model_off_is_no_seen_part_and_a_bad_policy_is_one_line() {
    let (seen, said, _) = run("clear", Some("off"));
    assert!(seen.is_null(), "{seen}");
    assert!(!said.contains("seen ("), "{said}");
    for bad in [
        "fast",
        "vsync:0",
        "delay:9-1",
        "eager,sync=maybe",
        "eager,hold=-1",
        "\x1b[2J",
    ] {
        let out = Command::new(env!("CARGO_BIN_EXE_flushlab"))
            .args(["wrap", "--paint", bad, "--keys", "a", "--", "true"])
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(2), "{bad}");
        let said = String::from_utf8_lossy(&out.stderr);
        let first = said.lines().next().unwrap_or_default();
        assert!(
            first.contains("expected off, eager, vsync:HZ"),
            "{bad}: {said}"
        );
        assert!(!said.contains('\x1b'), "{bad}: {said}");
    }
}
