//! The executor the modes' tests run their sides on (hyperfine's mock executor): no process,
//! a report made up for each side from what the test says that side gives (headless, or a real
//! terminal's where the side is typed into one), and a log of what each side was asked to run.

use std::sync::atomic::AtomicUsize;

use crate::modes::side::{Executor, RunReport, Side, SideRun};
use crate::observers::choice::Way;
use crate::observers::fix::Fix;
use crate::observers::inside_report::{InsideReport, Source};
use crate::plan::Plan;
use crate::report::pixel_report::PixelReport;
use crate::report::seen_report::{SeenBy, SeenReport};
use crate::report::wrap_report::{KeysReport, WrapReport, WriteScope};
use crate::run::typing::ReadyBy;
use flushlab_core::detect::frames::{FrameMethod, Frames};
use flushlab_core::detect::keyed::{KeyLatencies, Percentiles, PixelSummary, StageSummary};
use flushlab_core::detect::timeline::Timeline;
use flushlab_core::figures::{Figures, WrapRun};
use flushlab_core::seen::states::KeySeen;
use flushlab_terminals::emulators::Terminal;

/// What one side was asked to run.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Asked {
    /// CMD's program, as its plan names it (OLD's or NEW's, for `--against`).
    pub(crate) program: String,
    pub(crate) fix: Option<Fix>,
    pub(crate) keys: bool,
    /// The real terminal it was typed into, if any.
    pub(crate) terminal: Option<Terminal>,
}

/// What a made-up side gives.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct Gives {
    pub(crate) fps: f64,
    /// Key to frame p50 (its p95 half as much again); `None`: no keys.
    pub(crate) key_p50_ms: Option<f64>,
    pub(crate) seconds: f64,
    pub(crate) exit_code: Option<i32>,
    /// Keys whose answer flashed the screen, as the model (headless) or the camera saw it;
    /// `None`: nothing looked.
    pub(crate) flashed: Option<u64>,
}

impl Gives {
    pub(crate) fn frames(fps: f64) -> Gives {
        Gives {
            fps,
            key_p50_ms: None,
            seconds: 3.0,
            exit_code: None,
            flashed: None,
        }
    }

    pub(crate) fn keys(fps: f64, key_p50_ms: f64) -> Gives {
        Gives {
            key_p50_ms: Some(key_p50_ms),
            ..Gives::frames(fps)
        }
    }

    /// The same, with `keys` of its answers flashing the screen.
    pub(crate) fn flashing(self, keys: u64) -> Gives {
        Gives {
            flashed: Some(keys),
            ..self
        }
    }
}

/// Runs no process: `gives(asked, n)` says what the `n`th side gives (or its error).
pub(crate) struct Mock<F> {
    gives: F,
    pub(crate) asked: Vec<Asked>,
}

impl<F: FnMut(&Asked, usize) -> anyhow::Result<Gives>> Mock<F> {
    pub(crate) fn new(gives: F) -> Mock<F> {
        Mock {
            gives,
            asked: Vec::new(),
        }
    }
}

impl<F: FnMut(&Asked, usize) -> anyhow::Result<Gives>> Executor for Mock<F> {
    fn run(&mut self, plan: &Plan, side: Side<'_>, _: &AtomicUsize) -> anyhow::Result<SideRun> {
        let asked = Asked {
            program: plan.cmd.program.to_string_lossy().into_owned(),
            fix: side.how.fix,
            keys: side.how.keys.is_some(),
            terminal: side.terminal,
        };
        let gives = (self.gives)(&asked, self.asked.len());
        self.asked.push(asked);
        let gives = gives?;
        let report = match side.terminal {
            Some(terminal) => RunReport::Terminal(Box::new(pixel_report(plan, terminal, gives))),
            None => RunReport::Headless(Box::new(report(plan, gives))),
        };
        Ok(SideRun {
            report,
            timeline: Timeline::default(),
            ended_by_wrap: true,
            stalled: false,
            recorded: None,
            filmstrip: None,
        })
    }
}

/// A headless report of `gives`, every other figure unknown or none.
fn report(plan: &Plan, gives: Gives) -> WrapReport {
    let frames = (gives.fps * gives.seconds) as u64;
    let keys = gives.key_p50_ms.map(keys_report);
    WrapReport {
        version: env!("CARGO_PKG_VERSION"),
        machine: None,
        command: plan.cmd.words_text(),
        cols: plan.size.0,
        rows: plan.size.1,
        reader: "drain".to_owned(),
        seconds: gives.seconds,
        exit_code: gives.exit_code,
        last_line: None,
        run: WrapRun {
            bytes: frames * 1000,
            figures: Some(Figures {
                frames,
                seconds: gives.seconds,
                fps: gives.fps,
                ..Figures::default()
            }),
            ..WrapRun::default()
        },
        tree_write_calls: None,
        tree_bytes_written: None,
        terminal_write_calls: None,
        terminal_bytes_written: None,
        write_scope: WriteScope::Unavailable,
        frame_method: FrameMethod::SyncMarkers,
        frame_detection: Frames {
            method: FrameMethod::SyncMarkers,
            frames: Some(frames),
            fps: Some(gives.fps),
            bytes_per_frame: Some(1000.0),
            confirmed_by: Vec::new(),
            cursor_restarts: 0,
            sequence_share: 0.0,
            pause_share: 0.0,
            pauses_per_frame: 0.0,
        },
        sync_begins: frames,
        sync_ends: frames,
        blocked_share: None,
        writer: Default::default(),
        diagnoses: Vec::new(),
        inside: None,
        received_digest: String::new(),
        asked: Vec::new(),
        keys,
        via: None,
        seen: gives.flashed.map(seen),
    }
}

/// A real terminal's report of `gives`: its first pixel at its frame, its last 5 ms of paint
/// later, and its stages ending in the terminal's paint (wrap never sees a drain there).
fn pixel_report(plan: &Plan, terminal: Terminal, gives: Gives) -> PixelReport {
    let mut keys = keys_report(gives.key_p50_ms.unwrap_or_default());
    let latencies = &mut keys.latencies;
    latencies.pixels_ms = latencies.key_to_frame_ms.map(|frame| PixelSummary {
        first: frame,
        last: Percentiles {
            p50: frame.p50 + 5.0,
            p95: frame.p95 + 5.0,
            max: frame.max + 5.0,
        },
        last_server: None,
        server_gap: None,
        unpainted: 0,
        changes: 10,
    });
    if let Some(stages) = &mut latencies.stages_ms {
        stages.paint = stages.drain.take();
    }
    PixelReport {
        version: env!("CARGO_PKG_VERSION"),
        command: plan.cmd.words_text(),
        terminal,
        terminal_options: Vec::new(),
        display: "own-xvfb".to_owned(),
        refresh_hz: None,
        desktop: crate::in_terminal::Desktop::OwnXvfb,
        cols: plan.size.0,
        rows: plan.size.1,
        seconds: gives.seconds,
        fix: None,
        terminal_write_calls: 0,
        terminal_bytes_written: 0,
        inside: InsideReport {
            observer: Way::Kernel,
            observer_why: "kernel: made up for a test".to_owned(),
            tracer: None,
            kernel: None,
            frames_from: Source::Inside,
            writes_from: Source::Inside,
            programs: Vec::new(),
            waits: 0,
            terminal_writes: 0,
            terminal_bytes: 0,
            frames_opening_sync: None,
            held_writes: None,
            released_by_bound: None,
            lost_records: 0,
            observer_writes: 0,
            own_writes: Default::default(),
        },
        keys,
        diagnoses: Vec::new(),
        window_watcher_cpu_share: 0.0,
        window_changes_ns: Vec::new(),
        browser: None,
        seen: gives.flashed.map(seen),
        no_camera: None,
    }
}

/// What the model saw of ten keys: `flashed` of them flashed the screen for 16.7 ms.
fn seen(flashed: u64) -> SeenReport {
    let key = |flashes: bool| KeySeen {
        flashes: u32::from(flashes),
        longest_flash_ms: flashes.then_some(16.7),
        ..KeySeen::default()
    };
    let keys = (0..10.max(flashed)).map(|k| key(k < flashed)).collect();
    SeenReport::of_keys(SeenBy::Model, keys)
}

/// Ten keys answered in `p50` ms (p95 half as much again), most of it processing.
pub(crate) fn keys_report(p50: f64) -> KeysReport {
    let percentiles = |p50: f64| Percentiles {
        p50,
        p95: p50 * 1.5,
        max: p50 * 2.0,
    };
    KeysReport {
        script: "j*10@100ms".to_owned(),
        in_script: 10,
        sent: 10,
        started_after_ms: Some(50.0),
        ready_by: ReadyBy::Idle,
        unsettled: false,
        latencies: KeyLatencies {
            keys: 10,
            unanswered: 0,
            first_byte_ms: Some(percentiles(p50 / 2.0)),
            key_to_frame_ms: Some(percentiles(p50)),
            stages_ms: Some(StageSummary {
                input_delay: Some(percentiles(0.1)),
                processing: Some(percentiles(p50 * 0.8)),
                presentation_delay: None,
                emit: Some(percentiles(p50 * 0.2)),
                drain: Some(percentiles(0.05)),
                paint: None,
                uplink: None,
                downlink: None,
            }),
            dominant_stage: None,
            frame_end_from_wait: 10,
            frame_end_from_quiet_gap: 0,
            frames: None,
            writes_per_key: None,
            bytes_per_key: 1000.0,
            pixels_ms: None,
            key_to_last_byte_ms: None,
            pieces_per_frame: None,
            tear_ms: None,
            each: Vec::new(),
        },
    }
}
