//! Faults a hostile or demanding user finds, held for every terminal and every layer: CMD's
//! environment on no command line another user can read, and nothing of a SIGKILLed wrap left
//! in TMPDIR.

use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use super::common;
use super::keyed::one_at_a_time;

/// Where wrap can run CMD, and what each needs here: `--terminal NAME` (xterm.js in Chromium,
/// X11 on wrap's Xvfb, Wayland on wrap's sway) and `--via LAYERS`. Those this machine cannot
/// run are skipped, said; CI has them all.
fn places() -> Vec<(&'static str, Vec<&'static str>)> {
    let browser = common::has_programs(&["chromium-headless-shell", "node", "npm"]);
    let x11 = common::has_programs(&["Xvfb", "xterm"]);
    let wayland = common::has_programs(&["sway", "foot"]);
    let via = super::via::via_allowed();
    let samply = common::has_programs(&["samply"])
        || std::env::var_os("HOME")
            .is_some_and(|home| Path::new(&home).join(".cargo/bin/samply").is_file());
    let mut places = Vec::new();
    for (here, flags) in [
        (browser, vec!["--terminal", "xtermjs"]),
        (browser, vec!["--terminal", "xtermjs:webgl"]),
        // Headless, recorded by samply: its command line, and the marker files' scratch.
        (samply, vec!["--profile", PROFILE_IN_TMP]),
        (x11, vec!["--terminal", "xterm"]),
        // The near end in a terminal: its Xvfb, the wire's sshd and tmux, CMD at the far end.
        (
            x11 && via && common::has_programs(&["tmux"]),
            vec!["--terminal", "xterm", "--via", "ssh,tmux"],
        ),
        (wayland, vec!["--terminal", "foot", "--wayland"]),
        (via, vec!["--via", "ssh"]),
        (via, vec!["--via", "ssh,tmux"]),
        (
            via && common::has_programs(&["mosh-server"]),
            vec!["--via", "mosh"],
        ),
        (
            via && common::has_programs(&["tmux"]),
            vec!["--via", "tmux"],
        ),
    ] {
        let name = flags[1..].join(" ");
        if here {
            places.push((flags[1], flags));
        } else {
            eprintln!("skipped here: {name}");
            assert!(
                std::env::var_os("CI").is_none(),
                "CI must run wrap {}",
                flags.join(" ")
            );
        }
    }
    places
}

/// A flag's value that stands for a profile in the run's TMPDIR.
const PROFILE_IN_TMP: &str = "<TMPDIR>/profile.json.gz";

/// `flushlab wrap FLAGS --size 80x24 --keys KEYS -- sh -c SCRIPT`, in `tmp` as TMPDIR, with
/// `planted` in its environment as FLUSHLAB_PLANTED.
fn wrap_in(tmp: &Path, flags: &[&str], keys: &str, script: &str, planted: &str) -> Command {
    let mut wrap = Command::new(env!("CARGO_BIN_EXE_flushlab"));
    let profile = tmp.join("profile.json.gz");
    wrap.arg("wrap")
        .args(flags.iter().map(|&f| match f {
            PROFILE_IN_TMP => profile.as_os_str(),
            f => f.as_ref(),
        }))
        .args(["--size", "80x24", "--keys", keys, "--", "sh", "-c", script])
        .env("TMPDIR", tmp)
        .env("FLUSHLAB_PLANTED", planted)
        .stdin(Stdio::null());
    wrap
}

/// The command lines of every process that hold `needle`.
fn command_lines_holding(needle: &[u8]) -> Vec<String> {
    let mut found = Vec::new();
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return found;
    };
    for entry in entries.flatten() {
        let Ok(line) = std::fs::read(entry.path().join("cmdline")) else {
            continue;
        };
        if line.windows(needle.len()).any(|w| w == needle) {
            found.push(String::from_utf8_lossy(&line).replace('\0', " "));
        }
    }
    found
}

/// A value planted in wrap's environment is on no process's command line (`/proc/PID/cmdline`
/// is any user's to read) while wrap runs CMD in every terminal and through every layer; in a
/// terminal CMD still gets it (it gets wrap's environment, as a shell there would pass it on),
/// unless a wire is between them.
#[test]
#[cfg_attr(
    not(feature = "slow-tests"),
    ignore = "slow tier (a run in each terminal and layer): cargo test --features slow-tests"
)]
fn a_planted_variable_is_on_no_command_line() {
    let _serial = one_at_a_time();
    for (kind, flags) in places() {
        let tmp = common::scratch_dir_for_anyone("fa");
        let planted = format!("planted-{}-{}", std::process::id(), kind.len());
        let got = tmp.join("got");
        // CMD says whether the value reached it without naming it on a command line (`[` is
        // the shell's own).
        let script = format!(
            "[ \"$FLUSHLAB_PLANTED\" = {planted_quoted} ] && echo got > {got}; printf ready; \
             stty raw -echo; exec cat",
            planted_quoted = shell_quoted_in_pieces(&planted),
            got = got.display()
        );
        let seen = Arc::new(std::sync::Mutex::new(Vec::new()));
        let done = Arc::new(AtomicBool::new(false));
        let scan = {
            let (seen, done, needle) = (Arc::clone(&seen), Arc::clone(&done), planted.clone());
            std::thread::spawn(move || {
                let mut scans = 0u64;
                while !done.load(Ordering::Relaxed) {
                    seen.lock()
                        .unwrap()
                        .extend(command_lines_holding(needle.as_bytes()));
                    scans += 1;
                    std::thread::sleep(Duration::from_millis(20));
                }
                scans
            })
        };
        let out = wrap_in(&tmp, &flags, "a*8@250ms", &script, &planted)
            .output()
            .unwrap();
        done.store(true, Ordering::Relaxed);
        let scans = scan.join().unwrap();
        let said = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "wrap {flags:?}: {said}");
        assert!(scans >= 20, "wrap {flags:?}: scanned /proc {scans} times");
        let seen = seen.lock().unwrap();
        assert!(
            seen.is_empty(),
            "wrap {flags:?}: the planted value on a command line: {:?}",
            *seen
        );
        // Over a wire CMD gets the far side's environment (sshd passes none of the near end's).
        if flags[0] == "--terminal" && !flags.contains(&"--via") {
            assert!(
                got.exists(),
                "wrap {flags:?}: CMD did not get wrap's environment: {said}"
            );
        }
    }
}

/// The planted value as a shell word made of two quoted pieces: the script's own command line
/// (`sh -c SCRIPT`) must not hold the value whole.
fn shell_quoted_in_pieces(value: &str) -> String {
    let (a, b) = value.split_at(value.len() / 2);
    format!("'{a}''{b}'")
}

/// What the run made in TMPDIR (`flushlab-*`).
fn made_by_flushlab(tmp: &Path) -> Vec<String> {
    std::fs::read_dir(tmp)
        .map(|entries| {
            entries
                .flatten()
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .filter(|name| name.starts_with("flushlab-"))
                .collect()
        })
        .unwrap_or_default()
}

/// The processes whose command line names `place` (an X server's framebuffer there, a
/// terminal's env file, CMD's script), but the one asking.
fn running_in(place: &Path) -> Vec<String> {
    let own = std::process::id().to_string();
    Command::new("pgrep")
        .arg("-af")
        .arg(place.to_string_lossy().as_ref())
        .output()
        .map(|o| {
            String::from_utf8_lossy(&o.stdout)
                .lines()
                .filter(|l| l.split_whitespace().next() != Some(own.as_str()))
                .map(str::to_owned)
                .collect()
        })
        .unwrap_or_default()
}

/// wrap SIGKILLed mid-run, in every terminal and through every layer: within 20 s nothing it
/// made is left in TMPDIR, and no process it started runs on (an X server outlived it once:
/// nothing tied it to wrap but a drop that SIGKILL never runs).
#[test]
#[cfg_attr(
    not(feature = "slow-tests"),
    ignore = "slow tier (a run in each terminal and layer): cargo test --features slow-tests"
)]
fn a_killed_wrap_leaves_nothing_in_tmpdir() {
    let _serial = one_at_a_time();
    for (_, flags) in places() {
        let tmp = common::scratch_dir_for_anyone("fk");
        let ready = tmp.join("ready");
        let script = format!(
            "echo > {}; printf ready; stty raw -echo; exec cat",
            ready.display()
        );
        let mut wrap = wrap_in(&tmp, &flags, "a*200@100ms", &script, "-")
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        common::wait_for(Duration::from_secs(60), "CMD to start", || {
            ready.exists().then_some(())
        });
        assert!(
            !made_by_flushlab(&tmp).is_empty(),
            "wrap {flags:?} made nothing in TMPDIR: the test sees no scratch to leave"
        );
        // The keys are going.
        std::thread::sleep(Duration::from_secs(1));
        wrap.kill().unwrap();
        wrap.wait().unwrap();
        let until = Instant::now() + Duration::from_secs(20);
        while !(made_by_flushlab(&tmp).is_empty() && running_in(&tmp).is_empty())
            && Instant::now() < until
        {
            std::thread::sleep(Duration::from_millis(100));
        }
        assert_eq!(
            made_by_flushlab(&tmp),
            Vec::<String>::new(),
            "wrap {flags:?} SIGKILLed left these in TMPDIR after 20 s"
        );
        assert_eq!(
            running_in(&tmp),
            Vec::<String>::new(),
            "wrap {flags:?} SIGKILLed left these running after 20 s"
        );
    }
}
