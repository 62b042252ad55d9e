//! What the observer said, as a run's timeline holds it: the sightings (preload, tracer or
//! kernel, one shape) turned into the core's `Inside` — each thread's bursts of terminal writes,
//! its reads of the terminal, its waits — on CLOCK_MONOTONIC.

use std::sync::Mutex;

use flushlab_observer::Sightings;

use crate::observers::Observation;
use crate::observers::inside_report::InsideReport;
use flushlab_core::detect::finder::FrameFinder;

/// After CMD's tree is gone: what the observer saw, as the report says it, and, where the frames
/// are CMD's waits, the timeline's events; the frame finder is told the waits (and, where every
/// terminal write was seen, the bursts: the count the keys' frames add up to). `program` is
/// CMD's name, `writer` the tree's writer's executable.
pub(crate) fn seen_from_inside(
    inside: Observation,
    finder: &Mutex<FrameFinder>,
    (program, writer): (&str, &str),
) -> (
    InsideReport,
    Option<flushlab_core::detect::timeline::Inside>,
) {
    let (base, fix, way) = (inside.base(), inside.fix, inside.way());
    let why = inside.why().to_owned();
    let redrawn = inside.redrawn();
    let sightings = inside.finish();
    let mut finder = finder.lock().unwrap_or_else(|e| e.into_inner());
    // Through a layer that redraws, the near end's bytes are its redraws: what CMD wrote is
    // what the observer saw at the far end, with nothing to hold it to.
    let (received, newlines) = if redrawn {
        (sightings.writes().1, 0)
    } else {
        (finder.bytes, finder.newlines)
    };
    let report = InsideReport::of(
        &sightings,
        received,
        newlines,
        program,
        (way, fix, &why, writer),
    );
    if !report.frames_from_waits() {
        return (report, None);
    }
    finder.set_waits(&sightings.boundaries(), base);
    let mut events = timeline(&sightings);
    // (A shell whose builtin draws while its child sleeps waits in no call the observer sees:
    // its output is all a tail, no burst, and its frames are told by when the child's waits
    // were.)
    if report.saw_every_write() && !events.bursts.is_empty() {
        let bursts: Vec<(u64, u64)> = events.bursts.iter().map(|b| (b.end_ns, b.bytes)).collect();
        finder.set_bursts(&bursts, base);
        for (burst, continues) in events
            .bursts
            .iter_mut()
            .zip(finder.continuing_bursts().unwrap_or_default())
        {
            burst.continues = continues;
        }
    }
    (report, Some(events))
}

/// The frames' bursts: each wait's writes before it, and the writes of processes that never
/// waited, which end with them (or their exec, or their fork). Those tails are one frame until
/// the tree waits: a shell's child that answers a line and exits (`/bin/echo`) draws one, and a
/// shell that draws each row with a `printf` child and then sleeps draws one a sleep, not one
/// a child (the shell's wait for each child is no wait for the world). Tails with no wait
/// between them and a wait's writes are that wait's frame. A program that waited keeps its last
/// writes as it quits (a teardown) out of its frames.
fn bursts(
    sightings: &Sightings,
    waited: &std::collections::HashSet<u32>,
) -> Vec<flushlab_core::detect::timeline::Burst> {
    use flushlab_core::detect::timeline::Burst;
    let burst = |w: &flushlab_observer::Wait| Burst {
        pid: w.pid,
        tid: w.tid,
        first_write_ns: w.first_write_ns.min(w.start_ns),
        end_ns: w.start_ns,
        writes: w.writes,
        bytes: w.bytes,
        continues: false,
    };
    let mut events: Vec<(&flushlab_observer::Wait, bool)> = sightings
        .waits
        .iter()
        .map(|w| (w, false))
        .chain(
            sightings
                .tails
                .iter()
                .filter(|t| t.writes > 0 && !waited.contains(&t.pid))
                .map(|t| (t, true)),
        )
        .collect();
    events.sort_by_key(|(w, _)| w.start_ns);
    let mut bursts = Vec::new();
    let mut pending: Option<Burst> = None;
    for (w, tail) in events {
        let joined = pending.take().map(|mut run| {
            if w.writes > 0 {
                run.pid = w.pid;
                run.tid = w.tid;
                run.first_write_ns = run.first_write_ns.min(w.first_write_ns.min(w.start_ns));
                run.end_ns = w.start_ns;
                run.writes += w.writes;
                run.bytes += w.bytes;
            }
            run
        });
        match (tail, joined) {
            (true, run) => pending = Some(run.unwrap_or_else(|| burst(w))),
            (false, Some(run)) => bursts.push(run),
            (false, None) if w.writes > 0 => bursts.push(burst(w)),
            (false, None) => {}
        }
    }
    bursts.extend(pending);
    bursts
}

/// What the observer said, as the run's timeline holds it: each thread's bursts of terminal
/// writes (a wait after writes ends one; the writes after a thread's last wait are its tail),
/// its reads of the terminal, its waits, the bound's releases; times stay on CLOCK_MONOTONIC.
pub fn timeline(sightings: &Sightings) -> flushlab_core::detect::timeline::Inside {
    use flushlab_core::detect::timeline::{Inside, Release, TerminalRead, WaitKind, WaitSpan};
    let waited: std::collections::HashSet<u32> = sightings.waits.iter().map(|w| w.pid).collect();
    Inside {
        reads: sightings
            .reads
            .iter()
            .map(|r| TerminalRead {
                pid: r.pid,
                tid: r.tid,
                end_ns: r.end_ns,
                bytes: r.bytes,
            })
            .collect(),
        bursts: bursts(sightings, &waited),
        waits: sightings
            .waits
            .iter()
            .map(|w| WaitSpan {
                pid: w.pid,
                tid: w.tid,
                kind: WaitKind::from_wire(w.how),
                start_ns: w.start_ns,
                end_ns: w.end_ns.max(w.start_ns),
                timed_out: w.timed_out,
            })
            .collect(),
        releases: sightings
            .releases
            .iter()
            .map(|r| Release {
                at_ns: r.start_ns,
                bytes: r.bytes,
            })
            .collect(),
        tail_bytes: sightings
            .tails
            .iter()
            .filter(|t| waited.contains(&t.pid))
            .map(|t| t.bytes)
            .sum(),
    }
    .sorted()
}

#[cfg(test)]
mod tests {
    use flushlab_core::detect::timeline::WaitKind;
    use flushlab_observer::wire;

    /// The core reads a wait's kind by record.h's numbers (the core does not depend on the
    /// observer crate: held here, where both are seen).
    #[test]
    fn the_cores_kinds_of_wait_are_record_hs() {
        for (code, kind) in [
            (wire::W_POLL, WaitKind::Poll),
            (wire::W_SELECT, WaitKind::Select),
            (wire::W_EPOLL, WaitKind::Epoll),
            (wire::W_SLEEP, WaitKind::Sleep),
            (wire::W_SIGNAL, WaitKind::Signal),
            (wire::W_FUTEX, WaitKind::Futex),
            (wire::W_READ, WaitKind::Read),
        ] {
            assert_eq!(WaitKind::from_wire(code), Some(kind), "{code}");
        }
        assert_eq!(WaitKind::from_wire(0), None);
    }
}
