//! Each key's visible states: every paint between a key and the next, held against the screen
//! settled before the key (S0) and after it (S1), and named a flash, a tear or a step (see the
//! module above for the definitions).

use std::collections::HashSet;

use serde::Serialize;

use super::Transcript;
use super::painter::{Canvas, Painter};
use super::policy::{PaintPolicy, REFRESH};

/// What a visible state showed, held against the screens before and after.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Kind {
    /// A cell the same before and after showed something else: the frame blanked or overwrote
    /// what it then put back.
    Flash,
    /// Every cell is the old screen's or the new one's, and the whole is neither: half old,
    /// half new.
    Tear,
    /// Any other state between the two: a frame's way from one to the other.
    Step,
}

/// One state the terminal painted between S0 and S1.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct VisibleState {
    pub kind: Kind,
    /// When it was painted, after the key was sent.
    pub at_ms: f64,
    /// How long it stayed on screen (until the next paint, or the run's end).
    pub shown_ms: f64,
    /// The share of the window's cells that did not yet show S1.
    pub unsettled_share: f64,
}

/// What a person saw of one key's answer.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct KeySeen {
    /// States on screen for at least one 60 Hz refresh, by kind.
    pub flashes: u32,
    pub tears: u32,
    pub steps: u32,
    /// States shorter than a refresh, any kind: they may never reach a screen. The model
    /// counts its paints that stayed less than a refresh here without reading their cells (so
    /// a repaint of the same screen counts too), and lists none of them in `states`.
    pub brief: u32,
    /// The longest flash and tear on screen, in ms.
    pub longest_flash_ms: Option<f64>,
    pub longest_tear_ms: Option<f64>,
    /// The largest share of the window's cells not yet showing S1 in any visible state.
    pub cells_in_transit: f64,
    /// Lines the answer pushed into the scrollback that copy lines already there or on the
    /// screen before it (the same rows scrolling off in order are not copies).
    pub scrollback_churn: u64,
    /// Bytes of the answer, and those inside synchronized-output blocks (either form).
    pub bytes: u64,
    pub bytes_in_blocks: u64,
    /// Of those, the bytes in blocks of a form the policy honours.
    pub bytes_held: u64,
    /// Every visible state, in order (the first 64).
    pub states: Vec<VisibleState>,
}

/// States kept per key for the report (a tearing program paints thousands).
const STATES_KEPT: usize = 64;

/// A key's window: from when it was sent until the next key was (or the run ended).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Window {
    pub from_ns: u64,
    pub to_ns: u64,
}

type Cells = Vec<vt100::Cell>;

/// The screen's cells in reading order: what states are held against each other by.
pub fn cells(screen: &vt100::Screen) -> Cells {
    let (rows, cols) = screen.size();
    let (rows, cols) = (rows.get(), cols.get());
    // Every cell inside the size is there: none is left out, so positions line up.
    (0..rows)
        .flat_map(|row| (0..cols).filter_map(move |col| screen.cell(row, col).cloned()))
        .collect()
}

/// What `now` is, between `before` (S0) and `after` (S1): `None` when it is either (or another
/// size), else its kind and the share of its cells not yet showing S1.
pub fn classify<T: PartialEq>(now: &[T], before: &[T], after: &[T]) -> Option<(Kind, f64)> {
    if now == before || now == after || now.len() != before.len() || now.len() != after.len() {
        return None;
    }
    let (mut flash, mut foreign, mut unsettled) = (false, false, 0usize);
    for ((cell, old), new) in now.iter().zip(before).zip(after) {
        flash |= old == new && cell != old;
        foreign |= cell != old && cell != new;
        unsettled += usize::from(cell != new);
    }
    let kind = match (flash, foreign) {
        (true, _) => Kind::Flash,
        (false, false) => Kind::Tear,
        (false, true) => Kind::Step,
    };
    Some((kind, unsettled as f64 / now.len().max(1) as f64))
}

/// The screens of one window as the model painted them: the screen settled at its start (S0),
/// every paint inside it, and the screen settled at its end (S1, at `window.to_ns`): what a
/// filmstrip draws.
pub fn painted_in(
    policy: PaintPolicy,
    size: (u16, u16),
    transcript: &Transcript,
    window: Window,
    end_ns: u64,
) -> Vec<(u64, vt100::Screen)> {
    struct Keep(Vec<(u64, vt100::Screen)>, Window);
    impl Canvas for Keep {
        fn paint(&mut self, at_ns: u64, screen: &vt100::Screen) {
            if self.1.from_ns <= at_ns && at_ns < self.1.to_ns {
                self.0.push((at_ns, screen.clone()));
            }
        }
    }
    let edges = [window.from_ns, window.to_ns];
    let mut keep = Keep(Vec::new(), window);
    let mut settled = Vec::new();
    replay(
        policy,
        size,
        (transcript, &edges, end_ns),
        &mut keep,
        &mut |edge, painter| settled.push((edges[edge], painter.screen().clone())),
    );
    let mut screens = keep.0;
    let mut edges = settled.into_iter();
    if let Some(before) = edges.next() {
        screens.insert(0, before);
    }
    screens.extend(edges);
    screens
}

/// Replays `transcript` through a painter, stopping at each window's edges (in order) to hand
/// the painter to `edge`; the same paints come out whatever `canvas` does with them.
fn replay(
    policy: PaintPolicy,
    size: (u16, u16),
    (transcript, edges, end_ns): (&Transcript, &[u64], u64),
    canvas: &mut impl Canvas,
    edge: &mut impl FnMut(usize, &mut Painter),
) -> Painter {
    let mut painter = Painter::new(policy, size);
    let mut next = 0;
    for (chunk, at_ns) in transcript.reads() {
        while next < edges.len() && edges[next] <= at_ns {
            painter.settle(edges[next], canvas);
            edge(next, &mut painter);
            next += 1;
        }
        painter.feed(chunk, at_ns, canvas);
    }
    while next < edges.len() {
        painter.settle(edges[next], canvas);
        edge(next, &mut painter);
        next += 1;
    }
    painter.finish(end_ns, canvas);
    painter
}

/// When each paint was made: the first pass's, so that the second knows how long each stays.
#[derive(Default)]
struct PaintTimes(Vec<u64>);

impl Canvas for PaintTimes {
    fn paint(&mut self, at_ns: u64, _: &vt100::Screen) {
        self.0.push(at_ns);
    }
}

/// The model's paints held against the screens at the edges. A paint on screen for less than
/// a refresh (known from the first pass's times) is counted brief and not looked at: a tearing
/// program is painted thousands of times a frame, and reading every cell of each was most of
/// the model's time. Its cells are read only for the states that last.
struct ModelCanvas<'a> {
    classifier: Classifier<'a, vt100::Cell>,
    times: &'a [u64],
    next: usize,
    end_ns: u64,
}

impl Canvas for ModelCanvas<'_> {
    fn paint(&mut self, at_ns: u64, screen: &vt100::Screen) {
        let until = self
            .times
            .get(self.next + 1)
            .copied()
            .unwrap_or(self.end_ns);
        self.next += 1;
        if until.saturating_sub(at_ns) < REFRESH.as_nanos() as u64 {
            self.classifier.brief(at_ns);
        } else {
            self.classifier.show(at_ns, cells(screen));
        }
    }
}

/// The states shown, classified against the screens at the windows' edges: a model's cells or
/// a camera's pixels alike.
struct Classifier<'a, T> {
    windows: &'a [Window],
    settled: &'a [Vec<T>],
    last: Option<Vec<T>>,
    /// The state on screen now: its window and index there, and when it was painted.
    open: Option<(usize, usize, u64)>,
    seen: Vec<KeySeen>,
}

impl<T: PartialEq> Classifier<'_, T> {
    fn close(&mut self, at_ns: u64) {
        if let Some((window, index, since)) = self.open.take() {
            let shown_ms = at_ns.saturating_sub(since) as f64 / 1e6;
            let seen = &mut self.seen[window];
            let Some(state) = seen.states.get_mut(index) else {
                return;
            };
            state.shown_ms = shown_ms;
            let kind = state.kind;
            let longest = |l: &mut Option<f64>| *l = Some(l.unwrap_or(0.0).max(shown_ms));
            if shown_ms * 1e6 < REFRESH.as_nanos() as f64 {
                seen.brief += 1;
                return;
            }
            match kind {
                Kind::Flash => {
                    seen.flashes += 1;
                    longest(&mut seen.longest_flash_ms);
                }
                Kind::Tear => {
                    seen.tears += 1;
                    longest(&mut seen.longest_tear_ms);
                }
                Kind::Step => seen.steps += 1,
            }
        }
    }
}

impl<T: PartialEq> Classifier<'_, T> {
    /// A paint at `at_ns` that stayed less than a refresh, not looked at: the state before it
    /// ends, and it counts as brief in its window.
    fn brief(&mut self, at_ns: u64) {
        self.close(at_ns);
        self.last = None;
        if let Some(window) = self
            .windows
            .iter()
            .rposition(|w| w.from_ns <= at_ns && at_ns < w.to_ns)
        {
            self.seen[window].brief += 1;
        }
    }

    /// `now` was put on screen at `at_ns`.
    fn show(&mut self, at_ns: u64, now: Vec<T>) {
        if self.last.as_ref() == Some(&now) {
            return;
        }
        self.close(at_ns);
        let window = self
            .windows
            .iter()
            .rposition(|w| w.from_ns <= at_ns && at_ns < w.to_ns);
        if let Some(window) = window {
            let (before, after) = (&self.settled[window], &self.settled[window + 1]);
            if let Some((kind, share)) = classify(&now, before, after) {
                let seen = &mut self.seen[window];
                seen.cells_in_transit = seen.cells_in_transit.max(share);
                // Every state is kept until the window's counts are made, then the first few.
                let index = seen.states.len();
                seen.states.push(VisibleState {
                    kind,
                    at_ms: (at_ns - self.windows[window].from_ns) as f64 / 1e6,
                    shown_ms: 0.0,
                    unsettled_share: share,
                });
                self.open = Some((window, index, at_ns));
            }
        }
        self.last = Some(now);
    }
}

/// Every window's visible states, scrollback churn and sync coverage under `policy`, from the
/// bytes as they arrived. Windows are in time order and do not overlap; `end_ns` is the run's
/// end.
pub fn see(
    policy: PaintPolicy,
    size: (u16, u16),
    transcript: &Transcript,
    windows: &[Window],
    end_ns: u64,
) -> (Vec<KeySeen>, u64) {
    let mut edges: Vec<u64> = windows.iter().map(|w| w.from_ns).collect();
    if let Some(last) = windows.last() {
        edges.push(last.to_ns);
    }
    // First the screens settled at each edge, then the paints between them held against them.
    let mut settled: Vec<Cells> = Vec::with_capacity(edges.len());
    let mut times = PaintTimes::default();
    replay(
        policy,
        size,
        (transcript, &edges, end_ns),
        &mut times,
        &mut |_, painter| settled.push(cells(painter.screen())),
    );
    let mut canvas = ModelCanvas {
        classifier: Classifier {
            windows,
            settled: &settled,
            last: None,
            open: None,
            seen: vec![KeySeen::default(); windows.len()],
        },
        times: &times.0,
        next: 0,
        end_ns,
    };
    let mut history: HashSet<String> = HashSet::new();
    let mut on_screen: Vec<String> = Vec::new();
    let mut counted = (0u64, 0u64, 0u64);
    let mut churn = Vec::with_capacity(windows.len());
    let mut bytes = Vec::with_capacity(windows.len());
    let painter = replay(
        policy,
        size,
        (transcript, &edges, end_ns),
        &mut canvas,
        &mut |edge, painter| {
            let pushed = painter.take_pushed();
            if edge > 0 {
                churn.push(copies(&pushed, &on_screen, &history));
                bytes.push((
                    painter.bytes - counted.0,
                    painter.bytes_in_blocks - counted.1,
                    painter.bytes_held - counted.2,
                ));
            }
            history.extend(pushed);
            counted = (painter.bytes, painter.bytes_in_blocks, painter.bytes_held);
            let cols = painter.screen().size().1.get();
            on_screen = painter
                .screen()
                .rows(0, cols)
                .map(|row| row.trim_end().to_owned())
                .collect();
        },
    );
    canvas.classifier.close(end_ns);
    let mut seen = canvas.classifier.seen;
    for ((key, churn), (bytes, in_blocks, held)) in seen.iter_mut().zip(churn).zip(bytes) {
        key.states.truncate(STATES_KEPT);
        key.scrollback_churn = churn;
        key.bytes = bytes;
        key.bytes_in_blocks = in_blocks;
        key.bytes_held = held;
    }
    (seen, painter.paints)
}

/// Each window's visible states in a camera's film: each distinct grab (`frames`, in time
/// order) is on screen until the next. S0 and S1 are the grabs showing at the window's edges.
pub fn see_film<T: PartialEq + Clone>(
    frames: &[(u64, Vec<T>)],
    windows: &[Window],
    end_ns: u64,
) -> Vec<KeySeen> {
    let Some(first) = frames.first() else {
        return vec![KeySeen::default(); windows.len()];
    };
    let mut edges: Vec<u64> = windows.iter().map(|w| w.from_ns).collect();
    if let Some(last) = windows.last() {
        edges.push(last.to_ns);
    }
    let showing = |at: u64| {
        let i = frames.partition_point(|(t, _)| *t <= at);
        frames[i.saturating_sub(1)].1.clone()
    };
    let settled: Vec<Vec<T>> = edges.iter().map(|&edge| showing(edge)).collect();
    let mut classifier = Classifier {
        windows,
        settled: &settled,
        last: Some(first.1.clone()),
        open: None,
        seen: vec![KeySeen::default(); windows.len()],
    };
    for (at, frame) in &frames[1..] {
        classifier.show(*at, frame.clone());
    }
    classifier.close(end_ns);
    let mut seen = classifier.seen;
    for key in &mut seen {
        key.states.truncate(STATES_KEPT);
    }
    seen
}

/// Rows pushed off the screen that copy one already in the scrollback or on the screen before
/// (`on_screen`), except the screen's own rows scrolling off in order (a log, a pager).
fn copies(pushed: &[String], on_screen: &[String], history: &HashSet<String>) -> u64 {
    let own: Vec<&str> = on_screen
        .iter()
        .map(String::as_str)
        .filter(|r| !r.is_empty())
        .collect();
    pushed
        .iter()
        .enumerate()
        .filter(|(i, row)| {
            own.get(*i) != Some(&row.as_str())
                && (history.contains(*row) || own.contains(&row.as_str()))
        })
        .count() as u64
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: u64 = 1_000_000;

    /// A program's answer to each key at 10x3, one key every 100 ms from 0: the reads of each
    /// answer (after the key, in ms, and their bytes).
    fn run(policy: &str, answers: &[&[(u64, &[u8])]]) -> Vec<KeySeen> {
        let mut transcript = Transcript::default();
        transcript.push(b"\x1b[H\x1b[2Jtitle\r\nrow 0", 0);
        let mut windows = Vec::new();
        for (i, answer) in answers.iter().enumerate() {
            let from = (i as u64 + 1) * 100 * MS;
            for (after, bytes) in *answer {
                transcript.push(bytes, from + after * MS);
            }
            windows.push(Window {
                from_ns: from,
                to_ns: from + 100 * MS,
            });
        }
        let end = (answers.len() as u64 + 2) * 100 * MS;
        see(policy.parse().unwrap(), (10, 3), &transcript, &windows, end).0
    }

    #[test]
    fn a_clear_then_a_draw_flashes_unless_a_block_honoured_holds_it() {
        let clear_sleep_draw: &[(u64, &[u8])] = &[(1, b"\x1b[H\x1b[2J"), (31, b"title\r\nrow 1")];
        let seen = run("eager", &[clear_sleep_draw]);
        assert_eq!((seen[0].flashes, seen[0].tears, seen[0].steps), (1, 0, 0));
        assert_eq!(seen[0].longest_flash_ms, Some(30.0));
        assert_eq!(seen[0].states[0].at_ms, 1.0);

        let synced: &[(u64, &[u8])] = &[
            (1, b"\x1b[?2026h\x1b[H\x1b[2J"),
            (31, b"title\r\nrow 1\x1b[?2026l"),
        ];
        let honoured = run("eager", &[synced]);
        assert_eq!((honoured[0].flashes, honoured[0].brief), (0, 0));
        assert_eq!(honoured[0].bytes_in_blocks, honoured[0].bytes);
        let ignored = run("eager,sync=none", &[synced]);
        assert_eq!(ignored[0].flashes, 1);
    }

    #[test]
    fn half_a_frame_on_screen_is_a_tear_and_a_quick_one_is_brief() {
        // Both rows change: the first drawn, 20 ms, the second.
        let halves: &[(u64, &[u8])] = &[(1, b"\x1b[1;1HTITLE"), (21, b"\x1b[2;1Hrow 1")];
        let seen = run("eager", &[halves]);
        assert_eq!((seen[0].flashes, seen[0].tears, seen[0].steps), (0, 1, 0));
        let quick: &[(u64, &[u8])] = &[(1, b"\x1b[1;1HTITLE"), (2, b"\x1b[2;1Hrow 1")];
        let seen = run("eager", &[quick]);
        assert_eq!((seen[0].tears, seen[0].brief), (0, 1));
        // In one read, or at a 60 Hz tick after both: nothing between.
        let seen = run("vsync:60", &[quick]);
        assert_eq!((seen[0].tears, seen[0].brief), (0, 0));
    }

    #[test]
    fn an_answer_in_place_in_one_read_shows_nothing_between() {
        let in_place: &[(u64, &[u8])] = &[(1, b"\x1b[2;1Hrow 1")];
        let seen = run("eager", &[in_place, in_place]);
        assert!(seen.iter().all(|s| s.states.is_empty() && s.brief == 0));
    }

    #[test]
    fn a_list_redrawn_from_the_top_churns_the_scrollback_and_a_log_does_not() {
        let mut transcript = Transcript::default();
        let mut windows = Vec::new();
        // A list of 3 + i lines on a 2-row screen, redrawn from the top for each key.
        for i in 0..4u64 {
            let from = (i + 1) * 100 * MS;
            let list: String = (0..3 + i).map(|n| format!("\r\nline {n}")).collect();
            transcript.push(
                format!("\x1b[1;1H\x1b[J{}", &list[2..]).as_bytes(),
                from + MS,
            );
            windows.push(Window {
                from_ns: from,
                to_ns: from + 100 * MS,
            });
        }
        let seen = see(
            PaintPolicy::default(),
            (10, 2),
            &transcript,
            &windows,
            600 * MS,
        )
        .0;
        let churn: Vec<u64> = seen.iter().map(|s| s.scrollback_churn).collect();
        // Lines minus rows pushed each time; all but the first key's are copies.
        assert_eq!(churn, [0, 2, 3, 4]);

        let mut transcript = Transcript::default();
        for i in 0..4u64 {
            transcript.push(format!("log {i}\r\n").as_bytes(), (i + 1) * 100 * MS + MS);
        }
        let seen = see(
            PaintPolicy::default(),
            (10, 2),
            &transcript,
            &windows,
            600 * MS,
        )
        .0;
        assert!(seen.iter().all(|s| s.scrollback_churn == 0), "{seen:?}");
    }

    #[test]
    fn a_film_of_grabs_is_held_to_the_grabs_at_the_keys_edges() {
        // Pixels of a 4-pixel window: settled, blank for 30 ms, the new frame.
        let (old, blank, half, new) = (
            vec![1, 1, 2, 2],
            vec![0; 4],
            vec![1, 1, 3, 2],
            vec![1, 1, 3, 4],
        );
        let frames = vec![
            (0, old.clone()),
            (101 * MS, blank),
            (131 * MS, new.clone()),
            (201 * MS, half),
            (240 * MS, old),
        ];
        let windows = [
            Window {
                from_ns: 100 * MS,
                to_ns: 200 * MS,
            },
            Window {
                from_ns: 200 * MS,
                to_ns: 300 * MS,
            },
        ];
        let seen = see_film(&frames, &windows, 400 * MS);
        assert_eq!((seen[0].flashes, seen[0].longest_flash_ms), (1, Some(30.0)));
        // From new to old through half of the way back: a tear for 39 ms.
        assert_eq!((seen[1].tears, seen[1].flashes), (1, 0));
        assert!(
            see_film::<u32>(&[], &windows, 400 * MS)
                .iter()
                .all(|s| s.states.is_empty())
        );
    }
}
