//! `--keys` and `--keys-file` as the plan holds them: the script, read and checked before
//! anything starts, and when its keys start.

use std::time::Duration;

use flushlab_core::keyscript::KeyScript;

/// The keys of one run: the script, and when to start.
#[derive(Clone, Debug)]
pub struct Keys {
    pub script: KeyScript,
    /// Start this long after CMD started, instead of when CMD is first idle.
    pub after: Option<Duration>,
}

/// `--keys-file`: the script, or a refusal naming the file and what is wrong with it. Read as
/// every file others send is (`files::read_input`): a FIFO or a device is refused at once, never
/// waited on, and 1 MiB at most.
pub fn read_keys_file(path: &std::path::Path) -> Result<KeyScript, String> {
    use flushlab_core::files::{InputKind, read_input};
    let shown = flushlab_core::units::printable(&path.to_string_lossy());
    let bytes = read_input(path, InputKind::KeyScript)
        .map_err(|e| format!("wrap: --keys-file '{shown}': {e}"))?;
    let text = String::from_utf8(bytes)
        .map_err(|_| format!("wrap: --keys-file '{shown}': not UTF-8 text"))?;
    KeyScript::parse(&text).map_err(|e| format!("wrap: --keys-file '{shown}': {e}"))
}
