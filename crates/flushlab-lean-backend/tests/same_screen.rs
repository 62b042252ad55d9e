//! The lean backend sends the screen ratatui's crossterm backend sends: for random buffers
//! (wide characters, every kind of colour, every modifier, cells ratatui's diff skips), the
//! bytes are the same, and a terminal model (vt100) fed each shows the same cells, colours and
//! attributes, which are those of the buffer drawn.

use std::io::{self, Write};

use flushlab_lean_backend::LeanBackend;
use proptest::prelude::*;
use ratatui::backend::{Backend, CrosstermBackend};
use ratatui::buffer::{Buffer, CellDiffOption};
use ratatui::layout::Rect;
use ratatui::style::{Color, Modifier, Style};
use std::cell::RefCell;
use std::rc::Rc;
use unicode_width::UnicodeWidthStr;

/// What a backend wrote, and in how many `write` calls (unbuffered, each would be one
/// write(2)); shared, since crossterm's backend does not lend its writer.
#[derive(Clone, Default)]
struct Calls(Rc<RefCell<(usize, Vec<u8>)>>);

impl Calls {
    fn calls(&self) -> usize {
        self.0.borrow().0
    }
    fn bytes(&self) -> Vec<u8> {
        self.0.borrow().1.clone()
    }
}

impl Write for Calls {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let mut inner = self.0.borrow_mut();
        inner.0 += 1;
        inner.1.extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// The 16 named colours, in ANSI order (their index is the one crossterm sends).
const NAMED: [Color; 16] = [
    Color::Black,
    Color::Red,
    Color::Green,
    Color::Yellow,
    Color::Blue,
    Color::Magenta,
    Color::Cyan,
    Color::Gray,
    Color::DarkGray,
    Color::LightRed,
    Color::LightGreen,
    Color::LightYellow,
    Color::LightBlue,
    Color::LightMagenta,
    Color::LightCyan,
    Color::White,
];

fn colour() -> impl Strategy<Value = Color> {
    prop_oneof![
        Just(Color::Reset),
        (0..NAMED.len()).prop_map(|i| NAMED[i]),
        any::<u8>().prop_map(Color::Indexed),
        any::<(u8, u8, u8)>().prop_map(|(r, g, b)| Color::Rgb(r, g, b)),
    ]
}

fn style() -> impl Strategy<Value = Style> {
    (colour(), colour(), colour(), any::<u16>()).prop_map(|(fg, bg, underline, bits)| {
        Style::new()
            .fg(fg)
            .bg(bg)
            .underline_color(underline)
            .add_modifier(Modifier::from_bits_truncate(bits))
    })
}

/// Text with narrow and multi-byte characters, and with `wide`, two-column ones.
fn text(wide: bool) -> impl Strategy<Value = String> {
    let mut parts = vec!["a", "Z", "0", " ", "é", "█", "▀", "│", "ß"];
    if wide {
        parts.extend(["中", "字", "🙂", "ｱ"]);
    }
    prop::collection::vec(prop::sample::select(parts), 1..12).prop_map(|parts| parts.concat())
}

/// A buffer painted by a few styled strings at random places over a styled background.
fn buffer(area: Rect, wide: bool) -> impl Strategy<Value = Buffer> {
    (
        style(),
        prop::collection::vec((0..area.width, 0..area.height, text(wide), style()), 0..12),
    )
        .prop_map(move |(background, strings)| {
            let mut buffer = Buffer::empty(area);
            buffer.set_style(area, background);
            for (x, y, text, style) in strings {
                buffer.set_stringn(x, y, text, usize::from(area.width - x), style);
            }
            buffer
        })
}

/// Two buffers; in the second, some cells ratatui's diff is told to skip (an image's, say).
/// Half the cases have no underline colour, half no wide characters: only in those can the
/// model be checked against the buffer itself (vt100 takes SGR 58's parameters for colours
/// and attributes of their own, and a wide character half overwritten leaves a cell that
/// terminals fill each their own way).
fn screens() -> impl Strategy<Value = (Buffer, Buffer)> {
    (1u16..40, 1u16..12, any::<bool>(), any::<bool>()).prop_flat_map(|(w, h, underlines, wide)| {
        let area = Rect::new(0, 0, w, h);
        let skipped = prop::collection::vec((0..w, 0..h), 0..6);
        (buffer(area, wide), buffer(area, wide), skipped).prop_map(
            move |(mut first, mut second, skipped)| {
                for (x, y) in skipped {
                    second[(x, y)].set_diff_option(CellDiffOption::Skip);
                }
                if !underlines {
                    for cell in first.content.iter_mut().chain(second.content.iter_mut()) {
                        cell.underline_color = Color::Reset;
                    }
                }
                (first, second)
            },
        )
    })
}

/// Whether the model can be checked against the buffer: no underline colour, no wide character.
fn model_reads(buffer: &Buffer) -> bool {
    buffer
        .content
        .iter()
        .all(|c| c.underline_color == Color::Reset && c.symbol().width() <= 1)
}

/// The bytes a backend sends for `first` (from an empty screen), then for `second` as a diff.
fn draw<B: Backend<Error = io::Error>>(backend: &mut B, first: &Buffer, second: &Buffer) {
    let empty = Buffer::empty(first.area);
    backend.draw(empty.diff_iter(first)).unwrap();
    backend.draw(first.diff_iter(second)).unwrap();
    backend.flush().unwrap();
}

fn screen(bytes: &[u8], area: Rect) -> vt100::Parser {
    let side = |n: u16| std::num::NonZeroU16::new(n).unwrap();
    let mut parser = vt100::Parser::new(side(area.height), side(area.width), 0);
    parser.process(bytes);
    parser
}

fn vt_colour(colour: Color) -> vt100::Color {
    match colour {
        Color::Reset => vt100::Color::Default,
        Color::Indexed(i) => vt100::Color::Idx(i),
        Color::Rgb(r, g, b) => vt100::Color::Rgb(r, g, b),
        named_colour => {
            vt100::Color::Idx(NAMED.iter().position(|c| *c == named_colour).unwrap() as u8)
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(1000))]

    #[test]
    fn the_lean_backend_sends_the_screen_crossterm_sends((first, second) in screens()) {
        let area = first.area;
        let (theirs, ours) = (Calls::default(), Calls::default());
        draw(&mut CrosstermBackend::new(theirs.clone()), &first, &second);
        draw(&mut LeanBackend::new(ours.clone()), &first, &second);
        let (theirs, ours) = (theirs.bytes(), ours.bytes());
        prop_assert!(theirs == ours, "bytes differ:\ncrossterm {:?}\nlean      {:?}",
            String::from_utf8_lossy(&theirs), String::from_utf8_lossy(&ours));

        let (theirs, ours) = (screen(&theirs, area), screen(&ours, area));
        for y in 0..area.height {
            for x in 0..area.width {
                let (a, b) = (theirs.screen().cell(y, x).unwrap(), ours.screen().cell(y, x).unwrap());
                let at = format!("cell {x},{y}");
                prop_assert_eq!(a.contents(), b.contents(), "{}", at);
                prop_assert_eq!(a.fgcolor(), b.fgcolor(), "{}", at);
                prop_assert_eq!(a.bgcolor(), b.bgcolor(), "{}", at);
                prop_assert_eq!(
                    (a.bold(), a.dim(), a.italic(), a.underline(), a.inverse()),
                    (b.bold(), b.dim(), b.italic(), b.underline(), b.inverse()),
                    "{}", at
                );
                // And the screen is the buffer drawn, where the model can tell: not skipped, in a
                // case without underline colours and wide characters.
                let cell = &second[(x, y)];
                if cell.diff_option != CellDiffOption::Skip && model_reads(&first) && model_reads(&second)
                {
                    // vt100 reads a space as an empty cell.
                    prop_assert_eq!(b.contents().trim(), cell.symbol().trim(), "{}", at);
                    prop_assert_eq!(b.fgcolor(), vt_colour(cell.fg), "{}", at);
                    prop_assert_eq!(b.bgcolor(), vt_colour(cell.bg), "{}", at);
                    // vt100 keeps one intensity: bold and dim together read as dim.
                    if !cell.modifier.contains(Modifier::DIM) {
                        prop_assert_eq!(b.bold(), cell.modifier.contains(Modifier::BOLD), "{}", at);
                    }
                    prop_assert_eq!(b.inverse(), cell.modifier.contains(Modifier::REVERSED), "{}", at);
                }
            }
        }
    }
}

#[test]
fn the_lean_backend_hands_its_writer_one_write_a_cell() {
    let area = Rect::new(0, 0, 20, 5);
    let mut buffer = Buffer::empty(area);
    for y in 0..5 {
        for x in 0..20 {
            buffer[(x, y)]
                .set_symbol("x")
                .set_fg(Color::Rgb(x as u8 * 10, y as u8 * 40, 7))
                .set_bg(Color::Indexed((x + y) as u8));
        }
    }
    let empty = Buffer::empty(area);
    let (lean, crossterm) = (Calls::default(), Calls::default());
    LeanBackend::new(lean.clone())
        .draw(empty.diff_iter(&buffer))
        .unwrap();
    CrosstermBackend::new(crossterm.clone())
        .draw(empty.diff_iter(&buffer))
        .unwrap();
    // 100 cells and the reset at the end.
    assert_eq!(lean.calls(), 101);
    assert_eq!(lean.bytes(), crossterm.bytes());
    assert!(
        crossterm.calls() > 10 * 100,
        "crossterm: {} writes",
        crossterm.calls()
    );
}

#[test]
fn a_terminal_drawn_through_the_lean_backend_shows_the_widgets() {
    use ratatui::widgets::{Block, Paragraph};
    let area = Rect::new(0, 0, 30, 4);
    let backend = LeanBackend::new(Vec::new()).with_size(area.as_size());
    let mut terminal = ratatui::Terminal::new(backend).unwrap();
    terminal
        .draw(|frame| {
            frame.render_widget(
                Paragraph::new("hello, lean").block(Block::bordered().title("t")),
                frame.area(),
            );
        })
        .unwrap();
    let bytes = terminal.backend().writer().clone();
    let parser = screen(&bytes, area);
    assert!(
        parser.screen().contents().contains("hello, lean"),
        "{:?}",
        parser.screen().contents()
    );
    assert_eq!(parser.screen().cell(0, 0).unwrap().contents(), "┌");
}

/// A writer that takes `room` bytes, then fails as a closed pty does (`EIO`), or a full disk, or
/// a reader that went away (`EPIPE`).
struct Failing {
    room: usize,
    error: io::ErrorKind,
    got: Vec<u8>,
}

impl Write for Failing {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        if self.room == 0 {
            return Err(io::Error::from(self.error));
        }
        let n = buf.len().min(self.room);
        self.room -= n;
        self.got.extend_from_slice(&buf[..n]);
        Ok(n)
    }
    fn flush(&mut self) -> io::Result<()> {
        if self.room == 0 {
            return Err(io::Error::from(self.error));
        }
        Ok(())
    }
}

/// A write error comes back as the error, never a panic, wherever in a frame it happens; and a
/// draw after it sends the frame whole (the backend keeps nothing of a draw that failed).
#[test]
fn a_write_error_is_returned_and_the_next_draw_is_whole() {
    let area = Rect::new(0, 0, 40, 10);
    let mut buffer = Buffer::empty(area);
    for y in 0..10 {
        for x in 0..40 {
            buffer[(x, y)]
                .set_symbol("é")
                .set_fg(Color::Rgb(x as u8, y as u8, 9))
                .set_style(Style::new().add_modifier(Modifier::BOLD));
        }
    }
    let empty = Buffer::empty(area);
    let whole = {
        let calls = Calls::default();
        LeanBackend::new(calls.clone())
            .draw(empty.diff_iter(&buffer))
            .unwrap();
        calls.bytes()
    };
    for error in [
        io::ErrorKind::BrokenPipe,
        io::ErrorKind::StorageFull,
        io::ErrorKind::Other,
    ] {
        for room in [0, 1, 7, 100, whole.len() / 2, whole.len() - 1] {
            let mut backend = LeanBackend::new(Failing {
                room,
                error,
                got: Vec::new(),
            });
            let failed = backend.draw(empty.diff_iter(&buffer));
            assert_eq!(failed.unwrap_err().kind(), error, "room {room}");
            assert_eq!(backend.writer().got.len(), room);
            // The same backend, its writer given room again: the whole frame goes out.
            let writer = backend.writer_mut();
            (writer.room, writer.got) = (usize::MAX, Vec::new());
            backend.draw(empty.diff_iter(&buffer)).unwrap();
            assert!(backend.writer().got == whole, "room {room}");
        }
    }
    for op in [
        |b: &mut LeanBackend<Failing>| b.hide_cursor(),
        |b: &mut LeanBackend<Failing>| b.show_cursor(),
        |b: &mut LeanBackend<Failing>| b.clear(),
        |b: &mut LeanBackend<Failing>| b.append_lines(3),
        |b: &mut LeanBackend<Failing>| b.set_cursor_position((3, 4)),
    ] {
        let mut backend = LeanBackend::new(Failing {
            room: 0,
            error: io::ErrorKind::BrokenPipe,
            got: Vec::new(),
        });
        assert_eq!(
            op(&mut backend).unwrap_err().kind(),
            io::ErrorKind::BrokenPipe
        );
    }
}
