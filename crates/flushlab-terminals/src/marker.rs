//! The frame marker: a frame's number drawn into a few cells so that a picture of the screen
//! says which frame it shows. 24 bits of the frame number and a CRC-8 of them, one bit a cell
//! (black or white background), in the first [`CELLS`] cells of the top row and of the bottom
//! row. ratatui's diff sends cells row by row, so the bottom marker is written after every other
//! cell of the frame: a picture whose two markers agree shows one whole frame, one whose markers
//! disagree shows parts of two (torn), and a marker that fails its check was caught half
//! painted.
//!
//! **Leaf** but for ratatui's `Buffer`: the runner paints the marker, the observer decodes it.

use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::style::Color;

/// Cells a marker takes: 24 bits of frame number, 8 of check.
pub const CELLS: u16 = 32;

/// Frame numbers wrap at 2^24 (46 minutes at 6,000 fps).
pub const NUMBER_MASK: u64 = (1 << 24) - 1;

/// The two colours of the calibration pattern, alternating from the first marker cell: pure
/// colours that no terminal's palette approximates into each other, and that the marker's
/// black and white are never mistaken for.
pub const CALIBRATION: [(u8, u8, u8); 2] = [(255, 0, 0), (0, 0, 255)];

/// The 32 bits of frame `frame`'s marker, most significant first.
pub fn encode(frame: u64) -> [bool; CELLS as usize] {
    let number = (frame & NUMBER_MASK) as u32;
    let word = (number << 8) | u32::from(crc8(number));
    std::array::from_fn(|i| word & (1 << (31 - i)) != 0)
}

/// The frame number a marker's bits carry, or `None` when the check fails (a marker caught
/// while it was being painted, or cells that are not a marker at all).
pub fn decode(bits: &[bool; CELLS as usize]) -> Option<u32> {
    let word = bits.iter().fold(0u32, |w, &bit| (w << 1) | u32::from(bit));
    let number = word >> 8;
    (crc8(number) == (word & 0xff) as u8).then_some(number)
}

/// CRC-8 (polynomial 0x07) of the number's three bytes, starting from 0xff so that an all-black
/// or all-white strip never passes for frame 0 or frame 2^24 − 1.
fn crc8(number: u32) -> u8 {
    let mut crc = 0xffu8;
    for byte in &number.to_be_bytes()[1..] {
        crc ^= byte;
        for _ in 0..8 {
            crc = if crc & 0x80 != 0 {
                (crc << 1) ^ 0x07
            } else {
                crc << 1
            };
        }
    }
    crc
}

/// The rows the markers take in `area`: the top and the bottom one.
pub fn rows(area: Rect) -> (u16, u16) {
    (area.top(), area.bottom().saturating_sub(1))
}

/// Paints frame `frame`'s marker over whatever the frame holds there (the scene, the HUD).
/// Nothing is painted where the area is narrower than a marker or shorter than two rows.
pub fn paint(frame: u64, area: Rect, buf: &mut Buffer) {
    if area.width < CELLS || area.height < 2 {
        return;
    }
    let bits = encode(frame);
    let (top, bottom) = rows(area);
    for y in [top, bottom] {
        for (i, &bit) in bits.iter().enumerate() {
            let color = if bit {
                Color::Rgb(255, 255, 255)
            } else {
                Color::Rgb(0, 0, 0)
            };
            buf[(area.x + i as u16, y)]
                .set_char(' ')
                .set_fg(color)
                .set_bg(color);
        }
    }
}

/// The bytes that clear the screen and draw the calibration pattern where the markers go, in
/// a `cols`x`rows` screen: the observer finds the markers' pixels from it.
pub fn calibration(rows: u16) -> Vec<u8> {
    let mut bytes = b"\x1b[0m\x1b[2J".to_vec();
    for row in [1, rows.max(2)] {
        bytes.extend_from_slice(format!("\x1b[{row};1H").as_bytes());
        for i in 0..CELLS as usize {
            let (r, g, b) = CALIBRATION[i % 2];
            bytes.extend_from_slice(format!("\x1b[48;2;{r};{g};{b}m ").as_bytes());
        }
    }
    bytes.extend_from_slice(b"\x1b[0m");
    bytes
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_number_round_trips() {
        for frame in [
            0,
            1,
            2,
            255,
            256,
            65_535,
            1 << 23,
            NUMBER_MASK,
            NUMBER_MASK + 5,
        ] {
            assert_eq!(decode(&encode(frame)), Some((frame & NUMBER_MASK) as u32));
        }
    }

    #[test]
    fn a_marker_caught_half_painted_is_rejected() {
        // The first cells of frame 1000's marker over the rest of frame 999's: what a picture
        // taken while the row was being drawn shows.
        let (old, new) = (encode(999), encode(1000));
        let mut rejected = 0;
        for cut in 1..CELLS as usize {
            let mixed: [bool; 32] = std::array::from_fn(|i| if i < cut { new[i] } else { old[i] });
            match decode(&mixed) {
                None => rejected += 1,
                // A cut that falls where the two agree is one of them, never a third frame.
                Some(n) => assert!(n == 999 || n == 1000, "cut {cut} read as {n}"),
            }
        }
        assert!(rejected > 0);
        // Every single flipped bit is caught.
        for frame in [0u64, 7, 123_456] {
            for i in 0..CELLS as usize {
                let mut bits = encode(frame);
                bits[i] = !bits[i];
                assert_eq!(decode(&bits), None, "frame {frame}, bit {i}");
            }
        }
    }

    #[test]
    fn blank_strips_are_no_frame() {
        assert_eq!(decode(&[false; 32]), None);
        assert_eq!(decode(&[true; 32]), None);
    }

    #[test]
    fn a_torn_picture_reads_two_frames() {
        let area = Rect::new(0, 0, 40, 5);
        let mut buf = Buffer::empty(area);
        paint(41, area, &mut buf);
        let top = Buffer::empty(area);
        let mut torn = top.clone();
        paint(42, area, &mut torn);
        let read = |buf: &Buffer, y: u16| -> [bool; 32] {
            std::array::from_fn(|i| buf[(i as u16, y)].bg == Color::Rgb(255, 255, 255))
        };
        // The top row of frame 42 above the bottom row of frame 41.
        assert_eq!(decode(&read(&torn, 0)), Some(42));
        assert_eq!(decode(&read(&buf, 4)), Some(41));
    }

    #[test]
    fn narrow_areas_get_no_marker() {
        let area = Rect::new(0, 0, 31, 5);
        let mut buf = Buffer::empty(area);
        paint(3, area, &mut buf);
        assert_eq!(buf, Buffer::empty(area));
    }

    #[test]
    fn the_calibration_pattern_alternates_on_both_rows() {
        let text = String::from_utf8(calibration(24)).unwrap();
        assert!(text.contains("\x1b[1;1H") && text.contains("\x1b[24;1H"));
        assert_eq!(text.matches("48;2;255;0;0m").count(), 32);
        assert_eq!(text.matches("48;2;0;0;255m").count(), 32);
    }
}
