//! Writer modes: which stream the frame goes to, and how it is buffered on the way.
//!
//! A mode is a [`Stream`] × a [`Buffering`]. The writer stack for a mode is built in exactly one
//! place, [`open`], on top of one generic function, [`wrap`], that tests also use with a counting
//! sink in place of the file descriptor.

use std::fmt;
use std::fs::File;
use std::io::{self, BufWriter, LineWriter, Write};
use std::os::fd::AsFd;

use serde::Serialize;

use crate::accounting::Counted;
use crate::frame_writer::{FrameWriter, ThreadWriter};
use crate::units::format_capacity;
use crate::wait::{Wait, Waiting};

/// `BufWriter::new`'s own default, so that `block` means what Rust programmers get by default.
pub const DEFAULT_CAPACITY: usize = 8 * 1024;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[cfg_attr(feature = "clap", derive(clap::ValueEnum))]
#[serde(rename_all = "lowercase")]
pub enum Stream {
    Stdout,
    Stderr,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[cfg_attr(feature = "clap", derive(clap::ValueEnum))]
#[serde(rename_all = "lowercase")]
pub enum Buffering {
    /// Every `write` the encoder makes is one write(2).
    Raw,
    /// A `LineWriter` (1 KiB): what `std::io::stdout()` is.
    Line,
    /// A `BufWriter` of `--capacity` bytes.
    Block,
    /// The whole frame in one write(2).
    Frame,
    /// The whole frame handed to a writer thread, which writes it while the next one renders.
    Thread,
}

impl Stream {
    pub const ALL: [Stream; 2] = [Stream::Stdout, Stream::Stderr];

    pub fn name(self) -> &'static str {
        match self {
            Stream::Stdout => "stdout",
            Stream::Stderr => "stderr",
        }
    }

    /// How std buffers this stream's handle: `stdout()` is a 1 KiB `LineWriter`, `stderr()` is
    /// unbuffered. The default buffering of a stream, so that `STREAM=stderr` means `stderr()`.
    pub fn std_buffering(self) -> Buffering {
        match self {
            Stream::Stdout => Buffering::Line,
            Stream::Stderr => Buffering::Raw,
        }
    }

    /// The stream a summary goes to when this one is being measured.
    pub fn other(self) -> Stream {
        match self {
            Stream::Stdout => Stream::Stderr,
            Stream::Stderr => Stream::Stdout,
        }
    }

    /// Whether this stream is a terminal. Asked once per run by the caller, not per frame.
    pub fn is_terminal(self) -> bool {
        use std::io::IsTerminal;
        match self {
            Stream::Stdout => io::stdout().is_terminal(),
            Stream::Stderr => io::stderr().is_terminal(),
        }
    }

    /// An unbuffered handle that writes straight to this stream's file descriptor and closes only
    /// what it owns. For stdout that is a `dup` of fd 1: `File::from_raw_fd(1)` would take fd 1
    /// over and close it on drop, after which every later print fails with EBADF.
    pub fn raw(self) -> io::Result<RawStream> {
        Ok(match self {
            Stream::Stdout => RawStream::Stdout(stdout_dup()?),
            Stream::Stderr => RawStream::Stderr(io::stderr()),
        })
    }

    /// Writes one line to this stream, unbuffered, errors ignored: for summaries and messages
    /// after the measured output, when a failure has nobody left to be reported to.
    pub fn write_line(self, line: &str) {
        let _ = match self {
            Stream::Stdout => writeln!(io::stdout(), "{line}"),
            Stream::Stderr => writeln!(io::stderr(), "{line}"),
        };
    }

    /// This stream's fd was closed when flushlab started (`>&-`): nothing written to it reaches
    /// anyone, so a run that measures it ends at once as a reader gone.
    pub fn closed_at_start(self) -> Option<io::Error> {
        let fd = match self {
            Stream::Stdout => 1,
            Stream::Stderr => 2,
        };
        crate::outcome::was_closed(fd).then(|| crate::outcome::closed_at_start(self.name()))
    }

    /// Says on the other stream that writing to this one failed (`doing`: what was being
    /// written): this stream may be the broken one, and `main` complains on stderr.
    pub fn say_failed(self, doing: &str, e: &io::Error) {
        self.other().write_line(&format!(
            "flushlab: writing {doing} to {}: {e}",
            self.name()
        ));
    }

    /// Says on the other stream that this one's reader went away (`e`, an EPIPE or EIO):
    /// the run ends with [`Outcome::ReaderGone`](crate::outcome::Outcome::ReaderGone).
    pub fn say_reader_gone(self, e: &io::Error) {
        self.other().write_line(&format!(
            "flushlab: the reader of {} went away ({e})",
            self.name()
        ));
    }

    fn raw_expression(self) -> &'static str {
        match self {
            Stream::Stdout => "File::from(stdout().as_fd().try_clone_to_owned()?)",
            Stream::Stderr => "stderr()",
        }
    }
}

impl Buffering {
    pub const ALL: [Buffering; 5] = [
        Buffering::Raw,
        Buffering::Line,
        Buffering::Block,
        Buffering::Frame,
        Buffering::Thread,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Buffering::Raw => "raw",
            Buffering::Line => "line",
            Buffering::Block => "block",
            Buffering::Frame => "frame",
            Buffering::Thread => "thread",
        }
    }
}

/// An unbuffered stdout that owns only a duplicate of fd 1 (see [`Stream::raw`]).
pub fn stdout_dup() -> io::Result<File> {
    Ok(File::from(io::stdout().as_fd().try_clone_to_owned()?))
}

/// Unbuffered stdout (a dup of fd 1) or stderr: the bottom of every writer stack.
#[derive(Debug)]
pub enum RawStream {
    Stdout(File),
    Stderr(io::Stderr),
}

impl std::os::fd::AsFd for RawStream {
    fn as_fd(&self) -> std::os::fd::BorrowedFd<'_> {
        match self {
            RawStream::Stdout(file) => file.as_fd(),
            RawStream::Stderr(stderr) => stderr.as_fd(),
        }
    }
}

impl Write for RawStream {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        match self {
            RawStream::Stdout(file) => file.write(buf),
            RawStream::Stderr(stderr) => stderr.write(buf),
        }
    }

    fn flush(&mut self) -> io::Result<()> {
        match self {
            RawStream::Stdout(file) => file.flush(),
            RawStream::Stderr(stderr) => stderr.flush(),
        }
    }
}

/// A stream and its buffering; the block capacity travels with it so that `stdout/block` at
/// 8 KiB and at 64 KiB are different modes in the comparison table.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Mode {
    pub stream: Stream,
    pub buffering: Buffering,
    /// Bytes; meaningful only for [`Buffering::Block`].
    pub capacity: usize,
}

impl Mode {
    pub fn new(stream: Stream, buffering: Buffering, capacity: usize) -> Self {
        Mode {
            stream,
            buffering,
            capacity,
        }
    }

    /// The mode as the statistics know it: the capacity matters only to block buffering.
    pub fn key(self) -> Mode {
        if self.buffering == Buffering::Block {
            self
        } else {
            Mode {
                capacity: 0,
                ..self
            }
        }
    }

    /// Every stream × buffering, in the order the space key and the tour visit them.
    pub fn all(capacity: usize) -> impl Iterator<Item = Mode> {
        Stream::ALL.into_iter().flat_map(move |stream| {
            Buffering::ALL
                .into_iter()
                .map(move |buffering| Mode::new(stream, buffering, capacity))
        })
    }

    /// The mode after this one in [`Mode::all`], wrapping around.
    pub fn next(self) -> Mode {
        let all: Vec<Mode> = Mode::all(self.capacity).collect();
        let here = all
            .iter()
            .position(|m| m.stream == self.stream && m.buffering == self.buffering);
        all[here.map_or(0, |i| (i + 1) % all.len())]
    }

    /// The Rust expression that builds this mode's writer, exactly as [`open`] does.
    pub fn expression(&self) -> String {
        let raw = self.stream.raw_expression();
        match (self.stream, self.buffering) {
            (Stream::Stdout, Buffering::Line) if std_stdout_counted() => "stdout()".to_owned(),
            (_, Buffering::Raw) => raw.to_owned(),
            (_, Buffering::Line) => format!("LineWriter::new({raw})"),
            (_, Buffering::Block) => format!("BufWriter::with_capacity({}, {raw})", self.capacity),
            (_, Buffering::Frame) => format!("FrameWriter::new({raw})"),
            (_, Buffering::Thread) => format!("ThreadWriter::new({raw})"),
        }
    }
}

/// `stdout/block` style, with the capacity for block modes (`stdout/block:8KiB`).
impl fmt::Display for Mode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.stream.name(), self.buffering.name())?;
        if self.buffering == Buffering::Block {
            write!(f, ":{}", format_capacity(self.capacity))?;
        }
        Ok(())
    }
}

/// Opens the writer stack for `mode` on the real stream. See [`wrap`] for what each mode costs.
pub fn open(mode: Mode) -> io::Result<Box<dyn Write + Send>> {
    open_waiting(mode, Wait::Sleep)
}

/// [`open`], with the bottom of the stack waiting for room as `wait` says (see
/// [`crate::wait`]); std's own stdout sleeps in write(2), so a writer that does not is the
/// same `LineWriter` over a duplicate of fd 1.
pub fn open_waiting(mode: Mode, wait: Wait) -> io::Result<Box<dyn Write + Send>> {
    let std_stdout = (mode.stream, mode.buffering) == (Stream::Stdout, Buffering::Line);
    if std_stdout && wait == Wait::Sleep && std_stdout_counted() {
        // Not `LineWriter::new(raw)`: the point of this mode is std's own stdout, lock and all.
        return Ok(Box::new(io::stdout()));
    }
    let raw = mode.stream.raw()?;
    match wait {
        Wait::Sleep => wrap(mode.buffering, mode.capacity, raw, wait),
        Wait::Poll | Wait::Spin => {
            wrap(mode.buffering, mode.capacity, Waiting::new(raw, wait), wait)
        }
    }
}

/// The function that opens a mode's writer stack waiting as `wait` says: what a measured
/// output is given to open each mode it visits.
pub fn opener(wait: Wait) -> fn(Mode) -> io::Result<Box<dyn Write + Send>> {
    match wait {
        Wait::Sleep => open,
        Wait::Poll => |mode| open_waiting(mode, Wait::Poll),
        Wait::Spin => |mode| open_waiting(mode, Wait::Spin),
    }
}

/// Whether std's own `stdout()` can be measured (see [`crate::accounting::std_handles_counted`]).
/// Where it cannot, `stdout/line` is the same 1 KiB `LineWriter` std uses, over a duplicate of
/// fd 1, without std's lock.
fn std_stdout_counted() -> bool {
    crate::accounting::std_handles_counted()
}

/// Puts `buffering` on top of an unbuffered writer. This is the buffering policy of the whole
/// tool, and the lesson it teaches; the costs below are per frame of `B` bytes made of `C`
/// encoder writes (crossterm writes each escape-sequence fragment separately, so `C` is in the
/// tens of thousands for a full-screen truecolor frame, at ~2 bytes each):
///
/// - `raw`: `C` write(2) calls. Each is a trip into the kernel and, on a terminal, a wake-up of
///   its reader; the syscall overhead dwarfs the bytes. This is what `stderr()` does.
/// - `line`: a 1 KiB `LineWriter`, flushed at every `\n` and whenever full: about `B / 1024`
///   calls, as a TUI frame has almost no newlines. This is what `stdout()` does, which is why
///   "stdout is faster than stderr" in a TUI.
/// - `block`: `B / capacity` calls. Larger buffers amortise more but delay the first byte, and
///   past the pipe or pty buffer size (4–64 KiB) the kernel splits the write anyway.
/// - `frame`: exactly one call per frame, whatever its size, so the terminal sees a frame in one
///   piece; costs a frame-sized buffer (grown once, then reused). With synchronized output on,
///   the begin and end markers travel in the same call.
/// - `thread`: like `frame`, but the write happens on a writer thread while the next frame is
///   painted and encoded. It trades one frame of latency and a second frame buffer for overlap;
///   at most one frame is in flight, so a slow reader still slows the painter down (no unbounded
///   queue). `flush` means "handed over", not "written": dropping the writer waits for the write.
///   Painter and writer wait for each other as `handoff` says (the other modes ignore it).
pub fn wrap<W: Write + Send + 'static>(
    buffering: Buffering,
    capacity: usize,
    raw: W,
    handoff: Wait,
) -> io::Result<Box<dyn Write + Send>> {
    let raw = Counted::new(raw);
    Ok(match buffering {
        Buffering::Raw => Box::new(raw),
        Buffering::Line => Box::new(LineWriter::new(raw)),
        Buffering::Block => Box::new(BufWriter::with_capacity(capacity, raw)),
        Buffering::Frame => Box::new(FrameWriter::new(raw)),
        Buffering::Thread => Box::new(ThreadWriter::waiting(raw, handoff)?),
    })
}

/// The write(2)s [`wrap`]'s stack for `buffering` would make of what is written, made into
/// `into` instead: no descriptor, no counting, no writer thread (a thread mode writes what a
/// frame mode does, one write a frame, only later). What a terminal model is given of the
/// explorer's frames ([`crate::seen::frames`]); std's `stdout()` is the same 1 KiB `LineWriter`.
pub fn same_writes<W: Write + Send + 'static>(
    buffering: Buffering,
    capacity: usize,
    into: W,
) -> Box<dyn Write + Send> {
    match buffering {
        Buffering::Raw => Box::new(into),
        Buffering::Line => Box::new(LineWriter::new(into)),
        Buffering::Block => Box::new(BufWriter::with_capacity(capacity, into)),
        Buffering::Frame | Buffering::Thread => Box::new(FrameWriter::new(into)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn next_visits_every_mode_once_then_wraps() {
        let start = Mode::new(Stream::Stdout, Buffering::Raw, DEFAULT_CAPACITY);
        let mut seen = vec![start];
        let mut mode = start.next();
        while mode != start {
            seen.push(mode);
            mode = mode.next();
        }
        assert_eq!(seen, Mode::all(DEFAULT_CAPACITY).collect::<Vec<_>>());
        assert_eq!(seen.len(), 10);
    }

    #[test]
    fn expressions_name_what_open_builds() {
        let e = |s, b| Mode::new(s, b, 8192).expression();
        assert_eq!(e(Stream::Stdout, Buffering::Line), "stdout()");
        assert_eq!(e(Stream::Stderr, Buffering::Raw), "stderr()");
        assert_eq!(
            e(Stream::Stderr, Buffering::Line),
            "LineWriter::new(stderr())"
        );
        assert_eq!(
            e(Stream::Stdout, Buffering::Block),
            "BufWriter::with_capacity(8192, File::from(stdout().as_fd().try_clone_to_owned()?))"
        );
        assert!(!e(Stream::Stdout, Buffering::Raw).contains("from_raw_fd"));
    }

    #[test]
    fn display_names_block_capacity() {
        assert_eq!(
            Mode::new(Stream::Stderr, Buffering::Block, 65536).to_string(),
            "stderr/block:64KiB"
        );
        assert_eq!(
            Mode::new(Stream::Stdout, Buffering::Raw, 65536).to_string(),
            "stdout/raw"
        );
    }

    #[test]
    fn raw_stdout_is_a_duplicate_that_leaves_fd_1_open() {
        use std::os::fd::AsRawFd;
        let raw = Stream::Stdout.raw().unwrap();
        let RawStream::Stdout(file) = &raw else {
            panic!("expected a file")
        };
        assert_ne!(file.as_raw_fd(), 1);
        drop(raw);
        // fd 1 must still be open: fstat fails with EBADF on a closed descriptor.
        assert!(rustix::fs::fstat(io::stdout()).is_ok());
    }
}
