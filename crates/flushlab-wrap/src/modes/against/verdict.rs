//! What `--against`'s rounds say: each build's figures a round, NEW over OLD with an interval
//! at the looks' level, and the verdict against the threshold — with what the verdict must not
//! hide (a crash, keys left unanswered, less drawn).

use serde::Serialize;

use crate::modes::rounds::Stopped;
use crate::plan::run_figures::{Measure, RunFigures};
use flushlab_core::detect::keyed::Stage;
use flushlab_core::outcome::Outcome;
use flushlab_core::statistics::verdict::{Looks, Ratio, StageChange, Verdict, moved};

/// Which build.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Build {
    Old,
    New,
}

impl Build {
    pub fn name(self) -> &'static str {
        match self {
            Build::Old => "OLD",
            Build::New => "NEW",
        }
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

impl Round {
    /// A round of the rounds engine's, OLD its side 0 and NEW its side 1.
    pub fn of_sides<R>(round: &crate::modes::rounds::Round<(RunFigures, R)>) -> Round {
        let build = |side: usize| [Build::Old, Build::New][side];
        Round {
            round: round.number as u32,
            order: [build(round.ran[0]), build(round.ran[1])],
            old: round.sides[0].0.clone(),
            new: round.sides[1].0.clone(),
        }
    }
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
    /// Whole rounds counted.
    pub rounds: usize,
    /// Why the rounds ended: a decisive look, the rounds or time budget, a fixed count, a
    /// signal.
    pub stopped_because: Stopped,
    /// When it looked at its interval, and at what level (the interval's miss chance is
    /// `alpha` over the number of looks).
    pub looks: Looks,
    /// Key→frame p50, NEW over OLD, its interval at the looks' level.
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
    /// The keys whose answer flashed the screen, NEW against OLD: a verdict of its own beside
    /// the time's (`None` where the runs had no `seen`).
    pub flicker: Option<Flicker>,
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
/// The stages a verdict on `measure` looks at: drain headless (over a wire, the downlink),
/// paint in a terminal (there the terminal reads the pty, and wrap never sees the drain).
pub fn stages(measure: Measure) -> impl Iterator<Item = Stage> {
    Stage::ALL.into_iter().filter(move |&s| match measure {
        Measure::KeyToFrame | Measure::KeyToLastByte => s != Stage::Paint,
        Measure::KeyToLastPixel => s != Stage::Drain,
    })
}

impl AgainstVerdict {
    /// The rounds' verdict; `words`: OLD's and NEW's commands.
    /// `looks`: when the rounds were looked at; `stopped`: why they ended (a look asks what the
    /// verdict would be were they to end now, as decided).
    pub fn of(
        rounds: &[Round],
        (threshold, measure): (f64, Measure),
        (looks, stopped): (&Looks, Stopped),
        words: (&[String], &[String]),
    ) -> AgainstVerdict {
        let pairs = |figure: &dyn Fn(&RunFigures) -> Option<f64>| -> Vec<(f64, f64)> {
            rounds
                .iter()
                .filter_map(|r| Some((figure(&r.old)?, figure(&r.new)?)))
                .collect()
        };
        let ratio = Ratio::of_rounds_at(&pairs(&|f| f.key_to_frame_p50_ms), looks.level());
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
            rounds: rounds.len(),
            stopped_because: stopped,
            looks: looks.clone(),
            ratio,
            p95_ratio: Ratio::of_rounds(&pairs(&|f| f.key_to_frame_p95_ms)),
            stages,
            moved,
            answers_with_less,
            draws_more,
            flicker: Flicker::of(rounds),
            old: words.0.to_vec(),
            new: words.1.to_vec(),
        }
    }

    /// Whether this verdict ends the rounds: slower, faster or the same, or none to be had; or
    /// NEW flickering more in every round of enough rounds (a regression whatever the time
    /// would say).
    pub fn decides(&self) -> bool {
        self.verdict != Some(Verdict::Inconclusive)
            || self.flicker.as_ref().is_some_and(Flicker::decisively_more)
    }

    /// The exit code's outcome: 0 for the same or faster, 4 slower, 5 inconclusive, 1 without
    /// a verdict.
    pub fn outcome(&self) -> Outcome {
        // A build that flickers where the old one did not is never "faster, exit 0".
        if self
            .flicker
            .as_ref()
            .is_some_and(|f| f.verdict == FlickerVerdict::More)
        {
            return Outcome::Slower;
        }
        match self.verdict {
            Some(Verdict::Same | Verdict::Faster) => Outcome::Finished,
            Some(Verdict::Slower) => Outcome::Slower,
            Some(Verdict::Inconclusive) => Outcome::Inconclusive,
            None => Outcome::Failed,
        }
    }
}

/// Keys that flashed the screen, summed over the rounds, NEW against OLD, and what that says.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Flicker {
    pub old_flashed: u64,
    pub new_flashed: u64,
    /// Keys sent, each build, over the rounds.
    pub keys: u64,
    /// Rounds in which NEW flashed more keys than OLD, and fewer.
    pub rounds_more: usize,
    pub rounds_fewer: usize,
    /// Rounds with both builds' flashes.
    pub rounds: usize,
    pub verdict: FlickerVerdict,
}

/// What the flashes say, NEW against OLD.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum FlickerVerdict {
    /// NEW flashed more keys in most rounds, and more over all: a regression, whatever the time
    /// says (exit 4).
    More,
    Less,
    Same,
    /// The rounds disagree.
    Unclear,
}

impl FlickerVerdict {
    pub fn words(self) -> &'static str {
        match self {
            FlickerVerdict::More => "flickers more",
            FlickerVerdict::Less => "flickers less",
            FlickerVerdict::Same => "flickers the same",
            FlickerVerdict::Unclear => "unclear (the rounds disagree)",
        }
    }
}

impl Flicker {
    /// Exact counts, judged by the rounds: more (or fewer) in most rounds and over all.
    fn of(rounds: &[Round]) -> Option<Flicker> {
        let pairs: Vec<(u64, u64)> = rounds
            .iter()
            .map(|r| Some((r.old.flashed?, r.new.flashed?)))
            .collect::<Option<_>>()?;
        if pairs.is_empty() {
            return None;
        }
        let (old, new) = pairs.iter().fold((0, 0), |(o, n), (a, b)| (o + a, n + b));
        let more = pairs.iter().filter(|(o, n)| n > o).count();
        let fewer = pairs.iter().filter(|(o, n)| n < o).count();
        let most = pairs.len() / 2 + 1;
        let verdict = match (new.cmp(&old), more >= most, fewer >= most) {
            (std::cmp::Ordering::Greater, true, _) => FlickerVerdict::More,
            (std::cmp::Ordering::Less, _, true) => FlickerVerdict::Less,
            (std::cmp::Ordering::Equal, false, false) => FlickerVerdict::Same,
            _ => FlickerVerdict::Unclear,
        };
        Some(Flicker {
            old_flashed: old,
            new_flashed: new,
            keys: rounds.iter().map(|r| r.new.keys).sum(),
            rounds_more: more,
            rounds_fewer: fewer,
            rounds: pairs.len(),
            verdict,
        })
    }

    /// NEW flashed more keys than OLD in every round, and there were enough of them.
    pub fn decisively_more(&self) -> bool {
        self.verdict == FlickerVerdict::More
            && self.rounds_more == self.rounds
            && self.rounds >= flushlab_core::statistics::verdict::DECISIVE_ROUNDS
    }

    /// One line for the summary.
    pub fn line(&self) -> String {
        let every = match self.verdict {
            FlickerVerdict::More if self.rounds_more == self.rounds => ", in every round",
            FlickerVerdict::Less if self.rounds_fewer == self.rounds => ", in every round",
            _ => "",
        };
        format!(
            "flashes: NEW flashed the screen on {} of {} keys, OLD on {} (NEW more in {} of {} \
             round(s), fewer in {}): NEW {}{every}",
            self.new_flashed,
            self.keys,
            self.old_flashed,
            self.rounds_more,
            self.rounds,
            self.rounds_fewer,
            self.verdict.words()
        )
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
