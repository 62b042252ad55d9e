//! What the observer saw, as the report says it: where each figure came from (`Source`),
//! what the tracer and the kernel observer cost, which observer looked and why, and the one line
//! of words for the summary. Made once from the sightings, after CMD's tree is gone.

use flushlab_observer::Sightings;
use serde::Serialize;

use crate::observers::choice::Way;
use crate::observers::fix::Fix;
use flushlab_core::accounting::IoCounters;

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
    /// CMD's frames that opened a synchronized-output block (DEC 2026, either form), as the
    /// preload or the kernel observer saw its writes; `None` where the tracer looked (it does
    /// not read what CMD writes).
    pub frames_opening_sync: Option<u64>,
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
            flushlab_core::units::one_line(program)
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
            flushlab_core::units::printable(&name),
            programs
                .iter()
                .filter(|p| p.as_str() != "setsid")
                .map(|p| flushlab_core::units::printable(p))
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
                        "the rest through raw syscalls, a static program, or stdio \
                         held by --try frame: --observer ptrace sees them",
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
            frames_opening_sync: (way != Way::Ptrace).then(|| sightings.frames_opening_sync()),
            held_writes: (fix == Some(Fix::Frame)).then(|| sightings.flushed().0),
            released_by_bound: (fix == Some(Fix::Frame)).then_some(sightings.releases.len() as u64),
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
        use flushlab_core::units::thousands;
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
