//! CMD's whole process tree, seen from wrap: what it wrote, whether it waited on the terminal,
//! what it is written in, and its end.
//!
//! wrap makes itself a *child subreaper* before it starts CMD, so every process CMD starts —
//! a pipeline's stages, `watch`'s shells, a daemon that double-forks or calls `setsid` — stays
//! wrap's descendant, and an orphan is re-parented to wrap instead of init. Then:
//! - **write(2) counts** come from wrap's own `/proc/self/io`: the kernel adds a reaped child's
//!   counters (and those of the children it reaped) to its parent's, so wrap's counters after it
//!   has reaped the whole tree, minus before, minus wrap's own writes (which it counts), are the
//!   tree's. That needs no permission over CMD (a normal user cannot read a finished child's
//!   `/proc/PID/io`) and misses no short-lived process.
//! - **waiting on the reader** is sampled: a thread asleep in write(2) on the pty's slave
//!   (`/proc/PID/task/TID/syscall` names the call and its fd) is a writer the terminal holds up.
//! - **the end**: what is left of the tree when CMD is over gets SIGTERM, then SIGKILL, and is
//!   reaped. A process escapes only by leaving wrap's tree with a new parent that is not a
//!   descendant (ptrace re-parenting) — none of the programs tested here do.

use std::collections::HashMap;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use serde::Serialize;

use flushlab_core::accounting::{IoCounters, process_io};

/// write-family system calls, by number, on the architectures wrap knows.
#[cfg(target_arch = "x86_64")]
const WRITE_CALLS: &[u64] = &[1, 18, 20, 296, 328];
#[cfg(target_arch = "aarch64")]
const WRITE_CALLS: &[u64] = &[64, 66, 68, 70, 287];
#[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
const WRITE_CALLS: &[u64] = &[];

/// What a program is written in, as far as wrap can see (its executable and libraries): the
/// fix a diagnosis suggests is said in its terms.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Language {
    Rust,
    C,
    Python,
    Node,
    Shell,
    #[default]
    Unknown,
}

/// The process that wrote the most, and what it is.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct Writer {
    pub executable: String,
    pub language: Language,
    /// It draws through (n)curses.
    pub curses: bool,
    /// A Rust program that carries ratatui's crossterm backend (its sources' paths are in the
    /// binary, as any crate's panic locations are).
    pub ratatui_crossterm: bool,
}

#[derive(Clone, Debug, Default)]
struct Seen {
    exe: PathBuf,
    wrote: u64,
    python: bool,
    node: bool,
    curses: bool,
    libc: bool,
}

/// See the module's documentation.
#[derive(Debug)]
pub struct Tree {
    slave: PathBuf,
    io_before: Option<IoCounters>,
    samples: u64,
    blocked: u64,
    seen: HashMap<i32, Seen>,
    last_survey: Option<Instant>,
    /// wrap's tracer, in CMD's place (`--observer ptrace`): never the writer, whatever it wrote
    /// (its records).
    tracer: Option<i32>,
    /// `wrap --via`: the wire's own programs (sshd, the ssh client), wrap's descendants that
    /// carry CMD's output but are not CMD: never the writer either.
    wire: Vec<PathBuf>,
    /// `wrap --via`: the wire's processes that outlive a run (sshd, the sweeper).
    lasting: Vec<i32>,
}

impl Tree {
    /// Makes wrap a subreaper and notes its counters; call before CMD starts.
    pub fn adopt_descendants(slave: PathBuf) -> std::io::Result<Tree> {
        flushlab_core::sys::process::become_subreaper()?;
        Ok(Tree {
            slave,
            io_before: self_io(),
            samples: 0,
            blocked: 0,
            seen: HashMap::new(),
            last_survey: None,
            tracer: None,
            wire: Vec::new(),
            lasting: Vec::new(),
        })
    }

    /// `wrap --via`: these executables are the wire's, not CMD's, and these processes (with
    /// theirs) outlive a run: the wire serves every run of a wrap.
    pub fn is_the_wire(&mut self, (executables, lasting): (Vec<PathBuf>, Vec<i32>)) {
        self.wire = executables;
        self.lasting = lasting;
    }

    /// The tracer's pid: a process of the tree that is wrap's, not CMD's.
    pub fn is_the_tracer(&mut self, pid: i32) {
        self.tracer = Some(pid);
    }

    /// Every live descendant of wrap, CMD first.
    fn descendants() -> Vec<i32> {
        Tree::descendants_sparing(&[])
    }

    /// wrap's descendants but `spared` and theirs.
    fn descendants_sparing(spared: &[i32]) -> Vec<i32> {
        let mut found = Vec::new();
        let mut next = vec![std::process::id() as i32];
        while let Some(pid) = next.pop() {
            for child in flushlab_core::sys::process::children(pid) {
                if !spared.contains(&child) {
                    found.push(child);
                    next.push(child);
                }
            }
        }
        found
    }

    /// One look at the tree (call every few milliseconds): whether a thread is asleep in
    /// write(2) on the terminal; what each new process is; every 100 ms also who writes the
    /// most.
    pub fn sample(&mut self) {
        let pids = Tree::descendants();
        if pids.is_empty() {
            return;
        }
        self.samples += 1;
        if pids.iter().any(|&pid| self.waits_on_terminal(pid)) {
            self.blocked += 1;
        }
        // Every 100 ms the whole tree; in between only processes not seen yet, so that a
        // pipeline that lives less than that (`seq | cat`) is still seen, not just its shell.
        let now = Instant::now();
        let survey = self
            .last_survey
            .is_none_or(|last| now - last >= Duration::from_millis(100));
        if survey {
            self.last_survey = Some(now);
        }
        for pid in pids {
            // Looked at again after an exec (`setsid` and `env` become CMD in place; a forked
            // shell becomes `cat`). A process that exited meanwhile (its exe no longer
            // readable) is not a writer to name.
            let Ok(exe) = flushlab_core::sys::process::executable(pid) else {
                continue;
            };
            let known = self
                .seen
                .get(&pid)
                .is_some_and(|s| s.exe == exe && (s.libc || s.python || s.node));
            if !survey && known {
                continue;
            }
            let wrote = own_writes(pid);
            let seen = self.seen.entry(pid).or_default();
            // Right after an exec only the loader is mapped: looked at again until a library
            // tells what it is.
            if seen.exe != exe || !(seen.libc || seen.python || seen.node) {
                *seen = Seen {
                    wrote: seen.wrote,
                    ..look_at(pid, exe)
                };
            }
            seen.wrote = seen.wrote.max(wrote);
        }
    }

    /// Whether every thread of CMD's tree is asleep (waiting for input, a timer, a lock): CMD is
    /// idle, ready for a key. `false` while the tree is empty. A look reads the processes one
    /// after another, so a shell read asleep in wait4 before its child of a millisecond was read
    /// a zombie would pass for idle while the shell runs child after child (a loop of
    /// `/bin/true` had a keyed run end at 1 s on a busy machine): idle is two looks in a row
    /// finding the same processes, all asleep.
    pub fn idle(&self) -> bool {
        let first = Tree::asleep();
        first.is_some() && first == Tree::asleep()
    }

    /// The tree's processes when every thread of each is asleep or a zombie; `None` when one is
    /// not, one went away while it was looked at (it was running), or the tree is empty.
    fn asleep() -> Option<Vec<i32>> {
        let pids = Tree::descendants();
        let all = !pids.is_empty()
            && pids.iter().all(|&pid| {
                flushlab_core::sys::process::thread_states(pid, false)
                    .is_some_and(|threads| threads.iter().all(|t| matches!(t.state, b'S' | b'Z')))
            });
        all.then_some(pids)
    }

    fn waits_on_terminal(&self, pid: i32) -> bool {
        let Some(threads) = flushlab_core::sys::process::thread_states(pid, true) else {
            return false;
        };
        threads.iter().any(|thread| match thread.call {
            Some((number, fd)) if WRITE_CALLS.contains(&number) => {
                flushlab_core::sys::process::fd_target(pid, fd)
                    .is_ok_and(|target| target == self.slave)
            }
            _ => false,
        })
    }

    /// The share of samples in which a process of the tree was asleep in write(2) on the
    /// terminal: how much of the run the reader held the writer up. `None` before any sample.
    pub fn blocked_share(&self) -> Option<f64> {
        (self.samples > 0).then(|| self.blocked as f64 / self.samples as f64)
    }

    /// The process that wrote the most, and what it is written in.
    pub fn writer(&self) -> Writer {
        // Among processes that wrote as much (a pipeline surveyed before any wrote), the newest
        // (highest pid): the leaf doing the work, not the shell that started it; and the same
        // answer every time, not the map's order.
        let Some((_, seen)) = self
            .seen
            .iter()
            .filter(|(pid, s)| Some(**pid) != self.tracer && !self.wire.contains(&s.exe))
            .max_by_key(|(pid, s)| (s.wrote, **pid))
        else {
            return Writer::default();
        };
        let name = seen
            .exe
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        let language = if seen.python || name.starts_with("python") {
            Language::Python
        } else if seen.node || matches!(name.as_str(), "node" | "nodejs") {
            Language::Node
        } else if matches!(
            name.as_str(),
            "sh" | "bash" | "dash" | "zsh" | "ksh" | "mksh" | "fish" | "busybox"
        ) {
            Language::Shell
        } else if crate::observers::executable::mentions(&seen.exe, b"/rustc/") {
            Language::Rust
        } else if seen.libc {
            Language::C
        } else {
            Language::Unknown
        };
        let ratatui_crossterm = language == Language::Rust
            && crate::observers::executable::mentions(&seen.exe, b"ratatui-crossterm");
        Writer {
            executable: seen.exe.to_string_lossy().into_owned(),
            language,
            curses: seen.curses,
            ratatui_crossterm,
        }
    }

    /// Ends what is left of the tree (SIGTERM, SIGKILL after `grace`) and reaps every process
    /// re-parented to wrap. CMD itself must have been reaped already.
    pub fn end_the_rest(&mut self, grace: Duration) {
        Tree::end_descendants_sparing(grace, &self.lasting);
    }

    /// Ends every descendant of wrap but `spared` and theirs (SIGTERM, SIGKILL after `grace`)
    /// and reaps them.
    pub fn end_descendants_sparing(grace: Duration, spared: &[i32]) {
        use flushlab_core::sys::signals::{Signal, signal_process};
        let signal_all = |signal| {
            let pids = Tree::descendants_sparing(spared);
            for &pid in &pids {
                let _ = signal_process(pid, signal);
            }
            !pids.is_empty()
        };
        flushlab_core::sys::process::reap_exited();
        if signal_all(Signal::TERM) {
            let until = Instant::now() + grace;
            while Instant::now() < until && !Tree::descendants_sparing(spared).is_empty() {
                std::thread::sleep(Duration::from_millis(5));
                flushlab_core::sys::process::reap_exited();
            }
            while signal_all(Signal::KILL) {
                std::thread::sleep(Duration::from_millis(5));
                flushlab_core::sys::process::reap_exited();
            }
        }
        flushlab_core::sys::process::reap_exited();
    }

    /// The write(2) calls and bytes of the whole tree, once it is reaped: wrap's counters since
    /// [`Tree::adopt_descendants`] minus `own`, the writes wrap made itself meanwhile.
    pub fn writes(&self, own: IoCounters) -> Option<IoCounters> {
        let (before, after) = (self.io_before?, self_io()?);
        let delta = after.since(before);
        Some(IoCounters {
            write_calls: delta.write_calls.saturating_sub(own.write_calls),
            bytes: delta.bytes.saturating_sub(own.bytes),
        })
    }
}

/// Bytes a process wrote itself: its threads' counters (`/proc/PID/io` also holds the children
/// it reaped, which would make a shell the writer of its pipeline).
fn own_writes(pid: i32) -> u64 {
    flushlab_core::sys::process::threads_wrote(pid)
}

fn self_io() -> Option<IoCounters> {
    process_io(std::process::id() as i32)
}

fn look_at(pid: i32, exe: PathBuf) -> Seen {
    let maps = flushlab_core::sys::process::memory_map(pid);
    let has = |lib: &str| maps.contains(lib);
    Seen {
        exe,
        wrote: 0,
        python: has("libpython"),
        node: has("libnode"),
        curses: has("libncurses") || has("_curses"),
        libc: has("/libc.so") || has("/libc-"),
    }
}
