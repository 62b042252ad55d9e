//! One run of CMD, measured, reported and its files written: headless or on the user's terminal
//! ([`here`]), or typed into a real terminal ([`in_a_terminal`]).

use std::sync::atomic::{AtomicUsize, Ordering};

use super::args::WrapArgs;
use super::outputs::{draw_keys, plot_title, profile_line, write_report_and_trace};
use super::pixel_report::PixelReport;
use super::running::{How, measure};
use super::typing::Keys;
use super::wrap_report::WrapReport;
use crate::outcome::{Outcome, complain};
use crate::results::waterfall::Panel;

/// One run headless or on the user's terminal, as `how` says.
pub(super) fn here(
    args: &WrapArgs,
    program: &std::path::Path,
    how: How<'_>,
    signal: &AtomicUsize,
) -> anyhow::Result<Outcome> {
    let (mut measured, ended_by_wrap) = measure(args, program, how, signal)?;
    let stalled = measured.terminal_stalled;
    let timeline = std::mem::take(&mut measured.timeline);
    let recorded = measured.recorded.take();
    let report = WrapReport::of(args, measured, &timeline);
    write_report_and_trace(
        args,
        &report,
        &timeline,
        report.keys.as_ref().map(|k| &k.latencies),
    )?;
    if let (Some(destination), Some(keys)) = (&args.plot, &report.keys) {
        let panel = Panel::of(String::new(), &timeline, &keys.latencies);
        draw_keys(
            destination,
            &plot_title(&args.command_line(), &report),
            &[panel],
        )?;
    }
    if !stalled {
        complain(&report.summary());
        if let Some(line) = recorded
            .as_ref()
            .and_then(|r| profile_line(r, args.profile.as_deref()))
        {
            complain(&line);
        }
    }
    let outcome = match signal.load(Ordering::Relaxed) {
        0 if ended_by_wrap => Outcome::Finished,
        0 => Outcome::Exited(report.exit_code.unwrap_or(0)),
        sig => Outcome::Signal(sig),
    };
    Ok(outcome)
}

/// `wrap --terminal NAME`: one run in that terminal, reported, its trace and plot written.
pub(super) fn in_a_terminal(
    args: &WrapArgs,
    program: &std::path::Path,
    terminal: crate::painting::display::Terminal,
    keys: &Keys,
    signal: &AtomicUsize,
) -> anyhow::Result<Outcome> {
    let run = super::in_terminal::measure(args, program, (terminal, keys, args.try_fix), signal)?;
    let timeline = run.timeline.clone();
    let report = PixelReport::of(args, run, keys);
    write_report_and_trace(args, &report, &timeline, Some(&report.keys.latencies))?;
    if let Some(destination) = &args.plot {
        let panel = Panel::of(
            terminal.name().to_owned(),
            &timeline,
            &report.keys.latencies,
        );
        let title = format!(
            "flushlab wrap --terminal {} · {} · {}x{} · {} keys",
            terminal.name(),
            args.command_line(),
            report.cols,
            report.rows,
            report.keys.sent
        );
        draw_keys(destination, &title, &[panel])?;
    }
    complain(&report.summary());
    Ok(match signal.load(Ordering::Relaxed) {
        0 => Outcome::Finished,
        sig => Outcome::Signal(sig),
    })
}
