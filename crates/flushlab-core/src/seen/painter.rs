//! A terminal that paints: the bytes as they arrived, parsed into cells (the vt100 crate), and
//! painted when the [`PaintPolicy`] says, held while a synchronized-output block it honours is
//! open. The vt100 crate has no synchronized output: the blocks are found by the frame
//! finder's own byte machine ([`crate::detect::screen`]), which also names the DCS form.

use std::num::NonZeroU16;

use super::policy::{PaintPolicy, SyncForm};
use crate::detect::screen::{Event, Mark, Screen};

/// Where painted states go.
pub trait Canvas {
    /// The terminal painted `screen` at `at_ns`.
    fn paint(&mut self, at_ns: u64, screen: &vt100::Screen);
}

/// Rows pushed off the top of the main screen (into a terminal's scrollback), as plain text,
/// blank rows left out: what scrollback churn is counted on.
#[derive(Debug, Default)]
pub struct Pushed(pub Vec<String>);

impl vt100::Callbacks for Pushed {
    fn on_scroll(&mut self, contents: vt100::capture::RowContents<'_>, alternate_screen: bool) {
        if alternate_screen {
            return;
        }
        let mut formatted = String::new();
        let _ = contents.write_formatted_basic(&mut formatted, &mut Default::default());
        let plain: String = vt100::capture::basic_formatted_to_plain(&formatted).collect();
        let plain = plain.trim_end();
        if !plain.is_empty() {
            self.0.push(plain.to_owned());
        }
    }
}

/// The end of a CSI block as programs write it.
const CSI_END: &[u8] = b"\x1b[?2026l";

/// A block held: since when, and the bytes it holds (parsed when it ends).
struct Held {
    since_ns: u64,
    bytes: Vec<u8>,
}

/// See the module's documentation.
pub struct Painter {
    policy: PaintPolicy,
    vt: vt100::Parser<Pushed>,
    marks: Screen,
    held: Option<Held>,
    /// A change not painted yet: when it was first and last made.
    unpainted: Option<(u64, u64)>,
    /// Blocks open in either form, honoured or not, and the bytes read inside them.
    open: [bool; 2],
    pub bytes: u64,
    pub bytes_in_blocks: u64,
    /// Of those, the bytes inside blocks of a form the policy honours.
    pub bytes_held: u64,
    pub paints: u64,
}

impl Painter {
    pub fn new(policy: PaintPolicy, (cols, rows): (u16, u16)) -> Painter {
        let side = |n: u16| NonZeroU16::new(n).unwrap_or(NonZeroU16::MIN);
        Painter {
            policy,
            vt: vt100::Parser::new_with_callbacks(side(rows), side(cols), 0, Pushed::default()),
            marks: Screen::new(cols, rows),
            held: None,
            unpainted: None,
            open: [false; 2],
            bytes: 0,
            bytes_in_blocks: 0,
            bytes_held: 0,
            paints: 0,
        }
    }

    /// What the terminal would paint next: the cells parsed so far, a held block's left out.
    pub fn screen(&self) -> &vt100::Screen {
        self.vt.screen()
    }

    /// Rows pushed into the scrollback since the last call.
    pub fn take_pushed(&mut self) -> Vec<String> {
        std::mem::take(&mut self.vt.callbacks_mut().0)
    }

    /// Whether a block is open, honoured or not.
    pub fn in_block(&self) -> bool {
        self.open.contains(&true)
    }

    /// Paints what is due before `at_ns`: a held block past its limit, a change whose time came.
    pub fn settle(&mut self, at_ns: u64, canvas: &mut impl Canvas) {
        loop {
            let release = self
                .held
                .as_ref()
                .map(|h| h.since_ns + self.policy.hold.as_nanos() as u64)
                .filter(|&limit| limit <= at_ns);
            let due = self
                .unpainted
                .map(|(first, last)| self.policy.due(first, last))
                .filter(|&due| due <= at_ns);
            match (release, due) {
                (Some(release), due) if due.is_none_or(|due| release < due) => {
                    self.release(release);
                }
                (_, Some(due)) => self.paint(due, canvas),
                _ => return,
            }
        }
    }

    /// A read of `chunk` at `at_ns` (reads come in time order).
    pub fn feed(&mut self, chunk: &[u8], at_ns: u64, canvas: &mut impl Canvas) {
        self.settle(at_ns, canvas);
        let start = self.marks.offset;
        let mut cuts: Vec<(usize, SyncForm, bool)> = Vec::new();
        self.marks.feed(chunk, &mut |event, offset| {
            // A block's bytes are its begin's, what it holds and its end's: CSI marks are
            // found at their first byte, and the usual end is taken whole; DCS marks at their
            // last byte.
            let cut = (offset.saturating_sub(start) as usize).min(chunk.len());
            match event {
                Event::Mark(Mark::SyncBegin) => cuts.push((cut, SyncForm::Csi, true)),
                Event::Mark(Mark::SyncEnd) => {
                    let end = CSI_END.len();
                    let whole = chunk[cut..].starts_with(CSI_END);
                    cuts.push((cut + if whole { end } else { 0 }, SyncForm::Csi, false));
                }
                Event::SyncDcs(begin) => {
                    cuts.push((
                        (cut + usize::from(!begin)).min(chunk.len()),
                        SyncForm::Dcs,
                        begin,
                    ));
                }
                _ => {}
            }
        });
        let mut from = 0;
        for (cut, form, begin) in cuts {
            self.take(&chunk[from..cut], at_ns);
            from = cut;
            self.open[form as usize] = begin;
            if !self.policy.honours(form) {
                continue;
            }
            match (begin, self.held.is_some()) {
                (true, false) => {
                    // An eager terminal paints what it parsed before the block, then holds.
                    if self.unpainted.is_some() && self.policy.due(at_ns, at_ns) <= at_ns {
                        self.paint(at_ns, canvas);
                    }
                    self.held = Some(Held {
                        since_ns: at_ns,
                        bytes: Vec::new(),
                    });
                }
                (false, true) => self.release(at_ns),
                _ => {}
            }
        }
        self.take(&chunk[from..], at_ns);
        if self
            .held
            .as_ref()
            .is_some_and(|h| h.bytes.len() >= self.policy.hold_bytes)
        {
            self.release(at_ns);
        }
        // Eager: what this read made is painted now.
        self.settle(at_ns, canvas);
    }

    /// The run ended at `at_ns`: everything due by then is painted.
    pub fn finish(&mut self, at_ns: u64, canvas: &mut impl Canvas) {
        self.settle(at_ns, canvas);
    }

    fn take(&mut self, bytes: &[u8], at_ns: u64) {
        if bytes.is_empty() {
            return;
        }
        self.bytes += bytes.len() as u64;
        if self.in_block() {
            self.bytes_in_blocks += bytes.len() as u64;
        }
        let honoured = [SyncForm::Csi, SyncForm::Dcs]
            .into_iter()
            .any(|form| self.open[form as usize] && self.policy.honours(form));
        if honoured {
            self.bytes_held += bytes.len() as u64;
        }
        match &mut self.held {
            Some(held) => held.bytes.extend_from_slice(bytes),
            None => self.changed(bytes, at_ns),
        }
    }

    fn changed(&mut self, bytes: &[u8], at_ns: u64) {
        self.vt.process(bytes);
        let first = self.unpainted.map_or(at_ns, |(first, _)| first);
        self.unpainted = Some((first, at_ns));
    }

    fn release(&mut self, at_ns: u64) {
        if let Some(held) = self.held.take() {
            self.changed(&held.bytes, at_ns);
        }
    }

    fn paint(&mut self, at_ns: u64, canvas: &mut impl Canvas) {
        self.unpainted = None;
        self.paints += 1;
        canvas.paint(at_ns, self.vt.screen());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Each paint as the screen's text, and when.
    #[derive(Default)]
    struct Film(Vec<(u64, String)>);

    impl Canvas for Film {
        fn paint(&mut self, at_ns: u64, screen: &vt100::Screen) {
            self.0.push((at_ns, screen.contents()));
        }
    }

    const MS: u64 = 1_000_000;

    #[test]
    fn an_eager_terminal_paints_each_read_and_a_block_it_honours_once() {
        let mut film = Film::default();
        let mut painter = Painter::new(PaintPolicy::default(), (10, 2));
        painter.feed(b"old", MS, &mut film);
        painter.feed(b"\x1b[H\x1b[2J", 2 * MS, &mut film);
        painter.feed(b"new", 32 * MS, &mut film);
        let texts: Vec<_> = film
            .0
            .iter()
            .map(|(at, t)| (*at / MS, t.as_str()))
            .collect();
        assert_eq!(texts, [(1, "old"), (2, ""), (32, "new")]);

        let mut film = Film::default();
        let mut painter = Painter::new(PaintPolicy::default(), (10, 2));
        painter.feed(b"old", MS, &mut film);
        painter.feed(b"\x1b[?2026h\x1b[H\x1b[2J", 2 * MS, &mut film);
        painter.feed(b"new\x1b[?2026l", 32 * MS, &mut film);
        let texts: Vec<_> = film
            .0
            .iter()
            .map(|(at, t)| (*at / MS, t.as_str()))
            .collect();
        assert_eq!(texts, [(1, "old"), (32, "new")]);
        assert_eq!(painter.bytes_in_blocks, painter.bytes - 3);
    }

    #[test]
    fn a_form_not_honoured_holds_nothing_and_a_block_is_held_no_longer_than_its_limit() {
        let policy: PaintPolicy = "eager,sync=dcs".parse().unwrap();
        let mut film = Film::default();
        let mut painter = Painter::new(policy, (10, 2));
        painter.feed(b"\x1b[?2026h\x1b[2Jx", MS, &mut film);
        painter.feed(b"y\x1b[?2026l", 2 * MS, &mut film);
        assert_eq!(film.0.len(), 2);

        let mut film = Film::default();
        let mut painter = Painter::new(policy, (10, 2));
        painter.feed(b"\x1bP=1s\x1b\\a", MS, &mut film);
        painter.feed(b"b", 100 * MS, &mut film);
        assert!(
            film.0.iter().all(|(_, text)| text.is_empty()),
            "{:?}",
            film.0
        );
        film.0.clear();
        // Never ended: painted at 1 + 150 ms.
        painter.feed(b"c", 400 * MS, &mut film);
        let texts: Vec<_> = film
            .0
            .iter()
            .map(|(at, t)| (*at / MS, t.as_str()))
            .collect();
        assert_eq!(texts, [(151, "ab"), (400, "abc")]);
    }

    #[test]
    fn a_vsync_terminal_paints_the_state_at_its_tick() {
        let policy: PaintPolicy = "vsync:100".parse().unwrap();
        let mut film = Film::default();
        let mut painter = Painter::new(policy, (10, 2));
        painter.feed(b"a", MS, &mut film);
        painter.feed(b"b", 5 * MS, &mut film);
        painter.feed(b"c", 15 * MS, &mut film);
        painter.finish(40 * MS, &mut film);
        let texts: Vec<_> = film
            .0
            .iter()
            .map(|(at, t)| (*at / MS, t.as_str()))
            .collect();
        assert_eq!(texts, [(10, "ab"), (20, "abc")]);
    }

    #[test]
    fn rows_pushed_off_the_screen_are_kept_as_text() {
        let mut painter = Painter::new(PaintPolicy::default(), (10, 2));
        painter.feed(b"one\r\ntwo\r\nthree\r\n\r\n", MS, &mut Film::default());
        assert_eq!(painter.take_pushed(), ["one", "two", "three"]);
        assert!(painter.take_pushed().is_empty());
    }
}
