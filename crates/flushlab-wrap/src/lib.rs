//! `flushlab wrap -- CMD`, as a library: any program's terminal output measured the way
//! flushlab measures its own modes. The binary lowers its flags into a [`plan::Plan`] and calls
//! [`run()`](run()).
//!
//! CMD runs in a new pseudo-terminal; what it writes is read from the master side (by a reader
//! model when headless, copied to the user's terminal when interactive). Its frames are found
//! from what it draws ([`finder`](flushlab_core::detect::finder), on the cursor model of
//! [`screen`](flushlab_core::detect::screen)), its write(2) calls and its waits on the terminal
//! from its whole process tree and from inside it ([`observers`]), and a diagnosis says what to
//! change in its own language; the report holds the results and its summary says them.
//!
//! The folders are the phases, each importing only those below it: [`via`] and [`observers`],
//! [`plan`], `run`, [`in_terminal`], `report`, `modes`; [`doctor`] beside them.

#![forbid(unsafe_code)]

pub mod doctor;
pub mod in_terminal;
pub(crate) mod modes;
pub mod observers;
pub mod plan;
pub(crate) mod report;
pub(crate) mod run;
pub mod via;

use self::modes::side::Processes;
use self::modes::{against, compare, one_run, pixel_compare};
use self::plan::{Mode, Plan};
use self::run::running::How;
use flushlab_core::outcome::Outcome;

/// Runs the plan the binary lowered its flags into.
pub fn run(plan: Plan) -> anyhow::Result<Outcome> {
    let signal = flushlab_terminals::session::watch_termination_signals()?;
    if let Some(parent) = plan.exit_with_parent {
        flushlab_terminals::session::end_with_parent(parent)?;
    }
    // The wire is started once, before the run, and ends as `run` returns (clap keeps `--via`
    // from `--compare` and `--try`).
    let wire = match &plan.via {
        None => None,
        Some(via) => Some(via::Wire::start(&via.layers, via.link)?),
    };
    let processes = &mut Processes;
    let Plan {
        mode,
        terminal,
        keys,
        ..
    } = &plan;
    match (mode, terminal, keys) {
        (Mode::Compare(comparing), Some(terminal), Some(keys)) => pixel_compare::run(
            &plan,
            *comparing,
            terminal.terminal,
            keys,
            processes,
            &signal,
        ),
        (Mode::Compare(comparing), _, keys) => {
            compare::run(&plan, *comparing, keys.as_ref(), processes, &signal)
        }
        (Mode::Against(against), _, Some(keys)) => {
            against::run(&plan, against, keys, wire.as_ref(), processes, &signal)
        }
        // The plan refuses `--against` without keys.
        (Mode::Against(_), _, None) => anyhow::bail!("wrap --against: a plan without keys"),
        (Mode::Once { fix }, Some(terminal), Some(keys)) => {
            let fix_via = (*fix, wire.as_ref());
            one_run::in_a_terminal(&plan, terminal.terminal, keys, fix_via, processes, &signal)
        }
        (Mode::Once { fix }, _, keys) => {
            let how = How {
                keys: keys.as_ref(),
                interactive: plan.interactive,
                fix: *fix,
                duration: plan.duration,
                profile: plan.profile.as_ref(),
                via: wire.as_ref(),
            };
            one_run::here(&plan, how, processes, &signal)
        }
    }
}
