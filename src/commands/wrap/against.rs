//! `wrap --keys S --against 'OLD CMD ARGS' -- NEW CMD ARGS`: two builds of a program on the same
//! keys, one verdict. OLD and NEW run headless in rounds ordered ABBA (OLD, NEW, then NEW, OLD:
//! a machine that slows down across a round slows both alike), after a warm-up round that is
//! dropped, with the same size, keys, readiness rule, observer and reader. Each round gives one
//! ratio of key→frame p50, NEW over OLD; the verdict is the rounds' ratio with an interval from
//! resampling them ([`crate::results::verdict`]) against `--threshold`: slower, faster, the
//! same, or inconclusive — and an exit code a CI job can gate on.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};

use anyhow::Context;
use serde::Serialize;

use super::args::{OldBuild, WrapArgs};
use super::outputs::{draw_keys, plot_title};
use super::running::{How, measure};
use super::typing::Keys;
use super::wrap_report::WrapReport;
use crate::detect::keyed::{KeyLatencies, Stage};
use crate::detect::timeline::Timeline;
use crate::outcome::{Outcome, Refusal, complain};
use crate::results::verdict::{DECISIVE_ROUNDS, Ratio, StageChange, Verdict, moved};
use crate::results::waterfall::Panel;
use crate::units::{milliseconds, printable};

/// `--against`'s flags, checked before anything starts: keys to time, and OLD a command (one
/// line naming it, NEW never started).
pub(super) fn check(args: &WrapArgs, has_keys: bool) -> Result<(), Refusal> {
    let Some(OldBuild(old)) = &args.against else {
        return Ok(());
    };
    if !has_keys {
        return Err(
            "wrap --against: the verdict is on each key's time to its frame: give \
                    --keys or --keys-file"
                .to_owned()
                .into(),
        );
    }
    let shown = printable(&old[0]);
    if let Some(path) = stored_run(old) {
        if let Some(terminal) = args.terminal {
            return Err(format!(
                "wrap --against '{shown}' --terminal {}: a stored run against a terminal's \
                 pixels is not built: give the old build's command",
                terminal.name()
            )
            .into());
        }
        return Baseline::load(path)
            .map(|_| ())
            .map_err(|why| format!("wrap --against '{shown}': {why}").into());
    }
    if crate::files::find_program(old[0].as_ref()).is_none() {
        return Err(format!(
            "wrap --against '{shown}': not a command (not found, or not executable): the old \
             build's program and its arguments, as a shell splits them"
        )
        .into());
    }
    Ok(())
}

/// `--against FILE.json`: a stored run (one word naming a `.json` file), not a command.
pub fn stored_run(old: &[String]) -> Option<&Path> {
    match old {
        [one] if one.ends_with(".json") => Some(Path::new(one)),
        _ => None,
    }
}

/// A stored run (`wrap --export-json` of the old build): what a verdict reads of it, and what
/// it was measured under.
#[derive(Clone, Debug, Serialize)]
pub struct Baseline {
    pub path: String,
    pub version: String,
    pub machine: Option<String>,
    pub command: Vec<String>,
    pub size: (u16, u16),
    pub script: String,
    pub figures: RunFigures,
}

/// What is read of a stored run; the rest of its fields are left alone.
#[derive(serde::Deserialize)]
struct StoredRun {
    version: String,
    #[serde(default)]
    machine: Option<String>,
    command: Vec<String>,
    cols: u16,
    rows: u16,
    exit_code: Option<i32>,
    keys: Option<StoredKeys>,
}

#[derive(serde::Deserialize)]
struct StoredKeys {
    script: String,
    keys: u64,
    unanswered: u64,
    key_to_frame_ms: Option<crate::detect::keyed::Percentiles>,
    stages_ms: Option<crate::detect::keyed::StageSummary>,
    bytes_per_key: f64,
}

impl Baseline {
    /// The stored run at `path`, or why it is none: read as every file others send is (a
    /// regular file, 16 MiB at most), its texts escaped, its figures finite and not negative.
    pub fn load(path: &Path) -> Result<Baseline, String> {
        use crate::files::{InputKind, read_input};
        let bytes = read_input(path, InputKind::WrapRun).map_err(|e| e.to_string())?;
        if bytes.iter().all(u8::is_ascii_whitespace) {
            return Err("an empty file: a stored run is `flushlab wrap --export-json`'s".into());
        }
        let stored: StoredRun = serde_json::from_slice(&bytes).map_err(|_| {
            "not a stored run (`flushlab wrap --keys … --export-json FILE` writes one)".to_owned()
        })?;
        let keys = stored.keys.ok_or(
            "a run without keys: nothing to hold a key's time against (a run with --keys)",
        )?;
        let k2f = keys
            .key_to_frame_ms
            .ok_or("a run whose keys were never answered")?;
        let sane = |x: f64| x.is_finite() && x >= 0.0;
        let stages: Vec<(Stage, f64)> = keys
            .stages_ms
            .map(|s| s.each().map(|(stage, p)| (stage, p.p50)).collect())
            .unwrap_or_default();
        if ![k2f.p50, k2f.p95, keys.bytes_per_key]
            .into_iter()
            .chain(stages.iter().map(|s| s.1))
            .all(sane)
        {
            return Err("a stored run with figures no run gives (negative or not finite)".into());
        }
        let text = |t: &str| crate::units::one_line(t);
        Ok(Baseline {
            path: text(&path.to_string_lossy()),
            version: text(&stored.version),
            machine: stored.machine.as_deref().map(text),
            command: stored.command.iter().map(|w| text(w)).collect(),
            size: (stored.cols, stored.rows),
            script: text(&keys.script),
            figures: RunFigures {
                key_to_frame_p50_ms: Some(k2f.p50),
                key_to_frame_p95_ms: Some(k2f.p95),
                stages_p50_ms: stages,
                answered: keys.keys.saturating_sub(keys.unanswered),
                keys: keys.keys,
                bytes_per_key: keys.bytes_per_key,
                exit_code: stored.exit_code,
            },
        })
    }

    /// What differs between the stored run and this one's settings, in words.
    fn differences(&self, args: &WrapArgs, script: &str) -> Vec<String> {
        let mut out = Vec::new();
        if self.version != env!("CARGO_PKG_VERSION") {
            out.push(format!(
                "flushlab {} stored it, {} runs now",
                self.version,
                env!("CARGO_PKG_VERSION")
            ));
        }
        let machine = crate::sys::process::cpu_model();
        if self.machine != machine {
            out.push(format!(
                "another machine ({} then, {} now)",
                self.machine.as_deref().unwrap_or("unnamed"),
                machine.as_deref().unwrap_or("unnamed")
            ));
        }
        if self.size != args.size {
            out.push(format!(
                "another size ({}x{} then, {}x{} now)",
                self.size.0, self.size.1, args.size.0, args.size.1
            ));
        }
        if self.script != script {
            out.push(format!(
                "other keys ('{}' then, '{}' now)",
                self.script,
                crate::units::one_line(script)
            ));
        }
        out
    }
}

/// Which build.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Build {
    Old,
    New,
}

impl Build {
    fn name(self) -> &'static str {
        match self {
            Build::Old => "OLD",
            Build::New => "NEW",
        }
    }
}

/// Which of a key's times the verdict is on.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Measure {
    /// Headless: from the key to its frame's end.
    KeyToFrame,
    /// In a real terminal (`--terminal`): from the key to the window's last change for it.
    KeyToLastPixel,
}

impl Measure {
    fn name(self) -> &'static str {
        match self {
            Measure::KeyToFrame => "key→frame",
            Measure::KeyToLastPixel => "key→last pixel",
        }
    }
}

/// One run's whole report, as the JSON keeps it.
#[derive(Clone, Debug, Serialize)]
#[serde(untagged)]
pub enum RunReport {
    Headless(Box<WrapReport>),
    Terminal(Box<super::pixel_report::PixelReport>),
}

/// One run's figures, as the verdict reads them.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct RunFigures {
    pub key_to_frame_p50_ms: Option<f64>,
    pub key_to_frame_p95_ms: Option<f64>,
    /// Each stage's p50 (ms), where known.
    pub stages_p50_ms: Vec<(Stage, f64)>,
    /// Keys that reached the terminal with an answer (a byte or a frame).
    pub answered: u64,
    pub keys: u64,
    pub bytes_per_key: f64,
    /// CMD's exit status (`None`: wrap ended it).
    pub exit_code: Option<i32>,
}

impl RunFigures {
    fn of(report: &WrapReport) -> RunFigures {
        let keys = report.keys.as_ref().map(|k| &k.latencies);
        RunFigures::of_keys(keys, report.exit_code, Measure::KeyToFrame)
    }

    /// `measure`: which of a key's times the verdict reads (in a terminal, its last pixel).
    fn of_keys(
        keys: Option<&KeyLatencies>,
        exit_code: Option<i32>,
        measure: Measure,
    ) -> RunFigures {
        let k2f = keys.and_then(|k| match measure {
            Measure::KeyToFrame => k.key_to_frame_ms,
            Measure::KeyToLastPixel => k.pixels_ms.map(|p| p.last),
        });
        RunFigures {
            key_to_frame_p50_ms: k2f.map(|p| p.p50),
            key_to_frame_p95_ms: k2f.map(|p| p.p95),
            stages_p50_ms: keys
                .and_then(|k| k.stages_ms)
                .map(|s| s.each().map(|(stage, p)| (stage, p.p50)).collect())
                .unwrap_or_default(),
            answered: keys.map_or(0, |k| k.keys - k.unanswered),
            keys: keys.map_or(0, |k| k.keys),
            bytes_per_key: keys.map_or(0.0, |k| k.bytes_per_key),
            exit_code,
        }
    }

    fn stage(&self, stage: Stage) -> Option<f64> {
        self.stages_p50_ms
            .iter()
            .find(|(s, _)| *s == stage)
            .map(|(_, ms)| *ms)
    }
}

/// One round: both builds, in the order they ran.
#[derive(Clone, Debug, Serialize)]
pub struct Round {
    pub round: u32,
    pub order: [Build; 2],
    pub old: RunFigures,
    pub new: RunFigures,
}

/// What the rounds say.
#[derive(Clone, Debug, Serialize)]
pub struct AgainstVerdict {
    /// Which of a key's times the ratio is of.
    pub measure: Measure,
    /// `None` where no verdict could be drawn (`no_verdict` says why).
    pub verdict: Option<Verdict>,
    pub no_verdict: Option<String>,
    pub threshold: f64,
    /// Key→frame p50, NEW over OLD.
    pub ratio: Option<Ratio>,
    /// Key→frame p95, NEW over OLD: information, not the verdict.
    pub p95_ratio: Option<Ratio>,
    /// Each stage's p50, NEW over OLD: information.
    pub stages: Vec<StageRatio>,
    /// The stage that moved most (slower or faster beyond the threshold and the floor).
    pub moved: Option<Stage>,
    /// NEW answered with less than OLD (fewer keys answered, or a tenth fewer bytes a key):
    /// never called faster or the same.
    pub answers_with_less: Option<String>,
    /// NEW sent a tenth more bytes a key than OLD in most rounds: the two did not draw the
    /// same (information: a build that draws more and is slower is slower).
    pub draws_more: Option<String>,
    pub old: Vec<String>,
    pub new: Vec<String>,
}

/// A stage's change, named.
#[derive(Clone, Copy, Debug, Serialize)]
pub struct StageRatio {
    pub stage: Stage,
    #[serde(flatten)]
    pub change: StageChange,
}

/// The `--export-json` of `--against`.
#[derive(Clone, Debug, Serialize)]
pub struct Against {
    pub against: AgainstVerdict,
    pub rounds: Vec<Round>,
    pub old_runs: Vec<RunReport>,
    pub new_runs: Vec<RunReport>,
    /// `--against run.json`: the stored run, and what differs from it.
    pub stored: Option<Stored>,
}

/// A stored run as OLD, and what differs between it and this run.
#[derive(Clone, Debug, Serialize)]
pub struct Stored {
    pub baseline: Baseline,
    pub differences: Vec<String>,
}

pub(super) fn run(
    args: &WrapArgs,
    (old, new_program): (&[String], &Path),
    keys: &Keys,
    signal: &AtomicUsize,
) -> anyhow::Result<Outcome> {
    let how = How {
        keys: Some(keys),
        interactive: false,
        fix: None,
        duration: args.duration,
        profile: None,
    };
    if let Some(path) = stored_run(old) {
        let baseline = Baseline::load(path)
            .map_err(|why| anyhow::anyhow!("wrap --against '{}': {why}", printable(&old[0])))?;
        return against_stored(args, (baseline, new_program), (how, keys), signal);
    }
    let old_program: PathBuf = crate::files::find_program(old[0].as_ref())
        .with_context(|| format!("'{}' is not a command", printable(&old[0])))?;
    let old_args = WrapArgs {
        command: old.iter().map(Into::into).collect(),
        ..args.clone()
    };
    let one = |build: Build| -> anyhow::Result<Ran> {
        let (side_args, program) = match build {
            Build::Old => (&old_args, old_program.as_path()),
            Build::New => (args, new_program),
        };
        if let Some(terminal) = args.terminal {
            let run =
                super::in_terminal::measure(side_args, program, (terminal, keys, None), signal)?;
            let report = super::pixel_report::PixelReport::of(side_args, run, keys);
            let figures =
                RunFigures::of_keys(Some(&report.keys.latencies), None, Measure::KeyToLastPixel);
            return Ok((figures, RunReport::Terminal(Box::new(report)), None));
        }
        let (mut measured, _) = measure(side_args, program, how, signal)?;
        let timeline = std::mem::take(&mut measured.timeline);
        let report = WrapReport::of(side_args, measured, &timeline);
        let drawn = report
            .keys
            .as_ref()
            .map(|k| (timeline, k.latencies.clone()));
        Ok((
            RunFigures::of(&report),
            RunReport::Headless(Box::new(report)),
            drawn,
        ))
    };
    complain(&format!(
        "wrap --against: a warm-up round, then {} rounds (ABBA)…",
        args.rounds()
    ));
    for build in [Build::Old, Build::New] {
        one(build)?;
    }
    let (rounds, (old_runs, new_runs), last) = play(args.rounds(), &one, signal)?;
    let measure = match args.terminal {
        Some(_) => Measure::KeyToLastPixel,
        None => Measure::KeyToFrame,
    };
    let against = Against {
        against: AgainstVerdict::of(
            &rounds,
            (args.threshold, measure),
            (old, &args.command_words()),
        ),
        rounds,
        old_runs,
        new_runs,
        stored: None,
    };
    tell(args, &against, &last)?;
    Ok(match signal.load(Ordering::Relaxed) {
        0 => against.against.outcome(),
        sig => Outcome::Signal(sig),
    })
}

/// `--against run.json`: NEW alone, round after round, each against the stored run. One stored
/// run has no spread of its own (its machine may have been quieter or busier all along): the
/// verdict is advice, and the exit 0 whatever it says.
fn against_stored(
    args: &WrapArgs,
    (baseline, new_program): (Baseline, &Path),
    (how, keys): (How<'_>, &Keys),
    signal: &AtomicUsize,
) -> anyhow::Result<Outcome> {
    complain(&format!(
        "wrap --against {}: a stored run; {} runs of NEW…",
        baseline.path,
        args.rounds()
    ));
    let (mut rounds, mut new_runs, mut last) = (Vec::new(), Vec::new(), Vec::new());
    for round in 0..args.rounds() {
        if signal.load(Ordering::Relaxed) != 0 {
            break;
        }
        let (mut measured, _) = measure(args, new_program, how, signal)?;
        let timeline = std::mem::take(&mut measured.timeline);
        let report = WrapReport::of(args, measured, &timeline);
        rounds.push(Round {
            round: round + 1,
            order: [Build::Old, Build::New],
            old: baseline.figures.clone(),
            new: RunFigures::of(&report),
        });
        if let Some(keys) = &report.keys {
            last = vec![(Build::New, timeline, keys.latencies.clone())];
        }
        new_runs.push(RunReport::Headless(Box::new(report)));
    }
    let differences = baseline.differences(args, &keys.script.source);
    let against = Against {
        against: AgainstVerdict::of(
            &rounds,
            (args.threshold, Measure::KeyToFrame),
            (&baseline.command, &args.command_words()),
        ),
        rounds,
        old_runs: Vec::new(),
        new_runs,
        stored: Some(Stored {
            baseline,
            differences,
        }),
    };
    tell(args, &against, &last)?;
    Ok(match signal.load(Ordering::Relaxed) {
        0 => Outcome::Finished,
        sig => Outcome::Signal(sig),
    })
}

/// The table on stderr, then the files asked for.
fn tell(args: &WrapArgs, against: &Against, last: &Last) -> anyhow::Result<()> {
    let table = against.table(&args.command_line(), args.size);
    complain(&table);
    if let Some(destination) = &args.report {
        destination
            .write_json(against)
            .with_context(|| format!("writing the verdict to {destination}"))?;
    }
    if let Some(destination) = &args.export_markdown {
        destination
            .write(against.markdown(&table).as_bytes())
            .with_context(|| format!("writing the verdict to {destination}"))?;
    }
    if let Some(destination) = &args.plot {
        draw_last_round(destination, &args.command_line(), against, last)?;
    }
    Ok(())
}

/// What a run of one build gives: its figures, its report, and (headless) its timeline with its
/// keys, for `--plot`.
type Ran = (RunFigures, RunReport, Option<(Timeline, KeyLatencies)>);

/// The last round's runs, each build's timeline and keys (`--plot`).
type Last = Vec<(Build, Timeline, KeyLatencies)>;

/// The rounds, ABBA, until done or a signal: each round's figures, each build's reports, and
/// the last round's timelines (for `--plot`).
#[allow(clippy::type_complexity)]
fn play(
    count: u32,
    one: &dyn Fn(Build) -> anyhow::Result<Ran>,
    signal: &AtomicUsize,
) -> anyhow::Result<(Vec<Round>, (Vec<RunReport>, Vec<RunReport>), Last)> {
    let (mut rounds, mut old_runs, mut new_runs) = (Vec::new(), Vec::new(), Vec::new());
    let mut last: Last = Vec::new();
    'rounds: for round in 0..count {
        let order = if round % 2 == 0 {
            [Build::Old, Build::New]
        } else {
            [Build::New, Build::Old]
        };
        let mut figures = [None, None];
        last.clear();
        for build in order {
            if signal.load(Ordering::Relaxed) != 0 {
                break 'rounds;
            }
            let (run, report, drawn) = one(build)?;
            figures[usize::from(build == Build::New)] = Some(run);
            match build {
                Build::Old => old_runs.push(report),
                Build::New => new_runs.push(report),
            }
            if let Some((timeline, keys)) = drawn {
                last.push((build, timeline, keys));
            }
        }
        if let [Some(old), Some(new)] = figures {
            rounds.push(Round {
                round: round + 1,
                order,
                old,
                new,
            });
        }
    }
    Ok((rounds, (old_runs, new_runs), last))
}

/// `--plot`: the last round's keys, OLD and NEW side by side on one axis (headless runs: a
/// terminal's runs keep no timeline of wrap's reads to draw).
fn draw_last_round(
    destination: &crate::files::Destination,
    command: &str,
    against: &Against,
    last: &Last,
) -> anyhow::Result<()> {
    let Some(RunReport::Headless(new)) = against.new_runs.last() else {
        return Ok(());
    };
    let panels: Vec<Panel> = last
        .iter()
        .map(|(build, timeline, keys)| {
            Panel::of(
                format!("{} (round {})", build.name(), against.rounds.len()),
                timeline,
                keys,
            )
        })
        .collect();
    draw_keys(destination, &plot_title(command, new), &panels)
}

/// The stages a verdict on `measure` looks at: drain headless, paint in a terminal (there the
/// terminal reads the pty, and wrap never sees the drain).
fn stages(measure: Measure) -> impl Iterator<Item = Stage> {
    Stage::ALL.into_iter().filter(move |&s| match measure {
        Measure::KeyToFrame => s != Stage::Paint,
        Measure::KeyToLastPixel => s != Stage::Drain,
    })
}

impl AgainstVerdict {
    /// The rounds' verdict; `words`: OLD's and NEW's commands.
    pub fn of(
        rounds: &[Round],
        (threshold, measure): (f64, Measure),
        words: (&[String], &[String]),
    ) -> AgainstVerdict {
        let pairs = |figure: &dyn Fn(&RunFigures) -> Option<f64>| -> Vec<(f64, f64)> {
            rounds
                .iter()
                .filter_map(|r| Some((figure(&r.old)?, figure(&r.new)?)))
                .collect()
        };
        let ratio = Ratio::of_rounds(&pairs(&|f| f.key_to_frame_p50_ms));
        let stages: Vec<StageRatio> = stages(measure)
            .filter_map(|stage| {
                Some(StageRatio {
                    stage,
                    change: StageChange::of_rounds(&pairs(&|f| f.stage(stage)), threshold)?,
                })
            })
            .collect();
        let named: Vec<(&str, StageChange)> =
            stages.iter().map(|s| (s.stage.name(), s.change)).collect();
        let moved =
            moved(&named).and_then(|(name, _)| Stage::ALL.into_iter().find(|s| s.name() == name));
        let no_verdict = no_verdict(rounds);
        let answers_with_less = answers_with_less(rounds);
        let draws_more = draws_more(rounds);
        let counted = pairs(&|f| f.key_to_frame_p50_ms).len();
        let verdict =
            no_verdict
                .is_none()
                .then(|| match Verdict::of_rounds(ratio, counted, threshold) {
                    Verdict::Faster | Verdict::Same if answers_with_less.is_some() => {
                        Verdict::Inconclusive
                    }
                    v => v,
                });
        AgainstVerdict {
            measure,
            verdict,
            no_verdict,
            threshold,
            ratio,
            p95_ratio: Ratio::of_rounds(&pairs(&|f| f.key_to_frame_p95_ms)),
            stages,
            moved,
            answers_with_less,
            draws_more,
            old: words.0.to_vec(),
            new: words.1.to_vec(),
        }
    }

    /// The exit code's outcome: 0 for the same or faster, 4 slower, 5 inconclusive, 1 without
    /// a verdict.
    pub fn outcome(&self) -> Outcome {
        match self.verdict {
            Some(Verdict::Same | Verdict::Faster) => Outcome::Finished,
            Some(Verdict::Slower) => Outcome::Slower,
            Some(Verdict::Inconclusive) => Outcome::Inconclusive,
            None => Outcome::Failed,
        }
    }
}

/// Why no verdict can be drawn: a build that crashed (exited other than 0), or answered no key.
fn no_verdict(rounds: &[Round]) -> Option<String> {
    if rounds.is_empty() {
        return Some("no round ran to its end".to_owned());
    }
    for r in rounds {
        for (build, f) in [(Build::Old, &r.old), (Build::New, &r.new)] {
            if let Some(code @ 1..) = f.exit_code {
                return Some(format!(
                    "{} exited {code} in round {}: a crash is no timing",
                    build.name(),
                    r.round
                ));
            }
            if f.key_to_frame_p50_ms.is_none() {
                return Some(format!(
                    "{} answered none of the keys in round {}",
                    build.name(),
                    r.round
                ));
            }
        }
    }
    None
}

/// Whether NEW answered with less than OLD: fewer keys answered, or a tenth fewer bytes a key,
/// in most rounds.
fn answers_with_less(rounds: &[Round]) -> Option<String> {
    let fewer_keys = rounds
        .iter()
        .filter(|r| r.new.answered < r.old.answered)
        .count();
    let fewer_bytes = rounds
        .iter()
        .filter(|r| r.new.bytes_per_key < 0.9 * r.old.bytes_per_key)
        .count();
    let most = rounds.len() / 2 + 1;
    if fewer_keys >= most {
        Some(format!(
            "NEW answered fewer keys than OLD in {fewer_keys} of {} rounds",
            rounds.len()
        ))
    } else if fewer_bytes >= most {
        Some(format!(
            "NEW sent a tenth fewer bytes a key than OLD in {fewer_bytes} of {} rounds: it may \
             draw less, not faster",
            rounds.len()
        ))
    } else {
        None
    }
}

/// Whether NEW sent a tenth more bytes a key than OLD in most rounds.
fn draws_more(rounds: &[Round]) -> Option<String> {
    let more = rounds
        .iter()
        .filter(|r| r.new.bytes_per_key > 1.1 * r.old.bytes_per_key)
        .count();
    (more > rounds.len() / 2).then(|| {
        format!(
            "NEW sent a tenth more bytes a key than OLD in {more} of {} rounds: the two did not \
             draw the same (compare keys.each[].bytes in their runs)",
            rounds.len()
        )
    })
}

impl Against {
    /// The summary printed after the rounds: one table, the verdict, the stage that moved.
    pub fn table(&self, command: &str, (cols, rows): (u16, u16)) -> String {
        let v = &self.against;
        let mut out = match &self.stored {
            None => format!(
                "wrap --against: NEW {command}, OLD {}; {} rounds ABBA after a dropped warm-up, \
                 {cols}x{rows}\n",
                crate::units::one_line(&v.old.join(" ")),
                self.rounds.len()
            ),
            Some(stored) => format!(
                "wrap --against {}: NEW {command}, {} runs, {cols}x{rows}, against a stored run \
                 of {}\n",
                stored.baseline.path,
                self.rounds.len(),
                crate::units::one_line(&v.old.join(" ")),
            ),
        };
        let median = |pick: &dyn Fn(&Round) -> Option<f64>| {
            crate::results::statistics::Spread::of(self.rounds.iter().filter_map(pick))
                .map_or("unknown".to_owned(), |s| milliseconds(s.median))
        };
        let header: Vec<String> = [format!("{} p50", v.measure.name()), "p95".to_owned()]
            .into_iter()
            .chain(stages(v.measure).map(|s| s.name().to_owned()))
            .collect();
        out += &format!("| build  | {} |\n", header.join(" | "));
        for build in [Build::Old, Build::New] {
            let side = |r: &Round| -> RunFigures {
                match build {
                    Build::Old => r.old.clone(),
                    Build::New => r.new.clone(),
                }
            };
            let mut cells = vec![
                median(&|r| side(r).key_to_frame_p50_ms),
                median(&|r| side(r).key_to_frame_p95_ms),
            ];
            cells.extend(stages(v.measure).map(|stage| median(&|r| side(r).stage(stage))));
            let name = match (build, &self.stored) {
                (Build::Old, Some(_)) => "STORED",
                _ => build.name(),
            };
            out += &format!("| {name:<6} | {} |\n", cells.join(" | "));
        }
        out += &self.verdict_line();
        out
    }

    fn verdict_line(&self) -> String {
        let v = &self.against;
        let spread = |r: Ratio| format!("×{:.2} (×{:.2}–×{:.2})", r.estimate, r.low, r.high);
        let mut out = match (&v.no_verdict, v.ratio) {
            (Some(why), _) => format!("no verdict: {why}"),
            (None, None) => format!(
                "{} p50, NEW over OLD: unknown (fewer than 3 rounds with both figures): \
                 inconclusive",
                v.measure.name()
            ),
            (None, Some(r)) => format!(
                "{} p50, NEW over OLD: {} over {} rounds: {} (threshold ±{:.0}%){}",
                v.measure.name(),
                spread(r),
                self.rounds.len(),
                v.verdict.map_or("none", Verdict::name),
                v.threshold * 100.0,
                if self.rounds.len() < DECISIVE_ROUNDS {
                    format!(
                        "; slower, faster or same needs {DECISIVE_ROUNDS} rounds or more (--rounds)"
                    )
                } else {
                    String::new()
                }
            ),
        };
        if let Some(p95) = v.p95_ratio {
            out += &format!("\n{} p95, NEW over OLD: {}", v.measure.name(), spread(p95));
        }
        let stages: Vec<String> = v
            .stages
            .iter()
            .map(
                |StageRatio { stage, change: c }| match (c.verdict, c.ratio) {
                    (None, _) => format!("{} under {} ms either way", stage.name(), 0.1),
                    (Some(verdict), Some(r)) => {
                        format!("{} ×{:.2} {}", stage.name(), r.estimate, verdict.name())
                    }
                    (Some(_), None) => format!("{} unknown", stage.name()),
                },
            )
            .collect();
        if !stages.is_empty() {
            let moved = v
                .moved
                .map_or("no stage moved beyond the threshold".to_owned(), |s| {
                    format!("{} moved", s.name())
                });
            out += &format!("\nstages, NEW over OLD: {}; {moved}", stages.join(", "));
        }
        if let Some(less) = &v.answers_with_less {
            out += &format!("\n{less}: never called faster or the same");
        }
        if let Some(more) = &v.draws_more {
            out += &format!("\n{more}");
        }
        if let Some(stored) = &self.stored {
            out += "\nadvice only: one stored run has no spread of its own (exit 0 whatever it \
                    says; run both builds with --against 'OLD CMD' for a verdict to gate on)";
            for difference in &stored.differences {
                out += &format!("\nthe stored run differs: {difference}");
            }
        }
        out
    }

    /// The summary as Markdown: a CI job's summary page.
    pub fn markdown(&self, table: &str) -> String {
        let mut lines = table.lines();
        let title = lines.next().unwrap_or_default();
        let mut out = format!("### {title}\n\n");
        let mut rest = String::new();
        for line in lines {
            if line.starts_with('|') {
                out += line;
                out += "\n";
                if line.starts_with("| build") {
                    let columns = line.matches('|').count() - 1;
                    out += &format!("|{}\n", "---|".repeat(columns));
                }
            } else {
                rest += &format!("\n{line}\n");
            }
        }
        out + &rest
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn figures(p50: f64, emit: f64) -> RunFigures {
        RunFigures {
            key_to_frame_p50_ms: Some(p50),
            key_to_frame_p95_ms: Some(p50 * 1.5),
            stages_p50_ms: vec![
                (Stage::Processing, p50 - emit),
                (Stage::Emit, emit),
                (Stage::Drain, 0.01),
            ],
            answered: 10,
            keys: 10,
            bytes_per_key: 1000.0,
            exit_code: Some(0),
        }
    }

    /// Each round's (old key→frame p50, its emit) and (new's, its emit).
    type Pair = ((f64, f64), (f64, f64));

    fn rounds(pairs: &[Pair]) -> Vec<Round> {
        pairs
            .iter()
            .enumerate()
            .map(|(i, &((o, oe), (n, ne)))| Round {
                round: i as u32 + 1,
                order: [Build::Old, Build::New],
                old: figures(o, oe),
                new: figures(n, ne),
            })
            .collect()
    }

    /// The summary's table of a verdict over `rounds`, with no runs beside it.
    fn table_of(against: AgainstVerdict, rounds: Vec<Round>) -> String {
        Against {
            against,
            rounds,
            old_runs: vec![],
            new_runs: vec![],
            stored: None,
        }
        .table("./new", (80, 24))
    }

    fn verdict(rounds: &[Round]) -> AgainstVerdict {
        let words = vec!["x".to_owned()];
        AgainstVerdict::of(rounds, (0.05, Measure::KeyToFrame), (&words, &words))
    }

    /// Too few rounds for a verdict: whatever the interval, inconclusive, and said why.
    #[test]
    fn fewer_rounds_than_a_verdict_needs_are_inconclusive() {
        let r = rounds(&[((5.0, 1.0), (8.0, 4.0)); DECISIVE_ROUNDS - 1]);
        let v = verdict(&r);
        assert!(v.ratio.is_some_and(|ratio| ratio.low > 1.05));
        assert_eq!(v.verdict, Some(Verdict::Inconclusive));
        let table = table_of(v, r);
        assert!(table.contains("needs 6 rounds or more"), "{table}");
        let v = verdict(&rounds(&[((5.0, 1.0), (8.0, 4.0)); DECISIVE_ROUNDS]));
        assert_eq!(v.verdict, Some(Verdict::Slower));
    }

    #[test]
    fn a_slower_emit_is_slower_and_named() {
        let r = rounds(&[((5.0, 1.0), (8.0, 4.0)); 10]);
        let v = verdict(&r);
        assert_eq!(v.verdict, Some(Verdict::Slower));
        assert_eq!(v.moved, Some(Stage::Emit));
        assert_eq!(v.outcome().exit_code(), 4);
        let drain = v
            .stages
            .iter()
            .find(|s| s.stage == Stage::Drain)
            .unwrap()
            .change;
        assert_eq!(drain.verdict, None, "0.01 ms either way is no change");
        let table = table_of(v, r);
        assert!(
            table.contains("slower") && table.contains("emit moved"),
            "{table}"
        );
    }

    #[test]
    fn noise_around_one_is_the_same_and_exits_0() {
        let noise = [1.0, 1.01, 0.99, 1.02, 0.98, 1.0, 1.01, 0.99, 1.0, 1.0];
        let r: Vec<Round> = rounds(
            &noise
                .iter()
                .map(|&k| ((5.0, 1.0), (5.0 * k, 1.0)))
                .collect::<Vec<_>>(),
        );
        let v = verdict(&r);
        assert_eq!(v.verdict, Some(Verdict::Same));
        assert_eq!(v.moved, None);
        assert_eq!(v.outcome().exit_code(), 0);
    }

    #[test]
    fn a_crash_or_an_unanswered_build_gives_no_verdict_and_never_0() {
        let mut r = rounds(&[((5.0, 1.0), (5.0, 1.0)); 10]);
        r[1].new.exit_code = Some(139);
        let v = verdict(&r);
        assert_eq!(v.verdict, None);
        assert!(
            v.no_verdict
                .as_deref()
                .unwrap()
                .contains("NEW exited 139 in round 2")
        );
        assert_eq!(v.outcome().exit_code(), 1);
        let mut r = rounds(&[((5.0, 1.0), (5.0, 1.0)); 10]);
        r[0].old.key_to_frame_p50_ms = None;
        assert!(
            verdict(&r)
                .no_verdict
                .unwrap()
                .contains("OLD answered none")
        );
    }

    #[test]
    fn answering_with_less_is_never_faster() {
        let mut r = rounds(&[((5.0, 1.0), (2.0, 0.5)); 10]);
        for round in &mut r {
            round.new.bytes_per_key = 100.0;
        }
        let v = verdict(&r);
        assert_eq!(v.verdict, Some(Verdict::Inconclusive));
        assert!(v.answers_with_less.is_some() && v.draws_more.is_none());
        assert_eq!(v.outcome().exit_code(), 5);
    }

    #[test]
    fn drawing_more_is_said_and_the_verdict_stands() {
        let mut r = rounds(&[((5.0, 1.0), (8.0, 4.0)); 10]);
        for round in &mut r {
            round.old.bytes_per_key = 100.0;
        }
        let v = verdict(&r);
        assert_eq!(v.verdict, Some(Verdict::Slower));
        assert!(v.answers_with_less.is_none());
        assert!(
            v.draws_more
                .as_deref()
                .is_some_and(|m| m.contains("10 of 10 rounds")),
            "{:?}",
            v.draws_more
        );
    }

    #[test]
    fn the_markdown_is_a_table_with_its_rule() {
        let r = rounds(&[((5.0, 1.0), (8.0, 4.0)); 10]);
        let a = Against {
            against: verdict(&r),
            rounds: r,
            old_runs: vec![],
            new_runs: vec![],
            stored: None,
        };
        let md = a.markdown(&a.table("./new", (80, 24)));
        assert!(md.starts_with("### wrap --against"), "{md}");
        assert!(md.contains("|---|---|"), "{md}");
    }
}
