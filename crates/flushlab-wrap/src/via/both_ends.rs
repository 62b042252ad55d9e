//! `--via`'s observer: one kernel observer for both ends of the wire. It follows the near end
//! (the layer wrap spawns: the ssh client, the tmux client and the server it forks) on wrap's
//! pty, and CMD on the far side once its shim names itself ([`FarRoot`]). At the end the
//! records are taken apart by the tree's shape: the far end is the shim and every process forked
//! from it, the rest is the near end, whose writes are each frame's pieces (the recording's
//! [`NearWrites`]).

use std::collections::HashSet;
use std::sync::{Arc, Mutex, PoisonError};

use flushlab_observer::Sightings;
use flushlab_observer::kernel::Attached;

use super::far_root::FarRoot;
use flushlab_core::detect::recording::Recording;
use flushlab_core::detect::timeline::NearWrites;

/// `--via`'s observer: one for both ends.
pub struct BothEnds {
    far: FarRoot,
    /// `None` where eBPF was refused.
    kernel: Option<Arc<Mutex<Attached>>>,
    /// Where the near end's writes go; `None` where there is no near end (`--terminal`: the
    /// emulator started the root).
    recording: Option<Arc<Recording>>,
}

impl BothEnds {
    pub fn new(
        far: FarRoot,
        kernel: Option<Arc<Mutex<Attached>>>,
        recording: Option<&Arc<Recording>>,
    ) -> BothEnds {
        BothEnds {
            far,
            kernel,
            recording: recording.map(Arc::clone),
        }
    }

    pub fn kernel(&self) -> Option<&Arc<Mutex<Attached>>> {
        self.kernel.as_ref()
    }

    /// When CMD's shim was told go.
    pub fn went(&self) -> Arc<std::sync::OnceLock<std::time::Instant>> {
        self.far.went()
    }

    /// After both ends are gone: what the far end said, the near end's writes given to the
    /// recording; `None` where eBPF was refused.
    pub fn finish(self) -> Option<Sightings> {
        // A far side that never started is the run's own one line, said once it is over.
        let started = self.far.went().get().is_some();
        let root = self
            .far
            .rooted()
            .inspect_err(|why| {
                if !started && self.recording.is_some() {
                    return;
                }
                flushlab_core::outcome::complain(&if self.recording.is_some() {
                    format!(
                        "wrap --via: the observer did not look at the far end ({why}); the \
                         near end's figures stand alone"
                    )
                } else {
                    format!("wrap --terminal: the kernel observer did not look at CMD ({why})")
                });
            })
            .ok();
        let kernel = Arc::into_inner(self.kernel?)?
            .into_inner()
            .unwrap_or_else(PoisonError::into_inner);
        let mut sightings = kernel.finish().unwrap_or_default();
        let far = far_end(root, &sightings.forks);
        if let Some(recording) = &self.recording {
            recording.near_writes(&near_writes(&sightings, |pid| !far.contains(&pid)));
        }
        sightings.hellos.retain(|(pid, _)| far.contains(pid));
        for records in [
            &mut sightings.waits,
            &mut sightings.tails,
            &mut sightings.reads,
            &mut sightings.releases,
            &mut sightings.waiting,
        ] {
            records.retain(|w| far.contains(&w.pid));
        }
        Some(sightings)
    }
}

/// The far end's processes: its root and every process forked from one of them, the forks
/// taken in order. The root may have been forked in the tree (by tmux's server, near) before it
/// named itself; a far pid that a near process's fork reuses is the near end's from then on.
fn far_end(root: Option<u32>, forks: &[(u32, u32)]) -> HashSet<u32> {
    let Some(root) = root else {
        return HashSet::new();
    };
    let mut far = HashSet::from([root]);
    for &(child, parent) in forks {
        if child == root || far.contains(&parent) {
            far.insert(child);
        } else {
            far.remove(&child);
        }
    }
    far
}

/// The near end's bursts of writes to the near pty (each ended by its wait, or its exit), in
/// the order they ended.
fn near_writes(sightings: &Sightings, near: impl Fn(u32) -> bool) -> Vec<NearWrites> {
    let mut bursts: Vec<_> = sightings
        .waits
        .iter()
        .chain(&sightings.tails)
        .filter(|w| near(w.pid) && w.writes > 0)
        .map(|w| NearWrites {
            first_ns: w.first_write_ns.min(w.start_ns),
            end_ns: w.start_ns,
            writes: w.writes,
            bytes: w.bytes,
        })
        .collect();
    bursts.sort_by_key(|b| b.end_ns);
    bursts
}

#[cfg(test)]
mod tests {
    use super::far_end;

    #[test]
    fn the_far_end_is_the_root_and_what_it_forked() {
        // 10 (the ssh client, near) forks 11; the root 20 forks 21, which forks 22; 21 ends and
        // the near end's 11 forks a process that gets 21's pid.
        let forks = [(11, 10), (21, 20), (22, 21), (21, 11)];
        let far = far_end(Some(20), &forks);
        assert_eq!(far, [20, 22].into_iter().collect());
        assert!(far_end(None, &forks).is_empty());
        // tmux's server 30 (near) forked the root 31 before it named itself.
        let far = far_end(Some(31), &[(30, 10), (31, 30), (32, 31), (33, 30)]);
        assert_eq!(far, [31, 32].into_iter().collect());
    }
}
