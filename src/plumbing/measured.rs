//! Measured output: the renderer, the meters and the mode they are measuring, owned together so
//! that "measurement never mixes modes" holds in one place. The explorer, the tour and the
//! ceilings all write through it.
//!
//! The protocol of a switch (to another mode, or to another condition: scene, size, sync, HUD)
//! is: flush the old writer and join its thread, *then* close the old segment, so that the old
//! writer's last bytes are counted to the old row; then the next frame starts the new one.

use std::io;
use std::time::Instant;

use ratatui::buffer::Buffer;
use ratatui::layout::Rect;

use crate::plumbing::frame_model::FrameWatch;
use crate::plumbing::renderer::{BoxedWriter, Renderer};
use flushlab_core::condition::Condition;
use flushlab_core::meters::{Meters, Phases};
use flushlab_core::seen::PaintPolicy;
use flushlab_core::seen::frames::FrameSeen;
use flushlab_core::writer_mode::{self, Mode};

/// Builds the writer for a mode: the real stack, or a fixed one for the ceilings.
pub type OpenWriter = fn(Mode) -> io::Result<BoxedWriter>;

pub struct MeasuredOutput {
    renderer: Renderer,
    meters: Meters,
    mode: Mode,
    condition: Condition,
    open: OpenWriter,
    /// Frames are drawn but counted to no mode (the help is open).
    paused: bool,
    /// The terminal model on a sample of the frames, where one was asked for.
    model: Option<FrameWatch>,
}

impl MeasuredOutput {
    /// Measures `mode` under `condition`, through the writer stack [`writer_mode::open`] builds.
    pub fn open(mode: Mode, condition: Condition) -> io::Result<Self> {
        Self::with_writers(mode, condition, writer_mode::open)
    }

    /// Measures through writers that `open` builds (the CPU ceiling's `io::sink()`, say).
    pub fn with_writers(mode: Mode, condition: Condition, open: OpenWriter) -> io::Result<Self> {
        let mut renderer = Renderer::new(open(mode)?, area(condition), condition.backend);
        renderer.sync = condition.sync;
        Ok(MeasuredOutput {
            renderer,
            meters: Meters::new(),
            mode,
            condition,
            open,
            paused: false,
            model: None,
        })
    }

    /// The terminal model, painting as `policy` says, on a sample of the frames from now on
    /// ([`FrameWatch`]); what it sees goes to the meters of the mode it was taken in.
    pub fn with_model(mut self, policy: PaintPolicy) -> io::Result<Self> {
        self.model = Some(FrameWatch::start(policy)?);
        Ok(self)
    }

    /// Ends the model's sample, if one is under way: the mode's writer goes back in place of
    /// the tee. Before any writer is flushed or replaced, so a mode's writer is never dropped
    /// behind a tee.
    fn untee(&mut self) {
        let Some(model) = &mut self.model else {
            return;
        };
        if model.teed() {
            drop(self.renderer.replace_writer(Box::new(io::sink())));
            if let Some(real) = model.untee(Instant::now()) {
                drop(self.renderer.replace_writer(real));
            }
        }
    }

    pub fn meters(&self) -> &Meters {
        &self.meters
    }

    pub fn mode(&self) -> Mode {
        self.mode
    }

    pub fn condition(&self) -> Condition {
        self.condition
    }

    pub fn area(&self) -> Rect {
        self.renderer.area()
    }

    /// Starts counting afresh (after set-up writes that belong to no mode).
    pub fn restart_meters(&mut self) {
        self.meters = Meters::new();
    }

    /// Measures `mode` under `condition` from the next frame on. Nothing happens when neither
    /// changed (a block capacity matters only to block modes: [`Mode::key`]).
    pub fn switch(&mut self, mode: Mode, condition: Condition) -> io::Result<()> {
        if mode.key() == self.mode.key() && condition == self.condition {
            self.mode = mode;
            return Ok(());
        }
        // A new writer even when only the condition changed: dropping the old one is the only
        // way to know a writer thread's frame in flight has been written, and counted.
        self.untee();
        self.renderer
            .set_writer((self.open)(mode)?, condition.backend)?;
        self.meters.end_segment(self.mode, self.condition);
        if (condition.cols, condition.rows) != (self.condition.cols, self.condition.rows) {
            self.renderer.resize(area(condition));
        }
        self.renderer.sync = condition.sync;
        self.mode = mode;
        self.condition = condition;
        if let Some(model) = &mut self.model {
            model.sample_soon();
        }
        Ok(())
    }

    /// Suspends the process (Ctrl-Z): the current row is closed first (its writer flushed),
    /// the time spent stopped is counted to nothing, and the next frame redraws every cell.
    /// Returns `false`, changing nothing, where no shell could resume it
    /// ([`flushlab_terminals::session::resumable`]).
    pub fn suspend(&mut self) -> io::Result<bool> {
        if !flushlab_terminals::session::resumable() {
            return Ok(false);
        }
        self.untee();
        self.renderer
            .set_writer((self.open)(self.mode)?, self.condition.backend)?;
        self.meters.end_segment(self.mode, self.condition);
        let suspended = flushlab_terminals::session::suspend()?;
        self.meters.skip_pause();
        self.renderer.resize(area(self.condition));
        Ok(suspended)
    }

    /// Sends the frame (and `trailer` in the same flush) and counts it, unless paused. Returns
    /// whether the figures on show changed (a window closed).
    pub fn present(&mut self, trailer: &[u8]) -> io::Result<bool> {
        if !self.paused
            && let Some(model) = &mut self.model
            && model.due(Instant::now())
        {
            let real = self.renderer.replace_writer(Box::new(io::sink()));
            drop(self.renderer.replace_writer(model.tee(real, self.mode)));
        }
        let cells = self.renderer.present_with(trailer);
        let sampled = self
            .model
            .as_mut()
            .is_some_and(|model| model.after_frame(self.mode, self.condition));
        if sampled || cells.is_err() {
            self.untee();
        }
        let cells = cells?;
        if self.paused {
            return Ok(false);
        }
        if let Some(model) = &self.model {
            let seen = model.seen();
            self.count_seen(seen);
        }
        Ok(self.meters.frame_done(cells, Instant::now()))
    }

    /// What the model saw, counted to the meters of the mode and condition it was taken
    /// under: the current segment's, or the row of one already left.
    fn count_seen(&mut self, seen: Vec<(Mode, Condition, FrameSeen)>) {
        for (mode, condition, seen) in seen {
            if (mode, condition) == (self.mode.key(), self.condition) {
                self.meters.frame_seen(&seen);
            } else if let Some(row) = self
                .meters
                .rows
                .iter_mut()
                .find(|r| (r.mode, r.condition) == (mode, condition))
            {
                row.totals.seen.add(&seen);
            }
        }
    }

    /// Builds the next frame: `paint` draws into the buffer (with the meters to show), and
    /// the time it takes is the frame's `build` phase of the time split.
    pub fn build_frame(&mut self, paint: impl FnOnce(&Meters, &mut Buffer)) {
        let building = flushlab_core::timing::timing().then(Instant::now);
        paint(&self.meters, self.renderer.buffer_mut());
        if let Some(building) = building {
            self.add_phases(Phases {
                build: building.elapsed(),
                idle: std::time::Duration::ZERO,
            });
        }
    }

    /// What the frame loop measured of the frame it is drawing ([`Phases`]), counted with it.
    pub fn add_phases(&mut self, phases: Phases) {
        if !self.paused {
            self.meters.add_phases(phases);
        }
    }

    /// Pauses or resumes the measurement: while paused (the help open), frames are drawn and
    /// counted to no mode, so an overlay never changes a mode's bytes a frame. The segment is
    /// closed first (its writer flushed, as on a switch) and starts afresh on resuming.
    pub fn pause(&mut self, paused: bool) -> io::Result<()> {
        if paused == self.paused {
            return Ok(());
        }
        self.untee();
        self.renderer
            .set_writer((self.open)(self.mode)?, self.condition.backend)?;
        if paused {
            self.meters.end_segment(self.mode, self.condition);
        } else {
            self.meters.skip_pause();
            // The first frame after the help redraws what the help covered: every cell.
            self.renderer.resize(area(self.condition));
        }
        self.paused = paused;
        Ok(())
    }

    pub fn paused(&self) -> bool {
        self.paused
    }

    /// Sends a pre-encoded frame of `cells` cells in writes of at most `chunk` bytes, and counts
    /// it: the transport ceiling's frame. Returns whether a window closed, as [`Self::present`].
    pub fn present_encoded(
        &mut self,
        frame: &[u8],
        chunk: usize,
        cells: usize,
    ) -> io::Result<bool> {
        for piece in frame.chunks(chunk.max(1)) {
            self.renderer.write_now(piece)?;
        }
        Ok(self.meters.frame_done(cells, Instant::now()))
    }

    /// Writes bytes that belong to no frame (queries, screen set-up), flushed at once.
    pub fn write_now(&mut self, bytes: &[u8]) -> io::Result<()> {
        self.renderer.write_now(bytes)
    }

    /// Flushes and drops the writer (waiting for a frame in flight), closes the last segment and
    /// hands the meters back, with the flush's error if any: the figures are kept either way.
    pub fn finish(mut self) -> (Meters, io::Result<()>) {
        self.untee();
        if let Some(model) = self.model.take() {
            // The last sample still counts: the run may be shorter than the model's work.
            self.count_seen(model.finish());
        }
        let flushed = self
            .renderer
            .set_writer(Box::new(io::sink()), self.condition.backend);
        self.meters.end_segment(self.mode, self.condition);
        (self.meters, flushed)
    }
}

fn area(condition: Condition) -> Rect {
    Rect::new(0, 0, condition.cols, condition.rows)
}
