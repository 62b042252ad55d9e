//! The two reference measurements every mode is compared with.
//!
//! - `cpu`: the same frame loop writing into `io::sink()`: painting, diffing and encoding with
//!   no system call at all. No writer mode can beat it.
//! - `transport`: one pre-encoded frame written over and over with one write(2) each: no
//!   painting or encoding, only what the file descriptor and whoever reads it accept per second.
//!   No writer mode can beat that either; the lower of the two is the real ceiling. The frame is
//!   the one the modes write, HUD included: a frame of every cell would be a heavier frame (2.1×
//!   the bytes at 80x24, where the HUD covers much of the screen) and a ceiling the modes beat.

use std::io::{self, Write};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use clap::ValueEnum;
use ratatui::layout::Rect;

use crate::app::App;
use crate::meters::Meters;
use crate::renderer::Renderer;

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum Ceiling {
    Cpu,
    Transport,
}

impl Ceiling {
    pub fn name(self) -> &'static str {
        match self {
            Ceiling::Cpu => "ceiling/cpu",
            Ceiling::Transport => "ceiling/transport",
        }
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

/// The bytes of the frame loop's second frame for `app` in `area`, as the renderer encodes
/// them: the scene's cells that changed since the first frame, the HUD's that did not skipped.
pub fn encode_steady_frame(app: &App, area: Rect) -> Vec<u8> {
    let bytes = SharedBytes::default();
    let mut renderer = Renderer::new(Box::new(bytes.clone()), area);
    renderer.sync = app.sync;
    app.paint_frame(0, area, renderer.buffer_mut());
    let _ = renderer.present();
    bytes.0.lock().unwrap_or_else(|e| e.into_inner()).clear();
    app.paint_frame(1, area, renderer.buffer_mut());
    let _ = renderer.present();
    std::mem::take(&mut *bytes.0.lock().unwrap_or_else(|e| e.into_inner()))
}

/// Writes `frame` to `out` until `duration` is over or a signal arrives, counting frames.
pub fn transport_loop(
    out: &mut dyn Write,
    frame: &[u8],
    cells: usize,
    meters: &mut Meters,
    duration: Duration,
    signal: &AtomicUsize,
) -> io::Result<Option<usize>> {
    let start = Instant::now();
    while start.elapsed() < duration {
        if let sig @ 1.. = signal.load(Ordering::Relaxed) {
            return Ok(Some(sig));
        }
        out.write_all(frame)?;
        meters.frame_done(cells, Instant::now());
    }
    Ok(None)
}

#[cfg(test)]
mod tests {
    use super::*;

    use ratatui::buffer::Buffer;

    use crate::scene::Scene;
    use crate::writer_mode::{Buffering, Mode, Stream};

    #[test]
    fn the_transport_frame_is_the_loops_steady_frame() {
        let area = Rect::new(0, 0, 80, 24);
        let mut app = App::new(
            Mode::new(Stream::Stdout, Buffering::Frame, 8192),
            Scene::Full,
            true,
        );
        let frame = String::from_utf8(encode_steady_frame(&app, area)).unwrap();
        let mut drawn = Buffer::empty(area);
        app.paint_frame(0, area, &mut drawn);
        // Every scene cell left visible changes from frame to frame; the HUD's cells do not.
        let scene_cells = drawn.content.iter().filter(|c| c.symbol() == "▀").count();
        assert!(0 < scene_cells && scene_cells < 80 * 24, "{scene_cells}");
        assert_eq!(frame.matches('▀').count(), scene_cells);
        assert!(frame.starts_with("\x1b[?2026h") && frame.ends_with("\x1b[?2026l"));
        app.sync = false;
        assert!(!encode_steady_frame(&app, area).starts_with(b"\x1b[?2026h"));
    }
}
