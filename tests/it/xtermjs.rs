//! `wrap --terminal xtermjs[:webgl]`: xterm.js in flushlab's headless Chromium. Each key's way
//! is held against the browser's own trace (its DrawFrames, the page's marks on the same
//! clock) and CMD's own frame ends seen from inside; synchronized output against the page's
//! renders; and nothing of the browser outlives wrap, a SIGKILL of it included.

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

use super::common;
use super::keyed::one_at_a_time;

/// Chromium and the page's packages (or npm and node to install them) are here.
fn browser_here() -> bool {
    common::has_programs(&["chromium-headless-shell", "node", "npm"])
}

/// `wrap --terminal xtermjs` on the floor (`sh -c 'stty raw -echo; exec cat'`) at 80x24, with
/// `keys`, no stdin.
fn floor_in_xterm_js(keys: &str) -> Command {
    let mut wrap = Command::new(env!("CARGO_BIN_EXE_flushlab"));
    wrap.args([
        "wrap",
        "--terminal",
        "xtermjs",
        "--size",
        "80x24",
        "--keys",
        keys,
    ])
    .args(["--", "sh", "-c", "stty raw -echo; exec cat"])
    .stdin(Stdio::null());
    wrap
}

/// `wrap --terminal TERMINAL --size SIZE --keys KEYS -- CMD…`: its report and what it said.
fn in_browser(terminal: &str, size: &str, keys: &str, cmd: &[&str], tmp: &Path) -> (Value, String) {
    let json = tmp.join("r.json");
    let out = Command::new(env!("CARGO_BIN_EXE_flushlab"))
        .args([
            "wrap",
            "--terminal",
            terminal,
            "--size",
            size,
            "--keys",
            keys,
            "--export-json",
        ])
        .arg(&json)
        .arg("--")
        .args(cmd)
        .env("TMPDIR", tmp)
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let said = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(out.status.success(), "{said}");
    let report = common::read_json(&json);
    (report, said)
}

/// Every key has a last pixel and a paint stage; its way is in order, frame's first write ≤
/// message ≤ parse ≤ render ≤ DrawFrame, the DrawFrame being its last pixel and drawn before
/// the next key's render (each key's render has a compositor frame of its own). With
/// `within_a_frame`: the render-to-DrawFrame gap within one frame interval on ≥ 95% of keys, a
/// bound the DOM renderer keeps ten times over (p50 1.7 ms) and SwiftShader's WebGL only on
/// a quiet machine (18 of 20 with CI's tests beside it), so it is asked of the DOM alone.
fn every_key_drawn_in_order(report: &Value, said: &str, keys: usize, within_a_frame: bool) {
    let each = report["keys"]["each"].as_array().unwrap();
    assert_eq!(each.len(), keys, "{said}");
    let browser = &report["browser"];
    assert_eq!(browser["traced"], true, "{said}");
    let ways = browser["keys"].as_array().unwrap();
    let mut within = 0;
    for (key, way) in each.iter().zip(ways) {
        let last = key["pixels_ms"]["last"].as_f64();
        assert!(last.is_some(), "a key without a last pixel: {key} {said}");
        assert!(
            key["stages_ms"]["paint"].as_f64().is_some(),
            "no paint: {key}"
        );
        let at = |name: &str| {
            way[name]
                .as_f64()
                .unwrap_or_else(|| panic!("{name}: {way}"))
        };
        // The way starts at the frame's first write: the page can have the frame's last bytes
        // before CMD begins to wait (the frame's end as the observer tells it), for the bytes
        // leave at the write and the wait comes after it.
        let emit = key["stages_ms"]["emit"].as_f64().unwrap();
        let order = [
            at("frame_ms") - emit,
            at("message_ms"),
            at("parsed_ms"),
            at("render_ms"),
            at("draw_frame_ms"),
        ];
        assert!(
            order.windows(2).all(|w| w[0] <= w[1]),
            "out of order: {way}"
        );
        assert!(
            (at("draw_frame_ms") - last.unwrap()).abs() < 0.01,
            "{way} {key}"
        );
        within += usize::from(at("draw_frame_ms") - at("render_ms") <= 1000.0 / 60.0);
    }
    let renders: Vec<f64> = ways
        .iter()
        .map(|w| w["render_ms"].as_f64().unwrap())
        .collect();
    let sent: Vec<f64> = each
        .iter()
        .map(|k| k["sent_ms"].as_f64().unwrap())
        .collect();
    for i in 1..ways.len() {
        let drawn = sent[i - 1] + ways[i - 1]["draw_frame_ms"].as_f64().unwrap();
        assert!(
            drawn <= sent[i] + renders[i],
            "key {i}'s render came before the last key's DrawFrame: {said}"
        );
    }
    assert!(
        !within_a_frame || within * 100 >= keys * 95,
        "{within} of {keys} within a frame: {said}"
    );
    assert_eq!(browser["within_a_frame"], within, "{said}");
    for stage in ["transport", "parse", "render", "draw"] {
        let p50 = browser["stages_ms"][stage]["p50"].as_f64();
        assert!(p50.is_some(), "{stage}: {said}");
    }
}

/// The camera in xterm.js (its DOM renderer's rows at each render) sees a clear-then-draw
/// program's blank screen on every key, none inside a CSI 2026 block (xterm.js holds it) and
/// every one inside the DCS form (it does not); a frame written whole in place shows nothing
/// between, one in four writes 30 ms apart tears every key; the model under xterm.js's policy
/// (`--paint xtermjs`) counts within 2 of it each time.
#[test]
#[cfg_attr(
    not(feature = "slow-tests"),
    ignore = "slow tier (46 s here: headless Chromium and xterm.js): cargo test --features slow-tests"
)]
fn the_camera_in_xterm_js_sees_its_rows_flash_and_tear_as_the_model_says() {
    if !browser_here() {
        return;
    }
    let _serial = one_at_a_time();
    let program = common::c_program("flash");
    let program = program.to_str().unwrap();
    let count = |seen: &Value, key: &str| seen[key].as_u64().unwrap();
    for (mode, key, at_least, at_most) in [
        ("clear", "keys_flashed", 18, 20),
        ("csi", "keys_flashed", 0, 2),
        ("dcs", "keys_flashed", 18, 20),
        ("place", "keys_flashed", 0, 0),
        ("place", "keys_torn", 0, 0),
        ("rows", "keys_torn", 18, 20),
    ] {
        let tmp = common::scratch_dir("xtermjs-flash");
        let (report, said) = in_browser("xtermjs", "80x24", "a*20@150ms q", &[program, mode], &tmp);
        let seen = &report["seen"];
        assert_eq!(seen["by"], "page-rows", "{said}");
        let camera = count(seen, key);
        assert!(
            (at_least..=at_most).contains(&camera),
            "{mode}: {camera} {key}: {said}"
        );
        let model = super::keyed::wrap_keys_with(
            &["--paint", "xtermjs"],
            "80x24",
            "a*20@150ms q",
            &[program, mode],
        );
        let predicted = count(&model.1["seen"], key);
        assert!(
            predicted.abs_diff(camera) <= 2,
            "{mode}: the model says {predicted} {key}, the camera {camera}"
        );
    }
}

#[test]
#[cfg_attr(
    not(feature = "slow-tests"),
    ignore = "slow tier (17 s here: headless Chromium and xterm.js): cargo test --features slow-tests"
)]
fn the_floor_in_xterm_js_dom_and_webgl_has_every_key_to_its_draw_frame() {
    if !browser_here() {
        return;
    }
    let _serial = one_at_a_time();
    let floor = ["sh", "-c", "stty raw -echo; exec cat"];
    for (terminal, renderer) in [("xtermjs", "dom"), ("xtermjs:webgl", "webgl")] {
        let tmp = common::scratch_dir("xtermjs");
        let (report, said) = in_browser(terminal, "80x24", "a*20@100ms", &floor, &tmp);
        assert_eq!(report["terminal"], terminal, "{said}");
        let browser = &report["browser"];
        assert_eq!(browser["renderer"], renderer, "{said}");
        // Which renderer drew, as the page found it: WebGL's canvases, or the DOM's rows.
        assert_eq!(browser["drew"], renderer, "{said}");
        assert!(said.contains(&format!("{renderer} drew")), "{said}");
        // The DOM renderer's rows are its camera; WebGL has none, and the run says so.
        match renderer {
            "dom" => assert_eq!(report["seen"]["by"], "page-rows", "{said}"),
            _ => {
                assert!(
                    said.contains("seen: no camera in xterm.js's WebGL renderer"),
                    "{said}"
                );
                assert!(report["no_camera"].is_string(), "{said}");
            }
        }
        every_key_drawn_in_order(&report, &said, 20, renderer == "dom");
        // Each key's one byte came in one message.
        let ways = browser["keys"].as_array().unwrap();
        assert!(ways.iter().all(|w| w["messages"] == 1), "{said}");
        // Nothing of the browser is left in the run's temporary directory.
        let left: Vec<_> = std::fs::read_dir(&*tmp)
            .unwrap()
            .flatten()
            .map(|e| e.file_name())
            .collect();
        assert!(
            left.iter().all(|n| n.to_string_lossy() == "r.json"),
            "{left:?}"
        );
    }
}

/// dua-cli 3.0.0, a published Rust TUI, 20 keys at 120x40: every key drawn, in order. Where
/// `FLUSHLAB_DUA_3` names its binary (`cargo install dua-cli --version 3.0.0 --root DIR`):
/// CI does not build it, which takes 4.5 of its 40 minutes.
#[test]
fn dua_3_in_xterm_js_has_every_key_to_its_draw_frame() {
    let Some(dua) = std::env::var("FLUSHLAB_DUA_3").ok() else {
        eprintln!("skipped: FLUSHLAB_DUA_3 names no dua-cli 3.0.0");
        return;
    };
    if !browser_here() {
        return;
    }
    let _serial = one_at_a_time();
    let version = Command::new(&dua).arg("--version").output().unwrap();
    assert!(
        String::from_utf8_lossy(&version.stdout).contains("3.0.0"),
        "{version:?}"
    );
    let tmp = common::scratch_dir("xtermjs-dua");
    let cmd = [dua.as_str(), "i", "/usr/share/doc"];
    let (report, said) = in_browser("xtermjs", "120x40", "<Down>*20@150ms", &cmd, &tmp);
    every_key_drawn_in_order(&report, &said, 20, true);
}

/// A frame in one DEC 2026 block, its second half 50 ms after its first: xterm.js 6 renders
/// nothing until the block ends (one compositor frame a key), where without the block it draws
/// the first half on its own (two).
#[test]
#[cfg_attr(
    not(feature = "slow-tests"),
    ignore = "slow tier (7 s here: headless Chromium and xterm.js): cargo test --features slow-tests"
)]
fn xterm_js_holds_a_synchronized_block_until_its_end() {
    if !browser_here() || !common::has_programs(&["python3"]) {
        return;
    }
    let _serial = one_at_a_time();
    let program = |sync: bool| {
        let (begin, end) = if sync {
            (r"\x1b[?2026h", r"\x1b[?2026l")
        } else {
            ("", "")
        };
        format!(
            "import os, time, tty\ntty.setraw(0)\nwhile True:\n    k = os.read(0, 1)\n    if not k or k == b'q':\n        break\n    os.write(1, b'{begin}\\x1b[H' + (k * 80 + b'\\r\\n') * 12)\n    time.sleep(0.05)\n    os.write(1, (k * 80 + b'\\r\\n') * 12 + b'{end}')\n"
        )
    };
    let mut per_key = Vec::new();
    for sync in [true, false] {
        let tmp = common::scratch_dir("xtermjs-sync");
        let source = program(sync);
        let (report, said) = in_browser(
            "xtermjs",
            "80x24",
            "a@300ms b@300ms c@300ms d@300ms e@300ms f@300ms g@300ms h@300ms q",
            &["python3", "-c", &source],
            &tmp,
        );
        let blocks = report["browser"]["sync_blocks"].as_array().unwrap();
        if sync {
            assert_eq!(blocks.len(), 8, "{said}");
            for block in blocks {
                assert_eq!(block["held"], true, "{block} {said}");
                assert_eq!(block["renders_inside"], 0, "{block}");
                // Open across CMD's 50 ms sleep: its begin and its end came apart.
                let (begin, end) = (
                    block["begin_message"].as_u64(),
                    block["end_message"].as_u64(),
                );
                assert!(begin < end, "{block}");
                assert!(block["open_ms"].as_f64().unwrap() > 0.0, "{block}");
            }
            assert!(said.contains("held 8 of 8 blocks"), "{said}");
        } else {
            assert!(blocks.is_empty(), "{said}");
        }
        // The window's changes (DrawFrames) between each key and the next.
        let changes: Vec<u64> =
            serde_json::from_value(report["window_changes_ns"].clone()).unwrap();
        let sent: Vec<u64> = report["keys"]["each"]
            .as_array()
            .unwrap()
            .iter()
            .map(|k| k["sent_ns"].as_u64().unwrap())
            .collect();
        let drawn: Vec<usize> = sent
            .windows(2)
            .map(|w| changes.iter().filter(|&&c| c >= w[0] && c < w[1]).count())
            .collect();
        per_key.push(drawn);
    }
    // From the second key on, a held frame is one compositor frame. The first key's time also
    // holds one compositor frame that no render of xterm.js's preceded (none is marked
    // between the block's begin and its end): the page's first key event draws something of
    // its own.
    assert!(per_key[0][1..].iter().all(|&n| n == 1), "held: {per_key:?}");
    assert!(
        per_key[1].iter().filter(|&&n| n >= 2).count() >= 5,
        "unheld: {per_key:?}"
    );
}

/// wrap killed (SIGKILL) while the page is open: its browser terminal, Chromium and the
/// scratch profile go with it.
#[test]
fn nothing_of_the_browser_outlives_a_killed_wrap() {
    if !browser_here() {
        return;
    }
    let _serial = one_at_a_time();
    let tmp = common::scratch_dir("xtermjs-kill");
    let mut wrap = floor_in_xterm_js("a*100@100ms")
        .env("TMPDIR", &*tmp)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let parent = format!("--parent {}", wrap.id());
    let profile = || {
        std::fs::read_dir(&*tmp).unwrap().flatten().any(|e| {
            e.file_name()
                .to_string_lossy()
                .starts_with("flushlab-chromium")
        })
    };
    let ours = || {
        // Chromium's processes name the profile (in this test's TMPDIR) on their command line.
        let mut found = Vec::new();
        for entry in std::fs::read_dir("/proc").unwrap().flatten() {
            let Ok(line) = std::fs::read(entry.path().join("cmdline")) else {
                continue;
            };
            let line = String::from_utf8_lossy(&line).replace('\0', " ");
            let host = line.contains("xtermjs-host") && line.contains(&parent);
            if host || line.contains(&*tmp.to_string_lossy()) {
                found.push(line);
            }
        }
        found
    };
    common::wait_for(Duration::from_secs(30), "the browser's profile", || {
        (profile() && !ours().is_empty()).then_some(())
    });
    // The keys are going: the page is open.
    std::thread::sleep(Duration::from_secs(2));
    wrap.kill().unwrap();
    wrap.wait().unwrap();
    let until = Instant::now() + Duration::from_secs(20);
    while (profile() || !ours().is_empty()) && Instant::now() < until {
        std::thread::sleep(Duration::from_millis(100));
    }
    assert!(ours().is_empty(), "left running: {:?}", ours());
    assert!(!profile(), "the profile was left");
}

/// With nothing in the cache, the first run installs xterm.js's pinned packages (said in one
/// line) into the cache alone, and runs; the next run installs nothing.
#[test]
#[cfg_attr(
    not(feature = "slow-tests"),
    ignore = "slow tier (48 s here: headless Chromium and xterm.js): cargo test --features slow-tests"
)]
fn the_first_run_installs_xterm_js_into_the_cache_and_the_next_reuses_it() {
    if !browser_here() {
        return;
    }
    let _serial = one_at_a_time();
    let cache = common::scratch_dir("xtermjs-install");
    let home = common::scratch_dir("xtermjs-home");
    let run = || {
        floor_in_xterm_js("a*3@100ms")
            .env("XDG_CACHE_HOME", &*cache)
            .env("HOME", &*home)
            .env("TMPDIR", &*home)
            .output()
            .unwrap()
    };
    let first = run();
    let said = String::from_utf8_lossy(&first.stderr).into_owned();
    assert!(first.status.success(), "{said}");
    let installs = said
        .lines()
        .filter(|l| l.contains("installing xterm.js 6.0.0"))
        .count();
    assert_eq!(installs, 1, "{said}");
    let installed = cache.join("flushlab/xtermjs-6.0.0-webgl-0.19.0/node_modules");
    assert!(
        installed.join("@xterm/xterm/lib/xterm.js").is_file(),
        "{said}"
    );
    // The cache holds the one directory; npm wrote nothing in HOME.
    let in_cache: Vec<_> = std::fs::read_dir(cache.join("flushlab"))
        .unwrap()
        .flatten()
        .collect();
    assert_eq!(in_cache.len(), 1, "{in_cache:?}");
    assert!(
        !home.join(".npm").exists(),
        "npm wrote its own cache in HOME"
    );
    let second = run();
    let said = String::from_utf8_lossy(&second.stderr).into_owned();
    assert!(second.status.success(), "{said}");
    assert!(!said.contains("installing xterm.js"), "{said}");
}

#[test]
fn a_bad_renderer_or_a_missing_browser_is_one_line_and_exit_2() {
    let run = |terminal: &str, path: &str, cache: &Path| {
        Command::new(env!("CARGO_BIN_EXE_flushlab"))
            .args([
                "wrap",
                "--terminal",
                terminal,
                "--keys",
                "a",
                "--",
                "/bin/sh",
                "-c",
                "true",
            ])
            .env("PATH", path)
            .env("XDG_CACHE_HOME", cache)
            .stdin(Stdio::null())
            .output()
            .unwrap()
    };
    let empty = common::scratch_dir("xtermjs-cache");
    let out = run("xtermjs:canvas", "/usr/bin:/bin", &empty);
    let said = common::assert_refused(&out, "xtermjs:canvas");
    assert!(said.contains("dom or webgl"), "{said}");
    let out = run("xtermjs", "/nonexistent", &empty);
    let said = common::assert_refused(&out, "chromium");
    assert!(
        said.contains("Debian package chromium-headless-shell"),
        "{said}"
    );
    // Chromium alone on PATH, and no packages in the cache: node (and npm) named.
    if let Some(chromium) = ["/usr/bin/chromium-headless-shell", "/usr/bin/chromium"]
        .iter()
        .find(|p| Path::new(p).exists())
    {
        let bin = empty.join("bin");
        std::fs::create_dir(&bin).unwrap();
        std::os::unix::fs::symlink(chromium, bin.join("chromium-headless-shell")).unwrap();
        let out = run("xtermjs", bin.to_str().unwrap(), &empty);
        let said = common::assert_refused(&out, "node");
        assert!(said.contains("Debian package nodejs"), "{said}");
        // node beside it, and no npm.
        if let Some(node) = ["/usr/bin/node", "/usr/local/bin/node"]
            .iter()
            .find(|p| Path::new(p).exists())
        {
            std::os::unix::fs::symlink(node, bin.join("node")).unwrap();
            let out = run("xtermjs", bin.to_str().unwrap(), &empty);
            let said = common::assert_refused(&out, "npm");
            assert!(said.contains("Debian package npm"), "{said}");
        }
    }
}
