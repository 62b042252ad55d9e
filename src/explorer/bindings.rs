//! The explorer's keys, defined once: what each key asks for ([`Action`]), and how the help
//! and the HUD's footer name it. [`action`] maps a key event through [`BINDINGS`]; the help and
//! the footer are drawn from the same table, so that no key is bound in one place and
//! described in another.

use ratatui::crossterm::event::{KeyCode, KeyEvent, KeyEventKind, KeyModifiers};

use flushlab_core::writer_mode::{Buffering, Stream};

/// What a key asks for. Keys map to actions only through [`BINDINGS`], so the bindings can be
/// tested without a terminal.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Action {
    NextMode,
    Stream(Stream),
    Buffering(Buffering),
    CapacityUp,
    CapacityDown,
    ToggleSync,
    /// The other backend (ratatui's crossterm, flushlab's lean encoder).
    NextBackend,
    NextScene,
    ToggleHud,
    Tour,
    ToggleHelp,
    /// The table of every mode measured under the current condition, over the scene.
    ToggleTable,
    /// Esc: closes the help (or the table) if it is open, quits otherwise.
    Back,
    /// Give the terminal back and stop, as Ctrl-Z does to any program (`fg` resumes).
    Suspend,
    /// The lesson's next step (space too, in a lesson).
    NextStep,
    /// The lesson's step before.
    PreviousStep,
    Quit,
    /// An unbound key: ignored.
    Nothing,
}

impl Action {
    /// Whether the key ends a run that shows no help to close (a tour, a ceiling): q, Esc, ^C.
    pub fn ends_run(self) -> bool {
        matches!(self, Action::Quit | Action::Back)
    }
}

/// A key as the explorer reads it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Key {
    Char(char),
    Ctrl(char),
    Tab,
    Esc,
    Right,
    Left,
    Backspace,
}

/// One line of the help: the keys, what each does, and how the help and the footer name them.
#[derive(Debug)]
pub struct Binding {
    pub keys: &'static [(Key, Action)],
    /// The keys as the help shows them.
    pub shown: &'static str,
    /// What they do, for the help.
    pub help: &'static str,
    /// What the footer says of them; empty when the footer leaves them out.
    pub footer: &'static str,
}

use Key::{Char, Ctrl};

/// Every key the explorer knows, in the help's order.
pub const BINDINGS: [Binding; 12] = [
    Binding {
        keys: &[(Char(' '), Action::NextMode), (Key::Tab, Action::NextMode)],
        shown: "space, tab",
        help: "next mode (stream × buffering)",
        footer: "spc next",
    },
    Binding {
        keys: &[
            (Char('o'), Action::Stream(Stream::Stdout)),
            (Char('e'), Action::Stream(Stream::Stderr)),
        ],
        shown: "o / e",
        help: "std's stdout() (line) / stderr() (raw)",
        footer: "o/e stdout()/stderr()",
    },
    Binding {
        keys: &[
            (Char('r'), Action::Buffering(Buffering::Raw)),
            (Char('l'), Action::Buffering(Buffering::Line)),
            (Char('b'), Action::Buffering(Buffering::Block)),
            (Char('f'), Action::Buffering(Buffering::Frame)),
            (Char('w'), Action::Buffering(Buffering::Thread)),
        ],
        shown: "r l b f w",
        help: "raw · line (LineWriter) · block (BufWriter) · frame · thread",
        footer: "r/l/b/f/w buffering",
    },
    Binding {
        keys: &[
            (Char('+'), Action::CapacityUp),
            (Char('='), Action::CapacityUp),
            (Char('-'), Action::CapacityDown),
        ],
        shown: "+ (=) / -",
        help: "block capacity ×2 / ÷2 (64 B .. 1 MiB)",
        footer: "+/- cap",
    },
    Binding {
        keys: &[
            (Char('y'), Action::ToggleSync),
            (Char('s'), Action::NextScene),
            (Char('v'), Action::ToggleHud),
            (Char('x'), Action::NextBackend),
        ],
        shown: "y s v x",
        help: "sync output (DEC 2026) · scene · HUD compact/full · backend",
        footer: "y sync · s scene · v HUD · x backend",
    },
    Binding {
        keys: &[(Char('t'), Action::Tour)],
        shown: "t",
        help: "tour: every mode in turn, then the table",
        footer: "t tour",
    },
    Binding {
        keys: &[(Char('m'), Action::ToggleTable)],
        shown: "m",
        help: "the table of every mode measured here, over the scene",
        footer: "m table",
    },
    Binding {
        keys: &[
            (Key::Right, Action::NextStep),
            (Key::Left, Action::PreviousStep),
            (Key::Backspace, Action::PreviousStep),
        ],
        shown: "→ / ←, Backspace",
        help: "a lesson's next / previous step (space goes on too)",
        footer: "",
    },
    Binding {
        keys: &[(Ctrl('z'), Action::Suspend)],
        shown: "^Z",
        help: "suspend, terminal given back (fg resumes)",
        footer: "",
    },
    Binding {
        keys: &[
            (Char('h'), Action::ToggleHelp),
            (Char('?'), Action::ToggleHelp),
        ],
        shown: "h, ?",
        help: "this help",
        footer: "h help",
    },
    Binding {
        keys: &[(Char('q'), Action::Quit), (Ctrl('c'), Action::Quit)],
        shown: "q, ^C",
        help: "quit",
        footer: "q quit",
    },
    Binding {
        keys: &[(Key::Esc, Action::Back)],
        shown: "Esc",
        help: "close the help or the table (quit when none is open)",
        footer: "",
    },
];

/// The action `event` asks for ([`Action::Nothing`] for a key release or an unbound key).
pub fn action(event: KeyEvent) -> Action {
    if event.kind == KeyEventKind::Release {
        return Action::Nothing;
    }
    let key = match event.code {
        KeyCode::Char(c) if event.modifiers.contains(KeyModifiers::CONTROL) => Ctrl(c),
        KeyCode::Char(c) => Char(c),
        KeyCode::Tab => Key::Tab,
        KeyCode::Esc => Key::Esc,
        KeyCode::Right => Key::Right,
        KeyCode::Left => Key::Left,
        KeyCode::Backspace => Key::Backspace,
        _ => return Action::Nothing,
    };
    BINDINGS
        .iter()
        .flat_map(|b| b.keys)
        .find(|(k, _)| *k == key)
        .map_or(Action::Nothing, |&(_, action)| action)
}

impl From<KeyEvent> for Action {
    fn from(event: KeyEvent) -> Self {
        action(event)
    }
}

/// The footer's entries, in the help's order (a binding's parts, between " · ", each one).
pub fn footer() -> impl Iterator<Item = &'static str> {
    BINDINGS
        .iter()
        .flat_map(|b| b.footer.split(" · "))
        .filter(|f| !f.is_empty())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn no_key_is_bound_twice() {
        let keys: Vec<Key> = BINDINGS.iter().flat_map(|b| b.keys).map(|k| k.0).collect();
        for (i, key) in keys.iter().enumerate() {
            assert!(!keys[..i].contains(key), "{key:?} bound twice");
        }
    }

    #[test]
    fn every_binding_shows_each_of_its_keys() {
        for binding in &BINDINGS {
            for (key, _) in binding.keys {
                let name = match key {
                    Char(' ') => "space".to_owned(),
                    Char(c) => c.to_string(),
                    Ctrl(c) => format!("^{}", c.to_ascii_uppercase()),
                    Key::Tab => "tab".to_owned(),
                    Key::Esc => "Esc".to_owned(),
                    Key::Right => "→".to_owned(),
                    Key::Left => "←".to_owned(),
                    Key::Backspace => "Backspace".to_owned(),
                };
                assert!(binding.shown.contains(&name), "{name} in {binding:?}");
            }
        }
    }

    // The input parser's keys, as the explorer maps them.
    use flushlab_terminals::input::parse_keys;

    fn actions(bytes: &[u8]) -> Vec<Action> {
        parse_keys(bytes).into_iter().map(Action::from).collect()
    }

    #[test]
    fn keys_become_the_same_actions_as_crossterm_events() {
        use flushlab_core::writer_mode::Buffering;
        assert_eq!(
            actions(b" \tfq\x03?"),
            [
                Action::NextMode,
                Action::NextMode,
                Action::Buffering(Buffering::Frame),
                Action::Quit,
                Action::Quit,
                Action::ToggleHelp
            ]
        );
    }

    #[test]
    fn the_plain_arrows_step_a_lesson_and_backspace_goes_back() {
        assert_eq!(
            actions(b"\x1b[C\x1b[D\x7f"),
            [Action::NextStep, Action::PreviousStep, Action::PreviousStep]
        );
    }

    #[test]
    fn escape_sequences_are_not_esc() {
        // Up arrow, F5, F1 (SS3), Alt+q, then a lone Esc at the end of the read.
        assert_eq!(actions(b"\x1b[A\x1b[15~\x1bOP\x1bq"), []);
        // Terminal replies: XTVERSION (DCS … ST), an OSC colour reply ended by BEL.
        assert_eq!(
            actions(b"\x1bP>|xterm(379)\x1b\\\x1b]11;rgb:0000/0000/0000\x07"),
            []
        );
        assert_eq!(
            actions(b"\x1b[1;5Cr\x1b"),
            [
                Action::Buffering(flushlab_core::writer_mode::Buffering::Raw),
                Action::Back
            ]
        );
    }
}
