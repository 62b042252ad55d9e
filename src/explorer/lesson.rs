//! `flushlab lesson`: the story flushlab tells, as steps a presenter walks a room through, each
//! a writer mode with a caption in plain words and the live figures it quotes — the explorer's
//! own measurements, with "× stdout()" beside them. Space or → goes on, ← or Backspace back; a
//! step's figures are kept (its row of the table) when you come back.

use ratatui::style::{Color, Stylize};
use ratatui::text::{Line, Span};

use flushlab_core::backend::BackendKind;
use flushlab_core::condition::Condition;
use flushlab_core::meters::{Meters, Totals};
use flushlab_core::units::{bytes, count};
use flushlab_core::writer_mode::{Buffering, Mode, Stream};

/// One step: a mode, synchronized output or not, and what to say.
#[derive(Debug)]
pub struct Step {
    pub title: &'static str,
    pub stream: Stream,
    pub buffering: Buffering,
    pub sync: bool,
    /// The backend the step starts with; in the encoder's step, `x` switches it and the
    /// figures compare the backends instead of the mode with `stdout()`.
    pub backend: BackendKind,
    pub text: &'static str,
}

/// The lesson, in order.
pub const STEPS: [Step; 10] = [
    Step {
        title: "std's stdout()",
        stream: Stream::Stdout,
        buffering: Buffering::Line,
        sync: false,
        backend: BackendKind::Crossterm,
        text: "println! and ratatui's default terminal write through std's stdout(): a 1 KiB \
               LineWriter. A frame has almost no newline, so it leaves in 1 KiB pieces, one \
               write(2) each.",
    },
    Step {
        title: "stderr(): no buffer at all",
        stream: Stream::Stderr,
        buffering: Buffering::Raw,
        sync: false,
        backend: BackendKind::Crossterm,
        text: "std's stderr() is unbuffered, so that a crash message is out at once. Under a \
               TUI, every escape sequence crossterm writes becomes its own write(2): watch the \
               frame rate collapse.",
    },
    Step {
        title: "What a frame is made of",
        stream: Stream::Stdout,
        buffering: Buffering::Raw,
        sync: false,
        backend: BackendKind::Crossterm,
        text: "A frame is thousands of tiny pieces: move the cursor, set a colour, print a \
               cell. Unbuffered, each piece is a system call. The bytes are the same in every \
               step; only how many write(2) carry them changes.",
    },
    Step {
        title: "BufWriter",
        stream: Stream::Stdout,
        buffering: Buffering::Block,
        sync: false,
        backend: BackendKind::Crossterm,
        text: "BufWriter::new(stdout()) gathers the pieces and writes 8 KiB at a time: a few \
               dozen write(2) a frame instead of hundreds, and far less CPU a frame.",
    },
    Step {
        title: "One write a frame",
        stream: Stream::Stdout,
        buffering: Buffering::Frame,
        sync: false,
        backend: BackendKind::Crossterm,
        text: "Gather the whole frame and write it once: one write(2) a frame. The loop waits \
               inside that write while the terminal takes the bytes.",
    },
    Step {
        title: "A writer thread",
        stream: Stream::Stdout,
        buffering: Buffering::Thread,
        sync: false,
        backend: BackendKind::Crossterm,
        text: "Hand the finished frame to a thread that writes it while the next one is drawn: \
               one write(2) a frame, and drawing no longer waits for the terminal.",
    },
    Step {
        title: "Synchronized output",
        stream: Stream::Stdout,
        buffering: Buffering::Frame,
        sync: true,
        backend: BackendKind::Crossterm,
        text: "DEC mode 2026 asks the terminal to show a frame only once it is complete: no \
               half-drawn frames. The two markers travel in the same single write(2).",
    },
    Step {
        title: "After buffering: the encoder",
        stream: Stream::Stdout,
        buffering: Buffering::Thread,
        sync: false,
        backend: BackendKind::Lean,
        text: "With one write a frame, most of a frame's CPU is encoding it: crossterm formats \
               every sequence through fmt. flushlab's lean backend sends the same bytes built \
               without it. Press x to switch backends: the figures compare the two.",
    },
    Step {
        title: "The terminal is the limit",
        stream: Stream::Stdout,
        buffering: Buffering::Block,
        sync: false,
        backend: BackendKind::Crossterm,
        text: "Past a point a faster writer buys no frames: the terminal reads at its own pace \
               and the loop waits for it (reader wait). What still differs between the modes \
               is the CPU each frame costs.",
    },
    Step {
        title: "The comparison",
        stream: Stream::Stdout,
        buffering: Buffering::Thread,
        sync: false,
        backend: BackendKind::Crossterm,
        text: "Every mode of this lesson, measured here under the same conditions. Headless, \
               in fresh terminals: flushlab bench --modes stdout/line,stderr/raw,stdout/raw,\
               stdout/block,stdout/frame,stdout/thread",
    },
];

/// Lines the caption panel takes at any width: title, text, the gauge (three rows: its figure
/// in big digits, for the back of the room), figures, keys.
pub const PANEL_LINES: u16 = 1 + TEXT_LINES as u16 + crate::explorer::big_digits::ROWS as u16 + 2;
/// Lines of the step's text.
const TEXT_LINES: usize = 4;

/// The step after (or before) `step`, within the lesson.
pub fn next(step: usize) -> usize {
    (step + 1).min(STEPS.len() - 1)
}

pub fn previous(step: usize) -> usize {
    step.saturating_sub(1)
}

/// The mode step `step` measures, at `capacity` for a block step.
pub fn mode(step: usize, capacity: usize) -> Mode {
    let step = &STEPS[step.min(STEPS.len() - 1)];
    Mode::new(step.stream, step.buffering, capacity)
}

/// `--steps`: one line a step.
pub fn list() -> String {
    STEPS
        .iter()
        .enumerate()
        .map(|(i, s)| {
            let sync = if s.sync { " + sync" } else { "" };
            let backend = match s.backend {
                BackendKind::Crossterm => String::new(),
                other => format!(", {} backend", other.name()),
            };
            format!(
                "{:>2}. {} ({}/{}{sync}{backend})\n",
                i + 1,
                s.title,
                s.stream.name(),
                s.buffering.name()
            )
        })
        .collect()
}

/// The caption of `step` in `width` columns, its figures from `meters`: the step's mode under
/// `condition` (the last second while it runs, else its row), and the same figures of std's
/// `stdout()` under the same condition, as "× stdout()". Without the gauge (the panel draws
/// it between the text and the figures).
pub fn caption(
    step: usize,
    mode: Mode,
    meters: &Meters,
    condition: Condition,
    width: u16,
) -> (Vec<Line<'static>>, Vec<Line<'static>>) {
    let at = step.min(STEPS.len() - 1);
    let this = &STEPS[at];
    let mut head = vec![Line::from(vec![
        Span::raw(format!(" Step {} of {} · ", at + 1, STEPS.len())).bold(),
        Span::raw(this.title).bold().fg(Color::LightYellow),
    ])];
    for line in wrap(this.text, usize::from(width.saturating_sub(2))) {
        head.push(Line::from(format!(" {line}")));
    }
    head.truncate(1 + TEXT_LINES);
    while head.len() < 1 + TEXT_LINES {
        head.push(Line::from(""));
    }
    // The last second while the step runs; its row (kept) until a second has passed.
    let figures = meters
        .window
        .or_else(|| meters.totals_for(mode, condition).copied());
    let (against, base, no_base) = if this.backend == BackendKind::Crossterm {
        let stdout = Mode::new(Stream::Stdout, Buffering::Line, mode.capacity);
        let is_stdout = mode.key() == stdout.key();
        let base = (!is_stdout)
            .then(|| meters.totals_for(stdout, condition).copied())
            .flatten();
        // Rows are compared under one condition only: say so instead of a ratio.
        let no_base = (!is_stdout && base.is_none()).then_some(if condition.sync {
            "× stdout(): none measured with sync on".to_owned()
        } else {
            "× stdout(): not measured yet".to_owned()
        });
        ("stdout()", base, no_base)
    } else {
        // The encoder's step: the same mode through crossterm's backend, the one every other
        // step draws with (or, drawing with it, through the lean one).
        let other = match condition.backend {
            BackendKind::Crossterm => BackendKind::Lean,
            _ => BackendKind::Crossterm,
        };
        let base = meters
            .totals_for(
                mode,
                Condition {
                    backend: other,
                    ..condition
                },
            )
            .copied();
        let no_base = base
            .is_none()
            .then(|| format!("× {}: press x to measure it", other.name()));
        (other.name(), base, no_base)
    };
    let tail = vec![
        figures_line(figures.as_ref(), base.as_ref(), against, no_base, width),
        Line::from(" space/→ next · ←/Backspace back · m table · q quit").fg(Color::DarkGray),
    ];
    (head, tail)
}

/// "34,712 write(2)/frame (×109 stdout()) · CPU 83.3 ms/frame (×10.8) · 67.0 kB/frame".
fn figures_line(
    now: Option<&Totals>,
    base: Option<&Totals>,
    against: &str,
    no_base: Option<String>,
    width: u16,
) -> Line<'static> {
    let Some(now) = now else {
        return Line::from(" measuring… (figures update once a second)").italic();
    };
    let times = |a: Option<f64>, b: Option<f64>| match (a, b) {
        (Some(a), Some(b)) if b > 0.0 => format!(" (×{} {against})", ratio(a / b)),
        _ => String::new(),
    };
    let base_writes = base.and_then(|b| b.writes_per_frame());
    let base_cpu = base.and_then(|b| b.figures().cpu_ms_per_frame());
    let base_fps = base.map(|b| b.fps());
    let mut parts = vec![
        format!(
            " {} fps{}",
            count(now.fps()),
            times(Some(now.fps()), base_fps)
        ),
        format!(
            "{} write(2)/frame{}",
            now.writes_per_frame().map_or("–".into(), count),
            times(now.writes_per_frame(), base_writes)
        ),
        format!(
            "CPU {} ms/frame{}",
            now.figures()
                .cpu_ms_per_frame()
                .map_or("–".into(), |v| format!("{v:.2}")),
            times(now.figures().cpu_ms_per_frame(), base_cpu)
        ),
        format!("{}/frame", now.bytes_per_frame().map_or("–".into(), bytes)),
    ];
    if let Some(why) = no_base {
        parts.insert(1, why);
    }
    // Whole figures only: what does not fit is left out, from the end.
    let mut line = String::new();
    for part in parts {
        let next = if line.is_empty() {
            part
        } else {
            format!("{line} · {part}")
        };
        if next.chars().count() > usize::from(width) {
            break;
        }
        line = next;
    }
    Line::from(line).bold()
}

/// `109`, `10.8`, `0.25`: a ratio in three figures at most.
fn ratio(r: f64) -> String {
    match r {
        r if r >= 100.0 => format!("{r:.0}"),
        r if r >= 10.0 => format!("{r:.1}"),
        r => format!("{r:.2}"),
    }
}

/// `text` broken between words into lines of at most `width` columns.
fn wrap(text: &str, width: usize) -> Vec<String> {
    let mut lines: Vec<String> = Vec::new();
    let mut line = String::new();
    for word in text.split_whitespace() {
        if !line.is_empty() && line.chars().count() + 1 + word.chars().count() > width {
            lines.push(std::mem::take(&mut line));
        }
        if !line.is_empty() {
            line.push(' ');
        }
        line.push_str(word);
    }
    if !line.is_empty() {
        lines.push(line);
    }
    lines
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_step_fits_80_columns_in_its_text_lines() {
        for step in &STEPS {
            let lines = wrap(step.text, 78);
            assert!(lines.len() <= TEXT_LINES, "{}: {lines:?}", step.title);
            assert!(lines.iter().all(|l| l.chars().count() <= 78));
        }
        assert_eq!(next(STEPS.len() - 1), STEPS.len() - 1);
        assert_eq!(previous(0), 0);
        assert_eq!(list().lines().count(), STEPS.len());
    }

    /// The encoder's step compares the mode through the backends, never with `stdout()`;
    /// `x` there switches the backend (lean, termion, crossterm), and going to the step sets
    /// the lean one.
    #[test]
    fn the_encoders_step_compares_the_two_backends() {
        use crate::explorer::app::{Action, App};
        use flushlab_core::condition::HudLayout;
        use flushlab_core::meters::{ModeRow, Totals};
        use flushlab_core::scene::Scene;

        let at = STEPS
            .iter()
            .position(|s| s.backend == BackendKind::Lean)
            .unwrap();
        let mut app = App::new(mode(0, 8192), Scene::Full, false);
        app.go_to_step(at);
        assert_eq!(app.backend, BackendKind::Lean);
        let lean = app.condition(80, 24);
        app.apply(Action::NextBackend, std::time::Instant::now());
        assert_eq!(app.backend, BackendKind::Termion);
        app.apply(Action::NextBackend, std::time::Instant::now());
        assert_eq!(app.backend, BackendKind::Crossterm);
        let crossterm = app.condition(80, 24);
        assert_eq!(lean.hud, HudLayout::Full);

        let totals = |frames| Totals {
            frames,
            seconds: 1.0,
            ..Totals::default()
        };
        let mut meters = Meters::new();
        let mode = app.mode;
        meters.rows.push(ModeRow {
            condition: crossterm,
            mode: mode.key(),
            totals: totals(200),
        });
        let text = |meters: &Meters, condition| {
            let (_, tail) = caption(at, mode, meters, condition, 200);
            tail[0].to_string()
        };
        assert!(
            text(&meters, crossterm).contains("× lean: press x to measure it"),
            "{}",
            text(&meters, crossterm)
        );
        meters.rows.push(ModeRow {
            condition: lean,
            mode: mode.key(),
            totals: totals(400),
        });
        let said = text(&meters, lean);
        assert!(said.contains("400 fps (×2.00 crossterm)"), "{said}");
        assert!(!said.contains("stdout()"), "{said}");
    }
}
