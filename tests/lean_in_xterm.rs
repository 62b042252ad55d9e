//! The same screen in a real terminal: the lean backend's example app draws the same 20 frames
//! through crossterm's backend and the lean one in xterm (under Xvfb), then asks xterm to print
//! its screen (`ESC[i`: xterm's printer command receives every cell with its attributes and
//! colours, as xterm holds them). The two dumps must be the same, at 80x24 and 200x60.

mod common;

use std::path::Path;
use std::process::Command;

fn xterm_dump(app: &Path, backend: &str, (cols, rows): (u16, u16), dir: &Path) -> Vec<u8> {
    let dump = dir.join(format!("{backend}-{cols}x{rows}.txt"));
    let printer = dir.join("printer.sh");
    std::fs::write(&printer, format!("#!/bin/sh\ncat > '{}'\n", dump.display())).unwrap();
    let mut mode = std::fs::metadata(&printer).unwrap().permissions();
    std::os::unix::fs::PermissionsExt::set_mode(&mut mode, 0o755);
    std::fs::set_permissions(&printer, mode).unwrap();
    let status = Command::new("xvfb-run")
        .args(["-a", "xterm", "-geometry", &format!("{cols}x{rows}")])
        .arg("-xrm")
        .arg(format!("XTerm*printerCommand: {}", printer.display()))
        .args(["-xrm", "XTerm*printAttributes: 2", "-e"])
        .arg(app)
        .args([backend, "--frames", "20", "--print-screen", "30"])
        .stderr(std::process::Stdio::null())
        .status()
        .unwrap();
    assert!(status.success(), "{backend} {cols}x{rows}: {status}");
    std::fs::read(&dump).unwrap_or_default()
}

#[test]
fn xterm_shows_the_same_screen_through_both_backends() {
    if flushlab_core::files::find_program("xvfb-run".as_ref()).is_none()
        || flushlab_core::files::find_program("xterm".as_ref()).is_none()
    {
        eprintln!("skipped: xvfb-run or xterm is not installed (.ci/run installs both)");
        return;
    }
    let built = Command::new(env!("CARGO"))
        .args([
            "build",
            "--quiet",
            "-p",
            "flushlab-lean-backend",
            "--example",
            "app",
        ])
        .status()
        .unwrap();
    assert!(built.success());
    let target = std::env::var_os("CARGO_TARGET_DIR").map_or_else(
        || Path::new(env!("CARGO_MANIFEST_DIR")).join("target"),
        std::path::PathBuf::from,
    );
    let app = target.join("debug/examples/app");
    let dir = common::scratch_dir("lean-xterm");
    for size in [(80, 24), (200, 60)] {
        let crossterm = xterm_dump(&app, "crossterm", size, &dir);
        let lean = xterm_dump(&app, "lean", size, &dir);
        // Every row of the screen, each cell with its colours (the 20th frame's letter is `t`).
        let text = String::from_utf8_lossy(&lean);
        assert!(
            text.lines().count() >= usize::from(size.1),
            "{size:?}: {text}"
        );
        assert!(
            text.contains("38:2::") && text.contains('t'),
            "{size:?}: {text}"
        );
        assert!(crossterm == lean, "{size:?}: xterm's screens differ");
    }
}
