//! `wrap --compare frame --terminal NAME`: what a fix buys a key in that terminal. Each round
//! runs CMD as it is and tried in the terminal (key→first and last pixel), then as it is and
//! tried headless (wrap's own reader of the pty), alternating, so that a machine that slows
//! down meanwhile slows every side; one table, and each figure tried over as is with its
//! interval (`compare::tried_over_as_is`, the one ratio).

use std::sync::atomic::{AtomicUsize, Ordering};

use anyhow::Context;
use serde::Serialize;

use crate::modes::ratio::{Better, answered, tried_over_as_is};
use crate::modes::rounds::{Schedule, play};
use crate::modes::side::{Executor, RunReport, Side};
use crate::observers::fix::Fix;
use crate::plan::keys::Keys;
use crate::plan::{Comparing, Plan};
use crate::report::pixel_report::PixelReport;
use crate::report::wrap_report::WrapReport;
use flushlab_core::detect::keyed::{KeyLatencies, Percentiles, Stage};
use flushlab_core::outcome::{Outcome, complain};
use flushlab_core::statistics::Spread;
use flushlab_core::statistics::verdict::Ratio;
use flushlab_core::units::milliseconds;
use flushlab_terminals::emulators::Terminal;
use flushlab_terminals::terminal_option::TerminalOption;

/// The `--export-json` of a comparison in a terminal: every run, and each figure tried over as
/// is (NEW over OLD: ×0.5 is a key answered in half the time), the rounds' trimmed geometric
/// mean and its 95% bootstrap interval (`null` under three rounds).
#[derive(Clone, Debug, Serialize)]
pub struct PixelComparison {
    pub fix: Fix,
    pub terminal: Terminal,
    pub rounds: u32,
    pub as_is: Vec<PixelReport>,
    pub tried: Vec<PixelReport>,
    pub headless_as_is: Vec<WrapReport>,
    pub headless_tried: Vec<WrapReport>,
    /// Key to last pixel p50: the answer printed first.
    pub last_pixel_p50: Option<Ratio>,
    pub last_pixel_p95: Option<Ratio>,
    pub first_pixel_p50: Option<Ratio>,
    /// Key to frame inside CMD, with the terminal reading the pty.
    pub key_to_frame_p50: Option<Ratio>,
    /// Key to frame headless, wrap reading the pty.
    pub headless_key_to_frame_p50: Option<Ratio>,
}

pub(crate) fn run(
    plan: &Plan,
    comparing: Comparing,
    terminal: Terminal,
    keys: &Keys,
    executor: &mut dyn Executor,
    signal: &AtomicUsize,
) -> anyhow::Result<Outcome> {
    let (fix, rounds) = (comparing.fix, comparing.rounds);
    let mut c = PixelComparison {
        fix,
        terminal,
        rounds,
        as_is: Vec::new(),
        tried: Vec::new(),
        headless_as_is: Vec::new(),
        headless_tried: Vec::new(),
        last_pixel_p50: None,
        last_pixel_p95: None,
        first_pixel_p50: None,
        key_to_frame_p50: None,
        headless_key_to_frame_p50: None,
    };
    // Each round: in the terminal as it is, then tried; then headless as it is, then tried.
    let sides = [
        (Some(terminal), None),
        (Some(terminal), Some(fix)),
        (None, None),
        (None, Some(fix)),
    ];
    let schedule = Schedule::alternating(sides.len(), rounds as usize);
    let played = play(
        &schedule,
        &mut |i| {
            let (terminal, fix) = sides[i];
            let side = Side::of_rounds(plan, Some(keys), (fix, terminal), None);
            Ok((executor.run(plan, side, signal)?.report, None::<()>))
        },
        &|_| false,
        signal,
    )?;
    for round in played.rounds {
        for (i, report) in round.sides.into_iter().enumerate() {
            match (report, sides[i].1) {
                (RunReport::Terminal(r), None) => c.as_is.push(*r),
                (RunReport::Terminal(r), Some(_)) => c.tried.push(*r),
                (RunReport::Headless(r), None) => c.headless_as_is.push(*r),
                (RunReport::Headless(r), Some(_)) => c.headless_tried.push(*r),
            }
        }
    }
    let (in_terminal, headless) = (terminal_keys, headless_keys);
    c.last_pixel_p50 = ratio(&c.as_is, &c.tried, in_terminal, |k| {
        Some(k.pixels_ms?.last.p50)
    });
    c.last_pixel_p95 = ratio(&c.as_is, &c.tried, in_terminal, |k| {
        Some(k.pixels_ms?.last.p95)
    });
    c.first_pixel_p50 = ratio(&c.as_is, &c.tried, in_terminal, |k| {
        Some(k.pixels_ms?.first.p50)
    });
    c.key_to_frame_p50 = ratio(&c.as_is, &c.tried, in_terminal, |k| {
        Some(k.key_to_frame_ms?.p50)
    });
    c.headless_key_to_frame_p50 = ratio(&c.headless_as_is, &c.headless_tried, headless, |k| {
        Some(k.key_to_frame_ms?.p50)
    });
    complain(&c.table(&plan.cmd.line()));
    if let Some(destination) = &plan.outputs.report {
        destination
            .write_json(&c)
            .with_context(|| format!("writing the comparison to {destination}"))?;
    }
    Ok(match signal.load(Ordering::Relaxed) {
        0 => Outcome::Finished,
        sig => Outcome::Signal(sig),
    })
}

fn terminal_keys(r: &PixelReport) -> Option<&KeyLatencies> {
    Some(&r.keys.latencies)
}

fn headless_keys(r: &WrapReport) -> Option<&KeyLatencies> {
    r.keys.as_ref().map(|k| &k.latencies)
}

/// `figure` of the runs' keys, tried over as is.
fn ratio<R>(
    as_is: &[R],
    tried: &[R],
    keys: impl Fn(&R) -> Option<&KeyLatencies>,
    figure: impl Fn(&KeyLatencies) -> Option<f64>,
) -> Option<Ratio> {
    tried_over_as_is(as_is, tried, |r| figure(keys(r)?))
}

/// The median over runs of a figure of their keys.
fn median_of<R>(
    runs: &[R],
    keys: impl Fn(&R) -> Option<&KeyLatencies>,
    figure: impl Fn(&KeyLatencies) -> Option<f64>,
) -> String {
    Spread::of_each(runs, |r| figure(keys(r)?))
        .map_or("unknown".to_owned(), |s| milliseconds(s.median))
}

impl PixelComparison {
    /// The answer (key to last pixel p50) and the rest, each tried over as is.
    fn ratios_said(&self, name: &str) -> String {
        let time = |r| answered(r, Better::Lower);
        format!(
            "in {name}, tried over as is (the rounds' trimmed geometric mean, 95% bootstrap \
             interval, as --against answers): key to last pixel p50 {}\n\
             in {name}, tried over as is: key to last pixel p95 {}; first pixel p50 {}; key to \
             frame p50 {}\n",
            time(self.last_pixel_p50),
            time(self.last_pixel_p95),
            time(self.first_pixel_p50),
            time(self.key_to_frame_p50),
        )
    }

    /// The table printed after the rounds.
    pub fn table(&self, command: &str) -> String {
        let name = self.terminal.name();
        let size = self.as_is.first().map_or(String::new(), |r| {
            format!(
                " at {}x{}{}",
                r.cols,
                r.rows,
                flushlab_terminals::terminal_option::options_said(&r.terminal_options)
            )
        });
        let mut out = format!(
            "wrap --compare frame --terminal {name}: {command}, {} round(s){size}\n",
            self.as_is.len().min(self.tried.len())
        );
        let header: Vec<String> = [
            "run".to_owned(),
            "key→last pixel p50".to_owned(),
            "p95".to_owned(),
            "key→first pixel p50".to_owned(),
            format!("key→frame p50 in {name}"),
            "key→frame p50 headless".to_owned(),
        ]
        .to_vec();
        let (pixels, headless) = (terminal_keys, headless_keys);
        let p = |get: fn(Percentiles) -> f64| move |k: &KeyLatencies| Some(get(k.pixels_ms?.last));
        let rows: Vec<Vec<String>> = [
            ("as is", &self.as_is, &self.headless_as_is),
            ("tried", &self.tried, &self.headless_tried),
        ]
        .into_iter()
        .map(|(side, runs, headless_runs)| {
            vec![
                side.to_owned(),
                median_of(runs, pixels, p(|p| p.p50)),
                median_of(runs, pixels, p(|p| p.p95)),
                median_of(runs, pixels, |k| Some(k.pixels_ms?.first.p50)),
                median_of(runs, pixels, |k| Some(k.key_to_frame_ms?.p50)),
                median_of(headless_runs, headless, |k| Some(k.key_to_frame_ms?.p50)),
            ]
        })
        .collect();
        out += &flushlab_core::results::export::markdown_table(&header, &rows, 1);
        out += &self.ratios_said(name);
        out += &render_delays_said(
            self.terminal,
            self.as_is
                .first()
                .map_or(&[][..], |r| &r.terminal_options[..]),
        );
        out += &format!(
            "headless (wrap reading the pty): key to frame p50, tried over as is {}",
            answered(self.headless_key_to_frame_p50, Better::Lower)
        );
        for (side, runs) in [("as is", &self.as_is), ("tried", &self.tried)] {
            let cells: Vec<String> = [
                Stage::InputDelay,
                Stage::Processing,
                Stage::Emit,
                Stage::Paint,
            ]
            .into_iter()
            .map(|stage| {
                let figure = median_of(runs, pixels, |k| {
                    Some(k.stages_ms?.each().find(|&(s, _)| s == stage)?.1.p50)
                });
                format!("{} {figure}", stage.name())
            })
            .collect();
            out += &format!("\nstages p50 in {name}, {side}: {}", cells.join(" · "));
        }
        out
    }
}

/// The terminal's own render delays, where it has them and the run left them at their
/// defaults: both sides' paint holds them, and how unbuffered writes trickle in decides
/// how long they last, so the comparison is of the program and the terminal's rendering
/// together; the options that take them out, to see which (docs/wrap/comparing.md).
fn render_delays_said(terminal: Terminal, given: &[TerminalOption]) -> String {
    let delays = terminal.render_delays();
    if delays.is_empty() || given.iter().any(|o| delays.iter().any(|d| d.key == o.key)) {
        return String::new();
    }
    let defaults: Vec<String> = delays
        .iter()
        .map(|d| format!("{} {}", d.key, d.default))
        .collect();
    let off: Vec<String> = delays
        .iter()
        .map(|d| format!("--terminal-option {}={}", d.key, d.off))
        .collect();
    format!(
        "{} waits before it renders what arrives on its pty ({} by default): both sides' paint \
         holds it; `{}` measures without it (docs/wrap/comparing.md#what-one-write-a-frame-buys-terminal-by-terminal)\n",
        terminal.name(),
        defaults.join(", "),
        off.join(" ")
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_terminal_that_delays_its_rendering_is_said_to_unless_told_not_to() {
        let said = render_delays_said(Terminal::Foot, &[]);
        assert!(said.contains("tweak.delayed-render-lower 0.5 ms"), "{said}");
        assert!(
            said.contains(
                "--terminal-option tweak.delayed-render-lower=0 --terminal-option tweak.delayed-render-upper=0"
            ),
            "{said}"
        );
        let off = TerminalOption::parse("tweak.delayed-render-upper=0").unwrap();
        assert_eq!(render_delays_said(Terminal::Foot, &[off]), "");
        let kitty = render_delays_said(Terminal::Kitty, &[]);
        assert!(kitty.contains("repaint_delay 10 ms"), "{kitty}");
        assert!(
            kitty.contains("--terminal-option sync_to_monitor=no"),
            "{kitty}"
        );
        assert_eq!(render_delays_said(Terminal::Xterm, &[]), "");
    }
}
