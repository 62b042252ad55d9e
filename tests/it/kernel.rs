//! wrap's kernel observer (`--observer kernel`, and `auto` where eBPF is allowed): programs the
//! preload sees less of or not at all (glibc's stdio, a static program, a launcher's exec) and
//! the trees they start,
//! counted as the programs count themselves; the programs it loads gone with its wrap, one
//! wrap's tree apart from another's; and the refusals, each said, with the fallback taken.
//!
//! eBPF needs root (or CAP_BPF and CAP_PERFMON): where it is refused these tests say so and
//! pass, except in CI (`CI` set), which runs as root and must run them.

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

use super::common;
use super::keyed::{one_at_a_time, wrap_keys_with};

/// The committed eBPF objects' stamp names the sources as they are: an edit of kernel.bpf.c or
/// record.h without `scripts/build-bpf.sh` (which rebuilds the objects and the stamp) fails
/// here, with no clang needed (CI also rebuilds them and compares, byte for byte).
#[test]
fn the_committed_kernel_objects_are_stamped_with_the_sources_as_they_are() {
    let crate_dir = concat!(env!("CARGO_MANIFEST_DIR"), "/crates/flushlab-observer");
    let stamp = std::fs::read_to_string(format!("{crate_dir}/bpf/STAMP")).unwrap();
    let sums = Command::new("sha256sum")
        .args(["kernel.bpf.c", "record.h"])
        .current_dir(crate_dir)
        .output()
        .unwrap();
    let sums = String::from_utf8(sums.stdout).unwrap();
    assert!(
        stamp.starts_with(&sums),
        "the kernel observer's committed objects are older than kernel.bpf.c or record.h: run scripts/build-bpf.sh"
    );
    for object in ["flushlab-kernel.bpf.o", "flushlab-kernel-floor.bpf.o"] {
        let bytes = std::fs::read(format!("{crate_dir}/bpf/{object}")).unwrap();
        // An ELF for BPF (e_machine 247), with the BTF that CO-RE relocates by.
        assert_eq!(&bytes[..4], b"\x7fELF", "{object}");
        assert_eq!(u16::from_le_bytes([bytes[18], bytes[19]]), 247, "{object}");
        assert!(bytes.windows(8).any(|w| w == b".BTF.ext"), "{object}");
        // No path of the machine that built it.
        assert!(
            !bytes.windows(6).any(|w| w == b"/work/" || w == b"/home/"),
            "{object}"
        );
    }
}

/// With no clang and no libbpf headers (hidden in a private mount namespace: each clang a stub
/// that fails, an empty /usr/include/bpf), the observer crate still builds, and with the kernel
/// observer in it (its build script says `cfg(flushlab_kernel)`): the committed objects are
/// what every build embeds, so the kernel tests here run a build no clang took part in. A
/// `cargo check` in a scratch target directory (it runs the build script; 10 s here).
#[test]
#[cfg_attr(
    not(feature = "slow-tests"),
    ignore = "slow tier (a cargo check of the observer crate from nothing): cargo test --features slow-tests"
)]
fn with_no_clang_and_no_libbpf_headers_the_kernel_observer_is_built_in() {
    let root = rustix::process::geteuid().is_root();
    assert!(
        std::env::var_os("CI").is_none() || root,
        "CI must run this as root (a private mount namespace)"
    );
    if !root || !common::has_programs(&["unshare", "cargo"]) {
        return;
    }
    let dir = common::scratch_dir("no-clang");
    let stub = dir.join("clang");
    std::fs::write(&stub, "#!/bin/sh\necho no clang here >&2\nexit 127\n").unwrap();
    std::fs::set_permissions(&stub, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let script = r#"set -e
        [ -d /usr/include/bpf ] && mount -t tmpfs none /usr/include/bpf
        for c in $(command -v clang clang-14) /usr/lib/llvm-*/bin/clang; do
            [ -e "$c" ] && mount --bind "$1" "$c"
        done
        ! clang --version 2>/dev/null
        [ -z "$(ls -A /usr/include/bpf 2>/dev/null)" ]
        exec cargo check -p flushlab-observer --locked --quiet --target-dir "$2""#;
    let target = dir.join("target");
    let out = Command::new("unshare")
        .args(["-m", "sh", "-c", script, "sh"])
        .arg(&stub)
        .arg(&target)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .env_remove("CLANG")
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let said = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{said}");
    let outputs: String = std::fs::read_dir(target.join("debug/build"))
        .unwrap()
        .filter_map(|e| std::fs::read_to_string(e.ok()?.path().join("output")).ok())
        .collect();
    assert!(
        outputs.contains("cargo:rustc-cfg=flushlab_kernel"),
        "the build script did not build the kernel observer in: {outputs}\n{said}"
    );
}

/// CI's check (`scripts/build-bpf.sh --check`) on a copy of the tree whose kernel.bpf.c gained
/// a line: it fails, in one line naming the command that rebuilds the objects; on the tree as
/// committed it passes.
#[test]
fn the_ci_check_fails_on_an_edited_kernel_program_and_names_the_rebuild() {
    let root = env!("CARGO_MANIFEST_DIR");
    let copy = common::scratch_dir("bpf-check");
    let observer = copy.join("crates/flushlab-observer");
    std::fs::create_dir_all(copy.join("scripts")).unwrap();
    std::fs::create_dir_all(observer.join("bpf")).unwrap();
    std::fs::copy(
        format!("{root}/scripts/build-bpf.sh"),
        copy.join("scripts/build-bpf.sh"),
    )
    .unwrap();
    for file in [
        "kernel.bpf.c",
        "record.h",
        "bpf/STAMP",
        "bpf/flushlab-kernel.bpf.o",
        "bpf/flushlab-kernel-floor.bpf.o",
    ] {
        std::fs::copy(
            format!("{root}/crates/flushlab-observer/{file}"),
            observer.join(file),
        )
        .unwrap();
    }
    let check = || {
        Command::new("bash")
            .arg(copy.join("scripts/build-bpf.sh"))
            .arg("--check")
            .output()
            .unwrap()
    };
    let as_committed = check();
    assert!(
        as_committed.status.success(),
        "{}",
        String::from_utf8_lossy(&as_committed.stderr)
    );
    let mut program = std::fs::read_to_string(observer.join("kernel.bpf.c")).unwrap();
    program.push_str("\nstatic int flushlab_edited(void) { return 1; }\n");
    std::fs::write(observer.join("kernel.bpf.c"), program).unwrap();
    let edited = check();
    let said = String::from_utf8_lossy(&edited.stderr);
    assert_eq!(edited.status.code(), Some(1), "{said}");
    assert_eq!(said.trim_end().lines().count(), 1, "{said}");
    assert!(said.contains("run scripts/build-bpf.sh"), "{said}");
}

/// Whether this machine lets wrap attach the kernel observer; in CI it must.
pub(super) fn kernel_allowed() -> bool {
    let out = Command::new(env!("CARGO_BIN_EXE_flushlab"))
        .args([
            "wrap",
            "--observer",
            "kernel",
            "--size",
            "80x24",
            "--",
            "true",
        ])
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let allowed = out.status.success();
    assert!(
        allowed || std::env::var_os("CI").is_none(),
        "CI must attach the kernel observer (root): {}",
        String::from_utf8_lossy(&out.stderr)
    );
    if !allowed {
        eprintln!(
            "skipped: eBPF refused here: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    allowed
}

fn count(report: &Value, part: &str) -> u64 {
    report["keys"]["frames"][part].as_u64().unwrap()
}

/// Seen by the kernel, frames from inside, one frame count (the headline's frames are the
/// keys' answering, unprompted and before-the-first-key frames, ±1), and at least 90% of the
/// answering keys with every stage: what every program drawn must hold.
fn assert_seen_whole(report: &Value, said: &str) {
    let inside = &report["inside"];
    assert_eq!(inside["observer"], "kernel", "{said}");
    assert_eq!(inside["frames_from"]["from"], "inside", "{said}");
    assert!(
        said.contains("observer: kernel: eBPF, 5 programs attached"),
        "{said}"
    );
    let frames = report["frame_detection"]["frames"].as_u64().unwrap();
    let parts =
        count(report, "answering") + count(report, "unprompted") + count(report, "before_keys");
    assert!(
        frames.abs_diff(parts) <= 1,
        "{frames} frames, {parts} in the keys' line: {said}"
    );
    let answering = count(report, "answering");
    let staged = report["keys"]["each"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|k| {
            ["input_delay", "processing", "emit", "drain"]
                .iter()
                .all(|s| k["stages_ms"][s].is_number())
        })
        .count() as u64;
    assert!(
        answering > 0 && staged * 10 >= answering * 9,
        "{staged} of {answering} staged: {said}"
    );
}

/// The program's own count of its frames (stages.c: a line a read that took keys).
fn own_frames(own: &str) -> u64 {
    own.lines().filter(|l| !l.starts_with("clock")).count() as u64
}

/// The terminal's writes seen are the program's own: `rows` a frame (stages.c `rows`), as many
/// frames as it logged.
fn assert_own_rows(report: &Value, own: &str, rows: u64, said: &str) {
    assert_eq!(
        report["inside"]["terminal_writes"],
        own_frames(own) * rows,
        "{said}"
    );
}

/// A static program started through launchers (`env`, `sh -c 'exec …'`): no preload loads in
/// any of them and auto's choice by the first binary would have missed it; the kernel follows
/// the exec chain, and the terminal's writes are the program's own (a row a write, 24 rows a
/// frame, as it counts its frames).
#[test]
#[cfg_attr(
    not(feature = "slow-tests"),
    ignore = "slow tier (6 s here: a pid namespace, eBPF): cargo test --features slow-tests"
)]
fn a_static_program_behind_launchers_is_seen_with_every_stage() {
    if !kernel_allowed() {
        return;
    }
    let _serial = one_at_a_time();
    let program = common::c_program_with("stages", &["-static"]);
    let program = program.to_str().unwrap();
    let through_sh = format!("exec {program} poll 300 rows");
    for (how, cmd) in [
        ("env", vec!["env", "A=1", program, "poll", "300", "rows"]),
        ("sh -c exec", vec!["sh", "-c", &through_sh]),
    ] {
        let (code, report, said, own) = wrap_keys_with(&[], "80x24", "j*10@150ms q", &cmd);
        assert_eq!(code, Some(0), "{how}: {said}");
        assert_seen_whole(&report, &said);
        let frames = own_frames(&own);
        assert!(frames >= 10, "{how}: {said}");
        assert_eq!(
            report["inside"]["terminal_writes"],
            frames * 24,
            "{how}: {said}"
        );
        let programs = report["inside"]["programs"].to_string();
        assert!(programs.contains("stages"), "{how}: {programs}");
    }
}

/// A shell answering each line by running `/bin/echo` (glibc's stdio, a process a line): every
/// echo's writes seen, each a frame that answers its key.
#[test]
fn a_shell_answering_with_bin_echo_has_a_frame_and_stages_for_each_key() {
    if !kernel_allowed() {
        return;
    }
    let _serial = one_at_a_time();
    let (code, report, said, _) = wrap_keys_with(
        &["--observer", "kernel"],
        "80x24",
        "x<Enter>*15@150ms",
        &[
            "sh",
            "-c",
            "stty -echo; while IFS= read -r l; do /bin/echo \"got $l\"; done",
        ],
    );
    assert!(code.is_some(), "{said}");
    assert_seen_whole(&report, &said);
    assert!(count(&report, "answering") >= 14, "{said}");
}

/// C stdio drawing a whole frame a cell at a time (glibc's own buffered writes, which no
/// preload sees): every byte the terminal got was seen written.
#[test]
fn glibc_stdio_writes_are_the_terminals_bytes() {
    if !kernel_allowed() {
        return;
    }
    let _serial = one_at_a_time();
    let program = common::c_program_with("stdio", &[]);
    let report = common::scratch("stdio.json");
    let out = Command::new(env!("CARGO_BIN_EXE_flushlab"))
        .args([
            "wrap",
            "--observer",
            "kernel",
            "--size",
            "80x24",
            "--export-json",
        ])
        .arg(&*report)
        .arg("--")
        .arg(&*program)
        .arg("full")
        .env("FRAMES", "20")
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let said = String::from_utf8_lossy(&out.stderr).into_owned();
    let json = common::read_json(&report);
    assert_eq!(json["inside"]["observer"], "kernel", "{said}");
    assert_eq!(json["inside"]["writes_from"]["from"], "inside", "{said}");
    assert_eq!(json["terminal_bytes_written"], json["bytes"], "{said}");
}

/// What programs do to an observer (tests/corpus/tracee.c): 200 threads that write and exit,
/// a vfork and exec of a stdio program, a stop of its own that a child continues, a seccomp
/// filter of its own. Each: its exit status, the terminal's writes counted exactly.
#[test]
fn what_programs_do_changes_no_count_under_the_kernel() {
    if !kernel_allowed() {
        return;
    }
    let _serial = one_at_a_time();
    super::tracer::what_programs_do_changes_no_count("kernel", &[]);
}

/// A program that dup2s /dev/null over its terminal fd mid-frame, writes there, and puts the
/// terminal back (tests/corpus/hostile.c `dup2`): the kernel observer's terminal bytes are the
/// bytes the pty delivered to wrap, none of the writes to /dev/null among them (each thread's
/// copy of which fds are the terminal is dropped at a dup2).
#[test]
fn a_file_dup2d_over_the_terminal_is_not_the_terminal() {
    if !kernel_allowed() {
        return;
    }
    let program = common::c_program("hostile");
    let report = common::scratch("dup2.json");
    let out = Command::new(env!("CARGO_BIN_EXE_flushlab"))
        .args([
            "wrap",
            "--observer",
            "kernel",
            "--size",
            "80x24",
            "--export-json",
        ])
        .arg(&*report)
        .arg("--")
        .arg(&*program)
        .args(["dup2", "20"])
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let said = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{said}");
    let report = common::read_json(&report);
    assert!(report["bytes"].as_u64().unwrap() > 1000, "{said}");
    assert_eq!(
        report["inside"]["terminal_bytes"], report["bytes"],
        "{said}"
    );
}

/// CMD in a pid namespace of its own (`unshare -pf`): its processes are followed by their
/// numbers in wrap's namespace, and its writes counted as it counts its frames.
#[test]
#[cfg_attr(
    not(feature = "slow-tests"),
    ignore = "slow tier (13 s here: a pid namespace, eBPF): cargo test --features slow-tests"
)]
fn a_cmd_in_its_own_pid_namespace_is_seen() {
    if !kernel_allowed() || !common::has_programs(&["unshare"]) {
        return;
    }
    let _serial = one_at_a_time();
    let program = common::c_program_with("stages", &["-static"]);
    let (code, report, said, own) = wrap_keys_with(
        &["--observer", "kernel"],
        "80x24",
        "j*6@150ms q",
        &[
            "unshare",
            "-pf",
            program.to_str().unwrap(),
            "poll",
            "300",
            "rows",
        ],
    );
    assert_eq!(code, Some(0), "{said}");
    assert_seen_whole(&report, &said);
    assert_own_rows(&report, &own, 24, &said);
}

/// Two wraps at once: each counts its own program's writes (24 and 30 rows a frame), none of
/// the other's.
#[test]
fn two_wraps_at_once_each_see_only_their_own_tree() {
    if !kernel_allowed() {
        return;
    }
    let _serial = one_at_a_time();
    let program = common::c_program_with("stages", &["-static"]);
    let program = program.to_str().unwrap().to_owned();
    let runs: Vec<_> = ["80x24", "80x30"]
        .into_iter()
        .map(|size| {
            let program = program.clone();
            std::thread::spawn(move || {
                let (code, report, said, own) = wrap_keys_with(
                    &["--observer", "kernel"],
                    size,
                    "j*8@100ms q",
                    &[&program, "poll", "300", "rows"],
                );
                (size, code, report, said, own)
            })
        })
        .collect();
    for run in runs {
        let (size, code, report, said, own) = run.join().unwrap();
        let rows: u64 = size.split_once('x').unwrap().1.parse().unwrap();
        assert_eq!(code, Some(0), "{size}: {said}");
        assert_own_rows(&report, &own, rows, &said);
    }
}

/// The program ids a process holds fds of (its /proc fdinfo's `prog_id`).
fn programs_held_by(pid: u32) -> Vec<u32> {
    let Ok(fds) = std::fs::read_dir(format!("/proc/{pid}/fdinfo")) else {
        return Vec::new();
    };
    let mut ids: Vec<u32> = fds
        .flatten()
        .filter_map(|fd| std::fs::read_to_string(fd.path()).ok())
        .flat_map(|info| {
            info.lines()
                .filter_map(|l| l.strip_prefix("prog_id:"))
                .filter_map(|id| id.trim().parse().ok())
                .collect::<Vec<u32>>()
        })
        .collect();
    ids.sort_unstable();
    ids.dedup();
    ids
}

/// wrap killed with SIGKILL while it looks: within a second none of its programs is loaded
/// (nothing pinned: the kernel unloads them with wrap's last fd).
#[test]
fn no_program_outlives_a_killed_wrap() {
    if !kernel_allowed() {
        return;
    }
    let mut wrap = Command::new(env!("CARGO_BIN_EXE_flushlab"))
        .args([
            "wrap",
            "--observer",
            "kernel",
            "--size",
            "80x24",
            "--",
            "sleep",
            "30",
        ])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(10);
    let ours = loop {
        let held = programs_held_by(wrap.id());
        if held.len() >= 5 || Instant::now() > deadline {
            break held;
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let loaded = flushlab_observer::kernel::loaded();
    assert!(
        ours.iter().all(|id| loaded
            .iter()
            .any(|(l, name)| l == id && name.starts_with("flushlab_"))),
        "wrap holds {ours:?}; flushlab's loaded: {loaded:?}"
    );
    assert_eq!(ours.len(), 5, "{loaded:?}");
    wrap.kill().unwrap();
    wrap.wait().unwrap();
    let deadline = Instant::now() + Duration::from_secs(1);
    loop {
        let left: Vec<u32> = flushlab_observer::kernel::loaded()
            .into_iter()
            .map(|(id, _)| id)
            .filter(|id| ours.contains(id))
            .collect();
        if left.is_empty() {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "still loaded a second after SIGKILL: {left:?}"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    let _ = Command::new("pkill").args(["-f", "^sleep 30$"]).status();
}

/// No BTF where the loader looks (`FLUSHLAB_KERNEL_BTF`): `auto` says why and takes the
/// preload; `--observer kernel` is an error in one line, non-zero.
#[test]
fn without_btf_auto_falls_back_and_says_why() {
    if !kernel_allowed() {
        return;
    }
    let run = |observer: &str| {
        Command::new(env!("CARGO_BIN_EXE_flushlab"))
            .args([
                "wrap",
                "--observer",
                observer,
                "--size",
                "80x24",
                "--",
                "sh",
                "-c",
                "echo hello",
            ])
            .env("FLUSHLAB_KERNEL_BTF", "/nonexistent/vmlinux")
            .stdin(Stdio::null())
            .output()
            .unwrap()
    };
    let auto = run("auto");
    let said = String::from_utf8_lossy(&auto.stderr);
    assert!(auto.status.success(), "{said}");
    assert!(
        said.contains("observer: preload: eBPF refused (no BTF at /nonexistent/vmlinux"),
        "{said}"
    );
    let kernel = run("kernel");
    let said = String::from_utf8_lossy(&kernel.stderr);
    assert!(!kernel.status.success(), "{said}");
    assert_eq!(said.trim().lines().count(), 1, "{said}");
    assert!(
        said.contains("wrap --observer kernel: no BTF at /nonexistent/vmlinux"),
        "{said}"
    );
}

/// eBPF refused for real (an unprivileged user: nobody): `auto` takes the preload and says
/// why; nothing of the kernel's is loaded for it.
#[test]
fn refused_for_an_unprivileged_user_auto_falls_back_and_says_why() {
    if !kernel_allowed() || !common::has_programs(&["setpriv"]) {
        return;
    }
    let (_dir, flushlab) = common::flushlab_for_anyone();
    let out = Command::new("setpriv")
        .args([
            "--reuid=nobody",
            "--regid=nogroup",
            "--clear-groups",
            "--inh-caps=-all",
            "--",
        ])
        .arg(&flushlab)
        .args(["wrap", "--size", "80x24", "--", "sh", "-c", "echo hello"])
        .current_dir("/")
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let said = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{said}");
    assert!(said.contains("observer: preload: eBPF refused ("), "{said}");
    assert!(
        said.contains("eBPF needs root, or CAP_BPF and CAP_PERFMON"),
        "{said}"
    );
}

/// Under sudo (here: root with `SUDO_UID`/`SUDO_GID` naming nobody), CMD runs as the person who
/// ran it: their uid, no capability, their home; and wrap itself is them once its observer is
/// attached (CMD reads its parent's uid a moment after it starts).
#[test]
fn under_sudo_cmd_runs_as_the_person_who_ran_it() {
    if !kernel_allowed() || !common::has_programs(&["setpriv"]) {
        return;
    }
    // wrap writes its report as nobody, once it has become them: somewhere nobody can reach.
    let dir = common::scratch_dir_for_anyone("sudo");
    let report = dir.join("r.json");
    let out = Command::new(env!("CARGO_BIN_EXE_flushlab"))
        .args(["wrap", "--size", "80x24", "--export-json"])
        .arg(&report)
        .args(["--", "sh", "-c"])
        .arg(
            "sleep 1; echo \"$(id -u) $(id -g) $(grep CapEff /proc/self/status | cut -f2) \
             $HOME $(awk '/^Uid/ {print $2}' /proc/$PPID/status)\"",
        )
        .env("SUDO_UID", "65534")
        .env("SUDO_GID", "65534")
        .current_dir("/")
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let said = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{said}");
    assert!(said.contains("observer: kernel: eBPF"), "{said}");
    let json = common::read_json(&report);
    assert_eq!(
        json["last_line"], "65534 65534 0000000000000000 /nonexistent 65534",
        "{said}"
    );
    // The report is nobody's: written after wrap became them.
    use std::os::unix::fs::MetadataExt;
    assert_eq!(std::fs::metadata(&report).unwrap().uid(), 65534);
}

/// A thousand short children in about a second (a shell running `/bin/true` in a loop): the
/// tree grows and empties as fast as they come, nothing is lost of the one line drawn after
/// them, and the run ends with the shell's status.
#[test]
#[cfg_attr(
    not(feature = "slow-tests"),
    ignore = "slow tier (6 s here: a pid namespace, eBPF): cargo test --features slow-tests"
)]
fn a_thousand_short_children_change_no_count() {
    if !kernel_allowed() {
        return;
    }
    let _serial = one_at_a_time();
    let (code, report, said, _) = wrap_keys_with(
        &["--observer", "kernel"],
        "80x24",
        "x<Enter>",
        &[
            "sh",
            "-c",
            "stty -echo; i=0; while [ $i -lt 1000 ]; do /bin/true; i=$((i+1)); done; \
             read l; echo done; exit 3",
        ],
    );
    assert_eq!(code, Some(3), "{said}");
    assert_eq!(report["inside"]["terminal_writes"], 1, "{said}");
    assert_eq!(report["last_line"], "done", "{said}");
}

/// wrap itself in a pid namespace of its own (`unshare -pf --mount-proc`): the records carry
/// the numbers wrap's /proc knows, and the program's writes are counted as it counts its frames.
#[test]
fn wrap_in_its_own_pid_namespace_sees_its_tree() {
    if !kernel_allowed() || !common::has_programs(&["unshare"]) {
        return;
    }
    let _serial = one_at_a_time();
    let program = common::c_program_with("stages", &["-static"]);
    let report = common::scratch("pidns.json");
    let log = common::scratch("pidns.log");
    let out = Command::new("unshare")
        .args(["-pf", "--mount-proc", "--"])
        .arg(env!("CARGO_BIN_EXE_flushlab"))
        .args([
            "wrap",
            "--observer",
            "kernel",
            "--size",
            "80x24",
            "--keys",
            "j*6@150ms q",
        ])
        .arg("--export-json")
        .arg(&*report)
        .arg("--")
        .arg(&*program)
        .args(["poll", "300", "rows"])
        .env("KEYS_LOG", &*log)
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let said = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(out.status.success(), "{said}");
    let json = common::read_json(&report);
    assert_seen_whole(&json, &said);
    let own = std::fs::read_to_string(&*log).unwrap();
    assert_own_rows(&json, &own, 24, &said);
}

/// A ring buffer overflowed on purpose: a small one (`FLUSHLAB_KERNEL_RING=4096`, 64 records)
/// and wrap stopped (SIGSTOP: its reader with it) while CMD makes hundreds of records. The loss
/// is counted in the JSON and said in the summary; the run ends as it would.
#[test]
fn a_ring_buffer_that_overflows_says_what_it_lost() {
    if !kernel_allowed() {
        return;
    }
    let report = common::scratch("ring.json");
    let wrap = Command::new(env!("CARGO_BIN_EXE_flushlab"))
        .args([
            "wrap",
            "--observer",
            "kernel",
            "--size",
            "80x24",
            "--export-json",
        ])
        .arg(&*report)
        .args([
            "--",
            "sh",
            "-c",
            "sleep 0.3; i=0; while [ $i -lt 200 ]; do printf x; sleep 0.001; i=$((i+1)); done",
        ])
        .env("FLUSHLAB_KERNEL_RING", "4096")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let pid = wrap.id().to_string();
    // Once CMD runs (its shell a child of wrap's): the programs are attached by then.
    let deadline = Instant::now() + Duration::from_secs(20);
    while !children_named(wrap.id(), "sh") {
        assert!(Instant::now() < deadline, "CMD never started");
        std::thread::sleep(Duration::from_millis(10));
    }
    let signal = |name: &str| {
        assert!(
            Command::new("kill")
                .args([name, &pid])
                .status()
                .unwrap()
                .success()
        );
    };
    signal("-STOP");
    std::thread::sleep(Duration::from_millis(2500));
    signal("-CONT");
    let out = wrap.wait_with_output().unwrap();
    let said = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{said}");
    let json = common::read_json(&report);
    let lost = json["inside"]["kernel"]["lost_records"].as_u64().unwrap();
    assert!(lost > 0, "{said}");
    assert!(
        said.contains(&format!("the ring buffer lost {lost} records")),
        "{said}"
    );
}

/// Whether a child of `parent` runs `comm`.
fn children_named(parent: u32, comm: &str) -> bool {
    std::fs::read_to_string(format!("/proc/{parent}/task/{parent}/children"))
        .unwrap_or_default()
        .split_whitespace()
        .any(|child| {
            std::fs::read_to_string(format!("/proc/{child}/comm")).is_ok_and(|c| c.trim() == comm)
        })
}

/// `wrap --observer kernel -- true` with `name=value`, refused in one line (exit 2): what it said.
fn refused_with(name: &str, value: &str) -> String {
    let out = Command::new(env!("CARGO_BIN_EXE_flushlab"))
        .args(["wrap", "--observer", "kernel", "--", "true"])
        .env(name, value)
        .stdin(Stdio::null())
        .output()
        .unwrap();
    common::assert_refused(&out, &format!("{name}={value}"))
}

/// A size of ring buffer that is not a power of two is refused in one line naming it, before
/// anything starts (bad input: exit 2).
#[test]
fn a_ring_buffer_size_not_a_power_of_two_is_refused() {
    if !kernel_allowed() {
        return;
    }
    let said = refused_with("FLUSHLAB_KERNEL_RING", "5000");
    assert!(
        said.contains("FLUSHLAB_KERNEL_RING '5000': a power of two"),
        "{said}"
    );
}

/// `--observer kernel --profile`: the markers need the preload inside CMD; refused in one line
/// naming the observers that can, before anything starts (no profile without its markers).
#[test]
fn the_kernel_observer_with_a_profile_is_refused_naming_the_way() {
    if !kernel_allowed() {
        return;
    }
    let profile = common::scratch("refused.json.gz");
    let out = Command::new(env!("CARGO_BIN_EXE_flushlab"))
        .args(["wrap", "--observer", "kernel", "--keys", "a", "--profile"])
        .arg(&profile)
        .args(["--", "true"])
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let said = common::assert_refused(&out, "--observer kernel --profile");
    assert!(said.contains("--observer auto or preload"), "{said}");
    assert!(!profile.exists());
}

/// A pid of the tree taken, once its process ended, by a process outside the tree (clone3 with
/// `set_tid`) that writes to the same terminal: the kernel observer forgot it when it ended, so
/// its writes are no writes of CMD's (they reach the terminal, seen from outside).
#[test]
fn a_pid_reused_outside_the_tree_is_not_the_trees() {
    if !kernel_allowed() {
        return;
    }
    let reuse = common::c_program_with("reuse_pid", &[]);
    let dir = common::scratch_dir("reuse");
    let (pid_file, tty_file) = (dir.join("pid"), dir.join("tty"));
    let script = format!(
        "tty > {tty}; sh -c 'echo $$ > {pid}.new; mv {pid}.new {pid}'; sleep 3; printf done",
        tty = tty_file.display(),
        pid = pid_file.display()
    );
    let report = dir.join("r.json");
    let wrap = Command::new(env!("CARGO_BIN_EXE_flushlab"))
        .args([
            "wrap",
            "--observer",
            "kernel",
            "--size",
            "80x24",
            "--export-json",
        ])
        .arg(&report)
        .args(["--", "sh", "-c", &script])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(20);
    while !pid_file.exists() {
        assert!(Instant::now() < deadline, "CMD's child never said its pid");
        std::thread::sleep(Duration::from_millis(10));
    }
    // Its process has ended (the shell that said it is gone once the file is moved in).
    std::thread::sleep(Duration::from_millis(100));
    let pid = std::fs::read_to_string(&pid_file).unwrap();
    let tty = std::fs::read_to_string(&tty_file).unwrap();
    // The pid is free once the shell that had it is reaped: on a busy machine that may come
    // a little later.
    let deadline = Instant::now() + Duration::from_secs(5);
    let took = loop {
        let took = Command::new(&*reuse)
            .args([pid.trim(), tty.trim()])
            .output()
            .unwrap();
        if took.status.success() || Instant::now() > deadline {
            break took;
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    assert!(
        took.status.success(),
        "pid {} not taken: {}",
        pid.trim(),
        String::from_utf8_lossy(&took.stderr)
    );
    let out = wrap.wait_with_output().unwrap();
    let said = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{said}");
    let json = common::read_json(&report);
    // CMD's one terminal write (`printf done`); the terminal got the intruder's 50 bytes too.
    assert_eq!(json["inside"]["terminal_writes"], 1, "{said}");
    assert!(json["bytes"].as_u64().unwrap() >= 54, "{said}");
}

/// The run says how its programs hook the system calls: trampolines where the kernel takes
/// them, else the raw tracepoints with the kernel's reason; `FLUSHLAB_KERNEL_HOOKS=tracepoints`
/// asks for the tracepoints, and a value that is neither choice is refused in one line.
#[test]
fn the_hooks_are_said_and_can_be_chosen() {
    if !kernel_allowed() {
        return;
    }
    let why = |hooks: Option<&str>| {
        let dir = common::scratch_dir("hooks");
        let json = dir.join("r.json");
        let mut wrap = Command::new(env!("CARGO_BIN_EXE_flushlab"));
        wrap.args(["wrap", "--observer", "kernel", "--export-json"])
            .arg(&json)
            .args(["--", "printf", "x"])
            .stdin(Stdio::null());
        if let Some(hooks) = hooks {
            wrap.env("FLUSHLAB_KERNEL_HOOKS", hooks);
        }
        let out = wrap.output().unwrap();
        assert!(out.status.success(), "{out:?}");
        let report: Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
        report["inside"]["observer_why"]
            .as_str()
            .unwrap()
            .to_owned()
    };
    let chosen = why(None);
    assert!(
        chosen.contains(
            "5 programs attached: the raw tracepoints of every system call (the kernel refused f"
        ) || chosen.contains("45 programs attached: fentry and fexit on 23 system calls"),
        "{chosen}"
    );
    let asked = why(Some("tracepoints"));
    assert!(
        asked.contains(
            "5 programs attached: the raw tracepoints of every system call \
             (FLUSHLAB_KERNEL_HOOKS=tracepoints)"
        ),
        "{asked}"
    );
    let said = refused_with("FLUSHLAB_KERNEL_HOOKS", "fentry");
    assert!(
        said.contains("FLUSHLAB_KERNEL_HOOKS 'fentry': auto or tracepoints"),
        "{said}"
    );
}

/// A shell function for the scripts: `settled NAME` prints `/proc/PID/io` of the newest process
/// NAME once its write count has stopped moving (it has forwarded all it had, however busy the
/// machine: a single read after a fixed sleep raced it), as it waits on its empty pipe.
const SETTLED: &str = "settled() { p=$(pgrep -nx $1); a=; b=x; \
    while [ \"$a\" != \"$b\" ]; do a=$b; sleep 0.3; b=$(grep syscw /proc/$p/io); done; \
    cat /proc/$p/io; }; ";

/// Runs a shell script under the kernel observer at 120x70, and its JSON report.
fn wrapped_script(dir: &std::path::Path, script: &str) -> Value {
    let json = dir.join("r.json");
    let out = Command::new(env!("CARGO_BIN_EXE_flushlab"))
        .args([
            "wrap",
            "--observer",
            "kernel",
            "--size",
            "120x70",
            "--export-json",
        ])
        .arg(&json)
        .args(["--", "bash", "-c", &format!("{SETTLED}{script}")])
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap()
}

/// A field of `/proc/PID/io` as a script saved it: the kernel's own count for one process.
fn io_field(path: &std::path::Path, field: &str) -> u64 {
    let text = std::fs::read_to_string(path).unwrap();
    text.lines()
        .find_map(|l| l.strip_prefix(&format!("{field}: ")))
        .unwrap_or_else(|| panic!("no {field} in {text}"))
        .parse()
        .unwrap()
}

/// A shell that draws each row with a `/usr/bin/printf` child and sleeps between frames (as
/// shell programs that call `tput` or `printf` a line draw): a frame a sleep, not one a child's
/// exit; 1 + 12 write(2)s a frame, and no diagnosis it does not have.
#[test]
fn a_shell_drawing_rows_with_children_draws_a_frame_a_sleep() {
    if !kernel_allowed() {
        return;
    }
    let dir = common::scratch_dir("children");
    let report = wrapped_script(
        &dir,
        "for f in $(seq 1 8); do printf '\\033[H'; \
         for r in $(seq 1 12); do /usr/bin/printf 'row %d frame %d\\n' $r $f; done; \
         sleep 0.1; done",
    );
    assert_eq!(report["frame_method"], "waits", "{report}");
    assert_eq!(report["figures"]["frames"], 8, "{report}");
    assert_eq!(report["terminal_write_calls"], 8 * 13, "{report}");
    let per_frame = report["figures"]["writes_per_frame"].as_f64().unwrap();
    assert!((per_frame - 13.0).abs() <= 13.0 * 0.05, "{report}");
    let codes: Vec<&str> = report["diagnoses"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| d["code"].as_str().unwrap())
        .collect();
    // Unbuffered it is (a short run may not say it); nothing else.
    assert!(codes.iter().all(|c| *c == "unbuffered"), "{report}");
}

/// `loop | tee FILE > /dev/tty`: the terminal's write(2)s are tee's, half of those the kernel
/// counted for it (`/proc/PID/io` syscw: one to the terminal and one to the file a read). strace
/// is no truth here: stopping tee at each call changes how much each of its reads finds.
#[test]
fn a_loop_through_tee_counts_tees_own_writes() {
    if !kernel_allowed() {
        return;
    }
    let dir = common::scratch_dir("tee");
    let io = dir.join("tee.io");
    let report = wrapped_script(
        &dir,
        &format!(
            "loop() {{ for f in $(seq 1 10); do printf '\\033[H'; \
             for r in $(seq 1 23); do printf 'row %d frame %d\\n' $r $f; done; sleep 0.05; done; \
             settled tee > {io}; }}; \
             loop | tee {file} > /dev/tty",
            io = io.display(),
            file = dir.join("tee.out").display()
        ),
    );
    let tee = io_field(&io, "syscw");
    assert_eq!(
        report["terminal_write_calls"],
        tee / 2,
        "tee's syscw {tee}: {report}"
    );
}

/// `seq | cat` for a second: the terminal's write(2)s are cat's, as many as the kernel counted
/// for it (`/proc/PID/io` syscw, read once its count stopped moving).
#[test]
fn seq_into_cat_counts_cats_own_writes() {
    if !kernel_allowed() {
        return;
    }
    let dir = common::scratch_dir("seqcat");
    let io = dir.join("cat.io");
    let report = wrapped_script(
        &dir,
        &format!(
            "{{ timeout 1 seq 1 100000000; settled cat > {io}; }} | cat",
            io = io.display()
        ),
    );
    let cat = io_field(&io, "syscw");
    assert!(cat > 10, "{cat}");
    assert_eq!(report["terminal_write_calls"], cat, "{report}");
    assert_eq!(
        report["terminal_bytes_written"],
        io_field(&io, "wchar"),
        "{report}"
    );
}

/// `--terminal xterm --observer kernel`: the emulator makes the pty and starts CMD, through
/// wrap's shim, which names its pid and that pty; the kernel observer follows it from there.
/// w3m (glibc stdio, which the preload under `auto` stages no key of) gets every stage for
/// ≥ 90% of its answered keys, each frame's writes its own; and the X server's own stamps of
/// their last pixels (`pixels_ms.last_server`).
#[test]
fn w3m_in_xterm_is_staged_by_the_kernel_observer() {
    if !kernel_allowed() || !common::has_programs(&["Xvfb", "xterm", "w3m"]) {
        return;
    }
    let dir = common::scratch_dir("w3m");
    let page = dir.join("page.html");
    let mut html = String::from("<html><body>");
    for i in 1..=300 {
        html += &format!("<p>line {i}</p>");
    }
    std::fs::write(&page, html + "</body></html>").unwrap();
    let json = dir.join("r.json");
    let out = Command::new(env!("CARGO_BIN_EXE_flushlab"))
        .args([
            "wrap",
            "--terminal",
            "xterm",
            "--observer",
            "kernel",
            "--size",
            "100x30",
            "--keys",
            "j*12@100ms",
            "--export-json",
        ])
        .arg(&json)
        .args(["--", "w3m"])
        .arg(&page)
        .env("HOME", &*dir)
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    let report: Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    assert_eq!(report["inside"]["observer"], "kernel", "{report}");
    let why = report["inside"]["observer_why"].as_str().unwrap();
    assert!(why.contains("rooted at CMD's shim"), "{why}");
    let answered: Vec<&Value> = report["keys"]["each"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|k| k["frame_ms"].is_number())
        .collect();
    assert!(answered.len() >= 11, "{report}");
    let staged = answered
        .iter()
        .filter(|k| {
            ["input_delay", "processing", "emit"]
                .iter()
                .all(|s| k["stages_ms"][s].is_number())
        })
        .count();
    assert!(
        staged * 10 >= answered.len() * 9,
        "{staged} of {}: {report}",
        answered.len()
    );
    // The X server's own stamp of each key's last pixel (whole ms, taken as it drew) is never
    // after the report reached wrap.
    let mut stamped = 0;
    for key in &answered {
        let pixels = &key["pixels_ms"];
        if let (Some(arrived), Some(server)) =
            (pixels["last"].as_f64(), pixels["last_server"].as_f64())
        {
            assert!(server <= arrived + 1.0, "{pixels}");
            stamped += 1;
        }
    }
    assert!(stamped * 10 >= answered.len() * 9, "{report}");
    assert!(
        report["keys"]["pixels_ms"]["last_server"]["p50"].is_number(),
        "{report}"
    );
    // Every change's gap, arrival after stamp: never below -1 ms (the stamp's whole
    // milliseconds), and said with its median.
    let gap = &report["keys"]["pixels_ms"]["server_gap"];
    let p50 = gap["p50"].as_f64().unwrap_or(f64::NAN);
    assert!(p50 >= -1.0 && gap["max"].as_f64() >= Some(p50), "{gap}");
}

/// Under sudo wrap writes as the person who ran it: an output in a directory only root may
/// write is refused in one line before CMD starts (exit 2), not after the run is measured.
#[test]
fn under_sudo_an_output_they_cannot_write_is_refused_before_cmd_starts() {
    use std::os::unix::fs::PermissionsExt;
    if !common::has_programs(&["setpriv"]) || !rustix::process::geteuid().is_root() {
        return;
    }
    let dir = common::scratch_dir_for_anyone("sudo-refused");
    let roots = dir.join("roots");
    std::fs::create_dir(&roots).unwrap();
    std::fs::set_permissions(&roots, std::fs::Permissions::from_mode(0o755)).unwrap();
    let started = dir.join("started");
    let out = Command::new(env!("CARGO_BIN_EXE_flushlab"))
        .args(["wrap", "--size", "80x24", "--export-json"])
        .arg(roots.join("r.json"))
        .args(["--", "touch"])
        .arg(&started)
        .env("SUDO_UID", "65534")
        .env("SUDO_GID", "65534")
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let said = common::assert_refused(&out, "an output nobody may write, under sudo");
    assert!(
        said.contains("--export-json") && said.contains("r.json") && said.contains("as nobody"),
        "{said}"
    );
    assert!(!started.exists(), "CMD started: {said}");
}
