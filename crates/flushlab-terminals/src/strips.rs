//! The frame markers read from pixels: where they are in a window, found once from the
//! calibration pattern a painted run draws first (no font, padding or border assumed), and a
//! strip of pixels through them decoded to the frame number drawn there. The X11 and the
//! Wayland watchers both read them.

use crate::marker::{CALIBRATION, CELLS};

/// Where the markers' pixels are in the window: the middle pixel row of each marker row, and
/// the middle pixel of each of its cells (as offsets from `x`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Strips {
    pub x: i16,
    pub width: u16,
    pub top_y: i16,
    pub bottom_y: i16,
    pub centres: [u16; CELLS as usize],
}

/// A pixel of a 32-bit little-endian Z pixmap: (red, green, blue).
fn pixel(data: &[u8], index: usize) -> Option<(u8, u8, u8)> {
    let p = data.get(index * 4..index * 4 + 4)?;
    Some((p[2], p[1], p[0]))
}

/// Which calibration colour a pixel is, if any (a little tolerance for palettes that are not
/// exact).
fn calibration_colour(pixel: (u8, u8, u8)) -> Option<usize> {
    let close = |a: u8, b: u8| a.abs_diff(b) < 60;
    CALIBRATION
        .iter()
        .position(|&(r, g, b)| close(pixel.0, r) && close(pixel.1, g) && close(pixel.2, b))
}

/// The cells of the calibration pattern on pixel row `y`: the middle of each of 32 runs that
/// alternate between the two colours, touching, starting with the first; `None` if the row
/// does not cross the pattern.
fn pattern_on_row(data: &[u8], width: usize, y: usize) -> Option<(usize, [u16; CELLS as usize])> {
    let mut runs: Vec<(usize, usize, usize)> = Vec::new(); // (colour, first x, last x)
    for x in 0..width {
        let colour = calibration_colour(pixel(data, y * width + x)?);
        match (colour, runs.last_mut()) {
            (Some(c), Some(run)) if run.0 == c && run.2 + 1 == x => run.2 = x,
            (Some(c), _) => runs.push((c, x, x)),
            (None, _) => {}
        }
    }
    // The longest chain of touching, alternating runs that starts with the first colour.
    let chain_at = |start: usize| {
        runs[start..]
            .windows(2)
            .take_while(|w| w[0].0 != w[1].0 && w[0].2 + 1 == w[1].1)
            .count()
            + 1
    };
    let start = (0..runs.len()).find(|&i| runs[i].0 == 0 && chain_at(i) >= CELLS as usize)?;
    let chain = &runs[start..start + CELLS as usize];
    let x0 = chain[0].1;
    let centres = std::array::from_fn(|i| ((chain[i].1 + chain[i].2) / 2 - x0) as u16);
    Some((x0, centres))
}

/// The strips through the calibration pattern in a whole-window picture (`width` x `height`
/// pixels, 32 bits each): the middle row of the upper band of rows that cross it and of the
/// lower one.
pub fn find_strips(data: &[u8], width: usize, height: usize) -> Option<Strips> {
    if data.len() < width * height * 4 {
        return None;
    }
    let rows: Vec<(usize, usize, [u16; CELLS as usize])> = (0..height)
        .filter_map(|y| pattern_on_row(data, width, y).map(|(x0, c)| (y, x0, c)))
        .collect();
    let (first, last) = (rows.first()?, rows.last()?);
    // Two bands: rows as far from the first as the last is belong to the lower one.
    let split = rows
        .iter()
        .position(|r| r.0 - first.0 > (last.0 - first.0) / 2)?;
    let (upper, lower) = rows.split_at(split);
    // One band is no pattern: the two marker rows are a screen apart.
    if lower.first()?.0 <= upper.last()?.0 + 1 {
        return None;
    }
    let (top, bottom) = (&upper[upper.len() / 2], &lower[lower.len() / 2]);
    if top.1 != bottom.1 || top.2 != bottom.2 {
        return None;
    }
    let width = usize::from(*top.2.last()?) + 1;
    Some(Strips {
        x: i16::try_from(top.1).ok()?,
        width: u16::try_from(width).ok()?,
        top_y: i16::try_from(top.0).ok()?,
        bottom_y: i16::try_from(bottom.0).ok()?,
        centres: top.2,
    })
}

/// The frame number a strip's marker carries: white cells are ones.
pub(crate) fn decode_strip(data: &[u8], centres: &[u16; CELLS as usize]) -> Option<u32> {
    let mut bits = [false; CELLS as usize];
    for (bit, &x) in bits.iter_mut().zip(centres) {
        let (r, g, b) = pixel(data, usize::from(x))?;
        *bit = u16::from(r) + u16::from(g) + u16::from(b) > 3 * 128;
    }
    crate::marker::decode(&bits)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A picture of a window: `cell` pixels a cell, `pad` pixels of border, the calibration
    /// pattern's cells on cell rows 0 and `rows - 1` of a grey screen.
    fn picture(
        cols: usize,
        rows: usize,
        cell: (usize, usize),
        pad: usize,
    ) -> (Vec<u8>, usize, usize) {
        let (w, h) = (cols * cell.0 + 2 * pad, rows * cell.1 + 2 * pad);
        let mut data = vec![0u8; w * h * 4];
        for y in 0..h {
            for x in 0..w {
                let (mut r, mut g, mut b) = (90, 90, 90);
                if x >= pad && y >= pad && x < w - pad && y < h - pad {
                    let (col, row) = ((x - pad) / cell.0, (y - pad) / cell.1);
                    if (row == 0 || row == rows - 1) && col < CELLS as usize {
                        (r, g, b) = CALIBRATION[col % 2];
                    }
                }
                data[(y * w + x) * 4..][..4].copy_from_slice(&[b, g, r, 0]);
            }
        }
        (data, w, h)
    }

    #[test]
    fn the_strips_are_found_whatever_the_cell_size_and_border() {
        for (cell, pad) in [((7, 15), 2), ((10, 21), 0), ((6, 13), 9)] {
            let (data, w, h) = picture(80, 24, cell, pad);
            let strips = find_strips(&data, w, h).unwrap_or_else(|| panic!("{cell:?} {pad}"));
            assert_eq!(usize::try_from(strips.x).unwrap(), pad);
            let top = usize::try_from(strips.top_y).unwrap();
            let bottom = usize::try_from(strips.bottom_y).unwrap();
            assert!((pad..pad + cell.1).contains(&top), "{top}");
            assert!(
                (pad + 23 * cell.1..pad + 24 * cell.1).contains(&bottom),
                "{bottom}"
            );
            for (i, &c) in strips.centres.iter().enumerate() {
                assert_eq!(usize::from(c) / cell.0, i, "cell {i} of {cell:?}");
            }
        }
    }

    #[test]
    fn no_pattern_no_strips() {
        let (mut data, w, h) = picture(80, 24, (7, 15), 2);
        // One cell of the bottom row in the wrong colour: the pattern is not whole there.
        for y in 0..h {
            let x = 2 + 7 * 5 + 3;
            if y > h / 2 {
                data[(y * w + x) * 4..][..4].copy_from_slice(&[0, 255, 0, 0]);
            }
        }
        assert_eq!(find_strips(&data, w, h), None);
        assert_eq!(find_strips(&[0; 16], 2, 2), None);
    }

    #[test]
    fn a_strip_decodes_to_its_frame() {
        let bits = crate::marker::encode(4242);
        let centres: [u16; 32] = std::array::from_fn(|i| (i * 7 + 3) as u16);
        let mut data = vec![0u8; 32 * 7 * 4];
        for (i, &bit) in bits.iter().enumerate() {
            let v = if bit { 229 } else { 0 };
            for x in i * 7..i * 7 + 7 {
                data[x * 4..][..4].copy_from_slice(&[v, v, v, 0]);
            }
        }
        assert_eq!(decode_strip(&data, &centres), Some(4242));
        assert_eq!(decode_strip(&data[..8], &centres), None);
    }
}
