//! The two reference measurements every mode is compared with.
//!
//! - `cpu`: the same frame loop writing into `io::sink()`: painting, diffing and encoding with
//!   no system call at all. No writer mode can beat it.
//! - `transport`: one pre-encoded frame written over and over, in writes of several sizes
//!   ([`write_sizes`]), the best of them reported, by a writer that never sleeps
//!   ([`Wait::Spin`](flushlab_core::wait::Wait::Spin)): no painting or encoding, only what the file
//!   descriptor and whoever reads it accept per second. No writer mode can beat that either;
//!   the lower of the two is the real ceiling. It spins because, where idle CPUs halt at once,
//!   a writer that sleeps gets about half of what the pty takes (see [`flushlab_core::wait`]); the
//!   ceiling is the fastest way through wherever it runs, and burns a core to be so. The frame
//!   is the one the modes write, HUD included: a frame of every cell would be a heavier frame
//!   and a ceiling the modes beat.

use std::io::{self, Write};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use ratatui::layout::Rect;

use crate::explorer::app::App;
use crate::explorer::hud::Hud;
use crate::plumbing::measured::MeasuredOutput;
use crate::plumbing::renderer::Renderer;
use flushlab_core::condition::Condition;
use flushlab_core::meters::Meters;
use flushlab_core::outcome::Outcome;
use flushlab_core::writer_mode::{Buffering, Mode};

#[derive(Clone, Default)]
struct SharedBytes(Arc<Mutex<Vec<u8>>>);

impl Write for SharedBytes {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.0
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// The bytes of the frame loop's second frame for `app` under `condition`, as the renderer
/// encodes them: the scene's cells that changed since the first frame, the HUD's that did not
/// skipped.
pub fn encode_steady_frame(app: &App, hud: &Hud, condition: Condition) -> Vec<u8> {
    let bytes = SharedBytes::default();
    let area = Rect::new(0, 0, condition.cols, condition.rows);
    let mut renderer = Renderer::new(Box::new(bytes.clone()), area, condition.backend);
    renderer.sync = condition.sync;
    let meters = Meters::new();
    hud.paint_frame(app, &meters, 0, area, renderer.buffer_mut());
    let _ = renderer.present();
    bytes.0.lock().unwrap_or_else(|e| e.into_inner()).clear();
    hud.paint_frame(app, &meters, 1, area, renderer.buffer_mut());
    let _ = renderer.present();
    std::mem::take(&mut *bytes.0.lock().unwrap_or_else(|e| e.into_inner()))
}

/// The write sizes the transport ceiling tries: one write(2) of a whole frame is not the fastest
/// way through a pty (the writer sleeps while the reader drains the whole frame), so the
/// ceiling is the best of these. Sizes from the whole frame up are the whole frame.
pub fn write_sizes(frame_len: usize) -> Vec<usize> {
    let mut sizes: Vec<usize> = [1, 4, 8, 16, 64]
        .map(|kib| kib << 10)
        .into_iter()
        .filter(|&size| size < frame_len)
        .collect();
    sizes.push(frame_len.max(1));
    sizes
}

/// Writes `frame` again and again until `duration` is over, a signal arrives or `stop` (asked
/// once a second, when the meters' window closes: a parent gone, a quit key) says so, a share of
/// the time in writes of each of [`write_sizes`]. Each write size is measured as a mode of its
/// own (block buffering of that capacity: what a `BufWriter` of that size does to the frame),
/// so the meters keep one row per size and the caller reports the best.
pub fn transport_loop(
    out: &mut MeasuredOutput,
    frame: &[u8],
    cells: usize,
    duration: Duration,
    signal: &AtomicUsize,
    stop: impl Fn() -> Option<Outcome>,
) -> io::Result<Outcome> {
    let sizes = write_sizes(frame.len());
    let share = duration.checked_div(sizes.len() as u32).unwrap_or(duration);
    let condition = out.condition();
    let stream = out.mode().stream;
    for size in sizes {
        out.switch(Mode::new(stream, Buffering::Block, size), condition)?;
        let start = Instant::now();
        while start.elapsed() < share {
            if let sig @ 1.. = signal.load(Ordering::Relaxed) {
                return Ok(Outcome::Signal(sig));
            }
            if out.present_encoded(frame, size, cells)?
                && let Some(outcome) = stop()
            {
                return Ok(outcome);
            }
        }
    }
    Ok(Outcome::Finished)
}

#[cfg(test)]
mod tests {
    use super::*;

    use ratatui::buffer::Buffer;

    use flushlab_core::scene::Scene;
    use flushlab_core::writer_mode::Stream;

    #[test]
    fn the_transport_frame_is_the_loops_steady_frame() {
        let area = Rect::new(0, 0, 80, 24);
        let mut app = App::new(
            Mode::new(Stream::Stdout, Buffering::Frame, 8192),
            Scene::Full,
            true,
        );
        app.hud = flushlab_core::condition::HudLayout::Compact;
        let hud = Hud::default();
        let frame =
            String::from_utf8(encode_steady_frame(&app, &hud, app.condition(80, 24))).unwrap();
        let mut drawn = Buffer::empty(area);
        hud.paint_frame(&app, &Meters::new(), 0, area, &mut drawn);
        // Every scene cell left visible changes from frame to frame; the HUD's cells do not.
        let scene_cells = drawn.content.iter().filter(|c| c.symbol() == "▀").count();
        assert!(0 < scene_cells && scene_cells < 80 * 24, "{scene_cells}");
        assert_eq!(frame.matches('▀').count(), scene_cells);
        assert!(frame.starts_with("\x1b[?2026h") && frame.ends_with("\x1b[?2026l"));
        app.sync = false;
        assert!(
            !encode_steady_frame(&app, &hud, app.condition(80, 24)).starts_with(b"\x1b[?2026h")
        );
    }

    #[test]
    fn the_transport_ceiling_tries_small_writes_and_the_whole_frame() {
        assert_eq!(write_sizes(30_000), [1024, 4096, 8192, 16384, 30_000]);
        assert_eq!(
            write_sizes(400_000),
            [1024, 4096, 8192, 16384, 65536, 400_000]
        );
        assert_eq!(write_sizes(10), [10]);
    }
}
