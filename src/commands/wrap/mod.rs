//! `flushlab wrap -- CMD`: any program's terminal output measured the way flushlab measures its
//! own modes. CMD runs in a new pseudo-terminal; what it writes is read from the master side
//! (by a reader model when headless, copied to the user's terminal when interactive). Its frames
//! are found from what it draws ([`finder`](flushlab_core::detect::finder), on the cursor model of
//! [`screen`](flushlab_core::detect::screen)), its write(2)
//! calls and its waits on the terminal from its whole process tree ([`tree`]), and a diagnosis
//! says what to change in its own language ([`mod@diagnose`]); [`wrap_report`] holds the results and
//! `summary` says them.

pub mod against;
mod args;
pub mod browser_report;
pub mod compare;
mod destinations;
pub mod diagnose;
pub mod doctor;
pub mod env_file;
mod executable;
pub mod filmstrip;
pub mod fix;
mod in_terminal;
pub mod inside_report;
pub mod inside_timeline;
mod launch;
pub mod observers;
mod one_run;
mod outputs;
mod own_writes;
pub mod pixel_compare;
pub mod pixel_report;
mod plan;
mod profiling;
mod ratio;
mod reading;
mod rounds;
pub mod run_figures;
mod running;
pub mod seen_report;
mod side;
pub mod stored_run;
mod summary;
mod terminal;
pub mod tree;
mod typing;
mod user_terminal;
pub mod via;
mod watch;
pub mod wrap_report;

pub use self::args::WrapArgs;
use self::plan::{Mode, Plan, plan};
use self::running::How;
use flushlab_core::outcome::Outcome;

pub fn run(args: WrapArgs) -> anyhow::Result<Outcome> {
    let plan = match plan(&args) {
        Ok(plan) => plan,
        Err(refusal) => return Ok(refusal.tell()),
    };
    let signal = crate::plumbing::terminal_session::watch_termination_signals()?;
    if let Some(parent) = plan.exit_with_parent {
        crate::plumbing::terminal_session::end_with_parent(parent)?;
    }
    // The wire is started once, before the run, and ends as `run` returns (clap keeps `--via`
    // from `--compare`, `--terminal` and `--try`).
    let wire = match &plan.via {
        None => None,
        Some(via) => Some(via::Wire::start(&via.layers, via.link)?),
    };
    let Plan {
        mode,
        terminal,
        keys,
        ..
    } = &plan;
    match (mode, terminal, keys) {
        (Mode::Compare(comparing), Some(terminal), Some(keys)) => {
            pixel_compare::run(&plan, *comparing, terminal.terminal, keys, &signal)
        }
        (Mode::Compare(comparing), _, keys) => {
            compare::run(&plan, *comparing, keys.as_ref(), &signal)
        }
        (Mode::Against(against), _, Some(keys)) => {
            against::run(&plan, against, keys, wire.as_ref(), &signal)
        }
        // The plan refuses `--against` without keys.
        (Mode::Against(_), _, None) => anyhow::bail!("wrap --against: a plan without keys"),
        (Mode::Once { fix }, Some(terminal), Some(keys)) => {
            one_run::in_a_terminal(&plan, terminal.terminal, keys, *fix, &signal)
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
            one_run::here(&plan, how, &signal)
        }
    }
}
