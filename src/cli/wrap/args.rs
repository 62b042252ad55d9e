//! wrap's flags as clap parses them (`WrapArgs`), and the flags' own types. Only lower.rs reads
//! them: it lowers them once into the plan every part of wrap takes its settings from.

use std::ffi::OsString;
use std::time::Duration;

use clap::Args;

use crate::painting::paint_arg::Paint;
use flushlab_core::files::Destination;
use flushlab_core::keyscript::KeyScript;
use flushlab_core::results::conditions::ReaderModel;
use flushlab_core::units::{parse_duration, parse_size};
use flushlab_wrap::observers::choice::ObserverArg;
use flushlab_wrap::observers::fix::Fix;

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
    #[arg(long, value_parser = flushlab_core::results::conditions::READERS, hide_possible_values = true, default_value = "drain")]
    pub reader: ReaderModel,

    /// How the terminal model paints what CMD wrote, for each key's flashes, tears and
    /// scrollback churn: eager (at every read), vsync:HZ or delay:LOWER-UPPER (ms), then
    /// ,sync=none|csi|dcs|csi+dcs (the synchronized-output forms it honours) and ,hold=MS
    /// (how long it holds a block); a terminal's name (xterm, kitty…): as that terminal
    /// paints; `off`: no model
    #[arg(long, value_name = "POLICY", value_parser = Paint::parse, default_value = "eager")]
    pub paint: Paint,

    /// With `--terminal`: a camera keeps the window's pixels for each key's flashes and tears
    /// (flushlab's own X server: read 250 times a second while it changes; Wayland: the
    /// compositor's copy at each change; xterm.js: its DOM renderer's rows at each render;
    /// `off`: no camera, nothing it costs)
    #[arg(long, value_name = "on|off", value_parser = flushlab_core::units::parse_switch, default_value = "on", action = clap::ArgAction::Set, requires = "terminal")]
    pub camera: bool,

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

    /// Also draw one key's visible states in order, each with its time on screen, between the
    /// screen before the key and after it (the key whose flash stayed longest): the camera's
    /// pixels in a terminal, the model's cells headless (`.svg`, labelled; `.png`, pictures
    /// only; `-` = stdout, SVG)
    #[arg(long, value_name = "FILE.svg|FILE.png", value_parser = Destination::parse, conflicts_with_all = ["compare", "against"])]
    pub filmstrip: Option<Destination>,

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
    /// `--against` (each runs both builds, ABBA): a fixed count, looked at once [default:
    /// until the interval decides, within --max-rounds and --max-time]
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..=1000))]
    pub rounds: Option<u32>,

    /// `--against`: at most this many rounds until the interval decides; it looks after rounds
    /// 6, 10, 16, 24, 34 and 46 below it, and at it
    #[arg(long, value_parser = clap::value_parser!(u32).range(6..=1000), default_value = "60", conflicts_with = "rounds", requires = "against")]
    pub max_rounds: u32,

    /// `--against`: at most this many seconds of rounds until the interval decides (the round
    /// that would run past it is the last look)
    #[arg(long, value_parser = parse_duration, default_value = "240", value_name = "SECONDS", conflicts_with = "rounds", requires = "against")]
    pub max_time: Duration,

    /// Run CMD (NEW) against another build (OLD), its words as a shell splits them (`'./old
    /// --flag'`, `"sh -c '…'"`), on the same keys in alternating rounds (ABBA, after a warm-up
    /// round that is dropped): key→frame p50 NEW over OLD with a 95% interval from resampling
    /// the rounds, and a verdict — slower (exit 4), faster or the same (0), inconclusive (5).
    /// `--against run.json`: a run stored with `--export-json` as OLD (advice: exit 0)
    #[arg(long, value_name = "'OLD CMD ARGS'", value_parser = OldBuild::parse, conflicts_with_all = ["compare", "try_fix", "profile", "trace"])]
    pub against: Option<OldBuild>,

    /// `--against`: a change within this share of OLD is no change (`5%`, `0.05`)
    #[arg(long, value_parser = flushlab_core::units::parse_share, default_value = "5%", value_name = "SHARE")]
    pub threshold: f64,

    /// `--against`: also write the verdict as Markdown (a CI job's summary page; `-` = stdout)
    #[arg(long, value_name = "FILE.md", value_parser = Destination::parse, requires = "against")]
    pub export_markdown: Option<Destination>,

    /// Type these keys into CMD, headless, once it is ready, and report the time from each key
    /// to its frame: literal text, `<Down>`, `<PageDown>`, `<Enter>`, `<Esc>`, `<C-x>`, `<M-x>`, `<F1>`..,
    /// repeats and pacing (`j*200@15ms`), `<wait 500ms>`, `<paste TEXT>` (docs/wrap/keys.md). Without
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
    /// stage: xterm, st, alacritty, kitty, urxvt, mlterm; foot, on Wayland (`--wayland`); and
    /// xterm.js (VS Code's terminal) in headless Chromium: xtermjs (its DOM renderer),
    /// xtermjs:webgl
    #[arg(long, value_name = "NAME", value_parser = flushlab_terminals::emulators::Terminal::parse)]
    pub terminal: Option<flushlab_terminals::emulators::Terminal>,

    /// With `--terminal`: open the terminal on this X display (`:0`, your desktop: watch it
    /// while it is typed into) instead of on flushlab's own Xvfb
    #[arg(long, value_name = "DISPLAY", requires = "terminal", value_parser = parse_display, conflicts_with = "wayland")]
    pub display: Option<String>,

    /// With `--terminal`: run it on flushlab's own headless Wayland compositor (sway, software
    /// rendering), its keys typed through the virtual-keyboard protocol and its region of the
    /// output copied at each change (wlr-screencopy); foot implies it
    #[arg(long, requires = "terminal")]
    pub wayland: bool,

    /// With `--terminal`: one of the terminal's own settings, KEY=VALUE (repeatable): foot's,
    /// kitty's and alacritty's `-o`, xterm's and urxvt's X resource; e.g.
    /// `tweak.delayed-render-lower=0` (foot's render delay off), `repaint_delay=0` (kitty's).
    /// How it renders is part of every pixel figure: the report says the settings given
    #[arg(long = "terminal-option", value_name = "KEY=VALUE", requires = "terminal", value_parser = flushlab_terminals::terminal_option::TerminalOption::parse)]
    pub terminal_options: Vec<flushlab_terminals::terminal_option::TerminalOption>,

    /// With `--wayland`: the output's refresh rate, Hz (a key's pixels wait for its next
    /// commit) [default: 60]
    #[arg(long, value_name = "HZ", requires = "terminal", value_parser = clap::value_parser!(u32).range(1..=1000))]
    pub refresh: Option<u32>,

    /// With `--terminal`: run it on this running sway session (your desktop: watch it while it
    /// is typed into) instead of on flushlab's own compositor: the display's socket as
    /// `WAYLAND_DISPLAY` names it (in `XDG_RUNTIME_DIR`) or its path; sway's IPC socket from
    /// `SWAYSOCK`
    #[arg(long, value_name = "NAME", requires = "terminal", conflicts_with_all = ["display", "refresh"])]
    pub wayland_display: Option<std::path::PathBuf>,

    /// Do not look inside CMD (frames and counts seen from outside only): `--observer none`
    #[arg(long, conflicts_with = "observer")]
    pub no_observer: bool,

    /// Under sudo, run CMD as root too. Without it, CMD runs as the person who ran sudo (their
    /// uid, gid, groups and home, no capability; the pty theirs), and wrap becomes them once its
    /// observer is attached: sudo is for the kernel observer, not for CMD
    #[arg(long)]
    pub as_root: bool,

    /// How wrap looks inside CMD: `kernel` (eBPF programs on the system calls of CMD's whole
    /// tree: any program, never stopped; root, or CAP_BPF and CAP_PERFMON), `preload` (a shared
    /// object the loader puts in every dynamic program: cheap), `ptrace` (a tracer that stops
    /// CMD at the terminal's writes, its reads and its waits: any program, Go and static ones
    /// included, at a cost each run states), `both` (the preload, and the tracer for key reads
    /// made with raw system calls), `none`; `auto` takes the kernel where eBPF is allowed, else
    /// the preload where it loads, with the tracer for key reads where the program makes them
    /// raw (a Rust program linking rustix), and the tracer alone where no preload loads (a
    /// static or Go executable)
    #[arg(long, value_enum, value_name = "HOW", default_value = "auto")]
    pub observer: ObserverArg,

    /// Run CMD at the far end of these layers, in order from the near end: `ssh` (CMD on the far
    /// side of an ssh connection to an sshd of wrap's own), `tmux` (CMD in a tmux session whose
    /// server redraws the client's terminal), `mosh` (mosh-client near, mosh-server far, started
    /// through ssh); chains: ssh,tmux and mosh,tmux. Keys are typed into the near end, and each
    /// key is timed end to end on one clock: uplink, CMD's own stages, downlink, and the pieces
    /// its frame reaches the near end in. The link runs between two network namespaces of
    /// wrap's own (root). With `--terminal`: the near end runs in that terminal, typed into,
    /// its window timed and filmed
    #[arg(long, value_name = "LAYERS", value_enum, value_delimiter = ',', conflicts_with_all = ["compare", "try_fix", "profile", "no_observer"])]
    pub via: Vec<flushlab_wrap::via::Layer>,

    /// `--via`: the link's round-trip time, in milliseconds (half each way, as TCP itself sees it)
    #[arg(long, value_name = "MS", value_parser = flushlab_wrap::via::parse_rtt, default_value = "0", requires = "via")]
    pub rtt: Duration,

    /// `--via`: the link's rate in bytes a second each way, paced with a bounded queue
    /// [default: unlimited]
    #[arg(long, value_name = "BYTES/s", value_parser = flushlab_wrap::via::parse_rate, requires = "via")]
    pub rate: Option<u64>,

    /// `--via`: the share of packets the link drops, each way (0 to 0.5, or a percentage)
    #[arg(long, value_name = "SHARE", value_parser = flushlab_wrap::via::parse_loss, default_value = "0", requires = "via")]
    pub loss: f64,

    /// `--via`: no relay: ssh (or mosh) over the loopback of one network namespace of wrap's
    /// own, to set beside `--rtt 0` (what the relay itself adds)
    #[arg(long, requires = "via", conflicts_with_all = ["rate"])]
    pub loopback: bool,

    /// End (as on SIGTERM, CMD's whole tree with it) when this process is no longer our
    /// parent: a bench's `--command` row must not outlive a bench that was killed.
    #[arg(long, hide = true, value_name = "PID")]
    pub exit_with_parent: Option<i32>,

    /// The program to run, and its arguments (after `--`). Before CMD (or `--`), a word that
    /// starts with `-` is one of wrap's flags: a misspelt flag is an error, never a command.
    #[arg(required = true, trailing_var_arg = true, value_name = "CMD")]
    pub command: Vec<OsString>,
}

/// `--display`: an X display name (`[host]:N[.S]`), refused with the form it takes.
fn parse_display(text: &str) -> Result<String, String> {
    let (_, number) = text.rsplit_once(':').ok_or_else(|| {
        format!(
            "'{}' is no X display: [host]:N[.S], as :0",
            flushlab_core::units::printable(text)
        )
    })?;
    let number = number.split_once('.').map_or(number, |(n, _)| n);
    if number.is_empty()
        || !number.bytes().all(|b| b.is_ascii_digit())
        || text.chars().any(char::is_control)
    {
        return Err(format!(
            "'{}' is no X display: [host]:N[.S], as :0",
            flushlab_core::units::printable(text)
        ));
    }
    Ok(text.to_owned())
}

/// `--against`: the old build's command, its words as a shell splits them.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OldBuild(pub Vec<String>);

impl OldBuild {
    pub fn parse(text: &str) -> Result<OldBuild, String> {
        flushlab_core::units::parse_words(text).map(OldBuild)
    }
}
