//! The lean backend taken home: an app of its own, outside flushlab's workspace, that depends on
//! `flushlab-lean-backend` by path and on ratatui, built offline with nothing else, draws through
//! `LeanBackend::new(io::stdout())` in a real pty; a terminal parser reads what it drew.

mod common;

use std::path::Path;
use std::process::Command;
use std::time::Duration;

const APP: &str = r#"
use std::io;
use flushlab_lean_backend::LeanBackend;
use ratatui::widgets::{Block, Paragraph};

fn main() -> io::Result<()> {
    let mut terminal = ratatui::Terminal::new(LeanBackend::new(io::stdout()))?;
    terminal.draw(|frame| {
        let text = Paragraph::new("drawn by the lean backend").block(Block::bordered().title("home"));
        frame.render_widget(text, frame.area());
    })?;
    Ok(())
}
"#;

#[test]
fn an_app_outside_the_workspace_builds_with_the_crate_alone_and_draws() {
    let dir = common::scratch_dir("lean-outside");
    let crate_path = Path::new(env!("CARGO_MANIFEST_DIR")).join("crates/flushlab-lean-backend");
    // Its own workspace (the empty table): nothing of flushlab's is in its build.
    let manifest = format!(
        "[package]\nname = \"home\"\nversion = \"0.1.0\"\nedition = \"2024\"\n\n[workspace]\n\n\
         [dependencies]\nratatui = \"0.30.2\"\nflushlab-lean-backend = {{ path = {:?} }}\n",
        crate_path.display().to_string()
    );
    std::fs::create_dir_all(dir.join("src")).unwrap();
    std::fs::write(dir.join("Cargo.toml"), manifest).unwrap();
    std::fs::write(dir.join("src/main.rs"), APP).unwrap();
    // The lock flushlab builds with: the same versions, nothing fetched.
    std::fs::copy(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("Cargo.lock"),
        dir.join("Cargo.lock"),
    )
    .unwrap();
    let built = Command::new(env!("CARGO"))
        .args(["build", "--offline", "--quiet", "--manifest-path"])
        .arg(dir.join("Cargo.toml"))
        .env("CARGO_TARGET_DIR", dir.join("target"))
        .output()
        .unwrap();
    assert!(
        built.status.success(),
        "{}",
        String::from_utf8_lossy(&built.stderr)
    );
    let tree = Command::new(env!("CARGO"))
        .args([
            "tree",
            "--offline",
            "-e",
            "normal",
            "--prefix",
            "none",
            "--manifest-path",
        ])
        .arg(dir.join("Cargo.toml"))
        .output()
        .unwrap();
    let tree = String::from_utf8_lossy(&tree.stdout);
    assert!(
        !tree.contains("flushlab-core") && !tree.contains("flushlab v"),
        "{tree}"
    );
    let run = common::start_program(&dir.join("target/debug/home"), &[], &[])
        .finish(Duration::from_secs(20));
    assert_eq!(run.code, Some(0));
    let side = |n: u16| std::num::NonZeroU16::new(n).unwrap();
    let mut terminal = vt100::Parser::new(side(common::ROWS), side(common::COLS), 0);
    terminal.process(&run.output);
    let screen = terminal.screen().contents();
    assert!(screen.contains("drawn by the lean backend"), "{screen}");
    assert!(screen.contains("home"), "{screen}");
}
