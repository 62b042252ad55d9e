//! CMD's environment kept off every command line: a terminal starts CMD through
//! `flushlab env-file --file F -- CMD…`, and the variables wrap passes on are in F, a file
//! only wrap's user may read (0600 in a 0700 scratch directory), removed as it is read.
//!
//! `/proc/PID/cmdline` is readable by every user on the machine; `/proc/PID/environ` only by
//! the process's own user. `env -- NAME=VALUE… CMD` would put a developer's API tokens where
//! anyone could read them for the whole run.

use std::ffi::OsString;
use std::io::Write as _;
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

/// The hidden subcommand's name.
pub const SUBCOMMAND: &str = "env-file";

impl EnvFileArgs {
    /// The words after flushlab's own that start the loader: what the binary's parser reads
    /// back as these very arguments (a test round-trips it).
    pub fn argv(&self) -> Vec<OsString> {
        let mut words: Vec<OsString> = vec![
            SUBCOMMAND.into(),
            "--file".into(),
            self.file.clone().into(),
            "--".into(),
        ];
        words.extend(self.command.iter().cloned());
        words
    }
}

/// The most a file of variables may hold: far above any environment the kernel lets a program
/// start with (ARG_MAX is 2 MiB), so that a wrong file is refused, not read whole.
const AT_MOST: u64 = 4 << 20;

/// `flushlab env-file`'s arguments.
#[derive(Debug, PartialEq)]
#[cfg_attr(feature = "clap", derive(clap::Args))]
pub struct EnvFileArgs {
    /// The file of variables (`NAME=VALUE`, each ended by a NUL), removed once read.
    #[cfg_attr(feature = "clap", arg(long))]
    pub file: PathBuf,
    /// CMD, and its arguments.
    #[cfg_attr(
        feature = "clap",
        arg(required = true, trailing_var_arg = true, allow_hyphen_values = true)
    )]
    pub command: Vec<OsString>,
}

/// Writes `vars` into a new file `name` in `dir` (which must be private), readable by its
/// owner alone, and returns the words that start `program` with them: wrap's own executable
/// as [`SUBCOMMAND`], then `program` and `args`.
pub fn words(
    (dir, name): (&Path, &str),
    vars: impl IntoIterator<Item = (OsString, OsString)>,
    program: &Path,
    args: &[OsString],
) -> std::io::Result<Vec<OsString>> {
    let path = dir.join(name);
    let mut text = Vec::new();
    for (name, value) in vars {
        if name.is_empty() || name.as_bytes().contains(&b'=') {
            continue;
        }
        text.extend_from_slice(name.as_bytes());
        text.push(b'=');
        text.extend_from_slice(value.as_bytes());
        text.push(0);
    }
    std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(&path)?
        .write_all(&text)?;
    let loader = EnvFileArgs {
        file: path,
        command: std::iter::once(program.into())
            .chain(args.iter().cloned())
            .collect(),
    };
    let mut words = vec![std::env::current_exe()?.into_os_string()];
    words.extend(loader.argv());
    Ok(words)
}

/// The variables in `text`, as [`words`] wrote them.
fn parse(text: &[u8]) -> Vec<(OsString, OsString)> {
    text.split(|&b| b == 0)
        .filter_map(|pair| {
            let at = pair.iter().position(|&b| b == b'=')?;
            (at > 0).then(|| {
                (
                    OsString::from_vec(pair[..at].to_vec()),
                    OsString::from_vec(pair[at + 1..].to_vec()),
                )
            })
        })
        .collect()
}

/// The subcommand: read the variables, remove their file, become CMD with them added to this
/// process's environment (the terminal's: its `TERM`, its window). Returns only when it could
/// not.
pub fn run(args: &EnvFileArgs) -> std::io::Result<std::convert::Infallible> {
    use std::io::Read as _;
    use std::os::unix::process::CommandExt;
    let shown = |path: &Path| flushlab_core::units::printable(&path.to_string_lossy());
    let mut text = Vec::new();
    std::fs::File::open(&args.file)
        .and_then(|file| file.take(AT_MOST + 1).read_to_end(&mut text))
        .map_err(|e| {
            std::io::Error::new(e.kind(), format!("env-file: '{}': {e}", shown(&args.file)))
        })?;
    if text.len() as u64 > AT_MOST {
        return Err(std::io::Error::other(format!(
            "env-file: '{}' holds more than {AT_MOST} bytes",
            shown(&args.file)
        )));
    }
    let _ = std::fs::remove_file(&args.file);
    let error = std::process::Command::new(&args.command[0])
        .args(&args.command[1..])
        .envs(parse(&text))
        .exec();
    Err(std::io::Error::new(
        error.kind(),
        format!(
            "env-file: '{}': {error}",
            flushlab_core::units::printable(&args.command[0].to_string_lossy())
        ),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_variables_are_in_the_file_alone() {
        let scratch = flushlab_core::files::Scratch::new("flushlab-env-file-test").unwrap();
        let vars = [
            ("SECRET".into(), "planted value".into()),
            ("EMPTY".into(), OsString::new()),
            ("A=B".into(), "a name holding '=' is no variable".into()),
            ("MULTI".into(), "line\nbreak=and equals".into()),
        ];
        let words = words(
            (scratch.path(), "cmd.env"),
            vars,
            Path::new("/bin/prog"),
            &["--flag".into()],
        )
        .unwrap();
        assert!(
            words
                .iter()
                .all(|w| !w.to_string_lossy().contains("planted")),
            "{words:?}"
        );
        assert_eq!(words[1], SUBCOMMAND);
        assert_eq!(&words[words.len() - 2..], ["/bin/prog", "--flag"]);
        let file = scratch.path().join("cmd.env");
        use std::os::unix::fs::PermissionsExt;
        assert_eq!(
            std::fs::metadata(&file).unwrap().permissions().mode() & 0o777,
            0o600
        );
        let read = parse(&std::fs::read(&file).unwrap());
        assert_eq!(
            read,
            [
                ("SECRET".into(), "planted value".into()),
                ("EMPTY".into(), OsString::new()),
                ("MULTI".into(), "line\nbreak=and equals".into()),
            ]
        );
    }
}
