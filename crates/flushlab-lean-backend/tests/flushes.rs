//! Which calls flush: through ratatui's `Terminal::draw` a frame reaches the writer in one
//! flush, its cursor calls included; outside a frame every call that changes the screen is sent
//! at once, as crossterm's backend sends it.

use std::cell::RefCell;
use std::io::{self, Write};
use std::rc::Rc;

use flushlab_lean_backend::LeanBackend;
use ratatui::Terminal;
use ratatui::backend::Backend;
use ratatui::layout::{Position, Size};

/// A writer that keeps what it is given until a flush, as a `BufWriter` or flushlab's frame
/// writer does, and records each flush that had bytes to send: the write(2)s a frame takes.
#[derive(Clone, Default)]
struct Sent(Rc<RefCell<Sends>>);

#[derive(Default)]
struct Sends {
    pending: Vec<u8>,
    sent: Vec<Vec<u8>>,
}

impl Sent {
    fn sends(&self) -> Vec<Vec<u8>> {
        self.0.borrow().sent.clone()
    }
    fn pending(&self) -> usize {
        self.0.borrow().pending.len()
    }
}

impl Write for Sent {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.0.borrow_mut().pending.extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> io::Result<()> {
        let mut inner = self.0.borrow_mut();
        if !inner.pending.is_empty() {
            let frame = std::mem::take(&mut inner.pending);
            inner.sent.push(frame);
        }
        Ok(())
    }
}

fn terminal(sent: &Sent) -> Terminal<LeanBackend<Sent>> {
    Terminal::new(LeanBackend::new(sent.clone()).with_size(Size::new(20, 3))).unwrap()
}

/// ratatui hides the cursor after each draw when the frame sets none, and shows and moves it
/// when it sets one; either way the frame and its cursor are one send, the cursor's sequences
/// last (a terminal that paints between two sends would show the cursor where it is not).
#[test]
fn a_frame_is_one_send_with_its_cursor_hidden_or_shown() {
    let sent = Sent::default();
    let mut terminal = terminal(&sent);
    terminal
        .draw(|frame| frame.render_widget("hidden", frame.area()))
        .unwrap();
    terminal
        .draw(|frame| {
            frame.render_widget("shown", frame.area());
            frame.set_cursor_position(Position::new(4, 1));
        })
        .unwrap();
    terminal
        .draw(|frame| {
            frame.render_widget("moved", frame.area());
            frame.set_cursor_position(Position::new(7, 2));
        })
        .unwrap();
    let sends = sent.sends();
    assert_eq!(sends.len(), 3, "one send a frame: {sends:?}");
    assert!(sends[0].ends_with(b"\x1b[?25l"), "{:?}", sends[0]);
    assert!(sends[1].ends_with(b"\x1b[?25h\x1b[2;5H"), "{:?}", sends[1]);
    assert!(sends[2].ends_with(b"\x1b[?25h\x1b[3;8H"), "{:?}", sends[2]);
}

/// Outside a frame (an app's own `hide_cursor`, ratatui's `clear`, the `show_cursor` a
/// `Terminal` sends as it is dropped) nothing waits for a flush that may never come.
#[test]
fn outside_a_frame_each_call_is_sent_at_once() {
    let sent = Sent::default();
    let mut terminal = terminal(&sent);
    terminal.hide_cursor().unwrap();
    assert_eq!(sent.sends(), vec![b"\x1b[?25l".to_vec()]);
    terminal.set_cursor_position(Position::new(0, 0)).unwrap();
    terminal.backend_mut().clear().unwrap();
    terminal.backend_mut().append_lines(1).unwrap();
    assert_eq!(sent.sends().len(), 4);
    terminal
        .draw(|frame| frame.render_widget("x", frame.area()))
        .unwrap();
    drop(terminal);
    let sends = sent.sends();
    assert_eq!(sends.len(), 6, "{sends:?}");
    assert_eq!(sends[5], b"\x1b[?25h");
    assert_eq!(sent.pending(), 0);
}

/// A draw that failed leaves no frame open: the calls after it are sent at once.
#[test]
fn a_failed_draw_leaves_no_frame_open() {
    struct Refusing(Sent, bool);
    impl Write for Refusing {
        fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
            if self.1 {
                return Err(io::ErrorKind::BrokenPipe.into());
            }
            self.0.write(buf)
        }
        fn flush(&mut self) -> io::Result<()> {
            self.0.flush()
        }
    }
    let sent = Sent::default();
    let mut backend = LeanBackend::new(Refusing(sent.clone(), true)).with_size(Size::new(4, 1));
    let buffer = ratatui::buffer::Buffer::with_lines(["abcd"]);
    let empty = ratatui::buffer::Buffer::empty(buffer.area);
    assert!(backend.draw(empty.diff_iter(&buffer)).is_err());
    backend.writer_mut().1 = false;
    backend.show_cursor().unwrap();
    assert_eq!(sent.sends(), vec![b"\x1b[?25h".to_vec()]);
}
