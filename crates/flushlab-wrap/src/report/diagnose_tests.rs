//! Tests of `diagnose.rs`.

use super::*;
use flushlab_core::detect::frames::FrameMethod;

fn frames(known: bool) -> Frames {
    Frames {
        method: if known {
            FrameMethod::CursorRestarts
        } else {
            FrameMethod::Unknown
        },
        frames: known.then_some(10),
        fps: known.then_some(30.0),
        bytes_per_frame: known.then_some(60_000.0),
        confirmed_by: Vec::new(),
        cursor_restarts: 10,
        sequence_share: 1.0,
        pause_share: 1.0,
        pauses_per_frame: 1.0,
    }
}

fn evidence<'a>(frames: &'a Frames, writer: &'a Writer) -> Evidence<'a> {
    Evidence {
        writes: None,
        frames,
        writes_per_frame: None,
        writes_per_second: None,
        sync_begins: 0,
        sync_pairs: 0,
        sync_open: 0,
        exited_by_itself: true,
        blocked_share: Some(0.0),
        terminal_syncs: false,
        writer,
        cpu_ms_per_frame: None,
        cells: 200 * 60,
        keys: None,
    }
}

/// A buffered ratatui program through crossterm's backend: a full redraw's CPU points to
/// the encoder; a few cells a frame, another backend or an unbuffered writer do not.
#[test]
fn a_buffered_ratatui_program_heavy_on_cpu_is_pointed_to_the_lean_backend() {
    let known = frames(true);
    let ratatui = Writer {
        language: Language::Rust,
        ratatui_crossterm: true,
        ..Writer::default()
    };
    let heavy = |cpu_ms, writes_per_frame, writer| Evidence {
        writes_per_frame: Some(writes_per_frame),
        cpu_ms_per_frame: Some(cpu_ms),
        ..evidence(&known, writer)
    };
    let found = diagnose(&heavy(4.0, 1.0, &ratatui));
    assert_eq!(codes(found.clone()), ["encoder-bound"]);
    assert!(found[0].message.contains("LeanBackend::new"), "{found:?}");
    assert!(found[0].message.contains("333 ns a cell"), "{found:?}");
    assert!(diagnose(&heavy(0.2, 1.0, &ratatui)).is_empty());
    assert!(diagnose(&heavy(4.0, 300.0, &ratatui)).is_empty());
    let other = Writer {
        language: Language::Rust,
        ..Writer::default()
    };
    assert!(diagnose(&heavy(4.0, 1.0, &other)).is_empty());
}

fn codes(found: Vec<Diagnosis>) -> Vec<&'static str> {
    found.into_iter().map(|d| d.code).collect()
}

#[test]
fn each_pattern_has_its_code_and_each_language_its_fix() {
    let known = frames(true);
    let python = Writer {
        language: Language::Python,
        ..Writer::default()
    };
    let small = Evidence {
        writes: Some(IoCounters {
            write_calls: 30_000,
            bytes: 600_000,
        }),
        writes_per_frame: Some(3_000.0),
        ..evidence(&known, &python)
    };
    let found = diagnose(&small);
    assert_eq!(codes(found.clone()), ["unbuffered"]);
    assert!(found[0].message.contains("sys.stdout.write"), "{found:?}");
    assert!(!found[0].message.contains("BufWriter"), "{found:?}");
    let c = Writer {
        language: Language::C,
        ..Writer::default()
    };
    let kib = Evidence {
        writes: Some(IoCounters {
            write_calls: 600,
            bytes: 600 * 1024,
        }),
        writes_per_frame: Some(60.0),
        ..evidence(&known, &c)
    };
    let found = diagnose(&kib);
    assert_eq!(codes(found.clone()), ["line-buffered-1k"]);
    assert!(found[0].message.contains("setvbuf"), "{found:?}");
    let buffered = Evidence {
        writes: Some(IoCounters {
            write_calls: 10,
            bytes: 600_000,
        }),
        writes_per_frame: Some(1.0),
        ..evidence(&known, &c)
    };
    assert!(diagnose(&buffered).is_empty());
    // Frames unknown: small writes matter when there are many a second (cmatrix), not a
    // few (htop refreshing twice a second).
    let unknown = frames(false);
    let curses = Writer {
        language: Language::C,
        curses: true,
        ..Writer::default()
    };
    let small_writes = |per_second| Evidence {
        writes: Some(IoCounters {
            write_calls: 12_000,
            bytes: 12_000 * 28,
        }),
        writes_per_second: Some(per_second),
        ..evidence(&unknown, &curses)
    };
    let found = diagnose(&small_writes(2_500.0));
    assert_eq!(codes(found.clone()), ["unbuffered"]);
    assert!(found[0].message.contains("typeahead"), "{found:?}");
    assert!(diagnose(&small_writes(70.0)).is_empty());
}

#[test]
fn reader_bound_only_when_the_writer_waits_in_write() {
    let known = frames(true);
    let writer = Writer::default();
    let idle = Evidence {
        blocked_share: Some(0.02),
        ..evidence(&known, &writer)
    };
    assert!(diagnose(&idle).is_empty());
    let held = Evidence {
        blocked_share: Some(0.93),
        ..evidence(&known, &writer)
    };
    let found = diagnose(&held);
    assert_eq!(codes(found.clone()), ["reader-bound"]);
    assert!(found[0].message.contains("93"), "{found:?}");
}

#[test]
fn sync_findings() {
    let known = frames(true);
    let writer = Writer::default();
    let cut_short_by_wrap = Evidence {
        sync_begins: 10,
        sync_pairs: 9,
        sync_open: 1,
        exited_by_itself: false,
        ..evidence(&known, &writer)
    };
    assert!(diagnose(&cut_short_by_wrap).is_empty());
    let never_ended = Evidence {
        sync_begins: 10,
        sync_open: 10,
        exited_by_itself: false,
        blocked_share: Some(0.9),
        ..evidence(&known, &writer)
    };
    assert_eq!(
        codes(diagnose(&never_ended)),
        ["sync-unbalanced", "reader-bound"]
    );
    let left_open = Evidence {
        sync_begins: 3,
        sync_pairs: 2,
        sync_open: 1,
        ..evidence(&known, &writer)
    };
    assert_eq!(codes(diagnose(&left_open)), ["sync-unbalanced"]);
    let asked = Evidence {
        terminal_syncs: true,
        ..evidence(&known, &writer)
    };
    assert_eq!(codes(diagnose(&asked)), ["sync-unused"]);
    let unknown = frames(false);
    let no_frames = Evidence {
        terminal_syncs: true,
        ..evidence(&unknown, &writer)
    };
    assert!(diagnose(&no_frames).is_empty());
}
