//! CMD as one run starts it: the observer chosen and made ready for it (the kernel's, the
//! preload's or the tracer's; at the far root over a wire), and the command that runs in its
//! place — CMD itself, the tracer that starts it, the near end of the wire, each through
//! util-linux's setpriv under sudo so that CMD runs as the person who ran it.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::observers::Observation;
use crate::observers::fix::Fix;
use crate::plan::Plan;
use crate::run::profiling::Preparing;
use crate::via::Wire;
use flushlab_core::detect::recording::Recording;
use flushlab_core::sys::pty::Pty;
use flushlab_core::sys::user::Invoker;

/// The observer for CMD on `pty` (none under `--no-observer`), and `--profile`'s marker files,
/// which only the preload can map (samply records without markers otherwise); `fix`: the one
/// tried, `via`: the wire CMD runs at the far end of.
pub(crate) fn observer(
    plan: &Plan,
    (fix, via, profiled): (Option<Fix>, Option<&Wire>, bool),
    (pty, recording): (&Pty, &Arc<Recording>),
) -> anyhow::Result<(Option<Observation>, Option<Preparing>)> {
    let way = plan.looking.way;
    let markers = (profiled && way.is_some_and(crate::observers::choice::Way::preloads))
        .then(Preparing::new)
        .transpose()?;
    let inside = match (way, via) {
        (None, _) => None,
        (Some(_), Some(wire)) => Some(Observation::at_far_root(
            pty,
            wire,
            (&plan.cmd.program, &plan.cmd.words),
            recording,
        )?),
        (Some(way), None) => {
            let asks = markers.as_ref().map(|m| (m.environment(), m.on_exit()));
            let kernel_first = plan.looking.kernel_first(fix.is_some());
            Some(Observation::start(
                (way, kernel_first),
                Some(pty),
                fix,
                asks,
            )?)
        }
    };
    Ok((inside, markers))
}

/// What runs in CMD's place, and as whom. Under sudo, CMD runs as the person who ran it
/// (through setpriv, beside the setsid the pty uses), on a pty that is theirs; `--via`: sshd's
/// login makes them the far user, and wrap keeps root to attach at the far root once CMD's
/// shim calls.
pub(crate) fn command(
    plan: &Plan,
    via: Option<&Wire>,
    pty: &Pty,
    inside: Option<&Observation>,
) -> anyhow::Result<(PathBuf, Vec<OsString>, Option<Invoker>)> {
    let program = &plan.cmd.program;
    let (program, words) = match inside {
        Some(inside) => inside.command(program, plan.cmd.arguments())?,
        None => (program.to_owned(), plan.cmd.arguments().to_vec()),
    };
    let invoker = (!plan.as_root && via.is_none())
        .then(flushlab_core::sys::user::sudo_invoker)
        .flatten();
    let Some(invoker) = invoker else {
        return Ok((program, words, None));
    };
    rustix::fs::fchown(
        pty.open_slave()?,
        Some(rustix::fs::Uid::from_raw(invoker.uid)),
        Some(rustix::fs::Gid::from_raw(invoker.gid)),
    )?;
    let setpriv = flushlab_core::files::find_program("setpriv".as_ref()).ok_or_else(|| {
        anyhow::anyhow!(
            "wrap: under sudo CMD runs as {} through setpriv (util-linux), which is not \
             installed: apt-get install util-linux, or --as-root",
            invoker.name
        )
    })?;
    let mut all = invoker.setpriv_words();
    all.push(program.into_os_string());
    all.extend(words);
    Ok((setpriv, all, Some(invoker)))
}

/// CMD started on `pty` (through the near end over a wire) from the thread the kernel observer
/// marks, so that what it forks is the tree's root; under sudo, wrap then becomes the person
/// who ran it: the observer is attached and CMD started, root is needed no more.
pub(crate) fn spawn(
    pty: &Pty,
    (program, words, invoker): (&Path, &[OsString], Option<Invoker>),
    inside: &mut Option<Observation>,
    via: Option<&Wire>,
) -> anyhow::Result<std::process::Child> {
    let environment = inside.as_ref().map(Observation::environment);
    let spawn = || {
        pty.spawn(program, |command| {
            command.args(words);
            if let Some(environment) = environment {
                command.envs(environment);
            }
            if let Some(invoker) = &invoker {
                command.envs(invoker.environment());
            }
        })
    };
    let child = match (inside, via) {
        (Some(inside), Some(wire)) => inside.spawning(|| wire.in_near(spawn))?,
        (Some(inside), None) => inside.spawning(spawn),
        (None, _) => spawn(),
    }?;
    if let Some(invoker) = &invoker {
        invoker
            .become_them()
            .map_err(|e| anyhow::anyhow!("wrap: becoming {} after sudo: {e}", invoker.name))?;
    }
    Ok(child)
}
