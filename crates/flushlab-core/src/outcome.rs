//! How a run of any subcommand ended, and the one place that maps it to an exit status, as
//! ripgrep maps a broken pipe once in main. Subcommands return an [`Outcome`] (or an error,
//! which is [`Outcome::Failed`] once printed); only `main` turns it into a process exit code.

use std::io;
use std::process::ExitCode;
use std::sync::atomic::{AtomicU8, Ordering};

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
    /// The program `flushlab wrap` was to run is a file that may not be executed: 126, as a
    /// shell says it.
    NotExecutable,
    /// The program `flushlab wrap` ran exited with this status (128+N if signal N ended it):
    /// wrap passes it on, as `time` and `strace` do.
    Exited(i32),
    /// `wrap --against`: the new build is slower than the old beyond the threshold (4).
    Slower,
    /// `wrap --against`: the rounds do not say whether the new build is slower, faster or the
    /// same (5).
    Inconclusive,
}

impl Outcome {
    /// 0 done, 1 error, 2 bad input, 3 reader gone, 4 slower and 5 inconclusive (`wrap
    /// --against`), 128+N signal N, 127 no such command, 126 not executable, a wrapped program's
    /// own status. (101, a panic, is Rust's.)
    pub fn exit_code(self) -> u8 {
        match self {
            Outcome::Finished | Outcome::Quit => 0,
            Outcome::Failed => 1,
            Outcome::BadInput => 2,
            Outcome::ReaderGone => 3,
            Outcome::Signal(n) => 128u8.saturating_add(u8::try_from(n).unwrap_or(127)),
            Outcome::NotFound => 127,
            Outcome::NotExecutable => 126,
            Outcome::Exited(code) => u8::try_from(code).unwrap_or(1),
            Outcome::Slower => 4,
            Outcome::Inconclusive => 5,
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
            Outcome::NotExecutable => "not-executable".into(),
            Outcome::Exited(code) => format!("exited:{code}"),
            Outcome::Slower => "slower".into(),
            Outcome::Inconclusive => "inconclusive".into(),
        }
    }
}

impl From<Outcome> for ExitCode {
    fn from(outcome: Outcome) -> ExitCode {
        ExitCode::from(outcome.exit_code())
    }
}

/// A command's flags refused by its plan, before anything runs: the one line that says why,
/// and the outcome it means (bad input, mostly; a program not found; a reader already gone).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Refusal {
    pub outcome: Outcome,
    pub why: String,
}

impl Refusal {
    pub fn bad_input(why: impl Into<String>) -> Refusal {
        Refusal {
            outcome: Outcome::BadInput,
            why: why.into(),
        }
    }

    /// The same refusal, its line led by the command's name (`bench: …`).
    pub fn of(self, command: &str) -> Refusal {
        Refusal {
            why: format!("{command}: {}", self.why),
            ..self
        }
    }

    /// Says why (see [`complain`]) and gives the outcome to end with.
    pub fn tell(self) -> Outcome {
        if !self.why.is_empty() {
            complain(&self.why);
        }
        self.outcome
    }
}

/// A plan's usage error: bad input.
impl From<String> for Refusal {
    fn from(why: String) -> Refusal {
        Refusal::bad_input(why)
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
    write_standard(1, bytes)
}

/// Writes a result for people (a table) to stderr, where stdout carries a machine format
/// (`--export-json -`): the same care as [`print()`].
pub fn print_aside(bytes: &[u8]) -> io::Result<()> {
    write_standard(2, bytes)
}

/// All of `bytes` to fd 1 or 2 through std's handle, flushed; an error is marked as a reader
/// gone, and a stream closed before flushlab started is said so.
fn write_standard(fd: i32, bytes: &[u8]) -> io::Result<()> {
    use std::io::Write;
    let (name, mut out): (&str, Box<dyn Write>) = match fd {
        1 => ("stdout", Box::new(io::stdout().lock())),
        _ => ("stderr", Box::new(io::stderr().lock())),
    };
    if was_closed(fd) {
        return Err(closed_at_start(name));
    }
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
        // A marker: the words are the cause's.
        self.0.fmt(f)
    }
}

impl std::error::Error for ReaderGone {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        Some(&self.0)
    }
}

/// Which of fds 0, 1 and 2 were closed when flushlab started (bit `fd`).
static CLOSED_AT_START: AtomicU8 = AtomicU8::new(0);

/// Notes which of fds 0, 1 and 2 are closed. Must run before Rust's runtime starts `main`: the
/// runtime then puts /dev/null on a closed standard fd (so that no file flushlab opens takes
/// its number), after which output sent there would look delivered and `>&-` could not be told
/// from `>/dev/null`. The binary runs it from `.init_array`; output sent to a stream noted
/// closed is a reader gone.
pub fn note_closed_standard_fds() {
    use rustix::stdio::{stderr, stdin, stdout};
    let mut closed = 0;
    for (i, fd) in [stdin(), stdout(), stderr()].into_iter().enumerate() {
        if rustix::io::fcntl_getfd(fd) == Err(rustix::io::Errno::BADF) {
            closed |= 1 << i;
        }
    }
    CLOSED_AT_START.store(closed, Ordering::Relaxed);
}

/// Whether fd `fd` (0, 1 or 2) was closed when flushlab started.
pub fn was_closed(fd: i32) -> bool {
    (0..3).contains(&fd) && CLOSED_AT_START.load(Ordering::Relaxed) & (1 << fd) != 0
}

/// The error of writing to a standard stream that was closed when flushlab started: a
/// [`ReaderGone`], since nobody was ever there to read.
pub fn closed_at_start(name: &str) -> io::Error {
    io::Error::new(
        io::ErrorKind::NotConnected,
        ReaderGone(io::Error::new(
            io::ErrorKind::NotConnected,
            format!("{name} was closed when flushlab started"),
        )),
    )
}

/// Marks an error from flushlab's own stdout or stderr, or its terminal (a write, or a read of
/// the keys: a hung-up terminal), as [`ReaderGone`] when it is one.
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
        || e.get_ref().is_some_and(|inner| inner.is::<ReaderGone>())
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
