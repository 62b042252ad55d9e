//! The terminal a headless wrap plays for CMD. Programs ask their terminal things before they
//! draw — where the cursor is (crossterm's `cursor::position()`, which a published ratatui
//! program exits 1 without), what the terminal is (DA1, DA2, XTVERSION), whether it knows
//! synchronized output (DECRQM 2026), its colours (OSC 10/11) — and a pty with nobody
//! answering leaves them waiting or failing. The answers here are xterm's, with the cursor
//! from the cursor model ([`Screen`]) that follows CMD's output as it is read; what no answer
//! is given for (the kitty keyboard protocol, pixel sizes, DCS requests) is named in the
//! report. Both arms of `--compare` are told the same.
//!
//! The same model tells which mode CMD put the cursor keys in, so `--keys` sends them as a
//! terminal would ([`SharedModes`]).

use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use serde::Serialize;

use flushlab_core::detect::recording::Recording;
use flushlab_core::detect::screen::{Event, Query as Asked, Screen};
use flushlab_core::detect::timeline::Query;
use flushlab_core::keyscript::KeyModes;

/// The modes that change what a key sends, as the reader thread last saw CMD set them.
#[derive(Debug, Default)]
pub struct SharedModes {
    application_cursor: AtomicBool,
    bracketed_paste: AtomicBool,
}

impl SharedModes {
    pub fn get(&self) -> KeyModes {
        KeyModes {
            application_cursor: self.application_cursor.load(Ordering::Relaxed),
            bracketed_paste: self.bracketed_paste.load(Ordering::Relaxed),
        }
    }
}

/// One kind of question CMD asked, how often, and what it was told.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Exchange {
    /// The question, as the sequence CMD sent and its name.
    pub asked: &'static str,
    pub times: u64,
    /// The last answer, escaped; `None` when none was given.
    pub told: Option<String>,
    /// Why it was not answered.
    pub unanswered: Option<&'static str>,
}

/// Answers CMD's questions as they are read (each recorded in the run's timeline as it is
/// asked), and follows its key modes.
#[derive(Debug)]
pub struct Answerer {
    screen: Screen,
    asked: BTreeMap<&'static str, Exchange>,
    recording: Arc<Recording>,
}

impl Answerer {
    pub fn new(size: (u16, u16), recording: Arc<Recording>) -> Answerer {
        Answerer {
            screen: Screen::new(size.0, size.1),
            asked: BTreeMap::new(),
            recording,
        }
    }

    /// Follows `chunk` of CMD's output, read at `at_ns`; the answers to what it asked go into `answers`, and its
    /// key modes into `modes`. The cursor position answered is the tracked cursor's where the
    /// question was asked, or `vt_cursor` (0-based row and column: the vt model's, `--reader
    /// vt`) where given.
    pub fn feed(
        &mut self,
        (chunk, at_ns): (&[u8], u64),
        (answers, vt_cursor): (&mut Vec<u8>, Option<(u16, u16)>),
        modes: &SharedModes,
    ) {
        let (asked, recording) = (&mut self.asked, &self.recording);
        self.screen.feed(chunk, &mut |event, _| {
            if let Event::Query(query) = event {
                let query = match (query, vt_cursor) {
                    (Asked::CursorPosition { .. }, Some((row, col))) => Asked::CursorPosition {
                        row: row + 1,
                        col: col + 1,
                    },
                    _ => query,
                };
                let (name, answer) = answer(query);
                recording.asked(Query {
                    at_ns,
                    asked: name,
                    answered: answer.is_ok(),
                });
                let exchange = asked.entry(name).or_insert(Exchange {
                    asked: name,
                    times: 0,
                    told: None,
                    unanswered: None,
                });
                exchange.times += 1;
                match answer {
                    Ok(bytes) => {
                        exchange.told = Some(escaped(&bytes));
                        answers.extend_from_slice(&bytes);
                    }
                    Err(why) => exchange.unanswered = Some(why),
                }
            }
        });
        let m = &self.screen.modes;
        modes
            .application_cursor
            .store(m.application_cursor, Ordering::Relaxed);
        modes
            .bracketed_paste
            .store(m.bracketed_paste, Ordering::Relaxed);
    }

    /// What CMD asked, in the order of the questions' names.
    pub fn exchanges(self) -> Vec<Exchange> {
        self.asked.into_values().collect()
    }
}

/// The question's name, and xterm's answer (or why there is none).
fn answer(query: Asked) -> (&'static str, Result<Vec<u8>, &'static str>) {
    match query {
        Asked::CursorPosition { row, col } => (
            "ESC[6n cursor position",
            Ok(format!("\x1b[{row};{col}R").into_bytes()),
        ),
        Asked::Status => ("ESC[5n status", Ok(b"\x1b[0n".to_vec())),
        Asked::PrimaryAttributes => (
            "ESC[c primary device attributes",
            Ok(b"\x1b[?62;22c".to_vec()),
        ),
        Asked::SecondaryAttributes => (
            "ESC[>c secondary device attributes",
            Ok(b"\x1b[>41;379;0c".to_vec()),
        ),
        Asked::PrivateMode { mode, set } => {
            // 1 set, 2 reset, 0 not recognized (DECRPM).
            let status = match set {
                Some(true) => 1,
                Some(false) => 2,
                None => 0,
            };
            (
                if mode == 2026 {
                    "ESC[?2026$p synchronized output (DECRQM)"
                } else {
                    "ESC[?Ps$p a private mode (DECRQM)"
                },
                Ok(format!("\x1b[?{mode};{status}$y").into_bytes()),
            )
        }
        Asked::Version => (
            "ESC[>q terminal version (XTVERSION)",
            Ok(format!("\x1bP>|flushlab-wrap({})\x1b\\", env!("CARGO_PKG_VERSION")).into_bytes()),
        ),
        Asked::KittyKeyboard => (
            "ESC[?u kitty keyboard flags",
            Err("not supported: like xterm, no answer (programs take the DA1 answer that follows)"),
        ),
        Asked::TextAreaSize { rows, cols } => (
            "ESC[18t text area in characters",
            Ok(format!("\x1b[8;{rows};{cols}t").into_bytes()),
        ),
        Asked::PixelSize => ("ESC[14t text area in pixels", Err("a pty has no pixels")),
        Asked::Colour(which) => {
            let (name, rgb) = match which {
                10 => ("OSC 10;? foreground colour", "ffff/ffff/ffff"),
                11 => ("OSC 11;? background colour", "0000/0000/0000"),
                _ => ("OSC 12;? cursor colour", "ffff/ffff/ffff"),
            };
            (
                name,
                Ok(format!("\x1b]{which};rgb:{rgb}\x1b\\").into_bytes()),
            )
        }
        Asked::DeviceControl => (
            "ESC P $q / +q a setting or capability (DECRQSS, XTGETTCAP)",
            Err("DCS requests are not answered"),
        ),
    }
}

/// An answer as the report shows it: `ESC` for the escape, other control bytes as `\xNN`.
fn escaped(bytes: &[u8]) -> String {
    let mut out = String::new();
    for &b in bytes {
        match b {
            0x1b => out.push_str("ESC"),
            0x20..=0x7e => out.push(char::from(b)),
            _ => out.push_str(&format!("\\x{b:02x}")),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ask(answerer: &mut Answerer, bytes: &[u8]) -> (Vec<u8>, KeyModes) {
        let modes = SharedModes::default();
        let mut answers = Vec::new();
        answerer.feed((bytes, 0), (&mut answers, None), &modes);
        (answers, modes.get())
    }

    /// `--reader vt`: the cursor is the vt model's (here one the small model would place
    /// elsewhere), given 0-based and answered 1-based.
    #[test]
    fn with_the_vt_model_the_cursor_answered_is_the_vt_models() {
        let mut a = Answerer::new((80, 24), Arc::default());
        let mut answers = Vec::new();
        a.feed(
            (b"\x1b[5;10Hhello\x1b[6n", 0),
            (&mut answers, Some((11, 2))),
            &SharedModes::default(),
        );
        assert_eq!(answers, b"\x1b[12;3R");
    }

    #[test]
    fn a_program_is_answered_as_xterm_answers_it_with_the_cursor_where_it_drew() {
        let recording = Arc::new(Recording::default());
        let mut a = Answerer::new((80, 24), Arc::clone(&recording));
        let (answers, _) = ask(&mut a, b"\x1b[?1049h\x1b[?25l\x1b[6n");
        assert_eq!(answers, b"\x1b[1;1R");
        // Split across reads, after drawing: the cursor as the model follows it.
        let (answers, _) = ask(&mut a, b"\x1b[5;10Hhello\x1b[");
        assert!(answers.is_empty());
        let (answers, _) = ask(&mut a, b"6n\x1b[c\x1b[>c\x1b]11;?\x1b\\\x1b]10;?\x07");
        assert_eq!(
            answers,
            b"\x1b[5;15R\x1b[?62;22c\x1b[>41;379;0c\x1b]11;rgb:0000/0000/0000\x1b\\\
              \x1b]10;rgb:ffff/ffff/ffff\x1b\\"
        );
        let (answers, _) = ask(&mut a, b"\x1b[?2026$p\x1b[?2026h\x1b[?2026$p\x1b[?9999$p");
        assert_eq!(answers, b"\x1b[?2026;2$y\x1b[?2026;1$y\x1b[?9999;0$y");
        let (answers, _) = ask(&mut a, b"\x1b[?u\x1b[14t\x1bP$qm\x1b\\\x1b[18t");
        assert_eq!(answers, b"\x1b[8;24;80t");
        let (exchanges, queries) = (a.exchanges(), recording.timeline(None, 0).queries);
        // Each question in time, as many as asked, the unanswered ones said.
        let asked: u64 = exchanges.iter().map(|e| e.times).sum();
        assert_eq!(queries.len() as u64, asked);
        assert_eq!(queries.iter().filter(|q| !q.answered).count(), 3);
        assert_eq!(queries[0].asked, "ESC[6n cursor position");
        let cpr = exchanges
            .iter()
            .find(|e| e.asked.starts_with("ESC[6n"))
            .unwrap();
        assert_eq!((cpr.times, cpr.told.as_deref()), (2, Some("ESC[5;15R")));
        let unanswered: Vec<&str> = exchanges
            .iter()
            .filter(|e| e.unanswered.is_some())
            .map(|e| e.asked)
            .collect();
        assert_eq!(unanswered.len(), 3, "{unanswered:?}");
    }

    #[test]
    fn key_modes_follow_what_the_program_set() {
        let mut a = Answerer::new((80, 24), Arc::default());
        let (_, modes) = ask(&mut a, b"\x1b[?1h\x1b[?2004h");
        assert!(modes.application_cursor && modes.bracketed_paste);
        let (_, modes) = ask(&mut a, b"\x1b[?1l");
        assert!(!modes.application_cursor && modes.bracketed_paste);
        // Colours and cursor moves ask nothing.
        let (answers, _) = ask(&mut a, b"\x1b[31m\x1b[2;3H\x1b[0m\x1b[s\x1b[u\x1b[6;1t");
        assert!(answers.is_empty());
    }
}
