//! The frame painter: what is drawn under the HUD.
//!
//! `full` changes every cell on every frame, the worst case for a terminal and the one that shows
//! the writer's cost most plainly. `sparse` changes a few cells per frame, like a typical TUI,
//! which shows what ratatui's diff saves.

use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::style::Color;
use serde::{Deserialize, Serialize};

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "clap", derive(clap::ValueEnum))]
#[serde(rename_all = "lowercase")]
pub enum Scene {
    /// Every cell changes every frame: a moving truecolor gradient of half blocks.
    #[default]
    Full,
    /// A small share of cells changes per frame: a static backdrop, a bouncing block and a ticker.
    Sparse,
}

impl Scene {
    pub fn name(self) -> &'static str {
        match self {
            Scene::Full => "full",
            Scene::Sparse => "sparse",
        }
    }

    pub fn next(self) -> Scene {
        match self {
            Scene::Full => Scene::Sparse,
            Scene::Sparse => Scene::Full,
        }
    }

    /// Paints frame number `frame` into `area`. Frames are a pure function of the frame number,
    /// so a test can pin one down.
    pub fn paint(self, frame: u64, area: Rect, buf: &mut Buffer) {
        match self {
            Scene::Full => paint_gradient(frame, area, buf),
            Scene::Sparse => paint_sparse(frame, area, buf),
        }
    }
}

/// Degrees of hue the gradient moves per frame. Any step of at least ~1° changes one RGB channel
/// of every pixel, which is what makes every cell differ from the previous frame.
const HUE_STEP: u32 = 3;

fn paint_gradient(frame: u64, area: Rect, buf: &mut Buffer) {
    let shift = (frame % 360) as u32 * HUE_STEP;
    let width = u32::from(area.width.max(1));
    let pixel_rows = u32::from(area.height.max(1)) * 2;
    for y in area.top()..area.bottom() {
        let row = u32::from(y - area.y) * 2;
        // Brightness falls from top to bottom, but never to black, where hue changes vanish.
        let value = |r: u32| 255 - (r * 150 / pixel_rows) as u8;
        let (top_value, bottom_value) = (value(row), value(row + 1));
        for x in area.left()..area.right() {
            let hue = (u32::from(x - area.x) * 360 / width + shift) % 360;
            buf[(x, y)]
                .set_char('▀')
                .set_fg(hsv(hue, top_value))
                .set_bg(hsv((hue + 20) % 360, bottom_value));
        }
    }
}

/// Full-saturation HSV to RGB in integers: hue in degrees, value 0..=255.
fn hsv(hue: u32, value: u8) -> Color {
    let v = u32::from(value);
    let ramp = (hue % 60) * v / 60;
    let (r, g, b) = match hue / 60 {
        0 => (v, ramp, 0),
        1 => (v - ramp, v, 0),
        2 => (0, v, ramp),
        3 => (0, v - ramp, v),
        4 => (ramp, 0, v),
        _ => (v, 0, v - ramp),
    };
    Color::Rgb(r as u8, g as u8, b as u8)
}

fn paint_sparse(frame: u64, area: Rect, buf: &mut Buffer) {
    if area.is_empty() {
        return;
    }
    // A backdrop that never changes: after the first frame the diff skips all of it.
    for y in area.top()..area.bottom() {
        for x in area.left()..area.right() {
            let dot = if (x + y) % 4 == 0 { '·' } else { ' ' };
            buf[(x, y)]
                .set_char(dot)
                .set_fg(Color::Rgb(60, 60, 90))
                .set_bg(Color::Rgb(16, 16, 32));
        }
    }
    // A 6x3 block bouncing off the walls: about 2 × its perimeter of cells change per frame.
    let (w, h) = (6u16.min(area.width), 3u16.min(area.height));
    let x = area.x + bounce(frame, area.width - w);
    let y = area.y + bounce(frame / 2, area.height - h);
    let color = hsv((frame % 360) as u32, 230);
    for by in y..y + h {
        for bx in x..x + w {
            buf[(bx, by)].set_char('█').set_fg(color);
        }
    }
    // A ticker on the bottom row: the frame number, and a one-cell cursor sweeping the row.
    let bottom = area.bottom() - 1;
    // Formatted on the stack: the painter allocates nothing per frame.
    let mut text = [0u8; 32];
    let mut rest = &mut text[..];
    let _ = std::io::Write::write_fmt(&mut rest, format_args!(" frame {frame} "));
    let len = 32 - rest.len();
    for (i, &ch) in text[..len].iter().enumerate().take(usize::from(area.width)) {
        buf[(area.x + i as u16, bottom)]
            .set_char(char::from(ch))
            .set_fg(Color::White);
    }
    let sweep = area.x + (frame % u64::from(area.width)) as u16;
    buf[(sweep, bottom)].set_char('▲').set_fg(Color::Yellow);
}

/// Position `0..=span` of something moving one step per tick, back and forth.
fn bounce(tick: u64, span: u16) -> u16 {
    if span == 0 {
        return 0;
    }
    let period = 2 * u64::from(span);
    let phase = tick % period;
    (if phase <= u64::from(span) {
        phase
    } else {
        period - phase
    }) as u16
}

#[cfg(test)]
mod tests {
    use super::*;

    fn painted(scene: Scene, frame: u64, area: Rect) -> Buffer {
        let mut buf = Buffer::empty(area);
        scene.paint(frame, area, &mut buf);
        buf
    }

    #[test]
    fn full_changes_every_cell_every_frame() {
        let area = Rect::new(0, 0, 200, 60);
        for frame in [0, 1, 119, 120, 359, 360] {
            let a = painted(Scene::Full, frame, area);
            let b = painted(Scene::Full, frame + 1, area);
            assert_eq!(a.diff(&b).len(), 200 * 60, "frame {frame}");
        }
    }

    #[test]
    fn sparse_changes_a_small_share_of_cells() {
        let area = Rect::new(0, 0, 200, 60);
        for frame in [1, 50, 500] {
            let a = painted(Scene::Sparse, frame, area);
            let b = painted(Scene::Sparse, frame + 1, area);
            let changed = a.diff(&b).len();
            assert!(
                changed > 0 && changed < 200 * 60 / 20,
                "{changed} cells changed"
            );
        }
    }

    #[test]
    fn scenes_survive_tiny_areas() {
        for (w, h) in [(0, 0), (1, 1), (1, 5), (7, 1), (3, 2)] {
            for scene in [Scene::Full, Scene::Sparse] {
                for frame in 0..5 {
                    painted(scene, frame, Rect::new(0, 0, w, h));
                }
            }
        }
    }

    #[test]
    fn bounce_goes_back_and_forth() {
        let path: Vec<u16> = (0..8).map(|t| bounce(t, 3)).collect();
        assert_eq!(path, [0, 1, 2, 3, 2, 1, 0, 1]);
    }
}
