//! A waterfall of a run's keys, for a room without a trace viewer: a row a key (the first at the
//! top), each from the moment it was sent, its stages as coloured bars on one time axis (input
//! delay, processing, emit, then drain), key→frame p50 and p95 as lines across, and the frames
//! nobody asked for as ticks in the row of the key they followed. `--compare` draws the program
//! as is and tried side by side on the same axis. Pure: the run in, SVG text out.

use plotters::coord::ranged1d::SegmentValue;
use plotters::prelude::*;

use crate::detect::keyed::{KeyAnswer, KeyLatencies, Stage};
use crate::detect::timeline::Timeline;
use crate::units::milliseconds;

const INPUT_DELAY: RGBColor = RGBColor(150, 150, 150);
const PROCESSING: RGBColor = RGBColor(60, 150, 80);
const PRESENTATION_DELAY: RGBColor = RGBColor(230, 200, 60);
const EMIT: RGBColor = RGBColor(220, 110, 40);
const DRAIN: RGBColor = RGBColor(130, 90, 190);
const PAINT: RGBColor = RGBColor(40, 120, 200);
/// A key whose frame is known from outside only: its time, not its stages.
const WHOLE: RGBColor = RGBColor(40, 110, 200);
const P95: RGBColor = RGBColor(200, 30, 30);

/// Rows this tall at most (a few keys) and at least (hundreds).
const ROW_MAX: u32 = 24;
const ROW_MIN: u32 = 3;
/// Rows labelled at most: beyond, every few.
const LABELS: usize = 40;

/// One run's keys, to draw.
#[derive(Clone, Debug)]
pub struct Panel<'a> {
    /// What the run was (`as is`, `tried`).
    pub title: String,
    pub keys: &'a KeyLatencies,
    /// The unprompted frames: (the key they followed, their end in ms after it was sent).
    pub unprompted: Vec<(usize, f64)>,
}

impl Panel<'_> {
    /// The panel of a run: its keys' figures and, from its timeline, the frames that answered
    /// no key after the first was sent.
    pub fn of<'a>(title: String, timeline: &Timeline, keys: &'a KeyLatencies) -> Panel<'a> {
        let bursts = timeline.inside.as_ref().map_or(&[][..], |i| &i.bursts[..]);
        let sent: Vec<u64> = timeline.keys.iter().map(|k| k.at_ns).collect();
        let unprompted = bursts
            .iter()
            .enumerate()
            .filter(|(i, _)| !keys.each.iter().any(|k| k.burst == Some(*i)))
            .filter_map(|(_, b)| {
                let after = sent
                    .partition_point(|&at| at <= b.first_write_ns)
                    .checked_sub(1)?;
                Some((after, (b.end_ns - sent[after]) as f64 / 1e6))
            })
            .collect();
        Panel {
            title,
            keys,
            unprompted,
        }
    }

    /// Where a key's row ends: its frame and its drain.
    fn extent(&self) -> f64 {
        self.keys
            .each
            .iter()
            .filter_map(|k| {
                let drain = k.stages_ms.and_then(|s| s.drain).unwrap_or(0.0);
                Some(k.frame_ms? + drain)
            })
            .fold(0.0, f64::max)
    }
}

/// The waterfall as SVG text: `title` above, the panels side by side on one time axis.
pub fn waterfall_svg(title: &str, panels: &[Panel]) -> anyhow::Result<String> {
    anyhow::ensure!(
        panels.iter().any(|p| !p.keys.each.is_empty()),
        "no keys to draw"
    );
    let rows = panels.iter().map(|p| p.keys.each.len()).max().unwrap_or(0);
    let row = (900 / rows.max(1) as u32).clamp(ROW_MIN, ROW_MAX);
    let (width, height) = (1000 * panels.len() as u32 + 200, 200 + row * rows as u32);
    let axis = panels
        .iter()
        .map(|p| {
            let p95 = p.keys.key_to_frame_ms.map_or(0.0, |k| k.p95);
            p.extent().max(p95)
        })
        .fold(0.0, f64::max)
        .max(0.1)
        * 1.08;
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (width, height)).into_drawing_area();
        root.fill(&WHITE)?;
        let root = root.titled(title, ("sans-serif", 22))?;
        let (body, legend) = root.split_vertically(height - 100);
        let mut areas = vec![body];
        for _ in 1..panels.len() {
            let last = areas.pop().expect("one area at least");
            let x = last.dim_in_pixel().0 / 2;
            let (a, b) = last.split_horizontally(x);
            areas.extend([a, b]);
        }
        for (panel, area) in panels.iter().zip(&areas) {
            draw_panel(panel, area, axis, rows)?;
        }
        draw_legend(&legend, panels, axis)?;
        root.present()?;
    }
    Ok(svg)
}

fn draw_panel<DB: DrawingBackend>(
    panel: &Panel,
    area: &DrawingArea<DB, plotters::coord::Shift>,
    axis: f64,
    rows: usize,
) -> anyhow::Result<()>
where
    DB::ErrorType: 'static,
{
    let label = |v: &SegmentValue<usize>| row_label(&panel.keys.each, rows, v);
    let mut chart = ChartBuilder::on(area)
        .caption(&panel.title, ("sans-serif", 20))
        .margin(12)
        // Room for half the last tick's label, centred on the axis's end ("60.0 ms" at 16 px):
        // with 12 it ran past the picture's edge whenever a tick fell at the end.
        .margin_right(44)
        .x_label_area_size(40)
        .y_label_area_size(110)
        .build_cartesian_2d(0.0..axis, (0..rows).into_segmented())?;
    chart
        .configure_mesh()
        .disable_y_mesh()
        .y_labels(rows.min(LABELS))
        .y_label_formatter(&label)
        .x_label_formatter(&|v| milliseconds(*v))
        .x_desc("after the key was sent")
        .label_style(("sans-serif", 16))
        .draw()?;
    let y = |i: usize| rows - 1 - i;
    let bar = |i: usize, from: f64, to: f64, colour: RGBColor| {
        let mut r = Rectangle::new(
            [
                (from, SegmentValue::Exact(y(i))),
                (to, SegmentValue::Exact(y(i) + 1)),
            ],
            colour.filled(),
        );
        let margin = if rows > 100 { 0 } else { 2 };
        r.set_margin(margin, margin, 0, 0);
        r
    };
    let bars = key_bars(&panel.keys.each).map(|(i, from, to, colour)| bar(i, from, to, colour));
    chart.draw_series(bars)?;
    // The frames nobody asked for: a short black tick in the row of the key they followed.
    chart.draw_series(
        panel
            .unprompted
            .iter()
            .filter(|(_, at)| *at <= axis)
            .map(|&(i, at)| {
                PathElement::new(
                    vec![
                        (at, SegmentValue::Exact(y(i))),
                        (at, SegmentValue::Exact(y(i) + 1)),
                    ],
                    BLACK.stroke_width(2),
                )
            }),
    )?;
    if let Some(p) = panel.keys.key_to_frame_ms {
        for (name, ms, colour) in [("p50", p.p50, BLACK), ("p95", p.p95, P95)] {
            chart.draw_series(std::iter::once(PathElement::new(
                vec![
                    (ms, SegmentValue::Exact(0)),
                    (ms, SegmentValue::Exact(rows)),
                ],
                colour.stroke_width(2),
            )))?;
            // Above the rows, p95's label a line below p50's (they can sit close together),
            // on the line's left where the right edge is near.
            let text = format!("key→frame {name} {}", milliseconds(ms));
            let dy = if name == "p50" { 2 } else { 22 };
            let dx = if ms > 0.6 * axis {
                -6 - 9 * text.chars().count() as i32
            } else {
                6
            };
            chart.draw_series(std::iter::once(
                EmptyElement::at((ms, SegmentValue::Exact(rows)))
                    + Text::new(
                        text,
                        (dx, dy),
                        ("sans-serif", 17).into_font().color(&colour),
                    ),
            ))?;
        }
    }
    Ok(())
}

/// A row's label: the key's number and name, on every row or every few (at most [`LABELS`]).
fn row_label(keys: &[KeyAnswer], rows: usize, v: &SegmentValue<usize>) -> String {
    let step = rows.div_ceil(LABELS).max(1);
    match v {
        SegmentValue::CenterOf(i) | SegmentValue::Exact(i) if *i < rows => {
            let k = rows - 1 - i;
            match keys.get(k) {
                Some(key) if k.is_multiple_of(step) => format!("{} {}", k + 1, key.key),
                _ => String::new(),
            }
        }
        _ => String::new(),
    }
}

/// Each key's bars: (its row, from, to in ms after it was sent, colour): its stages in order,
/// or its whole time where its frame is known from outside only.
fn key_bars(keys: &[KeyAnswer]) -> impl Iterator<Item = (usize, f64, f64, RGBColor)> + '_ {
    keys.iter().enumerate().flat_map(|(i, k)| {
        let ms = move |ns: u64| (ns - k.sent_ns) as f64 / 1e6;
        let spans = k.stage_spans();
        let bars: Vec<(usize, f64, f64, RGBColor)> = if spans.is_empty() {
            k.frame_ms
                .map(|whole| (i, 0.0, whole, WHOLE))
                .into_iter()
                .collect()
        } else {
            spans
                .into_iter()
                .map(|(stage, from, to)| (i, ms(from), ms(to), colour_of(stage)))
                .collect()
        };
        bars
    })
}

/// A stage's colour.
fn colour_of(stage: Stage) -> RGBColor {
    match stage {
        Stage::InputDelay => INPUT_DELAY,
        Stage::Processing => PROCESSING,
        Stage::PresentationDelay => PRESENTATION_DELAY,
        Stage::Emit => EMIT,
        Stage::Drain => DRAIN,
        Stage::Paint => PAINT,
    }
}

/// The stages' colours, each with its p50 in every panel, and what a tick is.
fn draw_legend<DB: DrawingBackend>(
    area: &DrawingArea<DB, plotters::coord::Shift>,
    panels: &[Panel],
    axis: f64,
) -> anyhow::Result<()>
where
    DB::ErrorType: 'static,
{
    let font: TextStyle = ("sans-serif", 17).into_font().color(&BLACK);
    let mut x = 20;
    // Paint only where a real terminal was watched: a headless run has none to name.
    let painted = panels
        .iter()
        .any(|p| p.keys.stages_ms.is_some_and(|s| s.paint.is_some()));
    // Presentation delay only where a key waited for the program's tick.
    let ticked = panels.iter().any(|p| {
        p.keys
            .stages_ms
            .is_some_and(|s| s.presentation_delay.is_some())
    });
    for stage in Stage::ALL
        .into_iter()
        .filter(|&s| painted || s != Stage::Paint)
        .filter(|&s| ticked || s != Stage::PresentationDelay)
    {
        let colour = colour_of(stage);
        let figures: Vec<String> = panels
            .iter()
            .filter_map(|p| {
                let (_, pct) = p.keys.stages_ms?.each().find(|(s, _)| *s == stage)?;
                Some(milliseconds(pct.p50))
            })
            .collect();
        area.draw(&Rectangle::new([(x, 10), (x + 18, 28)], colour.filled()))?;
        let text = if figures.is_empty() {
            stage.name().to_owned()
        } else {
            format!("{} p50 {}", stage.name(), figures.join(" → "))
        };
        area.draw_text(&text, &font, (x + 24, 12))?;
        x += 24 + 10 * text.chars().count() as i32 + 30;
    }
    let unprompted: usize = panels.iter().map(|p| p.unprompted.len()).sum();
    let beyond: usize = panels
        .iter()
        .map(|p| p.unprompted.iter().filter(|(_, at)| *at > axis).count())
        .sum();
    let mut notes = Vec::new();
    if panels.len() > 1 {
        let sides: Vec<&str> = panels.iter().map(|p| p.title.as_str()).collect();
        notes.push(format!("p50s: {}", sides.join(" → ")));
    }
    notes.push(format!(
        "| a frame nobody asked for: {unprompted} ({beyond} later than the axis shows)"
    ));
    if panels.iter().any(|p| {
        p.keys
            .each
            .iter()
            .any(|k| k.stages_ms.is_none() && k.frame_ms.is_some())
    }) {
        notes.push("blue: key→frame seen from outside (no stages)".to_owned());
    }
    area.draw_text(&notes.join(" · "), &font, (20, 42))?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::detect::keyed::key_latencies;
    use crate::detect::timeline::{Burst, Inside, SentKey, TerminalRead};

    const MS: u64 = 1_000_000;

    /// Two keys 100 ms apart, each read 1 ms after it was sent and answered by a frame begun
    /// 2 ms later and written in 3 ms; a clock's frame 50 ms after the first.
    fn run() -> Timeline {
        let burst = |first: u64, end: u64| Burst {
            pid: 1,
            tid: 1,
            first_write_ns: first * MS,
            end_ns: end * MS,
            writes: 10,
            bytes: 100,
            continues: false,
        };
        Timeline {
            keys: [0, 100]
                .map(|at| SentKey {
                    at: std::time::Instant::now(),
                    at_ns: at * MS,
                    key: "<Down>".into(),
                    bytes: 0,
                })
                .to_vec(),
            inside: Some(Inside {
                reads: [1, 101]
                    .map(|end| TerminalRead {
                        pid: 1,
                        tid: 1,
                        end_ns: end * MS,
                        bytes: 3,
                    })
                    .to_vec(),
                bursts: vec![burst(3, 6), burst(48, 50), burst(103, 106)],
                ..Inside::default()
            }),
            end_ns: 200 * MS,
            ..Timeline::default()
        }
    }

    #[test]
    fn each_key_is_its_stages_end_to_end_and_unprompted_frames_follow_their_key() {
        let timeline = run();
        let keys = key_latencies(&timeline);
        let bars: Vec<(usize, f64, f64)> = key_bars(&keys.each)
            .map(|(i, from, to, _)| (i, from, to))
            .collect();
        // Input delay, processing, emit (no drain known: wrap read nothing).
        assert_eq!(
            bars,
            [
                (0, 0.0, 1.0),
                (0, 1.0, 3.0),
                (0, 3.0, 6.0),
                (1, 0.0, 1.0),
                (1, 1.0, 3.0),
                (1, 3.0, 6.0)
            ]
        );
        let panel = Panel::of("as is".into(), &timeline, &keys);
        assert_eq!(panel.unprompted, [(0, 50.0)]);
        assert_eq!(panel.extent(), 6.0);
    }

    #[test]
    fn the_chart_names_the_figures_and_escapes_what_it_is_given() {
        let timeline = run();
        let keys = key_latencies(&timeline);
        let panel = Panel::of("as is".into(), &timeline, &keys);
        let svg = waterfall_svg("prog <&> 'x'", &[panel]).unwrap();
        assert!(svg.contains("key→frame p50 6.00 ms"), "{svg}");
        assert!(svg.contains("processing p50 2.00 ms"));
        assert!(svg.contains("1 &lt;Down&gt;") && svg.contains("prog &lt;&amp;&gt;"));
        let empty = KeyLatencies {
            each: Vec::new(),
            ..keys.clone()
        };
        let nothing = Panel::of(String::new(), &Timeline::default(), &empty);
        assert!(waterfall_svg("t", &[nothing]).is_err());
    }
}
