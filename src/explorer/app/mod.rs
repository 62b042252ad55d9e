//! The explorer's state and the keys that change it.

use std::time::{Duration, Instant};

use flushlab_core::backend::BackendKind;
use flushlab_core::condition::{Condition, HudLayout};
use flushlab_core::meters::{Meters, Totals, per};
use flushlab_core::scene::Scene;
use flushlab_core::units::{MAX_CAPACITY, MIN_CAPACITY, format_capacity};
use flushlab_core::writer_mode::{Buffering, Mode, Stream};

pub use crate::explorer::bindings::Action;

/// Every mode in turn for a fixed time, then back to where the user was.
#[derive(Clone, Debug)]
pub struct Tour {
    pub modes: Vec<Mode>,
    pub index: usize,
    pub step_started: Instant,
    pub step: Duration,
    pub return_to: Mode,
}

#[derive(Debug)]
pub struct App {
    pub mode: Mode,
    pub scene: Scene,
    pub sync: bool,
    /// Which ratatui backend encodes the frame (`x`, `--backend`).
    pub backend: BackendKind,
    pub show_help: bool,
    /// The table of modes drawn over the scene (`m`, and at the end of a tour).
    pub show_table: bool,
    pub tour: Option<Tour>,
    pub tour_step: Duration,
    /// The HUD drawn: [`Self::hud_wanted`] where it fits ([`crate::explorer::hud::fit`]).
    pub hud: HudLayout,
    /// The HUD the user chose (`v`, `--hud`).
    pub hud_wanted: HudLayout,
    /// What [`Self::hud`] was fitted for (wanted, cols, rows): fitting is done again only when
    /// one of them changes, never per frame.
    pub hud_fitted_for: Option<(HudLayout, u16, u16)>,
    /// A one-line message for the user, e.g. why a key did nothing.
    pub status: Option<String>,
    /// The message on show and since when ([`App::expire_status`]).
    status_since: Option<(String, Instant)>,
    pub quit: bool,
    /// Set by Ctrl-Z; the runner suspends and clears it.
    pub suspend: bool,
    /// Which streams reach the terminal on screen; only those can be switched to.
    pub reachable: [bool; 2],
    /// The step of `flushlab lesson` on screen (`None` outside a lesson).
    pub lesson: Option<usize>,
    /// The last key's time from reaching the terminal's input to the end of the first frame
    /// written after it, the mode it waited through (the one it was typed in), and where it went.
    pub key_to_frame: Option<KeyFrame>,
    /// Whether this machine's idle vCPUs halt at once (a KVM guest's `haltpoll` polling
    /// 0 ns), which the "why" says when the writer waits on the reader: set by the explorer
    /// from the kernel, `false` by default (tests draw the same everywhere).
    pub vcpus_halt: bool,
    /// How the terminal model paints the sampled frames (`--paint`), where one runs: the
    /// HUD names it beside the torn paints a second.
    pub paint: Option<flushlab_core::seen::PaintPolicy>,
}

/// A key's time to the frame that answered it, in the stages `wrap --keys` splits a program's
/// keys into ([`Stages`](flushlab_core::detect::keyed::Stages)), for flushlab's own frames: input delay
/// until the frame loop's poll read it, processing the frame's building and encoding (the
/// loop's user CPU while it presents), emit the rest of presenting it — the writes: in the
/// kernel, blocked in write(2) until the terminal reads, or waiting for a core. The user/kernel
/// split is the kernel's own accounting (sampled at its tick): coarse for a frame of a few ms.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct KeyFrame {
    pub mode: Mode,
    pub took: Duration,
    pub stages: flushlab_core::detect::keyed::Stages,
}

impl App {
    pub fn new(mode: Mode, scene: Scene, sync: bool) -> Self {
        App {
            mode,
            scene,
            sync,
            backend: BackendKind::default(),
            show_help: false,
            show_table: false,
            tour: None,
            tour_step: Duration::from_secs(2),
            hud: HudLayout::Full,
            hud_wanted: HudLayout::Full,
            hud_fitted_for: None,
            status: None,
            status_since: None,
            quit: false,
            suspend: false,
            reachable: [true, true],
            lesson: None,
            key_to_frame: None,
            vcpus_halt: false,
            paint: None,
        }
    }

    /// A message is true when it is said, not minutes later: each one goes after
    /// [`STATUS_LIFETIME`]. Called once a frame; a new message starts its own time.
    pub fn expire_status(&mut self, now: Instant) {
        match (&self.status, &self.status_since) {
            (Some(status), Some((shown, since))) if status == shown => {
                if now.saturating_duration_since(*since) >= STATUS_LIFETIME {
                    self.status = None;
                    self.status_since = None;
                }
            }
            (Some(status), _) => self.status_since = Some((status.clone(), now)),
            (None, _) => self.status_since = None,
        }
    }

    /// The condition the current frame is drawn under, on a `cols`×`rows` screen.
    pub fn condition(&self, cols: u16, rows: u16) -> Condition {
        Condition {
            scene: self.scene,
            cols,
            rows,
            sync: self.sync,
            hud: self.hud,
            backend: self.backend,
        }
    }

    /// Shows a lesson's step `step`: its mode and sync, and the table at the last step.
    pub fn go_to_step(&mut self, step: usize) {
        let at = step.min(crate::explorer::lesson::STEPS.len() - 1);
        self.lesson = Some(at);
        self.mode = crate::explorer::lesson::mode(at, self.mode.capacity);
        self.sync = crate::explorer::lesson::STEPS[at].sync;
        self.backend = crate::explorer::lesson::STEPS[at].backend;
        self.show_table = at == crate::explorer::lesson::STEPS.len() - 1;
    }

    fn can_reach(&self, stream: Stream) -> bool {
        self.reachable[stream as usize]
    }

    /// Applies an action. The caller compares [`Mode::key`] before and after to know whether the
    /// writer must be rebuilt; nothing here touches the terminal.
    pub fn apply(&mut self, action: Action, now: Instant) {
        let chooses_mode = matches!(
            action,
            Action::NextMode
                | Action::Stream(_)
                | Action::Buffering(_)
                | Action::CapacityUp
                | Action::CapacityDown
        );
        if chooses_mode && self.tour.take().is_some() {
            self.status = Some("tour stopped: you chose a mode".to_owned());
        }
        match action {
            Action::NextMode | Action::NextStep if self.lesson.is_some() => {
                self.go_to_step(crate::explorer::lesson::next(
                    self.lesson.unwrap_or_default(),
                ));
            }
            Action::PreviousStep if self.lesson.is_some() => {
                self.go_to_step(crate::explorer::lesson::previous(
                    self.lesson.unwrap_or_default(),
                ));
            }
            Action::NextStep | Action::PreviousStep => {}
            Action::NextMode => {
                let mut next = self.mode.next();
                while !self.can_reach(next.stream) {
                    next = next.next();
                }
                self.mode = next;
            }
            Action::Stream(stream) if !self.can_reach(stream) => {
                self.status = Some(format!(
                    "{} is not this terminal (redirected?): staying on {}",
                    stream.name(),
                    self.mode.stream.name()
                ));
            }
            // `o` and `e` mean std's handles, buffered as std buffers them: `stdout()` (a 1 KiB
            // LineWriter) and `stderr()` (unbuffered). Other bufferings are a key away.
            Action::Stream(stream) => {
                self.mode.stream = stream;
                self.mode.buffering = stream.std_buffering();
            }
            Action::Buffering(buffering) => self.mode.buffering = buffering,
            Action::CapacityUp | Action::CapacityDown => {
                let capacity = if action == Action::CapacityUp {
                    (self.mode.capacity * 2).min(MAX_CAPACITY)
                } else {
                    (self.mode.capacity / 2).max(MIN_CAPACITY)
                };
                self.mode.capacity = capacity;
                self.status = Some(format!("block capacity {}", format_capacity(capacity)));
            }
            Action::ToggleSync => self.sync = !self.sync,
            Action::NextBackend => self.backend = self.backend.next(),
            Action::NextScene => self.scene = self.scene.next(),
            Action::ToggleHud => {
                self.hud_wanted = self.hud.other();
                self.hud = self.hud_wanted;
                // Fitted again, and told why when the size says no.
                self.hud_fitted_for = None;
            }
            Action::Tour => self.start_tour(now),
            Action::ToggleHelp => self.show_help = !self.show_help,
            // Open during a tour it would pause the tour's measurement: it opens at the end.
            Action::ToggleTable if self.tour.is_some() => {
                self.status = Some("the table opens when the tour ends".to_owned());
            }
            Action::ToggleTable => self.show_table = !self.show_table,
            Action::Back if self.show_help => self.show_help = false,
            Action::Back if self.show_table => self.show_table = false,
            Action::Quit | Action::Back => self.quit = true,
            Action::Suspend => self.suspend = true,
            Action::Nothing => {}
        }
    }

    fn start_tour(&mut self, now: Instant) {
        let modes: Vec<Mode> = Mode::all(self.mode.capacity)
            .filter(|m| self.can_reach(m.stream))
            .collect();
        let return_to = self.tour.as_ref().map_or(self.mode, |t| t.return_to);
        self.mode = modes[0];
        self.status = Some(format!(
            "tour: {} modes, {:.0?} each",
            modes.len(),
            self.tour_step
        ));
        self.tour = Some(Tour {
            modes,
            index: 0,
            step_started: now,
            step: self.tour_step,
            return_to,
        });
    }

    /// Advances the tour when its step is over. Called once per frame. Returns true when the
    /// tour just ended: once its last mode's figures are closed, [`verdict`] can be shown.
    pub fn tick(&mut self, now: Instant) -> bool {
        let Some(tour) = &mut self.tour else {
            return false;
        };
        if now - tour.step_started < tour.step {
            return false;
        }
        tour.index += 1;
        tour.step_started = now;
        if let Some(&mode) = tour.modes.get(tour.index) {
            self.mode = mode;
            false
        } else {
            self.mode = tour.return_to;
            self.tour = None;
            true
        }
    }
}

/// How long a status message stays on show.
pub const STATUS_LIFETIME: Duration = Duration::from_secs(8);

/// `a` against `b` as the lesson says it: "N× the frames for M× less CPU" (or more CPU).
fn against(a: &Totals, b: &Totals) -> String {
    let frames = per(a.fps(), b.fps());
    let cpu = |t: &Totals| t.figures().cpu_ms_per_frame().unwrap_or(0.0);
    let (cpu_a, cpu_b) = (cpu(a), cpu(b));
    let cost = if cpu_a > 0.0 && cpu_b >= cpu_a {
        format!("{:.1}x less CPU", cpu_b / cpu_a)
    } else if cpu_b > 0.0 {
        format!("{:.1}x more CPU", cpu_a / cpu_b)
    } else {
        "CPU unknown".to_owned()
    };
    format!("{frames:.1}x the frames for {cost}")
}

/// The tour's verdict under `condition`: std's `stdout()` against `stderr()`, and the best mode
/// against `stdout()`, each as frames and CPU a frame. Rows of other conditions are never
/// compared with these: they did other work per frame.
pub fn verdict(meters: &Meters, condition: Condition) -> String {
    let rows: Vec<_> = meters.rows_under(condition).collect();
    let others = meters.rows.len() - rows.len();
    let find = |stream: Stream, buffering: Buffering| {
        rows.iter()
            .find(|r| r.mode.stream == stream && r.mode.buffering == buffering)
    };
    let aside = if others > 0 {
        format!(" ({others} row(s) under other conditions not compared)")
    } else {
        String::new()
    };
    let best = rows
        .iter()
        .max_by(|a, b| a.totals.fps().total_cmp(&b.totals.fps()));
    if let (Some(out), Some(err)) = (
        find(Stream::Stdout, Buffering::Line),
        find(Stream::Stderr, Buffering::Raw),
    ) {
        let mut said = format!(
            "tour done: stdout() is {} of stderr()",
            against(&out.totals, &err.totals)
        );
        if let Some(best) = best.filter(|b| b.mode.key() != out.mode.key()) {
            said += &format!(
                "; {} is {} of stdout()",
                best.mode,
                against(&best.totals, &out.totals)
            );
        }
        return format!("{said} — {condition}{aside}");
    }
    let best = rows
        .iter()
        .max_by(|a, b| a.totals.fps().total_cmp(&b.totals.fps()));
    let worst = rows
        .iter()
        .min_by(|a, b| a.totals.fps().total_cmp(&b.totals.fps()));
    let aside = if others > 0 {
        format!(" ({others} row(s) under other conditions not compared)")
    } else {
        String::new()
    };
    match (best, worst) {
        (Some(b), Some(w)) if rows.len() > 1 && w.totals.fps() > 0.0 => format!(
            "tour done: {} {:.1} fps is {:.1}x {} under {condition}{aside}",
            b.mode,
            b.totals.fps(),
            b.totals.fps() / w.totals.fps(),
            w.mode,
        ),
        _ => format!("tour done: fewer than two modes measured under {condition}{aside}"),
    }
}

#[cfg(test)]
mod tests;
