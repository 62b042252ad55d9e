//! How many write calls each buffering makes for one fixed frame, counted at the bottom of the
//! writer stack: the lesson of the whole tool, as numbers that cannot drift.

use std::io::{self, Write};
use std::sync::{Arc, Mutex};

use flushlab::plumbing::renderer::Renderer;
use flushlab_core::backend::BackendKind;
use flushlab_core::scene::Scene;
use flushlab_core::wait::Wait;
use flushlab_core::writer_mode::{Buffering, wrap};
use ratatui::layout::Rect;

/// Stands in for the file descriptor: counts the write calls that reach it and keeps their
/// bytes.
#[derive(Clone, Default)]
struct Fd(Arc<Mutex<(u64, Vec<u8>)>>);

impl Write for Fd {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let mut kept = self.0.lock().unwrap();
        kept.0 += 1;
        kept.1.extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// Renders the first `frames` frames of the full scene and returns (write calls, bytes) once
/// the writer is finished (a writer thread has written everything).
fn render(buffering: Buffering, capacity: usize, sync: bool, frames: u64) -> (u64, u64) {
    render_with(BackendKind::Crossterm, buffering, capacity, sync, frames)
}

fn render_with(
    backend: BackendKind,
    buffering: Buffering,
    capacity: usize,
    sync: bool,
    frames: u64,
) -> (u64, u64) {
    let (calls, bytes) = drawn(backend, buffering, capacity, sync, frames, (80, 24));
    (calls, bytes.len() as u64)
}

/// Every byte that reached the fd while drawing the first `frames` frames of the full scene
/// at `cols`x`rows`, and in how many write calls.
fn drawn(
    backend: BackendKind,
    buffering: Buffering,
    capacity: usize,
    sync: bool,
    frames: u64,
    (cols, rows): (u16, u16),
) -> (u64, Vec<u8>) {
    let fd = Fd::default();
    let area = Rect::new(0, 0, cols, rows);
    let writer = wrap(buffering, capacity, fd.clone(), Wait::Sleep).unwrap();
    let mut renderer = Renderer::new(writer, area, backend);
    renderer.sync = sync;
    for frame in 0..frames {
        Scene::Full.paint(frame, area, renderer.buffer_mut());
        renderer.present().unwrap();
    }
    renderer.finish().unwrap();
    std::mem::take(&mut *fd.0.lock().unwrap())
}

/// (write calls, bytes) of the second frame alone, in which every cell differs from the first.
fn second_frame(buffering: Buffering, capacity: usize, sync: bool) -> (u64, u64) {
    let (one, two) = (
        render(buffering, capacity, sync, 1),
        render(buffering, capacity, sync, 2),
    );
    (two.0 - one.0, two.1 - one.1)
}

#[test]
fn raw_makes_a_write_per_encoder_fragment() {
    let (writes, bytes) = second_frame(Buffering::Raw, 0, false);
    // ~18 fragments per truecolor cell.
    assert!(writes > 80 * 24 * 10, "{writes} writes");
    assert!(bytes / writes < 4, "{bytes} bytes in {writes} writes");
}

#[test]
fn line_writes_about_once_per_kib() {
    let (writes, bytes) = second_frame(Buffering::Line, 0, false);
    let expected = bytes / 1024;
    assert!(
        writes >= expected && writes <= expected + 2,
        "{writes} writes for {bytes} bytes"
    );
}

#[test]
fn block_writes_about_once_per_capacity() {
    for capacity in [1024, 8192, 65536] {
        let (writes, bytes) = second_frame(Buffering::Block, capacity, false);
        let expected = bytes / capacity as u64;
        assert!(
            writes >= expected && writes <= expected + 1,
            "{capacity}: {writes} writes for {bytes} bytes"
        );
    }
}

#[test]
fn frame_and_thread_write_once_even_with_sync_markers() {
    for buffering in [Buffering::Frame, Buffering::Thread] {
        for sync in [false, true] {
            assert_eq!(
                second_frame(buffering, 0, sync).0,
                1,
                "{buffering:?} sync={sync}"
            );
        }
    }
}

#[test]
fn the_ordering_the_tool_teaches() {
    let writes = |b, cap| second_frame(b, cap, false).0;
    let (raw, line, block, frame) = (
        writes(Buffering::Raw, 0),
        writes(Buffering::Line, 0),
        writes(Buffering::Block, 8192),
        writes(Buffering::Frame, 0),
    );
    assert!(raw > 100 * line, "raw {raw} vs line {line}");
    assert!(
        line > block && block > frame && frame == 1,
        "{line} > {block} > {frame}"
    );
    // Every mode sends the same bytes: buffering changes the calls, not the frame.
    let bytes: Vec<u64> = Buffering::ALL
        .iter()
        .map(|&b| second_frame(b, 8192, false).1)
        .collect();
    assert!(bytes.windows(2).all(|w| w[0] == w[1]), "{bytes:?}");
}

/// The lean backend hands its writer one write a cell: unbuffered, a frame of 80x24 cells that
/// all change is 1,920 write(2) and the draw's closing reset, against crossterm's ~18 a cell,
/// for the same bytes. Buffered, both are one write a frame: buffering still decides.
#[test]
fn the_lean_backend_writes_a_cell_at_a_time_and_buffering_still_decides() {
    let lean = |buffering, frames| render_with(BackendKind::Lean, buffering, 8192, false, frames);
    let crossterm =
        |buffering, frames| render_with(BackendKind::Crossterm, buffering, 8192, false, frames);
    let (one, two) = (lean(Buffering::Raw, 1), lean(Buffering::Raw, 2));
    assert_eq!(two.0 - one.0, 80 * 24 + 1);
    assert_eq!(two.1, crossterm(Buffering::Raw, 2).1, "the same bytes");
    let (one, two) = (lean(Buffering::Frame, 1), lean(Buffering::Frame, 2));
    assert_eq!(two.0 - one.0, 1);
    assert!(crossterm(Buffering::Raw, 2).0 > 10 * two.0.max(80 * 24 * 2));
}

/// termion's backend (ratatui-termion) spells the screen its own way, but a terminal model
/// (vt100) fed its bytes shows crossterm's screen: every cell's text and colours, frame after
/// frame. It builds each frame in a string and writes it at once: unbuffered, a handful of
/// write calls a frame where crossterm makes ~18 a cell; the lesson's worst case is the
/// backend's choice.
#[test]
fn the_termion_backend_draws_crossterms_screen_in_a_few_writes() {
    for (cols, rows) in [(80, 24), (200, 60)] {
        let raw = |backend, frames| drawn(backend, Buffering::Raw, 0, false, frames, (cols, rows));
        let screen = |bytes: &[u8]| {
            let side = |n| std::num::NonZeroU16::new(n).unwrap();
            let mut parser = vt100::Parser::new(side(rows), side(cols), 0);
            parser.process(bytes);
            let screen = parser.screen().clone();
            (0..rows)
                .flat_map(|row| (0..cols).map(move |col| (row, col)))
                .map(|(row, col)| {
                    let cell = screen.cell(row, col).unwrap();
                    (cell.contents().to_owned(), cell.fgcolor(), cell.bgcolor())
                })
                .collect::<Vec<_>>()
        };
        for frames in [1, 2, 5] {
            let (_, crossterm) = raw(BackendKind::Crossterm, frames);
            let (_, termion) = raw(BackendKind::Termion, frames);
            assert_ne!(crossterm, termion, "termion spells it its own way");
            assert!(
                screen(&crossterm) == screen(&termion),
                "{cols}x{rows}, {frames} frame(s): the screens differ"
            );
        }
        let frame = |backend| raw(backend, 2).0 - raw(backend, 1).0;
        let termion = frame(BackendKind::Termion);
        assert!(
            termion <= 8,
            "{cols}x{rows}: termion made {termion} write calls a frame"
        );
        let crossterm = frame(BackendKind::Crossterm);
        let cells = u64::from(cols) * u64::from(rows);
        assert!(
            crossterm > cells,
            "{cols}x{rows}: crossterm made {crossterm}"
        );
    }
}
