//! `flushlab wrap -- CMD`: any program's terminal output measured the way flushlab measures its
//! own modes. CMD runs in a new pseudo-terminal; what it writes is read from the master side
//! (by a reader model when headless, copied to the user's terminal when interactive). Its frames
//! are found from what it draws ([`finder`](crate::detect::finder), on the cursor model of
//! [`screen`](crate::detect::screen)), its write(2)
//! calls and its waits on the terminal from its whole process tree ([`tree`]), and a diagnosis
//! says what to change in its own language ([`mod@diagnose`]); [`wrap_report`] holds the results and
//! `summary` says them.

pub mod against;
mod args;
pub mod compare;
pub mod diagnose;
mod in_terminal;
pub mod inside;
pub mod inside_report;
pub mod inside_timeline;
mod launch;
mod one_run;
mod outputs;
mod own_writes;
pub mod pixel_compare;
pub mod pixel_report;
mod plan;
mod profiling;
mod reading;
mod rounds;
mod running;
mod side;
mod summary;
mod terminal;
pub mod tree;
mod typing;
mod user_terminal;
pub mod via;
mod watch;
pub mod wrap_report;

pub use self::args::WrapArgs;
use self::plan::{WrapPlan, plan};
use self::running::How;
use crate::outcome::Outcome;

pub fn run(args: WrapArgs) -> anyhow::Result<Outcome> {
    let WrapPlan {
        program: resolved,
        interactive,
        keys,
        profile,
    } = match plan(&args) {
        Ok(plan) => plan,
        Err(refusal) => return Ok(refusal.tell()),
    };
    let signal = crate::plumbing::terminal_session::watch_termination_signals()?;
    if let Some(parent) = args.exit_with_parent {
        crate::plumbing::terminal_session::end_with_parent(parent)?;
    }
    if let (Some(fix), Some(terminal), Some(keys)) = (args.compare, args.terminal, &keys) {
        return pixel_compare::run(&args, &resolved, (fix, terminal, keys), &signal);
    }
    if let Some(fix) = args.compare {
        return compare::run(&args, &resolved, fix, keys.as_ref(), &signal);
    }
    // The wire is started once, before the run, and ends as `run` returns.
    let wire = match args.via.is_empty() {
        true => None,
        false => Some(via::Wire::start(&args.via, args.link_settings())?),
    };
    if let (Some(old), Some(keys)) = (&args.against, &keys) {
        return against::run(&args, (&old.0, &resolved), (keys, wire.as_ref()), &signal);
    }
    if let (Some(terminal), Some(keys)) = (args.terminal, &keys) {
        return one_run::in_a_terminal(&args, &resolved, terminal, keys, &signal);
    }
    let how = How {
        keys: keys.as_ref(),
        interactive,
        fix: args.try_fix,
        duration: args.duration,
        profile: profile.as_ref(),
        via: wire.as_ref(),
    };
    one_run::here(&args, &resolved, how, &signal)
}
