//! The operating system, called in one place: what the kernel accounts for a process and its
//! threads — CPU time, the scheduler's statistics, the thread's id, a process's group and
//! session — and a terminal's window size here; what it counts of writes in [`io`],
//! pseudo-terminals in [`pty`], signals in [`signals`], children and reaping in [`process`].
//! Linux today; another kernel (macOS) is another set of these functions. Where Linux's `/proc`
//! is missing the scheduler's figures are `None`, and the figures that need them are left out.

pub mod io;
pub mod process;
pub mod pty;
pub mod signals;
pub mod user;

use std::time::Duration;

/// Starts a named thread. A refusal (the process's limit on threads or on memory for the
/// thread's stack: `ulimit -u`, `ulimit -v`) names the thread, so the one line a user reads says
/// what could not start and why, not a bare "Resource temporarily unavailable".
pub fn spawn_thread<F, T>(name: &str, body: F) -> std::io::Result<std::thread::JoinHandle<T>>
where
    F: FnOnce() -> T + Send + 'static,
    T: Send + 'static,
{
    std::thread::Builder::new()
        .name(name.into())
        .spawn(body)
        .map_err(|e| {
            std::io::Error::new(
                e.kind(),
                format!(
                    "could not start the {name} thread ({e}): the process's limit on threads \
                     or on memory (ulimit -u, ulimit -v)"
                ),
            )
        })
}

/// Whether `fd` has something to read within `limit` (a signal that cuts the wait short says
/// no): how a watcher waits for its display's next event and still looks at its stop flag.
pub fn readable_within(fd: std::os::fd::BorrowedFd<'_>, limit: Duration) -> std::io::Result<bool> {
    use rustix::event::{PollFd, PollFlags, Timespec, poll};
    let mut fds = [PollFd::new(&fd, PollFlags::IN)];
    let timeout = Timespec::try_from(limit).unwrap_or(Timespec {
        tv_sec: 1,
        tv_nsec: 0,
    });
    match poll(&mut fds, Some(&timeout)) {
        Ok(n) => Ok(n > 0),
        Err(rustix::io::Errno::INTR) => Ok(false),
        Err(e) => Err(e.into()),
    }
}

/// A thread's time so far on a CPU and runnable but waiting for one, from its `schedstat`
/// (nanoseconds, `/proc/thread-self/schedstat` or `/proc/self/task/TID/schedstat`).
fn schedstat(path: &str) -> Option<(Duration, Duration)> {
    parse_schedstat(&std::fs::read_to_string(path).ok()?)
}

/// The `schedstat` figures (on a CPU, waiting for one) of this process's thread `tid`.
pub fn thread_schedstat(tid: i32) -> Option<(Duration, Duration)> {
    schedstat(&format!("/proc/self/task/{tid}/schedstat"))
}

fn parse_schedstat(text: &str) -> Option<(Duration, Duration)> {
    let mut fields = text.split_whitespace().map(|f| f.parse::<u64>().ok());
    let (on_cpu, cpu_wait) = (fields.next()??, fields.next()??);
    Some((Duration::from_nanos(on_cpu), Duration::from_nanos(cpu_wait)))
}

/// The calling thread's own `schedstat` figures (on a CPU, waiting for one).
pub fn own_schedstat() -> Option<(Duration, Duration)> {
    schedstat("/proc/thread-self/schedstat")
}

/// One thread's `schedstat`, opened once and re-read with one `pread` a reading: for callers
/// that read it every frame. `/proc/thread-self` is resolved when opened, so the readings are
/// those of the thread that opened it, whichever thread reads.
#[derive(Debug)]
pub struct SchedstatFile(std::fs::File);

impl SchedstatFile {
    /// The calling thread's; `None` where the kernel keeps no scheduler statistics.
    pub fn of_this_thread() -> Option<SchedstatFile> {
        let file = std::fs::File::open("/proc/thread-self/schedstat").ok()?;
        let file = SchedstatFile(file);
        file.read().map(|_| file)
    }

    /// (on a CPU, runnable waiting for one), so far.
    pub fn read(&self) -> Option<(Duration, Duration)> {
        use std::os::unix::fs::FileExt;
        let mut buf = [0u8; 128];
        let n = self.0.read_at(&mut buf, 0).ok()?;
        parse_schedstat(std::str::from_utf8(&buf[..n]).ok()?)
    }
}

/// Whose CPU time [`cpu_time`] reads.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Usage {
    /// Every thread of this process.
    Process,
    /// The children this process has reaped (and the children they reaped).
    Children,
    /// The calling thread.
    Thread,
}

/// User and kernel CPU time so far (getrusage(2)); zero where it cannot be read.
pub fn cpu_time(of: Usage) -> (Duration, Duration) {
    let to_duration = |tv: nix::sys::time::TimeVal| {
        Duration::new(
            tv.tv_sec().max(0) as u64,
            (tv.tv_usec().max(0) as u32) * 1000,
        )
    };
    nix::sys::resource::getrusage(who(of)).map_or((Duration::ZERO, Duration::ZERO), |usage| {
        (
            to_duration(usage.user_time()),
            to_duration(usage.system_time()),
        )
    })
}

/// The time all the machine's CPUs have spent busy so far — user, nice, system, irq and
/// softirq from `/proc/stat`; idle, iowait and steal (the hypervisor's) left out — the kernel's
/// own workers included, and every other process: what a stretch of time cost the whole
/// machine. `None` without `/proc/stat`.
pub fn machine_busy() -> Option<Duration> {
    let text = std::fs::read_to_string("/proc/stat").ok()?;
    parse_machine_busy(&text, rustix::param::clock_ticks_per_second())
}

fn parse_machine_busy(stat: &str, ticks_per_second: u64) -> Option<Duration> {
    let line = stat.lines().find(|l| l.starts_with("cpu "))?;
    let fields: Vec<u64> = line
        .split_whitespace()
        .skip(1)
        .map(|f| f.parse().ok())
        .collect::<Option<_>>()?;
    // user nice system idle iowait irq softirq steal …
    let busy: u64 = [0, 1, 2, 5, 6]
        .iter()
        .map(|&i| fields.get(i).copied())
        .sum::<Option<u64>>()?;
    let nanos = u128::from(busy) * 1_000_000_000 / u128::from(ticks_per_second.max(1));
    Some(Duration::from_nanos(u64::try_from(nanos).ok()?))
}

/// The largest resident set, in KiB (Linux counts `ru_maxrss` in KiB): of this process, or of
/// the largest of the children it reaped.
pub fn peak_rss_kib(of: Usage) -> u64 {
    nix::sys::resource::getrusage(who(of)).map_or(0, |usage| usage.max_rss().max(0) as u64)
}

fn who(of: Usage) -> nix::sys::resource::UsageWho {
    use nix::sys::resource::UsageWho;
    match of {
        Usage::Process => UsageWho::RUSAGE_SELF,
        Usage::Children => UsageWho::RUSAGE_CHILDREN,
        Usage::Thread => UsageWho::RUSAGE_THREAD,
    }
}

/// The process's address-space limit (RLIMIT_AS, `ulimit -v`), in bytes; `None` when there is
/// none.
pub fn address_space_limit() -> Option<u64> {
    rustix::process::getrlimit(rustix::process::Resource::As).current
}

/// CLOCK_MONOTONIC in nanoseconds: the clock the X server stamps its events with, so that
/// flushlab's write times and a terminal's paint times can be compared (a vDSO call, no
/// syscall).
pub fn monotonic_ns() -> u64 {
    let now = rustix::time::clock_gettime(rustix::time::ClockId::Monotonic);
    now.tv_sec as u64 * 1_000_000_000 + now.tv_nsec as u64
}

/// The CPU time the calling thread has used, in ns (what a computation beside the run costs).
pub fn thread_cpu_ns() -> u64 {
    let now = rustix::time::clock_gettime(rustix::time::ClockId::ThreadCPUTime);
    now.tv_sec as u64 * 1_000_000_000 + now.tv_nsec as u64
}

/// The kernel's `perf_event_paranoid` (2 and above: no perf events for this user's processes,
/// what samply needs), `None` when it cannot be read.
pub fn perf_event_paranoid() -> Option<i32> {
    sysctl("kernel/perf_event_paranoid").and_then(|v| i32::try_from(v).ok())
}

/// A kernel setting that is a number (`kernel/yama/ptrace_scope`: its path under /proc/sys),
/// `None` where this kernel has none or it cannot be read.
pub fn sysctl(name: &str) -> Option<i64> {
    std::fs::read_to_string(std::path::Path::new("/proc/sys").join(name))
        .ok()?
        .trim()
        .parse()
        .ok()
}

/// The kernel's id of the calling thread.
pub fn thread_id() -> i32 {
    rustix::thread::gettid().as_raw_nonzero().get()
}

/// A process's parent, process group and session, as `/proc/PID/stat` gives them in this
/// PID namespace. An id is 0 where it lies outside the namespace (a container's harness, the
/// session of `docker exec`): what getpgid(2) and getsid(2) return then too, which rustix's
/// wrappers take for a non-zero pid, so they are not used for other processes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ProcessIds {
    pub parent: i32,
    pub group: i32,
    pub session: i32,
}

/// `pid`'s [`ProcessIds`] (`None`: this process's); `None` once it is gone or without `/proc`.
pub fn process_ids(pid: Option<i32>) -> Option<ProcessIds> {
    let path = match pid {
        Some(pid) => format!("/proc/{pid}/stat"),
        None => "/proc/self/stat".to_owned(),
    };
    parse_stat_ids(&std::fs::read_to_string(path).ok()?)
}

/// `pid (comm) state ppid pgrp session …`; comm may hold spaces and ')', so the fields are
/// counted from the last ')'.
fn parse_stat_ids(stat: &str) -> Option<ProcessIds> {
    let mut fields = stat.rsplit_once(')')?.1.split_whitespace().skip(1);
    let mut next = || fields.next()?.parse::<i32>().ok().filter(|id| *id >= 0);
    Some(ProcessIds {
        parent: next()?,
        group: next()?,
        session: next()?,
    })
}

/// The window size (columns, rows) of the terminal `fd` is (TIOCGWINSZ).
pub fn window_size(fd: impl std::os::fd::AsFd) -> std::io::Result<(u16, u16)> {
    let size = rustix::termios::tcgetwinsize(fd)?;
    Ok((size.ws_col, size.ws_row))
}

/// Sets the window size of the terminal `fd` is (TIOCSWINSZ): a pty's master, whose program
/// the kernel then sends SIGWINCH.
pub fn set_window_size(
    fd: impl std::os::fd::AsFd,
    (cols, rows): (u16, u16),
) -> std::io::Result<()> {
    let size = rustix::termios::Winsize {
        ws_col: cols,
        ws_row: rows,
        ws_xpixel: 0,
        ws_ypixel: 0,
    };
    Ok(rustix::termios::tcsetwinsize(fd, size)?)
}

/// File descriptor 1 pointed somewhere else until this is dropped: Rust's `stdout()` writes to
/// fd 1 whatever it is, so a program whose stdout is a pipe can draw on its terminal for a while
/// and still hand the pipe its output afterwards (`flushlab tour --export-json - | jq`).
#[derive(Debug)]
pub struct StdoutRedirect {
    previous: std::os::fd::OwnedFd,
}

impl StdoutRedirect {
    /// Flushes `stdout()` and puts `to` on fd 1 (dup2(2)); fd 1 keeps its number.
    pub fn to(to: impl std::os::fd::AsFd) -> std::io::Result<StdoutRedirect> {
        use std::io::Write;
        use std::os::fd::AsFd;
        std::io::stdout().flush()?;
        let previous = std::io::stdout().as_fd().try_clone_to_owned()?;
        rustix::stdio::dup2_stdout(to)?;
        Ok(StdoutRedirect { previous })
    }
}

impl Drop for StdoutRedirect {
    /// What went to `stdout()` meanwhile is flushed where it was meant to go, then fd 1 is what
    /// it was. Errors are ignored: there is nowhere left to report them.
    fn drop(&mut self) {
        use std::io::Write;
        let _ = std::io::stdout().flush();
        let _ = rustix::stdio::dup2_stdout(&self.previous);
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn stat_ids_are_read_after_the_last_parenthesis() {
        let stat = "42 (a) b (c)) S 7 42 3 34816 42 4194560 0";
        let ids = super::parse_stat_ids(stat).unwrap();
        assert_eq!(
            ids,
            super::ProcessIds {
                parent: 7,
                group: 42,
                session: 3
            }
        );
        assert_eq!(
            super::parse_stat_ids("1 (init) S 0 0 0 0"),
            Some(super::ProcessIds {
                parent: 0,
                group: 0,
                session: 0
            })
        );
        assert_eq!(super::parse_stat_ids("1 (x) S -1 2 3"), None);
        assert_eq!(super::parse_stat_ids("garbage"), None);
        let own = super::process_ids(None).unwrap();
        assert_eq!(own.parent as u32, std::os::unix::process::parent_id());
    }

    #[test]
    fn the_machines_busy_time_leaves_out_idle_iowait_and_steal() {
        let stat = "cpu  100 2 30 5000 40 6 7 800 0 0\ncpu0 50 1 15 2500 20 3 3 400 0 0\n";
        let busy = super::parse_machine_busy(stat, 100).unwrap();
        assert_eq!(busy, std::time::Duration::from_millis(1450));
        assert_eq!(super::parse_machine_busy("cpu0 1 2 3", 100), None);
        assert_eq!(super::parse_machine_busy("cpu  1 x 3 4 5 6 7", 100), None);
        let (Some(before), Some(after)) = (super::machine_busy(), super::machine_busy()) else {
            return; // no /proc/stat
        };
        assert!(after >= before);
    }

    #[test]
    fn a_thread_that_spins_is_on_a_cpu() {
        let Some((before, _)) = super::own_schedstat() else {
            return; // no schedstat on this kernel
        };
        let start = std::time::Instant::now();
        while start.elapsed() < std::time::Duration::from_millis(30) {}
        let (after, _) = super::own_schedstat().unwrap();
        assert!(after > before);
        let by_id = format!("/proc/self/task/{}/schedstat", super::thread_id());
        assert!(super::schedstat(&by_id).unwrap().0 >= after);
    }
}
