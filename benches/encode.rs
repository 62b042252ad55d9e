//! What encoding a frame costs with each backend, per frame and per cell (divan's items/s):
//!
//! ```sh
//! cargo bench --bench encode
//! ```
//!
//! A frame's write path is ratatui's diff (which cells changed), then the backend's `draw` of
//! those cells into the mode's writer. The two are timed apart, so that the backends are
//! compared on their own work: `diff` walks two consecutive frames of a scene; `encode`
//! hands a backend the changed cells (collected beforehand) and flushes them into a frame's
//! buffer behind the `Box<dyn Write>` the renderer gives every backend. No painting, no
//! write(2). Scenes: `full` (every cell changes every frame) and `sparse` (26 cells a frame),
//! at 80x24 and 200x60.

use std::fmt;
use std::io::{self, Write};

use divan::Bencher;
use divan::counter::ItemsCount;
use flushlab_core::backend::LeanBackend;
use flushlab_core::scene::Scene;
use ratatui::backend::{Backend, CrosstermBackend};
use ratatui::buffer::{Buffer, Cell};
use ratatui::layout::Rect;
use ratatui_termion::TermionBackend;

fn main() {
    divan::main();
}

#[derive(Clone, Copy)]
struct Case {
    cols: u16,
    rows: u16,
    scene: Scene,
}

impl fmt::Display for Case {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}x{} {}", self.cols, self.rows, self.scene.name())
    }
}

const CASES: [Case; 4] = [
    Case {
        cols: 80,
        rows: 24,
        scene: Scene::Full,
    },
    Case {
        cols: 80,
        rows: 24,
        scene: Scene::Sparse,
    },
    Case {
        cols: 200,
        rows: 60,
        scene: Scene::Full,
    },
    Case {
        cols: 200,
        rows: 60,
        scene: Scene::Sparse,
    },
];

impl Case {
    /// Two consecutive frames of the scene (the first of the pair past the scene's start, so
    /// that the sparse scene's ticker and block have moved).
    fn frames(self) -> (Buffer, Buffer) {
        let area = Rect::new(0, 0, self.cols, self.rows);
        let paint = |n| {
            let mut buffer = Buffer::empty(area);
            self.scene.paint(n, area, &mut buffer);
            buffer
        };
        (paint(10), paint(11))
    }
}

/// A frame's buffer: bytes appended, emptied at the flush (the writer modes' frame buffer
/// without its write(2)).
struct FrameBytes {
    bytes: Vec<u8>,
}

impl Write for FrameBytes {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.bytes.extend_from_slice(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        self.bytes.clear();
        Ok(())
    }
}

type BoxedWriter = Box<dyn Write + Send>;

fn sink() -> BoxedWriter {
    Box::new(FrameBytes {
        bytes: Vec::with_capacity(1 << 20),
    })
}

/// ratatui's diff of two consecutive frames; items: the screen's cells (each is compared).
#[divan::bench(args = CASES)]
fn diff(bencher: Bencher, case: Case) {
    let (before, after) = case.frames();
    bencher
        .counter(ItemsCount::new(after.content.len()))
        .bench_local(|| before.diff_iter(divan::black_box(&after)).count());
}

/// One backend's `draw` of the frame's changed cells and its flush; items: the cells drawn.
fn encode<B>(bencher: Bencher, case: Case, mut backend: B)
where
    B: Backend<Error = io::Error>,
{
    let (before, after) = case.frames();
    let cells: Vec<(u16, u16, &Cell)> = before.diff_iter(&after).collect();
    assert!(!cells.is_empty(), "{case}: no cell changed");
    backend.draw(cells.iter().copied()).expect("drawn");
    Backend::flush(&mut backend).expect("flushed");
    bencher
        .counter(ItemsCount::new(cells.len()))
        .bench_local(|| {
            backend
                .draw(divan::black_box(cells.iter().copied()))
                .expect("drawn");
            Backend::flush(&mut backend).expect("flushed");
        });
}

#[divan::bench(args = CASES)]
fn encode_crossterm(bencher: Bencher, case: Case) {
    let backend = CrosstermBackend::new(sink());
    encode(bencher, case, backend);
}

#[divan::bench(args = CASES)]
fn encode_lean(bencher: Bencher, case: Case) {
    let backend = LeanBackend::new(sink());
    encode(bencher, case, backend);
}

#[divan::bench(args = CASES)]
fn encode_termion(bencher: Bencher, case: Case) {
    let backend = TermionBackend::new(sink());
    encode(bencher, case, backend);
}
