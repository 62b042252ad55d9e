//! The run's watcher: it waits for CMD's end (its exit, the deadline, a signal), samples CMD's
//! tree meanwhile, tells the keys when CMD is ready and when it has settled after them, and
//! ends CMD's process group when the run is over.

use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use crate::run::tree::Tree;
use crate::run::typing::Sending;
use crate::via::LinkWaits;

/// How long CMD (and then what is left of its tree) has between SIGTERM and SIGKILL.
pub(crate) const GRACE: Duration = Duration::from_secs(2);
/// How often CMD's tree is looked at while it runs.
const SAMPLE_EVERY: Duration = Duration::from_millis(10);
/// With `--keys` and no duration: once the keys are done, CMD has settled when it has been idle
/// (every thread asleep) and silent this long…
pub(crate) const SETTLE: Duration = Duration::from_millis(300);
/// … or this long after the last key, whatever it does (an animation never settles).
pub(crate) const SETTLE_AT_MOST: Duration = Duration::from_secs(5);
/// CMD is ready for keys once idle and silent this long.
const READY_QUIET: Duration = Duration::from_millis(50);

/// Waits until CMD exits (not reaped), the deadline passes or a signal arrives, looking at its
/// tree meanwhile; ends CMD in the latter two cases and says whether it did.
pub(crate) fn wait_for_end(
    pid: i32,
    child: &mut std::process::Child,
    watch: &mut Watch<'_>,
    (signal, suspend): (&AtomicUsize, Option<&AtomicBool>),
    tree: &mut Tree,
) -> bool {
    loop {
        if flushlab_core::sys::process::has_exited(pid) {
            return false;
        }
        if suspend.is_some_and(|s| s.swap(false, Ordering::Relaxed)) {
            let _ = flushlab_terminals::session::suspend();
        }
        let sig = signal.load(Ordering::Relaxed);
        let now = Instant::now();
        let keys_over = match &mut watch.keys {
            Some(keys) => keys.look(now, tree) && watch.deadline.is_none(),
            None => false,
        };
        if sig != 0 || keys_over || watch.deadline.is_some_and(|d| now >= d) {
            end_group(pid, child);
            return sig == 0;
        }
        tree.sample();
        std::thread::sleep(SAMPLE_EVERY);
    }
}

/// What the run's watcher looks at besides CMD's exit and signals: the deadline, and the keys.
pub(crate) struct Watch<'a> {
    pub(crate) deadline: Option<Instant>,
    pub(crate) keys: Option<KeyWatch<'a>>,
}

/// The keys seen from the watcher: it tells them when CMD is ready, and ends a run without a
/// duration once they are done and CMD has settled.
pub(crate) struct KeyWatch<'a> {
    pub(crate) sending: &'a Sending,
    pub(crate) after: Option<Instant>,
    pub(crate) ready_at: Option<Instant>,
    /// Samples in a row in which CMD's whole tree was asleep.
    pub(crate) idle_samples: u32,
    pub(crate) done_at: Option<Instant>,
    pub(crate) unsettled: bool,
    pub(crate) last_read: &'a AtomicU64,
    pub(crate) started: Instant,
    /// `--via`: CMD starts on the far side when its shim is told go; until then nothing the
    /// near end shows or does (the ssh client's handshake, asleep between round trips) says
    /// CMD is ready, and readiness is judged from then on.
    pub(crate) far_went: Option<std::sync::Arc<std::sync::OnceLock<Instant>>>,
    pub(crate) link: LinkWaits,
    /// The far side never started within `link.start_within`: the run ended for it.
    pub(crate) never_started: bool,
}

impl KeyWatch<'_> {
    /// One look: whether the keys are done and CMD has settled (the run may end).
    fn look(&mut self, now: Instant, tree: &Tree) -> bool {
        let idle = tree.idle();
        self.idle_samples = if idle { self.idle_samples + 1 } else { 0 };
        let read_ns = self.last_read.load(Ordering::Relaxed);
        let last_read = self.started + Duration::from_nanos(read_ns);
        if self.ready_at.is_none() {
            // Ready: the delay given is over, or CMD's tree asleep in two looks 10 ms apart and
            // its output quiet for READY_QUIET after it drew something (a program asleep
            // while it waits for the terminal's answer, or between two steps of its start, is
            // not waiting for a key yet); one that draws nothing, after READY_QUIET × 10.
            // Over a link, CMD's first frame is half a round trip away from its start.
            let from = match &self.far_went {
                None => self.started,
                Some(went) => match went.get() {
                    Some(at) => *at,
                    None => {
                        let over = self
                            .link
                            .start_within
                            .is_some_and(|within| now - self.started >= within);
                        self.never_started = over;
                        return over;
                    }
                },
            };
            let quiet_since = if read_ns > 0 && last_read >= from {
                last_read
            } else {
                from + READY_QUIET * 9 + self.link.round_trip
            };
            let ready = match self.after {
                Some(after) => now >= after,
                None => {
                    self.idle_samples >= 2
                        && now.saturating_duration_since(quiet_since) >= READY_QUIET
                }
            };
            if ready {
                self.ready_at = Some(now);
                self.sending.ready.store(true, Ordering::Relaxed);
            }
            return false;
        }
        if !self.sending.done.load(Ordering::Relaxed) && !self.sending.is_finished() {
            return false;
        }
        let done_at = *self.done_at.get_or_insert(now);
        // The last key's answer is a round trip away.
        let quiet =
            now.saturating_duration_since(last_read.max(done_at)) >= SETTLE + self.link.round_trip;
        if idle && quiet {
            return true;
        }
        if now - done_at >= SETTLE_AT_MOST + self.link.more_at_most {
            self.unsettled = true;
            return true;
        }
        false
    }
}

/// SIGTERM to CMD's process group (it leads a session of its own), SIGKILL after [`GRACE`];
/// returns once CMD has exited (not reaped).
pub(crate) fn end_group(pid: i32, child: &mut std::process::Child) {
    use flushlab_core::sys::process::has_exited;
    use flushlab_core::sys::signals::{Signal, signal_group};
    let _ = signal_group(pid, Signal::TERM);
    let until = Instant::now() + GRACE;
    while Instant::now() < until {
        if has_exited(pid) {
            return;
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    let _ = signal_group(pid, Signal::KILL);
    let _ = child.kill();
    while !has_exited(pid) {
        std::thread::sleep(Duration::from_millis(5));
    }
}
