//! Finding a program's frames in what it wrote, with no help from the program.
//!
//! Three signals, one stream parse ([`Screen`]):
//! - **sync markers** (DEC 2026 begin … end): the program says where its frames are. Exact.
//! - **cursor restarts**: the first cell drawn, and every cell drawn before the previous drawn
//!   cell, starts a frame. Content, not timing: a writer descheduled in the middle of a frame
//!   pauses without starting one.
//! - **confirmation**, which a restart count needs before it is reported: a control sequence
//!   seen exactly once in (nearly) every frame (ratatui's cursor hide, a C loop's home), or a
//!   pause before (nearly) every frame and (nearly) no pause inside one. Without either, the
//!   frames are "unknown" and only per-second figures are given: an invented frame rate is the
//!   worst error this tool can make, "unknown" is always allowed.
//!
//! Rates are taken between the first and the last frame start (whole frames only), so a run
//! that ends in the middle of a frame does not skew them.

use std::time::{Duration, Instant};

use serde::Serialize;

use super::screen::{Event, Mark, Screen};

/// How a report's frames were found.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum FrameMethod {
    /// Counted between synchronized-output markers: exact.
    SyncMarkers,
    /// Counted from cursor restarts, and confirmed (see [`Frames::confirmed_by`]).
    CursorRestarts,
    /// Not known: per-second figures only.
    Unknown,
}

/// What confirmed a count of cursor restarts.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case", tag = "by", content = "detail")]
pub enum Confirmation {
    /// This control sequence came exactly once in the share of frames given.
    Sequence(String),
    /// A pause of at least `--frame-gap` came before the frames, and almost nowhere else.
    Pauses,
}

/// The share of frames a confirmation must hold in, and how many pauses a frame may have
/// (0.1 of a pause per frame: a rare hiccup). Chosen from the corpus (docs/wrap.md shows the
/// shares measured): programs whose frames a confirmation matched were at 1.00 and 0.98–1.00;
/// the ones it must reject (unbuffered writers, paused mid-frame; a border drawn after the
/// content) at 0.50 or below.
const CONFIRMING_SHARE: f64 = 0.9;
/// Fewer frame starts than this tell nothing (two whole frames between them).
const MIN_STARTS: u64 = 3;

/// The frames found, or why not.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Frames {
    pub method: FrameMethod,
    /// Frames seen (begun), when known.
    pub frames: Option<u64>,
    /// Frames a second, between the first and the last frame start.
    pub fps: Option<f64>,
    /// Bytes a frame, between the first and the last frame start.
    pub bytes_per_frame: Option<f64>,
    /// For cursor restarts: what agreed with them (two methods agreeing).
    pub confirmed_by: Vec<Confirmation>,
    /// Cursor restarts seen, whether or not they were confirmed: the evidence for "unknown".
    pub cursor_restarts: u64,
    /// The share of whole frames (between restarts) in which the best sequence came once.
    pub sequence_share: f64,
    /// The share of restarts that came after a pause, and pauses per restart.
    pub pause_share: f64,
    pub pauses_per_frame: f64,
}

/// Where frames start, counted without keeping them all.
#[derive(Clone, Copy, Debug, Default)]
struct Starts {
    count: u64,
    first: Option<(u64, Instant)>,
    last: Option<(u64, Instant)>,
}

impl Starts {
    fn push(&mut self, offset: u64, at: Instant) {
        self.count += 1;
        self.first.get_or_insert((offset, at));
        self.last = Some((offset, at));
    }

    /// (frames a second, bytes a frame) between the first and the last start.
    fn rates(&self) -> Option<(f64, f64)> {
        let ((first_offset, first_at), (last_offset, last_at)) = self.first.zip(self.last)?;
        let whole = (self.count - 1) as f64;
        let seconds = last_at.saturating_duration_since(first_at).as_secs_f64();
        (self.count >= MIN_STARTS && seconds > 0.0)
            .then(|| (whole / seconds, (last_offset - first_offset) as f64 / whole))
    }
}

/// Everything but the parser: counted from its events.
#[derive(Clone, Debug, Default)]
struct Tally {
    sync_depth: u32,
    sync_begins: u64,
    sync_ends: u64,
    /// Outermost begin … end pairs, and where the first began and the last ended.
    sync_pairs: u64,
    sync_first_begin: Option<(u64, Instant)>,
    sync_last_end: Option<(u64, Instant)>,
    restarts: Starts,
    restarts_after_pause: u64,
    scrolls: u64,
    /// Marks seen in the frame being drawn, and whole frames in which each came exactly once.
    marks_now: [u32; Mark::ALL.len()],
    marks_once: [u64; Mark::ALL.len()],
    whole_frames: u64,
}

impl Tally {
    fn on(
        &mut self,
        event: Event,
        offset: u64,
        at: Instant,
        first_in_chunk_after_pause: &mut bool,
    ) {
        match event {
            Event::Restart => {
                if self.restarts.count > 0 {
                    self.whole_frames += 1;
                    for (once, now) in self.marks_once.iter_mut().zip(&self.marks_now) {
                        *once += u64::from(*now == 1);
                    }
                }
                self.marks_now = [0; Mark::ALL.len()];
                self.restarts.push(offset, at);
                if std::mem::take(first_in_chunk_after_pause) {
                    self.restarts_after_pause += 1;
                }
            }
            Event::Scroll => self.scrolls += 1,
            Event::Mark(mark) => {
                self.marks_now[mark as usize] += 1;
                match mark {
                    Mark::SyncBegin => {
                        self.sync_begins += 1;
                        if self.sync_depth == 0 {
                            self.sync_first_begin.get_or_insert((offset, at));
                        }
                        self.sync_depth = self.sync_depth.saturating_add(1);
                    }
                    Mark::SyncEnd => {
                        self.sync_ends += 1;
                        // An end outside a frame (a reset at start or exit) closes nothing.
                        if self.sync_depth > 0 {
                            self.sync_depth -= 1;
                            if self.sync_depth == 0 {
                                self.sync_pairs += 1;
                                self.sync_last_end = Some((offset, at));
                            }
                        }
                    }
                    _ => {}
                }
            }
        }
    }
}

/// Fed each chunk of output as it is read, with when; see the module's documentation.
#[derive(Clone, Debug)]
pub struct FrameFinder {
    screen: Screen,
    tally: Tally,
    gap: Duration,
    /// Whether pauses can be trusted: a throttled reader pauses on its own.
    pauses_are_the_programs: bool,
    pub bytes: u64,
    /// `\n` bytes received: the pty may have put a `\r` before each.
    pub newlines: u64,
    pauses: u64,
    last: Option<Instant>,
}

impl FrameFinder {
    pub fn new(size: (u16, u16), gap: Duration, pauses_are_the_programs: bool) -> Self {
        FrameFinder {
            screen: Screen::new(size.0, size.1),
            tally: Tally::default(),
            gap,
            pauses_are_the_programs,
            bytes: 0,
            newlines: 0,
            pauses: 0,
            last: None,
        }
    }

    pub fn feed(&mut self, chunk: &[u8], at: Instant) {
        if chunk.is_empty() {
            return;
        }
        let paused = match self.last {
            Some(last) => at.saturating_duration_since(last) >= self.gap,
            None => true,
        };
        self.pauses += u64::from(paused && self.last.is_some());
        self.last = Some(at);
        self.bytes += chunk.len() as u64;
        self.newlines += chunk.iter().filter(|&&b| b == b'\n').count() as u64;
        let mut first_after_pause = paused;
        let tally = &mut self.tally;
        self.screen.feed(chunk, &mut |event, offset| {
            tally.on(event, offset, at, &mut first_after_pause);
        });
    }

    pub fn resize(&mut self, cols: u16, rows: u16) {
        self.screen.resize(cols, rows);
    }

    /// What CMD left set on the terminal, and whether its cursor is at a line's start.
    pub fn screen(&self) -> &Screen {
        &self.screen
    }

    pub fn sync_begins(&self) -> u64 {
        self.tally.sync_begins
    }

    pub fn sync_ends(&self) -> u64 {
        self.tally.sync_ends
    }

    /// Begins still open at the end: 1 is a frame cut short, more are begins never ended.
    pub fn sync_open(&self) -> u32 {
        self.tally.sync_depth
    }

    pub fn sync_pairs(&self) -> u64 {
        self.tally.sync_pairs
    }

    pub fn frames(&self) -> Frames {
        let t = &self.tally;
        let restarts = t.restarts.count;
        let best_sequence = Mark::ALL
            .iter()
            .filter(|m| !matches!(m, Mark::SyncBegin | Mark::SyncEnd))
            .map(|&m| (m, t.marks_once[m as usize]))
            .max_by_key(|&(_, once)| once);
        let share = |n: u64, of: u64| if of == 0 { 0.0 } else { n as f64 / of as f64 };
        let sequence_share = best_sequence.map_or(0.0, |(_, once)| share(once, t.whole_frames));
        let pause_share = share(t.restarts_after_pause, restarts);
        let pauses_per_frame = share(self.pauses, restarts);
        let mut found = Frames {
            method: FrameMethod::Unknown,
            frames: None,
            fps: None,
            bytes_per_frame: None,
            confirmed_by: Vec::new(),
            cursor_restarts: restarts,
            sequence_share,
            pause_share,
            pauses_per_frame,
        };
        if t.sync_pairs > 0 {
            // Whole frames, from the first begin to the last end: exact even for one frame.
            found.method = FrameMethod::SyncMarkers;
            found.frames = Some(t.sync_pairs);
            if let Some(((first_offset, first_at), (last_offset, last_at))) =
                t.sync_first_begin.zip(t.sync_last_end)
            {
                let pairs = t.sync_pairs as f64;
                let seconds = last_at.saturating_duration_since(first_at).as_secs_f64();
                found.bytes_per_frame =
                    Some(last_offset.saturating_sub(first_offset) as f64 / pairs);
                // Begin and end read at once (one read holds the whole frame): the time is the
                // read's, too short to be a rate.
                found.fps = (seconds > 0.0).then(|| pairs / seconds);
            }
            return found;
        }
        if let Some((mark, _)) = best_sequence.filter(|_| sequence_share >= CONFIRMING_SHARE) {
            found
                .confirmed_by
                .push(Confirmation::Sequence(mark.sequence().to_owned()));
        }
        if self.pauses_are_the_programs
            && pause_share >= CONFIRMING_SHARE
            && pauses_per_frame <= 1.0 + (1.0 - CONFIRMING_SHARE)
        {
            found.confirmed_by.push(Confirmation::Pauses);
        }
        // A program that mostly scrolls prints lines; its rare jumps back are not frames.
        let lines = t.scrolls > restarts;
        if found.confirmed_by.is_empty() || lines {
            found.confirmed_by.clear();
            return found;
        }
        if let Some((fps, bytes)) = t.restarts.rates() {
            found.method = FrameMethod::CursorRestarts;
            found.frames = Some(restarts);
            (found.fps, found.bytes_per_frame) = (Some(fps), Some(bytes));
        } else {
            found.confirmed_by.clear();
        }
        found
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(start: Instant, ms: u64) -> Instant {
        start + Duration::from_millis(ms)
    }

    /// A 10x3 frame drawn from the top, cell by cell, `filler` marking it.
    fn frame(filler: char) -> Vec<u8> {
        let mut out = Vec::new();
        for row in 1..=3 {
            out.extend(format!("\x1b[{row};1H{}", filler.to_string().repeat(10)).as_bytes());
        }
        out.extend(b"\x1b[?25l");
        out
    }

    #[test]
    fn sync_markers_are_exact_even_split_across_reads() {
        let start = Instant::now();
        let mut finder = FrameFinder::new((10, 3), Duration::from_millis(2), true);
        let mut bytes = Vec::new();
        for i in 0..10 {
            bytes.extend(b"\x1b[?2026h");
            bytes.extend(frame(char::from(b'a' + i)));
            bytes.extend(b"\x1b[?2026l");
        }
        for (i, piece) in bytes.chunks(7).enumerate() {
            finder.feed(piece, at(start, i as u64));
        }
        let frames = finder.frames();
        assert_eq!(frames.method, FrameMethod::SyncMarkers);
        assert_eq!(frames.frames, Some(10));
        assert_eq!((finder.sync_begins(), finder.sync_ends()), (10, 10));
        // Nested begins are one frame, not a leak.
        let mut nested = FrameFinder::new((10, 3), Duration::from_millis(2), true);
        nested.feed(b"\x1b[?2026h\x1b[?2026hx\x1b[?2026l\x1b[?2026l", start);
        assert_eq!((nested.sync_pairs(), nested.sync_open()), (1, 0));
    }

    #[test]
    fn a_frame_written_in_pieces_with_pauses_inside_is_one_frame() {
        // An unbuffered writer, descheduled mid-frame: pauses everywhere, frames by content,
        // confirmed by the cursor hide after each frame.
        let start = Instant::now();
        let mut finder = FrameFinder::new((10, 3), Duration::from_millis(2), true);
        let mut t = 0;
        for i in 0..8u8 {
            for piece in frame(char::from(b'a' + i)).chunks(3) {
                t += 5;
                finder.feed(piece, at(start, t));
            }
        }
        let frames = finder.frames();
        assert_eq!(frames.method, FrameMethod::CursorRestarts, "{frames:?}");
        assert_eq!(frames.frames, Some(8));
        assert!(
            matches!(frames.confirmed_by[..], [Confirmation::Sequence(_)]),
            "{frames:?}"
        );
        assert!(frames.pauses_per_frame > 5.0);
    }

    #[test]
    fn restarts_nothing_confirms_are_unknown() {
        // A title drawn over the border after the rest of the frame: two restarts a frame, no
        // sequence once between restarts, and the writer pausing anywhere.
        let start = Instant::now();
        let mut finder = FrameFinder::new((10, 3), Duration::from_millis(2), true);
        let mut t = 0;
        for i in 0..20u64 {
            let bytes = format!(
                "\x1b[H+--------+\x1b[2;1H|content{}|\x1b[3;1H+--------+\x1b[1;3Htitle",
                i % 10
            );
            for piece in bytes.as_bytes().chunks(4) {
                t += 3;
                finder.feed(piece, at(start, t));
            }
        }
        let frames = finder.frames();
        assert_eq!(frames.method, FrameMethod::Unknown, "{frames:?}");
        assert!(frames.cursor_restarts >= 38, "{frames:?}");
    }

    #[test]
    fn lines_are_never_frames() {
        let start = Instant::now();
        let mut finder = FrameFinder::new((80, 24), Duration::from_millis(2), true);
        for i in 0..2000u64 {
            finder.feed(format!("line {i}\r\n").as_bytes(), at(start, i * 3));
        }
        assert_eq!(finder.frames().method, FrameMethod::Unknown);
    }

    #[test]
    fn rates_come_from_whole_frames() {
        // Frames 100 ms apart, confirmed by pauses; the run ends mid-frame.
        let start = Instant::now();
        let mut finder = FrameFinder::new((10, 3), Duration::from_millis(2), true);
        for i in 0..5u64 {
            let bytes = format!("\x1b[1;1H{}", "x".repeat(30));
            finder.feed(bytes.as_bytes(), at(start, 20 + i * 100));
        }
        finder.feed(b"\x1b[1;1Hxx", at(start, 520));
        let frames = finder.frames();
        assert_eq!(frames.method, FrameMethod::CursorRestarts, "{frames:?}");
        assert!(frames.confirmed_by.contains(&Confirmation::Pauses));
        let fps = frames.fps.unwrap();
        assert!((fps - 10.0).abs() < 0.01, "{fps}");
        assert_eq!(frames.bytes_per_frame, Some(36.0));
    }
}
