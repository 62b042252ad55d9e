//! One run of CMD, measured and reported: the one way every mode runs a side — a single run
//! (headless, on the user's terminal, or typed into a real terminal), `--compare`'s as is and
//! tried, `--against`'s OLD and NEW. What differs between sides is said in [`Side`]; what a
//! run gives is one [`SideRun`].

use std::sync::atomic::AtomicUsize;

use serde::Serialize;

use crate::observers::fix::Fix;
use crate::plan::Plan;
use crate::report::filmstrip::Source;
use crate::report::pixel_report::PixelReport;
use crate::report::wrap_report::{KeysReport, WrapReport};
use crate::run::profiling::Recorded;
use crate::run::running::{FarStart, How, measure};
use flushlab_core::detect::keyed::KeyLatencies;
use flushlab_core::detect::timeline::Timeline;
use flushlab_terminals::emulators::Terminal;

/// How one side runs: `how` (keys, a fix, a duration; on the user's terminal or headless), or
/// typed into `terminal`'s window, where keys are required.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Side<'a> {
    pub(crate) how: How<'a>,
    pub(crate) terminal: Option<Terminal>,
}

impl<'a> Side<'a> {
    /// A side run with `keys` and `fix`, never interactive nor profiled: what every mode that
    /// runs rounds runs.
    pub(crate) fn of_rounds(
        plan: &Plan,
        keys: Option<&'a crate::plan::keys::Keys>,
        (fix, terminal): (Option<Fix>, Option<Terminal>),
        via: Option<&'a crate::via::Wire>,
    ) -> Side<'a> {
        Side {
            how: How {
                keys,
                interactive: false,
                fix,
                duration: plan.duration,
                profile: None,
                via,
            },
            terminal,
        }
    }
}

/// One run's whole report, as the JSON keeps it.
#[derive(Clone, Debug, Serialize)]
#[serde(untagged)]
pub enum RunReport {
    Headless(Box<WrapReport>),
    Terminal(Box<PixelReport>),
}

impl RunReport {
    /// The keys' latencies, where keys were typed.
    pub fn keys(&self) -> Option<&KeyLatencies> {
        match self {
            RunReport::Headless(r) => r.keys.as_ref().map(|k| &k.latencies),
            RunReport::Terminal(r) => Some(&r.keys.latencies),
        }
    }

    /// What a person saw of the keys' answers, where the model or the camera looked.
    pub fn seen(&self) -> Option<&crate::report::seen_report::SeenReport> {
        match self {
            RunReport::Headless(r) => r.seen.as_ref(),
            RunReport::Terminal(r) => r.seen.as_ref(),
        }
    }

    /// CMD's exit status (`None`: wrap ended it, or a terminal ran it).
    pub fn exit_code(&self) -> Option<i32> {
        match self {
            RunReport::Headless(r) => r.exit_code,
            RunReport::Terminal(_) => None,
        }
    }
}

/// What one run gives.
pub(crate) struct SideRun {
    pub(crate) report: RunReport,
    /// The run in time: what `--trace` and `--plot` draw.
    pub(crate) timeline: Timeline,
    /// Wrap ended CMD (its duration was over, or its keys were done), rather than CMD exiting.
    pub(crate) ended_by_wrap: bool,
    /// The user's terminal stopped reading (interactive): no summary is printed over it.
    pub(crate) stalled: bool,
    /// `--profile`: what samply recorded.
    pub(crate) recorded: Option<Recorded>,
    /// `--filmstrip`: the key filmed.
    pub(crate) filmstrip: Option<crate::report::filmstrip::Filmstrip>,
}

/// What runs a side (hyperfine's `Executor`): CMD's own processes ([`Processes`]), or in the
/// crate's tests a script of reports (`modes::mock`), so that every mode and its rounds are
/// tested without starting a process.
pub(crate) trait Executor {
    fn run(&mut self, plan: &Plan, side: Side<'_>, signal: &AtomicUsize)
    -> anyhow::Result<SideRun>;
}

/// CMD run for real, by [`run`].
pub(crate) struct Processes;

impl Executor for Processes {
    fn run(
        &mut self,
        plan: &Plan,
        side: Side<'_>,
        signal: &AtomicUsize,
    ) -> anyhow::Result<SideRun> {
        run(plan, side, signal)
    }
}

/// Runs `side` of `plan`'s CMD once; see the module's documentation.
pub(crate) fn run(plan: &Plan, side: Side<'_>, signal: &AtomicUsize) -> anyhow::Result<SideRun> {
    if let Some(terminal) = side.terminal {
        let keys = side
            .how
            .keys
            .ok_or_else(|| anyhow::anyhow!("a run in {} needs keys", terminal.name()))?;
        let mut run = crate::in_terminal::measure(plan, (terminal, keys, side.how), signal)?;
        let timeline = run.timeline.clone();
        let film = run.film.take();
        let report = PixelReport::of(plan, run, keys, film.as_ref());
        let filmstrip = film.as_ref().and_then(|film| {
            let what = format!("{} in {}", plan.cmd.line(), terminal.name());
            film_a_key(
                plan,
                Source::Camera(film),
                (report.seen.as_ref(), &report.keys),
                &timeline,
                &what,
            )
        });
        return Ok(SideRun {
            report: RunReport::Terminal(Box::new(report)),
            timeline,
            ended_by_wrap: true,
            stalled: false,
            recorded: None,
            filmstrip,
        });
    }
    let (mut measured, ended_by_wrap) = measure(plan, side.how, signal)?;
    // No report of a run that did not happen: why, in one line, once everything has ended.
    match &measured.far_start {
        FarStart::Started => {}
        FarStart::GaveUp(why) => anyhow::bail!("{why}"),
        FarStart::NearEndedFirst => anyhow::bail!(
            "wrap --via: the near end ended ({}) before CMD started at the far end{}",
            measured
                .exit_code
                .map_or("killed by a signal".to_owned(), |c| format!(
                    "exit status {c}"
                )),
            crate::report::wrap_report::last_line(measured.finder.tail())
                .map_or(String::new(), |line| format!(": {line}"))
        ),
    }
    let stalled = measured.terminal_stalled;
    let timeline = std::mem::take(&mut measured.timeline);
    let recorded = measured.recorded.take();
    // Only a wire reads where each synchronized block was (up to 64 K of them).
    let blocks = match side.how.via {
        Some(_) => measured.finder.sync().blocks().to_vec(),
        None => Vec::new(),
    };
    let transcript = measured.transcript.take();
    let mut report = WrapReport::of(plan, measured, (&timeline, transcript.as_ref()));
    let filmstrip = match (plan.paint, &transcript, &report.keys) {
        (Some(policy), Some(transcript), Some(keys)) => film_a_key(
            plan,
            Source::Model(policy, (report.cols, report.rows), transcript),
            (report.seen.as_ref(), keys),
            &timeline,
            &plan.cmd.line(),
        ),
        _ => None,
    };
    if let Some(wire) = side.how.via {
        over_the_wire(&mut report, wire, (&timeline, &blocks));
    }
    Ok(SideRun {
        report: RunReport::Headless(Box::new(report)),
        timeline,
        ended_by_wrap,
        stalled,
        recorded,
        filmstrip,
    })
}

/// A run over `wire`: each key's frame at the near end, what the wire says, and CMD's blocks
/// lost on the way in `seen`.
fn over_the_wire(
    report: &mut WrapReport,
    wire: &crate::via::Wire,
    (timeline, blocks): (&Timeline, &[(u64, u64)]),
) {
    let Some(keys) = report.keys.as_mut() else {
        return;
    };
    // CMD's own blocks, where the observer looked inside it at the far end.
    let opened = report
        .inside
        .as_ref()
        .filter(|i| i.frames_from == crate::observers::inside_report::Source::Inside)
        .and_then(|i| i.frames_opening_sync);
    let via = crate::via::ViaReport::of(wire, (timeline, blocks, opened), &mut keys.latencies);
    if let Some(seen) = report.seen.as_mut() {
        seen.sync_lost = via.sync_lost();
    }
    report.via = Some(via);
    // Over a wire, a key's input delay is its uplink and its drain the downlink: neither the
    // program nor a slow terminal keeps it waiting, the wire does.
    report
        .diagnoses
        .retain(|d| d.code != "keys-wait-to-be-read" && d.code != "keys-drain");
}

/// `--filmstrip`: the key the run's `seen` picks, filmed from `source`.
fn film_a_key(
    plan: &Plan,
    source: Source<'_>,
    (seen, keys): (Option<&crate::report::seen_report::SeenReport>, &KeysReport),
    timeline: &Timeline,
    what: &str,
) -> Option<crate::report::filmstrip::Filmstrip> {
    plan.outputs.filmstrip.as_ref()?;
    let each = &keys.latencies.each;
    crate::report::filmstrip::of_run(source, (seen?, each), timeline.end_ns, what)
        .map(|(strip, _)| strip)
}
