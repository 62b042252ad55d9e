//! The two reference measurements every mode is compared with.
//!
//! - `cpu`: the same frame loop writing into `io::sink()`: painting, diffing and encoding with
//!   no system call at all. No writer mode can beat it.
//! - `transport`: one pre-encoded full frame written over and over with one write(2) each: no
//!   painting or encoding, only what the file descriptor and whoever reads it accept per second.
//!   No writer mode can beat that either; the lower of the two is the real ceiling.

use std::io::{self, Write};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use clap::ValueEnum;
use ratatui::layout::Rect;

use crate::meters::Meters;
use crate::renderer::Renderer;
use crate::scene::Scene;

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

/// The bytes of a frame in which every cell of `scene` changed, as the renderer encodes it.
pub fn encode_full_frame(scene: Scene, area: Rect, sync: bool) -> Vec<u8> {
    let bytes = SharedBytes::default();
    let mut renderer = Renderer::new(Box::new(bytes.clone()), area);
    renderer.sync = sync;
    scene.paint(0, area, renderer.buffer_mut());
    let _ = renderer.present();
    bytes.0.lock().unwrap_or_else(|e| e.into_inner()).clear();
    scene.paint(1, area, renderer.buffer_mut());
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

    #[test]
    fn a_full_frame_holds_every_cell() {
        let frame = encode_full_frame(Scene::Full, Rect::new(0, 0, 20, 5), true);
        let text = String::from_utf8(frame).unwrap();
        assert_eq!(text.matches('▀').count(), 100);
        assert!(text.starts_with("\x1b[?2026h") && text.ends_with("\x1b[?2026l"));
    }
}
