use std::process::ExitCode;

use flushlab_core::outcome::{Outcome, reader_gone_in};

use clap::{CommandFactory, FromArgMatches, Parser};
use flushlab::cli::{Cli, Command};

/// Runs before `main`, before Rust's runtime puts /dev/null on a closed standard fd: which
/// ones were closed (`>&-`) can only be seen here.
#[cfg(target_os = "linux")]
#[used]
#[allow(unsafe_code)]
// SAFETY: the function makes three fcntl(2) calls and one atomic store; it needs nothing of
// Rust's runtime, which is not set up yet.
#[unsafe(link_section = ".init_array")]
static NOTE_CLOSED_STANDARD_FDS: extern "C" fn() = note_closed_standard_fds;

#[cfg(target_os = "linux")]
extern "C" fn note_closed_standard_fds() {
    flushlab_core::outcome::note_closed_standard_fds();
}

/// `PTRACE_LISTEN` for wrap's tracer (its `Listen`, in
/// `flushlab_wrap::observers::tracer`): the library forbids
/// `unsafe`, and nix has no safe call for this request.
#[allow(unsafe_code)]
fn ptrace_listen(pid: i32) {
    // SAFETY: PTRACE_LISTEN reads and writes no memory of ours: its address and data are null.
    let _ = unsafe {
        nix::libc::ptrace(
            nix::libc::PTRACE_LISTEN,
            pid,
            std::ptr::null_mut::<nix::libc::c_void>(),
            std::ptr::null_mut::<nix::libc::c_void>(),
        )
    };
}

fn main() -> ExitCode {
    let matches = match Cli::command().try_get_matches() {
        Ok(matches) => matches,
        Err(e) => return usage_error(e),
    };
    let mut cli = match Cli::from_arg_matches(&matches) {
        Ok(cli) => cli,
        Err(e) => return usage_error(e),
    };
    cli.run.from_env = from_env(&matches);
    if let Err(why) = enough_address_space() {
        flushlab_core::outcome::complain(&why);
        return Outcome::Failed.into();
    }
    if let Some(choice) = cli.accounting()
        && let Err(why) = flushlab_core::accounting::choose_accounting(choice)
    {
        flushlab_core::outcome::complain(&format!(
            "--accounting {} (env ACCOUNTING): {why}",
            choice.name()
        ));
        return Outcome::BadInput.into();
    }
    let result = match cli.command {
        Some(Command::Bench(args)) => flushlab::commands::bench::run(args),
        Some(Command::Profile(args)) => flushlab::commands::profile::run(args),
        Some(Command::Flood(args)) => flushlab::commands::flood::run(args),
        Some(Command::Tour(args)) => flushlab::commands::tour::run(args),
        Some(Command::Paint(args)) => flushlab::commands::paint::run(args),
        Some(Command::Report(args)) => flushlab::commands::report::run(args),
        Some(Command::Wrap(args)) => flushlab::cli::wrap::run(&args),
        Some(Command::Doctor(args)) => flushlab_wrap::doctor::run(args),
        Some(Command::Lesson(args)) => lesson(args),
        Some(Command::TraceExec(args)) => {
            flushlab_wrap::observers::tracer::run(args, ptrace_listen)
        }
        Some(Command::EnvFile(args)) => match flushlab_wrap::in_terminal::env_file::run(&args) {
            Err(e) => {
                flushlab_core::outcome::complain(&e.to_string());
                Ok(Outcome::NotFound)
            }
        },
        Some(Command::XtermjsHost(args)) => flushlab_terminals::browser::host::run(args),
        Some(Command::FarRoot(args)) => match flushlab_wrap::via::far_root::shim(&args) {
            Err(e) => {
                flushlab_core::outcome::complain(&e.to_string());
                Ok(Outcome::NotFound)
            }
        },
        Some(Command::Man(args)) => match flushlab::cli::manual(args.command.as_deref()) {
            Ok(page) => flushlab_core::outcome::print(&page)
                .map(|()| Outcome::Finished)
                .map_err(anyhow::Error::from),
            Err(e) => return usage_error(e),
        },
        Some(Command::Completions(args)) => {
            flushlab_core::outcome::print(&flushlab::cli::completions(args.shell))
                .map(|()| Outcome::Finished)
                .map_err(anyhow::Error::from)
        }
        None => {
            if let Err(e) = flushlab::cli::validate_run(&cli.run) {
                return usage_error(e);
            }
            flushlab::commands::run::run(cli.run)
        }
    };
    let outcome = match result {
        Ok(outcome) => outcome,
        Err(e) if reader_gone_in(&e) => Outcome::ReaderGone,
        Err(e) => {
            // Nobody may be left to read it (stderr closed or full): that is no reason to panic.
            flushlab_core::outcome::complain(&format!("{e:#}"));
            Outcome::Failed
        }
    };
    outcome.into()
}

/// The least address space (RLIMIT_AS) flushlab asks for. Below it an allocation fails
/// somewhere, and Rust aborts on a failed allocation ("memory allocation of 65536 bytes
/// failed", SIGABRT), where no words can be given. Measured with `prlimit --as=N`: the release
/// build's `wrap --keys` needs 20 MiB, the debug build's 24 MiB, and the program wrap runs is
/// held to the same limit; twice that leaves room for larger runs.
const LEAST_ADDRESS_SPACE: u64 = 48 << 20;

/// Refuses, in words, an address-space limit too small to run in.
fn enough_address_space() -> Result<(), String> {
    match flushlab_core::sys::address_space_limit() {
        Some(limit) if limit < LEAST_ADDRESS_SPACE => Err(format!(
            "the address-space limit (ulimit -v, RLIMIT_AS) is {} MiB, and flushlab needs {} MiB \
             at least (its threads' stacks and buffers; the program it runs is held to it \
             too): raise it (ulimit -v unlimited)",
            limit >> 20,
            LEAST_ADDRESS_SPACE >> 20
        )),
        _ => Ok(()),
    }
}

/// `flushlab lesson`: the explorer, at a step of the lesson, in this terminal.
fn lesson(args: flushlab::cli::LessonArgs) -> anyhow::Result<Outcome> {
    if args.steps {
        flushlab_core::outcome::print(flushlab::explorer::lesson::list().as_bytes())?;
        return Ok(Outcome::Finished);
    }
    if !std::io::IsTerminal::is_terminal(&std::io::stdout()) {
        flushlab_core::outcome::complain(
            "lesson: stdout is not a terminal: the lesson draws in one (--steps lists the steps)",
        );
        return Ok(Outcome::BadInput);
    }
    // The explorer's settings as they would be without flags (the environment's included).
    let mut run = match Cli::try_parse_from(["flushlab"]) {
        Ok(cli) => cli.run,
        Err(e) => {
            let said = e.to_string();
            flushlab_core::outcome::complain(&format!(
                "lesson: {}",
                said.lines()
                    .next()
                    .unwrap_or_default()
                    .trim_start_matches("error: ")
            ));
            return Ok(Outcome::BadInput);
        }
    };
    run.lesson = Some(usize::from(args.step.unwrap_or(1)) - 1);
    flushlab::commands::run::run(run)
}

/// Help and version go out as clap prints them; a usage error becomes one line that names the
/// value, the flag and its environment variable, and the valid choices: exit status 2.
fn usage_error(e: clap::Error) -> ExitCode {
    use clap::error::{ContextKind, ContextValue, ErrorKind};
    if matches!(
        e.kind(),
        ErrorKind::DisplayHelp
            | ErrorKind::DisplayVersion
            | ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand
    ) {
        e.exit();
    }
    let arg = match e.get(ContextKind::InvalidArg) {
        Some(ContextValue::String(arg)) => Some(arg.clone()),
        _ => None,
    };
    // clap's lines, joined into one: the error, then its tip as a clause of its own.
    let mut line = e
        .render()
        .to_string()
        .lines()
        .map(str::trim)
        .take_while(|l| !l.starts_with("Usage:") && !l.starts_with("For more information"))
        .filter(|l| !l.is_empty())
        .collect::<Vec<_>>()
        .join("; ");
    if let Some((arg, env)) = arg.as_deref().and_then(|arg| Some((arg, env_of(arg)?))) {
        line = line.replacen(&format!("'{arg}'"), &format!("'{arg}' (env {env})"), 1);
    }
    if e.kind() == ErrorKind::InvalidUtf8 {
        line = match non_utf8_env() {
            Some((env, long)) => {
                format!("invalid UTF-8 in {env} (--{long}): give it as plain text")
            }
            None => format!("{line}: give every argument as plain text"),
        };
    }
    if let Some((before, after)) = line.split_once("[possible values: ") {
        line = format!("{before}possible values: {}", after.replacen(']', "", 1));
    }
    let help = match subcommand_given() {
        Some(name) => format!("flushlab {name} --help"),
        None => "flushlab --help".to_owned(),
    };
    flushlab_core::outcome::complain(&format!(
        "{} (for more information, try '{help}')",
        line.trim_start_matches("error: ")
    ));
    Outcome::BadInput.into()
}

/// The first of flushlab's environment variables whose value is not UTF-8, with its flag.
fn non_utf8_env() -> Option<(String, String)> {
    Cli::command().get_arguments().find_map(|a| {
        let env = a.get_env()?;
        let bad = std::env::var_os(env).is_some_and(|v| v.to_str().is_none());
        bad.then(|| {
            (
                env.to_string_lossy().into_owned(),
                a.get_long().unwrap_or_default().to_owned(),
            )
        })
    })
}

/// The main command's settings that came from environment variables, as `NAME=value`.
fn from_env(matches: &clap::ArgMatches) -> Vec<String> {
    Cli::command()
        .get_arguments()
        .filter(|a| {
            matches.value_source(a.get_id().as_str())
                == Some(clap::parser::ValueSource::EnvVariable)
        })
        .filter_map(|a| {
            let env = a.get_env()?.to_string_lossy().into_owned();
            let value = std::env::var_os(&env)?;
            Some(format!(
                "{env}={}",
                flushlab_core::units::printable(&value.to_string_lossy())
            ))
        })
        .collect()
}

/// The subcommand named on the command line, if any.
fn subcommand_given() -> Option<String> {
    let names: Vec<String> = Cli::command()
        .get_subcommands()
        .map(|c| c.get_name().to_owned())
        .collect();
    std::env::args().skip(1).find(|a| names.contains(a))
}

/// The environment variable behind a flag as clap names it (`--stream <STREAM>`).
fn env_of(arg: &str) -> Option<String> {
    let long = arg.strip_prefix("--")?.split(' ').next()?;
    let top = Cli::command();
    // The flag of the subcommand given, if any: `bench --duration` reads no DURATION.
    let command = match subcommand_given() {
        Some(name) => top.find_subcommand(name)?.clone(),
        None => top,
    };
    let found = command
        .get_arguments()
        .find(|a| a.get_long() == Some(long))?;
    Some(found.get_env()?.to_string_lossy().into_owned())
}
