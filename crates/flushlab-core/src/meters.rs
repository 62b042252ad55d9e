//! What the HUD and the report measure: frames per second, write(2) calls and bytes, and the
//! split of CPU time between user space and the kernel.
//!
//! Counters are read only when a window closes (once a second) and when the mode changes, never
//! per frame, so that measuring costs two system calls a second whatever the frame rate.

use std::collections::VecDeque;
use std::time::{Duration, Instant};

use crate::accounting::{IoCounters, IoProbe};
use crate::condition::Condition;
use crate::figures::{Figures, TimeSplit, WriterSplit};
use crate::seen::frames::{FrameSeen, FramesSeen};
use crate::writer_mode::Mode;

/// CPU time of the whole process so far, from getrusage(RUSAGE_SELF).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct CpuTimes {
    pub user: Duration,
    pub kernel: Duration,
}

impl CpuTimes {
    pub fn now() -> Self {
        CpuTimes::of(crate::sys::Usage::Process)
    }

    /// CPU time of the children this process has reaped (and of the children they reaped).
    pub fn children() -> Self {
        CpuTimes::of(crate::sys::Usage::Children)
    }

    fn of(who: crate::sys::Usage) -> Self {
        let (user, kernel) = crate::sys::cpu_time(who);
        CpuTimes { user, kernel }
    }

    /// The calling thread's.
    pub fn thread() -> Self {
        CpuTimes::of(crate::sys::Usage::Thread)
    }
}

/// The calling thread's time so far: on a CPU and waiting for one (the scheduler's own
/// accounting, `/proc/thread-self/schedstat`, nanoseconds), and its user and kernel CPU
/// (getrusage(RUSAGE_THREAD), which splits the on-CPU time between the two).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct ThreadTimes {
    pub on_cpu: Duration,
    pub cpu_wait: Duration,
    pub cpu: CpuTimes,
}

impl ThreadTimes {
    /// `None` where the scheduler's statistics are not available (not Linux, no schedstat).
    pub fn now() -> Option<ThreadTimes> {
        let (on_cpu, cpu_wait) = crate::sys::own_schedstat()?;
        Some(ThreadTimes {
            on_cpu,
            cpu_wait,
            cpu: CpuTimes::of(crate::sys::Usage::Thread),
        })
    }

    fn since(self, start: ThreadTimes) -> ThreadTimes {
        ThreadTimes {
            on_cpu: self.on_cpu.saturating_sub(start.on_cpu),
            cpu_wait: self.cpu_wait.saturating_sub(start.cpu_wait),
            cpu: CpuTimes {
                user: self.cpu.user.saturating_sub(start.cpu.user),
                kernel: self.cpu.kernel.saturating_sub(start.cpu.kernel),
            },
        }
    }

    fn add(&mut self, other: ThreadTimes) {
        self.on_cpu += other.on_cpu;
        self.cpu_wait += other.cpu_wait;
        self.cpu.user += other.cpu.user;
        self.cpu.kernel += other.cpu.kernel;
    }
}

/// Wall time the frame loop spent in two of its phases, summed over frames: building frames,
/// and pausing by choice (a frame-rate cap).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Phases {
    pub build: Duration,
    pub idle: Duration,
}

impl Phases {
    fn add(&mut self, other: Phases) {
        self.build += other.build;
        self.idle += other.idle;
    }
}

/// A reading of every counter at one instant.
#[derive(Clone, Copy, Debug)]
pub struct Sample {
    pub at: Instant,
    pub frames: u64,
    pub io: Option<IoCounters>,
    pub cpu: CpuTimes,
    /// The sampling thread's times: the frame loop's, since it samples.
    pub thread: Option<ThreadTimes>,
    /// The writer threads' (thread modes).
    pub writer: Option<crate::timing::WriterTimes>,
}

impl Sample {
    /// Every counter now, `frames` being the units written so far.
    pub fn now(probe: &IoProbe, frames: u64) -> Sample {
        Sample {
            at: Instant::now(),
            frames,
            io: probe.read(),
            cpu: CpuTimes::now(),
            thread: if crate::timing::timing() {
                ThreadTimes::now()
            } else {
                None
            },
            writer: if crate::timing::timing() {
                crate::timing::now()
            } else {
                None
            },
        }
    }
}

/// What happened between two samples.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Totals {
    pub frames: u64,
    pub seconds: f64,
    /// `None` when write accounting is not available here.
    pub io: Option<IoCounters>,
    pub cpu: CpuTimes,
    /// Terminal cells the frames sent (those ratatui's diff found changed).
    pub cells: u64,
    /// The frame loop's thread, when its times could be read.
    pub thread: Option<ThreadTimes>,
    /// The writer threads' (thread modes), when their times could be read.
    pub writer: Option<crate::timing::WriterTimes>,
    /// Filled in by the meters from what the frame loop told them.
    pub phases: Phases,
    /// What a terminal model painted of a sample of the frames ([`crate::seen::frames`]).
    pub seen: FramesSeen,
}

impl Totals {
    pub fn between(start: &Sample, end: &Sample) -> Totals {
        Totals {
            thread: start.thread.zip(end.thread).map(|(a, b)| b.since(a)),
            writer: start.writer.zip(end.writer).map(|(a, b)| b.since(a)),
            phases: Phases::default(),
            frames: end.frames - start.frames,
            seconds: (end.at - start.at).as_secs_f64(),
            io: start.io.zip(end.io).map(|(a, b)| b.since(a)),
            cpu: CpuTimes {
                user: end.cpu.user.saturating_sub(start.cpu.user),
                kernel: end.cpu.kernel.saturating_sub(start.cpu.kernel),
            },
            cells: 0,
            seen: FramesSeen::default(),
        }
    }

    pub fn add(&mut self, other: &Totals) {
        self.frames += other.frames;
        self.seconds += other.seconds;
        self.io = self.io.zip(other.io).map(|(a, b)| IoCounters {
            write_calls: a.write_calls + b.write_calls,
            bytes: a.bytes + b.bytes,
        });
        self.cpu.user += other.cpu.user;
        self.cpu.kernel += other.cpu.kernel;
        self.cells += other.cells;
        self.thread = self.thread.zip(other.thread).map(|(mut a, b)| {
            a.add(b);
            a
        });
        self.writer = self.writer.zip(other.writer).map(|(mut a, b)| {
            a.add(b);
            a
        });
        self.phases.add(other.phases);
        self.seen.merge(&other.seen);
    }

    /// Torn (or flashed) paints a second that the model counts in the sampled frames, at
    /// these frames a second.
    pub fn torn_per_second(&self) -> Option<f64> {
        Some(self.seen.torn_per_frame()? * self.fps())
    }

    /// Where the frames' wall time went (see [`TimeSplit`]): the thread's time on a CPU is
    /// building (measured), then user and kernel CPU in the proportion getrusage gives; its
    /// time runnable is waiting for a CPU; the rest of the wall time, asleep, is the cap's
    /// pause (measured) or, inside write(2), waiting for the reader.
    ///
    /// Building is timed by the wall clock, so on a busy machine it holds the time the loop was
    /// preempted while building — time the scheduler already counts as waiting for a CPU. It is
    /// capped at the user time on a CPU so that no wait is counted twice (a loaded 2-core
    /// machine timed 137 ms of building in 23 frames whose thread was on a CPU for 62 ms).
    pub fn time_split(&self) -> Option<TimeSplit> {
        let thread = self.thread?;
        if self.frames == 0 {
            return None;
        }
        let ms = |d: f64| d * 1000.0 / self.frames as f64;
        let on_cpu = thread.on_cpu.as_secs_f64();
        let (user, kernel) = (
            thread.cpu.user.as_secs_f64(),
            thread.cpu.kernel.as_secs_f64(),
        );
        let kernel_part = if user + kernel > 0.0 {
            on_cpu * kernel / (user + kernel)
        } else {
            0.0
        };
        let build = self
            .phases
            .build
            .as_secs_f64()
            .min((on_cpu - kernel_part).max(0.0));
        let encode = (on_cpu - kernel_part - build).max(0.0);
        let cpu_wait = thread.cpu_wait.as_secs_f64();
        let idle = self.phases.idle.as_secs_f64();
        let reader_wait = (self.seconds - build - encode - kernel_part - cpu_wait - idle).max(0.0);
        Some(TimeSplit {
            build_ms: ms(build),
            encode_ms: ms(encode),
            kernel_ms: ms(kernel_part),
            cpu_wait_ms: ms(cpu_wait),
            reader_wait_ms: ms(reader_wait),
            idle_ms: ms(idle),
            writer: self.writer.filter(|w| !w.on_cpu.is_zero()).map(|w| {
                let (on_cpu, cpu_wait, frame_wait) = (
                    w.on_cpu.as_secs_f64(),
                    w.cpu_wait.as_secs_f64(),
                    w.frame_wait.as_secs_f64(),
                );
                WriterSplit {
                    on_cpu_ms: ms(on_cpu),
                    cpu_wait_ms: ms(cpu_wait),
                    frame_wait_ms: ms(frame_wait),
                    reader_wait_ms: ms((self.seconds - on_cpu - cpu_wait - frame_wait).max(0.0)),
                }
            }),
        })
    }

    pub fn fps(&self) -> f64 {
        per(self.frames as f64, self.seconds)
    }

    pub fn writes_per_frame(&self) -> Option<f64> {
        self.io
            .map(|io| per(io.write_calls as f64, self.frames as f64))
    }

    pub fn bytes_per_frame(&self) -> Option<f64> {
        self.io.map(|io| per(io.bytes as f64, self.frames as f64))
    }

    /// `None` also when nothing was written (the CPU ceiling): there is no write to divide by.
    pub fn bytes_per_write(&self) -> Option<f64> {
        self.io
            .filter(|io| io.write_calls > 0)
            .map(|io| io.bytes as f64 / io.write_calls as f64)
    }

    pub fn cells_per_frame(&self) -> f64 {
        per(self.cells as f64, self.frames as f64)
    }

    /// Kernel CPU time as a share of all CPU time, 0..=1: how much of the work is system calls.
    pub fn kernel_share(&self) -> f64 {
        let kernel = self.cpu.kernel.as_secs_f64();
        per(kernel, kernel + self.cpu.user.as_secs_f64())
    }

    /// These totals in the schema every report uses.
    pub fn figures(&self) -> Figures {
        Figures {
            frames: self.frames,
            seconds: self.seconds,
            fps: self.fps(),
            writes_per_frame: self.writes_per_frame(),
            bytes_per_frame: self.bytes_per_frame(),
            bytes_per_write: self.bytes_per_write(),
            kernel_share: self.kernel_share(),
            user_seconds: self.cpu.user.as_secs_f64(),
            kernel_seconds: self.cpu.kernel.as_secs_f64(),
            time_split: self.time_split(),
        }
    }
}

/// `x / y`, or 0 when there is nothing to divide by.
pub fn per(x: f64, y: f64) -> f64 {
    if y > 0.0 { x / y } else { 0.0 }
}

/// How many one-second FPS readings the sparkline keeps.
pub const FPS_HISTORY: usize = 60;
const WINDOW: Duration = Duration::from_secs(1);

/// One row of the comparison: a mode under a condition, over all the time it ran so.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ModeRow {
    pub condition: Condition,
    pub mode: Mode,
    pub totals: Totals,
}

/// Frame counting for the whole run: the live window the HUD shows, the FPS history, and the
/// totals of every mode under every condition visited, in the order they were first visited.
#[derive(Debug)]
pub struct Meters {
    probe: IoProbe,
    frames: u64,
    cells_in_window: u64,
    cells_in_segment: u64,
    seen_in_window: FramesSeen,
    seen_in_segment: FramesSeen,
    phases_in_window: Phases,
    phases_in_segment: Phases,
    window_start: Sample,
    segment_start: Sample,
    /// The last closed window; `None` until one second has passed in the current mode.
    pub window: Option<Totals>,
    pub fps_history: VecDeque<u64>,
    pub rows: Vec<ModeRow>,
    /// Index in `rows` of the segment closed last: the mode and condition a run ended in.
    last_closed: Option<usize>,
    pub started: Instant,
    /// Bumped whenever a window or a segment closes: the figures on show changed.
    generation: u64,
}

impl Meters {
    pub fn new() -> Self {
        let probe = IoProbe::open();
        let start = Sample::now(&probe, 0);
        Meters {
            probe,
            frames: 0,
            cells_in_window: 0,
            cells_in_segment: 0,
            seen_in_window: FramesSeen::default(),
            seen_in_segment: FramesSeen::default(),
            phases_in_window: Phases::default(),
            phases_in_segment: Phases::default(),
            window_start: start,
            segment_start: start,
            window: None,
            fps_history: VecDeque::with_capacity(FPS_HISTORY),
            rows: Vec::new(),
            last_closed: None,
            started: start.at,
            generation: 0,
        }
    }

    pub fn frames(&self) -> u64 {
        self.frames
    }

    /// Changes whenever the figures a display shows change (once a second, and per mode).
    pub fn generation(&self) -> u64 {
        self.generation
    }

    /// Frames counted when the figures were last sampled: what a display updated once a
    /// second shows.
    pub fn sampled_frames(&self) -> u64 {
        self.window_start.frames
    }

    pub fn accounting_available(&self) -> bool {
        self.window_start.io.is_some()
    }

    /// Adds what the frame loop measured of one frame: building it, and a cap's pause.
    pub fn add_phases(&mut self, phases: Phases) {
        self.phases_in_window.add(phases);
        self.phases_in_segment.add(phases);
    }

    /// Counts a frame that sent `cells` cells. Returns true when a window closed, i.e. when the
    /// HUD's figures changed.
    pub fn frame_done(&mut self, cells: usize, now: Instant) -> bool {
        self.frames += 1;
        self.cells_in_window += cells as u64;
        self.cells_in_segment += cells as u64;
        if now - self.window_start.at < WINDOW {
            return false;
        }
        let end = Sample::now(&self.probe, self.frames);
        let mut window = Totals::between(&self.window_start, &end);
        window.cells = std::mem::take(&mut self.cells_in_window);
        window.seen = std::mem::take(&mut self.seen_in_window);
        window.phases = std::mem::take(&mut self.phases_in_window);
        if self.fps_history.len() == FPS_HISTORY {
            self.fps_history.pop_front();
        }
        self.fps_history.push_back(window.fps().round() as u64);
        self.window = Some(window);
        self.window_start = end;
        self.generation += 1;
        true
    }

    /// What the terminal model painted of one of this segment's frames.
    pub fn frame_seen(&mut self, seen: &FrameSeen) {
        self.seen_in_window.add(seen);
        self.seen_in_segment.add(seen);
    }

    /// Closes the current segment, adding it to the row of `mode` under `condition`, and starts
    /// a new window so the HUD never mixes two modes' or two conditions' figures.
    pub fn end_segment(&mut self, mode: Mode, condition: Condition) {
        let end = Sample::now(&self.probe, self.frames);
        let mut segment = Totals::between(&self.segment_start, &end);
        segment.cells = std::mem::take(&mut self.cells_in_segment);
        segment.seen = std::mem::take(&mut self.seen_in_segment);
        self.seen_in_window = FramesSeen::default();
        segment.phases = std::mem::take(&mut self.phases_in_segment);
        self.phases_in_window = Phases::default();
        let key = mode.key();
        match self
            .rows
            .iter()
            .position(|r| r.mode == key && r.condition == condition)
        {
            Some(i) => {
                self.rows[i].totals.add(&segment);
                self.last_closed = Some(i);
            }
            None => {
                self.rows.push(ModeRow {
                    condition,
                    mode: key,
                    totals: segment,
                });
                self.last_closed = Some(self.rows.len() - 1);
            }
        }
        self.segment_start = end;
        self.window_start = end;
        self.cells_in_window = 0;
        self.window = None;
        self.generation += 1;
    }

    /// Starts the current segment and window afresh without counting the time since the last
    /// one closed: after a suspension, the seconds the process spent stopped belong to no mode.
    pub fn skip_pause(&mut self) {
        let now = Sample::now(&self.probe, self.frames);
        self.segment_start = now;
        self.window_start = now;
        self.cells_in_segment = 0;
        self.cells_in_window = 0;
        self.seen_in_segment = FramesSeen::default();
        self.seen_in_window = FramesSeen::default();
        self.phases_in_segment = Phases::default();
        self.phases_in_window = Phases::default();
        self.window = None;
        self.generation += 1;
    }

    /// The row of the segment closed last: the mode and condition the run ended in.
    pub fn last_row(&self) -> Option<usize> {
        self.last_closed
    }

    pub fn totals_for(&self, mode: Mode, condition: Condition) -> Option<&Totals> {
        self.rows
            .iter()
            .find(|r| r.mode == mode.key() && r.condition == condition)
            .map(|r| &r.totals)
    }

    /// The rows measured under `condition`, in the order they were first visited.
    pub fn rows_under(&self, condition: Condition) -> impl Iterator<Item = &ModeRow> {
        self.rows.iter().filter(move |r| r.condition == condition)
    }
}

impl Default for Meters {
    fn default() -> Self {
        Self::new()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn the_time_split_adds_up_to_the_wall_time() {
        // 10 frames in 1 s: 0.3 s on a CPU (a third of it in the kernel), 0.1 s waiting for a
        // core, 0.2 s of it building; 0.1 s paused by a cap; the rest asleep in write(2).
        let t = Totals {
            frames: 10,
            seconds: 1.0,
            thread: Some(ThreadTimes {
                on_cpu: Duration::from_millis(300),
                cpu_wait: Duration::from_millis(100),
                cpu: CpuTimes {
                    user: Duration::from_millis(200),
                    kernel: Duration::from_millis(100),
                },
            }),
            phases: Phases {
                build: Duration::from_millis(150),
                idle: Duration::from_millis(100),
            },
            ..Totals::default()
        };
        let split = t.time_split().unwrap();
        let close = |a: f64, b: f64| (a - b).abs() < 1e-9;
        assert!(close(split.build_ms, 15.0), "{split:?}");
        assert!(close(split.kernel_ms, 10.0), "{split:?}");
        assert!(close(split.encode_ms, 5.0), "{split:?}");
        assert!(close(split.cpu_wait_ms, 10.0), "{split:?}");
        assert!(close(split.idle_ms, 10.0), "{split:?}");
        assert!(close(split.reader_wait_ms, 50.0), "{split:?}");
        assert!(close(split.total_ms(), 100.0), "{split:?}");
        assert!(split.reader_bound());
        assert_eq!(Totals::default().time_split(), None);
    }

    #[test]
    fn building_preempted_is_counted_once_as_waiting_for_a_cpu() {
        // The wall clock timed 0.5 s of building, but the thread was on a CPU for 0.3 s in all
        // (0.1 s of it in the kernel) and runnable for 0.4 s: the preemption is CPU wait.
        let t = Totals {
            frames: 10,
            seconds: 1.0,
            thread: Some(ThreadTimes {
                on_cpu: Duration::from_millis(300),
                cpu_wait: Duration::from_millis(400),
                cpu: CpuTimes {
                    user: Duration::from_millis(200),
                    kernel: Duration::from_millis(100),
                },
            }),
            phases: Phases {
                build: Duration::from_millis(500),
                idle: Duration::ZERO,
            },
            ..Totals::default()
        };
        let split = t.time_split().unwrap();
        let close = |a: f64, b: f64| (a - b).abs() < 1e-9;
        assert!(close(split.build_ms, 20.0), "{split:?}");
        assert!(close(split.encode_ms, 0.0), "{split:?}");
        assert!(close(split.kernel_ms, 10.0), "{split:?}");
        assert!(close(split.cpu_wait_ms, 40.0), "{split:?}");
        assert!(close(split.reader_wait_ms, 30.0), "{split:?}");
        assert!(close(split.total_ms(), 100.0), "{split:?}");
    }

    #[test]
    fn totals_derive_rates_and_never_divide_by_zero() {
        let t = Totals {
            frames: 4,
            seconds: 2.0,
            io: Some(IoCounters {
                write_calls: 40,
                bytes: 4000,
            }),
            cpu: CpuTimes {
                user: Duration::from_millis(300),
                kernel: Duration::from_millis(100),
            },
            cells: 80,
            ..Totals::default()
        };
        assert_eq!(t.fps(), 2.0);
        assert_eq!(t.writes_per_frame(), Some(10.0));
        assert_eq!(t.bytes_per_write(), Some(100.0));
        assert_eq!(t.kernel_share(), 0.25);
        assert_eq!(t.cells_per_frame(), 20.0);
        assert_eq!(Totals::default().fps(), 0.0);
        assert_eq!(Totals::default().kernel_share(), 0.0);
    }
}
