//! `wrap --profile FILE`: CMD recorded by samply (attached to it once it runs, so that CMD keeps
//! its pty, its session and its exit status) with each key's span and stages as samply markers
//! on the thread that drew the key's frame. The observer maps each drawing thread's marker file
//! and holds the process at exit until the lines are written ([`flushlab_observer::Markers`]);
//! the lines come from the same pure function as the report's key figures, on what the observer
//! said until then.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use flushlab_observer::{Markers, OnExit, Sightings};

use crate::plan::profile::Profile;
use flushlab_core::accounting::IoCounters;
use flushlab_core::detect::keyed::{KeyLatencies, Stage, key_latencies};
use flushlab_core::detect::recording::Recording;
use flushlab_core::detect::timeline::Timeline;
use flushlab_core::files::Scratch;
use flushlab_core::units::milliseconds;

/// What writes the markers: the observer's marker files, and the run's record the keys are
/// appended to as they are sent (set once the keys can start).
struct MarkerWriter {
    markers: Markers,
    recording: Option<Arc<Recording>>,
    written: u64,
}

/// The marker files and their writer, before CMD starts.
pub(crate) struct Preparing {
    scratch: Scratch,
    writer: Arc<Mutex<MarkerWriter>>,
}

impl Preparing {
    pub(crate) fn new() -> std::io::Result<Preparing> {
        let scratch = Scratch::swept("flushlab-markers")?;
        let markers = Markers::new(scratch.path().to_owned())?;
        Ok(Preparing {
            scratch,
            writer: Arc::new(Mutex::new(MarkerWriter {
                markers,
                recording: None,
                written: 0,
            })),
        })
    }

    /// The variable CMD runs with.
    pub(crate) fn environment(&self) -> (std::ffi::OsString, std::ffi::OsString) {
        lock(&self.writer).markers.environment()
    }

    /// What the observer's listener calls as a process ends: the first process that mapped a
    /// marker file gets every key's lines written, and every waiting process is let go.
    pub(crate) fn on_exit(&self) -> OnExit {
        let writer = Arc::clone(&self.writer);
        Box::new(move |pid: u32, sightings: &Sightings| {
            let mut w = lock(&writer);
            if !w.markers.mapped_by(pid) {
                return;
            }
            // The run so far, with what the observers said until this exit (no key was sent
            // before the keys could start: nothing to mark).
            if let Some(recording) = &w.recording {
                let timeline = recording.so_far(
                    Some(crate::observers::inside_timeline::timeline(sightings)),
                    flushlab_core::sys::monotonic_ns(),
                );
                let latencies = key_latencies(&timeline);
                w.written += write_markers(&w.markers, &timeline, &latencies);
            }
            w.markers.release();
        })
    }

    /// samply attached to CMD (`pid`), writing the profile's file; returns once it records (its
    /// perf events are open), so that the keys that follow are in the profile.
    pub(crate) fn attach(
        self,
        profile: &Profile,
        pid: i32,
        recording: &Arc<Recording>,
    ) -> std::io::Result<Profiling> {
        let (samply, output) = (&profile.samply, &profile.file);
        lock(&self.writer).recording = Some(Arc::clone(recording));
        let log = std::fs::File::create(self.scratch.path().join("samply.log"))?;
        // Into wrap's own directory: the files reach `output` through the one place outputs
        // are written (no planted link followed, nothing half-written left there).
        let child = Command::new(samply)
            .args([
                "record",
                "--save-only",
                "--no-open",
                "--unstable-presymbolicate",
            ])
            .arg("-o")
            .arg(self.scratch.path().join(RECORDED))
            .arg("-p")
            .arg(pid.to_string())
            .stdin(Stdio::null())
            .stdout(log.try_clone()?)
            .stderr(log)
            .spawn()?;
        let recording = wait_until(Duration::from_secs(10), || {
            flushlab_core::sys::process::opened(child.id() as i32, "anon_inode:[perf_event]")
                || flushlab_core::sys::process::has_exited(child.id() as i32)
        });
        Ok(Profiling {
            child,
            recording,
            output: output.to_owned(),
            preparing: self,
        })
    }
}

/// What samply writes in the scratch directory (and its symbols, `profile.json.syms.json`).
const RECORDED: &str = "profile.json.gz";

/// samply recording CMD.
pub(crate) struct Profiling {
    child: Child,
    recording: bool,
    output: PathBuf,
    preparing: Preparing,
}

/// How the recording went.
#[derive(Debug)]
pub(crate) struct Recorded {
    /// The profile was written.
    pub(crate) saved: bool,
    /// Keys marked in the profile's file, as read back from it.
    pub(crate) markers: u64,
    /// Keys whose lines wrap wrote for samply to read.
    pub(crate) handed: u64,
    /// samply's own writes (its profile), which are no write of CMD's tree.
    pub(crate) io: Option<IoCounters>,
    /// What samply said, when it failed.
    pub(crate) said: String,
}

impl Profiling {
    /// After CMD exited: samply saves the profile and ends (it follows CMD), within a minute,
    /// or is stopped as Ctrl-C stops it.
    pub(crate) fn finish(mut self) -> Recorded {
        let pid = self.child.id() as i32;
        if !wait_until(Duration::from_secs(60), || {
            flushlab_core::sys::process::has_exited(pid)
        }) {
            let _ = flushlab_core::sys::signals::signal_process(
                pid,
                flushlab_core::sys::signals::Signal::INT,
            );
            if !wait_until(Duration::from_secs(30), || {
                flushlab_core::sys::process::has_exited(pid)
            }) {
                let _ = self.child.kill();
            }
        }
        // Read before it is reaped: then its counts join the tree's.
        let io = flushlab_core::sys::io::process_io(pid);
        let status = self.child.wait();
        let scratch = self.preparing.scratch.path();
        let recorded = scratch.join(RECORDED);
        let mut said = std::fs::read_to_string(scratch.join("samply.log")).unwrap_or_default();
        let saved = self.recording
            && status.is_ok_and(|s| s.success())
            && std::fs::metadata(&recorded).is_ok_and(|m| m.len() > 0);
        let saved = saved && {
            let symbols = flushlab_core::files::sibling(&recorded, ".syms.json", true);
            let delivered = deliver(&recorded, &self.output).and_then(|()| {
                let beside = flushlab_core::files::sibling(&self.output, ".syms.json", true);
                match symbols.exists() {
                    true => deliver(&symbols, &beside),
                    false => Ok(()),
                }
            });
            if let Err(e) = &delivered {
                said = format!("cannot write '{}': {e}", self.output.display());
            }
            delivered.is_ok()
        };
        // Whatever happened, no process waits at exit for lines any longer.
        let mut writer = lock(&self.preparing.writer);
        writer.markers.release();
        // What the file holds, not what was handed over: samply reads the lines only as the
        // process exits, and a line written after that is in no profile.
        let in_file = if saved {
            flushlab_core::samply::marked_keys(&self.output).ok()
        } else {
            None
        };
        Recorded {
            saved,
            markers: in_file.unwrap_or(0),
            handed: writer.written,
            io,
            said: flushlab_core::units::one_line(said.trim()),
        }
    }
}

/// Each key with a frame seen from inside, as markers on the thread that drew it: the key's
/// span (`key 7 <Down>: 23.1 ms`) and its stages (`key 7 processing`); returns how many lines.
fn write_markers(markers: &Markers, timeline: &Timeline, latencies: &KeyLatencies) -> u64 {
    let bursts = timeline.inside.as_ref().map_or(&[][..], |i| &i.bursts[..]);
    let mut lines: std::collections::BTreeMap<PathBuf, String> = Default::default();
    let mut count = 0;
    for (i, k) in latencies.each.iter().enumerate() {
        let (Some(b), Some(frame_ms), Some(end)) = (k.burst, k.frame_ms, k.frame_end_ns()) else {
            continue;
        };
        let spans = k.stage_spans();
        if spans.is_empty() {
            continue;
        }
        let burst = &bursts[b];
        let Some(file) = markers.file_of(burst.pid, burst.tid) else {
            continue;
        };
        let text = lines.entry(file).or_default();
        let n = i + 1;
        let sent = k.sent_ns;
        text.push_str(&format!(
            "{sent} {end} key {n} {}: {}\n",
            k.key,
            milliseconds(frame_ms)
        ));
        // The drain is wrap's reading, after the program's part: not on the program's thread.
        for (stage, from, to) in spans.into_iter().filter(|s| s.0 != Stage::Drain) {
            text.push_str(&format!("{from} {to} key {n} {}\n", stage.name()));
        }
        count += 1;
    }
    for (file, text) in lines {
        let appended = std::fs::OpenOptions::new()
            .append(true)
            .open(&file)
            .and_then(|mut f| f.write_all(text.as_bytes()));
        if appended.is_err() {
            count = 0;
        }
    }
    count
}

/// A file samply wrote, to where the user asked, as every output of flushlab's is written.
fn deliver(from: &Path, to: &Path) -> std::io::Result<()> {
    flushlab_core::files::write_atomically(to, &std::fs::read(from)?)
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// Waits (5 ms looks) until `done` or `limit`; whether it was done.
fn wait_until(limit: Duration, mut done: impl FnMut() -> bool) -> bool {
    let until = Instant::now() + limit;
    while !done() {
        if Instant::now() >= until {
            return false;
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    true
}
