//! `--via`'s observer: one kernel observer for both ends of the wire. It follows the near end's
//! writer (the ssh client wrap spawns) on wrap's pty, and CMD on the far side once its shim names
//! itself ([`FarRoot`]); at the end the near writer's records are taken apart from CMD's: its
//! writes are each frame's pieces (the recording's [`NearWrites`]), and the rest is what CMD did.

use std::sync::{Arc, Mutex, PoisonError};

use flushlab_observer::Sightings;
use flushlab_observer::kernel::Attached;

use super::far_root::FarRoot;
use crate::detect::recording::Recording;
use crate::detect::timeline::NearWrites;

/// `--via`'s observer: one for both ends.
pub struct BothEnds {
    far: FarRoot,
    /// `None` where eBPF was refused.
    kernel: Option<Arc<Mutex<Attached>>>,
    /// The near end's writer, once spawned.
    near: Option<u32>,
    /// Where the near end's writes go.
    recording: Arc<Recording>,
}

impl BothEnds {
    pub fn new(
        far: FarRoot,
        kernel: Option<Arc<Mutex<Attached>>>,
        recording: &Arc<Recording>,
    ) -> BothEnds {
        BothEnds {
            far,
            kernel,
            near: None,
            recording: Arc::clone(recording),
        }
    }

    /// The near end's writer is `pid`.
    pub fn near_is(&mut self, pid: u32) {
        self.near = Some(pid);
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
        if let Err(why) = self.far.rooted() {
            crate::outcome::complain(&format!(
                "wrap --via: the observer did not look at the far end ({why}); the near end's \
                 figures stand alone"
            ));
        }
        let kernel = Arc::into_inner(self.kernel?)?
            .into_inner()
            .unwrap_or_else(PoisonError::into_inner);
        let mut sightings = kernel.finish().unwrap_or_default();
        let near = self.near?;
        self.recording.near_writes(&near_writes(&sightings, near));
        sightings.hellos.retain(|(pid, _)| *pid != near);
        for records in [
            &mut sightings.waits,
            &mut sightings.tails,
            &mut sightings.reads,
            &mut sightings.releases,
            &mut sightings.waiting,
        ] {
            records.retain(|w| w.pid != near);
        }
        Some(sightings)
    }
}

/// The near end's writer's (`near`) bursts of writes to the near pty, in the order it made them
/// (each ended by its wait, or its exit).
fn near_writes(sightings: &Sightings, near: u32) -> Vec<NearWrites> {
    let mut bursts: Vec<_> = sightings
        .waits
        .iter()
        .chain(&sightings.tails)
        .filter(|w| w.pid == near && w.writes > 0)
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
