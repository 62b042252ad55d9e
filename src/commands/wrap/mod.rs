//! `flushlab wrap -- CMD`: any program's terminal output measured the way flushlab measures its
//! own modes. CMD runs in a new pseudo-terminal; what it writes is read from the master side
//! (by a reader model when headless, copied to the user's terminal when interactive). Its frames
//! are found from what it draws ([`finder`](crate::detect::finder), on the cursor model of
//! [`screen`](crate::detect::screen)), its write(2)
//! calls and its waits on the terminal from its whole process tree ([`tree`]), and a diagnosis
//! says what to change in its own language ([`mod@diagnose`]); [`mod@report`] holds the results.

pub mod against;
pub mod compare;
pub mod diagnose;
mod in_terminal;
pub mod inside;
mod keys;
mod own_writes;
pub mod pixel_compare;
pub mod pixel_report;
mod profiling;
mod reading;
pub mod report;
mod running;
mod terminal;
pub mod tree;
mod user_terminal;
mod watch;

use std::ffi::OsString;
use std::io;
use std::sync::atomic::Ordering;
use std::time::Duration;

use anyhow::Context;
use clap::Args;

use self::diagnose::{Evidence, diagnose};
use self::inside::{Fix, InsideReport};
use self::keys::Keys;
use self::report::{WrapReport, WriteScope};
use self::running::{How, Measured, measure};
use crate::accounting::IoCounters;
use crate::detect::timeline::Timeline;
use crate::figures::{PerSecond, WrapRun};
use crate::files::Destination;
use crate::keyscript::KeyScript;
use crate::outcome::{Outcome, Refusal, complain};
use crate::results::conditions::ReaderModel;
use crate::results::waterfall::{Panel, waterfall_svg};
use crate::units::{parse_duration, parse_size};

const WRAPARGS_EXAMPLES: &str = "\
Examples:
  flushlab wrap -- htop                     interactive: the program runs as usual, measured
  flushlab wrap --duration 3 -- cmatrix     headless, in a pty of its own, for 3 s
  flushlab wrap --duration 3 --export-json - -- ls -lR /usr > r.json
  flushlab wrap --keys j*100@20ms -- less /etc/services   each key's time to its frame
  flushlab wrap --compare frame --keys j*50@30ms -- ./my-tui   what buffering buys a key";

#[derive(Clone, Debug, Args)]
#[command(after_help = WRAPARGS_EXAMPLES)]
pub struct WrapArgs {
    /// Run CMD headless for this many seconds, then end it (SIGTERM to its process group,
    /// SIGKILL 2 s later) [default: until CMD exits; headless when stdout is not a terminal]
    #[arg(long, value_parser = parse_duration)]
    pub duration: Option<Duration>,

    /// The pseudo-terminal's size when headless, COLSxROWS (interactive: this terminal's)
    #[arg(long, value_parser = parse_size, default_value = "200x60")]
    pub size: (u16, u16),

    /// How the headless pty is read: drain, vt, throttle:RATE (a slow terminal)
    #[arg(long, value_parser = crate::results::conditions::READERS, hide_possible_values = true, default_value = "drain")]
    pub reader: ReaderModel,

    /// A pause at least this long (seconds) before each frame confirms frames found from the
    /// cursor (pauses alone never make frames)
    #[arg(long, value_parser = parse_duration, default_value = "0.002")]
    pub frame_gap: Duration,

    /// Also write the results as JSON to this file (`-` = stdout, the summary then on stderr)
    #[arg(long = "export-json", alias = "report", value_name = "FILE", value_parser = Destination::parse)]
    pub report: Option<Destination>,

    /// Also write the run's timeline as Chrome trace-event JSON (Perfetto's UI,
    /// chrome://tracing, the Firefox Profiler open it): keys and their stages, CMD's threads'
    /// frames, waits and reads, wrap's reads of the pty (`-` = stdout)
    #[arg(long, value_name = "FILE", value_parser = Destination::parse, conflicts_with = "compare")]
    pub trace: Option<Destination>,

    /// Also draw the keys as a waterfall (SVG): a row a key, its stages as bars on one time
    /// axis, key→frame p50 and p95, frames nobody asked for as ticks; with `--compare`, as is
    /// and tried side by side (`-` = stdout)
    #[arg(long, value_name = "FILE.svg", value_parser = Destination::parse)]
    pub plot: Option<Destination>,

    /// Also record CMD with samply into this file (Firefox Profiler format; samply's symbols
    /// beside it, FILE.syms.json), each key's span and stages as markers on the thread that drew
    /// it. Needs samply and perf events (`perf_event_paranoid` <= 1): without them, said, and the
    /// run is measured without a profile
    #[arg(long, value_name = "FILE.json.gz", conflicts_with = "compare")]
    pub profile: Option<std::path::PathBuf>,

    /// Try a fix on CMD as it is, without changing it: `frame` holds each frame's terminal
    /// writes until CMD next waits, then writes them at once (the same bytes, in order)
    #[arg(long = "try", value_enum, value_name = "FIX", conflicts_with_all = ["compare", "no_observer"])]
    pub try_fix: Option<Fix>,

    /// Run CMD as it is and with the fix tried, alternating, headless, rounds of equal duration
    /// and size, and print one table with the speedup
    #[arg(long, value_enum, value_name = "FIX", conflicts_with = "no_observer")]
    pub compare: Option<Fix>,

    /// Rounds of `--compare` (each runs CMD as it is, then tried) [default: 3] or of
    /// `--against` (each runs both builds, ABBA) [default: 10: the interval resamples rounds]
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..=50))]
    pub rounds: Option<u32>,

    /// Run CMD (NEW) against another build (OLD), its words as a shell splits them (`'./old
    /// --flag'`, `"sh -c '…'"`), on the same keys in alternating rounds (ABBA, after a warm-up
    /// round that is dropped): key→frame p50 NEW over OLD with a 95% interval from resampling
    /// the rounds, and a verdict — slower (exit 4), faster or the same (0), inconclusive (5).
    /// `--against run.json`: a run stored with `--export-json` as OLD (advice: exit 0)
    #[arg(long, value_name = "'OLD CMD ARGS'", value_parser = against::OldBuild::parse, conflicts_with_all = ["compare", "try_fix", "profile", "trace"])]
    pub against: Option<against::OldBuild>,

    /// `--against`: a change within this share of OLD is no change (`5%`, `0.05`)
    #[arg(long, value_parser = crate::units::parse_share, default_value = "5%", value_name = "SHARE")]
    pub threshold: f64,

    /// `--against`: also write the verdict as Markdown (a CI job's summary page; `-` = stdout)
    #[arg(long, value_name = "FILE.md", value_parser = Destination::parse, requires = "against")]
    pub export_markdown: Option<Destination>,

    /// Type these keys into CMD, headless, once it is ready, and report the time from each key
    /// to its frame: literal text, `<Down>`, `<PageDown>`, `<Enter>`, `<Esc>`, `<C-x>`, `<M-x>`, `<F1>`..,
    /// repeats and pacing (`j*200@15ms`), `<wait 500ms>`, `<paste TEXT>` (docs/wrap.md). Without
    /// `--duration` the run ends once the keys are done and CMD has settled
    #[arg(long, value_name = "SCRIPT", value_parser = KeyScript::parse, conflicts_with = "keys_file")]
    pub keys: Option<KeyScript>,

    /// `--keys`, the script read from this file (at most 1 MiB)
    #[arg(long, value_name = "FILE")]
    pub keys_file: Option<std::path::PathBuf>,

    /// Start the keys this many seconds after CMD started [default: once CMD is idle, every
    /// thread of it asleep]
    #[arg(long, value_parser = parse_duration, value_name = "SECONDS")]
    pub keys_after: Option<Duration>,

    /// Run CMD in this terminal emulator on flushlab's own X server (Xvfb) instead of a pty
    /// of wrap's: the keys are typed into its window as key events (XTEST) and its window's
    /// changes are watched (DAMAGE), so each key gets key→first and key→last pixel and a paint
    /// stage: xterm, st, alacritty, kitty, urxvt, mlterm
    #[arg(long, value_enum, value_name = "NAME", hide_possible_values = true)]
    pub terminal: Option<crate::painting::display::Terminal>,

    /// With `--terminal`: open the terminal on this X display (`:0`, your desktop: watch it
    /// while it is typed into) instead of on flushlab's own Xvfb
    #[arg(long, value_name = "DISPLAY", requires = "terminal", value_parser = parse_display)]
    pub display: Option<String>,

    /// Do not look inside CMD (frames and counts seen from outside only): `--observer none`
    #[arg(long, conflicts_with = "observer")]
    pub no_observer: bool,

    /// How wrap looks inside CMD: `preload` (a shared object the loader puts in every dynamic
    /// program: cheap), `ptrace` (a tracer that stops CMD at the terminal's writes, its reads
    /// and its waits: any program, Go and static ones included, at a cost each run states),
    /// `both` (the preload, and the tracer for key reads made with raw system calls), `none`;
    /// `auto` takes the preload where it loads, with the tracer for key reads where the program
    /// makes them raw (a Rust program linking rustix), and the tracer alone where no preload
    /// loads (a static or Go executable)
    #[arg(long, value_enum, value_name = "HOW", default_value = "auto")]
    pub observer: inside::ObserverArg,

    /// End (as on SIGTERM, CMD's whole tree with it) when this process is no longer our
    /// parent: a bench's `--command` row must not outlive a bench that was killed.
    #[arg(long, hide = true, value_name = "PID")]
    pub exit_with_parent: Option<i32>,

    /// The program to run, and its arguments (after `--`). Before CMD (or `--`), a word that
    /// starts with `-` is one of wrap's flags: a misspelt flag is an error, never a command.
    #[arg(required = true, trailing_var_arg = true, value_name = "CMD")]
    pub command: Vec<OsString>,
}

impl WrapArgs {
    /// The files (or stdout) wrap writes, each with its flag.
    fn outputs(&self) -> impl Iterator<Item = (&'static str, &Destination)> {
        [
            ("--export-json", &self.report),
            ("--trace", &self.trace),
            ("--plot", &self.plot),
            ("--export-markdown", &self.export_markdown),
        ]
        .into_iter()
        .filter_map(|(flag, d)| Some((flag, d.as_ref()?)))
    }

    /// CMD as the user gave it, word by word (for the JSON).
    pub fn command_words(&self) -> Vec<String> {
        self.command
            .iter()
            .map(|a| a.to_string_lossy().into_owned())
            .collect()
    }

    /// CMD as the user gave it, for one line.
    pub fn command_line(&self) -> String {
        crate::units::one_line(&self.command_words().join(" "))
    }

    /// Rounds, as `--rounds` says or the default of what runs them.
    pub fn rounds(&self) -> u32 {
        self.rounds
            .unwrap_or(if self.against.is_some() { 10 } else { 3 })
    }

    /// How this run looks inside CMD (`program`, found on PATH), decided from the flags and
    /// the executable's kind: `None`, from outside only.
    pub fn observer(&self, program: &std::path::Path) -> Option<inside::Way> {
        if self.no_observer {
            return None;
        }
        // A setuid program is never traced by choice: under the filter it would lose its
        // privilege (auto takes the preload, which its loader refuses: seen from outside, said).
        if self.observer == inside::ObserverArg::Auto && crate::tracer::image::is_setuid(program) {
            return Some(inside::Way::Preload);
        }
        // samply attaches to the process wrap starts: with the tracer in CMD's place it would
        // record the tracer. A profile keeps the preload (auto) where it loads.
        let image = crate::tracer::image::image_of(program);
        if self.profile.is_some()
            && self.observer == inside::ObserverArg::Auto
            && image.preload_sees()
        {
            return Some(inside::Way::Preload);
        }
        inside::Way::choose(self.observer, image, || {
            crate::tracer::image::reads_keys_raw(program)
        })
    }
}

/// `--display`: an X display name (`[host]:N[.S]`), refused with the form it takes.
fn parse_display(text: &str) -> Result<String, String> {
    let (_, number) = text.rsplit_once(':').ok_or_else(|| {
        format!(
            "'{}' is no X display: [host]:N[.S], as :0",
            crate::units::printable(text)
        )
    })?;
    let number = number.split_once('.').map_or(number, |(n, _)| n);
    if number.is_empty()
        || !number.bytes().all(|b| b.is_ascii_digit())
        || text.chars().any(char::is_control)
    {
        return Err(format!(
            "'{}' is no X display: [host]:N[.S], as :0",
            crate::units::printable(text)
        ));
    }
    Ok(text.to_owned())
}

/// What a wrap does, its flags checked: CMD's program found on `PATH`, and whether CMD runs
/// interactive (no duration, stdout a terminal) or headless.
struct WrapPlan {
    program: std::path::PathBuf,
    interactive: bool,
    keys: Option<Keys>,
    /// `--profile`: samply, and the file it writes.
    profile: Option<(std::path::PathBuf, std::path::PathBuf)>,
}

/// The wrap's plan, or why its flags are refused (a CMD that is not a command, a report that
/// cannot be written) before anything starts.
fn plan(args: &WrapArgs) -> Result<WrapPlan, Refusal> {
    let program = &args.command[0];
    let shown = crate::units::printable(&program.to_string_lossy());
    let path = std::path::Path::new(program);
    if program.to_string_lossy().contains('/') && path.is_file() && !path.is_dir() {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(path).map_or(0, |m| m.permissions().mode());
        if mode & 0o111 == 0 {
            return Err(Refusal {
                outcome: Outcome::NotExecutable,
                why: format!(
                    "wrap: '{shown}': permission denied (not executable: chmod +x, or run it through its interpreter)"
                ),
            });
        }
    }
    let Some(resolved) = crate::files::find_program(program) else {
        return Err(Refusal {
            outcome: Outcome::NotFound,
            why: format!(
                "wrap: '{}' is not a command (not found, or not executable)",
                crate::units::printable(&program.to_string_lossy())
            ),
        });
    };
    for (flag, destination) in args.outputs() {
        destination
            .check()
            .map_err(|e| format!("wrap: {flag} '{destination}': {e}"))?;
    }
    if let Some(plot) = &args.plot {
        plot.check_named_for("svg")
            .map_err(|e| format!("wrap: --plot {e}"))?;
    }
    let destinations: Vec<&Destination> = args.outputs().map(|(_, d)| d).collect();
    crate::results::export::distinct_destinations(
        &destinations,
        "--export-json, --trace, --plot, --export-markdown",
    )
    .map_err(|e| format!("wrap: {e}"))?;
    let script = match (&args.keys, &args.keys_file) {
        (Some(script), _) => Some(script.clone()),
        (None, Some(path)) => Some(read_keys_file(path)?),
        (None, None) => None,
    };
    in_terminal::check(args, script.is_some())?;
    inside::check(args, &resolved)?;
    against::check(args, script.is_some())?;
    if args.keys_after.is_some() && script.is_none() {
        return Err("wrap: --keys-after needs --keys or --keys-file"
            .to_owned()
            .into());
    }
    let interactive = args.duration.is_none()
        && script.is_none()
        && std::io::IsTerminal::is_terminal(&io::stdout());
    if args.plot.is_some() && script.is_none() && !interactive {
        return Err(
            "wrap: --plot draws keys: give --keys or --keys-file (or type them, interactive)"
                .to_owned()
                .into(),
        );
    }
    let profile = match &args.profile {
        Some(path) => profile_plan(path)?,
        None => None,
    };
    let keys = script.map(|script| Keys {
        script,
        after: args.keys_after,
    });
    Ok(WrapPlan {
        program: resolved,
        // Keys are typed by wrap, so a run with keys is headless.
        interactive,
        keys,
        profile,
    })
}

/// `--profile FILE`: a file that can be written (refused before anything starts), and samply
/// ready to record; where samply or the kernel's perf events are missing, that is said in one
/// line with the fix and the run goes on without a profile.
fn profile_plan(
    path: &std::path::Path,
) -> Result<Option<(std::path::PathBuf, std::path::PathBuf)>, Refusal> {
    let shown = crate::units::printable(&path.to_string_lossy());
    if path.as_os_str() == "-" {
        return Err("wrap: --profile '-': samply writes a file: name one"
            .to_owned()
            .into());
    }
    let symbols = crate::files::sibling(path, ".syms.json", true);
    for file in [path, &symbols] {
        crate::files::check_writable(file).map_err(|e| {
            let file = crate::units::printable(&file.to_string_lossy());
            format!("wrap: --profile '{shown}': cannot write '{file}': {e}")
        })?;
    }
    match profiling::samply() {
        Ok(samply) => Ok(Some((samply, path.to_owned()))),
        Err(why) => {
            complain(&format!(
                "wrap: --profile '{shown}': {why}; measuring without a profile"
            ));
            Ok(None)
        }
    }
}

/// `--keys-file`: the script, or a refusal naming the file and what is wrong with it. Read as
/// every file others send is (`files::read_input`): a FIFO or a device is refused at once, never
/// waited on, and 1 MiB at most.
fn read_keys_file(path: &std::path::Path) -> Result<KeyScript, Refusal> {
    use crate::files::{InputKind, read_input};
    let shown = crate::units::printable(&path.to_string_lossy());
    let bytes = read_input(path, InputKind::KeyScript)
        .map_err(|e| format!("wrap: --keys-file '{shown}': {e}"))?;
    let text = String::from_utf8(bytes)
        .map_err(|_| format!("wrap: --keys-file '{shown}': not UTF-8 text"))?;
    KeyScript::parse(&text).map_err(|e| format!("wrap: --keys-file '{shown}': {e}").into())
}

pub fn run(args: WrapArgs) -> anyhow::Result<Outcome> {
    let WrapPlan {
        program: resolved,
        interactive,
        keys,
        profile,
    } = match plan(&args) {
        Ok(plan) => plan,
        Err(refusal) => return Ok(refusal.tell()),
    };
    let signal = crate::terminal_session::watch_termination_signals()?;
    if let Some(parent) = args.exit_with_parent {
        crate::terminal_session::end_with_parent(parent)?;
    }
    if let (Some(fix), Some(terminal), Some(keys)) = (args.compare, args.terminal, &keys) {
        return pixel_compare::run(&args, &resolved, (fix, terminal, keys), &signal);
    }
    if let Some(fix) = args.compare {
        return compare::run(&args, &resolved, fix, keys.as_ref(), &signal);
    }
    if let (Some(old), Some(keys)) = (&args.against, &keys) {
        return against::run(&args, (&old.0, &resolved), keys, &signal);
    }
    if let (Some(terminal), Some(keys)) = (args.terminal, &keys) {
        return in_a_terminal(&args, &resolved, terminal, keys, &signal);
    }
    let how = How {
        keys: keys.as_ref(),
        interactive,
        fix: args.try_fix,
        duration: args.duration,
        profile: profile.as_ref(),
    };
    let (mut measured, ended_by_wrap) = measure(&args, &resolved, how, &signal)?;
    let stalled = measured.terminal_stalled;
    let timeline = std::mem::take(&mut measured.timeline);
    let recorded = measured.recorded.take();
    let report = report(&args, measured, &timeline);
    // The file first: a summary written to a terminal that stopped reading would wait forever.
    if let Some(destination) = &args.report {
        destination
            .write_json(&report)
            .with_context(|| format!("writing the report to {destination}"))?;
    }
    write_trace(
        &args,
        &timeline,
        report.keys.as_ref().map(|k| &k.latencies),
        &[],
    )?;
    if let (Some(destination), Some(keys)) = (&args.plot, &report.keys) {
        let panel = Panel::of(String::new(), &timeline, &keys.latencies);
        draw_keys(
            destination,
            &plot_title(&args.command_line(), &report),
            &[panel],
        )?;
    }
    if !stalled {
        complain(&report.summary());
        if let Some(line) = recorded
            .as_ref()
            .and_then(|r| profile_line(r, args.profile.as_deref()))
        {
            complain(&line);
        }
    }
    let outcome = match signal.load(Ordering::Relaxed) {
        0 if ended_by_wrap => Outcome::Finished,
        0 => Outcome::Exited(report.exit_code.unwrap_or(0)),
        sig => Outcome::Signal(sig),
    };
    Ok(outcome)
}

/// `wrap --terminal NAME`: one run in that terminal, reported, its trace and plot written.
fn in_a_terminal(
    args: &WrapArgs,
    program: &std::path::Path,
    terminal: crate::painting::display::Terminal,
    keys: &Keys,
    signal: &std::sync::atomic::AtomicUsize,
) -> anyhow::Result<Outcome> {
    let run = in_terminal::measure(args, program, (terminal, keys, args.try_fix), signal)?;
    let timeline = run.timeline.clone();
    let report = pixel_report::PixelReport::of(args, run, keys);
    if let Some(destination) = &args.report {
        destination
            .write_json(&report)
            .with_context(|| format!("writing the report to {destination}"))?;
    }
    write_trace(
        args,
        &timeline,
        Some(&report.keys.latencies),
        &report.window_changes_ns,
    )?;
    if let Some(destination) = &args.plot {
        let panel = Panel::of(
            terminal.name().to_owned(),
            &timeline,
            &report.keys.latencies,
        );
        let title = format!(
            "flushlab wrap --terminal {} · {} · {}x{} · {} keys",
            terminal.name(),
            args.command_line(),
            report.cols,
            report.rows,
            report.keys.sent
        );
        draw_keys(destination, &title, &[panel])?;
    }
    complain(&report.summary());
    Ok(match signal.load(Ordering::Relaxed) {
        0 => Outcome::Finished,
        sig => Outcome::Signal(sig),
    })
}

/// `--trace`: the run's timeline (with a terminal's window changes) as trace-event JSON.
fn write_trace(
    args: &WrapArgs,
    timeline: &Timeline,
    keys: Option<&crate::detect::keyed::KeyLatencies>,
    window_changes: &[u64],
) -> anyhow::Result<()> {
    let Some(destination) = &args.trace else {
        return Ok(());
    };
    let trace = crate::results::trace::trace_json(&crate::results::trace::TraceRun {
        timeline,
        keys,
        command: &args.command_line(),
        wrap_pid: std::process::id(),
        window_changes,
    })?;
    destination
        .write(&trace)
        .with_context(|| format!("writing the trace to {destination}"))
}

/// `--plot`: the keys' waterfall written to `destination` (a run without keys to draw is said,
/// and draws nothing).
fn draw_keys(destination: &Destination, title: &str, panels: &[Panel]) -> anyhow::Result<()> {
    match waterfall_svg(title, panels) {
        Ok(svg) => destination
            .write(svg.as_bytes())
            .with_context(|| format!("writing the plot to {destination}")),
        Err(e) => {
            complain(&format!("wrap: --plot '{destination}': {e}; nothing drawn"));
            Ok(())
        }
    }
}

/// What `--profile` gave, in a line.
fn profile_line(recorded: &profiling::Recorded, file: Option<&std::path::Path>) -> Option<String> {
    let file = crate::units::printable(&file?.to_string_lossy());
    Some(if recorded.saved {
        format!(
            "wrap --profile: {file} written by samply, {} key(s) marked on the thread that drew them (`samply load {file}` opens it; `flushlab profile {file}` reads it by key)",
            recorded.markers
        )
    } else {
        format!(
            "wrap: --profile '{file}': samply recorded nothing: {}",
            recorded.said
        )
    })
}

/// A waterfall's title: CMD, the terminal's size, the keys.
fn plot_title(command: &str, report: &WrapReport) -> String {
    let keys = report.keys.as_ref().map_or(0, |k| k.sent);
    format!(
        "flushlab wrap · {command} · {}x{} · {keys} keys",
        report.cols, report.rows
    )
}

// Every field of the report from what was measured, in one place.
#[allow(clippy::too_many_lines)]
fn report(args: &WrapArgs, m: Measured, timeline: &Timeline) -> WrapReport {
    let frames = m.finder.frames();
    // What the kernel counted for CMD's tree, without the observers' own records.
    let io = match (&m.inside, m.io) {
        (Some(inside), Some(io)) => Some(IoCounters {
            write_calls: io.write_calls.saturating_sub(inside.own_writes.write_calls),
            bytes: io.bytes.saturating_sub(inside.own_writes.bytes),
        }),
        (_, io) => io,
    };
    let m = Measured { io, ..m };
    // The observer's counts, where it saw every terminal write, are the terminal's alone; the
    // kernel's are the whole tree's, pipes and files included.
    let inside_io = m.inside.as_ref().and_then(InsideReport::terminal_io);
    let scope = match inside_io {
        Some(_) => WriteScope::Terminal,
        None => WriteScope::of(m.io, m.finder.bytes, m.finder.newlines),
    };
    let counted = inside_io.or(m.io);
    let figures = report::figures(&frames, m.seconds, m.finder.bytes, counted, scope, m.cpu);
    let mut writer = m.tree.writer();
    // A CMD that ended at once leaves wrap's `setsid` the only writer seen: named as CMD.
    if writer.executable.is_empty() || writer.executable.ends_with("/setsid") {
        writer.executable = m.program.clone();
    }
    let trusted = counted.filter(|_| scope == WriteScope::Terminal);
    let keys = m.keys.map(|k| report::KeysReport {
        script: k.script,
        in_script: k.in_script,
        sent: timeline.keys.len() as u64,
        started_after_ms: k.started_after.map(|d| d.as_secs_f64() * 1e3),
        ready_by: k.ready_by,
        unsettled: k.unsettled,
        latencies: crate::detect::keyed::key_latencies(timeline),
    });
    let diagnoses = diagnose(&Evidence {
        writes: trusted,
        frames: &frames,
        writes_per_frame: figures.and_then(|f| f.writes_per_frame),
        writes_per_second: trusted.map(|io| io.write_calls as f64 / m.seconds.max(1e-9)),
        bytes: m.finder.bytes,
        sync_begins: m.finder.sync().begins(),
        sync_pairs: m.finder.sync().pairs(),
        sync_open: m.finder.sync().open(),
        exited_by_itself: m.exit_code.is_some(),
        blocked_share: m.tree.blocked_share(),
        terminal_syncs: m.terminal_syncs,
        writer: &writer,
        cpu_ms_per_frame: figures.and_then(|f| f.cpu_ms_per_frame()),
        cells: u64::from(m.size.0) * u64::from(m.size.1),
        keys: keys.as_ref().map(|k| &k.latencies),
    });
    let per = |x: u64| x as f64 / m.seconds.max(1e-9);
    WrapReport {
        version: env!("CARGO_PKG_VERSION"),
        machine: crate::sys::process::cpu_model(),
        command: args.command_words(),
        cols: m.size.0,
        rows: m.size.1,
        reader: m.reader.to_string(),
        seconds: m.seconds,
        exit_code: m.exit_code,
        last_line: report::last_line(m.finder.tail()),
        run: WrapRun {
            bytes: m.finder.bytes,
            per_second: PerSecond {
                bytes_per_second: per(m.finder.bytes),
                writes_per_second: counted.map(|io| per(io.write_calls)),
            },
            figures,
            peak_rss_kib: crate::sys::peak_rss_kib(crate::sys::Usage::Children),
        },
        tree_write_calls: m.io.map(|io| io.write_calls),
        tree_bytes_written: m.io.map(|io| io.bytes),
        terminal_write_calls: inside_io.map(|io| io.write_calls),
        terminal_bytes_written: inside_io.map(|io| io.bytes),
        write_scope: scope,
        frame_method: frames.method,
        sync_begins: m.finder.sync().begins(),
        sync_ends: m.finder.sync().ends(),
        blocked_share: m.tree.blocked_share(),
        writer,
        diagnoses,
        frame_detection: frames,
        inside: m.inside,
        keys,
        asked: m.exchanges,
        received_digest: format!("{:016x}", m.finder.digest),
    }
}
