//! The rounds engine: how every mode that runs CMD more than once runs its sides —
//! `--compare` (as it is, then tried), `--compare --terminal` (in the terminal and headless, each
//! as it is and tried) and `--against` (OLD and NEW). One order that a drifting machine slows
//! alike, a warm-up round that is dropped, a stop on a signal, and when to stop: after a fixed
//! count, or at the first scheduled look whose verdict is decisive, within a budget of rounds and
//! time ([`Looks`]). Generic over what a side gives, so that it is tested without processes.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Instant;

use serde::Serialize;

use crate::plan::Until;

/// The order of a round's sides.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Order {
    /// Every round in the sides' own order.
    Same,
    /// ABBA: every other round reversed, so that a machine that slows down across a round slows
    /// each side alike over two rounds.
    Abba,
}

/// Why the rounds ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Stopped {
    /// The fixed count ran (`--rounds N`).
    Rounds,
    /// A look's verdict decided.
    Decided,
    /// The rounds budget (`--max-rounds`) ran out with nothing decided.
    MaxRounds,
    /// The time budget (`--max-time`) ran out with nothing decided.
    MaxTime,
    /// A signal asked wrap to stop.
    Signal,
    /// A look found no verdict to wait for (a build crashed, or answered no key): set by the
    /// mode that knows, from [`Stopped::Decided`].
    NoVerdict,
}

impl Stopped {
    /// Why, in words: "decided", "the budget of 60 rounds ran out".
    pub fn words(self, until: &Until) -> String {
        match (self, until) {
            (Stopped::Rounds, _) => "the rounds asked for (--rounds)".to_owned(),
            (Stopped::Decided, _) => "its interval decided".to_owned(),
            (Stopped::MaxRounds, until) => format!(
                "the budget of {} rounds ran out undecided (--max-rounds)",
                until.looks().most()
            ),
            (Stopped::MaxTime, Until::Decisive { max_time, .. }) => format!(
                "the budget of {} s ran out undecided (--max-time)",
                max_time.as_secs()
            ),
            (Stopped::MaxTime, _) => "the time budget ran out".to_owned(),
            (Stopped::Signal, _) => "a signal stopped it".to_owned(),
            (Stopped::NoVerdict, _) => "a build gave no verdict to wait for".to_owned(),
        }
    }
}

/// How a mode's rounds run.
#[derive(Clone, Debug)]
pub struct Schedule {
    /// How many sides a round runs.
    pub sides: usize,
    pub order: Order,
    /// A round run first and dropped: caches, the page cache and the CPU's clock warm alike
    /// for every side.
    pub warm_up: bool,
    pub until: Until,
}

impl Schedule {
    /// `sides` each round in their own order, no warm-up, `rounds` rounds: `--compare`'s, whose
    /// ratios are round by round and give no verdict.
    pub fn alternating(sides: usize, rounds: usize) -> Schedule {
        Schedule {
            sides,
            order: Order::Same,
            warm_up: false,
            until: Until::Rounds(rounds),
        }
    }
}

/// One round: each side's result, in the sides' own order (not the order they ran).
#[derive(Clone, Debug)]
pub struct Round<R> {
    /// From 1, warm-up not counted.
    pub number: usize,
    /// The sides in the order they ran.
    pub ran: Vec<usize>,
    pub sides: Vec<R>,
}

/// What the rounds gave.
#[derive(Debug)]
pub struct Played<R, L> {
    /// Whole rounds only: a round a signal cut short is dropped.
    pub rounds: Vec<Round<R>>,
    /// The last whole round's details (`--plot` draws them), each side's in the order they ran.
    pub last: Vec<L>,
    pub stopped: Stopped,
}

/// What a side gives: its result, kept for every round, and its details (a timeline), kept for
/// the last round only.
pub type Ran<R, L> = (R, Option<L>);

/// Runs the rounds of `schedule`: `run(side)` runs one side; `decides(rounds)` says whether the
/// rounds so far decide, asked only at a look. A side's error ends the rounds with it.
pub fn play<R, L>(
    schedule: &Schedule,
    run: &mut dyn FnMut(usize) -> anyhow::Result<Ran<R, L>>,
    decides: &dyn Fn(&[Round<R>]) -> bool,
    signal: &AtomicUsize,
) -> anyhow::Result<Played<R, L>> {
    let stopped = || signal.load(Ordering::Relaxed) != 0;
    let mut played = Played {
        rounds: Vec::new(),
        last: Vec::new(),
        stopped: Stopped::Signal,
    };
    if schedule.warm_up {
        for side in 0..schedule.sides {
            if stopped() {
                return Ok(played);
            }
            run(side)?;
        }
    }
    let started = Instant::now();
    let looks = schedule.until.looks();
    loop {
        let number = played.rounds.len() + 1;
        let mut ran: Vec<usize> = (0..schedule.sides).collect();
        if schedule.order == Order::Abba && number % 2 == 0 {
            ran.reverse();
        }
        let mut sides: Vec<Option<R>> = (0..schedule.sides).map(|_| None).collect();
        let mut last = Vec::new();
        let round_started = Instant::now();
        for &side in &ran {
            if stopped() {
                return Ok(played);
            }
            let (result, detail) = run(side)?;
            sides[side] = Some(result);
            last.extend(detail);
        }
        if stopped() {
            return Ok(played);
        }
        played.rounds.push(Round {
            number,
            ran,
            sides: sides.into_iter().flatten().collect(),
        });
        played.last = last;
        let why = match &schedule.until {
            Until::Rounds(n) if number >= *n => Some(Stopped::Rounds),
            Until::Rounds(_) => None,
            Until::Decisive { max_time, .. } => {
                // The round after this one would run past the budget: this is the last look.
                let out_of_time = started.elapsed() + round_started.elapsed() > *max_time;
                let last_look = number >= looks.most();
                if (looks.after(number) || out_of_time) && decides(&played.rounds) {
                    Some(Stopped::Decided)
                } else if last_look {
                    Some(Stopped::MaxRounds)
                } else if out_of_time {
                    Some(Stopped::MaxTime)
                } else {
                    None
                }
            }
        };
        if let Some(why) = why {
            played.stopped = why;
            return Ok(played);
        }
    }
}

#[cfg(test)]
mod tests {
    use std::cell::RefCell;

    use super::*;
    use flushlab_core::statistics::verdict::Looks;
    use std::time::Duration;

    fn schedule(until: Until) -> Schedule {
        Schedule {
            sides: 2,
            order: Order::Abba,
            warm_up: true,
            until,
        }
    }

    /// The rounds after which `schedule` looked, and what it played, asked to decide from
    /// `decided_at` rounds on.
    fn looks_of(schedule: &Schedule, decided_at: usize) -> (Vec<usize>, Played<usize, ()>) {
        let looked = RefCell::new(Vec::new());
        let played = play(
            schedule,
            &mut |side| Ok::<_, anyhow::Error>((side, None::<()>)),
            &|rounds: &[Round<usize>]| {
                looked.borrow_mut().push(rounds.len());
                rounds.len() >= decided_at
            },
            &AtomicUsize::new(0),
        )
        .unwrap();
        (looked.into_inner(), played)
    }

    fn decisive(most: usize) -> Until {
        Until::Decisive {
            looks: Looks::until_decisive(most),
            max_time: Duration::from_secs(3600),
        }
    }

    #[test]
    fn abba_after_a_dropped_warm_up_for_a_fixed_count() {
        let calls = RefCell::new(Vec::new());
        let played = play(
            &schedule(Until::Rounds(3)),
            &mut |side| {
                calls.borrow_mut().push(side);
                Ok((side * 10, Some(side)))
            },
            &|_| panic!("a fixed count never looks"),
            &AtomicUsize::new(0),
        )
        .unwrap();
        assert_eq!(*calls.borrow(), [0, 1, 0, 1, 1, 0, 0, 1]);
        assert_eq!(played.rounds.len(), 3);
        assert_eq!(played.rounds[1].ran, [1, 0]);
        // Each round's results in the sides' order, whatever order they ran in.
        assert!(played.rounds.iter().all(|r| r.sides == [0, 10]));
        assert_eq!(played.last, [0, 1], "the last round's details, as they ran");
        assert_eq!(played.stopped, Stopped::Rounds);
    }

    #[test]
    fn it_looks_only_on_the_schedule_and_stops_at_the_first_decisive_look() {
        let (looked, played) = looks_of(&schedule(decisive(60)), 16);
        assert_eq!(looked, [6, 10, 16]);
        assert_eq!(played.rounds.len(), 16);
        assert_eq!(played.stopped, Stopped::Decided);
    }

    #[test]
    fn undecided_it_stops_at_the_rounds_budget() {
        let (looked, played) = looks_of(&schedule(decisive(20)), usize::MAX);
        assert_eq!(looked, [6, 10, 16, 20]);
        assert_eq!(played.stopped, Stopped::MaxRounds);
    }

    #[test]
    fn a_round_that_would_run_past_the_time_budget_is_the_last_look() {
        let until = Until::Decisive {
            looks: Looks::until_decisive(60),
            max_time: Duration::ZERO,
        };
        let (looked, played) = looks_of(&schedule(until), usize::MAX);
        assert_eq!(looked, [1]);
        assert_eq!(played.stopped, Stopped::MaxTime);
    }

    #[test]
    fn a_signal_drops_the_round_it_cuts_and_an_error_ends_the_rounds() {
        let signal = AtomicUsize::new(0);
        let calls = RefCell::new(0);
        let played = play(
            &schedule(Until::Rounds(10)),
            &mut |side| {
                *calls.borrow_mut() += 1;
                // Warm-up (2 calls), round 1 (2), then round 2's first side asks to stop.
                if *calls.borrow() == 5 {
                    signal.store(15, Ordering::Relaxed);
                }
                Ok::<_, anyhow::Error>((side, None::<()>))
            },
            &|_| false,
            &signal,
        )
        .unwrap();
        assert_eq!(played.rounds.len(), 1);
        assert_eq!(played.stopped, Stopped::Signal);
        let failed = play(
            &schedule(Until::Rounds(10)),
            &mut |side| match side {
                1 => Err(anyhow::anyhow!("could not start")),
                _ => Ok((side, None::<()>)),
            },
            &|_| false,
            &AtomicUsize::new(0),
        );
        assert!(failed.is_err());
    }
}
