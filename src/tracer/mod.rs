//! The tracer: `flushlab wrap --observer ptrace`'s way into a program that does not load the
//! preload (Go, static binaries, glibc stdio's own writes, raw system calls). It needs nothing
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
pub mod image;

use std::collections::HashMap;
use std::ffi::OsString;
use std::fs::File;
use std::io::Write;
use std::os::unix::process::CommandExt;
use std::sync::Arc;
use std::sync::atomic::AtomicBool;
use std::time::{Duration, Instant};

use flushlab_observer::{Record, TracerCost, Wait, now_ns};
use nix::sys::ptrace::{self, Event, Options};
use nix::sys::signal::Signal;
use nix::sys::wait::{WaitPidFlag, WaitStatus, waitpid};
use nix::unistd::Pid;

use self::filter::{Call, Stops};
use crate::outcome::{Outcome, complain};

/// `flushlab trace-exec`: not for people (wrap starts it); hidden from the help.
#[derive(Debug, clap::Args)]
pub struct TraceArgs {
    /// What to stop the program at: everything the tracer needs alone, or a preload's
    /// complement
    #[arg(long, value_enum, default_value = "everything")]
    pub stops: Stops,
    /// This process is the traced one: wait to be seized, take the filter, exec CMD
    #[arg(long)]
    pub traced: bool,
    /// The program to trace, and its arguments (after `--`)
    #[arg(required = true, trailing_var_arg = true, allow_hyphen_values = true)]
    pub command: Vec<OsString>,
}

/// Beside the preload: the `LD_PRELOAD` CMD is to run with, under another name so that the
/// tracer's own processes do not load it.
pub const PRELOAD: &str = "FLUSHLAB_TRACED_PRELOAD";

/// The hidden subcommand's name, as wrap starts it.
pub const SUBCOMMAND: &str = "trace-exec";

/// A futex wait shorter than this is a lock, not a wait between frames (the preload's rule,
/// `FUTEX_BLOCKED_NS` in observer.c).
const FUTEX_BLOCKED_NS: u64 = 500_000;
/// A wait with no terminal write before it is said at most this often a process (the preload's
/// `QUIET_WAIT_EVERY_NS`).
const QUIET_WAIT_EVERY_NS: u64 = 1_000_000;
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
        crate::units::printable(&program.to_string_lossy())
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
    let mut tracer = Tracer {
        listen,
        stops: args.stops,
        channel,
        tty_rdev,
        threads: HashMap::new(),
        quiet: HashMap::new(),
        live: HashMap::new(),
        cost: TracerCost {
            pid: std::process::id(),
            ..TracerCost::default()
        },
    };
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
    let child = std::process::Command::new(std::env::current_exe()?)
        .arg(SUBCOMMAND)
        .arg("--traced")
        .args(["--stops", args.stops.name()])
        .arg("--")
        .args(&args.command)
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
    tracer.cost.cpu_ns = own_cpu_ns();
    let cost = tracer.cost;
    tracer.send(&Record::Cost(cost));
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

/// A call a thread is in, between its entry stop and its exit stop.
#[derive(Clone, Copy, Debug)]
enum Pending {
    Read { start: u64 },
    Wait { how: u16, start: u64, blocks: bool },
}

/// What the tracer keeps of a thread: as the preload's thread-local counters.
#[derive(Debug, Default)]
struct Thread {
    tgid: u32,
    writes: u64,
    bytes: u64,
    first_ns: u64,
    pending: Option<Pending>,
}

struct Tracer {
    listen: Listen,
    stops: Stops,
    channel: File,
    tty_rdev: u64,
    threads: HashMap<i32, Thread>,
    /// A process's last quiet wait said.
    quiet: HashMap<u32, u64>,
    /// Every traced thread alive, with its process: what is left when CMD ends.
    live: HashMap<i32, u32>,
    cost: TracerCost,
}

impl Tracer {
    /// Every stop, until CMD (`child`) has ended: its status.
    fn follow(&mut self, child: Pid) -> Outcome {
        loop {
            let status = match waitpid(None, Some(WaitPidFlag::__WALL)) {
                Ok(status) => status,
                Err(nix::errno::Errno::EINTR) => continue,
                Err(_) => return Outcome::Failed,
            };
            let now = now_ns();
            match status {
                WaitStatus::PtraceEvent(pid, _, e) if e == Event::PTRACE_EVENT_SECCOMP as i32 => {
                    self.cost.stops += 1;
                    self.entry(pid, now);
                }
                WaitStatus::PtraceSyscall(pid) => {
                    self.cost.stops += 1;
                    self.exit(pid, now);
                }
                WaitStatus::PtraceEvent(pid, _, e)
                    if e == Event::PTRACE_EVENT_FORK as i32
                        || e == Event::PTRACE_EVENT_VFORK as i32 =>
                {
                    if let Ok(new) = ptrace::getevent(pid) {
                        let parent = self.thread(pid).tgid;
                        self.live.insert(new as i32, new as u32);
                        self.send(&Record::Fork {
                            pid: new as u32,
                            parent,
                        });
                    }
                    let _ = ptrace::cont(pid, None);
                }
                WaitStatus::PtraceEvent(pid, _, e) if e == Event::PTRACE_EVENT_CLONE as i32 => {
                    if let Ok(new) = ptrace::getevent(pid) {
                        let tgid = self.thread(pid).tgid;
                        self.live.insert(new as i32, tgid);
                    }
                    let _ = ptrace::cont(pid, None);
                }
                WaitStatus::PtraceEvent(pid, _, e) if e == Event::PTRACE_EVENT_EXEC as i32 => {
                    self.exec(pid, now);
                    let _ = ptrace::cont(pid, None);
                }
                WaitStatus::PtraceEvent(pid, _, e) if e == Event::PTRACE_EVENT_EXIT as i32 => {
                    self.tail(pid, now);
                    let _ = ptrace::cont(pid, None);
                }
                WaitStatus::PtraceEvent(pid, signal, e) if e == libc_event_stop() => {
                    if matches!(
                        signal,
                        Signal::SIGSTOP | Signal::SIGTSTP | Signal::SIGTTIN | Signal::SIGTTOU
                    ) {
                        // A group-stop: stopped it stays, until SIGCONT, without its stop being
                        // swallowed (as strace -f keeps job control).
                        (self.listen)(pid.as_raw());
                    } else {
                        let _ = ptrace::cont(pid, None);
                    }
                }
                WaitStatus::PtraceEvent(pid, _, _) => {
                    let _ = ptrace::cont(pid, None);
                }
                WaitStatus::Stopped(pid, signal) => {
                    let _ = ptrace::cont(pid, signal);
                }
                WaitStatus::Exited(pid, code) => {
                    self.threads.remove(&pid.as_raw());
                    self.live.remove(&pid.as_raw());
                    if pid == child {
                        self.count_left(child);
                        return Outcome::Exited(code);
                    }
                }
                WaitStatus::Signaled(pid, signal, _) => {
                    self.threads.remove(&pid.as_raw());
                    self.live.remove(&pid.as_raw());
                    if pid == child {
                        self.count_left(child);
                        return Outcome::Exited(128 + signal as i32);
                    }
                }
                WaitStatus::Continued(_) | WaitStatus::StillAlive => {}
            }
        }
    }

    /// CMD ended: the processes it left that the tracer still follows (a daemon) end with the
    /// tracer (EXITKILL), which says how many.
    fn count_left(&mut self, child: Pid) {
        let left: std::collections::HashSet<u32> = self
            .live
            .values()
            .copied()
            .filter(|&tgid| tgid != child.as_raw() as u32)
            .collect();
        self.cost.left = left.len() as u32;
    }

    fn thread(&mut self, pid: Pid) -> &mut Thread {
        self.threads.entry(pid.as_raw()).or_insert_with(|| Thread {
            tgid: tgid_of(pid),
            ..Thread::default()
        })
    }

    /// A trapped call's entry: what it is, whether the tracer needs its end.
    fn entry(&mut self, pid: Pid, now: u64) {
        let Ok(regs) = ptrace::getregs(pid) else {
            let _ = ptrace::cont(pid, None);
            return;
        };
        let number = regs.orig_rax as i64;
        let args = [regs.rdi, regs.rsi, regs.rdx, regs.r10, regs.r8, regs.r9];
        let pending = match filter::call_of(number) {
            Some(Call::Write) => {
                // One stop a write, at its entry: the bytes it asks to write are taken for
                // what it wrote (a blocking terminal takes all; a stop at the exit too would
                // double what each write costs the program).
                self.cost.write_stops += 1;
                if self.is_terminal(pid, args[0]) {
                    let bytes = asked_bytes(pid, number, &args);
                    let thread = self.thread(pid);
                    if thread.writes == 0 {
                        thread.first_ns = now;
                    }
                    thread.writes += 1;
                    thread.bytes += bytes;
                }
                None
            }
            Some(Call::Read) => self
                .is_terminal(pid, args[0])
                .then_some(Pending::Read { start: now }),
            Some(Call::Wait(how)) => Some(Pending::Wait {
                how,
                start: now,
                blocks: blocks(pid, number, &args),
            }),
            None => None,
        };
        let thread = self.thread(pid);
        match pending {
            Some(pending) => {
                thread.pending = Some(pending);
                let _ = ptrace::syscall(pid, None);
            }
            None => {
                let _ = ptrace::cont(pid, None);
            }
        }
    }

    /// A trapped call's exit: its result, and what it makes of the thread's frame.
    fn exit(&mut self, pid: Pid, now: u64) {
        let result = ptrace::getregs(pid).map_or(-1, |r| r.rax as i64);
        let thread = self.thread(pid);
        let pending = thread.pending.take();
        let tid = pid.as_raw() as u32;
        match pending {
            Some(Pending::Read { start }) => {
                // Beside a preload, the waits are its: the tracer says the read alone.
                if self.stops != Stops::KeyReads {
                    self.after_wait(pid, start, now, (true, 7, false));
                }
                if result > 0 {
                    let tgid = self.thread(pid).tgid;
                    self.send(&Record::Read(Wait {
                        pid: tgid,
                        tid,
                        bytes: result as u64,
                        start_ns: start,
                        end_ns: now,
                        traced: true,
                        ..Wait::default()
                    }));
                }
            }
            Some(Pending::Wait { how, start, blocks }) => {
                let blocks = blocks
                    || (how == flushlab_observer::wire::W_FUTEX && now - start >= FUTEX_BLOCKED_NS);
                let timed_out = match how {
                    6 => result == -i64::from(nix::libc::ETIMEDOUT),
                    5 => false,
                    _ => result == 0,
                };
                self.after_wait(pid, start, now, (blocks, how, timed_out));
            }
            None => {}
        }
        let _ = ptrace::cont(pid, None);
    }

    /// After a wait returned: the preload's `after_wait`.
    fn after_wait(
        &mut self,
        pid: Pid,
        start: u64,
        end: u64,
        (blocks, how, timed_out): (bool, u16, bool),
    ) {
        if !blocks {
            return;
        }
        let thread = self.thread(pid);
        let tgid = thread.tgid;
        // A runtime's wait for its timer that came (Go's netpoller, a condition variable with
        // a deadline) may be where a key waits for the program's tick: always said. Sleeps
        // (Go's monitor sleeps every few ms) and waits that something ended are counted.
        let a_tick = timed_out && how != flushlab_observer::wire::W_SLEEP;
        if thread.writes == 0 && !a_tick {
            let last = self.quiet.entry(tgid).or_insert(0);
            if end.saturating_sub(*last) < QUIET_WAIT_EVERY_NS {
                return;
            }
            *last = end;
        }
        let thread = self.thread(pid);
        let record = Record::Wait(Wait {
            pid: tgid,
            tid: pid.as_raw() as u32,
            writes: thread.writes,
            bytes: thread.bytes,
            first_write_ns: thread.first_ns,
            start_ns: start,
            end_ns: end,
            how,
            timed_out,
            traced: true,
            ..Wait::default()
        });
        thread.writes = 0;
        thread.bytes = 0;
        self.send(&record);
    }

    /// A thread ending, or execing: the writes after its last wait.
    fn tail(&mut self, pid: Pid, now: u64) {
        let thread = self.thread(pid);
        if thread.writes == 0 {
            return;
        }
        let record = Record::Tail(Wait {
            pid: thread.tgid,
            tid: pid.as_raw() as u32,
            writes: thread.writes,
            bytes: thread.bytes,
            first_write_ns: thread.first_ns,
            start_ns: now,
            end_ns: now,
            ..Wait::default()
        });
        thread.writes = 0;
        thread.bytes = 0;
        self.send(&record);
    }

    /// A new program in a process: said as the preload says it loaded.
    fn exec(&mut self, pid: Pid, now: u64) {
        self.tail(pid, now);
        self.cost.images += 1;
        // The exec made the thread the process's leader: its tgid is its pid now.
        let tgid = tgid_of(pid);
        self.thread(pid).tgid = tgid;
        let name = std::fs::read_to_string(format!("/proc/{}/comm", pid.as_raw()))
            .map(|n| n.trim_end().to_owned())
            .unwrap_or_default();
        self.send(&Record::Hello { pid: tgid, name });
    }

    /// Whether a thread's fd is the terminal (the pty, or /dev/tty): looked at in /proc at
    /// each stop, so a descriptor closed and opened again is never taken for what it was.
    fn is_terminal(&self, pid: Pid, fd: u64) -> bool {
        let Ok(stat) = rustix::fs::stat(format!("/proc/{}/fd/{fd}", pid.as_raw())) else {
            return false;
        };
        let char_device = rustix::fs::FileType::from_raw_mode(stat.st_mode)
            == rustix::fs::FileType::CharacterDevice;
        let dev_tty = rustix::fs::makedev(5, 0);
        char_device && (stat.st_rdev == self.tty_rdev || stat.st_rdev == dev_tty)
    }

    fn send(&mut self, record: &Record) {
        // One write a record, as the preload's (wrap takes them off the tree's counts).
        let _ = self.channel.write_all(&record.to_wire());
    }
}

/// The bytes a write asks to write: its count, or its vectors' lengths added (read from the
/// program's memory, 1,024 vectors at most, as the kernel's IOV_MAX).
fn asked_bytes(pid: Pid, number: i64, args: &[u64; 6]) -> u64 {
    use nix::libc as c;
    match number {
        c::SYS_write | c::SYS_pwrite64 => args[2],
        _ => (0..args[2].min(1024))
            .map(|i| {
                let len = args[1] + i * 16 + 8;
                ptrace::read(pid, len as ptrace::AddressType).map_or(0, |n| n as u64)
            })
            .sum(),
    }
}

/// Whether a wait can block, from its arguments (futex: from how long it took).
fn blocks(pid: Pid, number: i64, args: &[u64; 6]) -> bool {
    use nix::libc as c;
    // A timespec or timeval pointer: none waits for ever; all zero does not wait.
    let timeout = |ptr: u64| {
        if ptr == 0 {
            return true;
        }
        let word = |offset: u64| ptrace::read(pid, (ptr + offset) as ptrace::AddressType);
        !matches!((word(0), word(8)), (Ok(0), Ok(0)))
    };
    match number {
        c::SYS_ppoll => timeout(args[2]),
        c::SYS_select | c::SYS_pselect6 => timeout(args[4]),
        c::SYS_epoll_pwait2 => timeout(args[3]),
        c::SYS_nanosleep => timeout(args[0]),
        c::SYS_clock_nanosleep => args[1] != 0 || timeout(args[2]),
        c::SYS_futex => false,
        _ => true,
    }
}

fn tgid_of(pid: Pid) -> u32 {
    std::fs::read_to_string(format!("/proc/{}/status", pid.as_raw()))
        .ok()
        .and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("Tgid:"))
                .and_then(|t| t.trim().parse().ok())
        })
        .unwrap_or(pid.as_raw() as u32)
}

/// PTRACE_EVENT_STOP (linux/ptrace.h), which nix's `Event` does not name.
const fn libc_event_stop() -> i32 {
    128
}
