//! `--filmstrip FILE.svg|FILE.png`: one key's visible states in order, each with its time on
//! screen, between the screen before the key and the screen after it: the camera's pixels
//! where a camera watched, the model's cells elsewhere. People would rather look at a flicker
//! than read about it.

use flushlab_core::seen::states::{KeySeen, Kind, Window, cells, classify, painted_in};
use flushlab_core::seen::{PaintPolicy, Transcript};

use flushlab_terminals::camera::Film;

/// What one shot shows.
pub enum Picture {
    /// The window's pixels (0x00RRGGBB), `width` a row.
    Pixels { width: u32, pixels: Vec<u32> },
    /// The screen's rows as text, and its width in cells.
    Text { cols: u16, rows: Vec<String> },
}

/// One state on the strip, with what it was.
pub struct Shot {
    pub label: String,
    pub picture: Picture,
}

/// A key's states in order, and which key.
pub struct Filmstrip {
    pub title: String,
    pub shots: Vec<Shot>,
}

/// What a strip is made from.
pub enum Source<'a> {
    /// A camera's film of a terminal's window.
    Camera(&'a Film),
    /// The terminal model, under its policy and the run's size, over the bytes read.
    Model(PaintPolicy, (u16, u16), &'a Transcript),
}

/// The strip of the key `seen` picks ([`chosen_key`]): its window, from when it was sent to
/// when the next was; `what` names the run for the title. `None` without keys.
pub fn of_run(
    source: Source<'_>,
    (seen, keys): (
        &crate::report::seen_report::SeenReport,
        &[flushlab_core::detect::keyed::KeyAnswer],
    ),
    end_ns: u64,
    what: &str,
) -> Option<(Filmstrip, usize)> {
    let windows = crate::report::seen_report::windows(keys, end_ns);
    let index = chosen_key(&seen.keys)?;
    let window = *windows.get(index)?;
    let key = keys.iter().position(|k| k.sent_ns == window.from_ns)?;
    let title = format!(
        "{what} · key {} of {} ({}) · {}",
        key + 1,
        keys.len(),
        flushlab_core::units::printable(&keys[key].key),
        match &source {
            Source::Camera(_) => "the camera's grabs".to_owned(),
            Source::Model(policy, ..) => format!("a terminal that paints {policy}"),
        }
    );
    let strip = match source {
        Source::Camera(film) if !film.frames.is_empty() => {
            Filmstrip::of_film(film, film.width, window, title)
        }
        Source::Camera(_) => return None,
        Source::Model(policy, size, transcript) => {
            Filmstrip::of_model((policy, size), transcript, (window, end_ns), title)
        }
    };
    Some((strip, key))
}

/// The key to film: the one whose flash stayed longest, else whose tear did, else the first
/// with any visible state, else the first.
pub fn chosen_key(keys: &[KeySeen]) -> Option<usize> {
    let longest = |of: fn(&KeySeen) -> Option<f64>| {
        (0..keys.len())
            .filter(|&i| of(&keys[i]).is_some())
            .max_by(|&a, &b| {
                of(&keys[a])
                    .unwrap_or(0.0)
                    .total_cmp(&of(&keys[b]).unwrap_or(0.0))
            })
    };
    longest(|k| k.longest_flash_ms)
        .or_else(|| longest(|k| k.longest_tear_ms))
        .or_else(|| keys.iter().position(|k| !k.states.is_empty()))
        .or((!keys.is_empty()).then_some(0))
}

/// The shots of a window's frames: the first is S0 (at the window's start), the last S1, those
/// between in time order; each between that is a visible state gets its kind, when it came
/// after the key and how long it stayed (until the next frame).
fn shots<T: PartialEq>(
    frames: &[(u64, &[T])],
    from_ns: u64,
    picture: impl Fn(usize) -> Picture,
) -> Vec<Shot> {
    let (Some(first), Some(last)) = (frames.first(), frames.last()) else {
        return Vec::new();
    };
    let mut shots = vec![Shot {
        label: "before the key".to_owned(),
        picture: picture(0),
    }];
    for i in 1..frames.len().saturating_sub(1) {
        let (at, now) = (&frames[i].0, frames[i].1);
        let Some((kind, share)) = classify(now, first.1, last.1) else {
            continue;
        };
        let shown = frames[i + 1].0.saturating_sub(*at) as f64 / 1e6;
        let kind = match kind {
            Kind::Flash => "flash",
            Kind::Tear => "tear",
            Kind::Step => "step",
        };
        shots.push(Shot {
            label: format!(
                "{kind} +{:.1} ms, on screen {shown:.1} ms, {:.0}% not yet the answer",
                at.saturating_sub(from_ns) as f64 / 1e6,
                share * 100.0
            ),
            picture: picture(i),
        });
    }
    shots.push(Shot {
        label: "after the key (settled)".to_owned(),
        picture: picture(frames.len() - 1),
    });
    shots
}

impl Filmstrip {
    /// The camera's film of `window`: the grab showing at its start, every grab inside it, the
    /// grab showing at its end.
    pub fn of_film(film: &Film, width: u32, window: Window, title: String) -> Filmstrip {
        let showing = |at: u64| {
            film.frames
                .partition_point(|(t, _)| *t <= at)
                .saturating_sub(1)
        };
        let (first, last) = (showing(window.from_ns), showing(window.to_ns));
        let mut frames: Vec<(u64, &[u32])> = vec![(window.from_ns, &film.frames[first].1)];
        frames.extend(
            film.frames[first + 1..=last]
                .iter()
                .map(|(t, f)| (*t, &f[..])),
        );
        frames.push((window.to_ns, &film.frames[last].1));
        let shots = shots(&frames, window.from_ns, |i| match film.cells {
            // A browser's rows, as characters: drawn as text, as the model's are.
            true => Picture::Text {
                cols: u16::try_from(width).unwrap_or(u16::MAX),
                rows: frames[i]
                    .1
                    .chunks(width.max(1) as usize)
                    .map(|row| row.iter().filter_map(|&c| char::from_u32(c)).collect())
                    .collect(),
            },
            false => Picture::Pixels {
                width,
                pixels: frames[i].1.to_vec(),
            },
        });
        Filmstrip { title, shots }
    }

    /// The model's paints of `window` under `policy`.
    pub fn of_model(
        (policy, size): (PaintPolicy, (u16, u16)),
        transcript: &Transcript,
        (window, end_ns): (Window, u64),
        title: String,
    ) -> Filmstrip {
        let screens = painted_in(policy, size, transcript, window, end_ns);
        let mut frames: Vec<(u64, Vec<vt100::Cell>)> = Vec::with_capacity(screens.len());
        let mut texts: Vec<Vec<String>> = Vec::with_capacity(screens.len());
        for (i, (at, screen)) in screens.iter().enumerate() {
            let now = cells(screen);
            // A paint the same as the one before is no new state; S1 is kept as the last.
            if i + 1 < screens.len() && frames.last().is_some_and(|(_, last)| *last == now) {
                continue;
            }
            frames.push((*at, now));
            texts.push(screen.rows(0, size.0).collect());
        }
        let frames: Vec<(u64, &[vt100::Cell])> = frames.iter().map(|(t, f)| (*t, &f[..])).collect();
        let shots = shots(&frames, window.from_ns, |i| Picture::Text {
            cols: size.0,
            rows: texts[i].clone(),
        });
        Filmstrip { title, shots }
    }

    /// Each shot's size, and the strip's: the shots side by side, `gap` around each.
    fn layout(&self, gap: u32) -> (Vec<(u32, u32)>, u32, u32) {
        let sizes: Vec<(u32, u32)> = self
            .shots
            .iter()
            .map(|s| picture_size(&s.picture))
            .collect();
        let width = sizes.iter().map(|(w, _)| w + gap).sum::<u32>() + gap;
        let height = sizes.iter().map(|(_, h)| *h).max().unwrap_or(0) + 2 * gap;
        (sizes, width, height)
    }

    /// The strip as SVG: the shots side by side, each with its label; pixels as embedded PNG,
    /// text as text (escaped: nothing of CMD's output is markup).
    pub fn svg(&self) -> anyhow::Result<String> {
        const GAP: u32 = 16;
        const LABEL: u32 = 40;
        let (sizes, width, height) = self.layout(GAP);
        let height = height + LABEL;
        let mut out = format!(
            "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{width}\" height=\"{}\">\n\
             <rect width=\"100%\" height=\"100%\" fill=\"#fff\"/>\n\
             <text x=\"{GAP}\" y=\"20\" font-family=\"sans-serif\" font-size=\"14\">{}</text>\n",
            height + 24,
            escape(&self.title)
        );
        let mut x = GAP;
        for (shot, (w, h)) in self.shots.iter().zip(&sizes) {
            let top = 24 + LABEL;
            out += &format!(
                "<text x=\"{x}\" y=\"{}\" font-family=\"sans-serif\" font-size=\"12\">{}</text>\n",
                24 + LABEL - 8,
                escape(&shot.label)
            );
            out += &format!(
                "<rect x=\"{x}\" y=\"{top}\" width=\"{w}\" height=\"{h}\" fill=\"#000\"/>\n"
            );
            match &shot.picture {
                Picture::Pixels { width, pixels } => {
                    let png = png_of(*width, pixels)?;
                    out += &format!(
                        "<image x=\"{x}\" y=\"{top}\" width=\"{w}\" height=\"{h}\" href=\"data:image/png;base64,{}\"/>\n",
                        data_encoding::BASE64.encode(&png)
                    );
                }
                Picture::Text { rows, .. } => {
                    for (r, row) in rows.iter().enumerate() {
                        out += &format!(
                            "<text x=\"{x}\" y=\"{}\" font-family=\"monospace\" font-size=\"{TEXT_ROW}\" fill=\"#ddd\" xml:space=\"preserve\">{}</text>\n",
                            top + (r as u32 + 1) * TEXT_ROW,
                            escape(row)
                        );
                    }
                }
            }
            x += w + GAP;
        }
        out += "</svg>\n";
        Ok(out)
    }

    /// The strip as PNG: the shots side by side on black, text as a cell-sized block where a
    /// cell is not blank (no font is drawn: the SVG has the labels).
    pub fn png(&self) -> anyhow::Result<Vec<u8>> {
        const GAP: u32 = 8;
        let (sizes, width, height) = self.layout(GAP);
        let mut canvas = vec![0x0040_4040u32; (width * height) as usize];
        let mut x0 = GAP;
        for (shot, (w, h)) in self.shots.iter().zip(&sizes) {
            let pixel = |x: u32, y: u32| -> u32 {
                match &shot.picture {
                    Picture::Pixels { width, pixels } => pixels[(y * width + x) as usize],
                    Picture::Text { rows, .. } => {
                        let cell = rows
                            .get((y / TEXT_ROW) as usize)
                            .and_then(|r| r.chars().nth((x / TEXT_COL) as usize));
                        // A glyph's place: the cell less a margin, so that cells stay apart.
                        let inside = (1..TEXT_COL - 1).contains(&(x % TEXT_COL))
                            && (3..TEXT_ROW - 2).contains(&(y % TEXT_ROW));
                        match cell {
                            Some(c) if inside && !c.is_whitespace() => 0x00c0_c0c0,
                            _ => 0,
                        }
                    }
                }
            };
            for y in 0..*h {
                for x in 0..*w {
                    canvas[((y + GAP) * width + x0 + x) as usize] = pixel(x, y);
                }
            }
            x0 += w + GAP;
        }
        png_of(width, &canvas)
    }
}

/// A text shot's cell, in pixels.
const TEXT_ROW: u32 = 14;
const TEXT_COL: u32 = 8;

fn picture_size(picture: &Picture) -> (u32, u32) {
    match picture {
        Picture::Pixels { width, pixels } => (*width, pixels.len() as u32 / (*width).max(1)),
        Picture::Text { cols, rows } => (
            u32::from(*cols).max(1) * TEXT_COL,
            rows.len().max(1) as u32 * TEXT_ROW,
        ),
    }
}

/// 0x00RRGGBB pixels, `width` a row, as an RGB PNG.
fn png_of(width: u32, pixels: &[u32]) -> anyhow::Result<Vec<u8>> {
    let height = pixels.len() as u32 / width.max(1);
    let mut out = Vec::new();
    let mut encoder = png::Encoder::new(&mut out, width, height);
    encoder.set_color(png::ColorType::Rgb);
    encoder.set_depth(png::BitDepth::Eight);
    let rgb: Vec<u8> = pixels
        .iter()
        .flat_map(|p| [(p >> 16) as u8, (p >> 8) as u8, *p as u8])
        .collect();
    encoder.write_header()?.write_image_data(&rgb)?;
    Ok(out)
}

/// Text as SVG character data: markup escaped, control characters shown as `·`.
fn escape(text: &str) -> String {
    text.chars()
        .map(|c| match c {
            '&' => "&amp;".to_owned(),
            '<' => "&lt;".to_owned(),
            '>' => "&gt;".to_owned(),
            '"' => "&quot;".to_owned(),
            c if c.is_control() => "·".to_owned(),
            c => c.to_string(),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_strip_shows_the_blank_between_with_its_time_and_escapes_what_it_shows() {
        let row = |t: &str| Picture::Text {
            cols: 13,
            rows: vec![t.to_owned()],
        };
        let texts = [row("<old> & key 1"), row(""), row("<old> & key 2")];
        let frames: Vec<(u64, &[u8])> = vec![
            (100_000_000, b"ab"),
            (101_000_000, b"  "),
            (131_000_000, b"ac"),
        ];
        let strip = Filmstrip {
            title: "key 1 'a'".to_owned(),
            shots: shots(&frames, 100_000_000, |i| match &texts[i] {
                Picture::Text { cols, rows } => Picture::Text {
                    cols: *cols,
                    rows: rows.clone(),
                },
                Picture::Pixels { .. } => unreachable!(),
            }),
        };
        let labels: Vec<&str> = strip.shots.iter().map(|s| s.label.as_str()).collect();
        assert_eq!(
            labels,
            [
                "before the key",
                "flash +1.0 ms, on screen 30.0 ms, 100% not yet the answer",
                "after the key (settled)"
            ]
        );
        let svg = strip.svg().unwrap();
        assert!(svg.contains("&lt;old&gt; &amp; key 1"), "{svg}");
        assert!(!svg.contains("<old>"));
        let png = strip.png().unwrap();
        assert_eq!(&png[1..4], b"PNG");
    }

    #[test]
    fn the_key_filmed_is_the_one_whose_flash_stayed_longest() {
        let key = |flash: Option<f64>, tear: Option<f64>| KeySeen {
            longest_flash_ms: flash,
            longest_tear_ms: tear,
            ..KeySeen::default()
        };
        let keys = [
            key(None, Some(50.0)),
            key(Some(20.0), None),
            key(Some(30.0), None),
        ];
        assert_eq!(chosen_key(&keys), Some(2));
        assert_eq!(chosen_key(&keys[..1]), Some(0));
        assert_eq!(chosen_key(&[]), None);
    }
}
