//! One run of CMD, measured, reported and its files written: headless or on the user's terminal
//! ([`here`]), or typed into a real terminal ([`in_a_terminal`]).

use std::sync::atomic::{AtomicUsize, Ordering};

use crate::modes::side::{Executor, RunReport, Side, SideRun};
use crate::plan::Plan;
use crate::plan::keys::Keys;
use crate::report::outputs::{
    draw_keys, plot_title, profile_line, write_filmstrip, write_report_and_trace,
};
use crate::run::running::How;
use flushlab_core::outcome::{Outcome, complain};
use flushlab_core::results::drawings::waterfall::Panel;

/// One run headless or on the user's terminal, as `how` says.
pub(crate) fn here(
    plan: &Plan,
    how: How<'_>,
    executor: &mut dyn Executor,
    signal: &AtomicUsize,
) -> anyhow::Result<Outcome> {
    let side = Side {
        how,
        terminal: None,
    };
    let SideRun {
        report,
        timeline,
        ended_by_wrap,
        stalled,
        recorded,
        filmstrip,
    } = executor.run(plan, side, signal)?;
    let RunReport::Headless(report) = report else {
        anyhow::bail!("a run here gave a terminal's report");
    };
    write_report_and_trace(
        plan,
        &report,
        &timeline,
        report.keys.as_ref().map(|k| &k.latencies),
    )?;
    if let (Some(destination), Some(keys)) = (&plan.outputs.plot, &report.keys) {
        let panel = Panel::of(String::new(), &timeline, &keys.latencies);
        draw_keys(
            destination,
            &plot_title(&plan.cmd.line(), &report),
            &[panel],
        )?;
    }
    let filmed = write_filmstrip(plan, filmstrip.as_ref())?;
    if !stalled {
        // The filmstrip's line (if any) under the summary's, not a line of its own.
        complain(&(report.summary() + &filmed));
        if let (Some(via), Some(keys)) = (&report.via, &report.keys) {
            complain(&via.summary(&keys.latencies));
        }
        if let Some(line) = recorded
            .as_ref()
            .and_then(|r| profile_line(r, plan.profile.as_ref().map(|p| p.file.as_path())))
        {
            complain(&line);
        }
    }
    let outcome = match signal.load(Ordering::Relaxed) {
        0 if nothing_came_back(&report) => {
            complain(&format!(
                "wrap --via: none of the {} key(s) sent was answered: nothing came back over the \
                 wire",
                report.keys.as_ref().map_or(0, |k| k.sent)
            ));
            Outcome::Failed
        }
        0 if ended_by_wrap => Outcome::Finished,
        0 => Outcome::Exited(report.exit_code.unwrap_or(0)),
        sig => Outcome::Signal(sig),
    };
    Ok(outcome)
}

/// Over a wire, keys were sent and not one was answered: the run measured nothing of CMD (a
/// link too lossy for the layer, a far side that stopped), which is a failure, not a figure.
fn nothing_came_back(report: &crate::report::wrap_report::WrapReport) -> bool {
    report.via.is_some()
        && report
            .keys
            .as_ref()
            .is_some_and(|k| k.latencies.keys > 0 && k.latencies.unanswered == k.latencies.keys)
}

/// `wrap --terminal NAME`: one run in that terminal, reported, its trace and plot written.
pub(crate) fn in_a_terminal(
    plan: &Plan,
    terminal: flushlab_terminals::emulators::Terminal,
    keys: &Keys,
    (fix, via): (
        Option<crate::observers::fix::Fix>,
        Option<&crate::via::Wire>,
    ),
    executor: &mut dyn Executor,
    signal: &AtomicUsize,
) -> anyhow::Result<Outcome> {
    let side = Side::of_rounds(plan, Some(keys), (fix, Some(terminal)), via);
    let SideRun {
        report,
        timeline,
        filmstrip,
        ..
    } = executor.run(plan, side, signal)?;
    let RunReport::Terminal(report) = report else {
        anyhow::bail!("a run in {} gave a headless report", terminal.name());
    };
    write_report_and_trace(plan, &report, &timeline, Some(&report.keys.latencies))?;
    if let Some(destination) = &plan.outputs.plot {
        let panel = Panel::of(
            terminal.name().to_owned(),
            &timeline,
            &report.keys.latencies,
        );
        let title = format!(
            "flushlab wrap --terminal {} · {} · {}x{} · {} keys",
            terminal.name(),
            plan.cmd.line(),
            report.cols,
            report.rows,
            report.keys.sent
        );
        draw_keys(destination, &title, &[panel])?;
    }
    let filmed = write_filmstrip(plan, filmstrip.as_ref())?;
    complain(&(report.summary() + &filmed));
    Ok(match signal.load(Ordering::Relaxed) {
        0 => Outcome::Finished,
        sig => Outcome::Signal(sig),
    })
}
