//! `flushlab wrap --paint`: the terminal model's flashes, tears and synchronized output, held
//! to a program that knows what it drew (tests/corpus/flash.c counts the screens it blanked).

use std::process::Command;

use serde_json::Value;

use crate::common;

const KEYS: &str = "a*20@150ms q";

/// One run of flash.c in MODE under `--paint POLICY` (none: the default): the report's `seen`,
/// the summary, and the program's own count of blanked screens.
fn run(mode: &str, policy: Option<&str>) -> (Value, String, u64) {
    let policy: Vec<&str> = policy.map(|p| vec!["--paint", p]).unwrap_or_default();
    run_with(&policy, &[mode])
}

/// [`run`] with wrap's `flags` and flash.c's `words` (its mode, and `poll`).
fn run_with(flags: &[&str], words: &[&str]) -> (Value, String, u64) {
    let (report, said, blanked) = run_report(flags, words);
    (report["seen"].clone(), said, blanked)
}

/// [`run_with`], the whole report.
fn run_report(flags: &[&str], words: &[&str]) -> (Value, String, u64) {
    let program = common::c_program("flash");
    let count = common::scratch("flash.count");
    let mut cmd = vec![program.to_str().unwrap(), words[0], count.to_str().unwrap()];
    cmd.extend(&words[1..]);
    let (code, report, said, _) = super::keyed::wrap_keys_with(flags, "80x24", KEYS, &cmd);
    assert_eq!(code, Some(0), "{said}");
    let blanked = std::fs::read_to_string(&count)
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    (report, said, blanked)
}

/// CMD's own synchronized-output blocks, seen inside it: flash.c opens one a key in `csi` and
/// `dcs` (a key, a screen blanked: its own count), none in `clear`. The preload and the kernel
/// observer count the frames that opened one; the tracer reads no bytes and says nothing.
#[test]
#[cfg_attr(
    not(feature = "slow-tests"),
    ignore = "slow tier (7 runs of 3 s): cargo test --features slow-tests"
)]
fn the_observers_count_the_frames_that_open_a_block_as_the_program_drew_them() {
    let mut observers = vec!["preload"];
    if super::kernel::kernel_allowed() {
        observers.push("kernel");
    }
    for observer in observers {
        for mode in ["csi", "dcs", "clear"] {
            let (report, said, blanked) = run_report(&["--observer", observer], &[mode]);
            let opened = report["inside"]["frames_opening_sync"].as_u64();
            let drawn = if mode == "clear" { 0 } else { blanked };
            assert_eq!(opened, Some(drawn), "{observer} {mode}: {said}");
        }
    }
    let (report, said, _) = run_report(&["--observer", "ptrace"], &["csi"]);
    assert_eq!(
        report["inside"]["frames_opening_sync"],
        Value::Null,
        "{said}"
    );
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

/// A frame written in four parts 30 ms apart (every row changes): each key's answer shows
/// half old, half new rows for longer than a refresh, a tear and never a flash; the same
/// frame in one write shows nothing between.
#[test]
#[cfg_attr(
    not(feature = "slow-tests"),
    ignore = "slow tier (7 s here: the explorer and the model, key by key): cargo test --features slow-tests"
)]
fn a_frame_written_in_parts_over_a_refresh_tears_every_key_and_in_one_write_none() {
    let (seen, said, _) = run("rows", None);
    assert_eq!(seen["keys_torn"], 20, "{seen}");
    assert_eq!(seen["keys_flashed"], 0, "{seen}");
    assert_eq!(keys_with(&seen, "tear"), 20, "{seen}");
    assert!(said.contains("20 tore"), "{said}");
    let (whole, ..) = run("place", None);
    assert_eq!(
        (whole["keys_torn"].as_u64(), keys_with(&whole, "tear")),
        (Some(0), 0)
    );
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
#[cfg_attr(
    not(feature = "slow-tests"),
    ignore = "slow tier (14 s here: the explorer and the model, key by key): cargo test --features slow-tests"
)]
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
#[cfg_attr(
    not(feature = "slow-tests"),
    ignore = "slow tier (10 s here: the explorer and the model, key by key): cargo test --features slow-tests"
)]
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
        assert!(first.contains("expected off, a terminal"), "{bad}: {said}");
        assert!(!said.contains('\x1b'), "{bad}: {said}");
    }
    // `--camera` takes on or off: its value is never taken for CMD.
    let out = Command::new(env!("CARGO_BIN_EXE_flushlab"))
        .args([
            "wrap",
            "--terminal",
            "xterm",
            "--camera",
            "maybe",
            "--keys",
            "a",
            "--",
            "true",
        ])
        .output()
        .unwrap();
    let said = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{said}");
    assert!(
        said.contains("'maybe'") && said.contains("on, off"),
        "{said}"
    );
}

#[test]
#[cfg_attr(
    not(feature = "slow-tests"),
    ignore = "slow tier (13 s here: the explorer and the model, key by key): cargo test --features slow-tests"
)]
fn try_sync_puts_each_answer_in_a_block_that_a_terminal_honouring_it_paints_whole() {
    for words in [&["clear"][..], &["clear", "poll"][..]] {
        let (seen, said, blanked) = run_with(&["--try", "sync"], words);
        // The program still blanked its screen 20 times: the block hid it.
        assert_eq!(blanked, 20, "{words:?}");
        assert_eq!(keys_with(&seen, "flash"), 0, "{words:?}: {seen}");
        assert!(
            seen["sync_share"].as_f64().unwrap() > 0.99,
            "{words:?}: {said}"
        );
        let (seen, _, _) = run_with(&["--try", "sync", "--paint", "xterm"], words);
        assert_eq!(
            keys_with(&seen, "flash"),
            20,
            "xterm ignores the blocks: {seen}"
        );
    }
}

/// Each block ends before the program waits for its next key, read(2) or poll(2): strace sees
/// the program's own system calls, the end marker among its writes, then the wait.
#[test]
fn try_sync_ends_each_block_before_the_program_waits_for_a_key() {
    if !common::has_programs(&["strace"]) {
        return;
    }
    let program = common::c_program("flash");
    let log = common::scratch("flash.strace");
    for wait in ["read", "poll"] {
        let out = Command::new("strace")
            .args(["-f", "-qq", "-e", "trace=read,poll,write", "-o"])
            .arg(&log)
            .arg(env!("CARGO_BIN_EXE_flushlab"))
            .args([
                "wrap",
                "--try",
                "sync",
                "--size",
                "80x24",
                "--keys",
                "a*5@150ms q",
                "--",
            ])
            .arg(&program)
            .args(["clear", "/dev/null", wait])
            .output()
            .unwrap();
        assert_eq!(
            out.status.code(),
            Some(0),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let calls = std::fs::read_to_string(&log).unwrap();
        // flash.c's own calls: the process that wrote its blank screen.
        let pid = calls
            .lines()
            .find(|l| l.contains(r#"write(1, "\33[H\33[2J""#))
            .and_then(|l| l.split_whitespace().next())
            .unwrap()
            .to_owned();
        let mine: Vec<&str> = calls
            .lines()
            .filter(|l| l.split_whitespace().next() == Some(pid.as_str()))
            .collect();
        let waits: Vec<usize> = mine
            .iter()
            .enumerate()
            .filter(|(_, l)| {
                l.contains(&format!("{wait}(0, ")) || l.contains(&format!("{wait}([{{fd=0"))
            })
            .map(|(i, _)| i)
            .collect();
        assert!(
            waits.len() >= 6,
            "{wait}: {} waits in\n{}",
            waits.len(),
            mine.join("\n")
        );
        let (begins, ends) = (
            mine.iter()
                .filter(|l| l.contains(r#""\33[?2026h""#))
                .count(),
            mine.iter()
                .filter(|l| l.contains(r#""\33[?2026l""#))
                .count(),
        );
        assert!(
            begins >= 5 && begins == ends,
            "{wait}: {begins} begins, {ends} ends"
        );
        // Every wait after the first draw follows an end, with no begin between.
        for &w in &waits[1..] {
            let before = mine[..w].iter().rev().find(|l| l.contains("2026")).unwrap();
            assert!(
                before.contains("2026l"),
                "{wait}: a wait inside a block: {before}"
            );
        }
    }
}

/// `--filmstrip`: the key whose blank stayed longest, before, blank and after, labelled with
/// its time on screen; PNG where the file is named so; refused without keys or with another
/// kind of file, in one line.
#[test]
#[cfg_attr(
    not(feature = "slow-tests"),
    ignore = "slow tier (7 s here: the explorer and the model, key by key): cargo test --features slow-tests"
)]
fn a_filmstrip_shows_the_blank_screen_with_its_time_on_screen() {
    let svg = common::scratch("strip.svg");
    let strip = svg.to_str().unwrap();
    let (seen, said, _) = run_with(&["--filmstrip", strip], &["clear"]);
    assert_eq!(seen["keys_flashed"], 20);
    assert!(
        said.contains("filmstrip: ") && said.contains("1 state(s) between"),
        "{said}"
    );
    let drawn = std::fs::read_to_string(&svg).unwrap();
    let labels: Vec<&str> = drawn
        .split("font-size=\"12\">")
        .skip(1)
        .filter_map(|l| l.split('<').next())
        .collect();
    assert_eq!(labels.len(), 3, "{labels:?}");
    assert_eq!(labels[0], "before the key");
    assert!(labels[1].starts_with("flash +"), "{labels:?}");
    assert_eq!(labels[2], "after the key (settled)");
    // The blank panel holds no text; before and after hold the program's rows.
    assert!(
        drawn.matches("row 05: the same text").count() == 2,
        "{drawn}"
    );

    let png = common::scratch("strip.png");
    let (_, said, _) = run_with(&["--filmstrip", png.to_str().unwrap()], &["clear"]);
    let bytes = std::fs::read(&png).unwrap();
    assert_eq!(&bytes[1..4], b"PNG", "{said}");

    for (flags, says) in [
        (
            vec!["--filmstrip", strip, "--", "true"],
            "--filmstrip films a key",
        ),
        (
            vec!["--keys", "a", "--filmstrip", "strip.gif", "--", "true"],
            "name it FILE.svg or FILE.png",
        ),
    ] {
        let out = Command::new(env!("CARGO_BIN_EXE_flushlab"))
            .arg("wrap")
            .args(&flags)
            .output()
            .unwrap();
        let said = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{flags:?}: {said}");
        assert!(said.contains(says), "{flags:?}: {said}");
        assert_eq!(said.trim().lines().count(), 1, "{said}");
    }
}

/// Ink 8 (npm, pinned): a list that grows by a line a key in an 80x24 window. Once it is
/// taller than the window, each frame redraws it from the top and pushes its first lines into
/// the scrollback again: the model's churn a key is the list's lines less the window's rows
/// (the first time a line goes by is no copy), and the same as the history tmux itself keeps
/// for the same keys (`#{history_size}`, scroll-on-clear off), key for key.
#[test]
#[cfg_attr(
    not(feature = "slow-tests"),
    ignore = "slow tier (npm install of Ink 8, then 40 keys twice): cargo test --features slow-tests"
)]
fn an_ink_list_taller_than_the_window_copies_what_tmux_keeps_into_its_history() {
    if !common::has_programs(&["node", "npm", "tmux"]) {
        return;
    }
    let dir = common::scratch_dir("ink");
    let program = install_ink(&dir);
    let keys = 40;
    let (code, report, said, _) = super::keyed::wrap_keys_env(
        INK_NOT_IN_CI,
        "80x24",
        &format!("j*{keys}@200ms"),
        &["node", program.to_str().unwrap()],
    );
    assert!(code.is_some(), "{said}");
    let churn: Vec<u64> = report["seen"]["keys"]
        .as_array()
        .unwrap()
        .iter()
        .map(|k| k["scrollback_churn"].as_u64().unwrap())
        .collect();
    assert_eq!(churn.len(), keys, "{said}");
    // Key i's list has i + 2 lines; from the second key that pushes lines, all it pushes are
    // copies.
    for (i, &c) in churn.iter().enumerate() {
        let over = (i as u64 + 2).saturating_sub(24);
        if over >= 2 {
            assert!(
                c >= over,
                "key {i}: {c} lines copied, the list is {over} over: {churn:?}"
            );
        }
    }
    let gains = tmux_history_gains(&dir, &program, keys);
    let pushed: u64 = gains.iter().sum();
    assert!(pushed > 100, "tmux kept {pushed} lines: {gains:?}");
    // Once a key pushes two lines or more, every line it pushes is a copy: what tmux kept for
    // that key is the model's churn for it, within 5%. The last key's window runs to the end,
    // where Ink draws its last frame once more as wrap ends it: left out.
    for (i, (&c, &g)) in churn.iter().zip(&gains).enumerate().take(keys - 1) {
        if (i as u64 + 2).saturating_sub(24) >= 2 {
            assert!(
                c.abs_diff(g) <= 1.max(g / 20),
                "key {i}: model {churn:?}, tmux {gains:?}"
            );
        }
    }
}

/// Ink draws only its last frame where it thinks it runs in CI (the is-in-ci package reads
/// `CI`): the list is drawn as a person sees it only with CI said to be off.
const INK_NOT_IN_CI: (&str, &str) = ("CI", "false");

/// tests/corpus/ink_list.mjs in `dir`, with Ink 8.0.0 (and the React it needs) from npm.
fn install_ink(dir: &std::path::Path) -> std::path::PathBuf {
    let program = dir.join("list.mjs");
    let source = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/corpus/ink_list.mjs");
    std::fs::copy(&source, &program).unwrap();
    std::fs::write(
        dir.join("package.json"),
        r#"{"name":"ink-list","private":true,"type":"module"}"#,
    )
    .unwrap();
    let npm = Command::new("npm")
        .args([
            "install",
            "--no-audit",
            "--no-fund",
            "--loglevel=error",
            "ink@8.0.0",
            "react@19.3.1",
        ])
        .current_dir(dir)
        .env("npm_config_cache", dir.join(".npm-cache"))
        .output()
        .unwrap();
    assert!(
        npm.status.success(),
        "{}",
        String::from_utf8_lossy(&npm.stderr)
    );
    program
}

/// What tmux itself keeps in its history for each of `keys` keys typed into `program` in an
/// 80x24 window (`#{history_size}`'s gain a key; scroll-on-clear off).
fn tmux_history_gains(dir: &std::path::Path, program: &std::path::Path, keys: usize) -> Vec<u64> {
    let socket = dir.join("tmux.sock");
    let tmux = |args: &[&str]| {
        let out = Command::new("tmux")
            .env(INK_NOT_IN_CI.0, INK_NOT_IN_CI.1)
            .arg("-S")
            .arg(&socket)
            .args(["-f", "/dev/null"])
            .args(args)
            .output()
            .unwrap();
        String::from_utf8_lossy(&out.stdout).trim().to_owned()
    };
    let command = format!("node {}", program.display());
    tmux(&[
        "new-session",
        "-d",
        "-s",
        "ink",
        "-x",
        "80",
        "-y",
        "24",
        &command,
    ]);
    tmux(&["set-option", "-g", "history-limit", "100000"]);
    tmux(&["set-option", "-g", "scroll-on-clear", "off"]);
    let history = || {
        tmux(&["display-message", "-p", "-t", "ink", "#{history_size}"])
            .parse::<u64>()
            .unwrap_or(0)
    };
    std::thread::sleep(std::time::Duration::from_millis(1500));
    let mut gains = Vec::new();
    let mut before = history();
    for _ in 0..keys {
        tmux(&["send-keys", "-t", "ink", "j"]);
        std::thread::sleep(std::time::Duration::from_millis(300));
        let now = history();
        gains.push(now.saturating_sub(before));
        before = now;
    }
    tmux(&["kill-server"]);
    gains
}

/// A headless run of the explorer's frames at 80x24 with `envs` (`PAINT` among them), its
/// output thrown away: the report.
fn explorer(envs: &[(&str, &str)]) -> Value {
    let report = common::scratch("explorer.json");
    let out = Command::new(env!("CARGO_BIN_EXE_flushlab"))
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .envs([("DURATION", "2.5"), ("SIZE", "80x24")])
        .envs(envs.iter().copied())
        .arg("--export-json")
        .arg(&report)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    common::read_json(&report)
}

/// The terminal model on the explorer's own frames (`PAINT`), held to the kernel's count of
/// the same run's write(2)s: a raw frame is painted once a write and torn at every one but its
/// last; a frame in one write reaches the terminal in the tty's 2,048-byte pieces, and tears at
/// each but the last; inside a synchronized-output block the model honours, none does.
#[test]
#[cfg_attr(
    not(feature = "slow-tests"),
    ignore = "slow tier (15 s here: the explorer and the model, key by key): cargo test --features slow-tests"
)]
fn the_explorers_own_frames_tear_at_each_piece_the_writes_make_unless_the_block_holds_them() {
    let each = |report: &Value| {
        let seen = &report["seen"];
        let frames = seen["frames"].as_u64().unwrap();
        assert!(frames >= 1, "{report}");
        let per_frame = |key: &str| seen[key].as_u64().unwrap() as f64 / frames as f64;
        (
            seen["torn_frames"].as_u64().unwrap(),
            frames,
            per_frame("pieces"),
            per_frame("torn"),
        )
    };
    // Raw: a piece a write(2), as many as the kernel counted a frame (every frame of the full
    // scene changes every cell, so frames are alike to within a few writes).
    let raw = explorer(&[
        ("STREAM", "stderr"),
        ("BUFFERING", "raw"),
        ("PAINT", "eager"),
    ]);
    let (torn_frames, frames, pieces, torn) = each(&raw);
    assert_eq!(torn_frames, frames, "{raw}");
    let writes = raw["writes_per_frame"].as_f64().unwrap();
    assert!(
        (pieces / writes - 1.0).abs() < 0.1,
        "{pieces} pieces a frame, {writes} writes"
    );
    assert!(
        torn > pieces * 0.9 && torn < pieces,
        "{torn} torn of {pieces}"
    );
    assert_eq!(raw["paint"], "eager,sync=csi+dcs,hold=150");
    // One write a frame: the tty's pieces, each but the last torn.
    let framed = explorer(&[("BUFFERING", "frame"), ("PAINT", "eager")]);
    let (torn_frames, frames, pieces, torn) = each(&framed);
    assert_eq!(torn_frames, frames, "{framed}");
    let bytes = framed["bytes_per_frame"].as_f64().unwrap();
    assert!(
        (pieces - (bytes / 2048.0).ceil()).abs() <= 1.0,
        "{pieces} pieces of {bytes} B"
    );
    assert_eq!(torn, pieces - 1.0, "{framed}");
    assert!(framed["torn_paints_per_second"].as_f64().unwrap() > 0.0);
    // In a block the model honours: whole; in one it ignores: torn as without it.
    let synced = explorer(&[("BUFFERING", "frame"), ("SYNC", "1"), ("PAINT", "eager")]);
    assert_eq!(each(&synced).0, 0, "{synced}");
    assert_eq!(synced["torn_paints_per_second"].as_f64(), Some(0.0));
    let ignored = explorer(&[
        ("BUFFERING", "frame"),
        ("SYNC", "1"),
        ("PAINT", "eager,sync=none"),
    ]);
    let (torn_frames, frames, ..) = each(&ignored);
    assert_eq!(torn_frames, frames, "{ignored}");
    // Headless, the model runs only when asked: benchmarks and profiles measure no model.
    let unasked = explorer(&[("BUFFERING", "frame")]);
    assert!(
        unasked["seen"].is_null() && unasked["paint"].is_null(),
        "{unasked}"
    );
    let off = explorer(&[("BUFFERING", "frame"), ("PAINT", "off")]);
    assert!(off["seen"].is_null(), "{off}");
}

/// A paint policy the run cannot read is one line naming it and what is valid, exit 2.
#[test]
fn a_bad_paint_policy_for_the_explorer_is_one_line_and_exit_2() {
    let out = Command::new(env!("CARGO_BIN_EXE_flushlab"))
        .env("PAINT", "sometimes")
        .env("DURATION", "0.2")
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .output()
        .unwrap();
    let said = common::assert_refused(&out, "sometimes");
    assert!(said.contains("eager"), "{said}");
}
