//! wrap looking from inside CMD: the observer ([`flushlab_observer`]) preloaded into CMD's
//! tree, what it said, and what that makes of the run — frames from CMD's own waits, write(2)
//! counts of the terminal alone — or why the run was seen from outside after all.

use std::ffi::OsString;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Instant;

use flushlab_observer::kernel::{Attached, Refused};
use flushlab_observer::{Injection, Listening, Mode, Sightings};
use serde::Serialize;

use super::args::{Fix, ObserverArg, TRACER_BUILT, Way, WrapArgs};
use crate::accounting::IoCounters;
use crate::sys::pty::Pty;

/// The flags that need the preload, refused where the run would use the tracer: `--try` and
/// `--compare` hold a frame's writes inside the program, which only code inside it can do (the
/// tracer would have to copy each write out of CMD and answer the call in its place, a cost
/// larger than the buffering it tries); `--observer ptrace` where the tracer is not built.
pub(super) fn check(args: &WrapArgs, program: &std::path::Path) -> Result<(), String> {
    if args.observer == ObserverArg::Kernel && !flushlab_observer::kernel::BUILT {
        return Err(
            "wrap --observer kernel: this flushlab was built without the kernel observer (clang \
             and libbpf-dev were missing at build time); --observer auto, preload or ptrace"
                .to_owned(),
        );
    }
    if args.observer == ObserverArg::Kernel && (args.try_fix.is_some() || args.compare.is_some()) {
        return Err(
            "wrap --observer kernel: --try/--compare frame hold a frame's writes inside CMD, \
             which only the preload can (--observer auto or preload)"
                .to_owned(),
        );
    }
    if matches!(args.observer, ObserverArg::Ptrace | ObserverArg::Both) && !TRACER_BUILT {
        return Err(
            "wrap: --observer ptrace: the tracer is built for x86_64 Linux only; \
             --observer preload or none"
                .to_owned(),
        );
    }
    if matches!(args.observer, ObserverArg::Ptrace | ObserverArg::Both)
        && crate::tracer::image::is_setuid(program)
    {
        return Err(format!(
            "wrap --observer {}: '{}' is setuid or setgid: under the tracer's seccomp filter \
             (NO_NEW_PRIVS) it would run without its privilege; --observer preload (seen from \
             outside) or none",
            if args.observer == ObserverArg::Both {
                "both"
            } else {
                "ptrace"
            },
            crate::units::printable(&args.command[0].to_string_lossy())
        ));
    }
    if args.profile.is_some() && args.observer(program).is_some_and(Way::traces) {
        return Err(format!(
            "wrap --profile: samply records the process wrap starts, which for '{}' is the \
             tracer (a static or Go program, or --observer ptrace/both): profile it with samply \
             itself, or with --observer preload where the preload loads",
            crate::units::printable(&args.command[0].to_string_lossy())
        ));
    }
    let fix = args.try_fix.is_some() || args.compare.is_some();
    if fix && args.observer(program) == Some(Way::Ptrace) {
        let image = crate::tracer::image::image_of(program);
        return Err(format!(
            "wrap: --try/--compare frame hold a frame's writes inside CMD, which only the preload \
             can; '{}' is {} ({}): seen through the tracer, which cannot hold them",
            crate::units::printable(&args.command[0].to_string_lossy()),
            match image {
                crate::tracer::image::Image::Go => "a Go program",
                crate::tracer::image::Image::Static => "a static program",
                crate::tracer::image::Image::Dynamic => "traced as asked (--observer ptrace)",
            },
            if image.preload_sees() {
                "--observer preload holds them"
            } else {
                "no preload loads in it"
            }
        ));
    }
    Ok(())
}

/// The observer, injected (or attached in the kernel) for one run: what wrap sees of CMD from
/// inside it.
pub struct Observation {
    way: Way,
    /// Which observer looked and why, in one line (the summary's, the JSON's).
    why: String,
    /// The kernel observer's programs, when they look.
    kernel: Option<Attached>,
    injection: Injection,
    listening: Listening,
    stop: Arc<AtomicBool>,
    /// One moment on both clocks: wrap's `Instant` and the observers' CLOCK_MONOTONIC.
    base: (Instant, u64),
    pub fix: Option<Fix>,
    /// `--profile`: the variable that asks for marker files.
    markers: Option<(OsString, OsString)>,
}

impl Observation {
    /// Ready for CMD on `pty` (`None`: on the pty a terminal emulator makes for it, which CMD
    /// names itself): the object in memory, its channel listened to; with `markers`
    /// (`--profile`: the variable that asks for samply marker files, and what to do as a process
    /// ends), each drawing thread maps a marker file and waits at exit for its lines.
    /// `kernel_first` (`auto`): the kernel observer where eBPF is allowed, `way` where it is
    /// refused; `way` [`Way::Kernel`] (asked for): refused is an error.
    pub(super) fn start(
        (way, kernel_first): (Way, bool),
        pty: Option<&Pty>,
        fix: Option<Fix>,
        markers: Option<((OsString, OsString), flushlab_observer::OnExit)>,
    ) -> std::io::Result<Observation> {
        let mode = match fix {
            Some(Fix::Frame) => Mode::HoldFrames,
            None => Mode::Observe,
        };
        let mut injection = match pty {
            Some(pty) => Injection::new(pty.open_slave()?, mode)?,
            None => Injection::on_the_programs_terminal(mode)?,
        };
        let (way, kernel, why) = match (way, kernel_first, pty) {
            (Way::Kernel, _, _) | (_, true, Some(_)) => {
                let attached = match pty {
                    Some(pty) => Attached::attach(pty.open_slave()?),
                    None => Err(Refused(
                        "the kernel observer follows a tree wrap starts (not under --terminal)"
                            .to_owned(),
                    )),
                };
                match attached {
                    Ok(attached) => {
                        let why = format!(
                            "kernel: eBPF, {} programs attached on the system calls and the \
                             scheduler's fork, exec and exit",
                            attached.programs()
                        );
                        (Way::Kernel, Some(attached), why)
                    }
                    Err(refused) if way == Way::Kernel => {
                        return Err(std::io::Error::other(format!(
                            "wrap --observer kernel: {refused}; --observer auto falls back to \
                             the preload or the tracer"
                        )));
                    }
                    Err(refused) => {
                        let why = format!(
                            "{}: eBPF refused ({refused}), see docs/wrap.md#the-kernel-observer",
                            way.name()
                        );
                        (way, None, why)
                    }
                }
            }
            (way, _, _) => (
                way,
                None,
                format!("{}: {}", way.name(), chosen_because(way)),
            ),
        };
        let stop = Arc::new(AtomicBool::new(false));
        let (markers, on_exit) = markers.unzip();
        let listening = injection.listen(Arc::clone(&stop), on_exit)?;
        Ok(Observation {
            way,
            why,
            kernel,
            injection,
            listening,
            stop,
            base: clock_pair(),
            fix,
            markers,
        })
    }

    /// Runs `spawn`, which starts CMD: under the kernel observer, the process it forks is the
    /// root of the tree the programs follow.
    pub fn spawning<T>(&mut self, spawn: impl FnOnce() -> T) -> T {
        match &mut self.kernel {
            Some(kernel) => kernel.spawning(spawn),
            None => spawn(),
        }
    }

    /// Which observer looked and why, in one line.
    pub fn why(&self) -> &str {
        &self.why
    }

    /// The variables CMD gets: the observer before any `LD_PRELOAD` wrap was given; traced,
    /// the channel alone (the tracer takes it off before CMD starts).
    pub fn environment(&self) -> Vec<(OsString, OsString)> {
        let mut vars = self
            .injection
            .environment(std::env::var_os("LD_PRELOAD").as_deref())
            .to_vec();
        match self.way {
            Way::Preload => {}
            // Nothing in CMD: the programs are in the kernel.
            Way::Kernel => return self.markers.clone().into_iter().collect(),
            Way::Ptrace => {
                vars.retain(|(name, _)| name != "LD_PRELOAD");
                return vars;
            }
            // The tracer hands it to CMD: its own processes do not load it.
            Way::Both => {
                for (name, _) in &mut vars {
                    if name == "LD_PRELOAD" {
                        *name = crate::tracer::PRELOAD.into();
                    }
                }
            }
        }
        vars.extend(self.markers.clone());
        vars
    }

    /// What runs in CMD's place: CMD itself, or the tracer that starts it.
    pub fn command(
        &self,
        program: &std::path::Path,
        args: &[OsString],
    ) -> std::io::Result<(std::path::PathBuf, Vec<OsString>)> {
        Ok(match self.way {
            Way::Preload | Way::Kernel => (program.to_owned(), args.to_vec()),
            Way::Ptrace | Way::Both => {
                let stops = match self.way {
                    Way::Both => crate::tracer::filter::Stops::KeyReads,
                    _ => crate::tracer::filter::Stops::Everything,
                };
                let mut words: Vec<OsString> = vec![
                    crate::tracer::SUBCOMMAND.into(),
                    "--stops".into(),
                    stops.name().into(),
                    "--".into(),
                    program.into(),
                ];
                words.extend(args.iter().cloned());
                (std::env::current_exe()?, words)
            }
        })
    }

    pub fn way(&self) -> Way {
        self.way
    }

    /// After CMD's tree is gone: everything the observers said (the kernel's, read from its
    /// ring buffer, where it looked).
    pub fn finish(self) -> Sightings {
        self.stop.store(true, Ordering::Relaxed);
        let sightings = self.listening.finish().unwrap_or_default();
        let sightings = match self.kernel {
            Some(kernel) => kernel.finish().unwrap_or_default(),
            None => sightings,
        };
        drop(self.injection);
        sightings
    }

    pub fn base(&self) -> (Instant, u64) {
        self.base
    }
}

/// Why a way that was not the kernel's looked, where the kernel was not tried.
fn chosen_because(way: Way) -> &'static str {
    match way {
        Way::Preload => "the shared object preloaded into CMD's dynamic programs",
        Way::Ptrace => "the tracer, stopping CMD at each call it watches",
        Way::Both => "the shared object, and the tracer for key reads made with raw system calls",
        Way::Kernel => "eBPF",
    }
}

/// The same moment on wrap's clock and the observers' (CLOCK_MONOTONIC nanoseconds), to put
/// every time the observers send on wrap's: the observers' clock read on both sides of wrap's,
/// the closest of a few tries. Read once, a preemption between the two readings (a millisecond
/// on a loaded machine) would move every frame end of the run by as much.
fn clock_pair() -> (Instant, u64) {
    let mut best = (Instant::now(), flushlab_observer::now_ns(), u64::MAX);
    for _ in 0..16 {
        let before = flushlab_observer::now_ns();
        let instant = Instant::now();
        let after = flushlab_observer::now_ns();
        let window = after.saturating_sub(before);
        if window < best.2 {
            best = (instant, before + window / 2, window);
        }
        if window < 2_000 {
            break;
        }
    }
    (best.0, best.1)
}
/// What the observer said, as the run's timeline holds it: each thread's bursts of terminal
/// writes (a wait after writes ends one; the writes after a thread's last wait are its tail),
/// its reads of the terminal, its waits, the bound's releases; times stay on CLOCK_MONOTONIC.
pub fn timeline(sightings: &Sightings) -> crate::detect::timeline::Inside {
    use crate::detect::timeline::{Burst, Inside, Release, TerminalRead, WaitKind, WaitSpan};
    let waited: std::collections::HashSet<u32> = sightings.waits.iter().map(|w| w.pid).collect();
    Inside {
        reads: sightings
            .reads
            .iter()
            .map(|r| TerminalRead {
                pid: r.pid,
                tid: r.tid,
                end_ns: r.end_ns,
                bytes: r.bytes,
            })
            .collect(),
        // The writes of a process that never waited end with it (or its exec): a frame too — a
        // shell's child that answers a line and exits (`/bin/echo`). A program that waited
        // keeps its last writes as it quits (a teardown) out of its frames.
        bursts: sightings
            .waits
            .iter()
            .chain(sightings.tails.iter().filter(|t| !waited.contains(&t.pid)))
            .filter(|w| w.writes > 0)
            .map(|w| Burst {
                pid: w.pid,
                tid: w.tid,
                first_write_ns: w.first_write_ns.min(w.start_ns),
                end_ns: w.start_ns,
                writes: w.writes,
                bytes: w.bytes,
                continues: false,
            })
            .collect(),
        waits: sightings
            .waits
            .iter()
            .map(|w| WaitSpan {
                pid: w.pid,
                tid: w.tid,
                kind: WaitKind::from_wire(w.how),
                start_ns: w.start_ns,
                end_ns: w.end_ns.max(w.start_ns),
                timed_out: w.timed_out,
            })
            .collect(),
        releases: sightings
            .releases
            .iter()
            .map(|r| Release {
                at_ns: r.start_ns,
                bytes: r.bytes,
            })
            .collect(),
        tail_bytes: sightings
            .tails
            .iter()
            .filter(|t| waited.contains(&t.pid))
            .map(|t| t.bytes)
            .sum(),
    }
    .sorted()
}

/// Where a figure came from: the observer inside CMD, or outside it (and why).
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(rename_all = "kebab-case", tag = "from", content = "why")]
pub enum Source {
    Inside,
    Outside(String),
}

/// What tracing cost: the program's stops, and the tracer's own CPU.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct TracerReport {
    /// Stops of CMD's threads at trapped calls (a write's entry; a read's or wait's entry and
    /// exit): each costs the stopped thread two context switches and the tracer's look.
    pub stops: u64,
    pub write_stops: u64,
    /// Stops for each burst of terminal writes (a frame, seen from inside).
    pub stops_a_frame: Option<f64>,
    /// The tracer's CPU time (user and system), a process beside CMD.
    pub cpu_ms: f64,
    /// Programs the tracer saw start (execs).
    pub programs: u32,
    /// Processes CMD left running (a daemon), ended with the tracer.
    pub left: u32,
}

/// What the kernel observer cost and lost.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct KernelReport {
    /// Programs attached.
    pub programs: u32,
    /// Records the programs sent through the ring buffer.
    pub records: u64,
    /// Records the ring buffer had no room for: frames after the first loss may be merged.
    pub lost_records: u64,
    /// The programs' own run time, on every call of every process while they were attached,
    /// where the kernel counted it (`FLUSHLAB_KERNEL_STATS=1`: BPF_ENABLE_STATS, CAP_SYS_ADMIN);
    /// `None`: not counted.
    pub run_ms: Option<f64>,
    /// How often they ran, counted with it.
    pub runs: Option<u64>,
    /// The forwarder's CPU time (a thread of wrap's, reading the ring buffer).
    pub reader_cpu_ms: f64,
}

/// What the observer saw, in the report.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct InsideReport {
    /// Which observer looked: the kernel, the preload or the tracer.
    pub observer: Way,
    /// Which observer looked and why, in one line ("kernel: eBPF, 5 programs attached…", or
    /// "preload: eBPF refused (…)").
    pub observer_why: String,
    /// The tracer's cost, when it looked.
    pub tracer: Option<TracerReport>,
    /// The kernel observer's cost, when it looked.
    pub kernel: Option<KernelReport>,
    /// The frames: between CMD's waits (inside), or from what it drew (outside).
    pub frames_from: Source,
    /// write(2) counts: the terminal's alone (inside), or the kernel's for CMD's whole tree.
    pub writes_from: Source,
    /// Programs that loaded the observer (wrap's own `setsid` included).
    pub programs: Vec<String>,
    /// Blocking waits reported (quiet ones at most one a millisecond a process).
    pub waits: u64,
    /// Write calls CMD's tree made to the terminal, and their bytes, as the program made them.
    pub terminal_writes: u64,
    pub terminal_bytes: u64,
    /// `--try frame`: the write(2) calls the held writes took.
    pub held_writes: Option<u64>,
    /// `--try frame`: times held bytes went out because no wait came within the observer's
    /// bound ([`HOLD_BOUND`](flushlab_observer::HOLD_BOUND) after CMD's last terminal write), not
    /// at a wait.
    pub released_by_bound: Option<u64>,
    /// Records an observer could not send (its channel was full): figures may be short.
    pub lost_records: u64,
    /// The observers' own write(2) calls (their records), taken off the kernel's counts of
    /// CMD's tree.
    pub observer_writes: u64,
    #[serde(skip)]
    pub own_writes: IoCounters,
}

/// Why nothing was seen from inside, if so: the tracer refused or seeing nothing start, the
/// preload loaded nowhere (or only in wrap's `setsid`).
fn not_loaded(
    sightings: &Sightings,
    programs: &[String],
    program: &str,
    way: Way,
) -> Option<String> {
    if let Some(errno) = sightings.untraced {
        Some(format!(
            "ptrace refused ({}): CMD ran untraced (Yama's ptrace_scope, a container's \
             seccomp policy, or CMD already traced)",
            std::io::Error::from_raw_os_error(errno)
        ))
    } else if way == Way::Ptrace && sightings.hellos.is_empty() {
        Some("the tracer saw no program start".to_owned())
    } else if way == Way::Kernel && sightings.hellos.is_empty() {
        Some("the kernel observer saw no program start".to_owned())
    } else if sightings.hellos.is_empty() {
        Some("the observer was not loaded (LD_PRELOAD refused by the loader)".to_owned())
    } else if programs.iter().all(|p| p == "setsid") {
        Some(format!(
            "{} did not load the observer: a static, Go or setuid program, or one that \
             cleared its environment (--observer ptrace sees the first two)",
            crate::units::one_line(program)
        ))
    } else {
        None
    }
}

/// Why the preload saw no frame of a program that drew: the program that wrote the most
/// (`drew`, its executable's path) named where it did not load the preload (a static or Go
/// program a launcher started: `env`, `sh -c 'exec …'`), with the flags that see it.
fn unseen_drawer(drew: &str, programs: &[String]) -> String {
    let name = std::path::Path::new(drew)
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    // The observer names a program by its first 15 bytes (the kernel's comm).
    let loaded = programs
        .iter()
        .any(|p| !p.is_empty() && name.starts_with(p.as_str()));
    if name.is_empty() || loaded {
        "CMD never waited between frames where the preload sees (a static or Go program a shell \
         started: --observer kernel or ptrace sees it)"
            .to_owned()
    } else {
        format!(
            "'{}', the program that drew, did not load the preload (a static or Go program, \
             started by {}): --observer kernel or ptrace sees it",
            crate::units::printable(&name),
            programs
                .iter()
                .filter(|p| p.as_str() != "setsid")
                .map(|p| crate::units::printable(p))
                .collect::<Vec<_>>()
                .join(", then ")
        )
    }
}

/// The share of the terminal's bytes the observer must have seen written for its counts to be
/// the terminal's.
const COVERAGE: f64 = 0.95;

impl InsideReport {
    /// What the sightings make of a run in which the terminal received `received` bytes, of
    /// which `newlines` may have had a `\r` put before them by the pty; `program` is CMD's.
    pub fn of(
        sightings: &Sightings,
        received: u64,
        newlines: u64,
        program: &str,
        (way, fix, why, drew): (Way, Option<Fix>, &str, &str),
    ) -> InsideReport {
        let (writes, bytes) = sightings.writes();
        let mut programs: Vec<String> = Vec::new();
        for (_, name) in &sightings.hellos {
            if !programs.contains(name) {
                programs.push(name.clone());
            }
        }
        let not_loaded = not_loaded(sightings, &programs, program, way);
        let expected = received.saturating_sub(newlines) as f64 * COVERAGE;
        let frames_from = match &not_loaded {
            Some(why) => Source::Outside(why.clone()),
            None if received == 0 => Source::Outside("nothing reached the terminal".to_owned()),
            None if sightings.boundaries().is_empty() => {
                Source::Outside(if way.preloads() && (bytes as f64) < expected {
                    unseen_drawer(drew, &programs)
                } else {
                    "CMD never waited between frames".to_owned()
                })
            }
            None => Source::Inside,
        };
        let writes_from = match not_loaded {
            Some(why) => Source::Outside(why),
            None if received == 0 => Source::Outside("nothing reached the terminal".to_owned()),
            None if (bytes as f64) < expected => Source::Outside(format!(
                "the observer saw {:.0}% of the terminal's bytes written ({})",
                bytes as f64 * 100.0 / received.max(1) as f64,
                match way {
                    Way::Preload | Way::Both =>
                        "the rest through glibc's stdio, raw syscalls or a static \
                         program: --observer ptrace sees them",
                    Way::Ptrace | Way::Kernel =>
                        "the rest: the terminal's own echo of typed keys, writes \
                         lost as the run ended, or a 32-bit call",
                }
            )),
            None => Source::Inside,
        };
        let frames = sightings.waits.iter().filter(|w| w.writes > 0).count() as u64
            + sightings.tails.iter().filter(|w| w.writes > 0).count() as u64;
        InsideReport {
            observer: way,
            observer_why: why.to_owned(),
            kernel: sightings.kernel.map(|cost| KernelReport {
                programs: cost.programs,
                records: cost.sent,
                lost_records: cost.lost,
                run_ms: cost.run_ns.map(|ns| ns as f64 / 1e6),
                runs: cost.runs,
                reader_cpu_ms: cost.reader_cpu_ns as f64 / 1e6,
            }),
            tracer: sightings.tracer.map(|cost| TracerReport {
                stops: cost.stops,
                write_stops: cost.write_stops,
                stops_a_frame: (frames > 0).then(|| cost.stops as f64 / frames as f64),
                cpu_ms: cost.cpu_ns as f64 / 1e6,
                programs: cost.images,
                left: cost.left,
            }),
            frames_from,
            writes_from,
            programs,
            waits: sightings.waits.len() as u64,
            terminal_writes: writes,
            terminal_bytes: bytes,
            held_writes: fix.map(|_| sightings.flushed().0),
            released_by_bound: fix.map(|_| sightings.releases.len() as u64),
            lost_records: sightings
                .kernel
                .map_or(sightings.lost, |k| k.lost.max(sightings.lost)),
            observer_writes: sightings.own_writes().0,
            own_writes: {
                let (write_calls, bytes) = sightings.own_writes();
                IoCounters { write_calls, bytes }
            },
        }
    }

    /// The terminal's write(2) calls when the observer saw them all: as made, or as held.
    pub fn terminal_io(&self) -> Option<IoCounters> {
        (self.writes_from == Source::Inside).then(|| IoCounters {
            write_calls: self.held_writes.unwrap_or(self.terminal_writes),
            bytes: self.terminal_bytes,
        })
    }

    /// How the figures were obtained, for the summary: one line, two spaces in.
    pub fn summary(&self) -> String {
        use crate::units::thousands;
        let mut out = match (&self.frames_from, &self.writes_from) {
            (Source::Inside, Source::Inside) => format!(
                "\n  seen from inside CMD ({}): frames between its waits, write(2) counts of the \
                 terminal alone",
                self.observer.name()
            ),
            (Source::Inside, Source::Outside(why)) => format!(
                "\n  frames seen from inside CMD (between its waits); write(2) counts from the \
                 kernel: {why}"
            ),
            (Source::Outside(why), Source::Inside) => format!(
                "\n  write(2) counts of the terminal alone, seen from inside CMD; frames seen \
                 from outside: {why}"
            ),
            (Source::Outside(why), Source::Outside(_)) => format!("\n  seen from outside: {why}"),
        };
        out += &format!("\n  observer: {}", self.observer_why);
        if let Some(k) = &self.kernel {
            out += &format!(
                "\n  the kernel observer: {} records; {}; wrap's reader {:.1} ms of CPU",
                thousands(k.records),
                match (k.run_ms, k.runs) {
                    (Some(ms), Some(runs)) => format!(
                        "its programs ran {} times in {ms:.1} ms ({:.0} ns a run, on every \
                         call of every process while attached)",
                        thousands(runs),
                        ms * 1e6 / runs.max(1) as f64
                    ),
                    _ => "its programs' run time not counted (FLUSHLAB_KERNEL_STATS=1 counts \
                          it: BPF_ENABLE_STATS, CAP_SYS_ADMIN, two clock reads a run)"
                        .to_owned(),
                },
                k.reader_cpu_ms
            );
            if k.lost_records > 0 {
                out += &format!(
                    "\n  the ring buffer lost {} records: frames after the first loss may be \
                     merged",
                    thousands(k.lost_records)
                );
            }
        }
        if let Some(t) = &self.tracer {
            out += &format!(
                "\n  traced (ptrace, seccomp-filtered): {} stops{} ({} at writes), the tracer's \
                 CPU {:.1} ms ({:.0} µs a stop); each stop costs CMD two context switches",
                thousands(t.stops),
                t.stops_a_frame
                    .map(|n| format!(", {n:.1} a frame"))
                    .unwrap_or_default(),
                thousands(t.write_stops),
                t.cpu_ms,
                t.cpu_ms * 1e3 / t.stops.max(1) as f64,
            );
        }
        if let Some(left @ 1..) = self.tracer.map(|t| t.left) {
            out += &format!(
                "\n  {left} process(es) CMD left running ended with the tracer, as wrap ends \
                 what CMD leaves (a traced process cannot go on without its tracer: its trapped \
                 calls would fail)"
            );
        }
        if let Some(held) = self.held_writes {
            out += &format!(
                "\n  --try frame: CMD's {} terminal writes went out in {} write(2)",
                thousands(self.terminal_writes),
                thousands(held)
            );
        }
        if let Some(released @ 1..) = self.released_by_bound {
            out += &format!(
                "\n  --try frame: {} times no wait came within {} ms of CMD's last terminal \
                 write and the held bytes went out by that bound (CMD waits where the observer \
                 cannot see, or computes between writes)",
                thousands(released),
                flushlab_observer::HOLD_BOUND.as_millis()
            );
        }
        out
    }

    /// Whether CMD's waits may tell its frames.
    pub fn frames_from_waits(&self) -> bool {
        self.frames_from == Source::Inside
    }

    /// Every write CMD made to the terminal was seen: the observer's bytes are the terminal's,
    /// or the tracer looked (it stops at every write; what reached the terminal beside them is
    /// the terminal's own echo of typed keys).
    pub fn saw_every_write(&self) -> bool {
        self.writes_from == Source::Inside || self.observer.sees_every_call()
    }
}
