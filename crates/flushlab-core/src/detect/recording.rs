//! The run's [`Timeline`] while it runs: one record that every source of wrap's appends to as
//! things happen — the key sender (or the user's keys, forwarded), the pty reader, the answering
//! terminal, the window watcher — and that becomes the timeline once, when the run is over.
//!
//! Each kind of event has its own lock: the reader appends a chunk per read (thousands a
//! second) and must never wait behind a watcher copying a window. What the observer inside the
//! program says arrives over its own channel into its own record (the preload's and the
//! tracer's, one format) and joins at [`Recording::timeline`]: its bursts need the frame
//! finder's word on which of them continue a frame, known only once everything was parsed.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, MutexGuard};

use super::timeline::{Chunks, Inside, MAX_QUERIES, Query, SentKey, Timeline, Windows};

/// The timeline being recorded; shared (`Arc`) by the threads that append to it.
#[derive(Debug, Default)]
pub struct Recording {
    keys: Mutex<Vec<SentKey>>,
    chunks: Mutex<Chunks>,
    queries: Mutex<Vec<Query>>,
    windows: Mutex<Windows>,
    /// The window's last change, read without a lock by whoever waits for the window to settle.
    last_window_change: AtomicU64,
}

/// A lock whose holder panicked still holds what was appended before.
fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

impl Recording {
    /// Keep each read of the pty apart (see [`Chunks::each_read`]).
    pub fn each_read(&self) {
        lock(&self.chunks).each_read();
    }

    /// The near end redraws (see [`Chunks::redrawn`]).
    pub fn redrawn(&self, redrawn: super::timeline::Redrawn) {
        lock(&self.chunks).redrawn(redrawn);
    }

    /// The near end's writer's bursts (see [`Chunks::near_writes`]).
    pub fn near_writes(&self, bursts: &[super::timeline::NearWrites]) {
        lock(&self.chunks).near_writes(bursts);
    }

    /// A key went to the program.
    pub fn key_sent(&self, key: SentKey) {
        lock(&self.keys).push(key);
    }

    /// The keys sent so far, in order.
    pub fn keys_sent(&self) -> Vec<SentKey> {
        lock(&self.keys).clone()
    }

    /// The reader took `len` bytes off the pty at `at_ns`.
    pub fn read(&self, at_ns: u64, len: usize) {
        lock(&self.chunks).note(at_ns, len);
    }

    /// The reads are made by this thread of wrap's.
    pub fn read_by(&self, tid: u32) {
        lock(&self.chunks).read_by(tid);
    }

    /// The program asked its terminal something (the first [`MAX_QUERIES`] are kept).
    pub fn asked(&self, query: Query) {
        let mut queries = lock(&self.queries);
        if queries.len() < MAX_QUERIES {
            queries.push(query);
        }
    }

    /// The window changed at `at_ns` (not before the last change said).
    pub fn window_changed(&self, at_ns: u64) {
        lock(&self.windows).changes.push(at_ns);
        self.last_window_change.fetch_max(at_ns, Ordering::Relaxed);
    }

    /// The display server stamped the change that arrived at `at_ns` with `server_ns` (its own
    /// clock, CLOCK_MONOTONIC, as the server keeps it: whole milliseconds on X11).
    pub fn window_stamped(&self, at_ns: u64, server_ns: u64) {
        lock(&self.windows).server.push((at_ns, server_ns));
    }

    /// The window's changes as the display's own record says them, in place of the reports
    /// that arrived while it ran: a browser's trace (its compositor's frames) is read only
    /// once the run is over.
    pub fn window_changes_replaced(&self, mut changes: Vec<u64>) {
        changes.sort_unstable();
        let last = changes.last().copied().unwrap_or(0);
        lock(&self.windows).changes = changes;
        self.last_window_change.fetch_max(last, Ordering::Relaxed);
    }

    /// The window's markers, read back after its change at `at_ns`, showed `frame`.
    pub fn window_showed(&self, at_ns: u64, frame: Option<u32>) {
        lock(&self.windows).shown.push((at_ns, frame));
    }

    /// When the window last changed (CLOCK_MONOTONIC ns; 0: never).
    pub fn last_window_change(&self) -> u64 {
        self.last_window_change.load(Ordering::Relaxed)
    }

    /// What was recorded until now, as a timeline ending now (`end_ns`), with what the observer
    /// said so far; the recording goes on. (wrap `--profile` marks a process's keys as it
    /// exits, while the run goes on.)
    pub fn so_far(&self, inside: Option<Inside>, end_ns: u64) -> Timeline {
        let mut windows = lock(&self.windows).clone();
        windows.changes.sort_unstable();
        windows.server.sort_unstable();
        Timeline {
            keys: lock(&self.keys).clone(),
            inside,
            chunks: lock(&self.chunks).clone(),
            queries: lock(&self.queries).clone(),
            windows,
            end_ns,
        }
    }

    /// What was recorded, as the run's timeline, with what the observer inside said (`None`:
    /// nobody inside said anything) and when the run ended. Takes what was recorded: a source
    /// still appending afterwards appends to an empty record.
    pub fn timeline(&self, inside: Option<Inside>, end_ns: u64) -> Timeline {
        let mut windows = std::mem::take(&mut *lock(&self.windows));
        windows.changes.sort_unstable();
        Timeline {
            keys: std::mem::take(&mut *lock(&self.keys)),
            inside,
            chunks: std::mem::take(&mut *lock(&self.chunks)),
            queries: std::mem::take(&mut *lock(&self.queries)),
            windows,
            end_ns,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn what_each_source_appended_is_the_timeline_once() {
        let recording = std::sync::Arc::new(Recording::default());
        let threads: Vec<_> = (0..4u64)
            .map(|t| {
                let recording = std::sync::Arc::clone(&recording);
                std::thread::spawn(move || {
                    for i in 0..100 {
                        recording.read(t * 1_000_000_000 + i * 1_000_000, 10);
                        recording.window_changed(t * 1000 + i);
                    }
                })
            })
            .collect();
        for thread in threads {
            thread.join().unwrap();
        }
        recording.key_sent(SentKey::now("j".into(), 1));
        recording.asked(Query {
            at_ns: 5,
            asked: "ESC[6n cursor position",
            answered: true,
        });
        recording.window_showed(7, Some(1));
        assert_eq!(recording.keys_sent().len(), 1);
        assert_eq!(recording.last_window_change(), 3099);
        // So far: the same, and the recording goes on.
        let so_far = recording.so_far(None, 10);
        let timeline = recording.timeline(None, 10);
        assert_eq!(so_far, timeline);
        assert_eq!(timeline.chunks.total(), 4000);
        assert_eq!(timeline.windows.changes.len(), 400);
        assert!(timeline.windows.changes.is_sorted());
        assert_eq!(timeline.windows.shown, [(7, Some(1))]);
        assert_eq!((timeline.keys.len(), timeline.queries.len()), (1, 1));
        assert_eq!(timeline.end_ns, 10);
        // Taken: a second look finds nothing more.
        let again = recording.timeline(None, 11);
        assert_eq!((again.keys.len(), again.chunks.total()), (0, 0));
    }

    #[test]
    fn questions_past_the_bound_are_not_kept() {
        let recording = Recording::default();
        for at_ns in 0..=MAX_QUERIES as u64 {
            recording.asked(Query {
                at_ns,
                asked: "ESC[5n status",
                answered: true,
            });
        }
        assert_eq!(recording.timeline(None, 0).queries.len(), MAX_QUERIES);
    }
}
