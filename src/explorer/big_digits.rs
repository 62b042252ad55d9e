//! Figures three rows tall, for the lesson: a frame rate read from the back of a room, where a
//! terminal's one-row digits are a blur. Digits, `,` and `.`; block characters every font has.

/// Rows a big figure takes.
pub const ROWS: usize = 3;

/// One character's three rows, all of one width.
fn glyph(c: char) -> Option<[&'static str; ROWS]> {
    Some(match c {
        '0' => ["█▀█", "█ █", "▀▀▀"],
        '1' => ["▀█ ", " █ ", "▀▀▀"],
        '2' => ["▀▀█", "█▀▀", "▀▀▀"],
        '3' => ["▀▀█", " ▀█", "▀▀▀"],
        '4' => ["█ █", "▀▀█", "  ▀"],
        '5' => ["█▀▀", "▀▀█", "▀▀▀"],
        '6' => ["█▀▀", "█▀█", "▀▀▀"],
        '7' => ["▀▀█", "  █", "  ▀"],
        '8' => ["█▀█", "█▀█", "▀▀▀"],
        '9' => ["█▀█", "▀▀█", "▀▀▀"],
        ',' => [" ", " ", "▞"],
        '.' => [" ", " ", "▀"],
        _ => return None,
    })
}

/// `text`'s big rows (characters with no glyph are left out), a column between characters.
pub fn rows(text: &str) -> [String; ROWS] {
    let glyphs: Vec<[&str; ROWS]> = text.chars().filter_map(glyph).collect();
    std::array::from_fn(|row| glyphs.iter().map(|g| g[row]).collect::<Vec<_>>().join(" "))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_figure_is_three_even_rows() {
        let [top, middle, bottom] = rows("1,204.5");
        assert_eq!(top, "▀█    ▀▀█ █▀█ █ █   █▀▀");
        assert_eq!(middle, " █    █▀▀ █ █ ▀▀█   ▀▀█");
        assert_eq!(bottom, "▀▀▀ ▞ ▀▀▀ ▀▀▀   ▀ ▀ ▀▀▀");
        let width = top.chars().count();
        assert!(
            [&middle, &bottom]
                .iter()
                .all(|r| r.chars().count() == width)
        );
        // Every digit is drawn, and each differently.
        let digits: Vec<[String; ROWS]> = ('0'..='9').map(|d| rows(&d.to_string())).collect();
        for (i, a) in digits.iter().enumerate() {
            for b in &digits[i + 1..] {
                assert_ne!(a, b);
            }
        }
        assert_eq!(rows("fps"), rows(""));
    }
}
