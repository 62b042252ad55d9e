//! `flushlab doctor`: the observer it names for a program is the one a run of `flushlab wrap`
//! then uses, as root and as a user with no privilege; with nothing on PATH it names each
//! missing package; it says the kernel settings that decide the observers.

use std::path::Path;
use std::process::{Command, Stdio};

use serde_json::Value;

use super::common;

/// flushlab as root, or as nobody (`setpriv`) where `nobody` (a copy anyone can run) is given.
fn flushlab_command(nobody: Option<&Path>) -> Command {
    match nobody {
        Some(flushlab) => {
            let mut c = Command::new("setpriv");
            c.args(["--reuid=65534", "--regid=65534", "--clear-groups", "--"])
                .arg(flushlab);
            c
        }
        None => Command::new(env!("CARGO_BIN_EXE_flushlab")),
    }
}

/// As root, or as nobody where `nobody` is given: flushlab's words for `args`.
fn flushlab_as(nobody: Option<&Path>, args: &[&std::ffi::OsStr]) -> std::process::Output {
    flushlab_command(nobody)
        .args(args)
        .stdin(Stdio::null())
        .output()
        .unwrap()
}

/// The observer a headless `wrap --keys a -- CMD` in `dir` (its HOME too: an editor ended
/// mid-edit saves its buffer there) said it used (`observer: WAY: …`).
fn wrap_used(nobody: Option<&Path>, cmd: &[std::ffi::OsString], dir: &Path) -> String {
    let out = flushlab_command(nobody)
        .args(["wrap", "--size", "80x24", "--keys", "a", "--"])
        .args(cmd)
        .env("HOME", dir)
        .current_dir(dir)
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let said = String::from_utf8_lossy(&out.stderr).into_owned();
    said.lines()
        .find_map(|l| l.trim().strip_prefix("observer: "))
        .and_then(|rest| rest.split(':').next())
        .unwrap_or_else(|| panic!("no observer line: {said}"))
        .to_owned()
}

/// The observer `doctor --json -- CMD` names.
fn doctor_names(nobody: Option<&Path>, cmd: &[std::ffi::OsString]) -> (String, Value) {
    let mut args: Vec<&std::ffi::OsStr> = ["doctor", "--json", "--"]
        .iter()
        .map(|a| a.as_ref())
        .collect();
    args.extend(cmd.iter().map(|a| a.as_os_str()));
    let out = flushlab_as(nobody, &args);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let json: Value = serde_json::from_slice(&out.stdout).unwrap();
    let way = json["observer"]["way"]
        .as_str()
        .unwrap_or("none")
        .to_owned();
    (way, json)
}

/// A dynamic and a static program (echo.c), a launcher (`sh`), a Rust program reading keys with
/// rustix, and where installed a static Go program, htop, w3m, emacs, nano, fzf through `env`
/// and lf through `sh -c`, as root and as nobody: the observer doctor names is the one the run
/// then says it used, every time.
#[test]
#[cfg_attr(
    not(feature = "slow-tests"),
    ignore = "slow tier (15 s here: every observer tried): cargo test --features slow-tests"
)]
fn doctor_names_the_observer_a_run_then_uses() {
    if !common::has_programs(&["setpriv"]) {
        return;
    }
    let _serial = super::keyed::one_at_a_time();
    let dir = common::scratch_dir_for_anyone("doctor");
    let (_copy, flushlab) = common::flushlab_for_anyone();
    let mut commands: Vec<Vec<std::ffi::OsString>> = Vec::new();
    for (name, flags) in [("echo-dynamic", &[][..]), ("echo-static", &["-static"][..])] {
        let built = common::c_program_with("echo", flags);
        let program = dir.join(name);
        std::fs::copy(&*built, &program).unwrap();
        commands.push(vec![program.into()]);
    }
    commands.push(vec!["/bin/sh".into()]);
    // A Rust program reading its keys with rustix, and a static Go program (bubbletea).
    let rustix = dir.join("keyed_ratatui");
    std::fs::copy(super::example::example_path("keyed_ratatui"), &rustix).unwrap();
    commands.push(vec![rustix.into(), "bufwriter".into()]);
    let _go = common::has_programs(&["go"]).then(|| {
        let built = super::tracer::bubbletea_stamps();
        let program = dir.join("bubbletea");
        std::fs::copy(&*built, &program).unwrap();
        commands.push(vec![program.into(), "80x24".into()]);
        built
    });
    // Each with the program that must be installed for it.
    for (program, cmd) in [
        ("htop", &["htop"][..]),
        ("w3m", &["w3m", "-dump", "/dev/null"]),
        ("emacs", &["emacs", "-nw", "-Q"]),
        ("nano", &["nano"]),
        ("fzf", &["env", "fzf"]),
        ("lf", &["sh", "-c", "lf"]),
    ] {
        if common::has_programs(&[program]) {
            commands.push(cmd.iter().map(Into::into).collect());
        }
    }
    let root = rustix::process::geteuid().is_root();
    let identities: Vec<Option<&Path>> = match root {
        true => vec![None, Some(flushlab.as_path())],
        false => vec![None],
    };
    let mut agreed = Vec::new();
    for nobody in identities {
        for cmd in &commands {
            let (named, json) = doctor_names(nobody, cmd);
            let used = wrap_used(nobody, cmd, &dir);
            let who = if nobody.is_some() {
                "nobody"
            } else {
                "this user"
            };
            assert_eq!(
                named, used,
                "{who}, {cmd:?}: doctor named {named}, the run used {used}: {json}"
            );
            agreed.push(format!("{who} {cmd:?}: {used}"));
        }
    }
    eprintln!("doctor and wrap agree: {agreed:?}");
}

/// Keys whose answer has every stage from inside and one frame, and each key's terminal
/// write(2)s, in a report.
fn staged_keys(report: &Value) -> (usize, Vec<u64>) {
    let each = report["keys"]["each"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    let staged = each
        .iter()
        .filter(|k| {
            ["input_delay", "processing", "emit"]
                .iter()
                .all(|s| k["stages_ms"][s].is_number())
                && k["frames"] == 1
        })
        .count();
    let writes = each.iter().filter_map(|k| k["writes"].as_u64()).collect();
    (staged, writes)
}

/// `wrap --size 80x24 --keys KEYS --export-json - -- CMD` in `dir` (its HOME too), as nobody
/// where `nobody` is given, else as root with the kernel observer: the report and what it said.
fn wrap_keys_as(
    nobody: Option<&Path>,
    keys: &str,
    cmd: &[&std::ffi::OsStr],
    dir: &Path,
) -> (Value, String) {
    let mut command = flushlab_command(nobody);
    command.args([
        "wrap",
        "--size",
        "80x24",
        "--keys",
        keys,
        "--export-json",
        "-",
    ]);
    if nobody.is_none() {
        command.args(["--observer", "kernel"]);
    }
    let out = command
        .arg("--")
        .args(cmd)
        .env("HOME", dir)
        .env("FZF_DEFAULT_COMMAND", "seq 1 200")
        .current_dir(dir)
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let said = String::from_utf8_lossy(&out.stderr).into_owned();
    assert_eq!(out.status.code(), Some(0), "{cmd:?}: {said}");
    (serde_json::from_slice(&out.stdout).unwrap(), said)
}

/// As a user with no privilege (no eBPF: the preload, by default), programs that draw through
/// glibc's stdio — w3m, emacs -nw on its own stream of the tty, nano, htop —, Go programs behind
/// launchers (fzf through `env` and through `sh -c 'exec …'`, lf through `sh -c`: the tracer,
/// chosen from the program the launcher starts), a static Go program (bubbletea) and a Rust
/// program reading its keys with rustix have every stage and one frame for at least 18 of 20
/// keys; and each key's terminal write(2)s are the kernel observer's count as root, ± 1.
#[test]
#[cfg_attr(
    not(feature = "slow-tests"),
    ignore = "slow tier (18 runs of 4 s): cargo test --features slow-tests"
)]
fn a_normal_user_stages_stdio_drawers_as_the_kernel_sees_them() {
    let programs = ["w3m", "emacs", "nano", "htop", "fzf", "lf", "go"];
    let root = rustix::process::geteuid().is_root();
    assert!(
        std::env::var_os("CI").is_none() || (root && common::has_programs(&programs)),
        "CI must run this as root with {programs:?}"
    );
    if !root || !common::has_programs(&programs) || !common::has_programs(&["setpriv"]) {
        return;
    }
    let _serial = super::keyed::one_at_a_time();
    let dir = common::scratch_dir_for_anyone("stdio-drawers");
    let (_copy, flushlab) = common::flushlab_for_anyone();
    let lines: String = (1..=300).map(|i| format!("line {i}\n")).collect();
    std::fs::write(dir.join("lines.txt"), &lines).unwrap();
    let page: String = (1..=200).map(|i| format!("<p>line {i}</p>")).collect();
    std::fs::write(dir.join("page.html"), page).unwrap();
    let (text, html) = (dir.join("lines.txt"), dir.join("page.html"));
    for i in 1..=60 {
        std::fs::write(dir.join(format!("file{i:02}")), "").unwrap();
    }
    // A Rust program reading its keys with rustix (the preload, and the tracer at its reads),
    // and a static Go program (bubbletea: the tracer).
    let rustix = dir.join("keyed_ratatui");
    std::fs::copy(super::example::example_path("keyed_ratatui"), &rustix).unwrap();
    let built = super::tracer::bubbletea_stamps();
    let go = dir.join("bubbletea");
    std::fs::copy(&*built, &go).unwrap();
    let os = |w: &'static str| -> &std::ffi::OsStr { w.as_ref() };
    let cases: [(&str, Vec<&std::ffi::OsStr>, &str); 9] = [
        ("j*20@150ms q", vec![os("w3m"), html.as_os_str()], "preload"),
        (
            "<C-n>*20@150ms <C-x><C-c>",
            vec![os("emacs"), os("-nw"), os("-Q"), text.as_os_str()],
            "preload",
        ),
        (
            "<Down>*20@150ms <C-x>",
            vec![os("nano"), text.as_os_str()],
            "preload",
        ),
        ("<Down>*20@150ms q", vec![os("htop")], "preload"),
        // Go programs read their keys with raw system calls: the tracer's.
        (
            "<Down>*20@150ms <Enter>",
            vec![os("env"), os("fzf")],
            "ptrace",
        ),
        (
            "<Down>*20@150ms <Enter>",
            vec![os("sh"), os("-c"), os("exec fzf")],
            "ptrace",
        ),
        ("j*20@150ms q", vec![os("sh"), os("-c"), os("lf")], "ptrace"),
        ("j*20@150ms q", vec![go.as_os_str(), os("80x24")], "ptrace"),
        (
            "j*20@150ms q",
            vec![rustix.as_os_str(), os("bufwriter")],
            "both",
        ),
    ];
    for (keys, cmd, expected) in cases {
        let run =
            |nobody: bool| wrap_keys_as(nobody.then_some(flushlab.as_path()), keys, &cmd, &dir);
        let (report, said) = run(true);
        assert_eq!(report["inside"]["observer"], expected, "{cmd:?}: {said}");
        let (staged, writes) = staged_keys(&report);
        assert!(
            staged >= 18,
            "{cmd:?} as nobody: {staged} of 20 staged: {said}"
        );
        let (kernel, said_as_root) = run(false);
        let (_, kernel_writes) = staged_keys(&kernel);
        let median = |w: &[u64]| {
            let mut w = w.to_vec();
            w.sort_unstable();
            w.get(w.len() / 2).copied().unwrap_or_default()
        };
        assert!(
            median(&writes).abs_diff(median(&kernel_writes)) <= 1,
            "{cmd:?}: a key's write(2)s, preload {writes:?}, kernel {kernel_writes:?}: {said}\n{said_as_root}"
        );
    }
}

/// With nothing on PATH, doctor still looks (exit 0) and names the package of every program it
/// did not find, in one `apt-get install` line; the kernel's settings are said by name.
#[test]
fn with_nothing_on_path_doctor_names_each_missing_package() {
    let out = Command::new(env!("CARGO_BIN_EXE_flushlab"))
        .arg("doctor")
        .env("PATH", "/nonexistent")
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let said = String::from_utf8_lossy(&out.stdout).into_owned();
    assert_eq!(out.status.code(), Some(0), "{said}");
    let install = said
        .lines()
        .find_map(|l| {
            l.trim()
                .strip_prefix("missing Debian packages: apt-get install ")
        })
        .unwrap_or_else(|| panic!("no install line: {said}"));
    let packages: Vec<&str> = install.split(' ').collect();
    for package in [
        "xvfb",
        "xterm",
        "alacritty",
        "kitty",
        "sway",
        "foot",
        "chromium-headless-shell",
        "nodejs",
        "npm",
        "openssh-client",
        "tmux",
        "mosh",
        "util-linux",
    ] {
        assert!(packages.contains(&package), "{package} not named: {said}");
    }
    for setting in [
        "kernel.unprivileged_bpf_disabled",
        "kernel.yama.ptrace_scope",
    ] {
        assert!(said.contains(setting), "{setting}: {said}");
    }
    assert!(!said.contains('\x1b'), "{said:?}");
}

/// A program doctor cannot find: one line naming it, exit 1.
#[test]
fn a_program_doctor_cannot_find_is_named() {
    let out = Command::new(env!("CARGO_BIN_EXE_flushlab"))
        .args(["doctor", "--", "no-such-program-\x1b[31m"])
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let said = String::from_utf8_lossy(&out.stderr).into_owned();
    assert_ne!(out.status.code(), Some(0), "{said}");
    assert_eq!(said.trim_end().lines().count(), 1, "{said}");
    assert!(said.contains("no-such-program-"), "{said}");
    assert!(!said.contains('\x1b'), "{said:?}");
}
