//! The fixes wrap tries on CMD without changing it (`--try`, `--compare`): a choice the plan
//! holds, named here so that no room but the plan reads the command line.

use serde::Serialize;

/// What wrap does with CMD's terminal writes, beside watching them.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "clap", derive(clap::ValueEnum))]
#[serde(rename_all = "kebab-case")]
pub enum Fix {
    /// Hold each frame's writes until CMD next waits, then write them at once: what
    /// `BufWriter` and one flush a frame would do, tried without changing CMD.
    Frame,
    /// Put each key's answer in a synchronized-output block (DEC 2026), from CMD's first
    /// terminal write after it read the terminal until it next waits for input: what
    /// synchronized output would buy, in the terminal it runs in.
    Sync,
}
