//! The program a launcher starts, read from its words before anything runs: `env`, a shell's
//! `-c` script, and the launchers that only change how a program runs (`nice`, `setsid`,
//! `nohup`), in a chain. What the observer must see is that program, not its launcher: a
//! dynamic `env` that execs a static or Go program leaves the preload nothing to load into.

use std::ffi::{OsStr, OsString};
use std::path::{Path, PathBuf};

/// At most this many launchers are followed (`env sh -c 'exec env …'`).
const CHAIN: usize = 8;

/// The program `program` with `args` ends up running, as far as its words say; `program` where
/// it launches nothing it can be read from (or a script too complex to read: a pipeline, a
/// loop, a variable).
pub fn launched(program: &Path, args: &[OsString]) -> PathBuf {
    let mut now = (program.to_owned(), args.to_vec());
    for _ in 0..CHAIN {
        match next(&now.0, &now.1) {
            Some(then) => now = then,
            None => break,
        }
    }
    now.0
}

/// What one launcher starts, found on PATH, with its words.
fn next(program: &Path, args: &[OsString]) -> Option<(PathBuf, Vec<OsString>)> {
    let name = program.file_name()?.to_str()?;
    let words: Vec<OsString> = match name {
        "env" => env_command(args)?,
        "sh" | "dash" | "bash" => shell_command(args)?,
        "nice" | "setsid" | "nohup" => skip_options(args),
        _ => return None,
    };
    let (first, rest) = words.split_first()?;
    let found = flushlab_core::files::find_program(first.as_ref())?;
    Some((found, rest.to_vec()))
}

/// `env [-i] [-u NAME] [--] [NAME=VALUE]… PROG ARGS…`: PROG and its words.
fn env_command(args: &[OsString]) -> Option<Vec<OsString>> {
    let mut words = args.iter().peekable();
    while let Some(word) = words.peek() {
        let text = word.to_str()?;
        if text == "-u" || text == "--unset" {
            words.next();
            words.next();
        } else if text == "--" {
            words.next();
            break;
        } else if text.starts_with('-') && text != "-" {
            // -i, -0, -v, --ignore-environment; -S splits a string: not read.
            if text.starts_with("-S") || text.starts_with("--split-string") {
                return None;
            }
            words.next();
        } else {
            break;
        }
    }
    let rest: Vec<OsString> = words
        .skip_while(|w| w.to_str().is_some_and(|t| t.contains('=')))
        .cloned()
        .collect();
    (!rest.is_empty()).then_some(rest)
}

/// `sh -c SCRIPT`, where the script is one simple command (`exec` before it, assignments before
/// it): its words, split on blanks. Anything a shell would read differently (quotes, variables,
/// `;`, `|`, `&&`, redirections…) is not read.
fn shell_command(args: &[OsString]) -> Option<Vec<OsString>> {
    let [flag, script, ..] = args else {
        return None;
    };
    if flag != OsStr::new("-c") {
        return None;
    }
    let script = script.to_str()?;
    let special = |c: char| "'\"`$;|&<>(){}[]*?~#\\\n".contains(c);
    if script.contains(special) {
        return None;
    }
    let words: Vec<OsString> = script
        .split_whitespace()
        .skip_while(|w| *w == "exec" || w.contains('='))
        .map(OsString::from)
        .collect();
    (!words.is_empty()).then_some(words)
}

/// A launcher's own options (`nice -n 5`, `setsid -w`) before the program.
fn skip_options(args: &[OsString]) -> Vec<OsString> {
    let mut words = args.iter().peekable();
    while let Some(word) = words.peek() {
        match word.to_str() {
            Some("-n") => {
                words.next();
                words.next();
            }
            Some("--") => {
                words.next();
                break;
            }
            Some(text) if text.starts_with('-') => {
                words.next();
            }
            _ => break,
        }
    }
    words.cloned().collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn launched_by(words: &[&str]) -> PathBuf {
        let program = flushlab_core::files::find_program(words[0].as_ref()).unwrap();
        let args: Vec<OsString> = words[1..].iter().map(OsString::from).collect();
        launched(&program, &args)
    }

    fn found(name: &str) -> PathBuf {
        flushlab_core::files::find_program(name.as_ref()).unwrap()
    }

    #[test]
    fn env_and_shells_are_followed_to_the_program_they_start() {
        let cat = found("cat");
        assert_eq!(launched_by(&["env", "cat"]), cat);
        assert_eq!(launched_by(&["env", "-i", "A=1", "B=2", "cat", "-n"]), cat);
        assert_eq!(launched_by(&["env", "-u", "HOME", "--", "cat"]), cat);
        assert_eq!(launched_by(&["sh", "-c", "exec cat -n"]), cat);
        assert_eq!(launched_by(&["sh", "-c", "A=1 cat"]), cat);
        assert_eq!(launched_by(&["env", "sh", "-c", "exec env cat"]), cat);
        assert_eq!(launched_by(&["nice", "-n", "5", "setsid", "cat"]), cat);
    }

    #[test]
    fn what_a_shell_would_read_differently_is_not_followed() {
        let sh = found("sh");
        assert_eq!(launched_by(&["sh", "-c", "cat | tee x"]), sh);
        assert_eq!(launched_by(&["sh", "-c", "exec \"$X\""]), sh);
        assert_eq!(launched_by(&["sh", "-c", "cat; cat"]), sh);
        assert_eq!(launched_by(&["sh", "script.sh"]), sh);
        assert_eq!(launched_by(&["env", "-S", "cat -n"]), found("env"));
        // A program that is not on PATH: the launcher stays.
        assert_eq!(launched_by(&["env", "no-such-program-here"]), found("env"));
        let cat = found("cat");
        assert_eq!(launched_by(&["cat", "-c", "sh"]), cat);
    }
}
