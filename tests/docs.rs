//! Every `flushlab` command README.md and docs/guide.md show, run as written (durations
//! shortened): a renamed flag or a removed subcommand fails here, not in a newcomer's terminal.
//! Commands of other tools (`cargo`, `scripts/…`) are run by `.ci/run` itself.

mod common;

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

/// The commands a document shows: the lines of its ```sh blocks, and its inline code that
/// starts a command, that run flushlab.
fn commands(doc: &str) -> Vec<String> {
    let text = std::fs::read_to_string(doc).unwrap();
    let mut found = Vec::new();
    let mut prose = String::new();
    let mut fenced = false;
    for line in text.lines() {
        if line.starts_with("```") {
            fenced = !fenced;
            continue;
        }
        if fenced {
            found.push(line.to_owned());
        } else {
            prose.push_str(line);
            prose.push('\n');
        }
    }
    // Inline code spans (which Markdown lets run across a line break): every other piece
    // between backticks.
    found.extend(
        prose
            .split('`')
            .skip(1)
            .step_by(2)
            .map(|span| span.replace('\n', " ")),
    );
    found
        .into_iter()
        .map(|c| match c.find(" # ").or_else(|| c.find("  #")) {
            Some(i) => c[..i].trim().to_owned(),
            None => c.trim().to_owned(),
        })
        .filter(|c| runs_flushlab(c))
        .collect()
}

/// `flushlab …` or `VAR=value … flushlab …`.
fn runs_flushlab(command: &str) -> bool {
    command
        .split_whitespace()
        .find(|word| !word.contains('='))
        .is_some_and(|word| word == "flushlab")
}

/// The command with its durations cut to a fraction of a second and its runs to one, so that
/// the whole check takes seconds.
fn shortened(command: &str) -> String {
    let mut words: Vec<String> = command.split_whitespace().map(str::to_owned).collect();
    for i in 0..words.len() {
        if let Some((var, _)) = words[i].split_once('=')
            && var == "DURATION"
        {
            words[i] = "DURATION=0.3".into();
        }
        if matches!(words[i].as_str(), "--duration" | "--seconds") && i + 1 < words.len() {
            words[i + 1] = "0.3".into();
        }
    }
    let mut command = words.join(" ");
    let subcommand = words.iter().skip_while(|w| w.contains('=')).nth(1);
    match subcommand.map(String::as_str) {
        Some("bench") => {
            for (flag, value) in [("--runs", "1"), ("--warmup", "0"), ("--duration", "0.2")] {
                if !words.iter().any(|w| w == flag) {
                    command = command.replacen("bench", &format!("bench {flag} {value}"), 1);
                }
            }
        }
        Some("flood") if !words.iter().any(|w| w == "--duration" || w == "--lines") => {
            command = command.replacen("flood", "flood --lines 20000", 1);
        }
        // One run, in the terminal CI installs (xterm): what is checked is that the flags hold.
        Some("paint") => {
            for i in 1..words.len() {
                match words[i - 1].as_str() {
                    "--runs" => words[i] = "1".into(),
                    "--terminal" => words[i] = "xterm".into(),
                    _ => {}
                }
            }
            command = words.join(" ");
            if !words.iter().any(|w| w == "--duration") {
                command = command.replacen("paint", "paint --duration 0.3", 1);
            }
        }
        Some("tour") if !words.iter().any(|w| w == "--seconds") => {
            command = command.replacen("tour", "tour --seconds 0.2 --cpr-timeout 0.3", 1);
        }
        _ => {}
    }
    command
}

/// Whether the command takes over a terminal: the explorer or wrap without a duration, the
/// tour, or the lesson (but for its list of steps).
fn interactive(command: &str) -> bool {
    let words: Vec<&str> = command.split_whitespace().collect();
    let subcommand = words.iter().skip_while(|w| w.contains('=')).nth(1).copied();
    match subcommand {
        Some("tour") => true,
        Some("lesson") => !command.contains("--steps"),
        Some("wrap") => !command.contains("--duration"),
        Some(s) if !s.starts_with('-') => false,
        _ => !command.contains("DURATION=") && !command.contains("--duration"),
    }
}

/// A directory where the commands run: the inputs they name are links to the project's, the
/// files they write stay inside it.
fn workspace() -> common::Scratch {
    let dir = common::scratch_dir("docs");
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    for input in ["profiles", "docs", "tests"] {
        let link = dir.join(input);
        if !link.exists() {
            std::os::unix::fs::symlink(root.join(input), link).unwrap();
        }
    }
    dir
}

fn path_with_flushlab() -> String {
    let bin = Path::new(env!("CARGO_BIN_EXE_flushlab")).parent().unwrap();
    format!(
        "{}:{}",
        bin.display(),
        std::env::var("PATH").unwrap_or_default()
    )
}

#[test]
fn every_command_the_docs_show_runs_as_written() {
    let dir = workspace();
    let mut ran = Vec::new();
    for doc in ["README.md", "docs/guide.md"] {
        let doc = Path::new(env!("CARGO_MANIFEST_DIR")).join(doc);
        for written in commands(doc.to_str().unwrap()) {
            let command = shortened(&written);
            let code = if interactive(&command) {
                // In a terminal of its own, quit with q once it has drawn.
                run_in_pty(&dir, &command)
            } else {
                let mut child = Command::new("sh")
                    .arg("-c")
                    .arg(&command)
                    .current_dir(&dir)
                    .env("PATH", path_with_flushlab())
                    // `~` is the workspace too: nothing is written outside it.
                    .env("HOME", &dir)
                    .stdin(Stdio::null())
                    .stdout(Stdio::null())
                    .stderr(Stdio::piped())
                    .spawn()
                    .unwrap();
                let status = common::wait_for(Duration::from_secs(60), &command, || {
                    child.try_wait().unwrap()
                });
                let mut err = String::new();
                std::io::Read::read_to_string(&mut child.stderr.take().unwrap(), &mut err).unwrap();
                assert!(status.success(), "{written}\n  ran as: {command}\n{err}");
                status.code()
            };
            assert_eq!(code, Some(0), "{written}\n  ran as: {command}");
            ran.push(written);
        }
    }
    // The README's own examples are most of them; none may be lost by a change of format.
    assert!(
        ran.len() >= 15,
        "only {} commands found: {ran:#?}",
        ran.len()
    );
    std::fs::remove_dir_all(dir).unwrap();
}

/// Runs `command` through `sh` on a fresh pty, presses q after a second, and returns its exit
/// code.
fn run_in_pty(dir: &Path, command: &str) -> Option<i32> {
    let pty = flushlab_core::sys::pty::Pty::open(common::COLS, common::ROWS).unwrap();
    let mut child = pty
        .spawn(Path::new("/bin/sh"), |cmd| {
            cmd.arg("-c")
                .arg(command)
                .current_dir(dir)
                .env("PATH", path_with_flushlab())
                .env("HOME", dir);
        })
        .unwrap();
    let master = pty.master.try_clone().unwrap();
    let reader = std::thread::spawn(move || flushlab_core::sys::pty::read_to_end(&master, |_| {}));
    std::thread::sleep(Duration::from_secs(1));
    let _ = std::io::Write::write_all(&mut &pty.master, b"q");
    let status = common::wait_for(Duration::from_secs(30), command, || {
        child.try_wait().unwrap()
    });
    drop(pty);
    let _ = reader.join();
    status.code()
}
