//! The observer room: the three ways wrap looks inside CMD, side by side behind one interface,
//! [`Observation`] — started for a command, its records streamed, stopped, and what was seen
//! ([`Sightings`]) and why that observer looked (`why`). The kernel's eBPF programs and the
//! preload are `flushlab_observer`'s (crates/flushlab-observer, beside the record they share,
//! `record.h`); the tracer, which runs as `flushlab trace-exec` in CMD's place, is [`tracer`]
//! (its one `unsafe` call, PTRACE_LISTEN, is src/main.rs's); which one looks, and why, is
//! [`choice`]. What the report says of them is `inside_report`'s.

pub mod choice;
pub mod executable;
pub mod fix;
pub mod inside_report;
pub mod inside_timeline;
pub mod launched;
pub mod tracer;

use std::ffi::OsString;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Instant;

use flushlab_observer::kernel::{Attached, Refused};
use flushlab_observer::{Injection, Listening, Mode, Sightings};

use self::choice::Way;
use crate::observers::fix::Fix;
use flushlab_core::detect::recording::Recording;
use flushlab_core::sys::pty::Pty;

/// The observer, injected (or attached in the kernel) for one run: what wrap sees of CMD from
/// inside it.
pub struct Observation {
    way: Way,
    /// Which observer looked and why, in one line (the summary's, the JSON's).
    why: String,
    /// The kernel observer's programs, when they look.
    kernel: Option<Attached>,
    /// `--via`: the observer at both ends, and what the near end runs (the ssh client, whose
    /// far command is the shim).
    both_ends: Option<crate::via::both_ends::BothEnds>,
    near_command: Option<crate::via::NearCommand>,
    injection: Injection,
    listening: Listening,
    stop: Arc<AtomicBool>,
    /// One moment on both clocks: wrap's `Instant` and the observers' CLOCK_MONOTONIC.
    base: (Instant, u64),
    pub fix: Option<Fix>,
    /// `--profile`: the variable that asks for marker files.
    markers: Option<(OsString, OsString)>,
    /// `--via` a layer that redraws (tmux, mosh): the near end's bytes are its redraws, not
    /// CMD's, and say nothing of what the observer saw CMD write.
    redrawn: bool,
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
            Some(Fix::Sync) => Mode::SyncBlocks,
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
                            "kernel: eBPF, {} programs attached: {}, and the scheduler's fork, \
                             exec and exit",
                            attached.programs(),
                            attached.hooks()
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
                            "{}: eBPF refused ({refused}), see docs/wrap/observers.md#the-kernel-observer",
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
            both_ends: None,
            near_command: None,
            injection,
            listening,
            stop,
            base: clock_pair(),
            fix,
            markers,
            redrawn: false,
        })
    }

    /// `--via`: one kernel observer for both ends. It follows the near end's writer on `pty` (the
    /// ssh client, spawned from the thread it marks), whose writes there are each frame's
    /// pieces, handed to `recording` as the run finishes; and, once its shim names itself, CMD
    /// (`command`, its program resolved) on the far side of `wire`, rooted there. Nothing of the
    /// observer's runs in either end's programs; [`Observation::command`] is the near end's.
    /// Where eBPF is refused, the run goes on: wrap's reads of the pty stand in for the pieces.
    pub(super) fn at_far_root(
        pty: &Pty,
        wire: &crate::via::Wire,
        (program, command): (&std::path::Path, &[OsString]),
        recording: &Arc<Recording>,
    ) -> std::io::Result<Observation> {
        recording.each_read();
        if let Some(redrawn) = wire.redrawn() {
            recording.redrawn(redrawn);
        }
        let (kernel, why) = match Attached::attach(pty.open_slave()?) {
            Ok(attached) => {
                let why = format!(
                    "kernel: eBPF, {} programs ({}) following the near end's writer and, once \
                     its shim named its pid and its pty, CMD on the far side",
                    attached.programs(),
                    attached.hooks()
                );
                (Some(Arc::new(std::sync::Mutex::new(attached))), why)
            }
            Err(refused) => (
                None,
                format!("none: eBPF refused ({refused}): CMD on the far side is not seen"),
            ),
        };
        let owner = flushlab_core::sys::user::sudo_invoker().map(|i| (i.uid, i.gid));
        let far = crate::via::far_root::FarRoot::listen(
            &wire.scratch().join("far"),
            owner,
            kernel.clone(),
        )?;
        let near_command = wire.near_command(far.path(), program, &command[1..])?;
        Observation::rooted(
            Injection::new(pty.open_slave()?, Mode::Observe)?,
            why,
            (
                crate::via::both_ends::BothEnds::new(far, kernel, Some(recording)),
                near_command,
            ),
            wire.redrawn().is_some(),
        )
    }

    /// An observation whose programs are in the kernel, rooted where a shim names itself
    /// (`both_ends`: the far root, and the near end where there is one), CMD run as `near`
    /// says. The preload's channel, which an observation always holds, is opened and never
    /// written: nothing of the preload's runs at either end.
    fn rooted(
        mut injection: Injection,
        why: String,
        (both_ends, near): (crate::via::both_ends::BothEnds, crate::via::NearCommand),
        redrawn: bool,
    ) -> std::io::Result<Observation> {
        let stop = Arc::new(AtomicBool::new(false));
        let listening = injection.listen(Arc::clone(&stop), None)?;
        Ok(Observation {
            way: Way::Kernel,
            why,
            kernel: None,
            both_ends: Some(both_ends),
            near_command: Some(near),
            injection,
            listening,
            stop,
            base: clock_pair(),
            fix: None,
            markers: None,
            redrawn,
        })
    }

    /// `--terminal --observer kernel`: the emulator starts CMD through wrap's shim, which names
    /// its pid and its pty (the emulator's) at a socket in `scratch`; the kernel observer,
    /// attached with neither, then follows the shim's tree on that pty. `--terminal --via`: the
    /// emulator starts the near end of `wire` instead, and the shim at its far end names CMD's
    /// pid and pty there (the socket in the wire's far directory, which the far user reaches).
    /// Refused eBPF is an error (it was asked for, or a wire needs it).
    pub(super) fn at_a_root(
        scratch: &std::path::Path,
        (program, args): (&std::path::Path, &[OsString]),
        wire: Option<&crate::via::Wire>,
    ) -> std::io::Result<Observation> {
        let attached = Attached::attach_for_a_root().map_err(|refused| {
            std::io::Error::other(match wire {
                None => format!(
                    "wrap --terminal --observer kernel: {refused}; --observer auto looks with \
                     the preload or the tracer"
                ),
                Some(_) => format!(
                    "wrap --terminal --via: {refused}; only the kernel observer looks at the far \
                     end"
                ),
            })
        })?;
        let why = format!(
            "kernel: eBPF, {} programs attached: {}, and the scheduler's fork, exec and exit; \
             rooted at CMD's shim, on the pty {}",
            attached.programs(),
            attached.hooks(),
            match wire {
                None => "the terminal made".to_owned(),
                Some(wire) => format!(
                    "at the far end of {}",
                    wire.settings()
                        .layers
                        .iter()
                        .map(|l| l.name())
                        .collect::<Vec<_>>()
                        .join(",")
                ),
            }
        );
        let kernel = Arc::new(std::sync::Mutex::new(attached));
        let (far, near_command) = match wire {
            None => {
                let far = crate::via::far_root::FarRoot::listen(
                    scratch,
                    None,
                    Some(Arc::clone(&kernel)),
                )?;
                let shim = crate::via::far_root::FarRootArgs {
                    socket: far.path().to_owned(),
                    cwd: std::env::current_dir()?,
                    command: std::iter::once(program.into())
                        .chain(args.iter().cloned())
                        .collect(),
                };
                let near = crate::via::NearCommand {
                    program: std::env::current_exe()?,
                    words: shim.argv(),
                    environment: Vec::new(),
                };
                (far, near)
            }
            Some(wire) => {
                let owner = flushlab_core::sys::user::sudo_invoker().map(|i| (i.uid, i.gid));
                let far = crate::via::far_root::FarRoot::listen(
                    &wire.scratch().join("far"),
                    owner,
                    Some(Arc::clone(&kernel)),
                )?;
                let near = wire.near_command(far.path(), program, args)?;
                (far, near)
            }
        };
        Observation::rooted(
            Injection::on_the_programs_terminal(Mode::Observe)?,
            why,
            (
                crate::via::both_ends::BothEnds::new(far, Some(kernel), None),
                near_command,
            ),
            false,
        )
    }

    /// Runs `spawn`, which starts CMD: under the kernel observer, the process it forks is the
    /// root of the tree the programs follow.
    pub fn spawning<T>(&mut self, spawn: impl FnOnce() -> T) -> T {
        let both = self.both_ends.as_ref().and_then(|b| b.kernel());
        match (&mut self.kernel, both) {
            (Some(kernel), _) => kernel.spawning(spawn),
            (None, Some(kernel)) => kernel
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .spawning(spawn),
            (None, None) => spawn(),
        }
    }

    /// `--via`: when CMD's shim on the far side was told go (the keys wait for it).
    pub(crate) fn far_went(&self) -> Option<Arc<std::sync::OnceLock<Instant>>> {
        self.both_ends.as_ref().map(|b| b.went())
    }

    /// Over a wire whose layer redraws: the near end's bytes are not CMD's.
    pub fn redrawn(&self) -> bool {
        self.redrawn
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
            // Nothing in CMD: the programs are in the kernel. Over a wire, what the near end
            // needs (mosh's key).
            Way::Kernel => {
                let near = self.near_command.iter().flat_map(|n| n.environment.clone());
                return self.markers.clone().into_iter().chain(near).collect();
            }
            Way::Ptrace => {
                vars.retain(|(name, _)| name != "LD_PRELOAD");
                return vars;
            }
            // The tracer hands it to CMD: its own processes do not load it.
            Way::Both => {
                for (name, _) in &mut vars {
                    if name == "LD_PRELOAD" {
                        *name = self::tracer::PRELOAD.into();
                    }
                }
            }
        }
        vars.extend(self.markers.clone());
        vars
    }

    /// What runs in CMD's place: CMD itself, the tracer that starts it, or (`--via`) the near
    /// end that starts it on the far side.
    pub fn command(
        &self,
        program: &std::path::Path,
        args: &[OsString],
    ) -> std::io::Result<(std::path::PathBuf, Vec<OsString>)> {
        if let Some(near) = &self.near_command {
            return Ok((near.program.clone(), near.words.clone()));
        }
        Ok(match self.way {
            Way::Preload | Way::Kernel => (program.to_owned(), args.to_vec()),
            Way::Ptrace | Way::Both => {
                let stops = match self.way {
                    Way::Both => self::tracer::filter::Stops::KeyReads,
                    _ => self::tracer::filter::Stops::Everything,
                };
                let tracer = self::tracer::TraceArgs {
                    stops,
                    traced: false,
                    command: std::iter::once(program.into())
                        .chain(args.iter().cloned())
                        .collect(),
                };
                (std::env::current_exe()?, tracer.argv())
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
        let sightings = match (self.both_ends, self.kernel) {
            (Some(both), _) => both.finish().unwrap_or(sightings),
            (None, Some(kernel)) => kernel.finish().unwrap_or_default(),
            (None, None) => sightings,
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
