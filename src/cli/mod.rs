//! Command-line flags and their environment variables, validated before anything touches the
//! terminal: bad input is a one-line error naming the value and what is allowed, exit code 2.

use clap::{Parser, Subcommand};

use crate::commands::run::RunArgs;
use flushlab_core::accounting::Accounting;

/// A terminal lab that makes the cost of stdout/stderr buffering visible.
///
/// Without --duration, an interactive explorer (press h for the keys). With --duration, a
/// headless run of one mode that prints a summary line to the other stream and exits; that
/// works whatever the stream is: a terminal, a file, a pipe or /dev/null.
#[derive(Debug, Parser)]
#[command(
    name = "flushlab",
    version = VERSION,
    about,
    long_about,
    args_conflicts_with_subcommands = true,
    after_help = EXAMPLES
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Option<Command>,

    #[command(flatten)]
    pub run: RunArgs,
}

const LESSON_EXAMPLES: &str = "\
Examples:
  flushlab lesson              from the first step
  flushlab lesson --step 4     from BufWriter
  flushlab lesson --steps      the steps, one a line";

/// `flushlab lesson`'s flags.
#[derive(Debug, clap::Args)]
#[command(after_help = LESSON_EXAMPLES)]
pub struct LessonArgs {
    /// The step to start at, 1 to 10.
    #[arg(long, value_parser = clap::value_parser!(u16).range(1..=10))]
    pub step: Option<u16>,
    /// List the steps and exit.
    #[arg(long)]
    pub steps: bool,
}

/// `0.1.0 (commit 1a2b3c4d5e6f, x86_64-unknown-linux-gnu)`: which build this is.
const VERSION: &str = concat!(
    env!("CARGO_PKG_VERSION"),
    " (commit ",
    env!("FLUSHLAB_COMMIT"),
    ", ",
    env!("FLUSHLAB_TARGET"),
    ")"
);

/// What a newcomer runs first. Every example of every `--help` is a command line clap accepts
/// (a test parses each).
const EXAMPLES: &str = "\
Examples:
  flushlab                                    the explorer: e for stderr(), o for stdout(), h for the keys
  flushlab tour                               every writer mode in this terminal, then the table
  STREAM=stderr DURATION=5 flushlab           std's stderr() headless for 5 s (the summary on stdout)
  flushlab --duration 2 --buffering block > /dev/null
  flushlab bench                              every mode in fresh ptys, with the ceilings (~45 s)
  flushlab wrap -- htop                       any program's output, measured (q in htop ends it)
  flushlab flood --writer block > /dev/null   a million log lines through a BufWriter";

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Benchmark every writer mode headless, each in a fresh pseudo-terminal (or pipe, file,
    /// /dev/null), and report FPS, write(2) calls and bytes per frame.
    Bench(crate::commands::bench::BenchArgs),
    /// Digest samply profiles of headless runs: samples, CPU time, frames, and the share of
    /// samples in write(2), the writer stack, ratatui/crossterm and the scene painter.
    Profile(crate::commands::profile::ProfileArgs),
    /// The log-flood workload: numbered log lines as fast as a chosen writer takes them, with
    /// lines/s, write(2) calls and the latency of one log call.
    Flood(crate::commands::flood::FloodArgs),
    /// Every writer mode in turn in this terminal, then the comparison: accepted FPS (writes
    /// returned) and shown FPS (confirmed by cursor-position round trips).
    Tour(crate::commands::tour::TourArgs),
    /// How many frames a terminal actually paints: a terminal on an X server of flushlab's own
    /// (Xvfb), its window watched; accepted and painted fps, skipped and torn frames, latency.
    Paint(crate::commands::paint::PaintArgs),
    /// The story as a lesson for a room: std's stdout(), stderr()'s collapse, what a frame is
    /// made of, BufWriter, one write a frame, the writer thread, synchronized output, the
    /// terminal as the limit, the comparison — each step live, with its figures against
    /// stdout()'s. Space or → next, ← back.
    Lesson(LessonArgs),
    /// Merge tour results from several terminals into one terminals × modes table and chart.
    Report(crate::commands::report::ReportArgs),
    /// What wrap gets on this machine, as this user, before a run: the observer it would use for
    /// CMD and why, whether eBPF is allowed, and which optional parts (terminals, xterm.js,
    /// --via, --profile) are installed, with the packages that are missing.
    Doctor(flushlab_wrap::doctor::DoctorArgs),
    /// Print a shell completion script: e.g. `flushlab completions bash >
    /// ~/.local/share/bash-completion/completions/flushlab`.
    Completions(CompletionsArgs),
    /// Print a manual page (roff) made from these very flags: flushlab(1), or a command's
    /// (`flushlab man bench` is flushlab-bench(1)). E.g. `flushlab man | man -l -`, or
    /// `flushlab man > ~/.local/share/man/man1/flushlab.1`.
    Man(ManArgs),
    /// wrap's tracer, started by `flushlab wrap --observer ptrace` in CMD's place (not for
    /// people).
    #[command(name = "trace-exec", hide = true)]
    TraceExec(flushlab_wrap::observers::tracer::TraceArgs),
    /// `wrap --via`'s shim on the far side: names itself to wrap, then becomes CMD (not for
    /// people).
    #[command(name = "far-root", hide = true)]
    FarRoot(flushlab_wrap::via::far_root::FarRootArgs),
    /// `wrap --terminal`'s way into CMD: its environment read from a private file, not a command
    /// line (not for people).
    #[command(name = "env-file", hide = true)]
    EnvFile(flushlab_wrap::in_terminal::env_file::EnvFileArgs),
    /// `wrap --terminal xtermjs`'s browser terminal: CMD's pty carried to xterm.js in headless
    /// Chromium (not for people).
    #[command(name = "xtermjs-host", hide = true)]
    XtermjsHost(flushlab_terminals::browser::host::HostArgs),
    /// Run any program in a new pseudo-terminal and measure its output as flushlab measures its
    /// own modes: bytes, write(2) calls, frames (from sync markers, from the program's own waits
    /// seen from inside it, or from cursor restarts; else unknown), the time from each key to
    /// its frame (--keys), and what to change. Interactive in a terminal; headless with
    /// --duration, --keys, or when stdout is not one.
    Wrap(Box<crate::cli::wrap::args::WrapArgs>),
}

impl Cli {
    /// How write(2) calls are to be counted, where the command counts any: the measuring
    /// commands take `--accounting`; reading files and printing scripts count nothing.
    pub fn accounting(&self) -> Option<Accounting> {
        match &self.command {
            None => self.run.accounting.accounting,
            Some(Command::Bench(args)) => args.accounting.accounting,
            Some(Command::Flood(args)) => args.accounting.accounting,
            Some(Command::Tour(args)) => args.accounting.accounting,
            Some(
                Command::Profile(_)
                | Command::Report(_)
                | Command::Completions(_)
                | Command::Man(_)
                | Command::Wrap(_)
                | Command::Doctor(_)
                | Command::Lesson(_)
                | Command::Paint(_)
                | Command::TraceExec(_)
                | Command::FarRoot(_)
                | Command::EnvFile(_)
                | Command::XtermjsHost(_),
            ) => None,
        }
    }
}

#[derive(Debug, clap::Args)]
pub struct CompletionsArgs {
    /// The shell to complete for.
    #[arg(value_enum)]
    pub shell: clap_complete::Shell,
}

/// The completion script for `shell`, as clap's generator writes it from the flags themselves.
pub fn completions(shell: clap_complete::Shell) -> Vec<u8> {
    use clap::CommandFactory;
    let mut script = Vec::new();
    clap_complete::generate(shell, &mut Cli::command(), "flushlab", &mut script);
    script
}

#[derive(Debug, clap::Args)]
pub struct ManArgs {
    /// A command's page instead of flushlab(1): bench, tour, wrap, …
    pub command: Option<String>,
}

/// A manual page in roff, as clap_mangen writes it from the flags themselves: flushlab(1), or
/// `flushlab-COMMAND(1)` (git's naming). An unknown command is a usage error naming the choices.
pub fn manual(command: Option<&str>) -> Result<Vec<u8>, clap::Error> {
    use clap::CommandFactory;
    let mut cli = Cli::command();
    let page = match command {
        None => cli.clone(),
        Some(name) => {
            let Some(sub) = cli.find_subcommand(name) else {
                let names: Vec<&str> = cli.get_subcommands().map(clap::Command::get_name).collect();
                let message = format!(
                    "no command '{}': choose one of {}",
                    flushlab_core::units::printable(name),
                    names.join(", ")
                );
                return Err(cli.error(clap::error::ErrorKind::InvalidValue, message));
            };
            sub.clone()
                .display_name(format!("flushlab-{name}"))
                .bin_name(format!("flushlab {name}"))
                .version(env!("CARGO_PKG_VERSION"))
        }
    };
    let mut roff = Vec::new();
    clap_mangen::Man::new(page)
        .render(&mut roff)
        .map_err(|e| cli.error(clap::error::ErrorKind::Io, e))?;
    Ok(roff)
}

/// Checks what clap cannot: a run that is not on a terminal must know when to stop.
pub fn validate_run(run: &RunArgs) -> Result<(), clap::Error> {
    use clap::CommandFactory;
    if run.duration.is_none() && !run.stream.is_terminal() {
        let message = format!(
            "{} is not a terminal, so flushlab cannot run interactively: give --duration SECONDS (or DURATION=SECONDS) for a headless run",
            run.stream.name()
        );
        return Err(Cli::command().error(clap::error::ErrorKind::MissingRequiredArgument, message));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// One idea, one name: the tour's seconds a mode are `--seconds` on `tour` and
    /// `--tour-seconds` on the explorer, and either spelling works on `tour`.
    #[test]
    fn the_tour_takes_the_explorers_spelling_of_its_seconds() {
        use clap::Parser;
        for flag in ["--seconds", "--tour-seconds"] {
            let cli = Cli::try_parse_from(["flushlab", "tour", flag, "0.5"]).unwrap();
            let Some(Command::Tour(tour)) = cli.command else {
                panic!("not a tour");
            };
            assert_eq!(
                tour.seconds,
                std::time::Duration::from_millis(500),
                "{flag}"
            );
        }
        let cli = Cli::try_parse_from(["flushlab", "--tour-seconds", "0.5"]).unwrap();
        assert_eq!(cli.run.tour_seconds, std::time::Duration::from_millis(500));
    }

    #[test]
    fn the_manual_is_made_from_the_flags() {
        let main = String::from_utf8(manual(None).unwrap()).unwrap();
        assert!(main.starts_with(".ie \\n(.g .ds Aq"), "{main}");
        assert!(main.contains(".TH flushlab 1"), "{main}");
        for command in ["bench", "tour", "wrap", "paint", "lesson", "report", "man"] {
            assert!(main.contains(command), "{command} in {main}");
        }
        let bench = String::from_utf8(manual(Some("bench")).unwrap()).unwrap();
        assert!(bench.contains(".TH flushlab-bench 1"), "{bench}");
        assert!(bench.contains("flushlab bench"), "{bench}");
        assert!(bench.contains("export\\-json"), "{bench}");
        let wrong = manual(Some("bnech\x1b[2J")).unwrap_err().to_string();
        assert!(
            wrong.contains("bnech") && wrong.contains("bench, "),
            "{wrong}"
        );
        assert!(!wrong.contains('\x1b'), "{wrong}");
    }

    /// The Examples of the main help and of every subcommand's: each `flushlab …` line (up
    /// to its description, a pipe or a redirection) is a command line clap accepts.
    #[test]
    fn every_example_in_the_help_parses() {
        use clap::CommandFactory;
        let top = Cli::command();
        let helps = std::iter::once(&top)
            .chain(top.get_subcommands())
            .filter_map(|c| c.get_after_help().map(|h| h.to_string()));
        let mut parsed = 0;
        for help in helps {
            for line in help.lines().map(str::trim) {
                let Some(command) = line.split("  ").next() else {
                    continue;
                };
                let command = command.replace(" 2>", " >");
                let command = command.split(['|', '>']).next().unwrap_or_default().trim();
                // Words, with a quoted one kept whole (`--command NAME='CMD ARGS'`).
                let mut words: Vec<String> = Vec::new();
                let mut quoted = false;
                for word in command.split(' ') {
                    if quoted {
                        let last = words.last_mut().unwrap();
                        last.push(' ');
                        last.push_str(word);
                    } else {
                        words.push(word.to_owned());
                    }
                    if word.matches('\'').count() % 2 == 1 {
                        quoted = !quoted;
                    }
                }
                let words: Vec<String> = words.into_iter().map(|w| w.replace('\'', "")).collect();
                if words.first().map(String::as_str) != Some("flushlab") {
                    continue;
                }
                if let Err(e) = Cli::try_parse_from(&words) {
                    panic!("{line}: {e}");
                }
                parsed += 1;
            }
        }
        assert!(parsed >= 20, "only {parsed} examples found");
    }

    /// Every option of every subcommand says what it does in plain text: no blank help, no
    /// rustdoc markup (links in backticks and brackets).
    #[test]
    fn every_option_has_a_plain_description() {
        use clap::CommandFactory;
        fn walk(command: &clap::Command, path: &str, bad: &mut Vec<String>) {
            for arg in command.get_arguments() {
                let id = arg.get_id().as_str();
                if matches!(id, "help" | "version") || arg.is_hide_set() {
                    continue;
                }
                let help = arg.get_help().map(ToString::to_string).unwrap_or_default();
                if help.trim().is_empty() {
                    bad.push(format!("{path} --{id}: no description"));
                }
                let values = arg.get_possible_values();
                let texts = std::iter::once(help).chain(
                    values
                        .iter()
                        .filter_map(|v| v.get_help().map(ToString::to_string)),
                );
                for text in texts {
                    if text.contains("[`") || text.contains("`]") {
                        bad.push(format!("{path} --{id}: rustdoc markup: {text}"));
                    }
                }
            }
            for sub in command.get_subcommands() {
                walk(sub, &format!("{path} {}", sub.get_name()), bad);
            }
        }
        let mut bad = Vec::new();
        walk(&Cli::command(), "flushlab", &mut bad);
        assert!(bad.is_empty(), "{bad:#?}");
    }

    /// The help of `wrap --terminal` and of `--via` is prose: it names every terminal and
    /// every layer there is (a test, as the compiler cannot read a doc comment).
    #[test]
    fn the_help_names_every_terminal_and_every_layer() {
        use clap::{CommandFactory, ValueEnum};
        let wrap = Cli::command().find_subcommand("wrap").unwrap().clone();
        let help = |flag: &str| {
            let arg = wrap.get_arguments().find(|a| a.get_id() == flag).unwrap();
            arg.get_long_help()
                .or(arg.get_help())
                .map(ToString::to_string)
                .unwrap_or_default()
        };
        let terminals = help("terminal");
        for t in flushlab_terminals::emulators::Terminal::value_variants() {
            assert!(terminals.contains(t.name()), "{}: {terminals}", t.name());
        }
        let via = help("via");
        for layer in flushlab_wrap::via::Layer::value_variants() {
            assert!(via.contains(layer.name()), "{}: {via}", layer.name());
        }
    }

    /// The crates' own tables (`ALL`, what their messages list without clap) hold what clap
    /// offers: every layer, and every terminal but xterm.js's, which `--terminal` parses itself
    /// (`xtermjs[:RENDERER]`).
    #[test]
    fn the_crates_tables_are_what_clap_offers() {
        use clap::ValueEnum;
        use flushlab_terminals::emulators::Terminal;
        use flushlab_wrap::via::Layer;
        assert_eq!(Layer::value_variants(), Layer::ALL);
        let launched: Vec<Terminal> = Terminal::ALL
            .into_iter()
            .filter(|t| t.is_launched())
            .collect();
        assert_eq!(Terminal::value_variants(), launched);
    }

    /// The words wrap starts each hidden helper with are the helper's own arguments once this
    /// parser has read them: one builder a helper (`argv`), in the crate that starts it.
    #[test]
    fn every_helpers_argv_parses_back_to_its_arguments() {
        use std::ffi::OsString;
        let parsed = |argv: Vec<OsString>| {
            Cli::try_parse_from(std::iter::once(OsString::from("flushlab")).chain(argv))
                .unwrap()
                .command
        };
        let cmd: Vec<OsString> = vec!["./tui".into(), "--flag".into(), "-x".into(), "a b".into()];
        for (stops, traced) in [
            (
                flushlab_wrap::observers::tracer::filter::Stops::Everything,
                false,
            ),
            (
                flushlab_wrap::observers::tracer::filter::Stops::KeyReads,
                true,
            ),
        ] {
            let tracer = flushlab_wrap::observers::tracer::TraceArgs {
                stops,
                traced,
                command: cmd.clone(),
            };
            assert!(matches!(parsed(tracer.argv()), Some(Command::TraceExec(a)) if a == tracer));
        }
        let shim = flushlab_wrap::via::far_root::FarRootArgs {
            socket: "/tmp/x y/socket".into(),
            cwd: "/home/someone".into(),
            command: cmd.clone(),
        };
        assert!(matches!(parsed(shim.argv()), Some(Command::FarRoot(a)) if a == shim));
        let loader = flushlab_wrap::in_terminal::env_file::EnvFileArgs {
            file: "/tmp/scratch/env".into(),
            command: cmd.clone(),
        };
        assert!(matches!(parsed(loader.argv()), Some(Command::EnvFile(a)) if a == loader));
        for (renderer, camera) in [
            (flushlab_terminals::browser::Renderer::Dom, true),
            (flushlab_terminals::browser::Renderer::Webgl, false),
        ] {
            let host = flushlab_terminals::browser::host::HostArgs {
                renderer,
                cols: 200,
                rows: 60,
                modules: "/cache/xterm".into(),
                browser: "/usr/bin/chromium".into(),
                parent: 4242,
                camera,
                command: cmd.clone(),
            };
            assert!(matches!(parsed(host.argv()), Some(Command::XtermjsHost(a)) if a == host));
        }
    }

    #[test]
    fn clap_definition_is_consistent() {
        use clap::CommandFactory;
        Cli::command().debug_assert();
    }
}

/// What a bench hands each child (`crate::plumbing::children`) is what the child's command reads.
#[cfg(test)]
mod read_back;
pub mod wrap;
