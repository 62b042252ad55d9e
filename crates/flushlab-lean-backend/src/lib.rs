//! `LeanBackend`: a [ratatui](https://ratatui.rs) [`Backend`] that encodes cells straight into
//! bytes, for any `W: Write` — stdout, stderr, a `BufWriter`, a `Vec<u8>`.
//!
//! It sends what ratatui's `CrosstermBackend` sends for the same cells — the same cursor moves,
//! SGR sequences and colour forms (`38;5;N` for named colours, as crossterm writes them), so a
//! terminal ends with the same screen — but builds each cell's bytes in a small buffer with a
//! digit table, where crossterm formats every number and every sequence through `fmt`, and hands
//! the writer one `write_all` a cell, where crossterm hands it one a formatted piece. Which
//! writer is underneath still decides how many write(2) calls a frame takes: unbuffered, one a
//! cell (crossterm: several a cell); behind a `BufWriter` flushed once a frame, one a frame
//! either way. Buffer first; then the encoder is the cost this crate cuts.
//!
//! Two lines change in an app:
//!
//! ```no_run
//! use std::io::{self, BufWriter};
//! use flushlab_lean_backend::LeanBackend;
//!
//! # fn main() -> io::Result<()> {
//! // was: Terminal::new(CrosstermBackend::new(BufWriter::new(io::stdout())))?
//! let backend = LeanBackend::new(BufWriter::with_capacity(64 * 1024, io::stdout()));
//! let mut terminal = ratatui::Terminal::new(backend)?;
//! terminal.draw(|frame| frame.render_widget("hello", frame.area()))?;
//! # Ok(())
//! # }
//! ```
//!
//! Into memory, with the size given (a writer that is no terminal):
//!
//! ```
//! use flushlab_lean_backend::LeanBackend;
//! use ratatui::layout::Size;
//!
//! let backend = LeanBackend::new(Vec::new()).with_size(Size::new(20, 2));
//! let mut terminal = ratatui::Terminal::new(backend).unwrap();
//! terminal.draw(|frame| frame.render_widget("lean", frame.area())).unwrap();
//! let bytes = terminal.backend().writer();
//! assert!(bytes.starts_with(b"\x1b[1;1Hlean"));
//! ```
//!
//! What it does not do, and what it does differently:
//!
//! - It sends colours as crossterm does: RGB as `38;2;R;G;B`, indexed as `38;5;N`. A terminal
//!   without truecolor shows RGB as it shows crossterm's: the crate does not downsample.
//! - `NO_COLOR` set and not empty: no colour at all, as crossterm does.
//! - Size and cursor position are asked of the terminal crossterm asks (the one on stdout, else
//!   `/dev/tty`), whatever the writer is; give a writer that is no terminal its size with
//!   [`LeanBackend::with_size`]. Asking the cursor's position writes `ESC[6n` to that terminal
//!   and waits for its answer, as crossterm's backend does.
//! - A write error (a closed pty, a full disk, `EPIPE`) comes back as the `io::Error`, never a
//!   panic; a frame whose draw failed is not assumed drawn (ratatui draws its whole buffer
//!   again only if the app calls `Terminal::clear`; the backend keeps no state across draws).
//!
//! ## Which calls flush
//!
//! How many write(2)s a frame takes is the writer's to decide, so the backend flushes the writer
//! only where a caller needs the bytes on the screen now:
//!
//! - `draw` never flushes, as crossterm's does not: a frame is many cells.
//! - `Backend::flush` (and `Write::flush`) always does. ratatui's `Terminal::draw` ends with
//!   it, after its own cursor calls.
//! - `hide_cursor`, `show_cursor`, `set_cursor_position`, `clear`, `clear_region`,
//!   `append_lines` (and the scroll-region calls) flush when no frame is open, as crossterm's
//!   `execute!` does: an app's own `hide_cursor`, ratatui's `Terminal::clear`, or the
//!   `show_cursor` a `Terminal` sends as it is dropped reach the screen with no flush after them.
//! - Between a `draw` that succeeded and the next flush they do not flush. `Terminal::draw`
//!   calls `hide_cursor` after every frame, or `show_cursor` then `set_cursor_position` when
//!   the frame sets a cursor, and then `Backend::flush`. So over a `BufWriter` a frame is one
//!   write(2) with its cursor sequences last. crossterm's backend flushes in each cursor call,
//!   which makes a frame with a visible cursor two write(2)s (the frame, then the move), and a
//!   terminal can paint between them with the cursor where it is not.
//!
//! `tests/flushes.rs` holds each of these.
//!
//! MSRV: Rust 1.88. No `unsafe` (`#![forbid(unsafe_code)]`).

#![forbid(unsafe_code)]

use std::io::{self, Write};

use ratatui_core::backend::{Backend, ClearType, WindowSize};
use ratatui_core::buffer::Cell;
use ratatui_core::layout::{Position, Size};
use ratatui_core::style::{Color, Modifier};

/// Cursor moves, SGR and symbols written straight into bytes; see the module's documentation.
pub struct LeanBackend<W: Write> {
    writer: W,
    /// One cell's bytes, reused: no allocation per cell.
    cell: CellBytes,
    /// crossterm leaves colours out when `NO_COLOR` is set, and so does this backend (the two
    /// must do the same work).
    colours: bool,
    /// The size `size()` reports when no terminal can be asked (a pty's window size, set by the
    /// caller); `None` asks the terminal through crossterm's query, as crossterm's backend does.
    size: Option<Size>,
    /// A `draw` succeeded and no `Backend::flush` has followed: the cursor calls ratatui makes
    /// after a draw go out with the frame (see [which calls flush](crate#which-calls-flush)).
    frame_open: bool,
}

// The traits ratatui's `CrosstermBackend` has (a `Terminal` of it is `Debug`, comparable,
// clonable where its writer is): by the writer and the settings; the cell buffer is scratch.
impl<W: Write + std::fmt::Debug> std::fmt::Debug for LeanBackend<W> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LeanBackend")
            .field("writer", &self.writer)
            .field("colours", &self.colours)
            .field("size", &self.size)
            .finish_non_exhaustive()
    }
}

impl<W: Write + Default> Default for LeanBackend<W> {
    fn default() -> LeanBackend<W> {
        LeanBackend::new(W::default())
    }
}

impl<W: Write + Clone> Clone for LeanBackend<W> {
    fn clone(&self) -> LeanBackend<W> {
        LeanBackend {
            writer: self.writer.clone(),
            cell: CellBytes::default(),
            colours: self.colours,
            size: self.size,
            frame_open: false,
        }
    }
}

impl<W: Write + PartialEq> PartialEq for LeanBackend<W> {
    fn eq(&self, other: &LeanBackend<W>) -> bool {
        self.writer == other.writer && self.colours == other.colours && self.size == other.size
    }
}

impl<W: Write + Eq> Eq for LeanBackend<W> {}

impl<W: Write + std::hash::Hash> std::hash::Hash for LeanBackend<W> {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        self.writer.hash(state);
        self.colours.hash(state);
        self.size.hash(state);
    }
}

impl<W: Write> LeanBackend<W> {
    /// A backend writing to `writer`; its size is the terminal's (see [`LeanBackend::with_size`]).
    pub fn new(writer: W) -> LeanBackend<W> {
        LeanBackend {
            writer,
            cell: CellBytes::default(),
            colours: std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty()),
            size: None,
            frame_open: false,
        }
    }

    /// Reports `size` instead of asking a terminal: for writers that are not one.
    pub fn with_size(mut self, size: Size) -> LeanBackend<W> {
        self.size = Some(size);
        self
    }

    /// The writer, as `CrosstermBackend::writer` lends it.
    pub fn writer(&self) -> &W {
        &self.writer
    }

    /// The writer, mutably (for a `BufWriter`'s buffer, a `Vec`'s bytes).
    pub fn writer_mut(&mut self) -> &mut W {
        &mut self.writer
    }

    /// The writer back, the backend gone.
    pub fn into_writer(self) -> W {
        self.writer
    }

    /// Ends a call that changed the screen: within a frame ratatui's own `Backend::flush` follows
    /// and sends it with the frame; outside one it is sent now, as crossterm's `execute!` sends
    /// it.
    fn send(&mut self) -> io::Result<()> {
        if self.frame_open {
            return Ok(());
        }
        self.writer.flush()
    }

    /// The bytes of one cell after `state`: a move unless it follows the last one, the
    /// attributes and colours that changed, its symbol. Updates `state`.
    fn encode(&mut self, x: u16, y: u16, cell: &Cell, state: &mut Pen) {
        let symbol = cell.symbol().as_bytes();
        let out = &mut self.cell;
        out.start(symbol.len());
        if !matches!(state.last, Some((lx, ly)) if x == lx.wrapping_add(1) && y == ly) {
            push_move(out, x, y);
        }
        state.last = Some((x, y));
        if cell.modifier != state.modifier {
            push_modifier_change(out, state.modifier, cell.modifier);
            state.modifier = cell.modifier;
        }
        if cell.fg != state.fg || cell.bg != state.bg {
            out.put(b"\x1b[");
            if self.colours {
                push_colour(out, Layer::Fg, cell.fg);
                out.put(b";");
                push_colour(out, Layer::Bg, cell.bg);
            } else {
                out.put(b";");
            }
            out.put(b"m");
            state.fg = cell.fg;
            state.bg = cell.bg;
        }
        #[cfg(feature = "underline-color")]
        if cell.underline_color != state.underline {
            out.put(b"\x1b[");
            if self.colours {
                push_colour(out, Layer::Underline, cell.underline_color);
            }
            out.put(b"m");
            state.underline = cell.underline_color;
        }
        out.put_slice(symbol);
    }
}

/// What the terminal's pen holds after the cells sent so far in one draw.
struct Pen {
    last: Option<(u16, u16)>,
    fg: Color,
    bg: Color,
    #[cfg_attr(not(feature = "underline-color"), allow(dead_code))]
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
    #[cfg(feature = "underline-color")]
    Underline,
}

/// One cell's bytes, built at known offsets in a buffer with room for the longest sequences
/// a cell can need: each piece is a copy of a size known where it is written (a digit group is
/// always four bytes copied, the length advanced by its digits), not a capacity check and a
/// call to `memcpy` per piece: 21% fewer instructions a draw (callgrind, benches/encode.rs).
#[derive(Default)]
struct CellBytes {
    bytes: Vec<u8>,
    len: usize,
}

/// The most a cell's sequences take before its symbol: a move (`ESC[65535;65535H`, 14), every
/// modifier removed or added (9 and 9 sequences, 81 at most), foreground and background in RGB
/// (36), the underline colour (19). 150; the margin keeps the four-byte digit copies in.
const SEQUENCES_MAX: usize = 160;

impl CellBytes {
    /// Empties it with room for every sequence and a symbol of `symbol_len` bytes.
    fn start(&mut self, symbol_len: usize) {
        self.len = 0;
        let room = SEQUENCES_MAX + symbol_len;
        if self.bytes.len() < room {
            self.bytes.resize(room, 0);
        }
    }

    /// A piece whose length is known where it is written: one fixed-size copy.
    #[inline(always)]
    fn put<const N: usize>(&mut self, piece: &[u8; N]) {
        let end = self.len + N;
        self.bytes[self.len..end].copy_from_slice(piece);
        self.len = end;
    }

    /// A piece of any length (a symbol, the digits of a large number).
    fn put_slice(&mut self, piece: &[u8]) {
        let end = self.len + piece.len();
        self.bytes[self.len..end].copy_from_slice(piece);
        self.len = end;
    }

    /// A byte in decimal, then `;` when `then_separator`: four bytes copied (the digits and a
    /// `;` after them), the length moved by the digits and the separator if wanted.
    #[inline(always)]
    fn put_u8(&mut self, n: u8, then_separator: bool) {
        let (digits, count) = DIGITS[usize::from(n)];
        self.bytes[self.len..self.len + 4].copy_from_slice(&digits);
        self.len += usize::from(count) + usize::from(then_separator);
    }

    fn put_u16(&mut self, n: u16) {
        if let Ok(small) = u8::try_from(n) {
            return self.put_u8(small, false);
        }
        let mut digits = [0u8; 5];
        let mut at = digits.len();
        let mut n = n;
        while n > 0 {
            at -= 1;
            digits[at] = b'0' + (n % 10) as u8;
            n /= 10;
        }
        self.put_slice(&digits[at..]);
    }

    fn as_bytes(&self) -> &[u8] {
        &self.bytes[..self.len]
    }
}

/// Each byte value's decimal digits followed by `;`, and the number of digits, built at compile
/// time: a colour component is a copy, not a division.
static DIGITS: [([u8; 4], u8); 256] = {
    let mut table = [([0u8; 4], 0u8); 256];
    let mut n = 0;
    while n < 256 {
        let (h, t, o) = ((n / 100) as u8, ((n / 10) % 10) as u8, (n % 10) as u8);
        table[n] = if n >= 100 {
            ([b'0' + h, b'0' + t, b'0' + o, b';'], 3)
        } else if n >= 10 {
            ([b'0' + t, b'0' + o, b';', 0], 2)
        } else {
            ([b'0' + o, b';', 0, 0], 1)
        };
        n += 1;
    }
    table
};

/// `ESC [ row ; column H`, one-based.
fn push_move(out: &mut CellBytes, x: u16, y: u16) {
    out.put(b"\x1b[");
    out.put_u16(y.saturating_add(1));
    out.put(b";");
    out.put_u16(x.saturating_add(1));
    out.put(b"H");
}

/// crossterm's forms: `39`/`49`/`59` for reset, `38;5;N` for a named or indexed colour,
/// `38;2;R;G;B` for RGB.
fn push_colour(out: &mut CellBytes, layer: Layer, colour: Color) {
    let (reset, lead) = match layer {
        Layer::Fg => (b"39", b"38;"),
        Layer::Bg => (b"49", b"48;"),
        #[cfg(feature = "underline-color")]
        Layer::Underline => (b"59", b"58;"),
    };
    let index = match colour {
        Color::Reset => return out.put(reset),
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
            out.put(lead);
            out.put(b"2;");
            out.put_u8(r, true);
            out.put_u8(g, true);
            out.put_u8(b, false);
            return;
        }
    };
    out.put(lead);
    out.put(b"5;");
    out.put_u8(index, false);
}

/// The SGR sequences from `from` to `to`, in crossterm's order: what is removed first (bold and
/// dim share one "normal intensity" reset, after which the one kept is set again), then what
/// is added.
fn push_modifier_change(out: &mut CellBytes, from: Modifier, to: Modifier) {
    let mut sgr = |code: &[u8]| {
        out.put(b"\x1b[");
        out.put_slice(code);
        out.put(b"m");
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
        self.frame_open = false;
        self.writer.flush()
    }
}

impl<W: Write> Backend for LeanBackend<W> {
    type Error = io::Error;

    fn draw<'a, I>(&mut self, content: I) -> io::Result<()>
    where
        I: Iterator<Item = (u16, u16, &'a Cell)>,
    {
        // Open only once the frame is whole: after a failed draw (an app about to restore and
        // exit), the calls that follow are sent at once.
        self.frame_open = false;
        let mut pen = Pen::reset();
        for (x, y, cell) in content {
            self.encode(x, y, cell, &mut pen);
            self.writer.write_all(self.cell.as_bytes())?;
        }
        // As crossterm ends a draw: colours, underline colour (where cells carry one) and
        // attributes reset.
        let end: &[u8] = match (self.colours, cfg!(feature = "underline-color")) {
            (true, true) => b"\x1b[39m\x1b[49m\x1b[59m\x1b[0m",
            (true, false) => b"\x1b[39m\x1b[49m\x1b[0m",
            (false, true) => b"\x1b[m\x1b[m\x1b[m\x1b[0m",
            (false, false) => b"\x1b[m\x1b[m\x1b[0m",
        };
        self.writer.write_all(end)?;
        self.frame_open = true;
        Ok(())
    }

    fn hide_cursor(&mut self) -> io::Result<()> {
        self.writer.write_all(b"\x1b[?25l")?;
        self.send()
    }

    fn show_cursor(&mut self) -> io::Result<()> {
        self.writer.write_all(b"\x1b[?25h")?;
        self.send()
    }

    /// Asks the terminal (`ESC[6n`, as crossterm's backend does) and waits for its answer.
    fn get_cursor_position(&mut self) -> io::Result<Position> {
        let (x, y) = crossterm::cursor::position()?;
        Ok(Position { x, y })
    }

    fn set_cursor_position<P: Into<Position>>(&mut self, position: P) -> io::Result<()> {
        let Position { x, y } = position.into();
        self.cell.start(0);
        push_move(&mut self.cell, x, y);
        self.writer.write_all(self.cell.as_bytes())?;
        self.send()
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
        self.send()
    }

    fn append_lines(&mut self, n: u16) -> io::Result<()> {
        for _ in 0..n {
            self.writer.write_all(b"\n")?;
        }
        self.send()
    }

    /// The size given ([`LeanBackend::with_size`]), else the terminal's.
    fn size(&self) -> io::Result<Size> {
        match self.size {
            Some(size) => Ok(size),
            None => {
                let (width, height) = crossterm::terminal::size()?;
                Ok(Size { width, height })
            }
        }
    }

    /// The size given and no pixels, else the terminal's, pixels included where it says them.
    fn window_size(&mut self) -> io::Result<WindowSize> {
        if let Some(columns_rows) = self.size {
            return Ok(WindowSize {
                columns_rows,
                pixels: Size::default(),
            });
        }
        let crossterm::terminal::WindowSize {
            rows,
            columns,
            width,
            height,
        } = crossterm::terminal::window_size()?;
        Ok(WindowSize {
            columns_rows: Size {
                width: columns,
                height: rows,
            },
            pixels: Size { width, height },
        })
    }

    fn flush(&mut self) -> io::Result<()> {
        self.frame_open = false;
        self.writer.flush()
    }

    #[cfg(feature = "scrolling-regions")]
    fn scroll_region_up(&mut self, region: std::ops::Range<u16>, amount: u16) -> io::Result<()> {
        self.scroll_region(region, amount, b'S')
    }

    #[cfg(feature = "scrolling-regions")]
    fn scroll_region_down(&mut self, region: std::ops::Range<u16>, amount: u16) -> io::Result<()> {
        self.scroll_region(region, amount, b'T')
    }
}

#[cfg(feature = "scrolling-regions")]
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
            return self.send();
        }
        let out = &mut self.cell;
        out.start(0);
        out.put(b"\x1b[");
        out.put_u16(region.start.saturating_add(1));
        out.put(b";");
        out.put_u16(region.end.saturating_sub(1).saturating_add(1));
        out.put(b"r\x1b[");
        out.put_u16(amount);
        out.put(&[direction]);
        out.put(b"\x1b[r");
        self.writer.write_all(self.cell.as_bytes())?;
        self.send()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What ratatui's `CrosstermBackend` derives, this has: an app's `Terminal` stays `Debug`.
    #[test]
    fn it_has_the_traits_crosstermbackend_has() {
        let a = LeanBackend::new(Vec::<u8>::new()).with_size(Size::new(10, 2));
        let b = a.clone();
        assert_eq!(a, b);
        assert!(format!("{a:?}").starts_with("LeanBackend { writer: []"));
        let hash = |x: &LeanBackend<Vec<u8>>| {
            use std::hash::{Hash, Hasher};
            let mut h = std::collections::hash_map::DefaultHasher::new();
            x.hash(&mut h);
            h.finish()
        };
        assert_eq!(hash(&a), hash(&b));
        assert_ne!(a, LeanBackend::default());
        let terminal = ratatui::Terminal::new(a).unwrap();
        assert!(format!("{terminal:?}").contains("LeanBackend"));
    }

    /// The longest sequences a cell can need fit in the room `CellBytes` keeps before the symbol:
    /// a move to the last position, every modifier changed both ways, three RGB colours.
    #[test]
    fn the_longest_cell_fits_before_its_symbol() {
        let mut backend = LeanBackend::new(Vec::new());
        backend.colours = true;
        let all = Modifier::all();
        let rgb = Color::Rgb(255, 255, 255);
        let mut cell = Cell::new("x");
        (cell.fg, cell.bg) = (rgb, rgb);
        #[cfg(feature = "underline-color")]
        {
            cell.underline_color = rgb;
        }
        for (from, to) in [
            (Modifier::empty(), all),
            (all, Modifier::empty()),
            (all - Modifier::DIM, Modifier::DIM),
            (all - Modifier::BOLD, Modifier::BOLD | Modifier::DIM),
        ] {
            cell.modifier = to;
            let mut pen = Pen::reset();
            pen.modifier = from;
            backend.encode(u16::MAX, u16::MAX, &cell, &mut pen);
            let sequences = backend.cell.as_bytes().len() - 1;
            assert!(
                sequences <= SEQUENCES_MAX,
                "{sequences} bytes before the symbol"
            );
        }
    }
}
