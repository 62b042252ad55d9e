//! `flushlab lesson` as a class meets it: in tmux (a terminal people use, whose screen is its
//! own, not flushlab's test parser), at 80x24 and 200x60, through every step with Space and
//! back with ←, each step's caption, its figures "× stdout()" and the big frame rate whole on
//! tmux's screen; q ends it. `tests/explorer_in_pty.rs` does the
//! same through a pty read by the vt100 crate.

use std::process::Command;
use std::time::{Duration, Instant};

fn tmux(socket: &str, args: &[&str]) -> String {
    let out = Command::new("tmux")
        .args(["-S", socket])
        .args(args)
        .output()
        .expect("tmux is missing: apt-get install tmux (.ci/run does)");
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// tmux's screen until `whole` holds (15 s at most: an unbuffered 200x60 frame takes most of a
/// second, and figures come once a second).
fn wait_for(socket: &str, what: &str, whole: impl Fn(&str) -> bool) -> String {
    let asked = Instant::now();
    loop {
        let screen = tmux(socket, &["capture-pane", "-p", "-t", "lesson"]);
        if whole(&screen) {
            return screen;
        }
        assert!(
            asked.elapsed() < Duration::from_secs(15),
            "{what} never came whole:\n{screen}"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Ends the tmux server and removes its socket however the test ends: a failed step leaves
/// no lesson running.
struct Server(String);

impl Drop for Server {
    fn drop(&mut self) {
        tmux(&self.0, &["kill-server"]);
        let _ = std::fs::remove_file(&self.0);
    }
}

#[test]
fn a_class_goes_through_the_lesson_in_tmux_and_back() {
    let steps = flushlab::explorer::lesson::STEPS;
    for (cols, rows) in [(80u16, 24u16), (200, 60)] {
        // A server of its own, its socket in the test's scratch space (removed at the end).
        let socket = std::path::Path::new(env!("CARGO_TARGET_TMPDIR"))
            .join(format!("lesson-{}-{cols}", std::process::id()));
        let socket = socket.to_str().unwrap().to_owned();
        let _server = Server(socket.clone());
        let command = format!("{} lesson", env!("CARGO_BIN_EXE_flushlab"));
        let (c, r) = (cols.to_string(), rows.to_string());
        tmux(
            &socket,
            &[
                "-f",
                "/dev/null",
                "new-session",
                "-d",
                "-s",
                "lesson",
                "-x",
                &c,
                "-y",
                &r,
                &command,
            ],
        );
        let title = |i: usize| format!("Step {} of {} · {}", i + 1, steps.len(), steps[i].title);
        let shown = |i: usize, screen: &str| {
            // The encoder's step compares the two backends (the other's row from the step
            // before it, the same mode).
            let against = match steps[i].backend {
                flushlab_core::backend::BackendKind::Crossterm => "stdout())",
                _ => "crossterm)",
            };
            let compared = i == 0 || steps[i].sync || screen.contains(against);
            screen.contains(&title(i))
                && screen.contains("write(2)/frame")
                && screen.contains(" fps")
                && compared
                // The frame rate in big digits: a row of block characters.
                && screen.lines().any(|l| l.contains("▀▀▀"))
        };
        for i in 0..steps.len() {
            let screen = wait_for(&socket, &title(i), |s| shown(i, s));
            assert!(
                screen
                    .lines()
                    .all(|l| l.chars().count() <= usize::from(cols)),
                "{screen}"
            );
            if i + 1 < steps.len() {
                tmux(&socket, &["send-keys", "-t", "lesson", "Space"]);
            }
        }
        wait_for(&socket, "the comparison's command", |s| {
            s.contains("flushlab bench --modes")
        });
        for i in (0..steps.len() - 1).rev() {
            tmux(&socket, &["send-keys", "-t", "lesson", "Left"]);
            wait_for(&socket, &title(i), |s| s.contains(&title(i)));
        }
        tmux(&socket, &["send-keys", "-t", "lesson", "q"]);
        let asked = Instant::now();
        while tmux(&socket, &["list-sessions"]).contains("lesson") {
            assert!(
                asked.elapsed() < Duration::from_secs(10),
                "q did not end the lesson"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}
