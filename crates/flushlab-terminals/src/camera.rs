//! The camera: a terminal window's pixels read straight from the framebuffer of flushlab's own
//! Xvfb (`-fbdir`: the screen kept as an XWD file the server draws into), row by row with
//! pread, so a grab costs no request to the server and sees exactly what it holds. Grabs come
//! at a fixed cadence; a grab the same as the one before is no new state.

use std::fs::File;
use std::path::Path;
use std::time::{Duration, Instant};

use anyhow::{Context, bail};

/// The file Xvfb keeps screen 0 in, inside its `-fbdir`.
pub const SCREEN_FILE: &str = "Xvfb_screen0";

/// How often the camera grabs: 250 a second, so a state on screen for one 60 Hz refresh is
/// seen in 4 grabs.
pub const CADENCE: Duration = Duration::from_millis(4);

/// After the window's last reported change, the camera goes on grabbing this long: a change
/// may be drawn a little after its report.
pub const QUIET: Duration = Duration::from_millis(50);

/// Distinct grabs kept at most, in bytes (a 200x60 xterm is ~5 MB a grab).
pub const KEPT_BYTES: usize = 768 << 20;

/// A window's rectangle on the screen: x, y, width, height, in pixels.
pub type Region = (u32, u32, u32, u32);

/// The framebuffer file, and where the region's pixels are in it.
pub struct Camera {
    file: File,
    /// Where the first pixel row starts in the file, and each row's length in bytes.
    pixels_at: u64,
    bytes_per_line: u64,
    region: Region,
}

/// What the camera saw: each distinct grab and when it was taken (CLOCK_MONOTONIC ns).
#[derive(Debug, Default)]
pub struct Film {
    /// The window's width: each frame's row, in pixels.
    pub width: u32,
    pub frames: Vec<(u64, Vec<u32>)>,
    /// Grabs taken, distinct or not.
    pub grabs: u64,
    /// Grabs that came a whole cadence late or more (the camera was not scheduled).
    pub late: u64,
    /// The film was full: grabs after that were not kept.
    pub cut: bool,
    /// The share of a core the camera took.
    pub cpu_share: f64,
    /// Its frames hold characters, a cell a `u32`, `width` a row: a browser terminal's rows as
    /// its DOM renderer drew them, not pixels.
    pub cells: bool,
}

fn field(header: &[u8], index: usize) -> u32 {
    let at = index * 4;
    u32::from_be_bytes([header[at], header[at + 1], header[at + 2], header[at + 3]])
}

impl Camera {
    /// The camera on `region` of the screen Xvfb keeps in `fbdir`; a file that is not a 32-bit
    /// XWD screen, or a region outside it, is an error naming what is wrong.
    pub fn open(fbdir: &Path, region: Region) -> anyhow::Result<Camera> {
        let path = fbdir.join(SCREEN_FILE);
        let file = File::open(&path).with_context(|| format!("opening {}", path.display()))?;
        let mut header = [0u8; 100];
        rustix::io::pread(&file, &mut header, 0)
            .ok()
            .filter(|&n| n == header.len())
            .with_context(|| format!("{}: shorter than an XWD header", path.display()))?;
        let (header_size, version, depth_bits) =
            (field(&header, 0), field(&header, 1), field(&header, 11));
        let (width, height, bytes_per_line, colours) = (
            field(&header, 4),
            field(&header, 5),
            field(&header, 12),
            field(&header, 19),
        );
        if version != 7 || depth_bits != 32 || bytes_per_line < width.saturating_mul(4) {
            bail!(
                "{}: not a 32-bit XWD screen (version {version}, {depth_bits} bits a pixel)",
                path.display()
            );
        }
        let (x, y, w, h) = region;
        if w == 0 || h == 0 || x.saturating_add(w) > width || y.saturating_add(h) > height {
            bail!("the window ({w}x{h} at {x},{y}) is not inside the {width}x{height} screen");
        }
        Ok(Camera {
            file,
            pixels_at: u64::from(header_size) + u64::from(colours) * 12,
            bytes_per_line: u64::from(bytes_per_line),
            region,
        })
    }

    /// The region's pixels now, row by row, into `into` (4 bytes a pixel, as the server keeps
    /// them).
    pub fn grab(&self, into: &mut Vec<u8>) -> std::io::Result<()> {
        let (x, y, w, h) = self.region;
        let row = w as usize * 4;
        into.resize(row * h as usize, 0);
        for (r, pixels) in into.chunks_exact_mut(row).enumerate() {
            let at =
                self.pixels_at + (u64::from(y) + r as u64) * self.bytes_per_line + u64::from(x) * 4;
            if rustix::io::pread(&self.file, pixels, at)? != row {
                return Err(std::io::Error::new(
                    std::io::ErrorKind::UnexpectedEof,
                    "the framebuffer file ended inside the window",
                ));
            }
        }
        Ok(())
    }

    /// Grabs every [`CADENCE`] until `done` while the window changes, keeping each grab that
    /// differs from the one before (up to [`KEPT_BYTES`]). `last_change` is when the display
    /// last reported a change of the window (DAMAGE, CLOCK_MONOTONIC ns): a tick with no
    /// change reported since the last grab, and none within [`QUIET`], takes no grab, so an
    /// idle window costs nothing but the tick.
    pub fn roll(
        &self,
        done: impl Fn() -> bool,
        last_change: impl Fn() -> u64,
    ) -> std::io::Result<Film> {
        let cpu = flushlab_core::sys::thread_cpu_ns();
        let started = Instant::now();
        let mut film = Film {
            width: self.region.2,
            ..Film::default()
        };
        let (mut grab, mut last) = (Vec::new(), Vec::new());
        let mut kept = 0usize;
        let mut next = Instant::now();
        let mut grabbed_after = None;
        while !done() {
            let at_ns = flushlab_core::sys::monotonic_ns();
            let change = last_change();
            let quiet = grabbed_after == Some(change)
                && at_ns.saturating_sub(change) > QUIET.as_nanos() as u64;
            if !quiet {
                grabbed_after = Some(change);
                self.grab(&mut grab)?;
                film.grabs += 1;
            }
            // Compared as the bytes read: most grabs are the one before, and cost no more.
            if !quiet && grab != last {
                std::mem::swap(&mut grab, &mut last);
                if kept + last.len() > KEPT_BYTES {
                    film.cut = true;
                } else {
                    kept += last.len();
                    let pixels = last
                        .chunks_exact(4)
                        .map(|p| u32::from_le_bytes([p[0], p[1], p[2], p[3]]));
                    film.frames.push((at_ns, pixels.collect()));
                }
            }
            next += CADENCE;
            let now = Instant::now();
            if now > next + CADENCE {
                film.late += 1;
                next = now;
            } else if next > now {
                std::thread::sleep(next - now);
            }
        }
        let wall = started.elapsed().as_nanos().max(1) as f64;
        film.cpu_share = flushlab_core::sys::thread_cpu_ns().saturating_sub(cpu) as f64 / wall;
        Ok(film)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An XWD file of a `width`x`height` screen whose pixel at (x, y) is x + 1000 y.
    fn screen(dir: &Path, width: u32, height: u32) {
        let mut header = [0u32; 25];
        header[0] = 100 + 4; // header and a 4-byte window name
        header[1] = 7;
        header[4] = width;
        header[5] = height;
        header[11] = 32;
        header[12] = width * 4;
        header[19] = 2; // two colours of 12 bytes
        let mut bytes: Vec<u8> = header.iter().flat_map(|v| v.to_be_bytes()).collect();
        bytes.extend_from_slice(b"xvfb");
        bytes.extend_from_slice(&[0; 24]);
        for y in 0..height {
            for x in 0..width {
                bytes.extend_from_slice(&(x + 1000 * y).to_le_bytes());
            }
        }
        std::fs::write(dir.join(SCREEN_FILE), bytes).unwrap();
    }

    #[test]
    fn a_grab_is_the_regions_pixels_row_by_row() {
        let dir = flushlab_core::files::Scratch::new("flushlab-camera-test").unwrap();
        screen(dir.path(), 10, 6);
        let camera = Camera::open(dir.path(), (2, 3, 3, 2)).unwrap();
        let mut grab = Vec::new();
        camera.grab(&mut grab).unwrap();
        let pixels: Vec<u32> = grab
            .chunks_exact(4)
            .map(|p| u32::from_le_bytes([p[0], p[1], p[2], p[3]]))
            .collect();
        assert_eq!(pixels, [3002, 3003, 3004, 4002, 4003, 4004]);
        let outside = Camera::open(dir.path(), (8, 0, 3, 1)).err().unwrap();
        assert!(
            outside
                .to_string()
                .contains("is not inside the 10x6 screen"),
            "{outside}"
        );
        std::fs::write(dir.path().join(SCREEN_FILE), [0u8; 40]).unwrap();
        let short = Camera::open(dir.path(), (0, 0, 1, 1)).err().unwrap();
        assert!(
            format!("{short:#}").contains("shorter than an XWD header"),
            "{short:#}"
        );
    }
}
