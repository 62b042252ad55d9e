//! What drawing a frame's cells costs through crossterm's backend and the lean one, per cell
//! (divan's items/s), into a frame's buffer (no write(2): the encoder alone):
//!
//! ```sh
//! cargo bench -p flushlab-lean-backend --bench cells
//! ```
//!
//! `full`: every cell changes (a letter, an RGB foreground, an indexed background, a modifier
//! that alternates); `sparse`: 26 cells in a row change. At 80x24 and 200x60.

use std::fmt;
use std::io::{self, Write};

use divan::Bencher;
use divan::counter::ItemsCount;
use flushlab_lean_backend::LeanBackend;
use ratatui::backend::{Backend, CrosstermBackend};
use ratatui::buffer::{Buffer, Cell};
use ratatui::layout::Rect;
use ratatui::style::{Color, Modifier};

fn main() {
    divan::main();
}

#[derive(Clone, Copy)]
struct Case {
    cols: u16,
    rows: u16,
    full: bool,
}

impl fmt::Display for Case {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let kind = if self.full { "full" } else { "sparse" };
        write!(f, "{}x{} {kind}", self.cols, self.rows)
    }
}

const CASES: [Case; 4] = [
    Case {
        cols: 80,
        rows: 24,
        full: true,
    },
    Case {
        cols: 80,
        rows: 24,
        full: false,
    },
    Case {
        cols: 200,
        rows: 60,
        full: true,
    },
    Case {
        cols: 200,
        rows: 60,
        full: false,
    },
];

/// Frame `n` of the case: what changes from frame to frame.
fn frame(case: Case, n: u16) -> Buffer {
    let area = Rect::new(0, 0, case.cols, case.rows);
    let mut buffer = Buffer::empty(area);
    for y in 0..case.rows {
        for x in 0..case.cols {
            let changes = case.full || (y == case.rows / 2 && x < 26);
            let k = if changes { n } else { 0 };
            let v = ((u32::from(x) * 7 + u32::from(y) * 13 + u32::from(k) * 41) % 256) as u8;
            let cell = &mut buffer[(x, y)];
            cell.set_char(char::from(b'a' + ((x + y + k) % 26) as u8))
                .set_fg(Color::Rgb(v, 255 - v, 128))
                .set_bg(Color::Indexed(v));
            if (x + k) % 3 == 0 {
                cell.modifier = Modifier::BOLD;
            }
        }
    }
    buffer
}

/// A frame's buffer: bytes appended, emptied at the flush.
struct FrameBytes(Vec<u8>);

impl Write for FrameBytes {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.0.extend_from_slice(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        self.0.clear();
        Ok(())
    }
}

/// One backend's `draw` of the changed cells and its flush; items: the cells drawn.
fn draw<B: Backend<Error = io::Error>>(bencher: Bencher, case: Case, mut backend: B) {
    let (before, after) = (frame(case, 1), frame(case, 2));
    let cells: Vec<(u16, u16, &Cell)> = before.diff_iter(&after).collect();
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
fn crossterm(bencher: Bencher, case: Case) {
    draw(
        bencher,
        case,
        CrosstermBackend::new(FrameBytes(Vec::with_capacity(1 << 20))),
    );
}

#[divan::bench(args = CASES)]
fn lean(bencher: Bencher, case: Case) {
    draw(
        bencher,
        case,
        LeanBackend::new(FrameBytes(Vec::with_capacity(1 << 20))),
    );
}
