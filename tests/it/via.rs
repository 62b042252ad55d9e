//! `wrap --via ssh`: CMD at the far end of a real ssh connection over wrap's own link. Checked
//! against the program's own stamps (tests/corpus/stages.c, on the same clock: everything runs
//! on this machine), against the link's own delay (a lower bound no load can break), and for
//! what it leaves behind (nothing: no sshd, no scratch directory, `~/.ssh` as it was).
//!
//! The link needs root (network namespaces) and the observer eBPF: where either is refused
//! these tests say so and pass, except in CI (`CI` set), which runs as root and must run them.

use std::process::{Command, Stdio};

use serde_json::Value;

use super::common;
use super::keyed::{assert_stages_within, one_at_a_time, stages_c};

/// Whether wrap can run `--via ssh` here (root, sshd installed); in CI it must.
pub(super) fn via_allowed() -> bool {
    if !common::has_programs(&["ssh", "ssh-keygen"]) {
        return false;
    }
    // A kernel without TUN cannot make the link: said and skipped on a contributor's machine;
    // in CI a failure (.ci/run makes the device node where the kernel has TUN and none was
    // made), so that a CI run never passes without its link tests.
    let tun = std::path::Path::new("/dev/net/tun").exists();
    assert!(
        tun || std::env::var_os("CI").is_none(),
        "CI must run wrap --via: no /dev/net/tun (CONFIG_TUN)"
    );
    if !tun {
        eprintln!("skipped: no /dev/net/tun (CONFIG_TUN): wrap --via cannot make its link");
        return false;
    }
    let root = rustix::process::geteuid().is_root();
    let sshd = std::path::Path::new("/usr/sbin/sshd").exists();
    assert!(
        (root && sshd) || std::env::var_os("CI").is_none(),
        "CI must run wrap --via ssh (root, openssh-server)"
    );
    if !(root && sshd) {
        eprintln!("skipped: wrap --via needs root and openssh-server");
    }
    root && sshd && super::kernel::kernel_allowed()
}

/// `flushlab wrap --via ssh FLAGS --size 80x24 --keys SCRIPT -- env KEYS_LOG=… CMD`: exit code,
/// report, what it said, the program's own log (sshd passes no variable: `env` sets it there).
fn via(flags: &[&str], script: &str, cmd: &[&str]) -> (Option<i32>, Value, String, String) {
    via_layers("ssh", flags, script, cmd)
}

/// The same through `layers`.
fn via_layers(
    layers: &str,
    flags: &[&str],
    script: &str,
    cmd: &[&str],
) -> (Option<i32>, Value, String, String) {
    let report = common::scratch("via.json");
    let log = common::scratch("via.log");
    let out = Command::new(env!("CARGO_BIN_EXE_flushlab"))
        .args(["wrap", "--via", layers, "--size", "80x24", "--keys", script])
        .args(flags)
        .arg("--export-json")
        .arg(&report)
        .arg("--")
        .arg("env")
        .arg(format!("KEYS_LOG={}", log.display()))
        .args(cmd)
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let said = String::from_utf8_lossy(&out.stderr).into_owned();
    let json = common::read_json(&report);
    let own = std::fs::read_to_string(&log).unwrap_or_default();
    (out.status.code(), json, said, own)
}

/// No process's command line matches `pattern` (pgrep's): nothing left behind.
fn nothing_runs(pattern: &str) {
    let left = Command::new("pgrep")
        .args(["-f", pattern])
        .output()
        .unwrap();
    assert!(
        left.stdout.is_empty(),
        "left behind: {}",
        String::from_utf8_lossy(&left.stdout)
    );
}

/// A key figure's p50: `keys.NAME`, or a stage's (`keys.stages_ms.NAME`).
fn p50(report: &Value, name: &str) -> f64 {
    let keys = &report["keys"];
    let figure = match &keys[name] {
        Value::Null => &keys["stages_ms"][name],
        figure => figure,
    };
    figure["p50"].as_f64().unwrap_or(f64::NAN)
}

/// Every key answered and nothing unprompted; the far stages (the uplink is the input delay)
/// within max(15%, 0.5 ms) of the program's own stamps; at RTT 40 the uplink and the downlink
/// each at least 18 ms (the relay holds each packet 20 ms); and nothing left behind.
#[test]
#[cfg_attr(
    not(feature = "slow-tests"),
    ignore = "slow tier (14 s here: network namespaces, sshd and a link of its own): cargo test --features slow-tests"
)]
fn a_key_through_ssh_is_timed_end_to_end_against_the_programs_own_stamps() {
    if !via_allowed() {
        return;
    }
    let _serial = one_at_a_time();
    let ssh_dir = std::env::var_os("HOME").map(|h| std::path::PathBuf::from(h).join(".ssh"));
    let ssh_before = ssh_dir.as_ref().map(|d| d.exists());
    let program = stages_c();
    let program = program.to_str().unwrap();
    // `--loopback`: the same ssh with no relay between its ends.
    for (rtt, link) in [("0", "--rtt=0"), ("40", "--rtt=40"), ("0", "--loopback")] {
        let (code, report, said, own) =
            via(&[link], "j*12@150ms q", &[program, "poll", "1000", "raw"]);
        assert_eq!(code, Some(0), "{said}");
        let what = format!("via ssh, {link}");
        assert_eq!(report["via"]["loopback"], link == "--loopback", "{what}");
        assert_eq!(report["keys"]["unanswered"], 0, "{what}: {said}");
        assert_eq!(report["keys"]["frames"]["answering"], 12, "{what}: {said}");
        assert_eq!(report["keys"]["frames"]["unprompted"], 0, "{what}: {said}");
        assert!(
            said.contains("once its shim named its pid and its pty, CMD on the far side"),
            "{what}: {said}"
        );
        assert_stages_within(&what, &report, &own, (0.15, 0.5));
        assert_eq!(report["via"]["matching"], "bytes", "{what}");
        assert_eq!(
            report["via"]["pieces_from"], "near-writes",
            "{what}: {said}"
        );
        assert!(p50(&report, "pieces_per_frame") >= 1.0, "{what}: {said}");
        assert!(
            p50(&report, "key_to_last_byte_ms") >= p50(&report, "uplink"),
            "{what}: {said}"
        );
        if rtt == "40" {
            for name in ["uplink", "downlink"] {
                assert!(p50(&report, name) >= 18.0, "{what}: {name}: {said}");
            }
        }
    }
    nothing_runs("flushlab-via");
    assert_eq!(
        wire_dirs(),
        [] as [std::path::PathBuf; 0],
        "a scratch directory of wrap --via left behind"
    );
    assert_eq!(
        ssh_dir.map(|d| d.exists()),
        ssh_before,
        "~/.ssh was made or removed"
    );
}

/// Through tmux (its server redraws the near terminal, so frames are matched by time), alone
/// and on the far side of ssh at RTT 40: every key answered by its own frame; the frames nobody
/// asked for are the program's own clock's, as it counts them, never one a tmux write; tmux's
/// own drawing (its status line) counted apart; the far stages against the program's stamps;
/// and nothing left behind (no tmux server, no scratch directory, no wtmp entry).
#[test]
#[cfg_attr(
    not(feature = "slow-tests"),
    ignore = "slow tier (20 s here: network namespaces, sshd and a link of its own): cargo test --features slow-tests"
)]
fn a_key_through_tmux_is_its_own_frame_and_tmuxs_drawing_is_counted_apart() {
    if !via_allowed() || !common::has_programs(&["tmux"]) {
        assert!(
            std::env::var_os("CI").is_none() || common::has_programs(&["tmux"]),
            "CI must have tmux"
        );
        return;
    }
    let _serial = one_at_a_time();
    let program = stages_c();
    let program = program.to_str().unwrap();
    let wtmp = std::fs::metadata("/var/log/wtmp").map(|m| m.len()).ok();
    for (layers, flags) in [("tmux", &[][..]), ("ssh,tmux", &["--rtt", "40"][..])] {
        let (code, report, said, own) = via_layers(
            layers,
            flags,
            "j*10@200ms <wait 1200ms> j*2@200ms q",
            &[program, "clock", "500", "raw"],
        );
        let what = format!("via {layers}");
        assert_eq!(code, Some(0), "{what}: {said}");
        let clock: u64 = own
            .lines()
            .find_map(|l| l.strip_prefix("clock "))
            .and_then(|n| n.parse().ok())
            .unwrap_or_else(|| panic!("{what}: no clock count in the program's log: {own}"));
        assert!(clock >= 4, "{what}: the clock drew {clock}: {said}");
        let frames = &report["keys"]["frames"];
        assert_eq!(report["keys"]["unanswered"], 0, "{what}: {said}");
        assert_eq!(frames["answering"], 12, "{what}: {said}");
        let unprompted =
            frames["unprompted"].as_u64().unwrap() + frames["before_keys"].as_u64().unwrap();
        assert_eq!(unprompted, clock, "{what}: {said}");
        assert_stages_within(&what, &report, &own, (0.15, 0.5));
        let via = &report["via"];
        assert_eq!(via["matching"], "time", "{what}");
        assert_eq!(via["pieces_from"], "near-writes", "{what}: {said}");
        assert!(
            via["layer_own"]["pieces"].as_u64().unwrap() > 0,
            "{what}: {said}"
        );
        assert!(p50(&report, "pieces_per_frame") >= 1.0, "{what}: {said}");
        let answered_with_pieces = report["keys"]["each"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|k| k["pieces"].as_u64().is_some_and(|p| p > 0))
            .count();
        assert_eq!(answered_with_pieces, 12, "{what}: {said}");
        if layers == "ssh,tmux" {
            for name in ["uplink", "downlink"] {
                assert!(p50(&report, name) >= 18.0, "{what}: {name}: {said}");
            }
        }
    }
    nothing_runs("flushlab-via|tmux -L flushlab-");
    assert_eq!(wire_dirs(), [] as [std::path::PathBuf; 0]);
    assert_eq!(
        std::fs::metadata("/var/log/wtmp").map(|m| m.len()).ok(),
        wtmp,
        "a login was recorded in wtmp"
    );
}

/// Over mosh at RTT 100, a program that echoes each key (tests/corpus/echo.c): every key
/// answered by its own echo (mosh-client redraws it in one piece), and mosh's predictive echo
/// told apart from it. With `MOSH_PREDICTION_DISPLAY=always` mosh draws each typed key at once,
/// before the key has reached the far side: a key's first byte comes before its uplink is over,
/// and those pieces are mosh's own, about one a key more than with `never`.
#[test]
#[cfg_attr(
    not(feature = "slow-tests"),
    ignore = "slow tier (17 s here: network namespaces, sshd and a link of its own): cargo test --features slow-tests"
)]
fn over_mosh_its_predictive_echo_is_its_own_and_the_programs_echo_answers() {
    if !via_allowed() || !common::has_programs(&["mosh-server", "mosh-client"]) {
        assert!(
            std::env::var_os("CI").is_none()
                || common::has_programs(&["mosh-server", "mosh-client"]),
            "CI must have mosh"
        );
        return;
    }
    let _serial = one_at_a_time();
    let program = common::c_program("echo");
    let run = |prediction: &str| {
        let report = common::scratch("mosh.json");
        let out = Command::new(env!("CARGO_BIN_EXE_flushlab"))
            .args(["wrap", "--via", "mosh", "--rtt", "100", "--size", "80x24"])
            .args(["--keys", "abcdefghij@300ms q", "--export-json"])
            .arg(&report)
            .arg("--")
            .arg(program.as_os_str())
            .env("MOSH_PREDICTION_DISPLAY", prediction)
            .stdin(Stdio::null())
            .output()
            .unwrap();
        let said = String::from_utf8_lossy(&out.stderr).into_owned();
        assert_eq!(out.status.code(), Some(0), "{prediction}: {said}");
        (common::read_json(&report), said)
    };
    let (always, said) = run("always");
    let (never, said_never) = run("never");
    for (report, said) in [(&always, &said), (&never, &said_never)] {
        assert_eq!(report["keys"]["unanswered"], 0, "{said}");
        let answering = report["keys"]["frames"]["answering"].as_u64().unwrap();
        let superseded = report["via"]["superseded_frames"].as_u64().unwrap();
        assert_eq!(answering + superseded, 10, "{said}");
        assert_eq!(report["via"]["matching"], "time", "{said}");
        assert!(p50(report, "uplink") >= 45.0, "{said}");
    }
    let own = |r: &Value| r["via"]["layer_own"]["pieces"].as_u64().unwrap();
    assert!(
        own(&always) >= own(&never) + 8,
        "always {}, never {}: {said}",
        own(&always),
        own(&never)
    );
    // Drawn before the key reached the far side: mosh's, not the program's.
    assert!(
        p50(&always, "first_byte_ms") < p50(&always, "uplink"),
        "{said}"
    );
    assert!(
        p50(&never, "first_byte_ms") >= p50(&never, "uplink"),
        "{said_never}"
    );
}

/// `--against` over a wire: both builds through the same sshd, round after round (a run's end
/// spares the wire's processes), and the verdict on key→last byte at the near end, every round's
/// figure known for both builds.
#[test]
#[cfg_attr(
    not(feature = "slow-tests"),
    ignore = "slow tier (16 s here: network namespaces, sshd and a link of its own): cargo test --features slow-tests"
)]
fn against_over_ssh_judges_key_to_last_byte_round_after_round() {
    if !via_allowed() {
        return;
    }
    let _serial = one_at_a_time();
    let program = stages_c();
    let program = program.to_str().unwrap();
    let report = common::scratch("against-via.json");
    let out = Command::new(env!("CARGO_BIN_EXE_flushlab"))
        .args([
            "wrap",
            "--via",
            "ssh",
            "--size",
            "80x24",
            "--keys",
            "j*4@200ms q",
        ])
        .args([
            "--rounds",
            "2",
            "--against",
            &format!("{program} poll 0 raw"),
        ])
        .arg("--export-json")
        .arg(&report)
        .args(["--", program, "poll", "0", "frame"])
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let said = String::from_utf8_lossy(&out.stderr).into_owned();
    let report = common::read_json(&report);
    assert_eq!(report["against"]["measure"], "key-to-last-byte", "{said}");
    let rounds = report["rounds"].as_array().unwrap();
    assert_eq!(rounds.len(), 2, "{said}");
    for round in rounds {
        for build in ["old", "new"] {
            assert!(
                round[build]["key_to_frame_p50_ms"]
                    .as_f64()
                    .is_some_and(|ms| ms > 0.0),
                "{build}: {round}: {said}"
            );
        }
    }
    assert!(said.contains("key→last byte p50, NEW over OLD"), "{said}");
}

/// Synchronized output (DEC 2026) through the layers, stages.c drawing each frame in a block:
/// the observer at the far end sees CMD open every block it drew (its own count of frames);
/// through ssh, which forwards bytes, every one reaches the near end, and no more of them whole
/// than arrived; through tmux 3.3a, which does not pass 2026 on from a pane, none arrives, and
/// the report names tmux as the layer that dropped them.
#[test]
#[cfg_attr(
    not(feature = "slow-tests"),
    ignore = "slow tier (11 s here: network namespaces, sshd and a link of its own): cargo test --features slow-tests"
)]
fn synchronized_blocks_all_cross_ssh_and_none_crosses_tmux() {
    if !via_allowed() || !common::has_programs(&["tmux"]) {
        return;
    }
    let _serial = one_at_a_time();
    let program = stages_c();
    let program = program.to_str().unwrap();
    for layers in ["ssh", "tmux"] {
        let (code, report, said, own) = via_layers(
            layers,
            &[],
            "j*6@200ms q",
            &[program, "poll", "0", "frame", "sync"],
        );
        assert_eq!(code, Some(0), "{layers}: {said}");
        let drawn = own.lines().filter(|l| !l.starts_with("clock")).count() as u64;
        assert_eq!(drawn, 7, "{layers}: the program's own frames: {own}");
        let blocks = &report["via"]["sync_blocks"];
        let (arrived, whole) = (
            blocks["arrived"].as_u64().unwrap(),
            blocks["whole"].as_u64().unwrap(),
        );
        assert!(whole <= arrived, "{layers}: {blocks}");
        assert_eq!(blocks["sent"].as_u64(), Some(drawn), "{layers}: {said}");
        let lost = &report["seen"]["sync_lost"];
        if layers == "ssh" {
            assert_eq!(arrived, drawn, "{said}");
            assert_eq!(lost, &Value::Null, "{said}");
        } else {
            assert_eq!(arrived, 0, "{said}");
            assert_eq!(
                (lost["opened"].as_u64(), lost["by"].as_str()),
                (Some(drawn), Some("tmux")),
                "{said}"
            );
            assert!(
                said.contains("CMD's 2026 blocks were dropped by tmux"),
                "{said}"
            );
        }
    }
}

/// The near end in a real terminal (`--terminal kitty --via LAYERS`), the camera on its
/// window: flash.c's answers in 2026 blocks, which kitty holds. Through tmux 3.3a, which drops
/// them, at least 18 of 20 keys flash and the report names tmux; through ssh, which forwards
/// them, at most 2 and nothing is said. In both the observer at the far end counts CMD's own
/// blocks as the program counts the screens it blanked.
#[test]
#[cfg_attr(
    not(feature = "slow-tests"),
    ignore = "slow tier (a terminal, a camera and a wire, twice): cargo test --features slow-tests"
)]
fn in_kitty_through_tmux_a_synchronized_program_flashes_and_tmux_is_named() {
    let here = common::has_programs(&["tmux", "Xvfb", "kitty"]);
    assert!(
        here || std::env::var_os("CI").is_none(),
        "CI must have tmux, Xvfb and kitty"
    );
    if !here || !via_allowed() {
        return;
    }
    let _serial = one_at_a_time();
    let program = common::c_program("flash");
    for layers in ["tmux", "ssh"] {
        let report = common::scratch("kitty-via.json");
        let count = common::scratch("kitty-via.count");
        let out = Command::new(env!("CARGO_BIN_EXE_flushlab"))
            .args(["wrap", "--terminal", "kitty", "--via", layers])
            .args(["--size", "80x24", "--keys", "a*20@150ms q", "--export-json"])
            .arg(&*report)
            .arg("--")
            .arg(&*program)
            .arg("csi")
            .arg(&*count)
            .stdin(Stdio::null())
            .output()
            .unwrap();
        let said = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(0), "{layers}: {said}");
        let report = common::read_json(&report);
        let blanked: u64 = std::fs::read_to_string(&*count)
            .unwrap()
            .trim()
            .parse()
            .unwrap();
        assert_eq!(blanked, 20, "{layers}: {said}");
        assert_eq!(
            report["inside"]["frames_opening_sync"].as_u64(),
            Some(blanked),
            "{layers}: {said}"
        );
        let seen = &report["seen"];
        assert_eq!(seen["by"], "camera", "{layers}: {said}");
        let flashed = seen["keys_flashed"].as_u64().unwrap();
        if layers == "tmux" {
            assert!(flashed >= 18, "{layers}: {flashed} of 20 flashed: {said}");
            assert_eq!(seen["sync_lost"]["by"], "tmux", "{said}");
            assert!(
                said.contains("CMD's 2026 blocks were dropped by tmux"),
                "{said}"
            );
        } else {
            assert!(flashed <= 2, "{layers}: {flashed} of 20 flashed: {said}");
            assert_eq!(seen["sync_lost"], Value::Null, "{said}");
        }
    }
}

/// The link's round trip as TCP itself measures it: the ssh connection's RTT estimate in the
/// kernel (`ss -ti` in the near namespace, mid-run) at `--rtt 40`. Its least sample (`minrtt`)
/// is at least the 40 ms the relay holds each round trip, and within 10% of it; the smoothed
/// estimate is said beside it.
#[test]
#[cfg_attr(
    not(feature = "slow-tests"),
    ignore = "slow tier (7 s here: network namespaces, sshd and a link of its own): cargo test --features slow-tests"
)]
fn tcp_itself_sees_the_links_round_trip() {
    if !via_allowed() || !common::has_programs(&["ss", "nsenter", "pgrep"]) {
        return;
    }
    let _serial = one_at_a_time();
    struct Killed(std::process::Child);
    impl Drop for Killed {
        fn drop(&mut self) {
            let _ = self.0.kill();
            let _ = self.0.wait();
        }
    }
    let program = stages_c();
    let wrap = Command::new(env!("CARGO_BIN_EXE_flushlab"))
        .args(["wrap", "--via", "ssh", "--rtt", "40", "--size", "80x24"])
        .args(["--keys", "j*40@100ms q", "--"])
        .arg(program.as_os_str())
        .args(["poll", "0", "frame"])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let _wrap = Killed(wrap);
    let client = common::wait_for(std::time::Duration::from_secs(20), "the ssh client", || {
        let out = Command::new("pgrep")
            .args(["-n", "-f"])
            .arg(format!(
                "^/usr/bin/ssh -F {}/flushlab-via",
                std::env::temp_dir().display()
            ))
            .output()
            .ok()?;
        let pid = String::from_utf8_lossy(&out.stdout)
            .lines()
            .next()?
            .trim()
            .to_owned();
        (!pid.is_empty()).then_some(pid)
    });
    // Keys flowing for a while: TCP has samples of the round trip.
    std::thread::sleep(std::time::Duration::from_secs(2));
    let out = Command::new("nsenter")
        .args(["-t", &client, "-n", "ss", "-tin", "dport", "= :22"])
        .output()
        .unwrap();
    let said = String::from_utf8_lossy(&out.stdout).into_owned();
    let figure = |name: &str| -> f64 {
        said.split_whitespace()
            .find_map(|w| w.strip_prefix(name))
            .and_then(|v| v.split('/').next())
            .and_then(|v| v.parse().ok())
            .unwrap_or_else(|| panic!("no {name} in ss -tin: {said}"))
    };
    let (min, smoothed) = (figure("minrtt:"), figure("rtt:"));
    eprintln!("the ssh connection's RTT as TCP sees it: minrtt {min} ms, srtt {smoothed} ms");
    assert!(
        (40.0..=44.0).contains(&min),
        "minrtt {min} ms against the link's 40: {said}"
    );
}

/// A frame of one write(2) at a paced rate: every byte of it attributed to its key; its
/// downlink at least what the rate allows for its bytes, and its tear at least what the rate
/// allows for all but one of ssh's messages (the client writes a message only once it has all
/// of it, and a channel message carries up to 32 KiB): lower bounds no load can break.
#[test]
#[cfg_attr(
    not(feature = "slow-tests"),
    ignore = "slow tier (6 s here: network namespaces, sshd and a link of its own): cargo test --features slow-tests"
)]
fn a_frame_at_a_low_rate_tears_for_as_long_as_its_bytes_take() {
    if !via_allowed() {
        return;
    }
    let _serial = one_at_a_time();
    let program = common::c_program("keyed");
    let program = program.to_str().unwrap();
    let rate = 125_000.0;
    let (code, report, said, _) = via(
        &["--rate", "125000"],
        "j*3@800ms q",
        &[program, "x", "frame"],
    );
    assert_eq!(code, Some(0), "{said}");
    let each = report["keys"]["each"].as_array().unwrap();
    for key in each.iter().take(3) {
        let bytes = key["bytes"].as_f64().unwrap();
        assert_eq!(key["writes"], 1, "{said}");
        assert!(bytes > 10_000.0, "{said}");
        let tear = key["tear_ms"].as_f64().unwrap();
        let least = (bytes - 32_768.0).max(0.0) / rate * 1e3;
        assert!(
            tear >= least * 0.95,
            "tear {tear} ms, the rate allows no less than {least} ms: {said}"
        );
        let downlink = key["stages_ms"]["drain"].as_f64().unwrap();
        let least = bytes / rate * 1e3;
        assert!(
            downlink >= least * 0.98,
            "downlink {downlink} ms, the rate allows no less than {least} ms: {said}"
        );
        assert!(key["pieces"].as_u64().unwrap() > 1, "{said}");
    }
}

/// Pieces a frame are the ssh client's write(2)s to the near terminal, key by key, as strace
/// counts them (scripts/via-pieces-strace.py): frames of 200x60 drawn a row a write, which the
/// client writes in messages of several kB and the pty passes on in smaller pieces (wrap's
/// reads counted 4× the writes before the near writer was observed).
#[test]
#[cfg_attr(
    not(feature = "slow-tests"),
    ignore = "slow tier (18 s here: network namespaces, sshd and a link of its own): cargo test --features slow-tests"
)]
fn pieces_are_the_ssh_clients_writes_as_strace_counts_them() {
    if !via_allowed() || !common::has_programs(&["strace", "python3"]) {
        return;
    }
    let _serial = one_at_a_time();
    let program = stages_c();
    let out = Command::new("python3")
        .arg(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/scripts/via-pieces-strace.py"
        ))
        .args(["--flushlab", env!("CARGO_BIN_EXE_flushlab")])
        .args([
            "--rtt",
            "20",
            "--size",
            "200x60",
            "--keys",
            "j*10@300ms q",
            "--",
        ])
        .arg(&program)
        .args(["poll", "1000", "rows"])
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let said = String::from_utf8_lossy(&out.stdout).into_owned();
    let last = said.lines().last().unwrap_or_default();
    assert!(
        last.starts_with("10 of 10 keys"),
        "{said}{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// The wire's scratch directories in the temporary directory now.
fn wire_dirs() -> Vec<std::path::PathBuf> {
    std::fs::read_dir(std::env::temp_dir())
        .unwrap()
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().starts_with("flushlab-via-"))
        .map(|e| e.path())
        .collect()
}

/// A SIGKILL of wrap mid-run leaves nothing, through each chain: sshd, its sessions and CMD
/// end with it (its pid namespace), as do a tmux server and mosh-server (daemons, in the near
/// end's pid namespace or sshd's), and the scratch directory goes (the sweeper reads wrap's end off a
/// pipe). A SIGTERM through tmux and mosh, the two with daemons of their own: wrap ends the
/// layers itself and exits 143 (128 + 15), leaving nothing either.
#[test]
#[cfg_attr(
    not(feature = "slow-tests"),
    ignore = "slow tier (12 s here: network namespaces, sshd and a link of its own): cargo test --features slow-tests"
)]
fn a_sigkill_of_wrap_leaves_no_sshd_no_tmux_no_mosh_no_cmd_and_no_scratch() {
    if !via_allowed() || !common::has_programs(&["tmux", "mosh-server", "mosh-client"]) {
        return;
    }
    let _serial = one_at_a_time();
    // Killed however the test ends.
    struct Killed(std::process::Child);
    impl Drop for Killed {
        fn drop(&mut self) {
            let _ = self.0.kill();
            let _ = self.0.wait();
        }
    }
    let running = |pattern: &str| {
        let out = Command::new("pgrep")
            .args(["-f", pattern])
            .output()
            .unwrap();
        !out.stdout.is_empty()
    };
    for (layers, signal) in [
        ("ssh", "KILL"),
        ("tmux", "KILL"),
        ("ssh,tmux", "KILL"),
        ("mosh", "KILL"),
        ("ssh,tmux", "TERM"),
        ("mosh", "TERM"),
    ] {
        let before = wire_dirs();
        let wrap = Command::new(env!("CARGO_BIN_EXE_flushlab"))
            .args(["wrap", "--via", layers, "--size", "80x24"])
            .args(["--keys", "j*200@100ms q", "--", "sleep", "3600"])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let mut wrap = Killed(wrap);
        let dir = common::wait_for(std::time::Duration::from_secs(20), "the far CMD", || {
            let new: Vec<_> = wire_dirs()
                .into_iter()
                .filter(|d| !before.contains(d))
                .collect();
            (new.len() == 1 && running("/sleep 3600$")).then(|| new[0].clone())
        });
        let dir_text = dir.to_string_lossy().into_owned();
        if layers.contains("tmux") {
            assert!(
                running(&dir_text),
                "{layers}: no tmux server named its socket"
            );
        }
        eprintln!("--via {layers}: CMD running at the far end; SIG{signal} to wrap");
        let sent = Command::new("kill")
            .args([&format!("-{signal}"), &wrap.0.id().to_string()])
            .status()
            .unwrap();
        assert!(sent.success());
        let status = common::wait_for(
            std::time::Duration::from_secs(15),
            &format!("wrap --via {layers} to end on SIG{signal}"),
            || wrap.0.try_wait().unwrap(),
        );
        if signal == "TERM" {
            assert_eq!(status.code(), Some(143), "--via {layers}: {status:?}");
        }
        common::wait_for(
            std::time::Duration::from_secs(10),
            &format!("everything of --via {layers} gone"),
            || (!dir.exists() && !running(&dir_text) && !running("/sleep 3600$")).then_some(()),
        );
    }
}

/// The far end's shim, given what it cannot use (no wrap at its socket, no such directory, no
/// such program): CMD still starts where it can; where it cannot, one escaped line and 127.
#[test]
fn the_shim_without_wrap_still_starts_cmd_and_says_what_it_cannot() {
    let shim = |cmd: &[&str]| {
        Command::new(env!("CARGO_BIN_EXE_flushlab"))
            .args([
                "far-root",
                "--socket",
                "/nonexistent/s.sock",
                "--cwd",
                "/nonexistent",
            ])
            .arg("--")
            .args(cmd)
            .stdin(Stdio::null())
            .output()
            .unwrap()
    };
    let ran = shim(&["printf", "ok"]);
    assert_eq!((ran.status.code(), &ran.stdout[..]), (Some(0), &b"ok"[..]));
    let missing = shim(&["/no\x1b[2Jthing"]);
    let said = String::from_utf8_lossy(&missing.stderr);
    assert_eq!(missing.status.code(), Some(127), "{said}");
    assert_eq!(said.trim_end().lines().count(), 1, "{said}");
    assert!(
        !said.contains('\x1b') && said.contains("far-root"),
        "{said:?}"
    );
}

/// Bad input: one line, exit 2, before anything starts.
#[test]
fn bad_link_flags_and_layers_are_refused_in_one_line() {
    for (flags, what) in [
        (&["--via", "ssh", "--rtt=-1"][..], "no round trip"),
        (&["--via", "ssh", "--rtt", "10001"][..], "no round trip"),
        (&["--via", "ssh", "--rate", "999"][..], "no rate"),
        (&["--via", "ssh", "--loss", "0.6"][..], "no loss"),
        (&["--via", "telnet"][..], "telnet"),
        (&["--via", "ssh,mosh", "--keys", "q"][..], "not a chain"),
        (&["--via", "tmux,ssh", "--keys", "q"][..], "ssh,tmux"),
        (
            &["--via", "tmux", "--rtt", "40", "--keys", "q"][..],
            "only ssh and mosh cross",
        ),
        (
            &["--via", "tmux", "--loopback", "--keys", "q"][..],
            "only ssh",
        ),
        (
            &["--via", "ssh", "--loopback", "--rtt", "40", "--keys", "q"][..],
            "no relay",
        ),
        (&["--rtt", "40"][..], "--via"),
        (
            &["--via", "ssh", "--observer", "preload", "--keys", "q"][..],
            "kernel observer",
        ),
        (
            &["--via", "ssh", "--against", "/no/such/old", "--keys", "q"][..],
            "/no/such/old",
        ),
        (
            &["--via", "tmux", "--terminal", "xtermjs", "--keys", "q"][..],
            "not together yet",
        ),
        (
            &[
                "--via",
                "tmux",
                "--terminal",
                "kitty",
                "--observer",
                "preload",
                "--keys",
                "q",
            ][..],
            "kernel observer",
        ),
    ] {
        let out = Command::new(env!("CARGO_BIN_EXE_flushlab"))
            .arg("wrap")
            .args(flags)
            .args(["--", "true"])
            .stdin(Stdio::null())
            .output()
            .unwrap();
        let said = common::assert_refused(&out, &flags.join(" "));
        assert!(said.contains(what), "{flags:?}: {said}");
    }
}

/// A geostationary hop (RTT 600 ms) through ssh and through mosh: the connection is made (every
/// wait the link lengthens scales with it) and at least 18 of 20 keys are answered, each
/// uplink half the round trip (the relay holds each packet 300 ms: a lower bound no load can
/// break, and ±15 ms above it); through ssh the first byte comes a round trip after the key.
/// mosh's own pieces (its predictions, its redraws) are said apart from the far frames.
#[test]
#[cfg_attr(
    not(feature = "slow-tests"),
    ignore = "slow tier (two runs of 25 s at RTT 600 ms): cargo test --features slow-tests"
)]
fn a_geostationary_link_answers_its_keys_through_ssh_and_mosh() {
    if !via_allowed() || !common::has_programs(&["mosh-server", "mosh-client"]) {
        return;
    }
    let _serial = one_at_a_time();
    let program = common::c_program("echo");
    // 20 keys, none of them echo.c's q, each sent after the last one's answer is back.
    let keys = "abcdefghijkmnoprstuv@800ms";
    for layers in ["ssh", "mosh"] {
        let (code, report, said, _) = via_layers(
            layers,
            &["--rtt", "600"],
            keys,
            &[program.to_str().unwrap()],
        );
        assert_eq!(code, Some(0), "{layers}: {said}");
        let unanswered = report["keys"]["unanswered"].as_u64().unwrap();
        assert!(unanswered <= 2, "{layers}: {unanswered} unanswered: {said}");
        let uplink = p50(&report, "uplink");
        assert!(
            (300.0..=315.0).contains(&uplink),
            "{layers}: uplink p50 {uplink} ms: {said}"
        );
        match layers {
            "ssh" => {
                let first = p50(&report, "first_byte_ms");
                assert!(
                    (600.0..=630.0).contains(&first),
                    "ssh: first byte p50 {first} ms: {said}"
                );
            }
            _ => assert!(
                report["via"]["layer_own"]["pieces"].is_u64(),
                "mosh: its own pieces not said apart: {said}"
            ),
        }
    }
}

/// Half the packets lost each way, no `--duration`: the run ends within the bound the docs
/// state (CMD's start within 10 s and 12 round trips, each tried 17 times at 1 s and the round
/// trip; the last answers within 5 s and 2 such round trips; GRACE); a run in which no key was
/// answered exits 1, its last line saying so, and one whose far side never started says only
/// that.
#[test]
#[cfg_attr(
    not(feature = "slow-tests"),
    ignore = "slow tier (a lossy link: up to 4 minutes): cargo test --features slow-tests"
)]
fn a_lossy_link_ends_within_its_bound() {
    if !via_allowed() {
        return;
    }
    let _serial = one_at_a_time();
    let started = std::time::Instant::now();
    let json = common::scratch("lossy.json");
    let out = Command::new(env!("CARGO_BIN_EXE_flushlab"))
        .args(["wrap", "--via", "ssh", "--loss", "0.5", "--size", "80x24"])
        .args(["--keys", "a*10@200ms", "--export-json"])
        .arg(&json)
        .args(["--", "sh", "-c", "stty raw -echo; exec cat"])
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let took = started.elapsed();
    let (code, said) = (
        out.status.code(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    );
    let report: Value = std::fs::read(&json)
        .ok()
        .and_then(|bytes| serde_json::from_slice(&bytes).ok())
        .unwrap_or_default();
    // 10 s + 12 × 17 × 1 s to start, 2 s of keys, 5 s + 2 × 17 × 1 s to settle, 2 s of grace,
    // and 20 s for the machine and the scratch.
    let bound = std::time::Duration::from_secs(10 + 204 + 2 + 5 + 34 + 2 + 20);
    assert!(took <= bound, "took {took:?}, bound {bound:?}: {said}");
    let lines: Vec<&str> = said.lines().filter(|l| l.starts_with("flushlab")).collect();
    let last = lines.last().copied().unwrap_or_default();
    if said.contains("never started at the far end")
        || said.contains("before CMD started at the far end")
    {
        // No summary of a run that did not happen.
        assert_eq!(code, Some(1), "{said}");
        assert_eq!(lines.len(), 1, "{said}");
    } else if report["keys"]["unanswered"] == report["keys"]["keys"] {
        assert_eq!(code, Some(1), "{said}");
        assert!(last.contains("was answered"), "{said}");
    } else {
        assert_eq!(code, Some(0), "{said}");
    }
    eprintln!("a lossy link (--loss 0.5) took {took:?}: {said}");
}

/// Users that exist only in a private mount namespace of a test's: passwd, group and shadow
/// copies with them added, in a directory anyone can reach (their home too), bound over /etc's
/// by [`UsersOfTheTest::wrap`] in a namespace nothing outside sees.
struct UsersOfTheTest {
    dir: common::Scratch,
    flushlab: std::path::PathBuf,
    _copy: common::Scratch,
}

impl UsersOfTheTest {
    /// `users`: each one's name, uid, shell and shadow password field.
    fn new(users: &[(&str, u32, &str, &str)]) -> UsersOfTheTest {
        let (copy, flushlab) = common::flushlab_for_anyone();
        let dir = common::scratch_dir_for_anyone("users");
        for file in ["passwd", "group", "shadow"] {
            let mut text =
                std::fs::read_to_string(std::path::Path::new("/etc").join(file)).unwrap();
            if !text.ends_with('\n') {
                text.push('\n');
            }
            for &(name, uid, shell, password) in users {
                text += &match file {
                    "passwd" => format!("{name}:x:{uid}:{uid}::{}:{shell}\n", dir.display()),
                    "group" => format!("{name}:x:{uid}:\n"),
                    _ => format!("{name}:{password}:19000:0:99999:7:::\n"),
                };
            }
            std::fs::write(dir.join(file), text).unwrap();
        }
        UsersOfTheTest {
            dir,
            flushlab,
            _copy: copy,
        }
    }

    /// uids no user of this machine has.
    fn free_uids() -> impl Iterator<Item = u32> {
        let passwd = std::fs::read_to_string("/etc/passwd").unwrap();
        let taken: Vec<u32> = passwd
            .lines()
            .filter_map(|l| l.split(':').nth(2)?.parse().ok())
            .collect();
        (4200..5000).filter(move |u| !taken.contains(u))
    }

    /// `sudo`-like: `flushlab wrap ARGS` as root with SUDO_* naming `name` (`uid`), in the
    /// private namespace.
    fn wrap(&self, (name, uid): (&str, u32), args: &[&std::ffi::OsStr]) -> std::process::Output {
        let bind = "for f in passwd group shadow; do mount --bind \"$1/$f\" \"/etc/$f\" || exit 1; \
                    done; shift; exec \"$@\"";
        Command::new("unshare")
            .args([
                "--mount",
                "--propagation",
                "private",
                "--",
                "sh",
                "-c",
                bind,
                "sh",
            ])
            .arg(&*self.dir)
            .arg(&self.flushlab)
            .arg("wrap")
            .args(args)
            .env("SUDO_UID", uid.to_string())
            .env("SUDO_GID", uid.to_string())
            .env("SUDO_USER", name)
            .stdin(Stdio::null())
            .output()
            .unwrap()
    }
}

/// A sudoer whose password is locked (`!` in /etc/shadow: every passwordless NOPASSWD sudoer)
/// runs `--via ssh` and `--via ssh,tmux` with every key answered: CMD runs at the far end as
/// them. And a far side that never starts (a user whose shell refuses logins: ssh ends before
/// CMD's shim can) is one line, exit 1, no report. The users exist only in a private mount
/// namespace of the test's, so nothing outside it changes; /etc/shadow is checked unchanged.
#[test]
#[cfg_attr(
    not(feature = "slow-tests"),
    ignore = "slow tier (three runs as other users): cargo test --features slow-tests"
)]
fn a_sudoer_with_a_locked_password_runs_through_ssh_and_tmux() {
    if !via_allowed() || !common::has_programs(&["unshare", "tmux"]) {
        return;
    }
    let _serial = one_at_a_time();
    let mut uids = UsersOfTheTest::free_uids();
    let locked = ("flushlab-locked", uids.next().unwrap());
    let refused = ("flushlab-nologin", uids.next().unwrap());
    let shadow_before = std::fs::read("/etc/shadow").unwrap();
    let users = UsersOfTheTest::new(&[
        (locked.0, locked.1, "/bin/sh", "!"),
        (refused.0, refused.1, "/usr/sbin/nologin", "*"),
    ]);
    for layers in ["ssh", "ssh,tmux"] {
        let json = users.dir.join(format!("{layers}.json"));
        let who = users.dir.join(format!("{layers}.who"));
        let out = users.wrap(
            locked,
            &[
                "--via".as_ref(),
                layers.as_ref(),
                "--size".as_ref(),
                "80x24".as_ref(),
                "--keys".as_ref(),
                "a*6@200ms".as_ref(),
                "--export-json".as_ref(),
                json.as_os_str(),
                "--".as_ref(),
                "sh".as_ref(),
                "-c".as_ref(),
                "stty raw -echo; id -un > \"$0\"; exec cat".as_ref(),
                who.as_os_str(),
            ],
        );
        let said = String::from_utf8_lossy(&out.stderr).into_owned();
        assert_eq!(out.status.code(), Some(0), "{layers}: {said}");
        let report = common::read_json(&json);
        assert_eq!(report["keys"]["keys"], 6, "{layers}: {said}");
        assert_eq!(report["keys"]["unanswered"], 0, "{layers}: {said}");
        let who = std::fs::read_to_string(&who).unwrap_or_default();
        assert_eq!(who.trim(), locked.0, "{layers}: CMD ran as '{who}': {said}");
    }
    // A far side that never started: one line, exit 1, no report of a run that did not happen.
    let json = users.dir.join("refused.json");
    let out = users.wrap(
        refused,
        &[
            "--via".as_ref(),
            "ssh".as_ref(),
            "--keys".as_ref(),
            "a*3@200ms".as_ref(),
            "--export-json".as_ref(),
            json.as_os_str(),
            "--".as_ref(),
            "cat".as_ref(),
        ],
    );
    let said = String::from_utf8_lossy(&out.stderr).into_owned();
    assert_eq!(out.status.code(), Some(1), "{said}");
    assert_eq!(said.trim_end().lines().count(), 1, "{said}");
    assert!(said.contains("before CMD started at the far end"), "{said}");
    assert!(
        !json.exists(),
        "a report of a run that did not happen: {said}"
    );
    assert_eq!(
        std::fs::read("/etc/shadow").unwrap(),
        shadow_before,
        "/etc/shadow changed"
    );
    assert!(
        !std::fs::read_to_string("/etc/passwd")
            .unwrap()
            .contains(locked.0),
        "the users leaked out of the test's namespace"
    );
}

/// Keys typed faster than the round trip (50 ms apart at RTT 200 ms: four in flight at once):
/// each is matched to the read that took its own bytes at the far end, so no uplink is shorter
/// than the link's one-way delay (100 ms, less 5 ms for the relay's tolerance), every key has a
/// frame of its own or is said to be coalesced into the one before's, and key→last byte is the
/// round trip (200 ± 20 ms: echo.c takes microseconds).
#[test]
#[cfg_attr(
    not(feature = "slow-tests"),
    ignore = "slow tier (19 s here: network namespaces, sshd and a link of its own): cargo test --features slow-tests"
)]
fn keys_in_flight_are_each_matched_to_their_own_frame() {
    if !via_allowed() {
        return;
    }
    let _serial = one_at_a_time();
    let program = common::c_program("echo");
    let (code, report, said, _) = via(&["--rtt", "200"], "a*20@50ms", &[program.to_str().unwrap()]);
    assert_eq!(code, Some(0), "{said}");
    let each = report["keys"]["each"].as_array().unwrap();
    assert_eq!(each.len(), 20, "{said}");
    for (i, key) in each.iter().enumerate() {
        let uplink = key["stages_ms"]["input_delay"].as_f64();
        assert!(
            uplink.is_some_and(|u| u >= 95.0),
            "key {i}: uplink {uplink:?}: {said}"
        );
        assert!(
            key["frames"] == 1 || key["coalesced"] == true,
            "key {i}: neither a frame of its own nor coalesced: {key}"
        );
    }
    let last_byte = p50(&report, "key_to_last_byte_ms");
    assert!(
        (180.0..=220.0).contains(&last_byte),
        "key→last byte p50 {last_byte} ms: {said}"
    );
}
