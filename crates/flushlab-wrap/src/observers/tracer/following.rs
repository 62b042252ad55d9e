//! The tracer at work: every stop of CMD's tree, followed across fork, vfork, clone and exec,
//! each call the filter stops at turned into the preload's records on wrap's channel.

use std::collections::HashMap;
use std::fs::File;
use std::io::Write;

use flushlab_observer::{Record, TracerCost, Wait, now_ns};
use nix::sys::ptrace::{self, Event};
use nix::sys::signal::Signal;
use nix::sys::wait::{WaitPidFlag, WaitStatus, waitpid};
use nix::unistd::Pid;

use super::filter;
use super::filter::{Call, Stops};
use super::stopped::{asked_bytes, blocks};
use flushlab_core::outcome::Outcome;

/// A futex wait shorter than this is a lock, not a wait between frames (the preload's rule,
/// `FUTEX_BLOCKED_NS` in observer.c).
const FUTEX_BLOCKED_NS: u64 = 500_000;

/// A wait with no terminal write before it is said at most this often a process (the preload's
/// `QUIET_WAIT_EVERY_NS`).
const QUIET_WAIT_EVERY_NS: u64 = 1_000_000;

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

pub(super) struct Tracer {
    /// PTRACE_LISTEN, as src/main.rs passes it (the tracer's `Listen`).
    listen: fn(i32),
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
    /// Ready to follow, sending on `channel` what it sees of the terminal `tty_rdev`.
    pub(super) fn new(listen: fn(i32), stops: Stops, (channel, tty_rdev): (File, u64)) -> Tracer {
        Tracer {
            listen,
            stops,
            channel,
            tty_rdev,
            threads: HashMap::new(),
            quiet: HashMap::new(),
            live: HashMap::new(),
            cost: TracerCost {
                pid: std::process::id(),
                ..TracerCost::default()
            },
        }
    }

    /// What following cost, the tracer's own CPU (`cpu_ns`) with it: its last record.
    pub(super) fn send_cost(&mut self, cpu_ns: u64) {
        self.cost.cpu_ns = cpu_ns;
        let cost = self.cost;
        self.send(&Record::Cost(cost));
    }

    /// Every stop, until CMD (`child`) has ended: its status.
    pub(super) fn follow(&mut self, child: Pid) -> Outcome {
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

    pub(super) fn send(&mut self, record: &Record) {
        // One write a record, as the preload's (wrap takes them off the tree's counts).
        let _ = self.channel.write_all(&record.to_wire());
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
