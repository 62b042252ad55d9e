//! What a run in a real terminal (`wrap --terminal`) reports: the keys as headless — each key's
//! stages, frames nobody asked for apart — with key→first and key→last pixel and the paint
//! stage, the terminal's name, and what the observer saw CMD write. Byte and frame counts of the
//! pty are the observer's: wrap reads nothing of the terminal's pty.

use serde::Serialize;

use crate::in_terminal::PixelRun;
use crate::observers::fix::Fix;
use crate::observers::inside_report::InsideReport;
use crate::plan::keys::Keys;
use crate::report::wrap_report::KeysReport;
use crate::run::typing::KeysRun;
use crate::run::typing::ReadyBy;
use flushlab_core::units::{printable, thousands};
use flushlab_terminals::emulators::Terminal;
use flushlab_terminals::terminal_option::TerminalOption;

#[derive(Clone, Debug, Serialize)]
pub struct PixelReport {
    pub version: &'static str,
    pub command: Vec<String>,
    pub terminal: Terminal,
    /// The terminal's own settings given (`--terminal-option`), in the order given.
    pub terminal_options: Vec<TerminalOption>,
    /// Where the terminal ran: `own-xvfb` (flushlab's own X server), an X display's name, or
    /// `own-sway` (flushlab's own headless Wayland compositor).
    pub display: String,
    /// On Wayland, the output's refresh rate (Hz): a key's pixels wait for its next commit.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub refresh_hz: Option<u32>,
    #[serde(skip)]
    pub(crate) desktop: crate::in_terminal::Desktop,
    pub cols: u16,
    pub rows: u16,
    pub seconds: f64,
    /// `--try frame`: the fix tried.
    pub fix: Option<Fix>,
    /// CMD's terminal writes, as the observer saw them made.
    pub terminal_write_calls: u64,
    pub terminal_bytes_written: u64,
    pub inside: InsideReport,
    pub keys: KeysReport,
    /// The stage a slow key's time goes to, and what to change (`keys-paint`: the terminal).
    pub diagnoses: Vec<crate::report::diagnose::Diagnosis>,
    /// The share of a core wrap's watcher of the window took (the CPU it took from the machine
    /// CMD and the terminal run on).
    pub window_watcher_cpu_share: f64,
    /// Every change of the terminal's window seen (DAMAGE), CLOCK_MONOTONIC ns: the keys' pixels
    /// come from these, and another tool can hold them against its own times.
    pub window_changes_ns: Vec<u64>,
    /// In a browser terminal (`xtermjs`): the renderer that drew, the transport, and each
    /// key's way through the page.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub browser: Option<crate::report::browser_report::BrowserReport>,
    /// What the camera saw of each key's answer: flashes, tears, steps (`--camera`).
    pub seen: Option<crate::report::seen_report::SeenReport>,
    /// Why there is no camera where one was asked for (`--camera on`, the default), and what
    /// predicts what it would have seen.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub no_camera: Option<String>,
}

/// What the camera saw of each key; `--via`: CMD's blocks, which a terminal that holds both
/// forms would have kept whole, lost on the way.
fn seen_on_screen(
    plan: &crate::plan::Plan,
    run: &PixelRun,
    keys: &[flushlab_core::detect::keyed::KeyAnswer],
    film: &flushlab_terminals::camera::Film,
) -> crate::report::seen_report::SeenReport {
    let run_of = (keys, run.timeline.inside.as_ref(), run.timeline.end_ns);
    let mut seen = crate::report::seen_report::SeenReport::of_film(film, run_of, run.seconds);
    if let (Some(via), Some(opened)) = (&plan.via, run.inside.frames_opening_sync) {
        let sync = run.terminal.paint_policy().0.sync;
        let shown = seen.keys_flashed.max(seen.keys_torn);
        seen.sync_lost = crate::via::SyncLost::judge_on_screen(
            &via.layers,
            opened,
            (sync.csi && sync.dcs, shown),
        );
    }
    seen
}

impl PixelReport {
    /// `film`: what the camera saw (taken out of `run` by the caller, who may film a key).
    pub(crate) fn of(
        plan: &crate::plan::Plan,
        run: PixelRun,
        keys: &Keys,
        film: Option<&flushlab_terminals::camera::Film>,
    ) -> PixelReport {
        let mut latencies = flushlab_core::detect::keyed::key_latencies(&run.timeline);
        flushlab_core::detect::pixels::add_pixels(&mut latencies, &run.timeline);
        let browser = run
            .browser
            .as_ref()
            .map(|b| crate::report::browser_report::BrowserReport::of(b, &latencies.each));
        let seen = film.map(|film| seen_on_screen(plan, &run, &latencies.each, film));
        let asked = plan.terminal.as_ref().is_some_and(|t| t.camera);
        let no_camera = (asked && film.is_none()).then(|| {
            let why = match &run.desktop {
                crate::in_terminal::Desktop::X11(_) => {
                    "on --display (the camera reads the framebuffer of flushlab's own Xvfb)"
                }
                crate::in_terminal::Desktop::Chromium { .. } => {
                    "in xterm.js's WebGL renderer (the camera reads the DOM renderer's rows)"
                }
                crate::in_terminal::Desktop::OwnXvfb | crate::in_terminal::Desktop::Sway { .. } => {
                    "(no key drew)"
                }
            };
            format!(
                "no camera {why}: `flushlab wrap --paint {} …` predicts what {} shows, headless",
                run.terminal.name(),
                run.terminal.name()
            )
        });
        let diagnoses = crate::report::diagnose::slow_keys(&latencies, &[])
            .into_iter()
            .collect();
        PixelReport {
            version: env!("CARGO_PKG_VERSION"),
            command: plan.cmd.words_text(),
            terminal: run.terminal,
            terminal_options: plan
                .terminal
                .as_ref()
                .map(|t| t.options.clone())
                .unwrap_or_default(),
            display: run.desktop.name().to_owned(),
            refresh_hz: run.desktop.refresh_hz(),
            desktop: run.desktop.clone(),
            cols: run.size.0,
            rows: run.size.1,
            seconds: run.seconds,
            fix: run.fix,
            terminal_write_calls: run.inside.terminal_writes,
            terminal_bytes_written: run.inside.terminal_bytes,
            keys: KeysReport::of(
                KeysRun {
                    script: keys.script.source.clone(),
                    in_script: keys.script.len(),
                    started_after: run.started_after,
                    ready_by: if keys.after.is_some() {
                        ReadyBy::KeysAfter
                    } else {
                        ReadyBy::Idle
                    },
                    unsettled: run.unsettled,
                },
                &run.timeline,
                latencies,
            ),
            diagnoses,
            inside: run.inside,
            window_watcher_cpu_share: run.watcher_cpu_share,
            window_changes_ns: run.timeline.windows.changes,
            browser,
            seen,
            no_camera,
        }
    }

    /// The summary printed after the run.
    pub fn summary(&self) -> String {
        let mut out = format!(
            "wrap {} in {} {}x{}{} ({}): {} s, CMD made {} terminal write(2), {} B",
            printable(&self.command.join(" ")),
            self.terminal.name(),
            self.cols,
            self.rows,
            flushlab_terminals::terminal_option::options_said(&self.terminal_options),
            self.desktop.said(),
            flushlab_core::units::count(self.seconds),
            thousands(self.terminal_write_calls),
            thousands(self.terminal_bytes_written),
        );
        out += &self.keys.summary();
        let shown: Vec<u32> = self
            .keys
            .latencies
            .each
            .iter()
            .filter_map(|k| k.pixels_ms?.frame_shown)
            .collect();
        if !shown.is_empty() {
            out += &format!(
                "\n  frame markers read back from the window: {} keys' last pictures showed a whole frame (`frame_shown`)",
                thousands(shown.len() as u64)
            );
        }
        if self.keys.latencies.stages_ms.is_none() && self.keys.sent > 0 {
            out += if self.terminal_write_calls > 0 {
                "\n  CMD drew without waiting between its frames (keys queued behind frames \
                 slower than their pace): no frame ends from inside, so no stages and no \
                 pixels a key; space the keys further apart than a frame takes"
            } else {
                "\n  CMD wrote nothing to its terminal that the observer saw: no frames, no \
                 pixels a key"
            };
        }
        if let Some(browser) = &self.browser {
            out += &browser.summary();
        }
        if let Some(seen) = &self.seen {
            out += &seen.summary();
        }
        if let Some(why) = &self.no_camera {
            out += &format!("\n  seen: {why}");
        }
        out += &format!(
            "\n  watching the window took {:.1}% of a core",
            self.window_watcher_cpu_share * 100.0
        );
        out += &self.inside.summary();
        for d in &self.diagnoses {
            out += &format!("\n  {}: {}", d.code, d.message);
        }
        out
    }
}
