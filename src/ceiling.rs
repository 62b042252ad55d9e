//! The two reference measurements every mode is compared with.
//!
//! - `cpu`: the same frame loop writing into `io::sink()`: painting, diffing and encoding with
//!   no system call at all. No writer mode can beat it.
//! - `transport`: one pre-encoded frame written over and over, in writes of several sizes
//!   ([`write_sizes`]), the best of them reported, by a writer that never sleeps
//!   ([`Spinning`]): no painting or encoding, only what the file descriptor and whoever reads it
//!   accept per second. No writer mode can beat that either; the lower of the two is the real
//!   ceiling. The frame is the one the modes write, HUD included: a
//!   frame of every cell would be a heavier frame and a ceiling the modes beat.

use std::io::{self, Write};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use ratatui::layout::Rect;

use crate::app::App;
use crate::condition::Condition;
use crate::hud::Hud;
use crate::measured::MeasuredOutput;
use crate::meters::Meters;
use crate::outcome::Outcome;
use crate::renderer::Renderer;
use crate::writer_mode::{Buffering, Mode};

/// A writer that never sleeps in write(2): before each write it polls the file descriptor with
/// a zero timeout until there is room, yielding the core between polls. A blocking writer that
/// finds a pty full sleeps, and runs again only once the reader has drained part of the buffer
/// and the scheduler has got round to it; that sleep-and-wake cycle costs about half of what
/// the pty and its reader accept (`cargo run --release --example writer_wait`, docs/results/
/// writer-wait.md: at 200x60, 132 fps sleeping, 270 spinning) on this kind of machine, a KVM
/// guest whose idle vCPUs halt at once: with halt polling on, sleeping was as fast or faster.
/// Every writer mode sleeps; the ceiling is the fastest way through wherever it runs, so it
/// spins, and burns a core doing so.
///
/// It yields, because the reader it waits for may be on the same core: pinned there, a writer
/// that spins without yielding fell to 34 fps at 200x60, below every sleeping writer (107–148),
/// a ceiling the modes beat; yielding, 198. Where the two have a core each, not yielding is
/// faster (359 against 270 in the same run) — but the bench cannot choose where the scheduler
/// puts them, and a ceiling must hold in both places.
pub struct Spinning<W> {
    inner: W,
}

impl<W: Write + std::os::fd::AsFd> Spinning<W> {
    pub fn new(inner: W) -> Self {
        Spinning { inner }
    }

    fn wait_for_room(&self) {
        use rustix::event::{PollFd, PollFlags, Timespec, poll};
        let zero = Timespec {
            tv_sec: 0,
            tv_nsec: 0,
        };
        loop {
            let mut fds = [PollFd::new(&self.inner, PollFlags::OUT)];
            match poll(&mut fds, Some(&zero)) {
                Ok(0) | Err(rustix::io::Errno::INTR) => std::thread::yield_now(),
                // Room, or an error the write itself will report.
                _ => return,
            }
        }
    }
}

impl<W: Write + std::os::fd::AsFd> Write for Spinning<W> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.wait_for_room();
        self.inner.write(buf)
    }
    fn flush(&mut self) -> io::Result<()> {
        self.inner.flush()
    }
}

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

    use crate::scene::Scene;
    use crate::writer_mode::Stream;

    #[test]
    fn the_transport_frame_is_the_loops_steady_frame() {
        let area = Rect::new(0, 0, 80, 24);
        let mut app = App::new(
            Mode::new(Stream::Stdout, Buffering::Frame, 8192),
            Scene::Full,
            true,
        );
        app.hud = crate::condition::HudLayout::Compact;
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
