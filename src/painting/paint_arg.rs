//! `--paint`, as wrap and the explorer take it: the terminal model's paint policy written out,
//! a terminal's name (its policy in the launch table), or `off`.

use flushlab_core::seen::PaintPolicy;

use flushlab_terminals::emulators::Terminal;

/// `--paint`: the terminal model's paint policy, or `off`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Paint(pub Option<PaintPolicy>);

impl Paint {
    /// `off`, a terminal's name, or a policy written out; else the one line that says what is
    /// valid.
    pub fn parse(text: &str) -> Result<Paint, String> {
        if text.trim() == "off" {
            return Ok(Paint(None));
        }
        if let Ok(terminal) = Terminal::parse(text.trim()) {
            return Ok(Paint(Some(terminal.paint_policy().0)));
        }
        text.parse()
            .map(|policy| Paint(Some(policy)))
            .map_err(|e: String| {
                e.replacen(
                    "expected ",
                    "expected off, a terminal's name (xterm, kitty, alacritty, foot…), ",
                    1,
                )
            })
    }
}
