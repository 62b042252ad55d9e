//! How a run of any subcommand ended, and the one place that maps it to an exit status, as
//! ripgrep maps a broken pipe once in main. Subcommands return an [`Outcome`] (or an error,
//! which is [`Outcome::Failed`] once printed); only `main` turns it into a process exit code.

use std::io;
use std::process::ExitCode;

/// Why a run stopped.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// It did what it was asked: the duration is over, every run is done.
    Finished,
    /// The user asked it to stop (`q`, Esc): as good an ending as [`Outcome::Finished`].
    Quit,
    /// Bad input, already explained on stderr in one line.
    BadInput,
    /// The reader of the measured stream went away (EIO from a closed pty, EPIPE from a closed
    /// pipe).
    ReaderGone,
    /// Something failed, already explained on stderr (e.g. a bench run that crashed).
    Failed,
    /// A termination signal (SIGINT, SIGTERM, SIGHUP, SIGQUIT) ended it in order.
    Signal(usize),
    /// The program `flushlab wrap` was to run does not exist: 127, as a shell says it.
    NotFound,
    /// The program `flushlab wrap` ran exited with this status (128+N if signal N ended it):
    /// wrap passes it on, as `time` and `strace` do.
    Exited(i32),
}

impl Outcome {
    /// 0 done, 1 error, 2 bad input, 3 reader gone, 128+N signal N, 127 no such command, a
    /// wrapped program's own status. (101, a panic, is Rust's.)
    pub fn exit_code(self) -> u8 {
        match self {
            Outcome::Finished | Outcome::Quit => 0,
            Outcome::Failed => 1,
            Outcome::BadInput => 2,
            Outcome::ReaderGone => 3,
            Outcome::Signal(n) => 128u8.saturating_add(u8::try_from(n).unwrap_or(127)),
            Outcome::NotFound => 127,
            Outcome::Exited(code) => u8::try_from(code).unwrap_or(1),
        }
    }

    /// The outcome of a run that a signal may have cut short: the signal wins.
    pub fn or_signal(self, signal: usize) -> Outcome {
        match signal {
            0 => self,
            n => Outcome::Signal(n),
        }
    }

    /// `finished`, `quit`, `signal:15`: the reports' `outcome` field.
    pub fn describe(self) -> String {
        match self {
            Outcome::Finished => "finished".into(),
            Outcome::Quit => "quit".into(),
            Outcome::BadInput => "bad-input".into(),
            Outcome::ReaderGone => "reader-gone".into(),
            Outcome::Failed => "failed".into(),
            Outcome::Signal(n) => format!("signal:{n}"),
            Outcome::NotFound => "not-found".into(),
            Outcome::Exited(code) => format!("exited:{code}"),
        }
    }
}

impl From<Outcome> for ExitCode {
    fn from(outcome: Outcome) -> ExitCode {
        ExitCode::from(outcome.exit_code())
    }
}

/// Tells the user on stderr, `flushlab: ` first. Never panics (as `eprintln!` does when stderr
/// is closed or full): a message nobody can read is dropped, and the exit status still speaks.
pub fn complain(message: &str) {
    use std::io::Write;
    let _ = writeln!(io::stderr(), "flushlab: {message}");
}

/// Writes a result (a table, a JSON document) to stdout. A reader that went away is an error
/// the caller returns, which `main` maps to [`Outcome::ReaderGone`], not a panic as `print!`'s.
pub fn print(bytes: &[u8]) -> io::Result<()> {
    use std::io::Write;
    let mut out = io::stdout().lock();
    out.write_all(bytes)?;
    out.flush()
}

/// EIO from a hung-up terminal or EPIPE from a closed pipe: the reader is gone.
pub fn reader_gone(e: &io::Error) -> bool {
    e.kind() == io::ErrorKind::BrokenPipe
        || e.raw_os_error() == Some(rustix::io::Errno::IO.raw_os_error())
}

/// Whether an error (of any layer) was caused by the reader going away.
pub fn reader_gone_in(e: &anyhow::Error) -> bool {
    e.chain()
        .filter_map(|cause| cause.downcast_ref::<io::Error>())
        .any(reader_gone)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_table_of_exit_codes() {
        let codes: Vec<u8> = [
            Outcome::Finished,
            Outcome::Quit,
            Outcome::Failed,
            Outcome::BadInput,
            Outcome::ReaderGone,
            Outcome::Signal(2),
            Outcome::Signal(15),
            Outcome::Signal(1000),
        ]
        .map(Outcome::exit_code)
        .to_vec();
        assert_eq!(codes, [0, 0, 1, 2, 3, 130, 143, 255]);
        assert_eq!(Outcome::Quit.or_signal(0), Outcome::Quit);
        assert_eq!(Outcome::Quit.or_signal(15), Outcome::Signal(15));
    }

    #[test]
    fn a_broken_pipe_anywhere_in_the_chain_is_a_reader_gone() {
        let e = anyhow::Error::from(io::Error::from(io::ErrorKind::BrokenPipe)).context("writing");
        assert!(reader_gone_in(&e));
        assert!(!reader_gone_in(&anyhow::anyhow!("other")));
    }
}
