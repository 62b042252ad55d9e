//! The key language of `flushlab wrap --keys`: what a user types to drive a program that draws
//! when a key arrives, parsed once into typed steps, and each key's bytes as a terminal sends
//! them (cursor keys as the program asked: normal or application mode, DECCKM; a paste
//! bracketed when it turned bracketed paste on).
//!
//! ```text
//! j*200@15ms            200 × `j`, 15 ms after each
//! <PageDown>*50@30ms    named keys in angle brackets, the same repeat and pacing
//! hello<Enter>          literal text is one key a character
//! <wait 500ms>          a pause
//! <C-x> <M-f> <F5>      Ctrl, Alt (ESC first), function keys
//! <paste some text>     one paste, bracketed (ESC[200~ … ESC[201~) if the program asked
//! <lt> <Space>          a literal `<`, a space (whitespace between words is not sent)
//! ```
//!
//! Pacing (`@`) is the pause after each key of the word; without it the keys follow one another
//! as fast as the pty takes them. A script is refused, naming the bad word, when it holds an
//! unknown name, a control byte, a repeat above [`MAX_REPEAT`] or more than [`MAX_KEYS`] keys.

use std::fmt;
use std::time::Duration;

/// The most times one word may repeat.
pub const MAX_REPEAT: u32 = 100_000;
/// The most keys one script may send.
pub const MAX_KEYS: u64 = 1_000_000;
/// The longest pause or pacing one word may ask for.
pub const MAX_PAUSE: Duration = Duration::from_secs(600);

/// A parsed script: its steps in order.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct KeyScript {
    pub steps: Vec<Step>,
    /// The script as it was written, for reports.
    pub source: String,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Step {
    /// `keys` sent `times` times over, with `every` after each key.
    Keys {
        keys: Vec<Key>,
        times: u32,
        every: Duration,
    },
    /// `<wait D>`.
    Pause(Duration),
}

/// One key (or one paste), as the user named it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Key {
    Char(char),
    Named(Named),
    /// `<C-x>`: the control byte.
    Ctrl(u8),
    /// `<M-x>`: ESC, then the character.
    Alt(char),
    Paste(String),
}

/// The terminal modes that change what a key sends: the program sets them, wrap follows.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct KeyModes {
    /// DECCKM (`ESC[?1h`): cursor keys as `ESC O A`.
    pub application_cursor: bool,
    /// `ESC[?2004h`: a paste between `ESC[200~` and `ESC[201~`.
    pub bracketed_paste: bool,
}

/// The keys a terminal sends as sequences.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Named {
    Up,
    Down,
    Right,
    Left,
    Home,
    End,
    PageUp,
    PageDown,
    Insert,
    Delete,
    Enter,
    Tab,
    BackTab,
    Backspace,
    Esc,
    Space,
    Lt,
    F(u8),
}

/// Names as the script writes them (case does not matter), and the key each is.
const NAMES: &[(&str, Named)] = &[
    ("Up", Named::Up),
    ("Down", Named::Down),
    ("Right", Named::Right),
    ("Left", Named::Left),
    ("Home", Named::Home),
    ("End", Named::End),
    ("PageUp", Named::PageUp),
    ("PageDown", Named::PageDown),
    ("Insert", Named::Insert),
    ("Delete", Named::Delete),
    ("Enter", Named::Enter),
    ("Tab", Named::Tab),
    ("BackTab", Named::BackTab),
    ("Backspace", Named::Backspace),
    ("Esc", Named::Esc),
    ("Space", Named::Space),
    ("lt", Named::Lt),
];

/// Every name a script may use, for the error that lists them.
pub fn names() -> String {
    let mut all: Vec<&str> = NAMES.iter().map(|(n, _)| *n).collect();
    all.extend(["F1..F12", "C-x", "M-x", "wait D", "paste TEXT"]);
    all.join(", ")
}

/// What kind of key a terminal sent, from its bytes, for a report of keys a person typed:
/// the name of a named key (`<Down>`, `<F5>`, `<Enter>`, `<C-c>`) in either cursor mode, and
/// only `text`, `<M-text>`, `<paste>` or `other` for the rest — what someone typed (a password
/// included) is never written down, and no byte of it reaches a report or the terminal.
pub fn typed_kind(bytes: &[u8]) -> String {
    let named = NAMES
        .iter()
        .map(|&(name, key)| (name.to_owned(), key))
        .chain((1..=12).map(|n| (format!("F{n}"), Named::F(n))))
        .filter(|(_, key)| !matches!(key, Named::Space | Named::Lt));
    for (name, key) in named {
        for application_cursor in [false, true] {
            let mut sent = Vec::new();
            let modes = KeyModes {
                application_cursor,
                bracketed_paste: false,
            };
            key.bytes(modes, &mut sent);
            if sent == bytes {
                return format!("<{name}>");
            }
        }
    }
    match bytes {
        [byte @ 0x01..=0x1a] => format!("<C-{}>", char::from(b'a' + byte - 1)),
        [0x1b, rest @ ..] if rest.starts_with(b"[200~") => "<paste>".to_owned(),
        // Alt and one character; more after an escape is a sequence no key here sends.
        [0x1b, rest @ ..]
            if std::str::from_utf8(rest)
                .is_ok_and(|c| c.chars().count() == 1 && !c.chars().any(char::is_control)) =>
        {
            "<M-text>".to_owned()
        }
        _ if !bytes.is_empty() && bytes.iter().all(|&b| b >= 0x20 && b != 0x7f) => {
            "text".to_owned()
        }
        _ => "other".to_owned(),
    }
}

impl Named {
    fn bytes(self, modes: KeyModes, out: &mut Vec<u8>) {
        let cursor = |c: u8, out: &mut Vec<u8>| {
            out.extend_from_slice(if modes.application_cursor {
                b"\x1bO"
            } else {
                b"\x1b["
            });
            out.push(c);
        };
        match self {
            Named::Up => cursor(b'A', out),
            Named::Down => cursor(b'B', out),
            Named::Right => cursor(b'C', out),
            Named::Left => cursor(b'D', out),
            Named::Home => cursor(b'H', out),
            Named::End => cursor(b'F', out),
            Named::PageUp => out.extend_from_slice(b"\x1b[5~"),
            Named::PageDown => out.extend_from_slice(b"\x1b[6~"),
            Named::Insert => out.extend_from_slice(b"\x1b[2~"),
            Named::Delete => out.extend_from_slice(b"\x1b[3~"),
            Named::Enter => out.push(b'\r'),
            Named::Tab => out.push(b'\t'),
            Named::BackTab => out.extend_from_slice(b"\x1b[Z"),
            Named::Backspace => out.push(0x7f),
            Named::Esc => out.push(0x1b),
            Named::Space => out.push(b' '),
            Named::Lt => out.push(b'<'),
            // xterm's: F1–F4 as SS3 P..S, the rest as CSI n ~.
            Named::F(n @ 1..=4) => {
                out.extend_from_slice(b"\x1bO");
                out.push(b'P' + n - 1);
            }
            Named::F(n) => {
                let code = [15, 17, 18, 19, 20, 21, 23, 24][usize::from(n.clamp(5, 12) - 5)];
                out.extend_from_slice(format!("\x1b[{code}~").as_bytes());
            }
        }
    }
}

impl Key {
    /// What a terminal sends for this key while the program's modes are `modes`.
    pub fn bytes(&self, modes: KeyModes) -> Vec<u8> {
        let mut out = Vec::new();
        match self {
            Key::Char(c) => out.extend_from_slice(c.encode_utf8(&mut [0; 4]).as_bytes()),
            Key::Named(named) => named.bytes(modes, &mut out),
            Key::Ctrl(byte) => out.push(*byte),
            Key::Alt(c) => {
                out.push(0x1b);
                out.extend_from_slice(c.encode_utf8(&mut [0; 4]).as_bytes());
            }
            Key::Paste(text) if modes.bracketed_paste => {
                out.extend_from_slice(b"\x1b[200~");
                out.extend_from_slice(text.as_bytes());
                out.extend_from_slice(b"\x1b[201~");
            }
            Key::Paste(text) => out.extend_from_slice(text.as_bytes()),
        }
        out
    }
}

/// How the report names a key: as the script wrote it.
impl fmt::Display for Key {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Key::Char(c) => write!(f, "{c}"),
            Key::Named(Named::F(n)) => write!(f, "<F{n}>"),
            Key::Named(named) => {
                let name = NAMES.iter().find(|(_, n)| n == named).map_or("?", |x| x.0);
                write!(f, "<{name}>")
            }
            Key::Ctrl(byte) => write!(f, "<C-{}>", char::from((byte + 0x40).to_ascii_lowercase())),
            Key::Alt(c) => write!(f, "<M-{c}>"),
            Key::Paste(text) => write!(f, "<paste {} chars>", text.chars().count()),
        }
    }
}

impl KeyScript {
    /// Every key the script sends, in order, with the pause after it; `<wait>`s add to the
    /// pause of the key before them (or delay the first).
    pub fn timeline(&self) -> (Duration, Vec<(&Key, Duration)>) {
        let mut before = Duration::ZERO;
        let mut keys: Vec<(&Key, Duration)> = Vec::new();
        for step in &self.steps {
            match step {
                Step::Pause(d) => match keys.last_mut() {
                    Some(last) => last.1 += *d,
                    None => before += *d,
                },
                Step::Keys {
                    keys: k,
                    times,
                    every,
                } => {
                    for _ in 0..*times {
                        keys.extend(k.iter().map(|key| (key, *every)));
                    }
                }
            }
        }
        (before, keys)
    }

    /// Keys the script sends.
    pub fn len(&self) -> u64 {
        self.steps
            .iter()
            .map(|s| match s {
                Step::Keys { keys, times, .. } => keys.len() as u64 * u64::from(*times),
                Step::Pause(_) => 0,
            })
            .sum()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// A script from its text; the error names the word at fault and what would be right.
    pub fn parse(text: &str) -> Result<KeyScript, String> {
        let mut steps = Vec::new();
        let mut rest = text;
        let mut total = 0u64;
        loop {
            rest = rest.trim_start();
            if rest.is_empty() {
                break;
            }
            let (step, after) = word(rest)?;
            if let Step::Keys { keys, times, .. } = &step {
                total += keys.len() as u64 * u64::from(*times);
                if total > MAX_KEYS {
                    return Err(format!(
                        "'{}' makes the script longer than {MAX_KEYS} keys",
                        shown(&rest[..rest.len() - after.len()])
                    ));
                }
            }
            steps.push(step);
            rest = after;
        }
        if total == 0 {
            return Err("the script sends no key (e.g. 'j*100@20ms' or '<Down>*50@30ms')".into());
        }
        Ok(KeyScript {
            steps,
            source: text.trim().to_owned(),
        })
    }
}

/// A word as the error shows it: control bytes escaped, at most 40 characters.
fn shown(word: &str) -> String {
    let mut out: String = word.chars().take(40).flat_map(char::escape_debug).collect();
    if word.chars().count() > 40 {
        out.push('…');
    }
    out
}

/// One word from the start of `text`: an atom (literal characters or one `<name>`), then
/// `*N` and `@D`; returns the step and what follows.
fn word(text: &str) -> Result<(Step, &str), String> {
    let bad = |word: &str, why: String| format!("'{}': {why}", shown(word));
    let (keys, mut rest) = if let Some(inner) = text.strip_prefix('<') {
        let Some(close) = inner.find('>') else {
            return Err(bad(
                text,
                "a '<' without its '>' (a literal '<' is <lt>)".into(),
            ));
        };
        let name = &inner[..close];
        let rest = &inner[close + 1..];
        let whole = &text[..close + 2];
        if let Some(pause) = name.strip_prefix("wait ") {
            let pause = pace(pause.trim()).map_err(|why| bad(whole, why))?;
            return Ok((Step::Pause(pause), rest));
        }
        if let Some(paste) = name.strip_prefix("paste ") {
            check_printable(paste).map_err(|why| bad(whole, why))?;
            (vec![Key::Paste(paste.to_owned())], rest)
        } else {
            (vec![named(name).map_err(|why| bad(whole, why))?], rest)
        }
    } else {
        let end = text
            .find(|c: char| c.is_whitespace() || matches!(c, '<' | '*' | '@'))
            .unwrap_or(text.len());
        if end == 0 {
            let c = text.chars().next().unwrap_or('*');
            return Err(bad(
                text,
                format!("'{c}' must follow a key (a literal '{c}' is <paste {c}>)"),
            ));
        }
        let literal = &text[..end];
        check_printable(literal).map_err(|why| bad(literal, why))?;
        (literal.chars().map(Key::Char).collect(), &text[end..])
    };
    let atom = &text[..text.len() - rest.len()];
    let mut times = 1;
    if let Some(after) = rest.strip_prefix('*') {
        let digits = after
            .find(|c: char| !c.is_ascii_digit())
            .unwrap_or(after.len());
        times = after[..digits]
            .parse::<u32>()
            .ok()
            .filter(|n| (1..=MAX_REPEAT).contains(n))
            .ok_or_else(|| {
                bad(
                    &text[..text.len() - after.len() + digits.max(1).min(after.len())],
                    format!("a repeat is *N with N from 1 to {MAX_REPEAT}"),
                )
            })?;
        rest = &after[digits..];
    }
    let mut every = Duration::ZERO;
    if let Some(after) = rest.strip_prefix('@') {
        let end = after
            .find(|c: char| c.is_whitespace() || c == '<')
            .unwrap_or(after.len());
        every =
            pace(&after[..end]).map_err(|why| bad(&format!("{atom}@{}", &after[..end]), why))?;
        rest = &after[end..];
    }
    // After a repeat or a pace the word is over: `j*3x` is a typo, not `j*3 x`.
    let modified = rest.len() < text.len() - atom.len();
    if let Some(c) = rest
        .chars()
        .next()
        .filter(|c| modified && !c.is_whitespace() && *c != '<')
    {
        return Err(bad(
            &text[..text.len() - rest.len() + c.len_utf8()],
            "after a key come *N, @D, a space or the next <key>".into(),
        ));
    }
    Ok((Step::Keys { keys, times, every }, rest))
}

fn check_printable(text: &str) -> Result<(), String> {
    match text.chars().find(|c| c.is_control()) {
        Some(c) => Err(format!(
            "holds the control byte {:?}; name it instead (<Enter>, <Tab>, <Esc>, <C-x>)",
            c
        )),
        None => Ok(()),
    }
}

/// `<name>` without its brackets.
fn named(name: &str) -> Result<Key, String> {
    let unknown = || format!("unknown key; known: {}", names());
    if let Some((_, key)) = NAMES.iter().find(|(n, _)| n.eq_ignore_ascii_case(name)) {
        return Ok(Key::Named(*key));
    }
    if let Some(n) = name
        .strip_prefix(['F', 'f'])
        .and_then(|n| n.parse::<u8>().ok())
        .filter(|n| (1..=12).contains(n))
    {
        return Ok(Key::Named(Named::F(n)));
    }
    let mut chars = name.chars();
    let (prefix, c, extra) = (chars.next(), chars.nth(1), chars.next());
    let dash = name.chars().nth(1) == Some('-');
    match (prefix, dash, c, extra) {
        (Some('C' | 'c'), true, Some(c), None) => match c.to_ascii_uppercase() {
            c @ ('@'..='_') => Ok(Key::Ctrl(c as u8 - 0x40)),
            '?' => Ok(Key::Ctrl(0x7f)),
            ' ' => Ok(Key::Ctrl(0)),
            _ => Err(format!(
                "<C-{c}> is no control key: C-a..C-z, C-@, C-[, C-\\, C-], C-^, C-_, C-?"
            )),
        },
        (Some('M' | 'm' | 'A' | 'a'), true, Some(c), None) if !c.is_control() => Ok(Key::Alt(c)),
        _ => Err(unknown()),
    }
}

/// A pause: `15ms`, `0.5s`, `500us`; zero to [`MAX_PAUSE`].
pub fn pace(text: &str) -> Result<Duration, String> {
    let expected = || {
        format!(
            "expected a pause like 15ms, 0.5s or 500us, at most {} s",
            MAX_PAUSE.as_secs()
        )
    };
    let (number, scale) = if let Some(n) = text.strip_suffix("ms") {
        (n, 1e-3)
    } else if let Some(n) = text.strip_suffix("us") {
        (n, 1e-6)
    } else if let Some(n) = text.strip_suffix('s') {
        (n, 1.0)
    } else {
        return Err(expected());
    };
    number
        .parse::<f64>()
        .ok()
        .map(|n| n * scale)
        .filter(|s| s.is_finite() && *s >= 0.0 && *s <= MAX_PAUSE.as_secs_f64())
        .map(Duration::from_secs_f64)
        .ok_or_else(expected)
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_typed_key_is_named_by_kind_never_by_what_was_typed() {
        use super::typed_kind;
        for (bytes, kind) in [
            (&b"\x1b[B"[..], "<Down>"),
            (b"\x1bOB", "<Down>"),
            (b"\x1b[6~", "<PageDown>"),
            (b"\x1bOP", "<F1>"),
            (b"\x1b[15~", "<F5>"),
            (b"\r", "<Enter>"),
            (b"\x03", "<C-c>"),
            (b"\x1b", "<Esc>"),
            (b"s3cret", "text"),
            ("é".as_bytes(), "text"),
            (b"\x1bx", "<M-text>"),
            (b"\x1b[200~pasted\x1b[201~", "<paste>"),
            (b"\x1b[?1;2c", "other"),
        ] {
            assert_eq!(typed_kind(bytes), kind, "{bytes:?}");
        }
    }

    use super::*;

    fn keys(script: &str, modes: KeyModes) -> Vec<u8> {
        let script = KeyScript::parse(script).unwrap();
        let (_, timeline) = script.timeline();
        timeline.iter().flat_map(|(k, _)| k.bytes(modes)).collect()
    }

    #[test]
    fn words_repeat_and_pace() {
        let script = KeyScript::parse("j*3@15ms <PageDown>*2@30ms <wait 500ms> hi<Enter>").unwrap();
        assert_eq!(script.len(), 3 + 2 + 3);
        let (before, timeline) = script.timeline();
        assert_eq!(before, Duration::ZERO);
        let pauses: Vec<u64> = timeline.iter().map(|(_, d)| d.as_millis() as u64).collect();
        assert_eq!(pauses, [15, 15, 15, 30, 530, 0, 0, 0]);
        assert_eq!(
            keys(
                "j*3@15ms <PageDown>*2@30ms <wait 500ms> hi<Enter>",
                KeyModes::default()
            ),
            b"jjj\x1b[6~\x1b[6~hi\r"
        );
        let (before, _) = KeyScript::parse("<wait 1s> q").unwrap().timeline();
        assert_eq!(before, Duration::from_secs(1));
    }

    #[test]
    fn cursor_keys_follow_the_programs_mode_and_pastes_are_bracketed_when_asked() {
        let app = KeyModes {
            application_cursor: true,
            bracketed_paste: true,
        };
        assert_eq!(
            keys("<Up><Down><Right><Left>", KeyModes::default()),
            b"\x1b[A\x1b[B\x1b[C\x1b[D"
        );
        assert_eq!(
            keys("<Up><down><HOME><End>", app),
            b"\x1bOA\x1bOB\x1bOH\x1bOF"
        );
        assert_eq!(keys("<paste a b>", app), b"\x1b[200~a b\x1b[201~");
        assert_eq!(keys("<paste a b>", KeyModes::default()), b"a b");
        assert_eq!(
            keys(
                "<C-c><C-[><M-f><F1><F5><F12><Esc><Space><lt><Tab><BackTab><Backspace>",
                app
            ),
            b"\x03\x1b\x1bf\x1bOP\x1b[15~\x1b[24~\x1b \x3c\t\x1b[Z\x7f"
        );
        assert_eq!(keys("é日", app), "é日".as_bytes());
        assert_eq!(keys("<Down>x<Up>", app), b"\x1bOBx\x1bOA");
    }

    #[test]
    fn names_read_back_as_written() {
        let script = KeyScript::parse("<down> <c-x> <M-f> <F3> q <paste ab>").unwrap();
        let (_, timeline) = script.timeline();
        let labels: Vec<String> = timeline.iter().map(|(k, _)| k.to_string()).collect();
        assert_eq!(
            labels,
            ["<Down>", "<C-x>", "<M-f>", "<F3>", "q", "<paste 2 chars>"]
        );
    }

    #[test]
    fn a_hostile_script_is_refused_naming_the_word() {
        for (script, names) in [
            ("j <Foo>", "'<Foo>': unknown key"),
            ("j*0", "'j*0'"),
            ("j*1000000", "'j*1000000'"),
            ("j*x", "'j*x'"),
            ("j@fast", "'j@fast'"),
            ("j@2h", "'j@2h'"),
            ("a\u{7}b", "control byte"),
            ("<Down", "without its '>'"),
            ("*3", "must follow a key"),
            ("<wait forever>", "'<wait forever>'"),
            ("<wait 1s>", "sends no key"),
            ("", "sends no key"),
            ("<C-1>", "no control key"),
            (
                "j*100000 k*100000 l*100000 m*100000 n*100000 o*100000 p*100000 q*100000 r*100000 s*100000 t*2",
                "longer than",
            ),
            ("j*3x", "'j*3x'"),
            ("j@5msx", "'j@5msx'"),
        ] {
            let error = KeyScript::parse(script).unwrap_err();
            assert!(error.contains(names), "{script:?}: {error}");
            assert!(
                !error.contains('\u{7}') && !error.contains('\n'),
                "{error:?}"
            );
        }
    }
}
