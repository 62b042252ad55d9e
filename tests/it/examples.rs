//! Every runnable lesson in examples/ runs and shows what its comments say it shows.
//! The whole `cargo test` builds the examples (`cargo test --test it` alone does not);
//! they are run from target/…/examples.

use std::process::{Command, Output, Stdio};

use crate::example;
use example::example;

fn run(mut command: Command) -> (Output, String, String) {
    let output = command.stdin(Stdio::null()).output().unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&output.stderr).into_owned();
    (output, stdout, stderr)
}

#[test]
fn linewriter_holds_bytes_until_a_newline() {
    let (out, stdout, _) = run(example("linewriter"));
    assert!(out.status.success());
    assert!(
        stdout.contains("after write(\"hello\"):   0 bytes"),
        "{stdout}"
    );
    assert!(
        stdout.contains("after write(\", world\"): 0 bytes"),
        "{stdout}"
    );
    assert!(
        stdout.contains("after write(\"\\n\"):      13 bytes"),
        "{stdout}"
    );
    assert!(
        stdout.contains("after 3000 bytes without a newline: 3000 reached it"),
        "{stdout}"
    );
}

#[test]
fn bufwriter_holds_bytes_until_flush() {
    let (out, stdout, _) = run(example("bufwriter"));
    assert!(out.status.success());
    assert!(stdout.contains("after two lines:  0 bytes"), "{stdout}");
    assert!(stdout.contains("after flush():    18 bytes"), "{stdout}");
    assert!(
        stdout.contains("after 10000 bytes: 10000 reached it"),
        "{stdout}"
    );
    assert!(
        stdout.contains("after into_inner(): 10028 bytes"),
        "{stdout}"
    );
}

#[test]
fn from_raw_fd_closes_stdout() {
    let (out, stdout, stderr) = run(example("raw_fd_broken"));
    assert!(out.status.success());
    assert!(stdout.contains("first write"), "{stdout}");
    assert!(!stdout.contains("second write"), "{stdout}");
    assert!(stderr.contains("second write returned Ok(())"), "{stderr}");
    assert!(
        stderr.contains("dup(1) fails: Bad file descriptor"),
        "{stderr}"
    );
}

#[test]
fn a_dup_leaves_stdout_open() {
    let (out, stdout, stderr) = run(example("raw_fd_owned"));
    assert!(out.status.success(), "{stderr}");
    assert!(
        stdout.contains("first write, through a dup of fd 1"),
        "{stdout}"
    );
    assert!(
        stdout.contains("second write, through std::io::stdout(): works too"),
        "{stdout}"
    );
}

#[test]
fn block_buffered_stdout_writes_every_line_both_ways() {
    let mut command = example("block_buffered_stdout");
    command.arg("20000");
    let (out, stdout, stderr) = run(command);
    assert!(out.status.success(), "{stderr}");
    assert_eq!(stdout.lines().count(), 40_000);
    assert!(stdout.ends_with("line 19999\n"));
    assert!(
        stderr.contains("println! (line-buffered)") && stderr.contains("faster"),
        "{stderr}"
    );
}

#[test]
fn stdout_is_a_1_kib_linewriter() {
    let (out, stdout, stderr) = run(example("stdout_is_linewriter"));
    assert!(out.status.success(), "{stderr}");
    assert_eq!(stdout.len(), 2 * 100 * 1024);
    let calls = |prefix: &str| -> u64 {
        let line = stderr.lines().find(|l| l.starts_with(prefix)).unwrap();
        line.split(':')
            .nth(1)
            .unwrap()
            .split_whitespace()
            .next()
            .unwrap()
            .parse()
            .unwrap()
    };
    let small = calls("100 KiB in 16-byte pieces");
    let whole = calls("100 KiB in one write_all");
    assert!((100..=101).contains(&small), "{stderr}");
    assert_eq!(whole, 1, "{stderr}");
}

#[test]
fn http_log_serves_and_logs_every_request_into_a_pipe_and_a_pty() {
    for (writer, lines) in [("println", 2000), ("block", 2000), ("none", 0)] {
        let mut command = example("http_log");
        command.args([writer, "2000"]);
        let (out, stdout, stderr) = run(command);
        assert!(out.status.success(), "{writer}: {stderr}");
        assert!(stderr.contains("2000 requests in"), "{writer}: {stderr}");
        assert_eq!(stdout.matches("GET / 200").count(), lines, "{writer}");
    }
    // Into a terminal: the log lines and the result share it.
    let pty = flushlab_core::sys::pty::Pty::open(80, 24).unwrap();
    let exe = example("http_log").get_program().to_owned();
    let mut child = pty
        .spawn(std::path::Path::new(&exe), |cmd| {
            cmd.args(["println", "1000"]);
        })
        .unwrap();
    let mut seen = Vec::new();
    flushlab_core::sys::pty::read_to_end(&pty.master, |b| seen.extend_from_slice(b)).unwrap();
    assert!(child.wait().unwrap().success());
    let text = String::from_utf8_lossy(&seen);
    assert_eq!(text.matches("GET / 200").count(), 1000);
    assert!(text.contains("1000 requests in"), "{text}");
    let (bad, _, stderr) = run({
        let mut c = example("http_log");
        c.args(["loud", "10"]);
        c
    });
    assert_eq!(bad.status.code(), Some(2), "{stderr}");
}

#[test]
fn http_log_behind_a_slow_terminal_serves_every_request() {
    // The reader models through `flushlab wrap`: every request answered, every line delivered.
    let exe = example("http_log").get_program().to_owned();
    let report = std::path::Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("http-log-{}.json", std::process::id()));
    let out = Command::new(env!("CARGO_BIN_EXE_flushlab"))
        .args([
            "wrap",
            "--duration",
            "30",
            "--reader",
            "throttle:500KB/s",
            "--report",
        ])
        .arg(&report)
        .arg("--")
        .arg(&exe)
        .args(["println", "2000"])
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    let json: serde_json::Value = serde_json::from_slice(&std::fs::read(&report).unwrap()).unwrap();
    std::fs::remove_file(&report).unwrap();
    // One write(2) per log line (println! on a terminal), and every line read from the pty.
    assert!(json["tree_write_calls"].as_u64().unwrap() >= 2000, "{json}");
    assert!(json["bytes"].as_u64().unwrap() >= 2000 * 30, "{json}");
    assert_eq!(json["exit_code"], 0, "{json}");
}
