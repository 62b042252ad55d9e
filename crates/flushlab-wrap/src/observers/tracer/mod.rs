//! The tracer: `flushlab wrap --observer ptrace`'s way into a program that does not load the
//! preload (Go and static binaries, raw system calls). It needs nothing
//! of the program: ptrace, with a seccomp filter ([`filter`]) so the program stops only at the
//! calls wrap needs, as strace's `--seccomp-bpf` does.
//!
//! Two processes of flushlab's own, started as `flushlab trace-exec` (hidden) in CMD's place in
//! its pty: the **tracer**, which starts the second, seizes it and follows it and everything it
//! starts; and the **traced** one, which waits until it is seized, takes the filter (under
//! `PR_SET_NO_NEW_PRIVS`, which the filter needs) and execs CMD. The tracer says what it sees
//! on the preload's channel, in the preload's records (`flushlab_observer::Record`), so wrap's
//! timeline, frames, keys and stages are the same code for both; it ends with CMD, with CMD's
//! exit status, after one record of what tracing cost (`Record::Cost`).
//!
//! Built for x86_64 Linux (the registers it reads are that ABI's).

pub mod filter;
mod following;
mod stopped;

use std::ffi::OsString;
use std::fs::File;
use std::os::unix::process::CommandExt;
use std::sync::Arc;
use std::sync::atomic::AtomicBool;
use std::time::{Duration, Instant};

use flushlab_observer::Record;
use nix::sys::ptrace::{self, Options};
use nix::sys::signal::Signal;
use nix::sys::wait::waitpid;
use nix::unistd::Pid;

use self::filter::Stops;
use self::following::Tracer;
use flushlab_core::outcome::{Outcome, complain};

/// `flushlab trace-exec`: not for people (wrap starts it); hidden from the help.
#[derive(Debug, PartialEq)]
#[cfg_attr(feature = "clap", derive(clap::Args))]
pub struct TraceArgs {
    /// What to stop the program at: everything the tracer needs alone, or a preload's
    /// complement
    #[cfg_attr(feature = "clap", arg(long, value_enum, default_value = "everything"))]
    pub stops: Stops,
    /// This process is the traced one: wait to be seized, take the filter, exec CMD
    #[cfg_attr(feature = "clap", arg(long))]
    pub traced: bool,
    /// The program to trace, and its arguments (after `--`)
    #[cfg_attr(
        feature = "clap",
        arg(required = true, trailing_var_arg = true, allow_hyphen_values = true)
    )]
    pub command: Vec<OsString>,
}

/// Beside the preload: the `LD_PRELOAD` CMD is to run with, under another name so that the
/// tracer's own processes do not load it.
pub const PRELOAD: &str = "FLUSHLAB_TRACED_PRELOAD";

/// The hidden subcommand's name, as wrap starts it.
pub const SUBCOMMAND: &str = "trace-exec";

impl TraceArgs {
    /// The words after flushlab's own that start this tracer: what the binary's parser reads
    /// back as these very arguments (a test round-trips it).
    pub fn argv(&self) -> Vec<OsString> {
        let mut words: Vec<OsString> = vec![
            SUBCOMMAND.into(),
            "--stops".into(),
            self.stops.name().into(),
        ];
        if self.traced {
            words.push("--traced".into());
        }
        words.push("--".into());
        words.extend(self.command.iter().cloned());
        words
    }
}

/// How long the traced process waits to be seized before it gives up.
const SEIZED_WITHIN: Duration = Duration::from_secs(5);

/// `PTRACE_LISTEN` on a tracee (its raw pid): a tracee in group-stop stays stopped, and the
/// tracer hears of its SIGCONT. nix has no safe call for it and this crate forbids `unsafe`:
/// `src/main.rs` passes its own.
pub type Listen = fn(i32);

pub fn run(args: TraceArgs, listen: Listen) -> anyhow::Result<Outcome> {
    if args.traced {
        become_traced(&args)
    } else {
        trace(&args, listen)
    }
}

/// The traced side: seized, filtered, CMD.
fn become_traced(args: &TraceArgs) -> anyhow::Result<Outcome> {
    let deadline = Instant::now() + SEIZED_WITHIN;
    while !is_traced() {
        if Instant::now() > deadline {
            complain("wrap: the tracer never attached (ptrace refused?)");
            return Ok(Outcome::Failed);
        }
        std::thread::sleep(Duration::from_micros(100));
    }
    // Without a tracer a trapped call fails with ENOSYS: the filter goes on only once seized.
    seccompiler::apply_filter(&filter::program(args.stops))
        .map_err(|e| anyhow::anyhow!("wrap: the tracer's seccomp filter: {e}"))?;
    let program = &args.command[0];
    let mut command = std::process::Command::new(program);
    command.args(&args.command[1..]);
    // Beside a preload, CMD gets it (the tracer's own two processes did not load it); alone,
    // the channel's setting goes.
    match std::env::var_os(PRELOAD) {
        Some(preload) => {
            command.env("LD_PRELOAD", preload).env_remove(PRELOAD);
        }
        None => {
            command.env_remove(flushlab_observer::SETTING);
        }
    }
    let error = command.exec();
    complain(&format!(
        "wrap: '{}': {error}",
        flushlab_core::units::printable(&program.to_string_lossy())
    ));
    Ok(match error.kind() {
        std::io::ErrorKind::NotFound => Outcome::NotFound,
        _ => Outcome::NotExecutable,
    })
}

fn is_traced() -> bool {
    std::fs::read_to_string("/proc/self/status").is_ok_and(|s| {
        s.lines()
            .find_map(|l| l.strip_prefix("TracerPid:"))
            .is_some_and(|pid| pid.trim() != "0")
    })
}

/// The tracer's side: the traced process started and seized, then every stop of it and of
/// what it starts, until CMD ends.
fn trace(args: &TraceArgs, listen: Listen) -> anyhow::Result<Outcome> {
    let (channel, tty_rdev) = open_channel()?;
    let mut tracer = Tracer::new(listen, args.stops, (channel, tty_rdev));
    // Signals for CMD's process group reach the tracer too: CMD answers them, the tracer ends
    // with it (ended first, it would take CMD with it, unable to tidy its terminal).
    let ignored = Arc::new(AtomicBool::new(false));
    for signal in [
        signal_hook::consts::SIGINT,
        signal_hook::consts::SIGQUIT,
        signal_hook::consts::SIGTERM,
        signal_hook::consts::SIGHUP,
        signal_hook::consts::SIGTSTP,
    ] {
        signal_hook::flag::register(signal, Arc::clone(&ignored))?;
    }
    let traced = TraceArgs {
        stops: args.stops,
        traced: true,
        command: args.command.clone(),
    };
    let child = std::process::Command::new(std::env::current_exe()?)
        .args(traced.argv())
        .spawn()?;
    let pid = Pid::from_raw(child.id() as i32);
    // wrap killed: the tracer goes with it, and the tracees with the tracer (EXITKILL).
    let _ = rustix::process::set_parent_process_death_signal(Some(rustix::process::Signal::KILL));
    let options = Options::PTRACE_O_TRACESECCOMP
        | Options::PTRACE_O_TRACESYSGOOD
        | Options::PTRACE_O_TRACEFORK
        | Options::PTRACE_O_TRACEVFORK
        | Options::PTRACE_O_TRACECLONE
        | Options::PTRACE_O_TRACEEXEC
        | Options::PTRACE_O_TRACEEXIT
        | Options::PTRACE_O_EXITKILL;
    if let Err(errno) = ptrace::seize(pid, options) {
        let _ = nix::sys::signal::kill(pid, Signal::SIGKILL);
        let _ = waitpid(pid, None);
        tracer.send(&Record::Untraced {
            pid: std::process::id(),
            errno: errno as i32,
        });
        // CMD runs as it is, seen from outside.
        let error = std::process::Command::new(&args.command[0])
            .args(&args.command[1..])
            .env_remove(flushlab_observer::SETTING)
            .exec();
        anyhow::bail!("wrap: '{}': {error}", args.command[0].to_string_lossy());
    }
    let status = tracer.follow(pid);
    tracer.send_cost(own_cpu_ns());
    Ok(status)
}

/// The channel wrap listens on (the preload's setting: `PATH:RDEV:MODE`), and the terminal's
/// device (0: the one the tracer's own standard output is on, under a terminal emulator).
fn open_channel() -> anyhow::Result<(File, u64)> {
    let setting = std::env::var(flushlab_observer::SETTING)
        .map_err(|_| anyhow::anyhow!("wrap: the tracer runs only under flushlab wrap"))?;
    let mut parts = setting.splitn(3, ':');
    let (Some(path), Some(rdev)) = (parts.next(), parts.next()) else {
        anyhow::bail!("wrap: the tracer's setting is malformed");
    };
    let channel = std::fs::OpenOptions::new().write(true).open(path)?;
    let mut rdev: u64 = rdev.parse()?;
    if rdev == 0 {
        rdev = rustix::fs::fstat(std::io::stdout())?.st_rdev;
    }
    Ok((channel, rdev))
}

fn own_cpu_ns() -> u64 {
    use nix::sys::resource::{UsageWho, getrusage};
    getrusage(UsageWho::RUSAGE_SELF).map_or(0, |u| {
        let ns = |t: nix::sys::time::TimeVal| {
            u64::try_from(t.tv_sec()).unwrap_or(0) * 1_000_000_000
                + u64::try_from(t.tv_usec()).unwrap_or(0) * 1_000
        };
        ns(u.user_time()) + ns(u.system_time())
    })
}
