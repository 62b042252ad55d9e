//! What the frame finder costs beyond its parse, and whether it costs more than calling its
//! detectors by hand: the same stream of frames parsed three ways, alternated, the median of
//! each kept.
//!
//! ```sh
//! cargo run --release -p flushlab-core --example finder_overhead -- [ROUNDS]
//! ```
//!
//! The stream is flushlab's own full scene at 200x60 (every cell changes every frame), encoded
//! by ratatui's crossterm backend and fed in 4 KiB reads, as wrap reads a pty. The three ways:
//! the cursor model's parse alone (`Screen::feed`, events counted); the parse with both
//! detectors called directly and the finder's newline count, written out here; and
//! `FrameFinder::feed`. A check: both find as many frames as were drawn. The screen model
//! raises an event for what frames are told by (restarts, markers, scrolls), not for every
//! byte: a handful a frame.
//!
//! When the finder handed events to `[&mut dyn FrameDetector; 2]`, it ran 1.31–1.56 ns a byte
//! here against 1.07–1.13 with the detectors named (five alternated runs of each build): the
//! `dyn` closure kept the parse's hot loop from being optimised with the detectors, though it
//! made only a handful of calls a frame. So the finder names its detectors.

use std::cell::RefCell;
use std::io::Write;
use std::rc::Rc;
use std::time::{Duration, Instant};

use flushlab_core::detect::cursor_restarts::CursorRestarts;
use flushlab_core::detect::detector::FrameDetector;
use flushlab_core::detect::finder::FrameFinder;
use flushlab_core::detect::screen::Screen;
use flushlab_core::detect::sync_markers::SyncMarkers;
use flushlab_core::scene::Scene;
use ratatui::backend::CrosstermBackend;
use ratatui::{Terminal, TerminalOptions, Viewport};

const SIZE: (u16, u16) = (200, 60);
const FRAMES: u64 = 200;
const READ: usize = 4096;

/// `FRAMES` frames of the full scene, each wrapped in synchronized-output markers (so that
/// both detectors have frames to find).
fn stream() -> Vec<u8> {
    let area = ratatui::layout::Rect::new(0, 0, SIZE.0, SIZE.1);
    let bytes = Shared::default();
    let backend = CrosstermBackend::new(bytes.clone());
    let options = TerminalOptions {
        viewport: Viewport::Fixed(area),
    };
    let mut terminal = Terminal::with_options(backend, options).expect("a terminal in memory");
    for n in 0..FRAMES {
        bytes.0.borrow_mut().extend(b"\x1b[?2026h");
        terminal
            .draw(|f| Scene::Full.paint(n, f.area(), f.buffer_mut()))
            .expect("drawing into memory");
        bytes.0.borrow_mut().extend(b"\x1b[?2026l");
    }
    bytes.0.take()
}

/// The bytes the backend writes, kept where the markers around each frame go too.
#[derive(Clone, Default)]
struct Shared(Rc<RefCell<Vec<u8>>>);

impl Write for Shared {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.borrow_mut().extend_from_slice(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

fn parse_only(bytes: &[u8]) -> u64 {
    let mut screen = Screen::new(SIZE.0, SIZE.1);
    let mut events = 0u64;
    for chunk in bytes.chunks(READ) {
        screen.feed(chunk, &mut |_, _| events += 1);
    }
    events
}

/// What the finder does besides the parse and the detectors: it counts each read's newlines.
fn newlines(chunk: &[u8]) -> u64 {
    chunk.iter().filter(|&&b| b == b'\n').count() as u64
}

fn static_dispatch(bytes: &[u8], at: Instant) -> u64 {
    let mut screen = Screen::new(SIZE.0, SIZE.1);
    let mut sync = SyncMarkers::default();
    let mut restarts = CursorRestarts::new(false);
    let mut lines = 0;
    for (i, chunk) in bytes.chunks(READ).enumerate() {
        lines += newlines(chunk);
        sync.chunk(at, false, i == 0);
        restarts.chunk(at, false, i == 0);
        screen.feed(chunk, &mut |event, offset| {
            sync.on(event, offset, at);
            restarts.on(event, offset, at);
        });
    }
    std::hint::black_box(lines);
    sync.found().map_or(0, |f| f.frames)
}

fn finder(bytes: &[u8], at: Instant) -> u64 {
    let mut finder = FrameFinder::new(SIZE, Duration::from_millis(2), false);
    for chunk in bytes.chunks(READ) {
        finder.feed(chunk, at);
    }
    finder.frames().frames.unwrap_or(0)
}

fn main() {
    let rounds: usize = match std::env::args().nth(1).map(|a| a.parse()) {
        None => 7,
        Some(Ok(n)) if n > 0 => n,
        Some(_) => {
            eprintln!("finder_overhead: ROUNDS is a whole number above 0");
            std::process::exit(2);
        }
    };
    let bytes = stream();
    let at = Instant::now();
    let (events, found_static, found_dyn) = (
        parse_only(&bytes),
        static_dispatch(&bytes, at),
        finder(&bytes, at),
    );
    // Every drawn frame is found by both; the first and last bound the rate, so a finder may
    // report the frames it saw whole.
    assert!(
        found_static >= FRAMES - 1 && found_dyn == found_static,
        "frames found: by hand {found_static}, by the finder {found_dyn}, of {FRAMES} drawn"
    );
    let ns_per_byte = |run: &dyn Fn()| {
        let start = Instant::now();
        run();
        start.elapsed().as_nanos() as f64 / bytes.len() as f64
    };
    let (mut parse, mut direct, mut dynamic) = (Vec::new(), Vec::new(), Vec::new());
    for _ in 0..rounds {
        parse.push(ns_per_byte(&|| {
            std::hint::black_box(parse_only(&bytes));
        }));
        direct.push(ns_per_byte(&|| {
            std::hint::black_box(static_dispatch(&bytes, at));
        }));
        dynamic.push(ns_per_byte(&|| {
            std::hint::black_box(finder(&bytes, at));
        }));
    }
    let median = |v: Vec<f64>| flushlab_core::statistics::median(v).unwrap_or_default();
    let (parse, direct, dynamic) = (median(parse), median(direct), median(dynamic));
    println!(
        "{} bytes, {FRAMES} frames at {}x{}, {events} events ({:.0} a frame); median of {rounds} rounds",
        bytes.len(),
        SIZE.0,
        SIZE.1,
        events as f64 / FRAMES as f64,
    );
    println!("parse alone:                          {parse:.2} ns/byte");
    println!("parse + newlines + detectors, static: {direct:.2} ns/byte");
    println!("FrameFinder::feed:                    {dynamic:.2} ns/byte");
    println!(
        "the finder against direct calls: {:+.1}% ({:+.3} ns/byte)",
        (dynamic - direct) / direct * 100.0,
        dynamic - direct,
    );
}
