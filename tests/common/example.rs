//! A built example as a command, for the tests of both crates (the core's includes this file
//! by path): `cargo test` builds the examples, the test target alone does not.

use std::path::PathBuf;
use std::process::Command;

pub fn example(name: &str) -> Command {
    Command::new(example_path(name))
}

/// Where `cargo test` put the example `name`.
pub fn example_path(name: &str) -> PathBuf {
    // target/debug/deps/TEST-HASH → target/debug/examples/NAME
    let exe = std::env::current_exe().unwrap();
    let dir = exe
        .parent()
        .and_then(|deps| deps.parent())
        .unwrap()
        .join("examples");
    let path: PathBuf = dir.join(name);
    assert!(
        path.exists(),
        "{} not built: run the whole `cargo test`, which builds the examples",
        path.display()
    );
    path
}
