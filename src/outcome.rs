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
/// the caller returns, marked [`ReaderGone`], which `main` maps to [`Outcome::ReaderGone`], not
/// a panic as `print!`'s.
pub fn print(bytes: &[u8]) -> io::Result<()> {
    use std::io::Write;
    let mut out = io::stdout().lock();
    out.write_all(bytes)
        .and_then(|()| out.flush())
        .map_err(mark_reader_gone)
}

/// The reader of flushlab's own output went away while flushlab wrote to it. Only a write to
/// stdout or stderr is marked so: the same errno from reading a file (`/proc/self/mem` gives
/// EIO) is an input that could not be read, not a reader that left.
#[derive(Debug)]
pub struct ReaderGone(io::Error);

impl std::fmt::Display for ReaderGone {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "the reader went away: {}", self.0)
    }
}

impl std::error::Error for ReaderGone {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        Some(&self.0)
    }
}

/// Marks an error from writing flushlab's own stdout or stderr as [`ReaderGone`] when it is one.
pub fn mark_reader_gone(e: io::Error) -> io::Error {
    if reader_gone(&e) {
        io::Error::new(e.kind(), ReaderGone(e))
    } else {
        e
    }
}

/// EIO from a hung-up terminal or EPIPE from a closed pipe: the reader is gone.
pub fn reader_gone(e: &io::Error) -> bool {
    e.kind() == io::ErrorKind::BrokenPipe
        || e.raw_os_error() == Some(rustix::io::Errno::IO.raw_os_error())
}

/// Whether an error (of any layer) was a write to flushlab's own output whose reader went away
/// (marked by [`mark_reader_gone`]).
pub fn reader_gone_in(e: &anyhow::Error) -> bool {
    e.chain().any(|cause| {
        cause.is::<ReaderGone>()
            || cause
                .downcast_ref::<io::Error>()
                .and_then(io::Error::get_ref)
                .is_some_and(|inner| inner.is::<ReaderGone>())
    })
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
    fn only_a_write_to_our_own_output_is_a_reader_gone() {
        let marked = mark_reader_gone(io::Error::from(io::ErrorKind::BrokenPipe));
        assert!(reader_gone_in(
            &anyhow::Error::from(marked).context("writing")
        ));
        let eio = || io::Error::from_raw_os_error(rustix::io::Errno::IO.raw_os_error());
        assert!(reader_gone_in(&anyhow::Error::from(
            mark_reader_gone(eio())
        )));
        // The same errno from reading an input file is that file's error.
        assert!(!reader_gone_in(
            &anyhow::Error::from(eio()).context("reading /proc/self/mem")
        ));
        assert!(!reader_gone_in(&anyhow::anyhow!("other")));
    }
}
