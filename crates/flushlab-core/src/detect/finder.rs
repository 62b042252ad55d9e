//! The frame finder: one parse of a program's output ([`Screen`]), its events handed to the
//! detectors in order of trust — [`SyncMarkers`] (the program says where its frames are), then
//! [`Waits`] (the program's own waits, when wrap's observer saw them from inside), then
//! [`CursorRestarts`] (content, confirmed). The first that finds frames names the method; when
//! none can, the frames are "unknown" and only per-second figures are given: an invented frame
//! rate is the worst error this tool can make, "unknown" is always allowed.
//!
//! Rates are taken between the first and the last frame start (whole frames only), so a run
//! that ends in the middle of a frame does not skew them.

use std::time::{Duration, Instant};

use super::cursor_restarts::CursorRestarts;
use super::detector::{Found, FrameDetector};
use super::frames::{Confirmation, FrameMethod, Frames};
use super::screen::Screen;
use super::sync_markers::SyncMarkers;
use super::waits::Waits;

/// Fed each chunk of output as it is read, with when; see the module's documentation.
#[derive(Clone, Debug)]
pub struct FrameFinder {
    screen: Screen,
    sync: SyncMarkers,
    restarts: CursorRestarts,
    waits: Waits,
    gap: Duration,
    pub bytes: u64,
    /// `\n` bytes received: the pty may have put a `\r` before each.
    pub newlines: u64,
    /// FNV-1a of every byte received: two runs that gave the terminal the same bytes have the
    /// same digest (`--compare` shows a fix changed how they were written, not what).
    pub digest: u64,
    last: Option<Instant>,
    /// The last bytes received, at most [`TAIL`]: what a program said before it ended.
    tail: Vec<u8>,
}

/// How many of the last bytes [`FrameFinder::tail`] keeps.
pub const TAIL: usize = 512;
const FNV_OFFSET: u64 = 0xcbf2_9ce4_8422_2325;
const FNV_PRIME: u64 = 0x0100_0000_01b3;

impl FrameFinder {
    /// `gap`: the silence that counts as a pause; `pauses_are_the_programs`: whether pauses can
    /// be trusted (a throttled reader pauses on its own).
    pub fn new(size: (u16, u16), gap: Duration, pauses_are_the_programs: bool) -> Self {
        FrameFinder {
            screen: Screen::new(size.0, size.1),
            sync: SyncMarkers::default(),
            restarts: CursorRestarts::new(pauses_are_the_programs),
            waits: Waits::default(),
            gap,
            bytes: 0,
            newlines: 0,
            digest: FNV_OFFSET,
            last: None,
            tail: Vec::new(),
        }
    }

    pub fn feed(&mut self, chunk: &[u8], at: Instant) {
        if chunk.is_empty() {
            return;
        }
        let first = self.last.is_none();
        let after_silence = self
            .last
            .is_none_or(|last| at.saturating_duration_since(last) >= self.gap);
        self.last = Some(at);
        self.bytes += chunk.len() as u64;
        self.digest = chunk.iter().fold(self.digest, |h, &b| {
            (h ^ u64::from(b)).wrapping_mul(FNV_PRIME)
        });
        self.newlines += chunk.iter().filter(|&&b| b == b'\n').count() as u64;
        let keep = &chunk[chunk.len().saturating_sub(TAIL)..];
        let drop = (self.tail.len() + keep.len()).saturating_sub(TAIL);
        self.tail.drain(..drop);
        self.tail.extend_from_slice(keep);
        // Each detector named, not a `[&mut dyn FrameDetector]`: the parse below is the hot
        // loop, and with the detectors behind `dyn` it ran ~25% slower (1.31–1.56 against
        // 1.07–1.13 ns a byte, examples/finder_overhead.rs), though it makes only a handful of
        // calls a frame. A new detector is a field and a line in each of these two places.
        self.sync.chunk(at, after_silence, first);
        self.restarts.chunk(at, after_silence, first);
        self.waits.arrived(at, chunk.len());
        let (sync, restarts, waits) = (&mut self.sync, &mut self.restarts, &mut self.waits);
        self.screen.feed(chunk, &mut |event, offset| {
            sync.on(event, offset, at);
            restarts.on(event, offset, at);
            waits.on(event, offset, at);
        });
    }

    pub fn resize(&mut self, cols: u16, rows: u16) {
        self.screen.resize(cols, rows);
    }

    /// The last bytes received (at most [`TAIL`]), escape sequences and all.
    pub fn tail(&self) -> &[u8] {
        &self.tail
    }

    /// What CMD left set on the terminal, and whether its cursor is at a line's start.
    pub fn screen(&self) -> &Screen {
        &self.screen
    }

    /// The waits wrap's observer saw inside the program, start and end in CLOCK_MONOTONIC
    /// nanoseconds, and one moment on both clocks: frames are then told from them.
    pub fn set_waits(&mut self, waits: &[(u64, u64)], base: (Instant, u64)) {
        self.waits.set_boundaries(waits, base);
    }

    /// The observer's bursts of terminal writes, (end, bytes) in nanoseconds on the clock of
    /// [`FrameFinder::set_waits`], where it saw every terminal write: see [`Waits::set_bursts`].
    pub fn set_bursts(&mut self, bursts: &[(u64, u64)], base: (Instant, u64)) {
        self.waits.set_bursts(bursts, base);
    }

    /// The output read, as (first read, last read, bytes) stretches: see [`Waits::arrivals`].
    pub fn arrivals(&self) -> Vec<(Instant, Instant, u64)> {
        self.waits.arrivals()
    }

    /// The synchronized-output markers seen (begins, ends, pairs, still open).
    pub fn sync(&self) -> &SyncMarkers {
        &self.sync
    }

    /// Where the frames are the observer's bursts and a wait may split one (see
    /// [`Waits::found_continuing`]): for each burst, in the order given to
    /// [`FrameFinder::set_bursts`], whether it continues the frame before.
    pub fn continuing_bursts(&self) -> Option<Vec<bool>> {
        let (found, continuing) = self.found();
        (continuing && found.is_some_and(|f| f.method == FrameMethod::Waits))
            .then(|| self.waits.continuing())
            .flatten()
    }

    /// The frames by the most trusted detector that can tell, and whether a wait may continue
    /// a frame in that count.
    fn found(&self) -> (Option<Found>, bool) {
        let detectors: [&dyn FrameDetector; 3] = [&self.sync, &self.waits, &self.restarts];
        let mut found = detectors.iter().find_map(|d| d.found());
        // A program whose frames start with a cursor restart (confirmed) that waits in the
        // middle of one: what follows that wait, with no restart, continues the frame.
        let continuing = found
            .as_ref()
            .is_some_and(|f| f.method == FrameMethod::Waits)
            && self.restarts.found().is_some();
        if continuing {
            found = self.waits.found_continuing().or(found);
        }
        // A program that falls behind its pace stops waiting between some frames (its timer is
        // already due): frames told from its waits then come short. Confirmed restarts that
        // count more than a tenth above them, and by more than the one a teardown may add,
        // are the better count.
        // Restarts confirmed by pauses alone are not that: a program behind its pace draws its
        // frames back to back, and a pause with no wait in it is the program at work inside one
        // frame (mc redraws its first screen four times while it reads its directories).
        if let Some(by_waits) = found.as_ref().filter(|f| f.method == FrameMethod::Waits)
            && let Some(by_restarts) = self.restarts.found()
            && by_restarts.frames > by_waits.frames + 1
            && by_restarts.frames as f64 > by_waits.frames as f64 * 1.1
            && by_restarts.confirmed_by != [Confirmation::Pauses]
        {
            found = Some(by_restarts);
        }
        (found, continuing)
    }

    pub fn frames(&self) -> Frames {
        let evidence = self.restarts.evidence();
        let mut frames = Frames {
            method: FrameMethod::Unknown,
            frames: None,
            fps: None,
            bytes_per_frame: None,
            confirmed_by: Vec::new(),
            cursor_restarts: evidence.restarts,
            sequence_share: evidence.sequence_share,
            pause_share: evidence.pause_share,
            pauses_per_frame: evidence.pauses_per_frame,
        };
        if let (Some(found), _) = self.found() {
            frames.method = found.method;
            frames.frames = Some(found.frames);
            frames.fps = found.fps;
            frames.bytes_per_frame = found.bytes_per_frame;
            frames.confirmed_by = found.confirmed_by;
        }
        frames
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
        assert_eq!((finder.sync().begins(), finder.sync().ends()), (10, 10));
        // Nested begins are one frame, not a leak.
        let mut nested = FrameFinder::new((10, 3), Duration::from_millis(2), true);
        nested.feed(b"\x1b[?2026h\x1b[?2026hx\x1b[?2026l\x1b[?2026l", start);
        assert_eq!((nested.sync().pairs(), nested.sync().open()), (1, 0));
    }

    /// A program that draws half its frame, waits 6 ms (seen from inside), draws the rest and
    /// waits for the next: a frame every 30 ms, told from its waits as one a wait — twice too
    /// many — before the restarts were asked whether the drawing went on.
    #[test]
    fn a_wait_in_the_middle_of_a_frame_the_cursor_says_goes_on_is_no_frame_end() {
        let start = Instant::now();
        let mut finder = FrameFinder::new((10, 3), Duration::from_millis(2), true);
        let mut waits = Vec::new();
        for i in 0..10u64 {
            let bytes = frame(char::from(b'a' + i as u8));
            let (first, second) = bytes.split_at(bytes.len() / 2);
            let t = i * 30;
            finder.feed(first, at(start, t));
            waits.push(((t + 1) * 1_000_000, (t + 7) * 1_000_000));
            finder.feed(second, at(start, t + 7));
            waits.push(((t + 8) * 1_000_000, (t + 30) * 1_000_000));
        }
        finder.set_waits(&waits, (start, 0));
        let frames = finder.frames();
        assert_eq!(frames.method, FrameMethod::Waits, "{frames:?}");
        assert_eq!(frames.frames, Some(10), "{frames:?}");
        let fps = frames.fps.unwrap();
        assert!((fps - 1000.0 / 30.0).abs() < 0.5, "{fps}");
        // A pager scrolling (no restart a frame, nothing confirmed): each wait ends a frame.
        let mut pager = FrameFinder::new((10, 3), Duration::from_millis(2), true);
        let mut waits = Vec::new();
        for i in 0..10u64 {
            pager.feed(b"\r\nline", at(start, i * 30));
            waits.push(((i * 30 + 1) * 1_000_000, (i * 30 + 29) * 1_000_000));
        }
        pager.set_waits(&waits, (start, 0));
        assert_eq!(pager.frames().frames, Some(10));
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
