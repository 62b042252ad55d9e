//! A wrapped run's [`Timeline`] as Chrome trace-event JSON, the format Perfetto's UI,
//! `chrome://tracing` and the Firefox Profiler open: a track (or a few, where keys overlap) for
//! the keys, each a slice from sent to its frame's end with its stages nested in it and its
//! drain after it; a track a thread of the program with its write bursts (frames: answering a
//! key, unprompted, or before the keys), its waits and its reads of the terminal; wrap's reader
//! with the stretches it took off the pty and the questions the program asked; held bytes let
//! out under `--try`. Times are CLOCK_MONOTONIC in microseconds, pids and tids the kernel's.
//!
//! Pure: the run and its key figures in, bytes out. The key slices are drawn from the key
//! figures of the report (integral nanoseconds), so a slice's duration is the report's figure.

use serde::Serialize;
use serde_json::{Value, json};

use crate::detect::keyed::{KeyAnswer, KeyLatencies, Stage};
use crate::detect::timeline::{Burst, Inside, Timeline};

/// Made-up tids for tracks that are no thread of the kernel's: above any pid the kernel hands
/// out (`pid_max` is at most 2^22).
const KEYS_TID: u32 = 1_000_000_000;
const READER_TID: u32 = 1_000_001_000;
const WINDOW_TID: u32 = 1_000_002_000;

/// A run to draw as a trace.
#[derive(Clone, Copy, Debug)]
pub struct TraceRun<'a> {
    pub timeline: &'a Timeline,
    /// The keys' figures (the report's), when keys were sent.
    pub keys: Option<&'a KeyLatencies>,
    /// CMD as the user gave it (a process track's name).
    pub command: &'a str,
    /// wrap's own process: its reader's track and the keys'.
    pub wrap_pid: u32,
}

/// One trace event (the fields trace-event JSON knows).
#[derive(Clone, Debug, PartialEq, Serialize)]
struct Event {
    name: String,
    #[serde(skip_serializing_if = "str::is_empty")]
    cat: &'static str,
    ph: &'static str,
    /// Microseconds.
    ts: f64,
    #[serde(skip_serializing_if = "Option::is_none")]
    dur: Option<f64>,
    pid: u32,
    tid: u32,
    /// An instant's scope: `t` its thread, `p` its process.
    #[serde(skip_serializing_if = "Option::is_none")]
    s: Option<&'static str>,
    #[serde(skip_serializing_if = "Value::is_null")]
    args: Value,
}

fn us(ns: u64) -> f64 {
    ns as f64 / 1e3
}

impl Event {
    fn slice(name: String, cat: &'static str, (pid, tid): (u32, u32), span: (u64, u64)) -> Event {
        Event {
            name,
            cat,
            ph: "X",
            ts: us(span.0),
            dur: Some(us(span.1.saturating_sub(span.0))),
            pid,
            tid,
            s: None,
            args: Value::Null,
        }
    }

    fn instant(name: String, cat: &'static str, (pid, tid): (u32, u32), at: u64) -> Event {
        Event {
            name,
            cat,
            ph: "i",
            ts: us(at),
            dur: None,
            pid,
            tid,
            s: Some("t"),
            args: Value::Null,
        }
    }

    fn name_of(what: &'static str, (pid, tid): (u32, u32), name: String) -> Event {
        Event {
            name: what.to_owned(),
            cat: "",
            ph: "M",
            ts: 0.0,
            dur: None,
            pid,
            tid,
            s: None,
            args: json!({ "name": name }),
        }
    }

    fn with(mut self, args: Value) -> Event {
        self.args = args;
        self
    }
}

/// The trace as JSON bytes.
pub fn trace_json(run: &TraceRun) -> serde_json::Result<Vec<u8>> {
    let mut events = events(run);
    // Metadata first, then by time, a slice before what it holds.
    events.sort_by(|a, b| {
        (a.ph != "M")
            .cmp(&(b.ph != "M"))
            .then(a.ts.total_cmp(&b.ts))
            .then(b.dur.unwrap_or(0.0).total_cmp(&a.dur.unwrap_or(0.0)))
    });
    serde_json::to_vec(&json!({
        "traceEvents": events,
        "displayTimeUnit": "ms",
        "otherData": {
            "producer": concat!("flushlab ", env!("CARGO_PKG_VERSION")),
            "command": run.command,
            "clock": "CLOCK_MONOTONIC",
        },
    }))
}

fn events(run: &TraceRun) -> Vec<Event> {
    let t = run.timeline;
    let wrap = run.wrap_pid;
    let mut events = vec![Event::name_of(
        "process_name",
        (wrap, 0),
        "flushlab wrap".to_owned(),
    )];
    let answering = run.keys.map_or(&[][..], |k| &k.each[..]);
    events.extend(key_events(answering, wrap));
    if t.windows.changes.is_empty() {
        events.extend(reader_events(t, wrap));
    } else {
        // A terminal read the pty, not wrap: its window's changes are the track.
        let window = (wrap, WINDOW_TID);
        events.push(Event::name_of(
            "thread_name",
            window,
            "the terminal's window (DAMAGE)".to_owned(),
        ));
        events.extend(
            t.windows
                .changes
                .iter()
                .map(|&at| Event::instant("window changed".to_owned(), "pixels", window, at)),
        );
    }
    if let Some(inside) = &t.inside {
        let first_key = t.keys.first().map(|k| k.at_ns);
        events.extend(program_events(inside, answering, run.command, first_key));
    }
    events
}

/// wrap's reader: what it took off the pty, and what the program asked.
fn reader_events(t: &Timeline, wrap: u32) -> Vec<Event> {
    let reader = (wrap, t.chunks.reader_tid().unwrap_or(READER_TID));
    let mut events = vec![Event::name_of(
        "thread_name",
        reader,
        "wrap's reader of the pty".to_owned(),
    )];
    for (first, last, bytes) in t.chunks.stretches() {
        events.push(
            Event::slice("pty read".to_owned(), "pty", reader, (first, last))
                .with(json!({ "bytes": bytes })),
        );
    }
    for q in &t.queries {
        events.push(
            Event::instant(q.asked.to_owned(), "query", reader, q.at_ns)
                .with(json!({ "answered": q.answered })),
        );
    }
    events
}

/// The program's processes and threads, as the observer saw them: frames, waits, reads, and
/// the held bytes let out.
fn program_events(
    inside: &Inside,
    answering: &[KeyAnswer],
    command: &str,
    first_key: Option<u64>,
) -> Vec<Event> {
    let mut pids: Vec<u32> = inside
        .bursts
        .iter()
        .map(|b| b.pid)
        .chain(inside.waits.iter().map(|w| w.pid))
        .chain(inside.reads.iter().map(|r| r.pid))
        .collect();
    pids.sort_unstable();
    pids.dedup();
    let mut events: Vec<Event> = pids
        .iter()
        .map(|&pid| Event::name_of("process_name", (pid, 0), format!("CMD: {command}")))
        .collect();
    for (i, b) in inside.bursts.iter().enumerate() {
        let key = answering.iter().position(|k| k.burst == Some(i));
        events.push(burst_event(b, key.map(|k| (k, &answering[k])), first_key));
    }
    for w in &inside.waits {
        let name = match w.kind {
            Some(kind) => format!("wait: {}", kind.name()),
            None => "wait".to_owned(),
        };
        events.push(Event::slice(
            name,
            "wait",
            (w.pid, w.tid),
            (w.start_ns, w.end_ns),
        ));
    }
    for r in &inside.reads {
        events.push(
            Event::instant("terminal read".to_owned(), "read", (r.pid, r.tid), r.end_ns)
                .with(json!({ "bytes": r.bytes })),
        );
    }
    // Held bytes are let out by the observer's watchdog thread, in the process that drew most.
    let drawer = pids
        .iter()
        .copied()
        .max_by_key(|&pid| inside.bursts.iter().filter(|b| b.pid == pid).count());
    if let Some(drawer) = drawer {
        for r in &inside.releases {
            let mut e = Event::instant(
                "held bytes let out".to_owned(),
                "release",
                (drawer, 0),
                r.at_ns,
            )
            .with(json!({ "bytes": r.bytes }));
            e.s = Some("p");
            events.push(e);
        }
    }
    events
}

fn burst_event(b: &Burst, key: Option<(usize, &KeyAnswer)>, first_key: Option<u64>) -> Event {
    let (name, args) = match key {
        Some((i, k)) => (
            format!("frame for key {} {}", i + 1, k.key),
            json!({ "writes": b.writes, "bytes": b.bytes, "key": i + 1 }),
        ),
        None => (
            if first_key.is_some_and(|at| b.first_write_ns >= at) {
                "unprompted frame".to_owned()
            } else {
                "frame".to_owned()
            },
            json!({ "writes": b.writes, "bytes": b.bytes }),
        ),
    };
    Event::slice(name, "frame", (b.pid, b.tid), (b.first_write_ns, b.end_ns)).with(args)
}

/// Each key on a track of its own kind: a slice from sent to its frame's end with its stages in
/// it, its drain (or in a real terminal its paint) after it. Keys whose spans overlap (keys queued behind a slow frame) go on
/// further lanes, so that slices on one track always nest.
fn key_events(keys: &[KeyAnswer], wrap: u32) -> Vec<Event> {
    let mut events = Vec::new();
    let mut lanes: Vec<u64> = Vec::new();
    for (i, k) in keys.iter().enumerate() {
        let sent = k.sent_ns;
        let frame_end = k.frame_end_ns();
        let spans = k.stage_spans();
        // Drain and paint come after the frame's end, on the same lane.
        let after = spans.iter().map(|s| s.2).max();
        let busy_until = after.or(frame_end).unwrap_or(sent);
        let lane = match lanes.iter().position(|&free| free <= sent) {
            Some(lane) => lane,
            None => {
                lanes.push(0);
                events.push(Event::name_of(
                    "thread_name",
                    (wrap, KEYS_TID + lanes.len() as u32 - 1),
                    if lanes.len() == 1 {
                        "keys".to_owned()
                    } else {
                        format!("keys (overlapping, {})", lanes.len())
                    },
                ));
                lanes.len() - 1
            }
        };
        lanes[lane] = busy_until;
        let track = (wrap, KEYS_TID + lane as u32);
        let args = json!({
            "key": i + 1,
            "key_to_frame_ms": k.frame_ms,
            "first_byte_ms": k.first_byte_ms,
            "frame_end": k.frame_end,
            "writes": k.writes,
            "bytes": k.bytes,
            "stages_ms": k.stages_ms,
        });
        let Some(end) = frame_end else {
            events.push(
                Event::instant(format!("{} (no frame)", k.key), "key", track, sent).with(args),
            );
            continue;
        };
        events.push(Event::slice(k.key.clone(), "key", track, (sent, end)).with(args));
        // Over a wire the input delay is the uplink and the drain the downlink, and the frame's
        // last byte at the near end is a mark with its pieces.
        let wire = k.near.last_byte_ms.is_some();
        for (stage, from, to) in spans {
            let name = match (stage, wire) {
                (Stage::InputDelay, true) => "uplink",
                (Stage::Drain, true) => "downlink",
                _ => stage.name(),
            };
            events.push(Event::slice(name.to_owned(), "stage", track, (from, to)));
        }
        if let (Some(last), Some(pieces)) = (k.near.last_byte_ms, k.near.pieces) {
            let at = sent + (last * 1e6).round() as u64;
            events.push(
                Event::instant(format!("last byte ({pieces} pieces)"), "wire", track, at)
                    .with(json!({ "pieces": pieces, "tear_ms": k.near.tear_ms })),
            );
        }
    }
    events
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::detect::keyed::key_latencies;
    use crate::detect::timeline::{
        Chunks, Inside, Query, SentKey, TerminalRead, WaitKind, WaitSpan,
    };

    const MS: u64 = 1_000_000;

    fn burst(first_ms: u64, end_ms: u64) -> Burst {
        Burst {
            pid: 7,
            tid: 7,
            first_write_ns: first_ms * MS,
            end_ns: end_ms * MS,
            writes: 100,
            bytes: 1000,
            continues: false,
        }
    }

    /// Three keys 10 ms apart whose frames take 25 ms each (they queue), a clock's frame
    /// between them nobody asked for, and a question the program asked.
    fn run() -> Timeline {
        let key = |at_ms: u64| SentKey {
            at: std::time::Instant::now(),
            at_ns: at_ms * MS,
            key: "<Down>".into(),
            bytes: 0,
        };
        let read = |end_ms: u64| TerminalRead {
            pid: 7,
            tid: 8,
            end_ns: end_ms * MS,
            bytes: 3,
        };
        let bursts = vec![
            burst(101, 126),
            burst(126, 151),
            burst(151, 176),
            burst(300, 302),
        ];
        let mut chunks = Chunks::default();
        for b in &bursts {
            chunks.note(b.end_ns + MS, b.bytes as usize);
        }
        Timeline {
            keys: vec![key(100), key(110), key(120)],
            inside: Some(
                Inside {
                    reads: vec![read(101), read(111), read(121)],
                    bursts,
                    waits: vec![WaitSpan {
                        pid: 7,
                        tid: 7,
                        kind: Some(WaitKind::Poll),
                        start_ns: 176 * MS,
                        end_ns: 300 * MS,
                        timed_out: false,
                    }],
                    ..Inside::default()
                }
                .sorted(),
            ),
            chunks,
            queries: vec![Query {
                at_ns: 50 * MS,
                asked: "ESC[6n cursor position",
                answered: true,
            }],
            windows: Default::default(),
            end_ns: 400 * MS,
        }
    }

    fn named<'a>(events: &'a [Event], name: &str) -> Vec<&'a Event> {
        events.iter().filter(|e| e.name == name).collect()
    }

    #[test]
    fn keys_that_overlap_go_on_lanes_of_their_own_and_frames_say_whom_they_answer() {
        let timeline = run();
        let keys = key_latencies(&timeline);
        let events = events(&TraceRun {
            timeline: &timeline,
            keys: Some(&keys),
            command: "prog",
            wrap_pid: 1,
        });
        let key_slices = named(&events, "<Down>");
        assert_eq!(key_slices.len(), 3);
        // Each key's span overlaps the next's: three lanes, each named.
        let tids: Vec<u32> = key_slices.iter().map(|e| e.tid).collect();
        assert_eq!(tids, [KEYS_TID, KEYS_TID + 1, KEYS_TID + 2]);
        assert_eq!(
            events
                .iter()
                .filter(|e| e.name == "thread_name" && e.tid >= KEYS_TID && e.tid < READER_TID)
                .count(),
            3
        );
        // The second key waited behind the first frame: its processing is the wait.
        assert_eq!(key_slices[1].dur, Some(41_000.0));
        let processing = named(&events, "processing");
        assert_eq!(processing[1].dur, Some(15_000.0));
        assert_eq!(named(&events, "frame for key 2 <Down>").len(), 1);
        assert_eq!(named(&events, "unprompted frame").len(), 1);
        assert_eq!(named(&events, "wait: poll").len(), 1);
        assert_eq!(named(&events, "terminal read").len(), 3);
        let asked = named(&events, "ESC[6n cursor position");
        assert_eq!((asked.len(), asked[0].ts), (1, 50_000.0));
        // Drain after each frame: 1 ms.
        assert!(
            named(&events, "drain")
                .iter()
                .all(|e| e.dur == Some(1000.0))
        );
    }

    #[test]
    fn over_a_wire_the_stages_are_the_links_and_the_last_byte_is_marked() {
        let timeline = run();
        let mut keys = key_latencies(&timeline);
        keys.each[0].near = crate::detect::keyed::AtNearEnd {
            last_byte_ms: Some(12.0),
            pieces: Some(3),
            tear_ms: Some(0.5),
        };
        let events = events(&TraceRun {
            timeline: &timeline,
            keys: Some(&keys),
            command: "prog",
            wrap_pid: 1,
        });
        // The first key's input delay and drain are its uplink and downlink; the others'
        // (no figures at a near end) keep their names.
        assert_eq!(named(&events, "uplink").len(), 1);
        assert_eq!(named(&events, "downlink").len(), 1);
        assert_eq!(named(&events, "drain").len(), 2);
        let mark = named(&events, "last byte (3 pieces)");
        let sent = keys.each[0].sent_ns as f64 / 1e3;
        assert_eq!((mark.len(), mark[0].ts), (1, sent + 12_000.0));
    }

    #[test]
    fn a_run_without_keys_or_observer_still_has_its_reader() {
        let mut timeline = run();
        timeline.keys.clear();
        timeline.inside = None;
        let bytes = trace_json(&TraceRun {
            timeline: &timeline,
            keys: None,
            command: "prog",
            wrap_pid: 1,
        })
        .unwrap();
        let v: Value = serde_json::from_slice(&bytes).unwrap();
        let events = v["traceEvents"].as_array().unwrap();
        assert_eq!(events.iter().filter(|e| e["name"] == "pty read").count(), 4);
        assert!(
            events
                .iter()
                .all(|e| e["cat"] != "key" && e["cat"] != "frame")
        );
    }
}
