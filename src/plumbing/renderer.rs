//! The write path of one frame: diff the new buffer against the last one, encode the changed
//! cells through the condition's backend (ratatui's crossterm or termion backend, or the core's
//! `LeanBackend`) into the current mode's writer, flush once.
//!
//! This is `ratatui::Terminal::draw` without what would distort the measurement: no size query
//! per frame (which opens /dev/tty on every draw of a fullscreen viewport), no hide-cursor
//! `execute!` per frame (an extra flush), and room for synchronized-output markers in the same
//! flush as the frame.

use std::io::{self, Write};

use ratatui::backend::{Backend, CrosstermBackend};
use ratatui::buffer::{Buffer, Cell};
use ratatui::layout::Rect;
use ratatui_termion::TermionBackend;

use flushlab_core::backend::{BackendKind, LeanBackend};
use flushlab_core::outcome::mark_reader_gone;

pub type BoxedWriter = Box<dyn Write + Send>;

/// The sequences the renderer sends itself, as crossterm's commands spell them: one `write`
/// each, whichever backend encodes the cells.
const SYNC_BEGIN: &[u8] = b"\x1b[?2026h";
const SYNC_END: &[u8] = b"\x1b[?2026l";
const CLEAR_ALL: &[u8] = b"\x1b[2J";

/// The backend that encodes the cells, over the mode's writer. Called by name, not through
/// `dyn`: `Backend::draw` is generic over the cells' iterator.
enum Encoder {
    Crossterm(CrosstermBackend<BoxedWriter>),
    Lean(LeanBackend<BoxedWriter>),
    Termion(TermionBackend<BoxedWriter>),
}

impl Encoder {
    fn new(kind: BackendKind, writer: BoxedWriter) -> Encoder {
        match kind {
            BackendKind::Crossterm => Encoder::Crossterm(CrosstermBackend::new(writer)),
            BackendKind::Lean => Encoder::Lean(LeanBackend::new(writer)),
            BackendKind::Termion => Encoder::Termion(TermionBackend::new(writer)),
        }
    }

    fn kind(&self) -> BackendKind {
        match self {
            Encoder::Crossterm(_) => BackendKind::Crossterm,
            Encoder::Lean(_) => BackendKind::Lean,
            Encoder::Termion(_) => BackendKind::Termion,
        }
    }

    fn draw<'a>(&mut self, cells: impl Iterator<Item = (u16, u16, &'a Cell)>) -> io::Result<()> {
        match self {
            Encoder::Crossterm(backend) => backend.draw(cells),
            Encoder::Lean(backend) => backend.draw(cells),
            Encoder::Termion(backend) => backend.draw(cells),
        }
    }

    fn write_all(&mut self, bytes: &[u8]) -> io::Result<()> {
        match self {
            Encoder::Crossterm(backend) => backend.write_all(bytes),
            Encoder::Lean(backend) => backend.write_all(bytes),
            Encoder::Termion(backend) => backend.write_all(bytes),
        }
    }

    fn flush(&mut self) -> io::Result<()> {
        match self {
            Encoder::Crossterm(backend) => Backend::flush(backend),
            Encoder::Lean(backend) => Backend::flush(backend),
            Encoder::Termion(backend) => Backend::flush(backend),
        }
    }
}

pub struct Renderer {
    backend: Encoder,
    /// What the terminal shows now, and the frame being painted.
    shown: Buffer,
    next: Buffer,
    /// Wrap each frame in DEC mode 2026 begin/end markers.
    pub sync: bool,
    /// Clear the screen before the next frame (after a resize).
    clear_pending: bool,
}

impl Renderer {
    pub fn new(writer: BoxedWriter, area: Rect, backend: BackendKind) -> Self {
        Renderer {
            backend: Encoder::new(backend, writer),
            shown: Buffer::empty(area),
            next: Buffer::empty(area),
            sync: false,
            clear_pending: false,
        }
    }

    pub fn area(&self) -> Rect {
        self.next.area
    }

    /// The buffer to paint the next frame into. It holds the frame before last (buffers are
    /// swapped, not copied or cleared, to keep per-frame work at the painting itself), so the
    /// painter must paint every cell.
    pub fn buffer_mut(&mut self) -> &mut Buffer {
        &mut self.next
    }

    /// Sends the cells that changed since the last frame, then flushes: one flush per frame, so
    /// the writer mode alone decides how many write(2) calls the frame takes. Returns the number
    /// of cells sent.
    pub fn present(&mut self) -> io::Result<usize> {
        self.present_with(&[])
    }

    /// Like [`Renderer::present`], with `trailer` (a query to the terminal, say) queued after the
    /// frame and sent in the same flush.
    /// Its errors, as every write's here, are marked when the reader went away
    /// ([`mark_reader_gone`]): this is flushlab's own output.
    pub fn present_with(&mut self, trailer: &[u8]) -> io::Result<usize> {
        self.send_frame(trailer).map_err(mark_reader_gone)
    }

    fn send_frame(&mut self, trailer: &[u8]) -> io::Result<usize> {
        let writer = &mut self.backend;
        if self.sync {
            writer.write_all(SYNC_BEGIN)?;
        }
        if self.clear_pending {
            writer.write_all(CLEAR_ALL)?;
            self.clear_pending = false;
        }
        let mut cells = 0;
        let diff = self.shown.diff_iter(&self.next).inspect(|_| cells += 1);
        writer.draw(diff)?;
        if self.sync {
            writer.write_all(SYNC_END)?;
        }
        writer.write_all(trailer)?;
        writer.flush()?;
        std::mem::swap(&mut self.shown, &mut self.next);
        Ok(cells)
    }

    /// Follows a new terminal size: the next frame clears the screen and sends every cell.
    pub fn resize(&mut self, area: Rect) {
        self.shown = Buffer::empty(area);
        self.next = Buffer::empty(area);
        self.clear_pending = true;
    }

    pub fn backend(&self) -> BackendKind {
        self.backend.kind()
    }

    /// Replaces the writer after flushing the old one, and encodes with `backend` from now on.
    /// What the terminal shows is unchanged (the backends send the same screen), so the next
    /// frame is still a diff: switching never restarts the terminal.
    pub fn set_writer(&mut self, writer: BoxedWriter, backend: BackendKind) -> io::Result<()> {
        self.backend.flush().map_err(mark_reader_gone)?;
        let old = std::mem::replace(&mut self.backend, Encoder::new(backend, writer));
        // Dropping waits for a writer thread's frame in flight, so frames stay in order.
        drop(old);
        Ok(())
    }

    /// Writes bytes outside the frame (screen setup), flushed at once.
    pub fn write_now(&mut self, bytes: &[u8]) -> io::Result<()> {
        self.backend
            .write_all(bytes)
            .and_then(|()| self.backend.flush())
            .map_err(mark_reader_gone)
    }

    /// Puts `writer` in place of the current one and hands that back, as it is: at a frame's
    /// boundary (after a present, which flushed) nothing waits in it. The encoder keeps its
    /// state, so the next frame is encoded as it would have been.
    pub fn replace_writer(&mut self, writer: BoxedWriter) -> BoxedWriter {
        let slot = match &mut self.backend {
            Encoder::Crossterm(backend) => backend.writer_mut(),
            Encoder::Lean(backend) => backend.writer_mut(),
            Encoder::Termion(backend) => backend.writer_mut(),
        };
        std::mem::replace(slot, writer)
    }

    /// Flushes and drops the writer, waiting for any frame in flight.
    pub fn finish(mut self) -> io::Result<()> {
        self.backend.flush().map_err(mark_reader_gone)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::{Arc, Mutex};

    #[derive(Clone, Default)]
    struct Shared(Arc<Mutex<Vec<u8>>>);
    impl Write for Shared {
        fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
            self.0.lock().unwrap().extend_from_slice(buf);
            Ok(buf.len())
        }
        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }

    #[test]
    fn sends_only_changed_cells_and_sync_markers_wrap_the_frame() {
        let out = Shared::default();
        let mut r = Renderer::new(
            Box::new(out.clone()),
            Rect::new(0, 0, 10, 2),
            BackendKind::Crossterm,
        );
        r.sync = true;
        r.buffer_mut()
            .set_string(0, 0, "hello", ratatui::style::Style::new());
        assert_eq!(r.present().unwrap(), 5);
        r.buffer_mut()
            .set_string(0, 0, "help!", ratatui::style::Style::new());
        assert_eq!(r.present().unwrap(), 2);
        let bytes = String::from_utf8(out.0.lock().unwrap().clone()).unwrap();
        assert!(bytes.starts_with("\x1b[?2026h"), "{bytes:?}");
        assert!(bytes.ends_with("\x1b[?2026l"), "{bytes:?}");
        assert!(bytes.contains("p!"));
    }

    #[test]
    fn resize_clears_and_resends_everything() {
        let out = Shared::default();
        let mut r = Renderer::new(
            Box::new(out.clone()),
            Rect::new(0, 0, 4, 1),
            BackendKind::Lean,
        );
        r.buffer_mut()
            .set_string(0, 0, "abcd", ratatui::style::Style::new());
        r.present().unwrap();
        r.resize(Rect::new(0, 0, 2, 1));
        r.buffer_mut()
            .set_string(0, 0, "ab", ratatui::style::Style::new());
        assert_eq!(r.present().unwrap(), 2);
        let bytes = String::from_utf8(out.0.lock().unwrap().clone()).unwrap();
        assert!(bytes.contains("\x1b[2J"));
    }
}
