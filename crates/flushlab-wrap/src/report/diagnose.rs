//! What the figures say a program should change, in its own language's terms.

use serde::Serialize;

use crate::run::tree::{Language, Writer};
use flushlab_core::accounting::IoCounters;
use flushlab_core::detect::frames::Frames;
use flushlab_core::detect::keyed::{KeyLatencies, Stage};
use flushlab_core::units::{bytes, count, percent, thousands};

/// One finding: a stable code for scripts, a sentence with the figure behind it and the fix.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Diagnosis {
    pub code: &'static str,
    pub message: String,
    /// Where the guide explains it.
    pub guide: &'static str,
}

/// Below this many bytes a write(2), writes are pieces of a frame, not buffers. From the corpus
/// (docs/wrap/costs.md): unbuffered writers write 1.9–40 B a call (an escape sequence, a cell, a
/// line), the smallest buffer in use is 1 KiB; 128 B sits between them with room on each side.
const SMALL_WRITE: f64 = 128.0;
/// A frame needs more writes than this for "unbuffered" to matter (a status line's few do not).
const MANY_WRITES_A_FRAME: f64 = 16.0;
/// Frames unknown: this many write(2) a second for "unbuffered" to matter (htop's 70 a second
/// cost nothing; cmatrix's 2,500, 28 B each, are the pattern).
const MANY_WRITES_A_SECOND: f64 = 1000.0;
/// Asleep in write(2) on the terminal for more than half the run: the terminal sets the pace.
const READER_BOUND: f64 = 0.5;
/// CPU a frame, over the screen's cells, from which a buffered ratatui program's encoder is
/// worth a look: crossterm's backend took ~300 ns a changed cell here, the lean one ~45
/// (crates/flushlab-lean-backend, its divan bench); a full-screen redraw through crossterm is
/// above this, a program that changes a few cells a frame far below.
const ENCODER_NS_A_CELL: f64 = 150.0;
/// A key slower than this (p50, to its frame's end) gets a word on where its time goes: a
/// quarter of a 60 Hz refresh; a faster key's stages are not worth changing code for.
const SLOW_KEY_MS: f64 = 4.0;

/// Everything a diagnosis may look at.
#[derive(Clone, Debug)]
pub struct Evidence<'a> {
    /// The tree's write(2) calls and bytes, when they can be trusted to be the terminal's.
    pub writes: Option<IoCounters>,
    pub frames: &'a Frames,
    pub writes_per_frame: Option<f64>,
    pub writes_per_second: Option<f64>,
    pub sync_begins: u64,
    pub sync_pairs: u64,
    /// Synchronized updates still open at the end.
    pub sync_open: u32,
    /// CMD ended on its own (not ended by wrap at the end of `--duration` or a signal).
    pub exited_by_itself: bool,
    pub blocked_share: Option<f64>,
    /// The user's terminal answered DECRQM ?2026 (interactive only).
    pub terminal_syncs: bool,
    pub writer: &'a Writer,
    /// CMD's tree's CPU a frame, and the screen's cells.
    pub cpu_ms_per_frame: Option<f64>,
    pub cells: u64,
    /// `--keys`: each key's time and its stages.
    pub keys: Option<&'a KeyLatencies>,
}

const GUIDE_SYNC: &str = "docs/guide.md#6-synchronized-output";

pub fn diagnose(e: &Evidence) -> Vec<Diagnosis> {
    let mut found = Vec::new();
    let drew_frames = e.frames.frames.is_some();
    if e.terminal_syncs && e.sync_begins == 0 && drew_frames {
        found.push(Diagnosis {
            code: "sync-unused",
            message: "this terminal supports synchronized output (it answered DECRQM ?2026) but \
                      CMD sent no markers: wrapping each frame in ESC[?2026h … ESC[?2026l keeps \
                      half-drawn frames off the screen"
                .to_owned(),
            guide: GUIDE_SYNC,
        });
    }
    let never_ended = e.sync_open >= 2 || (e.sync_open == 1 && e.exited_by_itself);
    if never_ended {
        found.push(Diagnosis {
            code: "sync-unbalanced",
            message: format!(
                "{} synchronized-output begins, {} frames ended, {} still open at the end: a \
                 begin without an end leaves the terminal frozen until it times out",
                thousands(e.sync_begins),
                thousands(e.sync_pairs),
                e.sync_open
            ),
            guide: GUIDE_SYNC,
        });
    }
    if let Some(io) = e.writes.filter(|io| io.write_calls >= 100) {
        let per_write = io.bytes as f64 / io.write_calls as f64;
        let per_frame_text = e
            .writes_per_frame
            .map_or_else(String::new, |w| format!(", {} write(2) a frame", count(w)));
        let many = match e.writes_per_frame {
            Some(w) => w > MANY_WRITES_A_FRAME,
            None => e
                .writes_per_second
                .is_some_and(|w| w >= MANY_WRITES_A_SECOND),
        };
        if per_write < SMALL_WRITE && many {
            found.push(Diagnosis {
                code: "unbuffered",
                message: format!(
                    "{} a write(2){per_frame_text}: every piece is a system call; {}",
                    bytes(per_write),
                    unbuffered_fix(e.writer)
                ),
                guide: "docs/guide.md#4-the-writer-modes-measured",
            });
        } else if (900.0..=1100.0).contains(&per_write)
            && e.writes_per_frame.is_none_or(|w| w > 2.0)
        {
            found.push(Diagnosis {
                code: "line-buffered-1k",
                message: format!(
                    "{} a write(2){per_frame_text}: a 1 KiB buffer flushing as it fills; {}",
                    bytes(per_write),
                    one_kib_fix(e.writer)
                ),
                guide: "docs/guide.md#2-what-rusts-stdout-and-stderr-are",
            });
        }
    }
    if let Some(diagnosis) = encoder_bound(e) {
        found.push(diagnosis);
    }
    if let Some(diagnosis) = e.keys.and_then(|keys| slow_keys(keys, &found)) {
        found.push(diagnosis);
    }
    if let Some(share) = e.blocked_share.filter(|&s| s >= READER_BOUND) {
        found.push(Diagnosis {
            code: "reader-bound",
            message: format!(
                "CMD was asleep in write(2) on the terminal in {} of the samples: the terminal \
                 (the reader) sets the pace, not the writer; fewer bytes a frame helps, or a \
                 writer thread so the program's loop need not wait",
                percent(share)
            ),
            guide: "docs/guide.md#8-recipes-what-to-change-in-your-program",
        });
    }
    found
}

/// A ratatui program through crossterm's backend, already buffered (one write(2) a frame, or
/// writes of 8 KiB and more), whose CPU a frame
/// is high for its screen: what a leaner encoder would change, measured, and how to try it.
fn encoder_bound(e: &Evidence) -> Option<Diagnosis> {
    // One write a frame, or writes of a buffer's size (a 64 KiB `BufWriter` under a larger frame).
    let buffered = e.writes_per_frame.is_some_and(|w| w <= 2.0)
        || e.writes
            .is_some_and(|io| io.bytes >= 8192 * io.write_calls.max(1));
    let ns_a_cell = e.cpu_ms_per_frame? * 1e6 / e.cells.max(1) as f64;
    (e.writer.ratatui_crossterm && buffered && ns_a_cell >= ENCODER_NS_A_CELL).then(|| Diagnosis {
        code: "encoder-bound",
        message: format!(
            "buffered already, and {} ms of CPU a frame ({:.0} ns a cell of the \
             screen) through ratatui's crossterm backend: the encoder may be the cost now. \
             flushlab-lean-backend sends the same screen (crates/flushlab-lean-backend, a \
             1,000-case test against crossterm's) for a fraction of crossterm's encoding CPU \
             (its bench: docs/results/encode-bench.md); try `LeanBackend::new(writer)` in place \
             of `CrosstermBackend::new(writer)` and measure again",
            count(e.cpu_ms_per_frame.unwrap_or_default()),
            ns_a_cell
        ),
        guide: "docs/guide.md#after-buffering-the-encoder",
    })
}

/// Keys slower than [`SLOW_KEY_MS`] (to their frame, or in a real terminal to their last
/// pixel): the stage that dominates, and what to change in its terms.
pub(crate) fn slow_keys(
    keys: &flushlab_core::detect::keyed::KeyLatencies,
    found: &[Diagnosis],
) -> Option<Diagnosis> {
    use flushlab_core::units::milliseconds;
    let (whole, to) = match keys.pixels_ms {
        Some(pixels) => (pixels.last.p50, "its last pixel"),
        None => (keys.key_to_frame_ms?.p50, "its frame"),
    };
    let stage = keys.dominant_stage.filter(|_| whole >= SLOW_KEY_MS)?;
    let p50 = keys.stages_ms?.each().find(|&(s, _)| s == stage)?.1.p50;
    let share = format!(
        "{} of a key's {} to {to} (p50)",
        milliseconds(p50),
        milliseconds(whole)
    );
    let (code, message, guide) = match stage {
        Stage::InputDelay => (
            "keys-wait-to-be-read",
            format!(
                "keys wait to be read: input delay {share}. A loop that sleeps a tick before \
                 it looks at its input makes each key wait up to the tick: wait on the input \
                 with the frame's deadline instead (poll(2) with a timeout; crossterm's \
                 event::poll(timeout))"
            ),
            "docs/guide.md#where-a-keys-time-goes",
        ),
        Stage::Processing => (
            "keys-processing",
            format!(
                "the program's own work: processing {share}, from reading the key to the \
                 frame's first write; the output is not the cost: profile it (samply record)"
            ),
            "docs/guide.md#where-a-keys-time-goes",
        ),
        Stage::PresentationDelay => (
            "keys-wait-for-the-tick",
            format!(
                "keys wait for the program's next tick: presentation delay {share}, between \
                 its processing and its frame's first write, in a wait that ended by its \
                 timeout. Draw when input arrives (a frame after each key), or tick faster"
            ),
            "docs/wrap/observers.md#presentation-delay-a-key-waiting-for-the-programs-tick",
        ),
        Stage::Emit => {
            let advice = if found.iter().any(|d| d.code == "unbuffered") {
                "the writes are the cost: buffer them (see unbuffered above)"
            } else {
                "the writes are the cost: fewer bytes a frame (draw what changed), one write a frame"
            };
            (
                "keys-emit",
                format!("writing the frame: emit {share}; {advice}"),
                "docs/guide.md#4-the-writer-modes-measured",
            )
        }
        Stage::Drain => (
            "keys-drain",
            format!(
                "the terminal reads slower than CMD writes: drain {share} after the frame's \
                 end until its last byte is read; fewer bytes a frame, or a faster terminal"
            ),
            "docs/guide.md#where-a-keys-time-goes",
        ),
        Stage::Paint => (
            "keys-paint",
            format!(
                "the terminal paints slowly: paint {share} after the frame's end until the \
                 window's last change; fewer cells changed a frame, or a faster terminal \
                 (`flushlab wrap --terminal NAME` measures another)"
            ),
            "docs/wrap/terminals.md#key-to-pixel-in-a-real-terminal---terminal",
        ),
    };
    Some(Diagnosis {
        code,
        message,
        guide,
    })
}

/// What makes holding a frame's writes permanent in CMD's own code: the fix for what was
/// diagnosed (a 1 KiB buffer, or none), for what wrote it.
pub(crate) fn permanent_fix(diagnoses: &[Diagnosis], writer: &Writer) -> &'static str {
    if diagnoses.iter().any(|d| d.code == "line-buffered-1k") {
        one_kib_fix(writer)
    } else {
        unbuffered_fix(writer)
    }
}

/// How to stop writing a frame piece by piece, for what wrote it.
fn unbuffered_fix(writer: &Writer) -> &'static str {
    if writer.curses {
        return "ncurses flushes its output before each check for typed-ahead keys: call \
                typeahead(-1) (Python: curses.typeahead(-1)) so a refresh goes out in one write";
    }
    match writer.language {
        Language::Rust => {
            "put a BufWriter as large as a frame between the backend and the fd (stderr() and a \
             raw fd are unbuffered) and flush once a frame"
        }
        Language::C => {
            "the stream is unbuffered (stderr, or setvbuf _IONBF) or line-buffered on a \
             terminal: setvbuf(stream, NULL, _IOFBF, 1 << 16) and fflush once a frame"
        }
        Language::Python => {
            "print(..., flush=True) or an unbuffered stream writes every call: collect the \
             frame and sys.stdout.write it in one call, then flush once a frame"
        }
        Language::Node => {
            "each process.stdout.write to a terminal is its own write(2): join the frame into \
             one string and write it once"
        }
        Language::Shell => {
            "every printf or echo is a write(2): build the frame in a variable and print it \
             once, or move the loop into a program that buffers"
        }
        Language::Unknown => "collect each frame in a buffer and write it once",
    }
}

/// How to stop flushing every KiB.
fn one_kib_fix(writer: &Writer) -> &'static str {
    match writer.language {
        Language::Rust => {
            "std's stdout() is a LineWriter of 1 KiB: a BufWriter as large as a frame cuts the \
             write(2) calls that many times"
        }
        Language::C => {
            "stdio's buffer on a terminal is 1 KiB: setvbuf(stdout, NULL, _IOFBF, 1 << 16) and \
             fflush once a frame"
        }
        Language::Python => {
            "write the frame in one call and flush once: sys.stdout.write(frame); \
             sys.stdout.flush()"
        }
        _ => "a buffer as large as a frame, flushed once a frame",
    }
}

#[cfg(test)]
#[path = "diagnose_tests.rs"]
mod tests;
