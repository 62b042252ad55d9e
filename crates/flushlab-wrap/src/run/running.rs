//! CMD running in its pty, and everything that watches it while it runs: its process tree,
//! the reader and parser threads, the observer's records, the key and resize forwarder, the
//! user's terminal when interactive, and the way it ends (CMD exits, the duration is over, a
//! signal) — what one run gives, [`Measured`], becomes a report in the parent module.

use std::io;

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::observers::Observation;
use crate::observers::fix::Fix;
use crate::observers::inside_report::InsideReport;
use crate::plan::keys::Keys;
use crate::run::answers::{Exchange, SharedModes};
use crate::run::interactive::{forward_keys_and_resizes, give_back};
use crate::run::own_writes::OwnWrites;
use crate::run::reading::{Reading, read_output};
use crate::run::tree::Tree;
use crate::run::typing::{KeysRun, Sending};
use crate::run::watch::{GRACE, KeyWatch, Watch, wait_for_end};
use flushlab_core::accounting::IoCounters;
use flushlab_core::detect::finder::FrameFinder;
use flushlab_core::detect::recording::Recording;
use flushlab_core::detect::timeline::Timeline;
use flushlab_core::meters::CpuTimes;
use flushlab_core::results::conditions::ReaderModel;
use flushlab_core::sys::pty::Pty;

use crate::plan::Plan;

/// What one wrapped run gave, before it becomes a report.
pub(crate) struct Measured {
    pub(crate) size: (u16, u16),
    pub(crate) reader: ReaderModel,
    pub(crate) seconds: f64,
    pub(crate) exit_code: Option<i32>,
    pub(crate) io: Option<IoCounters>,
    pub(crate) cpu: CpuTimes,
    pub(crate) finder: FrameFinder,
    pub(crate) tree: Tree,
    pub(crate) terminal_syncs: bool,
    /// Interactive, and the user's terminal stopped reading (wrap's copy of CMD's output never
    /// finished): nothing more is written to it, the summary included.
    pub(crate) terminal_stalled: bool,
    pub(crate) inside: Option<InsideReport>,
    /// CMD as the user named it.
    pub(crate) program: String,
    /// What CMD asked the terminal, and what wrap told it (headless).
    pub(crate) exchanges: Vec<Exchange>,
    /// `--keys`: what was sent, and how the run went with them.
    pub(crate) keys: Option<KeysRun>,
    /// The run in time, as it was recorded: the keys sent (`keys` keeps the rest of how they
    /// went), what the observer said (sorted), what wrap's reader took off the pty, what CMD
    /// asked.
    pub(crate) timeline: Timeline,
    /// `--profile`: how samply's recording went.
    pub(crate) recorded: Option<crate::run::profiling::Recorded>,
    /// `--via`: whether CMD started at the far end.
    pub(crate) far_start: FarStart,
    /// Every byte read, as it came, for the terminal model (`--paint`, with keys).
    pub(crate) transcript: Option<flushlab_core::seen::Transcript>,
}

/// How one run of CMD goes: on the user's terminal or headless, with a fix tried or as it is,
/// for how long (until CMD exits when `None`).
#[derive(Clone, Copy, Debug)]
pub(crate) struct How<'a> {
    pub(crate) keys: Option<&'a Keys>,
    pub(crate) interactive: bool,
    pub(crate) fix: Option<Fix>,
    pub(crate) duration: Option<Duration>,
    /// `--profile`: samply, and the file it writes.
    pub(crate) profile: Option<&'a crate::plan::profile::Profile>,
    /// `--via`: the wire CMD runs at the far end of.
    pub(crate) via: Option<&'a crate::via::Wire>,
}

/// Runs CMD in its pty until it exits, the duration is over or a signal asks wrap to stop;
/// returns what was measured and whether wrap ended CMD.
pub(crate) fn measure(
    plan: &Plan,
    how: How<'_>,
    signal: &AtomicUsize,
) -> anyhow::Result<(Measured, bool)> {
    // Stopped as a job (`kill -TSTP`; Ctrl-Z itself goes to CMD): the terminal is given back
    // while wrap is stopped, and taken again when it continues. Watched before the terminal is
    // taken: a SIGTSTP in between would stop wrap with the terminal still raw.
    let suspend = if how.interactive {
        Some(flushlab_terminals::session::watch_suspend()?)
    } else {
        None
    };
    let mut running = Running::start(plan, how)?;
    let mut watch = Watch {
        deadline: how.duration.map(|d| running.started + d),
        keys: running.sending.as_ref().map(|sending| KeyWatch {
            sending,
            after: how.keys.and_then(|k| k.after).map(|a| running.started + a),
            ready_at: None,
            idle_samples: 0,
            done_at: None,
            unsettled: false,
            last_read: &running.reading.last_read,
            started: running.started,
            far_went: running.inside.as_ref().and_then(Observation::far_went),
            link: how.via.map(crate::via::Wire::waits).unwrap_or_default(),
            never_started: false,
        }),
    };
    let ended_by_wrap = wait_for_end(
        running.pid,
        &mut running.child,
        &mut watch,
        (signal, suspend.as_deref()),
        &mut running.tree,
    );
    // `--via`: whether CMD ever started at the far end, and why not if it did not.
    let far_start = match watch.keys.as_ref() {
        Some(k) if k.far_went.as_ref().is_some_and(|went| went.get().is_none()) => {
            match (k.never_started, signal.load(Ordering::Relaxed)) {
                (true, _) => FarStart::GaveUp(k.link.not_started.clone()),
                (false, 0) => FarStart::NearEndedFirst,
                (false, _) => FarStart::Started,
            }
        }
        _ => FarStart::Started,
    };
    let keys = watch
        .keys
        .map(|k| (k.ready_at, k.after.is_some(), k.unsettled));
    let script = how.keys.map(|k| &k.script);
    let mut measured = running.finish(ended_by_wrap, keys, script)?;
    measured.far_start = far_start;
    Ok((measured, ended_by_wrap))
}

/// `--via`: whether CMD started at the far end (its shim named itself), and if not, why; a run
/// without a wire, or stopped by a signal, is `Started` (nothing to say).
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum FarStart {
    Started,
    /// The link's bound for its start passed: why, in one line.
    GaveUp(String),
    /// The near end (the ssh client, tmux) ended first.
    NearEndedFirst,
}

/// CMD running in its pty, and everything that watches it: its process tree, the reader and
/// parser threads, the key forwarder, the user's terminal when interactive.
struct Running {
    pty: Pty,
    size: (u16, u16),
    reader: ReaderModel,
    session: Option<flushlab_terminals::session::TerminalSession>,
    tree: Tree,
    cpu_before: CpuTimes,
    started: Instant,
    child: std::process::Child,
    /// CMD's pid, which is also its process group's (it leads a session of its own).
    pid: i32,
    finder: Arc<Mutex<FrameFinder>>,
    /// The run's timeline, appended to by the reader, the keys and the forwarder as things
    /// happen.
    recording: Arc<Recording>,
    own: Arc<OwnWrites>,
    child_gone: Arc<AtomicBool>,
    reading: Reading,
    forwarding: Option<std::thread::JoinHandle<()>>,
    /// `--keys`, headless.
    sending: Option<Sending>,
    /// The observer in CMD's tree, unless `--no-observer`.
    inside: Option<Observation>,
    /// `--profile`: samply recording CMD.
    profiling: Option<crate::run::profiling::Profiling>,
    /// CMD's name, as the user gave it.
    program: String,
}

/// The threads that watch CMD as it runs, and what they share: the reader of its output (and
/// the frame finder it feeds), the forwarder of the user's keys and resizes when interactive,
/// the sender of `--keys` when headless.
struct Watchers {
    reader: ReaderModel,
    finder: Arc<Mutex<FrameFinder>>,
    own: Arc<OwnWrites>,
    child_gone: Arc<AtomicBool>,
    reading: Reading,
    forwarding: Option<std::thread::JoinHandle<()>>,
    sending: Option<Sending>,
}

impl Watchers {
    fn start(
        plan: &Plan,
        how: &How<'_>,
        (pty, size, started): (&Pty, (u16, u16), Instant),
        recording: &Arc<Recording>,
    ) -> anyhow::Result<Watchers> {
        let interactive = how.interactive;
        let reader = if interactive {
            ReaderModel::Drain
        } else {
            plan.reader
        };
        let finder = Arc::new(Mutex::new(FrameFinder::new(
            size,
            plan.frame_gap,
            !matches!(reader, ReaderModel::Throttle { .. }),
        )));
        let own = Arc::new(OwnWrites::default());
        let child_gone = Arc::new(AtomicBool::new(false));
        let modes = Arc::new(SharedModes::default());
        // The terminal model reads each key's answer: kept where keys are sent.
        let transcribe = plan.paint.is_some() && how.keys.is_some() && !interactive;
        let reading = read_output(
            pty,
            (reader, size, interactive, started),
            transcribe,
            (recording, &finder),
            &own,
            &child_gone,
            &modes,
        )?;
        let forwarding = if interactive {
            Some(forward_keys_and_resizes(
                pty,
                &child_gone,
                &finder,
                &own,
                recording,
            )?)
        } else {
            None
        };
        let sending = match how.keys {
            Some(keys) if !interactive => Some(crate::run::typing::send(
                pty.master.try_clone()?,
                keys,
                recording,
                (&child_gone, &modes, &own),
            )?),
            _ => None,
        };
        Ok(Watchers {
            reader,
            finder,
            own,
            child_gone,
            reading,
            forwarding,
            sending,
        })
    }
}

impl Running {
    /// One run's start, in the order it must happen: the pty and the user's terminal, the
    /// observer and the command, the tree, the child, the threads that watch it.
    fn start(plan: &Plan, how: How<'_>) -> anyhow::Result<Running> {
        let interactive = how.interactive;
        let size = if interactive {
            let (cols, rows) = flushlab_core::sys::window_size(io::stdout())?;
            (cols.max(1), rows.max(1))
        } else {
            plan.size
        };
        let pty = Pty::open(size.0, size.1)?;
        // Interactive: the keys go to CMD, the user's terminal is raw until CMD is done. Nothing
        // is written to it before CMD's own output: keys typed ahead reach CMD.
        let session = if interactive {
            Some(flushlab_terminals::session::TerminalSession::raw_only(
                flushlab_core::writer_mode::Stream::Stdout,
            )?)
        } else {
            None
        };
        // Before the tree's counters start: writing the observer into memory is wrap's write.
        let recording = Arc::new(Recording::default());
        let (mut inside, markers) = crate::run::launch::observer(
            plan,
            (how.fix, how.via, how.profile.is_some()),
            (&pty, &recording),
        )?;
        let (program, words, invoker) =
            crate::run::launch::command(plan, how.via, &pty, inside.as_ref())?;
        let mut tree = Tree::adopt_descendants(pty.slave_path())?;
        let cpu_before = CpuTimes::children();
        let started = Instant::now();
        let child =
            crate::run::launch::spawn(&pty, (&program, &words, invoker), &mut inside, how.via)?;
        let pid = child.id() as i32;
        let traced = inside.as_ref().is_some_and(|i| i.way().traces());
        traced.then(|| tree.is_the_tracer(pid));
        how.via
            .inspect(|wire| tree.is_the_wire((wire.programs(), wire.lasting())));
        if interactive {
            // A terminal that stopped reading (Ctrl-S, a stalled ssh) holds wrap's copy in
            // write(2), where the signal flag is never looked at: after CMD's own grace, CMD's
            // group is killed and wrap exits 128+N with the terminal's mode restored, within
            // 3 s of the signal however CMD answers it.
            flushlab_terminals::session::end_stuck_runs_after(
                GRACE + Duration::from_millis(500),
                move || {
                    let _ = flushlab_core::sys::signals::signal_group(
                        pid,
                        flushlab_core::sys::signals::Signal::KILL,
                    );
                },
            )?;
        }
        let Watchers {
            reader,
            finder,
            own,
            child_gone,
            reading,
            forwarding,
            sending,
        } = Watchers::start(plan, &how, (&pty, size, started), &recording)?;
        // Before the keys can start (they wait for the watcher), so that they are recorded.
        let profiling = match (how.profile, markers) {
            (Some(profile), Some(markers)) => Some(markers.attach(profile, pid, &recording)?),
            _ => None,
        };
        Ok(Running {
            pty,
            size,
            reader,
            session,
            tree,
            cpu_before,
            started,
            child,
            pid,
            finder,
            recording,
            own,
            child_gone,
            reading,
            forwarding,
            sending,
            inside,
            profiling,
            program: plan.cmd.words[0].to_string_lossy().into_owned(),
        })
    }

    /// Keys stop going to CMD (within one poll tick): what the terminal answers next is wrap's.
    /// Keys CMD never read may have filled the pty's input queue, holding the forwarder in
    /// write(2) for good (it hung wrap for 40 s and more): they are discarded until it is out.
    /// A forwarder still stuck after that is left to the exit.
    fn forwarder_done(&mut self) {
        if let Some(forwarding) = self.forwarding.take() {
            let until = Instant::now() + Duration::from_secs(1);
            while !forwarding.is_finished() && Instant::now() < until {
                let _ = self.pty.discard_input();
                std::thread::sleep(Duration::from_millis(5));
            }
            if forwarding.is_finished() {
                let _ = forwarding.join();
            }
        }
    }

    /// After CMD ended (or was ended): the rest of its tree ended, the threads done, the user's
    /// terminal given back, and what was measured.
    // The end in its order (tree, keys, forwarder, reader, parser, observer, terminal).
    fn finish(
        mut self,
        ended_by_wrap: bool,
        keys: Option<(Option<Instant>, bool, bool)>,
        script: Option<&flushlab_core::keyscript::KeyScript>,
    ) -> anyhow::Result<Measured> {
        let status = self.child.wait()?;
        // samply follows CMD out, saving the profile: before the rest of the tree is ended
        // (it is wrap's child too).
        let recorded = self
            .profiling
            .take()
            .map(crate::run::profiling::Profiling::finish);
        self.tree.end_the_rest(GRACE);
        let ended = Instant::now();
        let ended_ns = flushlab_core::sys::monotonic_ns();
        let seconds = (ended - self.started).as_secs_f64();
        self.child_gone.store(true, Ordering::Relaxed);
        let keys = KeysRun::of(self.sending.take(), keys, script, self.started);
        self.forwarder_done();
        let keys = keys.or_else(|| KeysRun::typed(&self.recording.keys_sent(), self.started));
        drop(self.pty);
        let terminal_stalled = reader_done(&self.reading, self.session.is_some());
        // samply's profile is no write of CMD's tree.
        let samply = recorded.as_ref().and_then(|r| r.io).unwrap_or_default();
        let own = self.own.total();
        let io = self.tree.writes(IoCounters {
            write_calls: own.write_calls + samply.write_calls,
            bytes: own.bytes + samply.bytes,
        });
        let cpu = CpuTimes::children();
        let cpu = CpuTimes {
            user: cpu.user.saturating_sub(self.cpu_before.user),
            kernel: cpu.kernel.saturating_sub(self.cpu_before.kernel),
        };
        let (inside, inside_events) = match self.inside.take() {
            Some(inside) => {
                let writer = self.tree.writer().executable;
                let (report, events) = crate::observers::inside_timeline::seen_from_inside(
                    inside,
                    &self.finder,
                    (&self.program, &writer),
                );
                (Some(report), events)
            }
            None => (None, None),
        };
        let finder = self
            .finder
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone();
        let terminal_syncs = self
            .session
            .is_some_and(|session| give_back(session, &finder, terminal_stalled));
        let exit_code = (!ended_by_wrap).then(|| {
            use std::os::unix::process::ExitStatusExt;
            status
                .code()
                .or_else(|| status.signal().map(|s| 128 + s))
                .unwrap_or(0)
        });
        let (exchanges, transcript) = self.reading.take_results();
        let timeline = self.recording.timeline(inside_events, ended_ns);
        Ok(Measured {
            size: self.size,
            reader: self.reader,
            seconds,
            exit_code,
            io,
            cpu,
            finder,
            tree: self.tree,
            terminal_syncs,
            terminal_stalled,
            inside,
            program: self.program,
            exchanges,
            keys,
            timeline,
            recorded,
            far_start: FarStart::Started,
            transcript,
        })
    }
}

/// The reader ends when every holder of the pty's slave is gone (dropped before this), which
/// the end of the tree makes sure of (a process that escaped it may keep it: then what was
/// read is the answer), and what it read is parsed whole. Whether the user's terminal
/// (`interactive`) stalled: not all read, the reader waits in write(2) on a terminal that
/// stopped reading (Ctrl-S, a stalled ssh), and any write of ours would wait with it.
fn reader_done(reading: &Reading, interactive: bool) -> bool {
    let read = &reading.read;
    let until = Instant::now() + Duration::from_secs(1);
    while !read.load(Ordering::Relaxed) && Instant::now() < until {
        std::thread::sleep(Duration::from_millis(5));
    }
    let terminal_stalled = interactive && !read.load(Ordering::Relaxed);
    // The parse queue holds 4 MiB at most (a busy test machine took over a second for it, and
    // the counts came short).
    let until = Instant::now() + Duration::from_secs(30);
    while read.load(Ordering::Relaxed) && !reading.thread.is_finished() && Instant::now() < until {
        std::thread::sleep(Duration::from_millis(5));
    }
    terminal_stalled
}
