//! One run: the real `flushlab` headless run as a child, its measured stream on a fresh pty
//! (or pipe, file, /dev/null), the other side read by a reader model; its report parsed.

use std::fs::File;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use crate::plumbing::children::{HeadlessFlood, HeadlessRun, HeadlessWrap, RUN_ENV};
use crate::plumbing::frame_args::ChildOf;
use flushlab_core::detect::keyed::WrapKeysRun;
use flushlab_core::figures::WrapRun;
use flushlab_core::reader::{Tail, consume};
use flushlab_core::results::conditions::{ReaderModel, Sink};
use flushlab_core::results::{FailedRun, Run};
use flushlab_core::subject::Subject;
use flushlab_core::sys::pty::Pty;
use flushlab_core::writer_mode::Stream;

/// Everything one run needs.
#[derive(Clone, Debug)]
pub struct RunSpec {
    pub binary: PathBuf,
    pub subject: Subject,
    pub capacity: usize,
    pub scene: flushlab_core::scene::Scene,
    pub sync: bool,
    pub backend: flushlab_core::backend::BackendKind,
    /// How a mode's writer waits for room (the ceilings wait their own way).
    pub wait: flushlab_core::wait::Wait,
    pub size: (u16, u16),
    pub duration: Duration,
    pub sink: Sink,
    pub reader: ReaderModel,
    /// Scratch space for the report (and the file sink).
    pub scratch: PathBuf,
    /// How long past its duration a run may take before it counts as hung and is killed.
    pub grace: Duration,
    /// The flood's `--work` and `--rate`: its lines as a server's requests.
    pub work: Option<Duration>,
    pub rate: Option<u64>,
    /// Keys typed into another program's row (`--command … --keys`).
    pub keys: Option<flushlab_core::keyscript::KeyScript>,
}

impl RunSpec {
    /// The usual grace: a raw frame on a slow reader can take a while, so it grows with the
    /// duration.
    pub fn default_grace(duration: Duration) -> Duration {
        Duration::from_secs(5).max(duration * 2)
    }

    fn command(&self, program: &Path, report: &Path) -> Command {
        let mut command = Command::new(program);
        self.configure(&mut command, report);
        command
    }

    fn configure(&self, command: &mut Command, report: &Path) {
        // Whatever the headless run reads, nothing leaks from the bench's own environment.
        for var in RUN_ENV {
            command.env_remove(var);
        }
        command.args(self.child_args(report));
    }

    /// The child's command line: its settings, typed, written as the flags its command parses.
    fn child_args(&self, report: &Path) -> Vec<std::ffi::OsString> {
        let child_of = ChildOf::this_process(report.to_owned());
        // The children count writes the way the bench was told to.
        let accounting = flushlab_core::accounting::accounting();
        let (buffering, ceiling) = match &self.subject {
            Subject::Mode(_, buffering) => (Some(*buffering), None),
            // A ceiling writes where the modes write, on the same fd to the same reader.
            Subject::Ceiling(ceiling) => (None, Some(*ceiling)),
            Subject::Flood(writer) => {
                let flood = HeadlessFlood {
                    writer: *writer,
                    duration: self.duration,
                    capacity: self.capacity,
                    work: self.work,
                    rate: self.rate,
                    accounting,
                    child_of,
                };
                return flood.args();
            }
            // Another program, in wrap's own pty of the same size, read by the same reader
            // model; wrap ends it when the duration is over.
            Subject::Command(external) => {
                let wrap = HeadlessWrap {
                    duration: self.duration,
                    size: self.size,
                    reader: self.reader,
                    keys: self.keys.clone(),
                    child_of,
                    command: external.argv.iter().map(Into::into).collect(),
                };
                return wrap.args();
            }
        };
        let run = HeadlessRun {
            stream: self.subject.stream(),
            buffering,
            ceiling,
            capacity: self.capacity,
            duration: self.duration,
            scene: self.scene,
            sync: self.sync,
            backend: self.backend,
            wait: self.wait,
            size: self.size,
            accounting,
            child_of,
        };
        run.args()
    }
}

/// Runs `spec` once. A run that fails is a [`FailedRun`], never an error of the bench. When
/// `interrupt` turns non-zero (the bench got a termination signal) the child is killed and the
/// run fails at once.
pub fn run_once(spec: &RunSpec, interrupt: &AtomicUsize) -> Result<Run, FailedRun> {
    let failed = |reason: String, output: String| FailedRun { reason, output };
    let report = spec.scratch.join("report.json");
    let _ = std::fs::remove_file(&report);
    let started = Instant::now();
    let child_gone = Arc::new(AtomicBool::new(false));
    let busy_before = flushlab_core::sys::machine_busy();
    let (child, reader) = spawn(spec, &report, &child_gone)
        .map_err(|e| failed(format!("could not start: {e}"), String::new()))?;
    let (status, read) = wait(
        child,
        reader,
        spec.duration + spec.grace,
        started,
        &child_gone,
        interrupt,
    );
    let busy = flushlab_core::sys::machine_busy()
        .zip(busy_before)
        .map(|(after, before)| after.saturating_sub(before));
    let tail = read.tail;
    let status = status.map_err(|reason| failed(reason, tail.clone()))?;
    if !status.success() {
        let said = last_words(&tail)
            .map(|line| format!(": {line}"))
            .unwrap_or_default();
        return Err(failed(format!("exited with {status}{said}"), tail));
    }
    let report = std::fs::read(&report).map_err(|_| failed("no report".into(), tail.clone()))?;
    let bad = |e: serde_json::Error| failed(format!("bad report: {e}"), tail.clone());
    if let Subject::Command(_) = spec.subject {
        let keyed = serde_json::from_slice::<WrapKeysRun>(&report).map_err(bad)?;
        return serde_json::from_slice::<WrapRun>(&report)
            .map(|wrapped| command_run(wrapped, keyed))
            .map_err(bad);
    }
    let mut run: Run = serde_json::from_slice(&report).map_err(bad)?;
    run.reader_bytes = read.bytes;
    // A file or /dev/null has no reader: the thread then read the other stream's summary.
    let read_the_output = matches!(spec.sink, Sink::Pty | Sink::Pipe);
    run.reader_cpu_seconds = read_the_output.then_some(read.cpu.as_secs_f64());
    run.machine_busy_seconds = busy.map(|b| b.as_secs_f64());
    Ok(run)
}

/// The child's own error, for the bench's line: the last line it said as flushlab, one line,
/// escaped (the tail is the child's output, which may hold anything).
fn last_words(tail: &str) -> Option<String> {
    tail.lines()
        .rev()
        .find_map(|line| line.trim_end().strip_prefix("flushlab: "))
        .map(flushlab_core::units::one_line)
}

/// A run of another program, from `flushlab wrap`'s report: its per-frame figures when wrap
/// found its frames, else its per-second figures (a row that says so, never a failure).
fn command_run(wrapped: WrapRun, keyed: WrapKeysRun) -> Run {
    Run {
        per_second: wrapped.figures.is_none().then_some(wrapped.per_second),
        figures: wrapped.figures.unwrap_or_default(),
        peak_rss_kib: wrapped.peak_rss_kib,
        p50_ns: None,
        p99_ns: None,
        key_to_frame_ms: keyed.keys.and_then(|k| k.key_to_frame_ms),
        key_stages_ms: keyed.keys.and_then(|k| k.stages_ms),
        reader_bytes: wrapped.bytes,
        // Wrap reads the program's pty itself: the bench's reader saw wrap's summary only.
        reader_cpu_seconds: None,
        machine_busy_seconds: None,
        shown_fps: None,
        torn_paints_per_second: None,
        // Set by the scheduler, which knows the round.
        round: None,
    }
}

/// What a reader thread saw: the end of the output, its bytes, and the CPU it used.
type ReaderThread = std::thread::JoinHandle<(Tail, u64, Duration)>;

fn spawn(
    spec: &RunSpec,
    report: &Path,
    child_gone: &Arc<AtomicBool>,
) -> std::io::Result<(Child, Option<ReaderThread>)> {
    let (reader_model, size) = (spec.reader, spec.size);
    // A thread that cannot be started (RLIMIT_NPROC) fails the run, never panics the bench.
    let read_in_thread = |source: File, model: ReaderModel| {
        let child_gone = Arc::clone(child_gone);
        flushlab_core::sys::spawn_thread("bench-reader", move || {
            let mut tail = Tail::default();
            let bytes =
                consume(model, source, size, &mut |b, _| tail.push(b), &child_gone).unwrap_or(0);
            let (user, kernel) = flushlab_core::sys::cpu_time(flushlab_core::sys::Usage::Thread);
            (tail, bytes, user + kernel)
        })
    };
    if spec.sink == Sink::Pty {
        let pty = Pty::open(size.0, size.1)?;
        let child = pty.spawn(&spec.binary, |command| spec.configure(command, report))?;
        return match read_in_thread(pty.master, reader_model) {
            Ok(reader) => Ok((child, Some(reader))),
            Err(e) => Err(ended(child, e)),
        };
    }
    let mut command = spec.command(&spec.binary, report);
    let measured = match spec.sink {
        Sink::Pipe => Stdio::piped(),
        Sink::File => Stdio::from(File::create(spec.scratch.join("sink.out"))?),
        _ => Stdio::null(),
    };
    // The other stream carries the summary line and any error: a pipe whose end we keep.
    match spec.subject.stream() {
        Stream::Stdout => command.stdout(measured).stderr(Stdio::piped()),
        Stream::Stderr => command.stderr(measured).stdout(Stdio::piped()),
    };
    let mut child = command.stdin(Stdio::null()).spawn()?;
    let (measured, other) = match spec.subject.stream() {
        Stream::Stdout => (child.stdout.take().map(file), child.stderr.take().map(file)),
        Stream::Stderr => (child.stderr.take().map(file), child.stdout.take().map(file)),
    };
    let readers = || -> std::io::Result<Option<ReaderThread>> {
        // The other stream is small; drained alongside so the child never blocks on it.
        let other = other
            .map(|o| read_in_thread(o, ReaderModel::Drain))
            .transpose()?;
        let Some(pipe) = measured else {
            return Ok(other);
        };
        let measured = read_in_thread(pipe, reader_model)?;
        // Report the measured stream's bytes, but the other stream's words on failure.
        let both = flushlab_core::sys::spawn_thread("bench-readers", move || {
            let (_, bytes, cpu) = measured.join().unwrap_or_default();
            let (tail, _, _) = other
                .map(|o| o.join().unwrap_or_default())
                .unwrap_or_default();
            (tail, bytes, cpu)
        })?;
        Ok(Some(both))
    };
    let reader = match readers() {
        Ok(reader) => reader,
        Err(e) => return Err(ended(child, e)),
    };
    if spec.sink == Sink::File {
        let _ = std::fs::remove_file(spec.scratch.join("sink.out"));
    }
    Ok((child, reader))
}

/// A child whose output nobody can read is ended before the error goes up: no run outlives
/// the bench.
fn ended(mut child: Child, e: std::io::Error) -> std::io::Error {
    let _ = child.kill();
    let _ = child.wait();
    e
}

/// A child's pipe as a plain file, so one reader type serves stdout and stderr.
fn file(pipe: impl Into<std::os::fd::OwnedFd>) -> File {
    File::from(pipe.into())
}

/// Waits for the child, killing it past `deadline`; then collects what its reader saw.
fn wait(
    mut child: Child,
    reader: Option<ReaderThread>,
    deadline: Duration,
    started: Instant,
    child_gone: &AtomicBool,
    interrupt: &AtomicUsize,
) -> (Result<std::process::ExitStatus, String>, Read) {
    let status = loop {
        match child.try_wait() {
            Ok(Some(status)) => break Ok(status),
            Ok(None) if interrupt.load(Ordering::Relaxed) != 0 => {
                let _ = child.kill();
                let _ = child.wait();
                break Err("interrupted".to_owned());
            }
            Ok(None) if started.elapsed() > deadline => {
                let _ = child.kill();
                let _ = child.wait();
                break Err(format!(
                    "hung: killed after {:.1} s",
                    started.elapsed().as_secs_f64()
                ));
            }
            Ok(None) => std::thread::sleep(Duration::from_millis(10)),
            Err(e) => break Err(format!("could not wait: {e}")),
        }
    };
    // What is still buffered is read at full speed: the run is over.
    child_gone.store(true, Ordering::Relaxed);
    let (tail, bytes, cpu) = reader
        .map(|r| r.join().unwrap_or_default())
        .unwrap_or_default();
    let read = Read {
        tail: tail.text(),
        bytes,
        cpu,
    };
    (status, read)
}

/// What the reader of a run's output saw.
struct Read {
    /// The end of the output, for a failed run's message.
    tail: String,
    bytes: u64,
    /// The CPU the reader thread used.
    cpu: Duration,
}

#[cfg(test)]
mod tests {
    use super::last_words;

    #[test]
    fn a_failed_childs_last_word_reaches_the_bench_line_escaped() {
        let tail = "frames 12\nflushlab: could not start the painter thread\n\n";
        assert_eq!(
            last_words(tail).as_deref(),
            Some("could not start the painter thread")
        );
        assert_eq!(
            last_words("flushlab: bad \u{1b}]0;title\u{7}").as_deref(),
            Some("bad \\u{1b}]0;title\\u{7}")
        );
        assert_eq!(last_words("nothing from us\n"), None);
    }
}
