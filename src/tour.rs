//! `flushlab tour`: every writer mode in turn in the terminal it runs in, then the comparison.
//!
//! Two rates per mode. *Accepted*: frames whose writes returned, per second, as everywhere else.
//! *Shown*: frames the terminal confirmed it had processed. Every `--cpr-every` frames a
//! cursor-position query (`CSI 6 n`) follows the frame in the same flush; the terminal answers
//! only after it has parsed everything before it, so the answer to the query sent after frame N
//! proves frames 1..=N reached the screen's state. A terminal that accepts bytes faster than it
//! draws them looks fast by the first rate and honest by the second. No answer within
//! `--cpr-timeout` leaves "shown" unknown; the tour never waits longer than that.

use std::collections::VecDeque;
use std::io::IsTerminal;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::{Duration, Instant};

use clap::Args;
use ratatui::layout::Rect;
use ratatui::widgets::Widget;

use crate::app::{Action, App};
use crate::bench::export::{Export, Exporter, JsonExporter, MarkdownExporter};
use crate::bench::results::{BenchResults, Machine, Row, Run, Settings, TerminalIdentity};
use crate::bench::subject::{Subject, parse_subjects};
use crate::cli::{FrameArgs, parse_duration};
use crate::keyboard::{Input, Keyboard};
use crate::meters::Totals;
use crate::renderer::Renderer;
use crate::terminal_session::TerminalSession;
use crate::writer_mode::{self, Mode, Stream};

const CPR: &[u8] = b"\x1b[6n";
/// DECRQM for synchronized output, XTVERSION, DA2, then DA1: every terminal answers DA1, and
/// terminals answer in order, so DA1's answer means that whatever else will be answered has
/// been, and the tour need not wait out the timeout for the queries a terminal ignores.
const IDENTIFY: &[u8] = b"\x1b[?2026$p\x1b[>0q\x1b[>c\x1b[c";

#[derive(Debug, Args)]
pub struct TourArgs {
    /// Seconds per mode.
    #[arg(long, value_parser = parse_duration, default_value = "2", allow_negative_numbers = true)]
    pub seconds: Duration,

    /// Modes to visit, comma-separated (stdout/raw, stderr/block, …) [default: every mode]
    #[arg(long, value_delimiter = ',', value_parser = parse_subjects)]
    pub modes: Vec<Vec<Subject>>,

    /// Ask the terminal for the cursor position every this many frames.
    #[arg(long, default_value_t = 10, value_parser = clap::value_parser!(u64).range(1..))]
    pub cpr_every: u64,

    /// How long to wait for the terminal's answers before calling them unknown.
    #[arg(long, value_parser = parse_duration, default_value = "1", allow_negative_numbers = true)]
    pub cpr_timeout: Duration,

    #[command(flatten)]
    pub frame: FrameArgs,

    /// Write the results as JSON (the `flushlab bench` format, with the terminal's identity).
    #[arg(long, value_name = "FILE")]
    pub export_json: Option<PathBuf>,

    #[arg(long, value_name = "FILE")]
    pub export_markdown: Option<PathBuf>,
}

/// Queries in flight, oldest first: the mode and the frame count each one follows.
type Pending = VecDeque<(usize, u64)>;

/// What the terminal confirmed per mode: (frames, seconds after the mode began).
struct Confirmations {
    pending: Pending,
    confirmed: Vec<Option<(u64, f64)>>,
    mode_started: Vec<Instant>,
}

impl Confirmations {
    fn answer(&mut self, at: Instant) {
        if let Some((mode, frames)) = self.pending.pop_front() {
            let seconds = (at - self.mode_started[mode]).as_secs_f64();
            self.confirmed[mode] = Some((frames, seconds));
        }
    }
}

pub fn run(args: TourArgs) -> anyhow::Result<ExitCode> {
    let stream = Stream::Stdout;
    if !std::io::stdout().is_terminal() {
        eprintln!("flushlab: tour measures the terminal it runs in, and stdout is not one");
        return Ok(ExitCode::from(2));
    }
    let mut modes: Vec<Mode> = Vec::new();
    let chosen = if args.modes.is_empty() {
        parse_subjects("modes").unwrap_or_default()
    } else {
        args.modes.concat()
    };
    for subject in chosen {
        match subject {
            Subject::Mode(s, b) if !modes.iter().any(|m| (m.stream, m.buffering) == (s, b)) => {
                modes.push(Mode::new(s, b, args.frame.capacity));
            }
            Subject::Mode(..) => {}
            other => {
                eprintln!("flushlab: tour visits writer modes, not '{other}'");
                return Ok(ExitCode::from(2));
            }
        }
    }
    let size = rustix::termios::tcgetwinsize(rustix::stdio::stdout())?;
    let (cols, rows) = (size.ws_col, size.ws_row);
    let signal = crate::terminal_session::watch_termination_signals()?;

    let session = TerminalSession::enter(stream)?;
    let mut keyboard = Keyboard::open()?;
    let mut app = App::new(modes[0], args.frame.scene, args.frame.sync);
    let mut renderer = Renderer::new(writer_mode::open(modes[0])?, Rect::new(0, 0, cols, rows));
    renderer.sync = args.frame.sync;

    // Identify the terminal: answered up to DA1's answer, or within the timeout.
    renderer.write_now(IDENTIFY)?;
    let (mut sync_status, mut version, mut attributes) = (None, None, None);
    let asked = Instant::now();
    let mut all_answered = false;
    while asked.elapsed() < args.cpr_timeout && !all_answered {
        for input in keyboard.pending_input()? {
            match input {
                Input::PrivateMode { mode: 2026, status } => sync_status = Some(status),
                Input::DeviceString(text) => {
                    version = Some(text.trim_start_matches(">|").to_owned())
                }
                Input::DeviceAttributes {
                    secondary: true,
                    params,
                } => attributes = Some(params),
                Input::DeviceAttributes {
                    secondary: false, ..
                } => all_answered = true,
                _ => {}
            }
        }
        std::thread::sleep(Duration::from_millis(5));
    }

    // The meters start now: identifying the terminal is not part of the first mode.
    app.meters = crate::meters::Meters::new();
    let mut confirmations = Confirmations {
        pending: Pending::new(),
        confirmed: vec![None; modes.len()],
        mode_started: Vec::new(),
    };
    let mut quit = false;
    'modes: for (index, &mode) in modes.iter().enumerate() {
        if index > 0 {
            renderer.set_writer(writer_mode::open(mode)?)?;
            app.meters.end_segment(modes[index - 1]);
        }
        app.mode = mode;
        app.status = Some(format!("tour {}/{}: {mode}", index + 1, modes.len()));
        let started = Instant::now();
        confirmations.mode_started.push(started);
        let mut frames = 0;
        while started.elapsed() < args.seconds {
            if signal.load(std::sync::atomic::Ordering::Relaxed) != 0 {
                quit = true;
                break 'modes;
            }
            app.render(renderer.area(), renderer.buffer_mut());
            frames += 1;
            let ask = frames % args.cpr_every == 0;
            let cells = renderer.present_with(if ask { CPR } else { &[] })?;
            if ask {
                confirmations.pending.push_back((index, frames));
            }
            app.meters.frame_done(cells, Instant::now());
            for input in keyboard.pending_input()? {
                match input {
                    Input::CursorPosition { .. } => confirmations.answer(Instant::now()),
                    Input::Key(key) if Action::from(key) == Action::Quit => {
                        quit = true;
                        break 'modes;
                    }
                    _ => {}
                }
            }
        }
        // The last frame of the mode, confirmed (or not) before the next mode starts.
        renderer.write_now(CPR)?;
        confirmations.pending.push_back((index, frames));
        let deadline = Instant::now() + args.cpr_timeout;
        while !confirmations.pending.is_empty() && Instant::now() < deadline {
            for input in keyboard.pending_input()? {
                if let Input::CursorPosition { .. } = input {
                    confirmations.answer(Instant::now());
                }
            }
            std::thread::sleep(Duration::from_millis(1));
        }
        // Unanswered queries will never be matched to this mode again.
        confirmations.pending.clear();
    }
    let last = app.mode;
    renderer.set_writer(Box::new(std::io::sink()))?;
    app.meters.end_segment(last);
    drop(renderer);
    drop(session);

    let identity = TerminalIdentity {
        term: std::env::var("TERM").ok(),
        term_program: std::env::var("TERM_PROGRAM").ok(),
        term_program_version: std::env::var("TERM_PROGRAM_VERSION").ok(),
        version_reply: version,
        secondary_attributes: attributes,
        cols,
        rows,
        sync_output: match sync_status {
            Some(0) => "not recognized",
            Some(_) => "supported",
            None => "no answer",
        }
        .to_owned(),
    };
    let terminal_name = identity.name().unwrap_or_else(|| "unknown".to_owned());
    let results = BenchResults {
        flushlab_version: env!("CARGO_PKG_VERSION").to_owned(),
        machine: Machine::this(),
        settings: Settings {
            workload: "tour".into(),
            unit: "frame".into(),
            sizes: vec![format!("{cols}x{rows}")],
            readers: vec![terminal_name.clone()],
            sinks: vec!["tty".into()],
            runs: 1,
            warmup: 0,
            duration_seconds: args.seconds.as_secs_f64(),
            scene: args.frame.scene.name().into(),
            sync: args.frame.sync,
            capacity: args.frame.capacity,
            command: std::iter::once("flushlab".to_owned())
                .chain(std::env::args().skip(1))
                .collect::<Vec<_>>()
                .join(" "),
        },
        terminal: Some(identity),
        results: modes
            .iter()
            .enumerate()
            .filter_map(|(i, &mode)| {
                let totals = app.meters.totals_for(mode)?;
                Some(row(
                    mode,
                    totals,
                    confirmations.confirmed.get(i).copied().flatten(),
                    cols,
                    rows,
                    &terminal_name,
                ))
            })
            .collect(),
    };
    print!(
        "{}",
        String::from_utf8_lossy(&MarkdownExporter.serialize(&results)?)
    );
    let exports = [
        args.export_json.clone().map(|path| Export {
            exporter: Box::new(JsonExporter) as Box<dyn Exporter>,
            path,
        }),
        args.export_markdown.clone().map(|path| Export {
            exporter: Box::new(MarkdownExporter),
            path,
        }),
    ];
    for export in exports.into_iter().flatten() {
        export.write_file(&results)?;
    }
    Ok(if quit {
        ExitCode::from(130)
    } else {
        ExitCode::SUCCESS
    })
}

fn row(
    mode: Mode,
    totals: &Totals,
    confirmed: Option<(u64, f64)>,
    cols: u16,
    rows: u16,
    terminal: &str,
) -> Row {
    let mut row = Row::new(
        mode.to_string(),
        false,
        format!("{cols}x{rows}"),
        terminal.to_owned(),
        "tty".into(),
    );
    row.runs.push(Run {
        frames: totals.frames,
        seconds: totals.seconds,
        fps: totals.fps(),
        writes_per_frame: totals.writes_per_frame(),
        bytes_per_frame: totals.bytes_per_frame(),
        bytes_per_write: totals.bytes_per_write(),
        kernel_share: totals.kernel_share(),
        peak_rss_kib: crate::meters::peak_rss_kib(),
        reader_bytes: 0,
        shown_fps: confirmed
            .filter(|(_, s)| *s > 0.0)
            .map(|(frames, seconds)| frames as f64 / seconds),
    });
    row.summarize();
    row
}
