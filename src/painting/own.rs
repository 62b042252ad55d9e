//! `flushlab tour --paint`: the painted frames of the terminal the tour runs in, on an X11
//! desktop. The window is the terminal's own (see [`X11Watcher::own_window`]); the markers are
//! read on a thread of their own while the tour draws, and each mode's frames are told apart
//! afterwards by their numbers. The tour drives it as one of its [`FrameConfirmer`]s: it marks
//! each frame and keeps its write times.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use ratatui::buffer::Buffer;
use ratatui::layout::Rect;

use flushlab_core::confirm::FrameConfirmer;

use super::analysis::{Painted, analyse_segments};
use super::probe::FrameTime;
use flushlab_terminals::marker::NUMBER_MASK;
use flushlab_terminals::window_watch::{Observed, X11Watcher, wait_for};

/// The observation of this terminal's window, under way.
pub struct OwnWindow {
    /// Frame times, a list per segment (the tour's modes).
    segments: Vec<Vec<FrameTime>>,
    /// The number the next frame's marker carries.
    number: u64,
    done: Arc<AtomicBool>,
    observer: std::thread::JoinHandle<anyhow::Result<Observed>>,
}

impl OwnWindow {
    /// Finds this terminal's window, shows the calibration pattern (through `write`, on a
    /// `rows`-row screen) and finds it there, then starts reading. `Err` is the one line that
    /// says why painted frames cannot be measured here.
    pub fn start(
        rows: u16,
        mut write: impl FnMut(&[u8]) -> std::io::Result<()>,
    ) -> Result<OwnWindow, String> {
        let Some(display) = std::env::var("DISPLAY").ok().filter(|d| !d.is_empty()) else {
            let why = if std::env::var_os("WAYLAND_DISPLAY").is_some() {
                "Wayland without XWayland"
            } else {
                "no $DISPLAY: macOS, a console or ssh without X forwarding"
            };
            return Err(format!(
                "painted frames need an X11 display ({why}); the tour ran without them"
            ));
        };
        // The error may quote $DISPLAY, someone else's text: escaped before it reaches a terminal.
        let cannot = |e: anyhow::Error| {
            format!(
                "painted frames: {}; the tour ran without them",
                flushlab_core::units::one_line(&format!("{e:#}"))
            )
        };
        let observer = X11Watcher::connect(&display).map_err(cannot)?;
        let window = observer
            .own_window()
            .map_err(cannot)?
            .ok_or_else(|| "painted frames: this terminal's window was not found ($WINDOWID unset, no _NET_WM_PID of an ancestor); the tour ran without them".to_owned())?;
        write(&flushlab_terminals::marker::calibration(rows))
            .map_err(|e| format!("painted frames: {e}"))?;
        let strips = wait_for(Duration::from_secs(3), || false, || observer.calibrate(window))
            .map_err(cannot)?
            .ok_or_else(|| "painted frames: the calibration pattern was not seen in this terminal's window in 3 s (is it covered, or not drawing 24-bit colour?); the tour ran without them".to_owned())?;
        let done = Arc::new(AtomicBool::new(false));
        let observer = observer
            .read_on_a_thread(window, strips, Arc::clone(&done))
            .map_err(|e| format!("painted frames: no thread for the observer ({e})"))?;
        Ok(OwnWindow {
            segments: Vec::new(),
            number: 0,
            done,
            observer,
        })
    }

    /// Stops reading; each segment's figures, and the observer's share of a core.
    pub fn finish(self) -> anyhow::Result<(Vec<Painted>, f64)> {
        self.done.store(true, Ordering::Relaxed);
        let observed = self
            .observer
            .join()
            .map_err(|_| anyhow::anyhow!("the observer thread panicked"))??;
        Ok((
            analyse_segments(&self.segments, &observed.reads),
            observed.cpu_share,
        ))
    }
}

impl FrameConfirmer for OwnWindow {
    fn begin_segment(&mut self, segment: usize, _at: Instant) {
        if self.segments.len() <= segment {
            self.segments.resize_with(segment + 1, Vec::new);
        }
    }

    fn mark(&self, area: Rect, canvas: &mut Buffer) {
        flushlab_terminals::marker::paint(self.number, area, canvas);
    }

    fn wants_write_times(&self) -> bool {
        true
    }

    fn written(&mut self, start_ns: u64, end_ns: u64) {
        let Some(segment) = self.segments.last_mut() else {
            return;
        };
        segment.push(FrameTime {
            number: (self.number & NUMBER_MASK) as u32,
            start_ns,
            end_ns,
        });
        self.number += 1;
    }
}
