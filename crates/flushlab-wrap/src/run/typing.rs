//! `wrap --keys`: a script's keys typed into CMD's pty as a terminal types them, once CMD is
//! ready for them, each with the moment it was sent (on the clock the output's arrival is read
//! on), so that [`key_latencies`](flushlab_core::detect::keyed::key_latencies) can tell what each cost.

use std::fs::File;
use std::io;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use crate::plan::keys::Keys;
use crate::run::answers::SharedModes;
use crate::run::own_writes::OwnWrites;
use flushlab_core::detect::recording::Recording;
use flushlab_core::detect::timeline::SentKey;

/// Where a run's keys came from and what said CMD was ready for them.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
pub enum ReadyBy {
    /// A script's, once every thread of CMD was asleep and its output quiet.
    #[serde(rename = "idle")]
    Idle,
    /// A script's, `--keys-after` seconds after CMD started.
    #[serde(rename = "--keys-after")]
    KeysAfter,
    /// A person's, typed into interactive wrap (each key named by its kind only).
    #[serde(rename = "typed")]
    Typed,
}

/// The keys being sent (each recorded as it goes): whether CMD was ready, whether the script is
/// done.
pub struct Sending {
    thread: std::thread::JoinHandle<()>,
    /// Set by whoever decides CMD is ready (the run's watcher); the keys wait for it.
    pub ready: Arc<AtomicBool>,
    pub done: Arc<AtomicBool>,
}

impl Sending {
    pub fn is_finished(&self) -> bool {
        self.thread.is_finished()
    }

    pub fn join(self) {
        let _ = self.thread.join();
    }
}

/// Starts typing `keys` into `master` once `ready` is set, recording each in `recording`;
/// stops early when `stop` is set (CMD is gone).
pub fn send(
    master: File,
    keys: &Keys,
    recording: &Arc<Recording>,
    (stop, modes, own): (&Arc<AtomicBool>, &Arc<SharedModes>, &Arc<OwnWrites>),
) -> io::Result<Sending> {
    let ready = Arc::new(AtomicBool::new(false));
    let done = Arc::new(AtomicBool::new(false));
    let script = keys.script.clone();
    let (log, go, finished) = (Arc::clone(recording), Arc::clone(&ready), Arc::clone(&done));
    let (stop, modes, own) = (Arc::clone(stop), Arc::clone(modes), Arc::clone(own));
    let thread = flushlab_core::sys::spawn_thread("wrap-keys", move || {
        while !go.load(Ordering::Relaxed) {
            if stop.load(Ordering::Relaxed) {
                return;
            }
            std::thread::sleep(Duration::from_millis(1));
        }
        let (before, timeline) = script.timeline();
        let mut due = Instant::now() + before;
        for (key, pause) in timeline {
            if !sleep_until(due, &stop) {
                break;
            }
            // The bytes as CMD's modes are now (cursor keys, paste), then sent at once.
            let bytes = key.bytes(modes.get());
            if !writable(&master, &stop) {
                break;
            }
            let sending = SentKey::now(key.to_string(), bytes.len());
            if own.write_all(&master, &bytes).is_err() {
                break;
            }
            due = sending.at + pause;
            log.key_sent(sending);
        }
        finished.store(true, Ordering::Relaxed);
    })?;
    Ok(Sending {
        thread,
        ready,
        done,
    })
}

/// Sleeps until `due`, or returns `false` as soon as `stop` is set.
fn sleep_until(due: Instant, stop: &AtomicBool) -> bool {
    loop {
        if stop.load(Ordering::Relaxed) {
            return false;
        }
        let now = Instant::now();
        if now >= due {
            return true;
        }
        std::thread::sleep((due - now).min(Duration::from_millis(20)));
    }
}

/// Waits until the pty takes input (CMD reads what it was sent), or `stop`: a CMD that stops
/// reading must not hold the keys in write(2) for good.
fn writable(master: &File, stop: &AtomicBool) -> bool {
    use rustix::event::{PollFd, PollFlags, Timespec, poll};
    let tick = Timespec {
        tv_sec: 0,
        tv_nsec: 20_000_000,
    };
    loop {
        if stop.load(Ordering::Relaxed) {
            return false;
        }
        let mut fds = [PollFd::new(master, PollFlags::OUT)];
        if matches!(poll(&mut fds, Some(&tick)), Ok(1..)) {
            return true;
        }
    }
}

impl KeysRun {
    /// After the run: the keys sent, and what the watcher saw (when CMD was ready, whether by
    /// `--keys-after`, whether it settled).
    pub(crate) fn of(
        sending: Option<Sending>,
        watched: Option<(Option<Instant>, bool, bool)>,
        script: Option<&flushlab_core::keyscript::KeyScript>,
        started: Instant,
    ) -> Option<KeysRun> {
        let (sending, (ready_at, by_delay, unsettled)) = (sending?, watched?);
        sending.join();
        Some(KeysRun {
            script: script.map_or_else(String::new, |s| s.source.clone()),
            in_script: script.map_or(0, |s| s.len()),
            started_after: ready_at.map(|at| at.saturating_duration_since(started)),
            ready_by: if by_delay {
                ReadyBy::KeysAfter
            } else {
                ReadyBy::Idle
            },
            unsettled,
        })
    }
}

impl KeysRun {
    /// Interactive: the keys the user typed (`None` when none was).
    pub(crate) fn typed(
        typed: &[flushlab_core::detect::timeline::SentKey],
        started: Instant,
    ) -> Option<KeysRun> {
        let first = typed.first()?.at;
        Some(KeysRun {
            script: String::new(),
            in_script: typed.len() as u64,
            started_after: Some(first.saturating_duration_since(started)),
            ready_by: ReadyBy::Typed,
            unsettled: false,
        })
    }
}

/// How the keys of a run went (the keys themselves are in the run's timeline).
#[derive(Clone, Debug)]
pub(crate) struct KeysRun {
    pub(crate) script: String,
    pub(crate) in_script: u64,
    /// After CMD started, when the first key went (`None`: CMD was never ready).
    pub(crate) started_after: Option<Duration>,
    pub(crate) ready_by: ReadyBy,
    /// The keys were done and CMD did not settle within [`SETTLE_AT_MOST`](crate::run::watch::SETTLE_AT_MOST).
    pub(crate) unsettled: bool,
}
