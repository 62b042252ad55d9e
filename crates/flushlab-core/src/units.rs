//! Numbers as flushlab reads and writes them: sizes, durations, capacities and rates parsed from
//! flags (and completed by a shell: [`Completed`]), and counts, bytes and shares formatted for
//! people. A leaf: it imports nothing of the crate, so every room can use it without tying
//! itself to another.

use std::time::Duration;

/// A flag's parser with the names a shell completes it with: `parse` reads the value (and
/// makes the errors), `names` lists what `flushlab completions` offers (`--modes`, `--reader`
/// take free-form values, so clap cannot know them). With the `clap` feature it is a clap
/// value parser.
#[derive(Clone, Copy)]
pub struct Completed<T> {
    pub parse: fn(&str) -> Result<T, String>,
    pub names: &'static [&'static str],
}

#[cfg(feature = "clap")]
impl<T: Clone + Send + Sync + 'static> clap::builder::TypedValueParser for Completed<T> {
    type Value = T;

    fn parse_ref(
        &self,
        cmd: &clap::Command,
        arg: Option<&clap::Arg>,
        value: &std::ffi::OsStr,
    ) -> Result<T, clap::Error> {
        self.parse.parse_ref(cmd, arg, value)
    }

    fn possible_values(
        &self,
    ) -> Option<Box<dyn Iterator<Item = clap::builder::PossibleValue> + '_>> {
        Some(Box::new(
            self.names
                .iter()
                .map(|name| clap::builder::PossibleValue::new(*name)),
        ))
    }
}

/// The smallest and largest block capacity the `+`/`-` keys and `--capacity` accept.
pub const MIN_CAPACITY: usize = 64;
pub const MAX_CAPACITY: usize = 1 << 20;
/// The frame size when the measured stream is not a terminal.
pub const DEFAULT_SIZE: (u16, u16) = (200, 60);
const MAX_SIDE: u16 = 4096;

pub fn parse_size(text: &str) -> Result<(u16, u16), String> {
    let bad = || format!("expected COLSxROWS, each 1..={MAX_SIDE}, e.g. 200x60");
    let (cols, rows) = text.trim().split_once(['x', 'X']).ok_or_else(bad)?;
    let side = |s: &str| {
        s.trim()
            .parse::<u16>()
            .ok()
            .filter(|n| (1..=MAX_SIDE).contains(n))
    };
    Ok((side(cols).ok_or_else(bad)?, side(rows).ok_or_else(bad)?))
}

/// On or off, as people write it in environment variables.
pub fn parse_switch(text: &str) -> Result<bool, String> {
    match text.trim().to_ascii_lowercase().as_str() {
        "1" | "true" | "yes" | "on" => Ok(true),
        "0" | "false" | "no" | "off" => Ok(false),
        _ => Err("expected one of: 1, 0, true, false, yes, no, on, off".to_owned()),
    }
}

/// A command line's words as a POSIX shell splits them (no expansions): blanks between words,
/// `'…'` taken as it is, `"…"` with `\` before `"`, `\`, `$` and `` ` ``, `\` before any
/// character outside quotes. `sh -c 'echo hi'` is three words.
pub fn parse_words(text: &str) -> Result<Vec<String>, String> {
    let shown = || printable(text);
    let mut words = Vec::new();
    let mut word: Option<String> = None;
    let mut chars = text.chars();
    while let Some(c) = chars.next() {
        match c {
            ' ' | '\t' | '\n' => words.extend(word.take()),
            '\'' => {
                let w = word.get_or_insert_with(String::new);
                loop {
                    match chars.next() {
                        Some('\'') => break,
                        Some(c) => w.push(c),
                        None => return Err(format!("'{}': a ' is never closed", shown())),
                    }
                }
            }
            '"' => {
                let w = word.get_or_insert_with(String::new);
                loop {
                    match chars.next() {
                        Some('"') => break,
                        Some('\\') => match chars.next() {
                            Some(c @ ('"' | '\\' | '$' | '`')) => w.push(c),
                            Some(c) => {
                                w.push('\\');
                                w.push(c);
                            }
                            None => return Err(format!("'{}': a \" is never closed", shown())),
                        },
                        Some(c) => w.push(c),
                        None => return Err(format!("'{}': a \" is never closed", shown())),
                    }
                }
            }
            '\\' => match chars.next() {
                Some(c) => word.get_or_insert_with(String::new).push(c),
                None => return Err(format!("'{}': a \\ ends it", shown())),
            },
            c => word.get_or_insert_with(String::new).push(c),
        }
    }
    words.extend(word);
    if words.is_empty() {
        return Err("no command: give the program and its arguments, as one word".to_owned());
    }
    Ok(words)
}

/// A share: `5%` or `0.05`, from 0 up to (not including) 1.
pub fn parse_share(text: &str) -> Result<f64, String> {
    let value = match text.strip_suffix('%') {
        Some(percent) => percent.trim().parse::<f64>().map(|p| p / 100.0),
        None => text.trim().parse::<f64>(),
    };
    match value {
        Ok(v) if (0.0..1.0).contains(&v) => Ok(v),
        _ => Err(format!(
            "'{}' is no share: a percentage from 0 to 99 (5%) or a fraction (0.05)",
            printable(text)
        )),
    }
}

pub fn parse_duration(text: &str) -> Result<Duration, String> {
    text.trim()
        .parse::<f64>()
        .ok()
        .filter(|s| s.is_finite() && *s > 0.0 && *s <= 1e6)
        .map(Duration::from_secs_f64)
        .ok_or_else(|| "expected a number of seconds greater than 0, e.g. 5 or 0.5".to_owned())
}

/// The lowest frame rate `--fps-cap` takes: one frame a minute. Below that a frame budget would
/// outlast any patience (and `1e-300` would not fit a `Duration` at all).
pub const MIN_FPS: f64 = 1.0 / 60.0;

pub fn parse_fps(text: &str) -> Result<f64, String> {
    text.trim()
        .parse::<f64>()
        .ok()
        .filter(|f| f.is_finite() && (MIN_FPS..=1e6).contains(f))
        .ok_or_else(|| {
            "expected frames per second from 0.017 (one a minute) to 1000000, e.g. 60".to_owned()
        })
}

pub fn parse_capacity(text: &str) -> Result<usize, String> {
    let bad = || {
        format!(
            "expected a number of bytes from {MIN_CAPACITY} to {MAX_CAPACITY} (1MiB), e.g. 8192 or 64KiB"
        )
    };
    let text = text.trim();
    let split = text
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(text.len());
    let (number, unit) = text.split_at(split);
    let scale = match unit.trim().to_ascii_lowercase().as_str() {
        "" | "b" => 1,
        "k" | "kib" | "kb" => 1 << 10,
        "m" | "mib" | "mb" => 1 << 20,
        _ => return Err(bad()),
    };
    number
        .parse::<usize>()
        .ok()
        .and_then(|n| n.checked_mul(scale))
        .filter(|n| (MIN_CAPACITY..=MAX_CAPACITY).contains(n))
        .ok_or_else(bad)
}

/// `34,712`: counts with thousands separators; fractions only below 10, two decimals below 1.
pub fn count(v: f64) -> String {
    if !v.is_finite() {
        return "–".to_owned();
    }
    if v < 1.0 {
        return format!("{v:.2}");
    }
    if v < 10.0 {
        return format!("{v:.1}");
    }
    let digits = format!("{:.0}", v);
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// A number someone wrote, as short as it reads: `1`, `-0.5`, `1e300`, `inf` (for errors that
/// name a value out of range).
pub fn plain(v: f64) -> String {
    if v == 0.0 || !v.is_finite() || (1e-4..1e9).contains(&v.abs()) {
        format!("{v}")
    } else {
        format!("{v:e}")
    }
}

/// `17,935`: a whole number with thousands separators.
pub fn thousands(n: u64) -> String {
    count(n as f64)
        .split('.')
        .next()
        .unwrap_or_default()
        .to_owned()
}

/// `427.0 kB`: decimal units, as the kernel and pv count throughput.
pub fn bytes(v: f64) -> String {
    match v {
        v if v >= 1e6 => format!("{:.2} MB", v / 1e6),
        v if v >= 1e3 => format!("{:.1} kB", v / 1e3),
        // A raw writer's 1.9 bytes a write is the lesson: small sizes keep their decimal.
        v if v < 10.0 && v.fract() != 0.0 => format!("{v:.1} B"),
        v => format!("{v:.0} B"),
    }
}

/// `2.19 ms`, `424 ms`, `1.2 s`: a duration given in milliseconds, three figures at most.
pub fn milliseconds(ms: f64) -> String {
    match ms {
        ms if !ms.is_finite() => "–".to_owned(),
        ms if ms >= 1000.0 => format!("{:.1} s", ms / 1000.0),
        ms if ms >= 100.0 => format!("{ms:.0} ms"),
        ms if ms >= 10.0 => format!("{ms:.1} ms"),
        ms => format!("{ms:.2} ms"),
    }
}

/// `543 ns`, `3.9 µs`, `2.61 ms`: a latency in the unit its size reads best in.
pub fn nanoseconds(ns: u64) -> String {
    match ns {
        ns if ns >= 1_000_000 => milliseconds(ns as f64 / 1e6),
        ns if ns >= 10_000 => format!("{:.0} µs", ns as f64 / 1e3),
        ns if ns >= 1_000 => format!("{:.1} µs", ns as f64 / 1e3),
        ns => format!("{ns} ns"),
    }
}

pub fn percent(share: f64) -> String {
    format!("{:.0}%", share * 100.0)
}

/// `8KiB`, `1MiB`, `96B`: capacities are powers of two in practice.
pub fn format_capacity(bytes: usize) -> String {
    if bytes >= 1 << 20 && bytes.is_multiple_of(1 << 20) {
        format!("{}MiB", bytes >> 20)
    } else if bytes >= 1 << 10 && bytes.is_multiple_of(1 << 10) {
        format!("{}KiB", bytes >> 10)
    } else {
        format!("{bytes}B")
    }
}

/// Text from a file or another program, made safe to print on a terminal: control characters
/// (ESC, BEL, C1 controls, …) become visible `\u{..}` escapes instead of commands. Line breaks
/// stay: they move the cursor, nothing more.
pub fn printable(text: &str) -> String {
    escaped(text, |c| c.is_control() && c != '\n')
}

/// A name from a file someone sent, for one line, a table's cell or a chart's label: every
/// control character escaped, line breaks too.
pub fn one_line(text: &str) -> String {
    escaped(text, char::is_control)
}

fn escaped(text: &str, hostile: fn(char) -> bool) -> String {
    if !text.chars().any(hostile) {
        return text.to_owned();
    }
    text.chars()
        .map(|c| {
            if hostile(c) {
                c.escape_unicode().to_string()
            } else {
                c.to_string()
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn words_split_as_a_shell_splits_them() {
        let words = |t: &str| parse_words(t).unwrap();
        assert_eq!(words("./old --flag  x"), ["./old", "--flag", "x"]);
        assert_eq!(
            words("sh -c 'echo hi; exit 3'"),
            ["sh", "-c", "echo hi; exit 3"]
        );
        assert_eq!(words(r#"a "b \"c\" $d" e\ f"#), ["a", r#"b "c" $d"#, "e f"]);
        assert_eq!(words("''"), [""]);
        for bad in ["'open", "\"open", "", "   ", "tail\\"] {
            let why = parse_words(bad).unwrap_err();
            assert!(!why.contains('\n'), "{why}");
        }
        assert!(!parse_words("'\x1b[31m").unwrap_err().contains('\x1b'));
    }

    #[test]
    fn shares_are_percentages_or_fractions() {
        assert_eq!(parse_share("5%"), Ok(0.05));
        assert_eq!(parse_share("0.1"), Ok(0.1));
        assert_eq!(parse_share("0"), Ok(0.0));
        for bad in ["100%", "1.5", "-1%", "five", ""] {
            assert!(parse_share(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn latencies_read_in_the_unit_of_their_size() {
        assert_eq!(nanoseconds(543), "543 ns");
        assert_eq!(nanoseconds(3_903), "3.9 µs");
        assert_eq!(nanoseconds(43_000), "43 µs");
        assert_eq!(nanoseconds(2_614_817), "2.61 ms");
        assert_eq!(nanoseconds(307_000_000), "307 ms");
    }

    #[test]
    fn sizes() {
        assert_eq!(parse_size("200x60"), Ok((200, 60)));
        assert_eq!(parse_size("80X24"), Ok((80, 24)));
        for bad in ["0x0", "200", "x60", "-1x5", "5000x10", "axb", ""] {
            assert!(parse_size(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn durations() {
        assert_eq!(parse_duration("0.5"), Ok(Duration::from_millis(500)));
        for bad in ["-1", "0", "nan", "inf", "five", ""] {
            assert!(parse_duration(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn milliseconds_read_at_any_magnitude() {
        assert_eq!(milliseconds(2.186), "2.19 ms");
        assert_eq!(milliseconds(42.44), "42.4 ms");
        assert_eq!(milliseconds(424.2), "424 ms");
        assert_eq!(milliseconds(2614.8), "2.6 s");
        assert_eq!(milliseconds(f64::NAN), "–");
    }

    #[test]
    fn frame_rates_fit_a_duration() {
        assert_eq!(parse_fps("60"), Ok(60.0));
        for bad in ["0", "1e-300", "0.01", "-5", "nan", "inf", "2e6"] {
            assert!(parse_fps(bad).is_err(), "{bad}");
        }
        // Every accepted rate has a frame budget that a Duration holds.
        let slowest = parse_fps("0.017").unwrap();
        assert!(Duration::try_from_secs_f64(1.0 / slowest).is_ok());
    }

    #[test]
    fn capacities() {
        assert_eq!(parse_capacity("8192"), Ok(8192));
        assert_eq!(parse_capacity("64KiB"), Ok(65536));
        assert_eq!(parse_capacity("1M"), Ok(1 << 20));
        for bad in [
            "0",
            "63",
            "2MiB",
            "8 parsecs",
            "",
            "-8",
            "99999999999999999999",
        ] {
            assert!(parse_capacity(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn number_formats() {
        assert_eq!(count(34712.4), "34,712");
        assert_eq!(count(1.0), "1.0");
        assert_eq!(count(0.0089), "0.01");
        assert_eq!(count(999.0), "999");
        assert_eq!(count(f64::INFINITY), "–");
        assert_eq!(thousands(0), "0");
        assert_eq!(thousands(7), "7");
        assert_eq!(thousands(1_234_567), "1,234,567");
        assert_eq!(bytes(427_000.0), "427.0 kB");
        assert_eq!(bytes(5_300_000.0), "5.30 MB");
        assert_eq!(percent(0.784), "78%");
        assert_eq!(format_capacity(96), "96B");
        assert_eq!(format_capacity(1 << 20), "1MiB");
    }

    #[test]
    fn control_characters_never_reach_the_terminal() {
        assert_eq!(printable("plain ünïcode"), "plain ünïcode");
        let hostile = "a\x1b]0;pwned\x07b\u{9b}2Jc\r\nnext line";
        let shown = printable(hostile);
        assert!(
            !shown.chars().any(|c| c.is_control() && c != '\n'),
            "{shown}"
        );
        assert!(shown.ends_with("\nnext line"));
        assert!(shown.contains("\\u{1b}") && shown.contains("\\u{9b}"));
    }
}
