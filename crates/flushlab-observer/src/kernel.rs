//! The kernel observer: `kernel.bpf.c`'s eBPF programs, loaded and attached for one run, and a
//! thread of wrap's that reads what they say (the preload's own records) from their ring buffer
//! into the same [`Sightings`] the preload's channel fills, without a write(2) of its own (which
//! the counts of CMD's tree, taken from wrap's, would have to take off). Nothing is stopped and
//! nothing is injected: CMD runs as it would, whatever it is made of, and so does every program
//! it starts.
//!
//! The programs live as long as this process holds their fds (nothing is pinned): however wrap
//! ends, SIGKILL included, the kernel unloads them with its last fd. Their names begin with
//! `flushlab_` so that they can be told from the system's own (`bpftool prog`).

use std::fmt;
use std::io;
use std::os::fd::{AsFd, OwnedFd};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use crate::{KernelCost, Record, Sightings};

/// Whether the build had clang and libbpf's headers to build the programs with.
pub const BUILT: bool = cfg!(flushlab_kernel);

/// The variable that names the kernel's BTF (the loader reads the kernel's structures' layout
/// from it): `/sys/kernel/btf/vmlinux` unless set; a path without BTF is how a test sees the
/// refusal a kernel without BTF gives.
pub const BTF: &str = "FLUSHLAB_KERNEL_BTF";

/// `FLUSHLAB_KERNEL_FLOOR=1`: the floor instead of the observer, for measuring what the hooks
/// cost alone: the same programs on the same tracepoints, whose system-call programs return at
/// once (they see nothing: the run is seen from outside).
pub const FLOOR: &str = "FLUSHLAB_KERNEL_FLOOR";

/// `FLUSHLAB_KERNEL_STATS=1`: the kernel times the programs (BPF_ENABLE_STATS, CAP_SYS_ADMIN),
/// which costs every run of every program on the machine two clock reads while it is on: off
/// unless asked.
pub const STATS: &str = "FLUSHLAB_KERNEL_STATS";

/// `FLUSHLAB_KERNEL_RING=BYTES`: the ring buffer's size (a power of two, a page or more; 1 MiB
/// unless set), smaller to see a loss counted and said.
pub const RING: &str = "FLUSHLAB_KERNEL_RING";

/// The ring buffer's size unless [`RING`] says otherwise: 16,384 records.
const RING_BYTES: u32 = 1 << 20;

/// The prefix every program and map of the observer is named with.
pub const PREFIX: &str = "flushlab_";

/// `FLUSHLAB_KERNEL_HOOKS=tracepoints`: the raw system-call tracepoints even where the kernel has
/// trampolines, for measuring what each way costs a process outside the tree
/// (`scripts/outside-cost.sh`).
pub const HOOKS: &str = "FLUSHLAB_KERNEL_HOOKS";

/// The scheduler's programs, each on its tracepoint.
const SCHEDULER: [(&str, &str); 3] = [
    ("flushlab_fork", "sched_process_fork"),
    ("flushlab_exec", "sched_process_exec"),
    ("flushlab_gone", "sched_process_exit"),
];

/// The system calls watched at their entry and return (kernel.bpf.c's `WATCH`): the tracer's
/// filter's list (crates/flushlab-wrap/src/observers/tracer/filter.rs).
const WATCHED: [&str; 19] = [
    "read",
    "write",
    "poll",
    "pwrite64",
    "readv",
    "writev",
    "select",
    "pause",
    "nanosleep",
    "rt_sigsuspend",
    "futex",
    "clock_nanosleep",
    "epoll_wait",
    "pselect6",
    "epoll_pwait",
    "ppoll",
    "pwritev",
    "pwritev2",
    "epoll_pwait2",
];

/// The calls that change which file an fd is, watched at their entry (`WATCH_ENTRY`).
const FD_CALLS: [&str; 4] = ["close", "dup2", "dup3", "close_range"];

/// The hooks asked for through [`HOOKS`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum HooksAsked {
    /// Trampolines where the kernel takes them, else the tracepoints (unset, or `auto`).
    Auto,
    /// The tracepoints (`tracepoints`).
    Tracepoints,
}

/// [`HOOKS`]'s value; anything else refused, named (wrap checks it before anything starts).
pub fn hooks_asked() -> Result<HooksAsked, Refused> {
    let Some(value) = std::env::var_os(HOOKS) else {
        return Ok(HooksAsked::Auto);
    };
    match value.to_str() {
        Some("auto") => Ok(HooksAsked::Auto),
        Some("tracepoints") => Ok(HooksAsked::Tracepoints),
        _ => Err(Refused(format!(
            "{HOOKS} '{}': auto or tracepoints",
            value.to_string_lossy().escape_debug()
        ))),
    }
}

/// How the programs hook the system calls.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Hooks {
    /// fentry and fexit on each watched call's own function: a call nobody watches costs
    /// nothing.
    Trampolines,
    /// The raw `sys_enter` and `sys_exit` tracepoints, and why: every system call of every
    /// process on the machine passes through them.
    Tracepoints(String),
}

impl fmt::Display for Hooks {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Hooks::Trampolines => write!(
                f,
                "fentry and fexit on {} system calls' own functions",
                WATCHED.len() + FD_CALLS.len()
            ),
            Hooks::Tracepoints(why) => {
                write!(f, "the raw tracepoints of every system call ({why})")
            }
        }
    }
}

/// Why the kernel observer is not looking: one line, for the run's summary.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Refused(pub String);

impl fmt::Display for Refused {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// The programs attached for one run, and their forwarder.
pub struct Attached {
    ebpf: aya::Ebpf,
    hooks: Hooks,
    programs: usize,
    spawn: aya::maps::HashMap<aya::maps::MapData, u32, u32>,
    /// CMD's processes (kernel.bpf.c's `flushlab_tree`: tgid → its `struct process`, two u64).
    tree: aya::maps::HashMap<aya::maps::MapData, u32, [u64; 2]>,
    /// The second terminal (kernel.bpf.c's `flushlab_far_tty`).
    far_tty: aya::maps::Array<aya::maps::MapData, u64>,
    counts: aya::maps::Array<aya::maps::MapData, u64>,
    stop: Arc<AtomicBool>,
    forwarder: std::thread::JoinHandle<io::Result<Forwarded>>,
    /// BPF_ENABLE_STATS while it is held: the kernel times the programs (CAP_SYS_ADMIN).
    stats: Option<OwnedFd>,
}

impl fmt::Debug for Attached {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Attached").finish_non_exhaustive()
    }
}

impl Attached {
    /// Loads and attaches the programs for a run on the pty `tty` (its slave), and starts
    /// reading what they say. Refused, said why, where the kernel or this build cannot.
    pub fn attach(tty: impl AsFd) -> Result<Attached, Refused> {
        let tty_rdev = rustix::fs::fstat(tty)
            .map_err(|e| Refused(format!("the pty's device: {e}")))?
            .st_rdev;
        Attached::attach_on(kernel_dev(tty_rdev))
    }

    /// Loads and attaches the programs with no terminal and no tree yet: both come when a
    /// process names itself ([`Attached::far_terminal`], [`Attached::root`]), as CMD's shim
    /// does in a terminal emulator that wrap did not give a pty (`--terminal`).
    pub fn attach_for_a_root() -> Result<Attached, Refused> {
        Attached::attach_on(0)
    }

    /// [`Attached::attach`] on the terminal `tty` (a kernel dev_t; 0: none yet).
    fn attach_on(tty: u64) -> Result<Attached, Refused> {
        if !BUILT {
            return Err(Refused(
                "the kernel observer was not built (clang and libbpf-dev were missing when \
                 flushlab was built)"
                    .to_owned(),
            ));
        }
        let btf = kernel_btf()?;
        let mut ebpf = load(&btf, tty)?;
        let take = |ebpf: &mut aya::Ebpf, name: &str| {
            ebpf.take_map(name)
                .ok_or_else(|| Refused(format!("the kernel observer has no map {name}")))
        };
        let spawn = aya::maps::HashMap::try_from(take(&mut ebpf, "flushlab_spawn")?)
            .map_err(|e| Refused(format!("flushlab_spawn: {e}")))?;
        let tree = aya::maps::HashMap::try_from(take(&mut ebpf, "flushlab_tree")?)
            .map_err(|e| Refused(format!("flushlab_tree: {e}")))?;
        let far_tty = aya::maps::Array::try_from(take(&mut ebpf, "flushlab_far_tty")?)
            .map_err(|e| Refused(format!("flushlab_far_tty: {e}")))?;
        let counts = aya::maps::Array::try_from(take(&mut ebpf, "flushlab_counts")?)
            .map_err(|e| Refused(format!("flushlab_counts: {e}")))?;
        let ring = take(&mut ebpf, "flushlab_events")?;
        if !matches!(ring, aya::maps::Map::RingBuf(_)) {
            return Err(Refused("flushlab_events is no ring buffer".to_owned()));
        }
        // Timing every run costs every run of every program on the machine two clock reads
        // (measured, scripts/kernel-cost.py at 4,000 writes a frame: emit ×1.34 of unobserved
        // with it, ×1.21 without): only where asked.
        let stats = if std::env::var_os(STATS).is_some_and(|v| v == "1") {
            aya::sys::enable_stats(aya::sys::Stats::RunTime).ok()
        } else {
            None
        };
        for (name, tracepoint) in SCHEDULER {
            raw_tracepoint(&mut ebpf, name, tracepoint)?;
        }
        let (hooks, programs) = hook_the_calls(&mut ebpf, &btf)?;
        let stop = Arc::new(AtomicBool::new(false));
        let forwarder = {
            let stop = Arc::clone(&stop);
            std::thread::Builder::new()
                .name("wrap-kernel".into())
                .spawn(move || forward(ring, &stop))
                .map_err(|e| Refused(format!("could not start the forwarder thread: {e}")))?
        };
        Ok(Attached {
            ebpf,
            hooks,
            programs,
            spawn,
            tree,
            far_tty,
            counts,
            stop,
            forwarder,
            stats,
        })
    }

    /// How many programs are attached.
    pub fn programs(&self) -> usize {
        self.programs
    }

    /// How they hook the system calls.
    pub fn hooks(&self) -> &Hooks {
        &self.hooks
    }

    /// Runs `spawn` (which starts CMD) with this thread marked: the process it forks is CMD,
    /// the root of the tree the programs follow from its first exec.
    pub fn spawning<T>(&mut self, spawn: impl FnOnce() -> T) -> T {
        let tid = rustix::thread::gettid().as_raw_nonzero().get() as u32;
        let marked = self.spawn.insert(tid, 1, 0).is_ok();
        let spawned = spawn();
        if marked {
            let _ = self.spawn.remove(&tid);
        }
        spawned
    }

    /// Makes the running process `pid` (a thread-group id in the initial pid namespace, which
    /// is wrap's) the root of the tree, where wrap did not start it: a process that named
    /// itself to wrap and waits to become CMD (`wrap --via`'s shim, started by sshd). Its next
    /// exec is then CMD's, and everything it starts is followed; records carry the initial
    /// namespace's numbers.
    pub fn root(&mut self, pid: u32) -> Result<(), Refused> {
        self.tree
            .insert(pid, [0, 0], 0)
            .map_err(|e| Refused(format!("rooting the tree at {pid}: {e}")))
    }

    /// The pty `tty` (its slave) is a terminal too, from now on: the far end's, where `root`
    /// roots a second part of the tree (`wrap --via`: the near end's writer was spawned, CMD
    /// names itself on the far side).
    pub fn far_terminal(&mut self, tty: impl AsFd) -> Result<(), Refused> {
        let rdev = rustix::fs::fstat(tty)
            .map_err(|e| Refused(format!("the far pty's device: {e}")))?
            .st_rdev;
        self.far_tty
            .set(0, kernel_dev(rdev), 0)
            .map_err(|e| Refused(format!("the far terminal: {e}")))
    }

    /// After CMD's tree is gone: the ring buffer drained, and everything the programs said,
    /// with what the observer cost; the programs are detached as this drops.
    pub fn finish(self) -> io::Result<Sightings> {
        self.stop.store(true, Ordering::Relaxed);
        let mut forwarded = self
            .forwarder
            .join()
            .map_err(|_| io::Error::other("the kernel observer's reader panicked"))??;
        let count = |i: u32| self.counts.get(&i, 0).unwrap_or(0);
        let (run_ns, runs) = if self.stats.is_some() {
            self.ebpf
                .programs()
                .filter_map(|(_, p)| p.info().ok())
                .fold((0u64, 0u64), |(ns, n), info| {
                    (ns + info.run_time().as_nanos() as u64, n + info.run_count())
                })
        } else {
            (u64::MAX, u64::MAX)
        };
        let cost = KernelCost {
            pid: std::process::id(),
            sent: count(1),
            lost: count(0),
            run_ns: (run_ns != u64::MAX).then_some(run_ns),
            runs: (runs != u64::MAX).then_some(runs),
            reader_cpu_ns: forwarded.cpu_ns,
            programs: self.programs as u32,
        };
        forwarded.sightings.add(Record::Kernel(cost));
        forwarded.sightings.close(crate::now_ns());
        Ok(forwarded.sightings)
    }
}

/// The kernel's BTF: the structures' layout, and the functions the trampolines go on.
fn kernel_btf() -> Result<aya::Btf, Refused> {
    let path = std::env::var_os(BTF).unwrap_or_else(|| "/sys/kernel/btf/vmlinux".into());
    aya::Btf::parse_file(&path, aya::Endianness::default()).map_err(|e| {
        Refused(format!(
            "no BTF at {} ({e}): the kernel observer reads the kernel's structures through it \
             (CONFIG_DEBUG_INFO_BTF)",
            std::path::Path::new(&path).display()
        ))
    })
}

/// One program on its raw tracepoint.
fn raw_tracepoint(ebpf: &mut aya::Ebpf, name: &str, tracepoint: &str) -> Result<(), Refused> {
    let program: &mut aya::programs::RawTracePoint = ebpf
        .program_mut(name)
        .ok_or_else(|| Refused(format!("the kernel observer has no program {name}")))?
        .try_into()
        .map_err(|e| Refused(format!("{name}: {e}")))?;
    program.load().map_err(|e| refused_by_kernel(name, &e))?;
    program
        .attach(tracepoint)
        .map_err(|e| refused_by_kernel(name, &e))?;
    Ok(())
}

/// The watched calls hooked, trampolines first (said why not where the kernel refuses them),
/// and how many programs are attached in all.
fn hook_the_calls(ebpf: &mut aya::Ebpf, btf: &aya::Btf) -> Result<(Hooks, usize), Refused> {
    let hooks = if hooks_asked()? == HooksAsked::Tracepoints {
        Hooks::Tracepoints(format!("{HOOKS}=tracepoints"))
    } else {
        match trampolines(ebpf, btf) {
            Ok(()) => Hooks::Trampolines,
            Err(refused) => {
                // What was attached goes: the calls are hooked one way, never both.
                for hooked in hooked_calls() {
                    let Some(program) = ebpf.program_mut(&hooked.name) else {
                        continue;
                    };
                    // Unloading one never loaded is a no-op.
                    let _ = if hooked.at_return {
                        <&mut aya::programs::FExit>::try_from(program).map(|p| p.unload().is_ok())
                    } else {
                        <&mut aya::programs::FEntry>::try_from(program).map(|p| p.unload().is_ok())
                    };
                }
                Hooks::Tracepoints(refused.0)
            }
        }
    };
    let mut programs = SCHEDULER.len();
    match hooks {
        Hooks::Trampolines => programs += hooked_calls().count(),
        Hooks::Tracepoints(_) => {
            raw_tracepoint(ebpf, "flushlab_enter", "sys_enter")?;
            raw_tracepoint(ebpf, "flushlab_exit", "sys_exit")?;
            programs += 2;
        }
    }
    Ok((hooks, programs))
}

/// A program on a system call's own function.
struct Hooked {
    name: String,
    function: String,
    at_return: bool,
}

/// Every trampoline program: an entry and a return for each watched call, an entry for each
/// call that changes an fd.
fn hooked_calls() -> impl Iterator<Item = Hooked> {
    let hooked = |call: &str, at_return: bool| Hooked {
        name: format!("flushlab_{}_{call}", if at_return { "out" } else { "in" }),
        function: format!("__x64_sys_{call}"),
        at_return,
    };
    WATCHED
        .iter()
        .flat_map(move |call| [hooked(call, false), hooked(call, true)])
        .chain(FD_CALLS.iter().map(move |call| hooked(call, false)))
}

/// The calls hooked through trampolines; the first refusal ends it (the caller then unloads
/// what was attached).
fn trampolines(ebpf: &mut aya::Ebpf, btf: &aya::Btf) -> Result<(), Refused> {
    for hooked in hooked_calls() {
        let Hooked {
            name,
            function,
            at_return,
        } = &hooked;
        let program = ebpf
            .program_mut(name)
            .ok_or_else(|| Refused(format!("the kernel observer has no program {name}")))?;
        // The scheduler's programs loaded: a refusal here is the kernel's of trampolines
        // (lockdown, no ftrace direct calls, a function left out of its BTF), not privilege.
        let how = if *at_return { "fexit" } else { "fentry" };
        let refused = |e: &aya::programs::ProgramError| {
            let said = match e {
                aya::programs::ProgramError::LoadError { io_error, .. } => io_error.to_string(),
                other => other.to_string(),
            };
            Refused(format!("the kernel refused {how} on {function}: {said}"))
        };
        if *at_return {
            let program: &mut aya::programs::FExit = program.try_into().map_err(|e| refused(&e))?;
            program.load(function, btf).map_err(|e| refused(&e))?;
            program.attach().map_err(|e| refused(&e))?;
        } else {
            let program: &mut aya::programs::FEntry =
                program.try_into().map_err(|e| refused(&e))?;
            program.load(function, btf).map_err(|e| refused(&e))?;
            program.attach().map_err(|e| refused(&e))?;
        }
    }
    Ok(())
}

/// The object parsed, its setting set (the pty's device as the kernel encodes it), its BTF
/// relocations made against the kernel's.
fn load(btf: &aya::Btf, tty: u64) -> Result<aya::Ebpf, Refused> {
    let ring = ring_bytes()?;
    aya::EbpfLoader::new()
        .btf(Some(btf))
        .set_max_entries("flushlab_events", ring)
        // The threads' map is task storage, which aya creates but has no type for.
        .allow_unsupported_maps()
        .set_global("flushlab_tty", &tty, true)
        .load(object())
        .map_err(|e| {
            Refused(if denied(&format!("{e:?}")) {
                format!("the kernel refused the observer's maps ({e}): {PRIVILEGE}")
            } else {
                format!("the kernel refused the observer's maps: {e}")
            })
        })
}

/// The ring buffer's size: [`RING`]'s, or 1 MiB; a value that is not a power of two of a page or
/// more refused, named (wrap checks it before anything starts).
pub fn ring_bytes() -> Result<u32, Refused> {
    match std::env::var(RING) {
        Err(_) => Ok(RING_BYTES),
        Ok(text) => text
            .parse::<u32>()
            .ok()
            .filter(|n| n.is_power_of_two() && *n >= 4096)
            .ok_or_else(|| {
                Refused(format!(
                    "{RING} '{}': a power of two of bytes, 4096 or more",
                    text.escape_debug()
                ))
            }),
    }
}

/// What eBPF needs, said where it was refused for want of it.
const PRIVILEGE: &str = "eBPF needs root, or CAP_BPF and CAP_PERFMON (Linux 5.8 and later)";

/// Whether an error (as `Debug` prints it) is the kernel's refusal for want of privilege.
fn denied(error: &str) -> bool {
    [
        "EPERM",
        "EACCES",
        "PermissionDenied",
        "Operation not permitted",
    ]
    .iter()
    .any(|mark| error.contains(mark))
}

#[cfg(flushlab_kernel)]
fn object() -> &'static [u8] {
    if std::env::var_os(FLOOR).is_some_and(|v| v == "1") {
        aya::include_bytes_aligned!(concat!(env!("OUT_DIR"), "/flushlab-kernel-floor.bpf.o"))
    } else {
        aya::include_bytes_aligned!(concat!(env!("OUT_DIR"), "/flushlab-kernel.bpf.o"))
    }
}

#[cfg(not(flushlab_kernel))]
fn object() -> &'static [u8] {
    &[]
}

/// A device number as the kernel keeps it (`MKDEV`: major above 20 bits of minor), from the
/// one `stat` gives.
fn kernel_dev(dev: u64) -> u64 {
    (u64::from(rustix::fs::major(dev)) << 20) | u64::from(rustix::fs::minor(dev))
}

fn refused_by_kernel(name: &str, e: &aya::programs::ProgramError) -> Refused {
    Refused(if denied(&format!("{e:?}")) {
        format!("the kernel refused {name} ({e}): {PRIVILEGE}")
    } else {
        format!("the kernel refused {name}: {e}")
    })
}

/// What the reader read, and its CPU time.
#[derive(Debug, Default)]
struct Forwarded {
    sightings: Sightings,
    cpu_ns: u64,
}

/// The ring buffer read as records come (woken by the kernel, or every 20 ms to look at
/// `stop`); once stopped, what is left is drained.
fn forward(map: aya::maps::Map, stop: &AtomicBool) -> io::Result<Forwarded> {
    use rustix::event::{PollFd, PollFlags, Timespec, poll};
    let aya::maps::Map::RingBuf(data) = &map else {
        return Err(io::Error::other("flushlab_events is no ring buffer"));
    };
    let mut ring = aya::maps::RingBuf::try_from(&map).map_err(io::Error::other)?;
    let tick = Timespec {
        tv_sec: 0,
        tv_nsec: 20_000_000,
    };
    let mut sightings = Sightings::default();
    loop {
        let stopping = stop.load(Ordering::Relaxed);
        while let Some(item) = ring.next() {
            if let Some(record) = Record::parse(&item) {
                sightings.add(record);
            }
        }
        if stopping {
            break;
        }
        let mut fds = [PollFd::new(data.fd(), PollFlags::IN)];
        let _ = poll(&mut fds, Some(&tick));
    }
    let cpu = rustix::time::clock_gettime(rustix::time::ClockId::ThreadCPUTime);
    Ok(Forwarded {
        sightings,
        cpu_ns: u64::try_from(cpu.tv_sec).unwrap_or(0) * 1_000_000_000
            + u64::try_from(cpu.tv_nsec).unwrap_or(0),
    })
}

/// The programs loaded in the kernel now whose names begin with [`PREFIX`] (any wrap's): their
/// ids and names, what a test looks at to see that none outlives its wrap.
pub fn loaded() -> Vec<(u32, String)> {
    aya::programs::loaded_programs()
        .filter_map(Result::ok)
        .map(|info| (info.id(), String::from_utf8_lossy(info.name()).into_owned()))
        .filter(|(_, name)| name.starts_with(PREFIX))
        .collect()
}
