//! The pty harness shared by the end-to-end tests: flushlab on a fresh pseudo-terminal whose
//! output a thread collects, parsed by vt100.
#![allow(dead_code)] // each test crate uses its own part of it

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use flushlab_core::sys::pty::{Pty, read_to_end};
use serde_json::Value;

pub const COLS: u16 = 80;
pub const ROWS: u16 = 24;
pub const LEAVE_ALT_SCREEN: &[u8] = b"\x1b[?1049l";

pub struct PtyRun {
    pub code: Option<i32>,
    pub output: Vec<u8>,
    pub report: Option<Value>,
    pub termios_before: rustix::termios::Termios,
    pub termios_after: rustix::termios::Termios,
}

/// The time split's parts as a report's JSON names them, in `TimeSplit::parts` order.
pub const SPLIT_FIELDS: [&str; 6] = [
    "build_ms",
    "encode_ms",
    "kernel_ms",
    "cpu_wait_ms",
    "reader_wait_ms",
    "idle_ms",
];

/// Polls `ready` every 20 ms until it gives a value; panics naming `what` after `limit`.
pub fn wait_for<T>(limit: Duration, what: &str, mut ready: impl FnMut() -> Option<T>) -> T {
    let start = Instant::now();
    loop {
        if let Some(value) = ready() {
            return value;
        }
        assert!(start.elapsed() < limit, "{what} (waited {limit:?})");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// A file in a scratch directory of its own, removed with it when the value is dropped.
pub fn scratch(name: &str) -> ScratchFile {
    let dir = scratch_dir("files");
    let path = dir.join(name);
    ScratchFile { _dir: dir, path }
}

/// A directory of its own for one test, created empty. Scratch space lives under cargo's
/// `CARGO_TARGET_TMPDIR` (inside `target/`), never in /tmp; a name is made unique within the
/// process (the fast tests share one), and the directory is removed when the value is
/// dropped, by a test that fails too (drops run as its panic unwinds).
pub fn scratch_dir(name: &str) -> Scratch {
    static NEXT: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("flushlab-{}", std::process::id()))
        .join(format!("{name}-{n}"));
    std::fs::create_dir_all(&dir).unwrap();
    Scratch(dir)
}

/// A scratch directory another user can reach and write (for a test that runs something as
/// them: under sudo, wrap writes as the person who ran it): in the system's temporary directory,
/// since cargo's target directory may be private (a checkout under a 0700 home, a
/// `CARGO_TARGET_DIR` under a 0700 directory); mode 0777, removed when dropped.
pub fn scratch_dir_for_anyone(name: &str) -> Scratch {
    use std::os::unix::fs::PermissionsExt;
    static NEXT: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let dir = std::env::temp_dir().join(format!("flushlab-test-{}-{name}-{n}", std::process::id()));
    std::fs::create_dir(&dir).unwrap();
    std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o777)).unwrap();
    Scratch(dir)
}

/// See [`scratch_dir`].
#[derive(Debug)]
pub struct Scratch(PathBuf);

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
        // The process's directory, once its last test's is gone; never the temporary directory
        // a test-anyone scratch sits in (an empty TMPDIR made for the tier would go with it).
        let process_dir = format!("flushlab-{}", std::process::id());
        if let Some(parent) = self.0.parent().filter(|p| p.ends_with(&process_dir)) {
            let _ = std::fs::remove_dir(parent);
        }
    }
}

impl std::ops::Deref for Scratch {
    type Target = Path;
    fn deref(&self) -> &Path {
        &self.0
    }
}

impl AsRef<Path> for Scratch {
    fn as_ref(&self) -> &Path {
        &self.0
    }
}

impl AsRef<std::ffi::OsStr> for Scratch {
    fn as_ref(&self) -> &std::ffi::OsStr {
        self.0.as_os_str()
    }
}

/// See [`scratch`].
#[derive(Debug)]
pub struct ScratchFile {
    _dir: Scratch,
    path: PathBuf,
}

impl std::ops::Deref for ScratchFile {
    type Target = Path;
    fn deref(&self) -> &Path {
        &self.path
    }
}

impl AsRef<Path> for ScratchFile {
    fn as_ref(&self) -> &Path {
        &self.path
    }
}

impl AsRef<std::ffi::OsStr> for ScratchFile {
    fn as_ref(&self) -> &std::ffi::OsStr {
        self.path.as_os_str()
    }
}

/// A flushlab running on a fresh pty whose output a thread collects.
pub struct Running {
    pub pty: Pty,
    pub child: std::process::Child,
    pub reader: std::thread::JoinHandle<Vec<u8>>,
    pub termios_before: rustix::termios::Termios,
}

/// Runs flushlab as the session leader of a new pty.
pub fn start(envs: &[(&str, &str)], args: &[&std::ffi::OsStr]) -> Running {
    start_program(Path::new(env!("CARGO_BIN_EXE_flushlab")), envs, args)
}

/// Runs flushlab as the session leader of a new pty of `cols`×`rows`.
pub fn start_at(
    (cols, rows): (u16, u16),
    envs: &[(&str, &str)],
    args: &[&std::ffi::OsStr],
) -> Running {
    spawn_in_pty(
        (cols, rows),
        Path::new(env!("CARGO_BIN_EXE_flushlab")),
        envs,
        args,
    )
}

/// Runs `program` (a shell that runs flushlab) as the session leader of a new pty.
pub fn start_program(program: &Path, envs: &[(&str, &str)], args: &[&std::ffi::OsStr]) -> Running {
    spawn_in_pty((COLS, ROWS), program, envs, args)
}

fn spawn_in_pty(
    (cols, rows): (u16, u16),
    program: &Path,
    envs: &[(&str, &str)],
    args: &[&std::ffi::OsStr],
) -> Running {
    let pty = Pty::open(cols, rows).unwrap();
    let termios_before = pty.slave_termios().unwrap();
    let child = pty
        .spawn(program, |cmd| {
            cmd.envs(envs.iter().copied()).args(args);
        })
        .unwrap();
    let master = pty.master.try_clone().unwrap();
    let reader = std::thread::spawn(move || {
        let mut output = Vec::new();
        read_to_end(&master, |bytes| output.extend_from_slice(bytes)).unwrap();
        output
    });
    Running {
        pty,
        child,
        reader,
        termios_before,
    }
}

impl Running {
    pub fn finish(mut self, limit: Duration) -> PtyRun {
        let start = Instant::now();
        let status = loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                break status;
            }
            if start.elapsed() > limit {
                self.child.kill().unwrap();
                panic!("flushlab did not exit within {limit:?}");
            }
            std::thread::sleep(Duration::from_millis(20));
        };
        let output = self.reader.join().unwrap();
        let termios_after = self.pty.slave_termios().unwrap();
        PtyRun {
            code: status.code(),
            output,
            report: None,
            termios_before: self.termios_before,
            termios_after,
        }
    }

    pub fn signal(&self, signal: rustix::process::Signal) {
        let pid = rustix::process::Pid::from_child(&self.child);
        rustix::process::kill_process(pid, signal).unwrap();
    }
}

pub fn run_in_pty(envs: &[(&str, &str)], extra_args: &[&str], limit: Duration) -> PtyRun {
    let tag: String = envs.iter().map(|(k, v)| format!("{k}{v}")).collect();
    let report = scratch(&format!("{tag}.json"));
    let _ = std::fs::remove_file(&report);
    let mut args: Vec<&std::ffi::OsStr> = vec!["--report".as_ref(), report.as_os_str()];
    args.extend(extra_args.iter().map(std::ffi::OsStr::new));
    let mut run = start(envs, &args).finish(limit);
    run.report = std::fs::read(&report)
        .ok()
        .map(|bytes| serde_json::from_slice(&bytes).unwrap());
    run
}

/// The screen as it was just before flushlab left the alternate screen, and the parser after
/// everything: the screen the user gets back.
pub fn screens(output: &[u8]) -> (String, vt100::Parser) {
    screens_at(output, (COLS, ROWS))
}

/// [`screens`] of a `cols`×`rows` terminal.
pub fn screens_at(output: &[u8], (cols, rows): (u16, u16)) -> (String, vt100::Parser) {
    let leave = output
        .windows(LEAVE_ALT_SCREEN.len())
        .rposition(|w| w == LEAVE_ALT_SCREEN)
        .expect("flushlab never left the alternate screen");
    let size = |n| std::num::NonZeroU16::new(n).unwrap();
    let mut parser = vt100::Parser::new(size(rows), size(cols), 0);
    parser.process(&output[..leave]);
    let last_frame = parser.screen().contents();
    parser.process(&output[leave..]);
    (last_frame, parser)
}

pub fn assert_restored(run: &PtyRun) {
    let (before, after) = (&run.termios_before, &run.termios_after);
    assert_eq!(
        before.local_modes, after.local_modes,
        "raw mode left on (lflag)"
    );
    assert_eq!(
        before.input_modes, after.input_modes,
        "raw mode left on (iflag)"
    );
    assert_eq!(
        before.output_modes, after.output_modes,
        "raw mode left on (oflag)"
    );
    let (_, parser) = screens(&run.output);
    assert!(
        !parser.screen().alternate_screen(),
        "still on the alternate screen"
    );
    assert!(!parser.screen().hide_cursor(), "cursor still hidden");
}

pub fn bench(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_flushlab"))
        .arg("bench")
        .args(args)
        .output()
        .unwrap()
}

/// The shortest bench that still measures: one 0.5 s run per row at 80x24, no warm-up, the
/// results exported to `json`.
pub fn quick_bench(json: &Path, args: &[&str]) -> std::process::Output {
    let quick = [
        "--duration",
        "0.5",
        "--runs",
        "1",
        "--warmup",
        "0",
        "--size",
        "80x24",
    ];
    let json = ["--export-json", json.to_str().unwrap()];
    bench(&[&quick[..], &json, args].concat())
}

/// A refusal as the tool promises one for bad input: exit 2, one line on stderr with no escape
/// or bell byte from the input, nothing on stdout. Returns the line for the caller's own checks.
pub fn assert_refused(out: &std::process::Output, what: &str) -> String {
    let said = String::from_utf8_lossy(&out.stderr).into_owned();
    assert_eq!(out.status.code(), Some(2), "{what}: {said}");
    assert_eq!(said.trim_end().lines().count(), 1, "{what}: {said}");
    assert!(
        !said.contains('\x1b') && !said.contains('\x07'),
        "{what}: {said:?}"
    );
    assert!(out.stdout.is_empty(), "{what}");
    said
}

pub fn read_json(path: &Path) -> Value {
    serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap()
}

/// flushlab in `buffering` on a fresh pty, once it has drawn its first frame; then nobody reads
/// the pty unless the caller does: the reader has stalled.
pub fn start_stalled(buffering: &str) -> (Pty, std::process::Child) {
    use std::io::Read;
    let pty = Pty::open(COLS, ROWS).unwrap();
    let child = pty
        .spawn(Path::new(env!("CARGO_BIN_EXE_flushlab")), |cmd| {
            cmd.env("BUFFERING", buffering);
        })
        .unwrap();
    let mut seen = Vec::new();
    let mut buf = [0u8; 4096];
    while !String::from_utf8_lossy(&seen).contains("flushlab") {
        let n = (&pty.master).read(&mut buf).unwrap();
        seen.extend_from_slice(&buf[..n]);
    }
    (pty, child)
}

/// The lines of the Markdown table in a terminal's output, from the first `|` of each line (the
/// table's first line shares its line with the escape sequences before it).
pub fn table_lines(output: &str) -> Vec<&str> {
    output
        .lines()
        .map(|l| l.trim_end_matches('\r'))
        .filter(|l| l.ends_with('|'))
        .filter_map(|l| l.find("| ").or_else(|| l.find("|-")).map(|i| &l[i..]))
        .collect()
}

/// `text` with each Markdown table's padding taken out (`| st       | 3 |` → `| st | 3 |`): the
/// one table writer pads each column to its widest cell, which a test of a row's cells does not
/// care about.
pub fn unpadded_tables(text: &str) -> String {
    text.lines()
        .map(|line| match line.trim_start().starts_with('|') {
            true => line.split_whitespace().collect::<Vec<_>>().join(" "),
            false => line.to_owned(),
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// This build of flushlab where another user can run it (a test runs it as nobody): a copy in
/// a [`scratch_dir_for_anyone`], since cargo's target directory may be private. Gone with the
/// scratch directory.
pub fn flushlab_for_anyone() -> (Scratch, PathBuf) {
    use std::os::unix::fs::PermissionsExt;
    let dir = scratch_dir_for_anyone("flushlab");
    let copy = dir.join("flushlab");
    std::fs::copy(env!("CARGO_BIN_EXE_flushlab"), &copy).unwrap();
    std::fs::set_permissions(&copy, std::fs::Permissions::from_mode(0o755)).unwrap();
    (dir, copy)
}

/// tests/corpus/NAME.c, built for this test: gone when the value is dropped.
pub fn c_program(name: &str) -> ScratchFile {
    c_program_with(name, &[])
}

/// [`c_program`] with more of gcc's flags (`-static`: a program no preload loads in).
pub fn c_program_with(name: &str, flags: &[&str]) -> ScratchFile {
    let binary = scratch(&format!("{name}{}", flags.concat()));
    let source = Path::new(env!("CARGO_MANIFEST_DIR")).join(format!("tests/corpus/{name}.c"));
    let built = std::process::Command::new("gcc")
        .args(flags)
        .args(["-O2", "-o"])
        .arg(&binary)
        .arg(&source)
        .status()
        .unwrap();
    assert!(built.success(), "gcc {}", source.display());
    binary
}

/// Whether the programs a test in a real terminal needs are on PATH (Xvfb and xterm); under CI
/// they must be (`.ci/run` installs them), elsewhere the test says why it did not run.
pub fn has_programs(programs: &[&str]) -> bool {
    let here = programs.iter().all(|p| {
        std::env::var_os("PATH")
            .is_some_and(|path| std::env::split_paths(&path).any(|d| d.join(p).is_file()))
    });
    assert!(
        here || std::env::var_os("CI").is_none(),
        "CI must have {} (.ci/run installs them)",
        programs.join(" and ")
    );
    if !here {
        eprintln!("skipped: {} is not installed", programs.join(" or "));
    }
    here
}

/// Every keyed run whose frames are the observer's bursts (it saw every terminal write, and
/// the frames are told from CMD's waits) has one frame count: the summary's are the frames
/// that answered a key, those nobody asked for and those before the first key.
pub fn one_frame_count(report: &serde_json::Value, said: &str) {
    let frames = &report["keys"]["frames"];
    let inside = &report["inside"];
    let every_write = inside["writes_from"]["from"] == "inside"
        || inside["observer"] == "ptrace"
        || inside["observer"] == "kernel";
    if frames.is_null() || !every_write || report["frame_method"] != "waits" {
        return;
    }
    let count = |part: &str| frames[part].as_u64().unwrap();
    assert_eq!(
        report["frame_detection"]["frames"].as_u64(),
        Some(count("answering") + count("unprompted") + count("before_keys")),
        "{said}"
    );
}
