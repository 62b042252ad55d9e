//! What encoding a frame costs with each backend, in ns a cell: ratatui's diff and the
//! backend's `draw` into a frame's buffer, nothing else (no painting, no write(2)).
//!
//! ```sh
//! cargo run --release -p flushlab-core --example encode_cost -- [ROUNDS]
//! ```
//!
//! Frames of flushlab's own scenes (full: every cell changes every frame; sparse: a few do) are
//! painted beforehand; each round encodes every frame once with each backend, the backends in
//! alternating order, into a `Vec` behind a `Box<dyn Write>` as the renderer's frame writer
//! is. The median of the rounds is kept. A check: both backends produce the same bytes.

use std::io::{self, Write};
use std::time::Instant;

use flushlab_core::backend::LeanBackend;
use flushlab_core::scene::Scene;
use ratatui::backend::{Backend, CrosstermBackend};
use ratatui::buffer::Buffer;
use ratatui::layout::Rect;

const FRAMES: u64 = 24;

/// The frame's buffer, as a frame writer keeps it: bytes appended, emptied once a frame.
struct FrameBytes {
    bytes: Vec<u8>,
    total: u64,
}

impl Write for FrameBytes {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.bytes.extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> io::Result<()> {
        self.total += self.bytes.len() as u64;
        self.bytes.clear();
        Ok(())
    }
}

/// Shared so that the backends, which own their writer, can be asked what they wrote.
#[derive(Clone)]
struct Shared(std::rc::Rc<std::cell::RefCell<FrameBytes>>);

impl Write for Shared {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.0.borrow_mut().write(buf)
    }
    fn flush(&mut self) -> io::Result<()> {
        self.0.borrow_mut().flush()
    }
}

impl Shared {
    fn new() -> Shared {
        Shared(std::rc::Rc::new(std::cell::RefCell::new(FrameBytes {
            bytes: Vec::with_capacity(1 << 20),
            total: 0,
        })))
    }
}

fn frames(scene: Scene, area: Rect) -> Vec<Buffer> {
    (0..=FRAMES)
        .map(|n| {
            let mut buffer = Buffer::empty(area);
            scene.paint(n, area, &mut buffer);
            buffer
        })
        .collect()
}

/// Encodes every frame after the first as its diff from the one before; (ns, cells, bytes).
fn encode<B: Backend<Error = io::Error>>(
    backend: &mut B,
    sink: &Shared,
    frames: &[Buffer],
) -> (u128, u64, u64) {
    let before = sink.0.borrow().total;
    let mut cells = 0u64;
    let start = Instant::now();
    for pair in frames.windows(2) {
        backend
            .draw(pair[0].diff_iter(&pair[1]).inspect(|_| cells += 1))
            .unwrap();
        Backend::flush(backend).unwrap();
    }
    let ns = start.elapsed().as_nanos();
    (ns, cells, sink.0.borrow().total - before)
}

fn median(mut values: Vec<f64>) -> f64 {
    values.sort_by(f64::total_cmp);
    values[values.len() / 2]
}

fn main() {
    let rounds: usize = std::env::args()
        .nth(1)
        .map_or(15, |r| r.parse().expect("ROUNDS: a whole number"));
    println!("| size | scene | backend | ns a cell | ms a frame | cells a frame | bytes a frame |");
    println!("|---|---|---|---:|---:|---:|---:|");
    for (cols, rows) in [(80, 24), (200, 60)] {
        for scene in [Scene::Full, Scene::Sparse] {
            let frames = frames(scene, Rect::new(0, 0, cols, rows));
            let (theirs, ours) = (Shared::new(), Shared::new());
            let mut crossterm = CrosstermBackend::new(Box::new(theirs.clone()) as Box<dyn Write>);
            let mut lean = LeanBackend::new(Box::new(ours.clone()) as Box<dyn Write>);
            let (mut a, mut b) = (Vec::new(), Vec::new());
            let (mut cells, mut bytes) = (0, (0, 0));
            for round in 0..rounds {
                let (x, y) = if round % 2 == 0 {
                    let x = encode(&mut crossterm, &theirs, &frames);
                    (x, encode(&mut lean, &ours, &frames))
                } else {
                    let y = encode(&mut lean, &ours, &frames);
                    (encode(&mut crossterm, &theirs, &frames), y)
                };
                cells = x.1;
                bytes = (x.2, y.2);
                a.push(x.0 as f64 / x.1 as f64);
                b.push(y.0 as f64 / y.1 as f64);
            }
            assert_eq!(bytes.0, bytes.1, "the backends sent different bytes");
            let per_frame = cells as f64 / FRAMES as f64;
            for (name, ns) in [("crossterm", median(a)), ("lean", median(b))] {
                println!(
                    "| {cols}x{rows} | {} | {name} | {ns:.1} | {:.3} | {per_frame:.0} | {:.0} |",
                    scene.name(),
                    ns * per_frame / 1e6,
                    bytes.0 as f64 / FRAMES as f64
                );
            }
        }
    }
}
