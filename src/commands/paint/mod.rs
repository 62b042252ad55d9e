//! `flushlab paint`: how many frames a terminal actually puts on screen.
//!
//! Every terminal benchmark counts what a terminal accepts (its writes return) or parses; what
//! a person sees is what it *paints*. `flushlab paint` starts an X server of its own (Xvfb),
//! opens a terminal on it, runs flushlab's headless run in it with the frame marker on, and
//! watches the window: after every repaint the X DAMAGE extension reports, it reads which frame
//! the markers show. Per run: accepted fps (from the run's own frame log), painted fps,
//! skipped and torn shares, and the latency from a frame's write(2) to its first paint.
//!
//! Its own room holds the command (flags, plan, runs); what the explorer, the tour and `wrap
//! --terminal` share with it — Xvfb and the terminals' launch table, the frame marker, the probe
//! inside the terminal, the X observer, the analysis — is [`crate::painting`].

use std::ffi::OsString;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use anyhow::{Context, bail};
use clap::Args;
use serde::Deserialize;

use crate::painting::{PaintResults, analysis, plot, probe};
use flushlab_core::files::Destination;
use flushlab_core::outcome::{Outcome, Refusal};
use flushlab_core::results::painted::PaintRun;
use flushlab_core::subject::Subject;
use flushlab_core::units::{parse_duration, parse_fps, parse_size};
use flushlab_terminals::display::Xvfb;
use flushlab_terminals::emulators::Terminal;
use flushlab_terminals::{marker, window_watch};

const EXAMPLES: &str = "\
Examples:
  flushlab paint                                    xterm, std's stdout() and one write a frame
  flushlab paint --terminal xterm,st --size 80x24 --sync off,on
  flushlab paint --fps-cap 30 --modes stdout/frame --duration 5
  flushlab paint --export-json painted.json --export-markdown painted.md --plot painted.svg";

/// `flushlab paint`'s flags.
#[derive(Debug, Args)]
#[command(after_help = EXAMPLES)]
pub struct PaintArgs {
    /// Terminals, comma-separated.
    #[arg(long, value_delimiter = ',', value_enum, default_value = "xterm")]
    pub terminal: Vec<Terminal>,

    /// Writer modes, comma-separated (stdout/line, stdout/frame, stderr/raw, …).
    #[arg(long, value_delimiter = ',', value_parser = flushlab_core::subject::MODES, hide_possible_values = true, default_value = "stdout/line,stdout/frame")]
    pub modes: Vec<Vec<Subject>>,

    /// Terminal size COLSxROWS (at least 32 columns: the marker's).
    #[arg(long, value_parser = parse_size, default_value = "80x24")]
    pub size: (u16, u16),

    /// Synchronized output (DEC 2026) around each frame: off, on, or both (`off,on`).
    #[arg(long, value_delimiter = ',', value_parser = flushlab_core::units::parse_switch, default_value = "off")]
    pub sync: Vec<bool>,

    /// Seconds each run writes frames.
    #[arg(long, value_parser = parse_duration, default_value = "3", allow_negative_numbers = true)]
    pub duration: Duration,

    /// Runs of each terminal × mode × sync.
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=100))]
    pub runs: u32,

    /// Frames per second at most (default: as fast as the writer allows).
    #[arg(long, value_parser = parse_fps, allow_negative_numbers = true)]
    pub fps_cap: Option<f64>,

    /// What the frames show.
    #[arg(long, value_enum, default_value_t = flushlab_core::scene::Scene::Full)]
    pub scene: flushlab_core::scene::Scene,

    /// Write the results as JSON to this file (`-` = stdout).
    #[arg(long, value_name = "FILE", value_parser = Destination::parse)]
    pub export_json: Option<Destination>,

    /// Write the runs as CSV to this file, a line a run (`-` = stdout).
    #[arg(long, value_name = "FILE", value_parser = Destination::parse)]
    pub export_csv: Option<Destination>,

    /// Draw accepted and painted fps as an SVG chart to this file (`-` = stdout).
    #[arg(long, value_name = "FILE.svg", value_parser = Destination::parse)]
    pub plot: Option<Destination>,

    /// Write the table as Markdown to this file (`-` = stdout).
    #[arg(long, value_name = "FILE", value_parser = Destination::parse)]
    pub export_markdown: Option<Destination>,

    /// Do not read the window (accepted fps only): what the observer costs the terminal is the
    /// difference to a run with it.
    #[arg(long, help_heading = "Advanced")]
    pub no_observer: bool,
}

/// The validated plan: what runs, in which order.
#[derive(Debug)]
struct Plan {
    terminals: Vec<Terminal>,
    modes: Vec<Subject>,
    syncs: Vec<bool>,
    size: (u16, u16),
    duration: Duration,
    runs: u32,
    fps_cap: Option<f64>,
    scene: flushlab_core::scene::Scene,
    observe: bool,
    /// An export goes to stdout: the table then goes to stderr.
    stdout_taken: bool,
}

impl PaintArgs {
    fn exports(&self) -> Vec<&Destination> {
        [
            &self.export_json,
            &self.export_csv,
            &self.export_markdown,
            &self.plot,
        ]
        .into_iter()
        .flatten()
        .collect()
    }

    /// One destination an output, each one writable (nothing is written yet).
    fn check_exports(&self) -> Result<(), Refusal> {
        if let Some(plot) = &self.plot {
            plot.check_named_for("svg")
                .map_err(|e| format!("--plot {e}"))?;
        }
        let exports = self.exports();
        let flags = "--export-json, --export-csv, --export-markdown, --plot";
        flushlab_core::results::export::distinct_destinations(&exports, flags)?;
        for destination in exports {
            destination
                .check()
                .map_err(|e| format!("cannot write {destination}: {e}"))?;
        }
        Ok(())
    }

    /// The flags as a plan, or the one line that refuses them (before any display or terminal
    /// starts): modes, size, duration, and outputs that can all be written, one each.
    fn plan(&self) -> Result<Plan, Refusal> {
        self.check_exports()?;
        let modes: Vec<Subject> = self.modes.concat();
        if let Some(other) = modes.iter().find(|m| !matches!(m, Subject::Mode(..))) {
            return Err(Refusal::bad_input(format!(
                "--modes: paint measures writer modes (stdout/line, stdout/frame, stderr/raw, …); '{other}' is not one"
            )));
        }
        if let Some(t) = self.terminal.iter().find(|t| t.wayland_only()) {
            return Err(Refusal::bad_input(format!(
                "--terminal {}: it runs on Wayland only, and paint opens terminals on X11 ({}); time its keys with wrap --terminal {}",
                t.name(),
                flushlab_terminals::emulators::Terminal::names(|t| t.on_x11()),
                t.name()
            )));
        }
        if self.size.0 < marker::CELLS || self.size.1 < 2 {
            return Err(Refusal::bad_input(format!(
                "--size {}x{}: paint needs at least {}x2 (the frame marker's cells)",
                self.size.0,
                self.size.1,
                marker::CELLS
            )));
        }
        if self.size.0 > 400 || self.size.1 > 150 {
            return Err(Refusal::bad_input(format!(
                "--size {}x{}: paint opens windows up to 400x150 (its screen is 3840x2160)",
                self.size.0, self.size.1
            )));
        }
        if self.duration.is_zero() || self.duration > Duration::from_secs(600) {
            return Err(Refusal::bad_input(format!(
                "--duration {}: from more than 0 to 600 seconds",
                self.duration.as_secs_f64()
            )));
        }
        let mut syncs = self.sync.clone();
        syncs.dedup();
        let stdout_taken = self.exports().iter().any(|d| d.is_stdout());
        Ok(Plan {
            stdout_taken,
            terminals: self.terminal.clone(),
            modes,
            syncs,
            size: self.size,
            duration: self.duration,
            runs: self.runs,
            fps_cap: self.fps_cap,
            scene: self.scene,
            observe: !self.no_observer,
        })
    }
}

/// `flushlab paint`.
pub fn run(args: PaintArgs) -> anyhow::Result<Outcome> {
    let plan = match args.plan() {
        Ok(plan) => plan,
        Err(refusal) => return Ok(refusal.of("paint").tell()),
    };
    let stdout_taken = plan.stdout_taken;
    let signal = flushlab_terminals::session::watch_termination_signals()?;
    let results = match plan.measure(&signal) {
        Ok(results) => results,
        // Whatever was under way when the signal came stopped with it (its drops).
        Err(_) if signal.load(Ordering::Relaxed) != 0 => {
            return Ok(Outcome::Signal(signal.load(Ordering::Relaxed)));
        }
        Err(e) => return Err(e),
    };
    let table = flushlab_core::results::export::painted_markdown(&results.runs);
    if stdout_taken {
        flushlab_core::outcome::print_aside(table.as_bytes())?;
    } else {
        flushlab_core::outcome::print(table.as_bytes())?;
    }
    if let Some(destination) = &args.export_json {
        destination.write(&serde_json::to_vec_pretty(&results)?)?;
    }
    if let Some(destination) = &args.export_csv {
        destination.write(flushlab_core::results::export::painted_csv(&results.runs).as_bytes())?;
    }
    if let Some(destination) = &args.export_markdown {
        destination.write(table.as_bytes())?;
    }
    if let Some(destination) = &args.plot
        && !results.runs.is_empty()
    {
        destination.write(plot::svg(&results.runs)?.as_bytes())?;
    }
    let failed: Vec<String> = results
        .runs
        .iter()
        .flat_map(|r| {
            r.painted
                .failed_checks
                .iter()
                .map(move |c| format!("{} {}: {c}", r.terminal, r.mode))
        })
        .collect();
    for line in &failed {
        flushlab_core::outcome::complain(&format!("self-check failed: {line}"));
    }
    Ok(match signal.load(Ordering::Relaxed) {
        0 if failed.is_empty() => Outcome::Finished,
        0 => Outcome::Failed,
        n => Outcome::Signal(n),
    })
}

impl Plan {
    fn measure(&self, signal: &AtomicUsize) -> anyhow::Result<PaintResults> {
        let xvfb = Xvfb::start()?;
        let scratch = flushlab_core::files::Scratch::swept("flushlab-paint")?;
        let mut runs = Vec::new();
        'all: for _ in 0..self.runs {
            for &terminal in &self.terminals {
                for mode in &self.modes {
                    for &sync in &self.syncs {
                        if signal.load(Ordering::Relaxed) != 0 {
                            break 'all;
                        }
                        let files = RunFiles::numbered(scratch.path(), runs.len());
                        let what = Cell {
                            terminal,
                            mode,
                            sync,
                        };
                        runs.push(self.once(&xvfb, files, what, signal)?);
                    }
                }
            }
        }
        Ok(PaintResults {
            version: env!("CARGO_PKG_VERSION").to_owned(),
            duration_s: self.duration.as_secs_f64(),
            fps_cap: self.fps_cap,
            runs,
        })
    }

    /// One run: the terminal opened, the run's calibration found, the window watched while the
    /// run writes, then the run's frame log and the reads analysed.
    fn once(
        &self,
        xvfb: &Xvfb,
        files: RunFiles,
        what: Cell<'_>,
        signal: &AtomicUsize,
    ) -> anyhow::Result<PaintRun> {
        let name = what.terminal.name();
        let (command, env) = self.command(&what, &files)?;
        let mut term = xvfb.launch(what.terminal, self.size, &command, &env)?;
        let stopped = || signal.load(Ordering::Relaxed) != 0;
        let observer = window_watch::X11Watcher::connect(&xvfb.display)?;
        let (window, strips) = {
            let exited = std::cell::Cell::new(false);
            let mut gone = || {
                exited.set(term.exited());
                stopped() || exited.get()
            };
            let startup = Duration::from_secs(30);
            // What did not happen, and why: the terminal ended, or the wait did.
            let ended = |did: &str, done: &str| match exited.get() {
                true => format!("{name} exited before it {did}"),
                false => format!("{name} has not {done} in {} s", startup.as_secs()),
            };
            let window = window_watch::wait_for(startup, &mut gone, || observer.terminal_window())?
                .with_context(|| ended("opened a window", "opened a window"))?;
            let strips = window_watch::wait_for(startup, &mut gone, || observer.calibrate(window))?
                .with_context(|| {
                    ended(
                        "showed the calibration pattern",
                        "shown the calibration pattern (does it draw 24-bit colour?)",
                    )
                })?;
            (window, strips)
        };
        let watch = if self.observe {
            Some(observer.watch(window)?)
        } else {
            None
        };
        let cpu_before = cpu_seconds();
        let wall = std::time::Instant::now();
        flushlab_core::files::write_atomically(&probe::go_file(&files.log), b"")?;
        let limit = self.duration + Duration::from_secs(30);
        let reads = match &watch {
            Some(watch) => watch.reads(&strips, || {
                stopped() || term.exited() || wall.elapsed() > limit
            })?,
            None => {
                term.wait(limit);
                Vec::new()
            }
        };
        let observer_cpu_share =
            (cpu_seconds() - cpu_before) / wall.elapsed().as_secs_f64().max(1e-9);
        drop(watch);
        if stopped() {
            bail!("stopped");
        }
        if !term.wait(Duration::from_secs(5)) {
            bail!("{name} did not close after the run");
        }
        let times = self.collect(name, &files)?;
        let mut painted = analysis::analyse(&times, &reads);
        if !self.observe {
            // Nothing was read: no figure about paints, and no warning that none was seen.
            painted.warnings.clear();
        }
        Ok(PaintRun {
            terminal: name.to_owned(),
            mode: what.mode.clone(),
            sync: what.sync,
            cols: self.size.0,
            rows: self.size.1,
            observed: self.observe,
            observer_cpu_share,
            painted,
        })
    }

    /// The command the terminal runs (flushlab's headless run with its frame log), and its
    /// environment.
    fn command(
        &self,
        what: &Cell<'_>,
        files: &RunFiles,
    ) -> anyhow::Result<(Vec<OsString>, Environment)> {
        let Subject::Mode(stream, buffering) = *what.mode else {
            bail!("paint measures writer modes, not {}", what.mode);
        };
        let exe = std::env::current_exe().context("finding flushlab's own binary")?;
        let command: Vec<OsString> = vec![
            exe.into(),
            "--duration".into(),
            format!("{}", self.duration.as_secs_f64()).into(),
            "--paint-log".into(),
            files.log.clone().into(),
            "--export-json".into(),
            files.report.clone().into(),
        ];
        let mut env = vec![
            ("STREAM".to_owned(), stream.name().to_owned()),
            ("BUFFERING".to_owned(), buffering.name().to_owned()),
            (
                "SYNC".to_owned(),
                if what.sync { "1" } else { "0" }.to_owned(),
            ),
            ("SCENE".to_owned(), self.scene.name().to_owned()),
            ("HUD".to_owned(), "compact".to_owned()),
        ];
        if let Some(cap) = self.fps_cap {
            env.push(("FPS_CAP".to_owned(), cap.to_string()));
        }
        Ok((command, env))
    }

    /// The run's frame times, once its report says it drew at the size asked.
    fn collect(&self, name: &str, files: &RunFiles) -> anyhow::Result<Vec<probe::FrameTime>> {
        let report = flushlab_core::files::read_input(
            &files.report,
            flushlab_core::files::InputKind::RunReport,
        )
        .with_context(|| format!("the run in {name} wrote no report"))?;
        let size: RunSize = flushlab_core::results::from_sent_json(&report)
            .with_context(|| format!("the run in {name} wrote a bad report"))?;
        if (size.cols, size.rows) != self.size {
            bail!(
                "{name} opened at {}x{}, not {}x{}",
                size.cols,
                size.rows,
                self.size.0,
                self.size.1
            );
        }
        probe::read_log(&files.log).with_context(|| format!("the run in {name} wrote no frame log"))
    }
}

/// Variables set for the run in the terminal (the others of the run's are removed).
type Environment = Vec<(String, String)>;

/// What one run measures: a terminal, a mode, sync on or off.
struct Cell<'a> {
    terminal: Terminal,
    mode: &'a Subject,
    sync: bool,
}

/// Where one run's frame log and report go, in the scratch directory.
struct RunFiles {
    log: std::path::PathBuf,
    report: std::path::PathBuf,
}

impl RunFiles {
    fn numbered(scratch: &std::path::Path, n: usize) -> RunFiles {
        RunFiles {
            log: scratch.join(format!("frames-{n}.log")),
            report: scratch.join(format!("report-{n}.json")),
        }
    }
}

/// The part of the run's report paint reads: the size the run drew at.
#[derive(Deserialize)]
struct RunSize {
    cols: u16,
    rows: u16,
}

fn cpu_seconds() -> f64 {
    let (user, system) = flushlab_core::sys::cpu_time(flushlab_core::sys::Usage::Process);
    (user + system).as_secs_f64()
}
