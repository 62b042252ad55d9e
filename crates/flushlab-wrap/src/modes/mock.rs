//! The executor the modes' tests run their sides on (hyperfine's mock executor): no process,
//! a headless report made up for each side from what the test says that side gives, and a log
//! of what each side was asked to run.

use std::sync::atomic::AtomicUsize;

use crate::modes::side::{Executor, RunReport, Side, SideRun};
use crate::observers::fix::Fix;
use crate::plan::Plan;
use crate::report::wrap_report::{KeysReport, WrapReport, WriteScope};
use crate::run::typing::ReadyBy;
use flushlab_core::detect::frames::{FrameMethod, Frames};
use flushlab_core::detect::keyed::{KeyLatencies, Percentiles, StageSummary};
use flushlab_core::detect::timeline::Timeline;
use flushlab_core::figures::{Figures, WrapRun};

/// What one side was asked to run.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Asked {
    /// CMD's program, as its plan names it (OLD's or NEW's, for `--against`).
    pub(crate) program: String,
    pub(crate) fix: Option<Fix>,
    pub(crate) keys: bool,
}

/// What a made-up side gives.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct Gives {
    pub(crate) fps: f64,
    /// Key to frame p50 (its p95 half as much again); `None`: no keys.
    pub(crate) key_p50_ms: Option<f64>,
    pub(crate) seconds: f64,
    pub(crate) exit_code: Option<i32>,
}

impl Gives {
    pub(crate) fn frames(fps: f64) -> Gives {
        Gives {
            fps,
            key_p50_ms: None,
            seconds: 3.0,
            exit_code: None,
        }
    }

    pub(crate) fn keys(fps: f64, key_p50_ms: f64) -> Gives {
        Gives {
            key_p50_ms: Some(key_p50_ms),
            ..Gives::frames(fps)
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
        };
        let gives = (self.gives)(&asked, self.asked.len());
        self.asked.push(asked);
        Ok(SideRun {
            report: RunReport::Headless(Box::new(report(plan, gives?))),
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
        seen: None,
    }
}

/// Ten keys answered in `p50` ms (p95 half as much again), most of it processing.
fn keys_report(p50: f64) -> KeysReport {
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
