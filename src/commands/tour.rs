//! `flushlab tour`: every writer mode in turn in the terminal it runs in, then the comparison.
//!
//! Two rates per mode. *Accepted*: frames whose writes returned, per second, as everywhere else.
//! *Shown*: frames the terminal confirmed it had processed. Every `--cpr-every` frames a
//! cursor-position query (`CSI 6 n`) follows the frame in the same flush; the terminal answers
//! only after it has parsed everything before it, so the answer to the query sent after frame N
//! proves frames 1..=N reached the screen's state. A terminal that accepts bytes faster than it
//! draws them looks fast by the first rate and honest by the second. No answer within
//! `--cpr-timeout` leaves "shown" unknown; the tour never waits longer than that.

use std::io::IsTerminal;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use clap::Args;

use crate::explorer::app::{Action, App};
use crate::explorer::hud::Hud;
use crate::painting::own::OwnWindow;
use crate::plumbing::frame_args::FrameArgs;
use crate::plumbing::measured::MeasuredOutput;
use flushlab_core::condition::{Condition, HudLayout};
use flushlab_core::confirm::{CursorAnswers, FrameConfirmer, Shown};
use flushlab_core::files::Destination;
use flushlab_core::meters::Totals;
use flushlab_core::outcome::{Outcome, Refusal, complain};
use flushlab_core::results::conditions::{Reader, Sink, Size, SyncOutput, Workload};
use flushlab_core::results::export::{Export, Exporter, JsonExporter, MarkdownExporter};
use flushlab_core::results::{BenchResults, Machine, Row, Run, Settings, TerminalIdentity};
use flushlab_core::seen::PaintPolicy;
use flushlab_core::subject::{Subject, parse_subjects};
use flushlab_core::units::parse_duration;
use flushlab_core::writer_mode::{Mode, Stream};
use flushlab_terminals::input::{Input, Keyboard};
use flushlab_terminals::session::TerminalSession;

/// DECRQM for synchronized output, XTVERSION, DA2, then DA1: every terminal answers DA1, and
/// terminals answer in order, so DA1's answer means that whatever else will be answered has
/// been, and the tour need not wait out the timeout for the queries a terminal ignores.
const IDENTIFY: &[u8] = b"\x1b[?2026$p\x1b[>0q\x1b[>c\x1b[c";

const TOURARGS_EXAMPLES: &str = "\
Examples:
  flushlab tour                              every mode for 3 s in this terminal, then the table
  flushlab tour --seconds 1 --export-json my-terminal.json
  flushlab report *.json --plot terminals.svg   several terminals' tours, merged";

#[derive(Debug, Args)]
#[command(after_help = TOURARGS_EXAMPLES)]
pub struct TourArgs {
    #[command(flatten)]
    pub accounting: crate::plumbing::frame_args::AccountingArg,

    /// Seconds per mode (`--tour-seconds`, as the explorer's key t takes it, is the same).
    #[arg(long, alias = "tour-seconds", value_parser = parse_duration, default_value = "2", allow_negative_numbers = true)]
    pub seconds: Duration,

    /// Modes to visit, comma-separated (stdout/raw, stderr/block, …) [default: every mode]
    #[arg(long, value_delimiter = ',', value_parser = flushlab_core::subject::MODES, hide_possible_values = true)]
    pub modes: Vec<Vec<Subject>>,

    /// Ask the terminal for the cursor position every this many frames.
    #[arg(long, default_value_t = 10, value_parser = clap::value_parser!(u64).range(1..))]
    pub cpr_every: u64,

    /// How long to wait for the terminal's answers before calling them unknown.
    #[arg(long, value_parser = parse_duration, default_value = "1", allow_negative_numbers = true)]
    pub cpr_timeout: Duration,

    #[command(flatten)]
    pub frame: FrameArgs,

    /// How much of the screen the HUD takes [default: full from 100x40, else compact]
    #[arg(long, value_enum)]
    pub hud: Option<HudLayout>,

    /// Write the results as JSON (the `flushlab bench` format, with the terminal's identity;
    /// `-` = stdout, after the terminal is restored, the table then on stderr).
    #[arg(long, value_name = "FILE", value_parser = Destination::parse)]
    pub export_json: Option<Destination>,

    /// Write the table as Markdown (`-` = stdout).
    #[arg(long, value_name = "FILE", value_parser = Destination::parse)]
    pub export_markdown: Option<Destination>,

    /// Also count the frames this terminal paints, read from its window (an X11 desktop:
    /// `$DISPLAY`, and `$WINDOWID` or the window's `_NET_WM_PID`); elsewhere the tour says why
    /// not and runs without.
    #[arg(long)]
    pub paint: bool,
}

impl TourArgs {
    fn exports(&self) -> Vec<Export> {
        let json = self.export_json.clone().map(|destination| Export {
            exporter: Box::new(JsonExporter) as Box<dyn Exporter>,
            destination,
        });
        let markdown = self.export_markdown.clone().map(|destination| Export {
            exporter: Box::<MarkdownExporter>::default(),
            destination,
        });
        json.into_iter().chain(markdown).collect()
    }
}

/// The tour's confirmers: cursor-position answers always, the window's painted frames with
/// `--paint` where they can be read. The frame loop sees them only as [`FrameConfirmer`]s.
struct Confirmers {
    cursor: CursorAnswers,
    paint: Option<OwnWindow>,
}

impl Confirmers {
    fn each(&self) -> impl Iterator<Item = &dyn FrameConfirmer> {
        let paint = self.paint.as_ref().map(|p| p as &dyn FrameConfirmer);
        std::iter::once(&self.cursor as &dyn FrameConfirmer).chain(paint)
    }

    fn each_mut(&mut self) -> impl Iterator<Item = &mut dyn FrameConfirmer> {
        let paint = self.paint.as_mut().map(|p| p as &mut dyn FrameConfirmer);
        std::iter::once(&mut self.cursor as &mut dyn FrameConfirmer).chain(paint)
    }

    /// Takes in what the terminal sent: cursor-position answers go to every confirmer; a quit
    /// key ends the tour (its outcome is returned).
    fn read_answers(&mut self, keyboard: &mut Keyboard) -> std::io::Result<Option<Outcome>> {
        for input in keyboard.pending_input()? {
            match input {
                Input::Key(key) if Action::from(key).ends_run() => return Ok(Some(Outcome::Quit)),
                Input::CursorPosition { .. } => {
                    let at = Instant::now();
                    self.each_mut().for_each(|c| c.cursor_answered(at));
                }
                _ => {}
            }
        }
        Ok(None)
    }
}

/// What a tour does, its flags checked: the modes in their order, where the results go, and
/// the terminal to draw on when stdout is the pipe an export goes to.
struct TourPlan {
    modes: Vec<Mode>,
    exports: Vec<Export>,
    terminal: Option<std::fs::File>,
}

/// The tour's plan, or the usage error that refuses it (before the terminal is touched).
fn plan(args: &TourArgs) -> Result<TourPlan, Refusal> {
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
                return Err(
                    format!("tour: --modes: the tour visits writer modes, not '{other}'").into(),
                );
            }
        }
    }
    if let [_, _, ..] = args.frame.backend.as_slice() {
        return Err(format!(
            "tour: --backend: a tour draws with one backend (choose one of {})",
            flushlab_core::backend::BackendKind::ALL
                .map(|b| b.name())
                .join(", ")
        )
        .into());
    }
    let exports = args.exports();
    flushlab_core::results::export::distinct(&exports, "--export-json, --export-markdown")
        .map_err(|why| format!("tour: {why}"))?;
    for export in &exports {
        export.check().map_err(|e| format!("tour: {e}"))?;
    }
    let terminal = terminal_behind_pipe(&exports)?;
    Ok(TourPlan {
        modes,
        exports,
        terminal,
    })
}

/// The tour measures `stdout()` on the terminal it runs in. When stdout is not a terminal but
/// the pipe an export goes to (`--export-json - | jq`), the tour draws on the controlling
/// terminal put on fd 1 for its duration (`stdout()` then writes to the terminal, as a TUI's
/// does), and the pipe gets fd 1 back for the export. Otherwise there is nothing to measure.
fn terminal_behind_pipe(exports: &[Export]) -> Result<Option<std::fs::File>, String> {
    if std::io::stdout().is_terminal() {
        return Ok(None);
    }
    if !exports.iter().any(|e| e.destination.is_stdout()) {
        return Err(
            "tour measures the terminal it runs in, and stdout is not one \
             (with --export-json - or --export-markdown -, it draws on /dev/tty)"
                .to_owned(),
        );
    }
    let tty = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open("/dev/tty")
        .map_err(|e| {
            format!("tour measures the terminal it runs in: stdout is a pipe, and /dev/tty: {e}")
        })?;
    if !tty.is_terminal() {
        return Err("tour measures the terminal it runs in: stdout is a pipe, and /dev/tty is not a terminal".to_owned());
    }
    Ok(Some(tty))
}

pub fn run(args: TourArgs) -> anyhow::Result<Outcome> {
    let plan = match plan(&args) {
        Ok(plan) => plan,
        Err(refusal) => return Ok(refusal.tell()),
    };
    // Given back (flushed, fd 1 the pipe again) before the exports are written.
    let redirect = plan
        .terminal
        .map(flushlab_core::sys::StdoutRedirect::to)
        .transpose()?;
    let TourPlan { modes, exports, .. } = plan;
    let (cols, rows) = flushlab_core::sys::window_size(std::io::stdout())?;
    let signal = flushlab_terminals::session::watch_termination_signals()?;
    flushlab_terminals::session::end_stuck_runs()?;

    let session = TerminalSession::enter(Stream::Stdout)?;
    let mut keyboard = Keyboard::open()?;
    let mut app = App::new(modes[0], args.frame.scene, args.frame.sync);
    app.backend = args.frame.backend.first().copied().unwrap_or_default();
    app.hud_wanted = args.hud.unwrap_or(HudLayout::Full);
    let condition = crate::explorer::hud::fit(&mut app, cols, rows);
    // The terminal model on a sample of each mode's frames: the table's torn paints a second.
    let mut out = MeasuredOutput::open(modes[0], condition)?.with_model(PaintPolicy::default())?;
    // Identify the terminal: answered up to DA1's answer, or within the timeout.
    let (identity, stop) = identify(&mut out, &mut keyboard, &args, (cols, rows), &signal)?;
    let mut outcome = stop.unwrap_or(Outcome::Finished);
    // This terminal's window, read on an observer thread; or why it cannot be.
    let (paint, paint_note) = if args.paint && outcome == Outcome::Finished {
        match OwnWindow::start(rows, |bytes| out.write_now(bytes)) {
            Ok(own) => (Some(own), None),
            Err(why) => (None, Some(why)),
        }
    } else {
        (None, None)
    };
    // The meters start now: identifying the terminal is not part of the first mode.
    out.restart_meters();
    let mut visit = Visit {
        args: &args,
        out,
        app,
        hud: Hud::default(),
        keyboard,
        signal: &signal,
        confirmers: Confirmers {
            cursor: CursorAnswers::new(args.cpr_every),
            paint,
        },
        query: Vec::new(),
    };
    if outcome == Outcome::Finished
        && let Some(stop) = visit.every_mode(&modes, condition)?
    {
        outcome = stop;
    }
    let (meters, flushed) = visit.out.finish();
    let Confirmers { cursor, paint } = visit.confirmers;
    drop(session);
    drop(redirect);
    flushed?;
    let painted = paint.map(OwnWindow::finish).transpose()?;
    if let Some(note) = paint_note {
        complain(&note);
    }

    let shown = cursor.finish();
    let results = tour_results(&args, identity, &modes, &meters, condition, &shown, painted);
    for export in &exports {
        export.write_file(&results)?;
    }
    flushlab_core::results::export::deliver(&results, &exports)?;
    Ok(outcome)
}

fn signalled(signal: &AtomicUsize) -> Option<Outcome> {
    match signal.load(Ordering::Relaxed) {
        0 => None,
        sig => Some(Outcome::Signal(sig)),
    }
}

/// The tour's visit of its modes: what each mode's frames are drawn, written and confirmed with.
struct Visit<'a> {
    args: &'a TourArgs,
    out: MeasuredOutput,
    app: App,
    hud: Hud,
    keyboard: Keyboard,
    signal: &'a AtomicUsize,
    confirmers: Confirmers,
    /// The questions sent after the current frame, in its flush (kept to reuse its buffer).
    query: Vec<u8>,
}

impl Visit<'_> {
    /// Every mode in turn; the quit key or signal that ended the tour early, if one did.
    fn every_mode(
        &mut self,
        modes: &[Mode],
        condition: Condition,
    ) -> anyhow::Result<Option<Outcome>> {
        for (index, &mode) in modes.iter().enumerate() {
            let status = format!("tour {}/{}: {mode}", index + 1, modes.len());
            if let Some(stop) = self.mode(index, mode, condition, status)? {
                return Ok(Some(stop));
            }
        }
        Ok(None)
    }

    /// `--seconds` of frames in `mode`, each marked, asked about and timed by the confirmers,
    /// then the last frame's questions answered (or not) before the next mode. A quit key or a
    /// signal ends it, and is returned.
    fn mode(
        &mut self,
        index: usize,
        mode: Mode,
        condition: Condition,
        status: String,
    ) -> anyhow::Result<Option<Outcome>> {
        self.out.switch(mode, condition)?;
        self.app.mode = mode;
        self.app.status = Some(status);
        let started = Instant::now();
        self.confirmers
            .each_mut()
            .for_each(|c| c.begin_segment(index, started));
        let mut frames = 0;
        while started.elapsed() < self.args.seconds {
            if let Some(stop) = signalled(self.signal) {
                return Ok(Some(stop));
            }
            let area = self.out.area();
            let (app, hud, confirmers) = (&self.app, &self.hud, &self.confirmers);
            self.out.build_frame(|meters, canvas| {
                hud.paint_frame(app, meters, meters.frames(), area, canvas);
                confirmers.each().for_each(|c| c.mark(area, canvas));
            });
            frames += 1;
            self.query.clear();
            for confirmer in self.confirmers.each_mut() {
                self.query.extend_from_slice(confirmer.ask(frames));
            }
            // The clock is read around the write only for a confirmer that keeps the times.
            let timed = self.confirmers.each().any(|c| c.wants_write_times());
            let start_ns = timed.then(flushlab_core::sys::monotonic_ns);
            self.out.present(&self.query)?;
            if let Some(start_ns) = start_ns {
                let end_ns = flushlab_core::sys::monotonic_ns();
                self.confirmers
                    .each_mut()
                    .for_each(|c| c.written(start_ns, end_ns));
            }
            if let Some(stop) = self.confirmers.read_answers(&mut self.keyboard)? {
                return Ok(Some(stop));
            }
        }
        self.end_mode(frames)
    }

    /// The mode's last frame, confirmed (or not) within `--cpr-timeout`, before the next mode.
    fn end_mode(&mut self, frames: u64) -> anyhow::Result<Option<Outcome>> {
        self.query.clear();
        for confirmer in self.confirmers.each_mut() {
            self.query.extend_from_slice(confirmer.end_segment(frames));
        }
        self.out.write_now(&self.query)?;
        let deadline = Instant::now() + self.args.cpr_timeout;
        while self.confirmers.each().any(|c| c.awaiting()) && Instant::now() < deadline {
            if let Some(stop) = self.confirmers.read_answers(&mut self.keyboard)? {
                return Ok(Some(stop));
            }
            if let Some(stop) = signalled(self.signal) {
                return Ok(Some(stop));
            }
            self.keyboard.wait(Duration::from_millis(1));
        }
        self.confirmers.each_mut().for_each(|c| c.give_up());
        Ok(None)
    }
}

/// Asks the terminal what it is (DECRQM 2026, XTVERSION, DA2, then DA1) and reads the answers
/// until DA1's, or `--cpr-timeout`; a quit key or a signal stops the wait and is returned.
fn identify(
    out: &mut MeasuredOutput,
    keyboard: &mut Keyboard,
    args: &TourArgs,
    (cols, rows): (u16, u16),
    signal: &AtomicUsize,
) -> std::io::Result<(TerminalIdentity, Option<Outcome>)> {
    let timeout = args.cpr_timeout;
    out.write_now(IDENTIFY)?;
    let (mut sync_status, mut version, mut attributes) = (None, None, None);
    let asked = Instant::now();
    let mut stopped_by = None;
    let mut all_answered = false;
    'identify: while asked.elapsed() < timeout && !all_answered {
        for input in keyboard.pending_input()? {
            let quit = matches!(input, Input::Key(key) if Action::from(key).ends_run());
            if let Some(stop) = quit.then_some(Outcome::Quit).or_else(|| signalled(signal)) {
                stopped_by = Some(stop);
                break 'identify;
            }
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
        if let Some(stop) = signalled(signal) {
            stopped_by = Some(stop);
            break;
        }
        keyboard.wait(Duration::from_millis(5));
    }
    let identity = TerminalIdentity {
        term: std::env::var("TERM").ok(),
        term_program: std::env::var("TERM_PROGRAM").ok(),
        term_program_version: std::env::var("TERM_PROGRAM_VERSION").ok(),
        version_reply: version,
        secondary_attributes: attributes,
        cols,
        rows,
        sync_output: SyncOutput::from_status(sync_status),
    };
    Ok((identity, stopped_by))
}

/// The tour's results in the bench's format: a row a mode visited, the terminal's identity,
/// and what it painted of each mode where `--paint` read its window.
fn tour_results(
    args: &TourArgs,
    identity: TerminalIdentity,
    modes: &[Mode],
    meters: &flushlab_core::meters::Meters,
    condition: flushlab_core::condition::Condition,
    shown: &[Option<Shown>],
    painted: Option<(Vec<flushlab_core::results::painted::Painted>, f64)>,
) -> BenchResults {
    let (cols, rows) = (identity.cols, identity.rows);
    let terminal_name = identity.name().unwrap_or_else(|| "unknown".to_owned());
    BenchResults {
        flushlab_version: env!("CARGO_PKG_VERSION").to_owned(),
        machine: Machine::this(),
        settings: Settings {
            workload: Workload::Tour,
            unit: Workload::Tour.unit(),
            sizes: vec![Size { cols, rows }],
            readers: vec![Reader::Terminal(terminal_name.clone())],
            sinks: vec![Sink::Tty],
            runs: 1,
            warmup: 0,
            duration_seconds: args.seconds.as_secs_f64(),
            scene: args.frame.scene,
            sync: args.frame.sync,
            backends: vec![condition.backend],
            // The tour's writers are the explorer's: they sleep in write(2).
            wait: flushlab_core::wait::Wait::Sleep,
            capacity: args.frame.capacity,
            command: std::iter::once("flushlab".to_owned())
                .chain(std::env::args().skip(1))
                .collect::<Vec<_>>()
                .join(" "),
        },
        terminal: Some(identity),
        painted: painted
            .map(|(segments, cpu_share)| {
                segments
                    .into_iter()
                    .zip(modes)
                    .map(
                        |(painted, mode)| flushlab_core::results::painted::PaintRun {
                            terminal: terminal_name.clone(),
                            mode: Subject::Mode(mode.stream, mode.buffering),
                            sync: args.frame.sync,
                            cols,
                            rows,
                            observed: true,
                            observer_cpu_share: cpu_share,
                            painted,
                        },
                    )
                    .collect()
            })
            .unwrap_or_default(),
        results: modes
            .iter()
            .enumerate()
            .filter_map(|(i, &mode)| {
                let totals = meters.totals_for(mode, condition)?;
                let mut row = row(
                    mode,
                    totals,
                    shown.get(i).copied().flatten(),
                    cols,
                    rows,
                    &terminal_name,
                );
                row.backend = condition.backend;
                Some(row)
            })
            .collect(),
    }
}

fn row(
    mode: Mode,
    totals: &Totals,
    shown: Option<Shown>,
    cols: u16,
    rows: u16,
    terminal: &str,
) -> Row {
    let mut row = Row::new(
        Subject::Mode(mode.stream, mode.buffering),
        Size { cols, rows },
        Reader::Terminal(terminal.to_owned()),
        Sink::Tty,
    );
    row.runs.push(Run {
        figures: totals.figures(),
        peak_rss_kib: flushlab_core::sys::peak_rss_kib(flushlab_core::sys::Usage::Process),
        p50_ns: None,
        p99_ns: None,
        key_to_frame_ms: None,
        key_stages_ms: None,
        reader_bytes: 0,
        reader_cpu_seconds: None,
        machine_busy_seconds: None,
        shown_fps: shown.and_then(Shown::fps),
        torn_paints_per_second: totals.torn_per_second(),
        per_second: None,
        round: None,
    });
    row.summarize();
    row
}
