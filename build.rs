//! Names the build in `flushlab --version`: the git commit it was built from (when built from
//! a git checkout) and the target triple.

use std::process::Command;

fn main() {
    let commit = Command::new("git")
        .args(["rev-parse", "--short=12", "HEAD"])
        .output()
        .ok()
        .filter(|out| out.status.success())
        .and_then(|out| String::from_utf8(out.stdout).ok())
        .map(|s| s.trim().to_owned())
        .filter(|s| !s.is_empty())
        .unwrap_or_else(|| "no git commit".to_owned());
    println!("cargo:rustc-env=FLUSHLAB_COMMIT={commit}");
    println!(
        "cargo:rustc-env=FLUSHLAB_TARGET={}",
        std::env::var("TARGET").unwrap_or_default()
    );
    // Built again when the checkout moves to another commit: HEAD, and the branch it names.
    let head = std::path::Path::new(".git/HEAD");
    if head.exists() {
        println!("cargo:rerun-if-changed=.git/HEAD");
        if let Some(branch) = std::fs::read_to_string(head)
            .ok()
            .and_then(|h| Some(h.strip_prefix("ref: ")?.trim().to_owned()))
        {
            println!("cargo:rerun-if-changed=.git/{branch}");
        }
    }
    println!("cargo:rerun-if-changed=build.rs");
}
