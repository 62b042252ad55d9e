//! Processes: becoming a subreaper, waiting for children without reaping them, reaping the
//! orphans a subreaper inherits.

use std::io;

/// Makes this process the reaper of its orphaned descendants (PR_SET_CHILD_SUBREAPER), so that
/// a program's whole tree stays its descendants.
pub fn become_subreaper() -> io::Result<()> {
    Ok(rustix::process::set_child_subreaper(Some(
        rustix::process::getpid(),
    ))?)
}

/// Whether child `pid` has exited, without reaping it: its counters in `/proc` stay readable
/// until it is. `false` for an id that names no child.
pub fn has_exited(pid: i32) -> bool {
    use rustix::process::{WaitId, WaitIdOptions, waitid};
    let Ok(pid) = super::signals::pid(pid) else {
        return false;
    };
    waitid(
        WaitId::Pid(pid),
        WaitIdOptions::EXITED | WaitIdOptions::NOWAIT | WaitIdOptions::NOHANG,
    )
    .is_ok_and(|status| status.is_some())
}

/// Reaps every child of this process that has exited, without waiting for any.
pub fn reap_exited() {
    use rustix::process::{WaitOptions, wait};
    while let Ok(Some(_)) = wait(WaitOptions::NOHANG) {}
}

/// What `/proc` says of a process and its threads: read here, so that no room outside `sys`
/// names a file of the kernel's (tests/it/architecture.rs checks that).
///
/// Every live child of `pid`, over all its threads (`/proc/PID/task/TID/children`).
pub fn children(pid: i32) -> Vec<i32> {
    thread_files(pid, "children")
        .iter()
        .flat_map(|c| c.split_whitespace().filter_map(|child| child.parse().ok()))
        .collect()
}

/// A thread's state and, when it is in a system call, the call's number and first argument
/// (`/proc/PID/task/TID/stat` and `…/syscall`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ThreadState {
    /// The state letter: `R` running, `S` asleep, `D` in uninterruptible sleep, `Z` a zombie…
    pub state: u8,
    /// The system call the thread is in and its first argument, when it is in one.
    pub call: Option<(u64, u64)>,
}

/// The states of `pid`'s threads, `None` when the process is gone. `with_calls`: read each
/// asleep thread's system call too (one more read a thread).
pub fn thread_states(pid: i32, with_calls: bool) -> Option<Vec<ThreadState>> {
    let tasks = std::fs::read_dir(format!("/proc/{pid}/task")).ok()?;
    let states = tasks
        .flatten()
        .filter_map(|task| {
            let stat = std::fs::read_to_string(task.path().join("stat")).ok()?;
            // The state follows the command name's closing parenthesis.
            let state = *stat.rsplit_once(')')?.1.trim_start().as_bytes().first()?;
            let call = (with_calls && matches!(state, b'S' | b'D'))
                .then(|| std::fs::read_to_string(task.path().join("syscall")).ok())
                .flatten()
                .and_then(|call| {
                    let mut fields = call.split_whitespace();
                    let number = fields.next()?.parse::<u64>().ok()?;
                    let arg = fields.next()?;
                    let arg = u64::from_str_radix(arg.trim_start_matches("0x"), 16).ok()?;
                    Some((number, arg))
                });
            Some(ThreadState { state, call })
        })
        .collect();
    Some(states)
}

/// The bytes `pid`'s threads wrote themselves (`/proc/PID/task/TID/io`: `/proc/PID/io` also
/// holds the children it reaped).
pub fn threads_wrote(pid: i32) -> u64 {
    let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) else {
        return 0;
    };
    tasks
        .flatten()
        .filter_map(|task| {
            let file = std::fs::File::open(task.path().join("io")).ok()?;
            super::io::read_proc_io(&file)
        })
        .map(|io| io.bytes)
        .sum()
}

/// The program `pid` runs (`/proc/PID/exe`).
pub fn executable(pid: i32) -> io::Result<std::path::PathBuf> {
    std::fs::read_link(format!("/proc/{pid}/exe"))
}

/// What `pid`'s descriptor `fd` is open on (`/proc/PID/fd/FD`).
pub fn fd_target(pid: i32, fd: u64) -> io::Result<std::path::PathBuf> {
    std::fs::read_link(format!("/proc/{pid}/fd/{fd}"))
}

/// `pid`'s descriptor `fd` opened again for reading (never as this process's controlling
/// terminal): the very file, where it is a terminal, through `/proc` (another process's
/// terminal, `wrap --via`'s far end; root, or the same user).
pub fn open_fd_of(pid: i32, fd: u64) -> io::Result<std::os::fd::OwnedFd> {
    use rustix::fs::{Mode, OFlags};
    let flags = OFlags::RDONLY | OFlags::NOCTTY | OFlags::CLOEXEC;
    Ok(rustix::fs::open(
        format!("/proc/{pid}/fd/{fd}"),
        flags,
        Mode::empty(),
    )?)
}

/// The network namespace the calling thread is in, held open (it lives while held, and a
/// thread can enter it again with setns).
pub fn thread_net_namespace() -> io::Result<std::os::fd::OwnedFd> {
    Ok(std::fs::File::open("/proc/thread-self/ns/net")?.into())
}

/// Whether one of `pid`'s descriptors is open on `target` (`anon_inode:[perf_event]`: a
/// profiler that records).
pub fn opened(pid: i32, target: &str) -> bool {
    std::fs::read_dir(format!("/proc/{pid}/fd")).is_ok_and(|fds| {
        fds.flatten()
            .any(|fd| std::fs::read_link(fd.path()).is_ok_and(|t| t.as_os_str() == target))
    })
}

/// `pid`'s memory map (`/proc/PID/maps`), empty when it cannot be read.
pub fn memory_map(pid: i32) -> String {
    std::fs::read_to_string(format!("/proc/{pid}/maps")).unwrap_or_default()
}

/// The processor's model name (`/proc/cpuinfo`).
pub fn cpu_model() -> Option<String> {
    let info = std::fs::read_to_string("/proc/cpuinfo").ok()?;
    info.lines().find_map(|l| {
        l.strip_prefix("model name")?
            .split_once(':')
            .map(|(_, m)| m.trim().to_owned())
    })
}

/// The contents of one file of each of `pid`'s threads.
fn thread_files(pid: i32, name: &str) -> Vec<String> {
    let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) else {
        return Vec::new();
    };
    tasks
        .flatten()
        .filter_map(|task| std::fs::read_to_string(task.path().join(name)).ok())
        .collect()
}
