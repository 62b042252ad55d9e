//! The keys in a terminal: when CMD is ready for them (asleep, its window quiet), each typed when
//! it is due and recorded as it goes, and when CMD has settled after the last.

use std::time::{Duration, Instant};

use super::cmd::asleep;
use super::desk::{Desk, Typed};
use flushlab_core::detect::recording::Recording;
use flushlab_core::detect::timeline::SentKey;

/// CMD is ready for keys once its threads are asleep and the window has not changed this long.
pub(super) const READY_QUIET: Duration = Duration::from_millis(100);

/// Once the keys are done: the window unchanged and CMD asleep this long ends the run…
pub(super) const SETTLE: Duration = Duration::from_millis(300);

/// A CMD asleep this long with its window never changed is ready too: a program that draws
/// nothing until it is typed to (`cat`) would otherwise never get a key.
pub(super) const READY_UNDRAWN: Duration = Duration::from_secs(1);

/// … or this long after the last key, whatever it does.
pub(super) const SETTLE_AT_MOST: Duration = Duration::from_secs(5);

/// Types each key when it is due (the first after `before`, each next after its pause), until
/// they are done or `over`; each key recorded with its send time, taken just before its events
/// go.
pub(super) fn type_keys<D: Desk>(
    desk: &D,
    (before, strokes): (Duration, &[Typed<D::Stroke>]),
    recording: &Recording,
    mut over: impl FnMut() -> bool,
) -> anyhow::Result<()> {
    let mut due = Instant::now() + before;
    for typed in strokes {
        while Instant::now() < due && !over() {
            std::thread::sleep((due - Instant::now()).min(Duration::from_millis(10)));
        }
        if over() {
            break;
        }
        let key = SentKey::now(typed.name.clone(), 0);
        desk.type_stroke(&typed.stroke)?;
        due = key.at + typed.pause;
        recording.key_sent(key);
    }
    Ok(())
}

/// Waits until CMD is ready for keys — `after` has come, or its threads have been asleep in two
/// looks and its window has not changed for [`READY_QUIET`] since it first changed, or it has
/// been asleep for [`READY_UNDRAWN`] with the window never changed — or until `over`; when it
/// was ready.
pub(super) fn wait_until_ready(
    pid: i32,
    after: Option<Instant>,
    recording: &Recording,
    mut over: impl FnMut() -> bool,
) -> Option<Instant> {
    let mut asleep_looks = 0;
    let mut asleep_since = None;
    while !over() {
        let now = Instant::now();
        if asleep(pid) {
            asleep_looks += 1;
            asleep_since.get_or_insert(now);
        } else {
            (asleep_looks, asleep_since) = (0, None);
        }
        let changed = recording.last_window_change();
        let quiet = match changed {
            0 => asleep_since.is_some_and(|since| now - since >= READY_UNDRAWN),
            _ => {
                flushlab_core::sys::monotonic_ns().saturating_sub(changed)
                    >= READY_QUIET.as_nanos() as u64
            }
        };
        let ready = match after {
            Some(after) => now >= after,
            None => asleep_looks >= 2 && quiet,
        };
        if ready {
            return Some(now);
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    None
}

/// After the last key: waits until CMD is asleep and its window has been unchanged for
/// [`SETTLE`] (true), or [`SETTLE_AT_MOST`] has passed (false), or `over` (true).
pub(super) fn settle(pid: i32, recording: &Recording, mut over: impl FnMut() -> bool) -> bool {
    let from = Instant::now();
    let from_ns = flushlab_core::sys::monotonic_ns();
    while !over() {
        let changed = recording.last_window_change().max(from_ns);
        let quiet =
            flushlab_core::sys::monotonic_ns().saturating_sub(changed) >= SETTLE.as_nanos() as u64;
        if quiet && asleep(pid) {
            return true;
        }
        if from.elapsed() >= SETTLE_AT_MOST {
            return false;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    true
}
