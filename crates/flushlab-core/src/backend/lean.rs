//! `LeanBackend`: a ratatui [`Backend`] that encodes cells straight into bytes.
//!
//! It sends what ratatui's crossterm backend sends for the same cells — the same cursor moves,
//! SGR sequences and colour forms (`38;5;N` for named colours, as crossterm writes them), so a
//! terminal ends with the same screen — but builds each cell's bytes in a small buffer with a
//! digit table, where crossterm formats every number and every sequence through `fmt`, and
//! hands the writer one `write_all` a cell, where crossterm hands it one per formatted piece.
//! Which writer is underneath still decides how many write(2) calls a frame takes: unbuffered,
//! that is one a cell (crossterm: several a cell); buffered, one a frame either way.
//!
//! Any ratatui app can draw through it: `Terminal::new(LeanBackend::new(writer))`.

use std::io::{self, Write};

use ratatui::backend::{Backend, ClearType, WindowSize};
use ratatui::buffer::Cell;
use ratatui::layout::{Position, Size};
use ratatui::style::{Color, Modifier};

/// Cursor moves, SGR and symbols written straight into bytes; see the module's documentation.
pub struct LeanBackend<W: Write> {
    writer: W,
    /// One cell's bytes, reused: no allocation per cell.
    cell: Vec<u8>,
    /// crossterm leaves colours out when `NO_COLOR` is set, and so does this backend (the two
    /// must do the same work).
    colours: bool,
    /// The size `size()` reports when no terminal can be asked (a pty's window size, set by the
    /// caller); `None` asks the writer's terminal through crossterm's query, as crossterm does.
    size: Option<Size>,
}

impl<W: Write> LeanBackend<W> {
    pub fn new(writer: W) -> LeanBackend<W> {
        LeanBackend {
            writer,
            cell: Vec::with_capacity(64),
            colours: std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty()),
            size: None,
        }
    }

    /// Reports `size` instead of asking a terminal: for writers that are not one.
    pub fn with_size(mut self, size: Size) -> LeanBackend<W> {
        self.size = Some(size);
        self
    }

    pub fn writer(&self) -> &W {
        &self.writer
    }

    pub fn writer_mut(&mut self) -> &mut W {
        &mut self.writer
    }

    pub fn into_writer(self) -> W {
        self.writer
    }

    /// The bytes of one cell after `state`: a move unless it follows the last one, the
    /// attributes and colours that changed, its symbol. Updates `state`.
    fn encode(&mut self, x: u16, y: u16, cell: &Cell, state: &mut Pen) {
        let out = &mut self.cell;
        out.clear();
        if !matches!(state.last, Some((lx, ly)) if x == lx.wrapping_add(1) && y == ly) {
            out.extend_from_slice(b"\x1b[");
            push_u16(out, y.saturating_add(1));
            out.push(b';');
            push_u16(out, x.saturating_add(1));
            out.push(b'H');
        }
        state.last = Some((x, y));
        if cell.modifier != state.modifier {
            push_modifier_change(out, state.modifier, cell.modifier);
            state.modifier = cell.modifier;
        }
        if cell.fg != state.fg || cell.bg != state.bg {
            out.extend_from_slice(b"\x1b[");
            if self.colours {
                push_colour(out, Layer::Fg, cell.fg);
                out.push(b';');
                push_colour(out, Layer::Bg, cell.bg);
            } else {
                out.push(b';');
            }
            out.push(b'm');
            state.fg = cell.fg;
            state.bg = cell.bg;
        }
        if cell.underline_color != state.underline {
            out.extend_from_slice(b"\x1b[");
            if self.colours {
                push_colour(out, Layer::Underline, cell.underline_color);
            }
            out.push(b'm');
            state.underline = cell.underline_color;
        }
        out.extend_from_slice(cell.symbol().as_bytes());
    }
}

/// What the terminal's pen holds after the cells sent so far in one draw.
struct Pen {
    last: Option<(u16, u16)>,
    fg: Color,
    bg: Color,
    underline: Color,
    modifier: Modifier,
}

impl Pen {
    /// A draw starts from the state the previous draw left: colours and attributes reset.
    fn reset() -> Pen {
        Pen {
            last: None,
            fg: Color::Reset,
            bg: Color::Reset,
            underline: Color::Reset,
            modifier: Modifier::empty(),
        }
    }
}

#[derive(Clone, Copy)]
enum Layer {
    Fg,
    Bg,
    Underline,
}

fn push_u8(out: &mut Vec<u8>, n: u8) {
    out.extend_from_slice(&DIGITS[usize::from(n)].0[..usize::from(DIGITS[usize::from(n)].1)]);
}

/// Each byte value's decimal digits and their count, built at compile time: a colour component
/// is a copy, not a division.
static DIGITS: [([u8; 3], u8); 256] = {
    let mut table = [([0u8; 3], 0u8); 256];
    let mut n = 0;
    while n < 256 {
        let (h, t, o) = ((n / 100) as u8, ((n / 10) % 10) as u8, (n % 10) as u8);
        table[n] = if n >= 100 {
            ([b'0' + h, b'0' + t, b'0' + o], 3)
        } else if n >= 10 {
            ([b'0' + t, b'0' + o, 0], 2)
        } else {
            ([b'0' + o, 0, 0], 1)
        };
        n += 1;
    }
    table
};

fn push_u16(out: &mut Vec<u8>, n: u16) {
    if let Ok(small) = u8::try_from(n) {
        return push_u8(out, small);
    }
    let mut digits = [0u8; 5];
    let mut at = digits.len();
    let mut n = n;
    while n > 0 {
        at -= 1;
        digits[at] = b'0' + (n % 10) as u8;
        n /= 10;
    }
    out.extend_from_slice(&digits[at..]);
}

/// crossterm's forms: `39`/`49`/`59` for reset, `38;5;N` for a named or indexed colour,
/// `38;2;R;G;B` for RGB.
fn push_colour(out: &mut Vec<u8>, layer: Layer, colour: Color) {
    let (reset, lead): (&[u8], &[u8]) = match layer {
        Layer::Fg => (b"39", b"38;"),
        Layer::Bg => (b"49", b"48;"),
        Layer::Underline => (b"59", b"58;"),
    };
    let index = match colour {
        Color::Reset => return out.extend_from_slice(reset),
        Color::Black => 0,
        Color::Red => 1,
        Color::Green => 2,
        Color::Yellow => 3,
        Color::Blue => 4,
        Color::Magenta => 5,
        Color::Cyan => 6,
        Color::Gray => 7,
        Color::DarkGray => 8,
        Color::LightRed => 9,
        Color::LightGreen => 10,
        Color::LightYellow => 11,
        Color::LightBlue => 12,
        Color::LightMagenta => 13,
        Color::LightCyan => 14,
        Color::White => 15,
        Color::Indexed(i) => i,
        Color::Rgb(r, g, b) => {
            out.extend_from_slice(lead);
            out.extend_from_slice(b"2;");
            push_u8(out, r);
            out.push(b';');
            push_u8(out, g);
            out.push(b';');
            push_u8(out, b);
            return;
        }
    };
    out.extend_from_slice(lead);
    out.extend_from_slice(b"5;");
    push_u8(out, index);
}

/// The SGR sequences from `from` to `to`, in crossterm's order: what is removed first (bold and
/// dim share one "normal intensity" reset, after which the one kept is set again), then what
/// is added.
fn push_modifier_change(out: &mut Vec<u8>, from: Modifier, to: Modifier) {
    let mut sgr = |code: &[u8]| {
        out.extend_from_slice(b"\x1b[");
        out.extend_from_slice(code);
        out.push(b'm');
    };
    let removed = from - to;
    if removed.contains(Modifier::REVERSED) {
        sgr(b"27");
    }
    let reset_intensity = removed.intersects(Modifier::BOLD | Modifier::DIM);
    if reset_intensity {
        sgr(b"22");
        if to.contains(Modifier::DIM) {
            sgr(b"2");
        }
        if to.contains(Modifier::BOLD) {
            sgr(b"1");
        }
    }
    for (modifier, code) in [
        (Modifier::ITALIC, b"23"),
        (Modifier::UNDERLINED, b"24"),
        (Modifier::CROSSED_OUT, b"29"),
        (Modifier::HIDDEN, b"28"),
    ] {
        if removed.contains(modifier) {
            sgr(code);
        }
    }
    if removed.intersects(Modifier::SLOW_BLINK | Modifier::RAPID_BLINK) {
        sgr(b"25");
    }
    let added = to - from;
    if added.contains(Modifier::REVERSED) {
        sgr(b"7");
    }
    if added.contains(Modifier::BOLD) && !reset_intensity {
        sgr(b"1");
    }
    if added.contains(Modifier::ITALIC) {
        sgr(b"3");
    }
    if added.contains(Modifier::UNDERLINED) {
        sgr(b"4");
    }
    if added.contains(Modifier::DIM) && !reset_intensity {
        sgr(b"2");
    }
    for (modifier, code) in [
        (Modifier::CROSSED_OUT, b"9"),
        (Modifier::HIDDEN, b"8"),
        (Modifier::SLOW_BLINK, b"5"),
        (Modifier::RAPID_BLINK, b"6"),
    ] {
        if added.contains(modifier) {
            sgr(code);
        }
    }
}

impl<W: Write> Write for LeanBackend<W> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.writer.write(buf)
    }

    fn write_all(&mut self, buf: &[u8]) -> io::Result<()> {
        self.writer.write_all(buf)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.writer.flush()
    }
}

impl<W: Write> Backend for LeanBackend<W> {
    type Error = io::Error;

    fn draw<'a, I>(&mut self, content: I) -> io::Result<()>
    where
        I: Iterator<Item = (u16, u16, &'a Cell)>,
    {
        let mut pen = Pen::reset();
        for (x, y, cell) in content {
            self.encode(x, y, cell, &mut pen);
            self.writer.write_all(&self.cell)?;
        }
        // As crossterm ends a draw: colours, underline colour and attributes reset.
        if self.colours {
            self.writer.write_all(b"\x1b[39m\x1b[49m\x1b[59m\x1b[0m")
        } else {
            self.writer.write_all(b"\x1b[m\x1b[m\x1b[m\x1b[0m")
        }
    }

    fn hide_cursor(&mut self) -> io::Result<()> {
        self.writer.write_all(b"\x1b[?25l")?;
        self.writer.flush()
    }

    fn show_cursor(&mut self) -> io::Result<()> {
        self.writer.write_all(b"\x1b[?25h")?;
        self.writer.flush()
    }

    fn get_cursor_position(&mut self) -> io::Result<Position> {
        Err(io::Error::new(
            io::ErrorKind::Unsupported,
            "LeanBackend writes only: it does not read the terminal's answers",
        ))
    }

    fn set_cursor_position<P: Into<Position>>(&mut self, position: P) -> io::Result<()> {
        let Position { x, y } = position.into();
        self.cell.clear();
        self.cell.extend_from_slice(b"\x1b[");
        push_u16(&mut self.cell, y.saturating_add(1));
        self.cell.push(b';');
        push_u16(&mut self.cell, x.saturating_add(1));
        self.cell.push(b'H');
        self.writer.write_all(&self.cell)?;
        self.writer.flush()
    }

    fn clear(&mut self) -> io::Result<()> {
        self.clear_region(ClearType::All)
    }

    fn clear_region(&mut self, clear_type: ClearType) -> io::Result<()> {
        let sequence: &[u8] = match clear_type {
            ClearType::All => b"\x1b[2J",
            ClearType::AfterCursor => b"\x1b[J",
            ClearType::BeforeCursor => b"\x1b[1J",
            ClearType::CurrentLine => b"\x1b[2K",
            ClearType::UntilNewLine => b"\x1b[K",
        };
        self.writer.write_all(sequence)?;
        self.writer.flush()
    }

    fn append_lines(&mut self, n: u16) -> io::Result<()> {
        for _ in 0..n {
            self.writer.write_all(b"\n")?;
        }
        self.writer.flush()
    }

    fn size(&self) -> io::Result<Size> {
        self.size.ok_or_else(|| {
            io::Error::new(
                io::ErrorKind::Unsupported,
                "LeanBackend has no terminal to ask its size: give it with `with_size`",
            )
        })
    }

    fn window_size(&mut self) -> io::Result<WindowSize> {
        let columns_rows = self.size()?;
        Ok(WindowSize {
            columns_rows,
            pixels: Size::default(),
        })
    }

    fn flush(&mut self) -> io::Result<()> {
        self.writer.flush()
    }

    fn scroll_region_up(&mut self, region: std::ops::Range<u16>, amount: u16) -> io::Result<()> {
        self.scroll_region(region, amount, b'S')
    }

    fn scroll_region_down(&mut self, region: std::ops::Range<u16>, amount: u16) -> io::Result<()> {
        self.scroll_region(region, amount, b'T')
    }
}

impl<W: Write> LeanBackend<W> {
    /// `ESC [ top ; bottom r`, `ESC [ N S|T`, `ESC [ r`: the region set, scrolled, and the
    /// whole screen given back, as ratatui's crossterm backend does it (nothing for 0 lines).
    fn scroll_region(
        &mut self,
        region: std::ops::Range<u16>,
        amount: u16,
        direction: u8,
    ) -> io::Result<()> {
        if amount == 0 {
            return self.writer.flush();
        }
        let out = &mut self.cell;
        out.clear();
        out.extend_from_slice(b"\x1b[");
        push_u16(out, region.start.saturating_add(1));
        out.push(b';');
        push_u16(out, region.end.saturating_sub(1).saturating_add(1));
        out.extend_from_slice(b"r\x1b[");
        push_u16(out, amount);
        out.push(direction);
        out.extend_from_slice(b"\x1b[r");
        self.writer.write_all(&self.cell)?;
        self.writer.flush()
    }
}
