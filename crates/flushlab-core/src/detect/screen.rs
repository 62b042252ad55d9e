//! A terminal model that follows the cursor, and nothing else: no cells, no colours. It is how
//! wrap sees a program's frames without the program's help. A frame of a full-screen program is
//! drawn from top to bottom (ratatui's diff, ncurses' refresh, a loop that homes the cursor and
//! prints): the first cell drawn *before* the previous drawn cell, in reading order, starts the
//! next frame. Scrolling moves what was drawn up with it, so a program that prints lines (`yes`,
//! `seq`, a log) never "restarts" — its output is not frames.
//!
//! The parser is a byte state machine (ground, escape, CSI, strings) that keeps its state across
//! reads, so a sequence split between two reads is seen whole. It also records the modes a
//! program turned on (alternate screen, hidden cursor, mouse, …) so that interactive wrap can
//! undo exactly those.

use unicode_width::UnicodeWidthChar;

/// Something the model saw, at a byte offset of the whole stream.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Event {
    /// The first cell drawn, or a cell drawn before the previous drawn cell: the start of a
    /// frame, by content.
    Restart,
    /// The screen (or its scroll region) scrolled: line output, not a frame.
    Scroll,
    /// A control sequence that programs send once a frame, candidates for confirming frames.
    Mark(Mark),
    /// The program asked the terminal something and may wait for the answer.
    Query(Query),
    /// The older form of synchronized output, a DCS string: `ESC P=1s ESC\` begins a block
    /// (`true`), `ESC P=2s ESC\` ends it. Its offset is the string's last byte.
    SyncDcs(bool),
}

/// What a program asks a terminal; `flushlab wrap` answers it as xterm would (its `terminal` module).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Query {
    /// `ESC[6n`, with where the cursor is (1-based, as the answer gives it).
    CursorPosition { row: u16, col: u16 },
    /// `ESC[5n`: are you well.
    Status,
    /// `ESC[c`: primary device attributes (DA1).
    PrimaryAttributes,
    /// `ESC[>c`: secondary device attributes (DA2).
    SecondaryAttributes,
    /// `ESC[?Ps$p` (DECRQM), with whether the model has the mode set now.
    PrivateMode { mode: u16, set: Option<bool> },
    /// `ESC[>q` (XTVERSION).
    Version,
    /// `ESC[?u`: the kitty keyboard protocol's flags.
    KittyKeyboard,
    /// `ESC[18t`: the text area's size in characters.
    TextAreaSize { rows: u16, cols: u16 },
    /// `ESC[14t`: the text area's size in pixels (a pty has no pixels).
    PixelSize,
    /// `OSC 10/11/12 ; ?`: the foreground, background or cursor colour.
    Colour(u8),
    /// A DCS request (DECRQSS `ESC P $ q`, XTGETTCAP `ESC P + q`): named, not answered.
    DeviceControl,
}

/// The control sequences that [`Event::Mark`] reports.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Mark {
    /// `ESC[?2026h`
    SyncBegin,
    /// `ESC[?2026l`
    SyncEnd,
    /// `ESC[?25l`: ratatui hides the cursor after every draw.
    CursorHide,
    /// `ESC[?25h`
    CursorShow,
    /// `ESC[H` or `ESC[1;1H`
    Home,
    /// `ESC[2J`, or `ESC[J` at the top-left corner
    Clear,
}

impl Mark {
    /// How the report names it: the sequence itself.
    pub fn sequence(self) -> &'static str {
        match self {
            Mark::SyncBegin => "ESC[?2026h",
            Mark::SyncEnd => "ESC[?2026l",
            Mark::CursorHide => "ESC[?25l",
            Mark::CursorShow => "ESC[?25h",
            Mark::Home => "ESC[H",
            Mark::Clear => "ESC[2J",
        }
    }

    pub const ALL: [Mark; 6] = [
        Mark::SyncBegin,
        Mark::SyncEnd,
        Mark::CursorHide,
        Mark::CursorShow,
        Mark::Home,
        Mark::Clear,
    ];
}

/// The terminal modes a program set and has not reset, in the order they are undone.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Modes {
    pub alternate_screen: bool,
    pub cursor_hidden: bool,
    /// Mouse reporting modes left on (1000, 1002, 1003, 1005, 1006, 1015).
    pub mouse: Vec<u16>,
    pub bracketed_paste: bool,
    pub focus_events: bool,
    pub application_cursor: bool,
    pub application_keypad: bool,
    pub autowrap_off: bool,
    pub sync_open: bool,
    pub scroll_region: bool,
    /// Colours or attributes left set (an SGR other than a reset was the last one).
    pub attributes: bool,
}

impl Modes {
    /// The bytes that undo what is still set, and nothing else: empty for a program that left
    /// the terminal as it found it (`ls`, `echo`).
    pub fn undo(&self) -> Vec<u8> {
        let mouse: Vec<String> = self.mouse.iter().map(|m| format!("\x1b[?{m}l")).collect();
        let undo: [(bool, &str); 10] = [
            (self.sync_open, "\x1b[?2026l"),
            (self.attributes, "\x1b[0m"),
            (self.scroll_region, "\x1b[r"),
            (self.autowrap_off, "\x1b[?7h"),
            (self.bracketed_paste, "\x1b[?2004l"),
            (self.focus_events, "\x1b[?1004l"),
            (self.application_cursor, "\x1b[?1l"),
            (self.application_keypad, "\x1b>"),
            (!mouse.is_empty(), &mouse.concat()),
            (self.alternate_screen, "\x1b[?1049l"),
        ];
        let mut out: Vec<u8> = undo
            .iter()
            .filter(|(on, _)| *on)
            .flat_map(|(_, seq)| seq.bytes())
            .collect();
        if self.cursor_hidden {
            out.extend_from_slice(b"\x1b[?25h");
        }
        out
    }

    /// Whether a private mode is set, for the modes the model follows.
    pub fn private_mode(&self, mode: u16) -> Option<bool> {
        Some(match mode {
            1 => self.application_cursor,
            7 => !self.autowrap_off,
            25 => !self.cursor_hidden,
            47 | 1047 | 1049 => self.alternate_screen,
            1004 => self.focus_events,
            2004 => self.bracketed_paste,
            2026 => self.sync_open,
            1000 | 1002 | 1003 | 1005 | 1006 | 1015 => self.mouse.contains(&mode),
            _ => return None,
        })
    }

    fn private(&mut self, mode: u16, on: bool) {
        match mode {
            1 => self.application_cursor = on,
            7 => self.autowrap_off = !on,
            25 => self.cursor_hidden = !on,
            47 | 1047 | 1049 => self.alternate_screen = on,
            1004 => self.focus_events = on,
            2004 => self.bracketed_paste = on,
            2026 => self.sync_open = on,
            1000 | 1002 | 1003 | 1005 | 1006 | 1015 => {
                self.mouse.retain(|&m| m != mode);
                if on {
                    self.mouse.push(mode);
                }
            }
            _ => {}
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum State {
    Ground,
    Escape,
    /// After ESC and an intermediate byte (`ESC (`, `ESC #`, …): one more byte ends it.
    EscapeIntermediate,
    Csi,
    /// OSC, DCS, APC, PM, SOS: skipped until BEL or ESC \.
    String,
    StringEscape,
}

const MAX_PARAMS: usize = 16;
/// The first bytes of an OSC or DCS string kept: enough to tell a query (`11;?`, `$q`).
const STRING_KEPT: usize = 8;

/// See the module's documentation.
#[derive(Clone, Debug)]
pub struct Screen {
    cols: u16,
    rows: u16,
    row: u16,
    col: u16,
    /// The last column was written: the next printable wraps first (as terminals do).
    pending_wrap: bool,
    top: u16,
    bottom: u16,
    saved: (u16, u16),
    /// Where the previous drawn cell is, in reading order (row × cols + col), moved by scrolls.
    last_drawn: Option<i64>,
    state: State,
    params: [u16; MAX_PARAMS],
    count: usize,
    private: u8,
    intermediate: u8,
    /// A UTF-8 sequence in progress: bytes still to come, and the code point so far.
    utf8: (u8, u32),
    /// The string in progress: what began it (`]` OSC, `P` DCS, …), its first bytes.
    string_kind: u8,
    string: [u8; STRING_KEPT],
    string_len: usize,
    pub modes: Modes,
    /// Bytes fed so far: events' offsets are counted on it.
    pub offset: u64,
    /// Whether the cursor sits at the start of a line (for where wrap's report goes).
    pub at_line_start: bool,
}

impl Screen {
    pub fn new(cols: u16, rows: u16) -> Screen {
        let (cols, rows) = (cols.max(1), rows.max(1));
        Screen {
            cols,
            rows,
            row: 0,
            col: 0,
            pending_wrap: false,
            top: 0,
            bottom: rows - 1,
            saved: (0, 0),
            last_drawn: None,
            state: State::Ground,
            params: [0; MAX_PARAMS],
            count: 0,
            private: 0,
            intermediate: 0,
            utf8: (0, 0),
            string_kind: 0,
            string: [0; STRING_KEPT],
            string_len: 0,
            modes: Modes::default(),
            offset: 0,
            at_line_start: true,
        }
    }

    /// The terminal was resized: the cursor is clamped, the scroll region reset, and the next
    /// cell drawn starts nothing (a redraw after a resize is a frame of the new size).
    pub fn resize(&mut self, cols: u16, rows: u16) {
        self.cols = cols.max(1);
        self.rows = rows.max(1);
        self.row = self.row.min(self.rows - 1);
        self.col = self.col.min(self.cols - 1);
        self.top = 0;
        self.bottom = self.rows - 1;
        self.last_drawn = None;
    }

    /// Follows `chunk`, calling `seen(event, offset)` for each event.
    pub fn feed(&mut self, chunk: &[u8], seen: &mut impl FnMut(Event, u64)) {
        let mut i = 0;
        while i < chunk.len() {
            let b = chunk[i];
            if self.state == State::Ground && (0x20..0x7f).contains(&b) {
                // A run of printable ASCII: drawn left to right; only its first cell can start
                // a frame, and a run that fits on the row needs no cell-by-cell walk.
                let run = chunk[i..]
                    .iter()
                    .take_while(|&&b| b.wrapping_sub(0x20) < 0x5f)
                    .count();
                self.print_run(run, seen, self.offset + i as u64);
                self.at_line_start = false;
                i += run;
                continue;
            }
            if self.state == State::Ground
                && b >= 0xc0
                && let Some(length) = self.whole_char(&chunk[i..], seen, self.offset + i as u64)
            {
                i += length;
                continue;
            }
            if self.state == State::Ground
                && b == 0x1b
                && chunk.get(i + 1) == Some(&b'[')
                && let Some(length) = self.whole_csi(&chunk[i + 2..], seen, self.offset + i as u64)
            {
                i += 2 + length;
                continue;
            }
            self.byte(b, seen, self.offset + i as u64);
            i += 1;
        }
        self.offset += chunk.len() as u64;
    }

    /// A CSI sequence read whole from `rest` (what follows `ESC [`) in one tight loop: the
    /// common case, most of a TUI's bytes. `None` when the read ends inside it: then the byte
    /// state machine takes it, from its ESC.
    /// A UTF-8 character read whole from the start of `rest`; `None` when it is cut by the end
    /// of the read (or malformed): then the byte state machine takes it.
    #[inline]
    fn whole_char(
        &mut self,
        rest: &[u8],
        seen: &mut impl FnMut(Event, u64),
        at: u64,
    ) -> Option<usize> {
        let length = match rest[0] {
            0xc0..=0xdf => 2,
            0xe0..=0xef => 3,
            _ => 4,
        };
        let bytes = rest.get(..length)?;
        let c = std::str::from_utf8(bytes).ok()?.chars().next()?;
        self.utf8 = (0, 0);
        self.print(c.width().unwrap_or(1) as u16, seen, at);
        Some(length)
    }

    #[inline]
    fn whole_csi(
        &mut self,
        rest: &[u8],
        seen: &mut impl FnMut(Event, u64),
        at: u64,
    ) -> Option<usize> {
        // Parameters, private markers and intermediates are 0x20..=0x3f; the final 0x40..=0x7e.
        // 0x20..0x40 in one comparison: the loop most of a TUI's bytes go through.
        let end = rest
            .iter()
            .take_while(|&&b| b.wrapping_sub(0x20) < 0x20)
            .count();
        let final_byte = *rest.get(end)?;
        if !(0x40..=0x7e).contains(&final_byte) {
            return None;
        }
        let body = &rest[..end];
        // Colours, most of a TUI's bytes, move nothing: only whether they reset is kept. (With
        // a private marker, `m` is something else: xterm's key modifiers.)
        if final_byte == b'm' && !matches!(body.first(), Some(b'<'..=b'?')) {
            self.modes.attributes = !(body.is_empty() || body == b"0");
            return Some(end + 1);
        }
        self.begin_csi();
        for &b in body {
            self.csi_parameter(b);
        }
        self.csi(final_byte, seen, at);
        Some(end + 1)
    }

    fn print_run(&mut self, run: usize, seen: &mut impl FnMut(Event, u64), at: u64) {
        let room = usize::from(self.cols - self.col);
        if !self.pending_wrap && run < room {
            self.draw(seen, at);
            self.col += run as u16;
            self.last_drawn = Some(self.position() - 1);
            return;
        }
        for k in 0..run {
            self.print(1, seen, at + k as u64);
        }
    }

    fn position(&self) -> i64 {
        i64::from(self.row) * i64::from(self.cols) + i64::from(self.col)
    }

    /// The cell under the cursor is drawn.
    fn draw(&mut self, seen: &mut impl FnMut(Event, u64), at: u64) {
        let here = self.position();
        // The first cell drawn (at all, or since a resize) starts a frame too.
        if self.last_drawn.is_none_or(|last| here < last) {
            seen(Event::Restart, at);
        }
        self.last_drawn = Some(here);
    }

    fn print(&mut self, width: u16, seen: &mut impl FnMut(Event, u64), at: u64) {
        if width == 0 {
            return;
        }
        if self.pending_wrap {
            self.pending_wrap = false;
            self.col = 0;
            self.line_feed(seen, at);
        }
        self.draw(seen, at);
        if self.col + width >= self.cols {
            self.col = self.cols - 1;
            self.pending_wrap = !self.modes.autowrap_off;
        } else {
            self.col += width;
        }
        self.at_line_start = false;
    }

    fn line_feed(&mut self, seen: &mut impl FnMut(Event, u64), at: u64) {
        if self.row == self.bottom {
            self.scroll(1, seen, at);
        } else if self.row + 1 < self.rows {
            self.row += 1;
        }
    }

    /// The region scrolls up by `n` lines (down when negative): what was drawn moves with it.
    fn scroll(&mut self, n: i64, seen: &mut impl FnMut(Event, u64), at: u64) {
        if let Some(last) = &mut self.last_drawn {
            *last -= n * i64::from(self.cols);
        }
        seen(Event::Scroll, at);
    }

    fn byte(&mut self, b: u8, seen: &mut impl FnMut(Event, u64), at: u64) {
        match self.state {
            State::Ground => self.ground(b, seen, at),
            State::Escape => self.escape(b, seen, at),
            State::EscapeIntermediate => self.state = State::Ground,
            State::Csi => self.csi_byte(b, seen, at),
            State::String => match b {
                0x07 => self.end_string(seen, at),
                0x1b => self.state = State::StringEscape,
                _ => {
                    if self.string_len < STRING_KEPT {
                        self.string[self.string_len] = b;
                    }
                    self.string_len += 1;
                }
            },
            State::StringEscape => {
                if b == b'\\' {
                    self.end_string(seen, at);
                } else {
                    self.state = State::String;
                }
            }
        }
    }

    fn ground(&mut self, b: u8, seen: &mut impl FnMut(Event, u64), at: u64) {
        match b {
            0x1b => {
                self.utf8 = (0, 0);
                self.state = State::Escape;
            }
            b'\r' => {
                self.col = 0;
                self.pending_wrap = false;
                self.at_line_start = true;
            }
            b'\n' | 0x0b | 0x0c => {
                self.pending_wrap = false;
                self.line_feed(seen, at);
                // onlcr: the pty turns \n into \r\n before wrap reads it.
                self.at_line_start = self.col == 0;
            }
            0x08 => {
                self.col = self.col.saturating_sub(1);
                self.pending_wrap = false;
            }
            b'\t' => {
                self.col = ((self.col / 8 + 1) * 8).min(self.cols - 1);
                self.at_line_start = false;
            }
            0x00..=0x1f | 0x7f => {}
            0x80..=0xbf => {
                // A continuation byte.
                if self.utf8.0 > 0 {
                    self.utf8.0 -= 1;
                    self.utf8.1 = (self.utf8.1 << 6) | u32::from(b & 0x3f);
                    if self.utf8.0 == 0 {
                        let width = char::from_u32(self.utf8.1)
                            .and_then(|c| c.width())
                            .unwrap_or(1);
                        self.print(width as u16, seen, at);
                    }
                }
            }
            0xc0..=0xdf => self.utf8 = (1, u32::from(b & 0x1f)),
            0xe0..=0xef => self.utf8 = (2, u32::from(b & 0x0f)),
            0xf0..=0xff => self.utf8 = (3, u32::from(b & 0x07)),
            _ => self.print(1, seen, at),
        }
    }

    fn escape(&mut self, b: u8, seen: &mut impl FnMut(Event, u64), at: u64) {
        self.state = State::Ground;
        match b {
            b'[' => {
                self.state = State::Csi;
                self.begin_csi();
            }
            b']' | b'P' | b'X' | b'^' | b'_' => {
                self.state = State::String;
                self.string_kind = b;
                self.string_len = 0;
            }
            b' '..=b'/' => self.state = State::EscapeIntermediate,
            b'7' => self.saved = (self.row, self.col),
            b'8' => (self.row, self.col) = self.saved,
            b'D' => self.line_feed(seen, at),
            b'E' => {
                self.col = 0;
                self.line_feed(seen, at);
            }
            b'M' => {
                if self.row == self.top {
                    self.scroll(-1, seen, at);
                } else {
                    self.row = self.row.saturating_sub(1);
                }
            }
            b'=' => self.modes.application_keypad = true,
            b'>' => self.modes.application_keypad = false,
            b'c' => {
                let (cols, rows) = (self.cols, self.rows);
                let offset = self.offset;
                *self = Screen::new(cols, rows);
                self.offset = offset;
            }
            _ => {}
        }
        self.pending_wrap = false;
    }

    /// An OSC or DCS string ended (BEL or ST): a query if it asks something.
    fn end_string(&mut self, seen: &mut impl FnMut(Event, u64), at: u64) {
        self.state = State::Ground;
        let kept = &self.string[..self.string_len.min(STRING_KEPT)];
        let query = match (self.string_kind, kept) {
            (b']', b"10;?" | b"11;?" | b"12;?") if self.string_len == 4 => {
                Some(Query::Colour(10 + kept[1] - b'0'))
            }
            (b'P', [b'$' | b'+', b'q', ..]) => Some(Query::DeviceControl),
            (b'P', b"=1s" | b"=2s") if self.string_len == 3 => {
                seen(Event::SyncDcs(kept[1] == b'1'), at);
                None
            }
            _ => None,
        };
        if let Some(query) = query {
            seen(Event::Query(query), at);
        }
    }

    /// `ESC[?…h` / `ESC[?…l`: private modes set or reset, and the marks among them.
    fn private_modes(&mut self, final_byte: u8, seen: &mut impl FnMut(Event, u64), at: u64) {
        if matches!(final_byte, b'h' | b'l') {
            let on = final_byte == b'h';
            for i in 0..self.count.max(1) {
                let mode = self.params[i];
                self.modes.private(mode, on);
                let mark = match (mode, on) {
                    (2026, true) => Some(Mark::SyncBegin),
                    (2026, false) => Some(Mark::SyncEnd),
                    (25, false) => Some(Mark::CursorHide),
                    (25, true) => Some(Mark::CursorShow),
                    _ => None,
                };
                if let Some(mark) = mark {
                    seen(Event::Mark(mark), at);
                }
            }
        }
    }

    /// A CSI sequence that asks the terminal something.
    fn query(&self, final_byte: u8) -> Option<Query> {
        if !matches!(final_byte, b'n' | b'c' | b'p' | b'q' | b'u' | b't') {
            return None;
        }
        let (private, intermediate, first) = (self.private, self.intermediate, self.params[0]);
        let few = self.count <= 1;
        Some(match (private, intermediate, final_byte) {
            (0, 0, b'n') if few && first == 6 => Query::CursorPosition {
                row: self.row + 1,
                col: self.col + 1,
            },
            (0, 0, b'n') if few && first == 5 => Query::Status,
            (0, 0, b'c') if few && first == 0 => Query::PrimaryAttributes,
            (b'>', 0, b'c') if few && first == 0 => Query::SecondaryAttributes,
            (b'?', b'$', b'p') if few => Query::PrivateMode {
                mode: first,
                set: self.modes.private_mode(first),
            },
            (b'>', 0, b'q') if few && first == 0 => Query::Version,
            (b'?', 0, b'u') if self.count == 0 => Query::KittyKeyboard,
            (0, 0, b't') if few && first == 18 => Query::TextAreaSize {
                rows: self.rows,
                cols: self.cols,
            },
            (0, 0, b't') if few && first == 14 => Query::PixelSize,
            _ => return None,
        })
    }

    /// A CSI sequence starts: no parameters yet. Slots at or past `count` are always 0.
    fn begin_csi(&mut self) {
        self.params[..self.count].fill(0);
        self.count = 0;
        self.private = 0;
        self.intermediate = 0;
    }

    /// A byte of a CSI sequence's parameters, private marker or intermediates (0x20..=0x3f).
    fn csi_parameter(&mut self, b: u8) {
        match b {
            b'0'..=b'9' => {
                // `count` is the number of parameters begun; the digit extends the last one.
                self.count = self.count.max(1);
                let slot = self.count - 1;
                self.params[slot] = self.params[slot]
                    .saturating_mul(10)
                    .saturating_add(u16::from(b - b'0'));
            }
            b';' | b':' => self.count = (self.count.max(1) + 1).min(MAX_PARAMS),
            b'<'..=b'?' => self.private = b,
            _ => self.intermediate = b,
        }
    }

    fn csi_byte(&mut self, b: u8, seen: &mut impl FnMut(Event, u64), at: u64) {
        match b {
            0x20..=0x3f => self.csi_parameter(b),
            0x40..=0x7e => {
                self.state = State::Ground;
                self.csi(b, seen, at);
            }
            0x1b => self.state = State::Escape,
            _ => {}
        }
    }

    /// Parameter `i`, with 0 (or absent) meaning `default`.
    fn param(&self, i: usize, default: u16) -> u16 {
        match self.params[i] {
            0 => default,
            n => n,
        }
    }

    fn csi(&mut self, final_byte: u8, seen: &mut impl FnMut(Event, u64), at: u64) {
        if let Some(query) = self.query(final_byte) {
            seen(Event::Query(query), at);
            return;
        }
        if self.intermediate != 0 {
            return;
        }
        // Colours: most of a TUI's sequences, and they move nothing.
        if final_byte == b'm' && self.private == 0 {
            let reset = self.count == 0 || (self.count == 1 && self.params[0] == 0);
            self.modes.attributes = !reset;
            return;
        }
        if self.private == b'?' {
            self.private_modes(final_byte, seen, at);
            return;
        }
        if self.private != 0 {
            return;
        }
        let last_row = self.rows - 1;
        let last_col = self.cols - 1;
        let n = self.param(0, 1);
        self.pending_wrap = false;
        match final_byte {
            b'H' | b'f' => {
                self.row = (self.param(0, 1) - 1).min(last_row);
                self.col = (self.param(1, 1) - 1).min(last_col);
                if self.row == 0 && self.col == 0 {
                    seen(Event::Mark(Mark::Home), at);
                }
            }
            b'A' => self.row = self.row.saturating_sub(n).max(self.top.min(self.row)),
            b'B' | b'e' => self.row = self.row.saturating_add(n).min(last_row),
            b'C' | b'a' => self.col = self.col.saturating_add(n).min(last_col),
            b'D' => self.col = self.col.saturating_sub(n),
            b'E' => {
                self.row = self.row.saturating_add(n).min(last_row);
                self.col = 0;
            }
            b'F' => {
                self.row = self.row.saturating_sub(n);
                self.col = 0;
            }
            b'G' | b'`' => self.col = (n - 1).min(last_col),
            b'd' => self.row = (n - 1).min(last_row),
            b'J' => {
                let whole = self.params[0] == 2 || self.params[0] == 3;
                if whole || (self.params[0] == 0 && self.row == 0 && self.col == 0) {
                    seen(Event::Mark(Mark::Clear), at);
                }
            }
            b'S' => self.scroll(i64::from(n), seen, at),
            b'T' => self.scroll(-i64::from(n), seen, at),
            b'r' => {
                self.top = (self.param(0, 1) - 1).min(last_row);
                self.bottom = (self.param(1, self.rows) - 1).min(last_row).max(self.top);
                self.modes.scroll_region = self.top != 0 || self.bottom != last_row;
                self.row = 0;
                self.col = 0;
            }
            b's' => self.saved = (self.row, self.col),
            b'u' => (self.row, self.col) = self.saved,
            _ => {}
        }
        if matches!(final_byte, b'H' | b'f' | b'G' | b'`' | b'E' | b'F') {
            self.at_line_start = self.col == 0;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn events(screen: &mut Screen, bytes: &[u8]) -> Vec<Event> {
        let mut out = Vec::new();
        screen.feed(bytes, &mut |e, _| out.push(e));
        out
    }

    fn restarts(screen: &mut Screen, bytes: &[u8]) -> usize {
        events(screen, bytes)
            .into_iter()
            .filter(|e| *e == Event::Restart)
            .count()
    }

    #[test]
    fn a_frame_redrawn_from_the_top_restarts_once() {
        let mut screen = Screen::new(10, 3);
        let frame = b"\x1b[1;1Habcdefghij\x1b[2;1H0123456789\x1b[3;5Hxy";
        for _ in 0..6 {
            assert_eq!(restarts(&mut screen, frame), 1);
        }
    }

    #[test]
    fn sparse_updates_in_reading_order_are_one_frame_each() {
        // ratatui's and ncurses' diffs: a few cells, top to bottom, different ones each time.
        let mut screen = Screen::new(80, 24);
        let mut total = 0;
        for frame in 0..10u16 {
            let mut bytes = Vec::new();
            for row in [2 + frame % 3, 10 + frame % 5, 20] {
                bytes.extend(format!("\x1b[{};{}H*", row, 1 + frame * 3).as_bytes());
            }
            total += restarts(&mut screen, &bytes);
        }
        assert_eq!(total, 10);
    }

    #[test]
    fn lines_that_scroll_are_no_frames() {
        let mut screen = Screen::new(80, 24);
        let mut bytes = Vec::new();
        for i in 0..1000 {
            bytes.extend(format!("{i}\r\n").as_bytes());
        }
        let seen = events(&mut screen, &bytes);
        // The first line starts something; nothing after it does.
        assert_eq!(seen.iter().filter(|e| **e == Event::Restart).count(), 1);
        assert!(seen.iter().filter(|e| **e == Event::Scroll).count() > 900);
        // `yes`: the same cell every line.
        let mut screen = Screen::new(80, 24);
        assert_eq!(restarts(&mut screen, &b"y\r\n".repeat(500)), 1);
    }

    #[test]
    fn split_sequences_and_wide_characters_are_followed() {
        let mut screen = Screen::new(10, 2);
        let frame = "\x1b[?2026h\x1b[1;1H日本\x1b[38;2;1;2;3mé\x1b[?2026l".as_bytes();
        let mut seen = Vec::new();
        for _ in 0..3 {
            for byte in frame.chunks(1) {
                screen.feed(byte, &mut |e, _| seen.push(e));
            }
        }
        let count = |e: Event| seen.iter().filter(|x| **x == e).count();
        assert_eq!(count(Event::Mark(Mark::SyncBegin)), 3);
        assert_eq!(count(Event::Mark(Mark::SyncEnd)), 3);
        assert_eq!(count(Event::Mark(Mark::Home)), 3);
        assert_eq!(count(Event::Restart), 3);
        // Two wide characters and one narrow: the cursor is at column 5.
        assert_eq!(screen.col, 5);
    }

    #[test]
    fn modes_undo_only_what_was_set() {
        let mut screen = Screen::new(80, 24);
        events(&mut screen, b"hello\r\n");
        assert!(screen.modes.undo().is_empty());
        assert!(screen.at_line_start);
        events(
            &mut screen,
            b"\x1b[?1049h\x1b[?25l\x1b[?1000h\x1b[?1006h\x1b[?2004h\x1b[31m",
        );
        let undo = String::from_utf8(screen.modes.undo()).unwrap();
        assert_eq!(
            undo,
            "\x1b[0m\x1b[?2004l\x1b[?1000l\x1b[?1006l\x1b[?1049l\x1b[?25h"
        );
        events(
            &mut screen,
            b"\x1b[0m\x1b[?1000l\x1b[?1006l\x1b[?2004l\x1b[?1049l\x1b[?25h",
        );
        assert!(screen.modes.undo().is_empty());
        events(&mut screen, b"no newline");
        assert!(!screen.at_line_start);
    }
}

#[cfg(test)]
mod speed {
    /// `cargo test --release --lib screen_speed -- --ignored --nocapture`
    #[test]
    #[ignore]
    fn screen_speed() {
        let mut frame = Vec::new();
        for n in 0..4u32 {
            frame.extend(b"\x1b[H");
            for r in 0..24 {
                frame.extend(format!("\x1b[{};1H", r + 1).as_bytes());
                for c in 0..80 {
                    frame.extend(format!("\x1b[48;5;{}m ", (c + r + n) % 216 + 16).as_bytes());
                    frame
                        .extend(format!("\x1b[38;2;{c};{r};128m\x1b[48;2;{r};{c};64m▀").as_bytes());
                }
            }
        }
        let mut screen = super::Screen::new(80, 24);
        let start = std::time::Instant::now();
        let mut total = 0;
        let mut restarts = 0;
        let limit: usize = std::env::var("SPEED_BYTES")
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(200_000_000);
        while total < limit {
            for chunk in frame.chunks(16384) {
                screen.feed(chunk, &mut |e, _| {
                    restarts += u64::from(e == super::Event::Restart)
                });
            }
            total += frame.len();
        }
        let secs = start.elapsed().as_secs_f64();
        println!(
            "{:.0} MB/s ({restarts} restarts)",
            total as f64 / secs / 1e6
        );
    }
}
