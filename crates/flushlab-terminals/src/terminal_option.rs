//! One setting of a terminal's own, as `wrap --terminal-option KEY=VALUE` gives it: checked
//! once, said escaped, and spelt on each terminal's command line by the launch table
//! ([`crate::emulators`]).

/// One setting of the terminal's own (`wrap --terminal-option KEY=VALUE`): foot's and
/// kitty's and alacritty's `-o KEY=VALUE`, xterm's and urxvt's X resource `KEY: VALUE` of their
/// class. How the terminal renders is part of what a key's pixels measure, so it is a condition
/// of the run like its size: foot's `tweak.delayed-render-lower=0` turns its render delay off.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct TerminalOption {
    pub key: String,
    pub value: String,
}

impl TerminalOption {
    /// `KEY=VALUE`: a key of letters, digits and `.`, `_`, `-`; a value of at most 200
    /// printable characters (it becomes one argument of the terminal's command line).
    pub fn parse(text: &str) -> Result<TerminalOption, String> {
        let shown = flushlab_core::units::printable(text);
        let Some((key, value)) = text.split_once('=') else {
            return Err(format!(
                "'{shown}' is not KEY=VALUE (e.g. tweak.delayed-render-lower=0 for foot)"
            ));
        };
        let key_ok = !key.is_empty()
            && key.len() <= 100
            && key
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-'));
        if !key_ok {
            return Err(format!(
                "'{shown}': the key is letters, digits, '.', '_' and '-' (at most 100)"
            ));
        }
        if value.chars().count() > 200 || value.chars().any(char::is_control) {
            return Err(format!(
                "'{shown}': the value is at most 200 printable characters"
            ));
        }
        Ok(TerminalOption {
            key: key.to_owned(),
            value: value.to_owned(),
        })
    }
}

/// The settings given, for a summary's first line: ", KEY=VALUE, …" (escaped), or nothing.
pub fn options_said(options: &[TerminalOption]) -> String {
    options
        .iter()
        .map(|o| format!(", {}", flushlab_core::units::printable(&o.to_string())))
        .collect()
}

impl std::fmt::Display for TerminalOption {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}={}", self.key, self.value)
    }
}
