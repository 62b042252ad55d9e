//! An SVG chart of the results: FPS per row (median bar, min–max whisker) beside write(2) calls
//! per frame on a log axis, one horizontal bar per row so that long mode names stay readable.

use plotters::coord::ranged1d::SegmentValue;
use plotters::prelude::*;

use crate::results::BenchResults;
use crate::results::conditions::{Unit, Workload};
use crate::subject::Subject;

const ROW_HEIGHT: u32 = 26;
const CEILING: RGBColor = RGBColor(150, 150, 150);
const STDOUT: RGBColor = RGBColor(40, 110, 200);
const STDERR: RGBColor = RGBColor(220, 110, 40);

/// The chart as an exporter, so that it goes where any export goes.
pub struct SvgPlot;

impl crate::results::export::Exporter for SvgPlot {
    fn serialize(&self, results: &BenchResults) -> anyhow::Result<Vec<u8>> {
        Ok(svg(results)?.into_bytes())
    }
}

/// The chart as SVG text: pure, like the exporters.
pub fn svg(results: &BenchResults) -> anyhow::Result<String> {
    let mut svg = String::new();
    draw(results, &mut svg)?;
    Ok(svg)
}

fn draw(results: &BenchResults, out: &mut String) -> anyhow::Result<()> {
    let rows = &results.results;
    anyhow::ensure!(!rows.is_empty(), "no results to plot");
    let n = rows.len();
    let height = 120 + ROW_HEIGHT * n as u32;
    let with_split = rows.iter().any(|r| r.time_split.is_some());
    let width = if with_split { 1900 } else { 1400 };
    let root = SVGBackend::with_string(out, (width, height)).into_drawing_area();
    root.fill(&WHITE)?;
    let settings = &results.settings;
    let mut parts = vec![
        "flushlab".to_owned(),
        format!("{} workload", settings.workload),
    ];
    // A log line has no terminal size.
    if settings.unit != Unit::Line {
        parts.push(few(&settings.sizes, "size"));
    }
    parts.push(few(&settings.sinks, "sink"));
    // A tour's rows are read by the terminal it ran in.
    let reader = if settings.workload == Workload::Tour {
        "terminal"
    } else {
        "reader"
    };
    parts.push(few(&settings.readers, reader));
    parts.push(format!(
        "{} run(s) × {} s",
        settings.runs, settings.duration_seconds
    ));
    let title = parts.join(" · ");
    let root = root.titled(&title, ("sans-serif", 20))?;
    let (left, right) = root.split_horizontally(800);
    let (right, split_area) = right.split_horizontally(600);
    // Every row named by all that tells it apart: its size, sink and reader where they vary.
    let first = rows.first();
    let varies = |differ: fn(&crate::results::Row, &crate::results::Row) -> bool| {
        first.is_some_and(|f| rows.iter().any(|r| differ(r, f)))
    };
    let (sizes, readers, sinks) = (
        varies(|a, b| a.size != b.size),
        varies(|a, b| a.reader != b.reader),
        varies(|a, b| a.sink != b.sink),
    );
    let label = |v: &SegmentValue<usize>| match v {
        SegmentValue::CenterOf(i) | SegmentValue::Exact(i) => {
            rows.get(*i).map_or_else(String::new, |r| {
                let mut label = results.row_name(r);
                if sizes {
                    label += &format!(" {}", r.size);
                }
                if sinks {
                    label += &format!(" {}", r.sink);
                }
                if readers {
                    label += &format!(" {}", r.reader);
                }
                label
            })
        }
        SegmentValue::Last => String::new(),
    };
    draw_fps(results, &left, &label)?;
    draw_writes(results, &right)?;
    if with_split {
        draw_split(results, &split_area)?;
    }
    root.present()?;
    Ok(())
}

/// A row's bar colour: its stream's, or grey for a ceiling.
fn colour(subject: &Subject) -> RGBColor {
    colour_of(subject.family())
}

fn colour_of(family: &str) -> RGBColor {
    match family {
        "ceiling" => CEILING,
        "stderr" => STDERR,
        _ => STDOUT,
    }
}

/// Row 0 at the top: the axis counts from the bottom.
fn from_top(i: usize, n: usize) -> usize {
    n - 1 - i
}

/// The fps axis: from below the slowest row's minimum (a decade at least) to room on the
/// right of the fastest's maximum for the labels and the legend.
fn fps_axis(rows: &[crate::results::Row]) -> (f64, f64) {
    let spreads = || rows.iter().filter_map(|r| r.fps);
    let max = spreads().map(|f| f.max).fold(1.0, f64::max) * 12.0;
    let min = spreads()
        .map(|f| f.min)
        .filter(|m| *m > 0.0)
        .fold(max, f64::min)
        / 2.0;
    (min.min(max / 10.0), max)
}

/// The kinds of row there are (modes, ceilings, floods, commands), in the rows' order.
fn families(rows: &[crate::results::Row]) -> Vec<&'static str> {
    let mut families = Vec::new();
    for row in rows {
        if !families.contains(&row.subject.family()) {
            families.push(row.subject.family());
        }
    }
    families
}

/// Frames (or lines) a second, median bar and min–max whisker, on a log axis that starts
/// below the slowest row (a raw stderr's 2 fps beside 2,000 stays visible), each bar labelled
/// with its median; the rows named by `label`.
fn draw_fps<DB: DrawingBackend>(
    results: &BenchResults,
    area: &DrawingArea<DB, plotters::coord::Shift>,
    label: &dyn Fn(&SegmentValue<usize>) -> String,
) -> anyhow::Result<()>
where
    DB::ErrorType: 'static,
{
    let rows = &results.results;
    let n = rows.len();
    let unit = &results.settings.unit;
    let (start, max) = fps_axis(rows);
    let mut fps = ChartBuilder::on(area)
        .caption(
            format!("{unit}s per second (median, min–max; log)"),
            ("sans-serif", 16),
        )
        .margin(10)
        .x_label_area_size(30)
        .y_label_area_size(300)
        .build_cartesian_2d((start..max).log_scale(), (0..n).into_segmented())?;
    fps.configure_mesh()
        .disable_y_mesh()
        .y_labels(n)
        .y_label_formatter(&|v| label(&flip(v, n)))
        .x_label_formatter(&|v| crate::units::count(*v))
        .x_desc(format!("{unit}s/s"))
        .draw()?;
    let y = |i: usize| from_top(i, n);
    fps.draw_series(rows.iter().enumerate().filter_map(|(i, r)| {
        let f = r.fps?;
        let mut bar = Rectangle::new(
            [
                (start, SegmentValue::Exact(y(i))),
                (f.median, SegmentValue::Exact(y(i) + 1)),
            ],
            colour(&r.subject).filled(),
        );
        bar.set_margin(4, 4, 0, 0);
        Some(bar)
    }))?;
    fps.draw_series(rows.iter().enumerate().filter_map(|(i, r)| {
        let f = r.fps?;
        Some(PathElement::new(
            vec![
                (f.min, SegmentValue::CenterOf(y(i))),
                (f.max, SegmentValue::CenterOf(y(i))),
            ],
            BLACK.stroke_width(2),
        ))
    }))?;
    fps.draw_series(rows.iter().enumerate().filter_map(|(i, r)| {
        let f = r.fps?;
        Some(Text::new(
            crate::units::count(f.median),
            (f.max * 1.15, SegmentValue::CenterOf(y(i))),
            ("sans-serif", 12),
        ))
    }))?;
    // What the colours mean, for the kinds of row there are.
    for family in families(rows) {
        let fill = colour_of(family);
        fps.draw_series(std::iter::empty::<Rectangle<(f64, SegmentValue<usize>)>>())?
            .label(family)
            .legend(move |(x, y)| Rectangle::new([(x, y - 5), (x + 10, y + 5)], fill.filled()));
    }
    fps.configure_series_labels()
        .position(SeriesLabelPosition::LowerRight)
        .background_style(WHITE.mix(0.85))
        .border_style(BLACK)
        .draw()?;
    Ok(())
}

/// write(2) calls a frame (or line), log axis from 0.01 (a BufWriter's share of a call a
/// line), each bar labelled.
fn draw_writes<DB: DrawingBackend>(
    results: &BenchResults,
    area: &DrawingArea<DB, plotters::coord::Shift>,
) -> anyhow::Result<()>
where
    DB::ErrorType: 'static,
{
    let rows = &results.results;
    let n = rows.len();
    let unit = &results.settings.unit;
    let least = rows
        .iter()
        .filter_map(|r| r.writes_per_frame)
        .filter(|w| *w > 0.0)
        .fold(0.5, f64::min)
        / 2.0;
    let most = rows
        .iter()
        .filter_map(|r| r.writes_per_frame)
        .fold(10.0, f64::max)
        * 4.0;
    let mut writes = ChartBuilder::on(area)
        .caption(
            format!("write(2) calls per {unit} (log)"),
            ("sans-serif", 16),
        )
        .margin(10)
        .x_label_area_size(30)
        .y_label_area_size(10)
        .build_cartesian_2d((least..most).log_scale(), (0..n).into_segmented())?;
    writes
        .configure_mesh()
        .disable_y_mesh()
        .y_labels(n)
        .y_label_formatter(&|_| String::new())
        .x_label_formatter(&|v| crate::units::count(*v))
        .x_desc(format!("writes/{unit}"))
        .draw()?;
    let y = |i: usize| from_top(i, n);
    writes.draw_series(rows.iter().enumerate().filter_map(|(i, r)| {
        let w = r.writes_per_frame.filter(|w| *w > 0.0)?;
        let mut bar = Rectangle::new(
            [
                (least, SegmentValue::Exact(y(i))),
                (w, SegmentValue::Exact(y(i) + 1)),
            ],
            colour(&r.subject).filled(),
        );
        bar.set_margin(4, 4, 0, 0);
        Some(bar)
    }))?;
    writes.draw_series(rows.iter().enumerate().filter_map(|(i, r)| {
        let w = r.writes_per_frame.filter(|w| *w > 0.0)?;
        Some(Text::new(
            crate::units::count(w),
            (w * 1.2, SegmentValue::CenterOf(y(i))),
            ("sans-serif", 12),
        ))
    }))?;
    Ok(())
}

/// RGB of the time split's parts, in [`crate::figures::TimeSplit::parts`]'s order: the HUD's
/// colours.
const SPLIT: [RGBColor; 6] = [
    RGBColor(90, 140, 255),
    RGBColor(0, 170, 190),
    RGBColor(230, 90, 90),
    RGBColor(180, 60, 180),
    RGBColor(230, 175, 0),
    RGBColor(170, 170, 170),
];

/// Each row's frame (or log line) as one bar of 100%, in the split's parts (the painting
/// thread's), with its wall time beside it: where the time goes, whatever the row's speed.
fn draw_split<DB: DrawingBackend>(
    results: &BenchResults,
    area: &DrawingArea<DB, plotters::coord::Shift>,
) -> anyhow::Result<()>
where
    DB::ErrorType: 'static,
{
    let rows = &results.results;
    let n = rows.len();
    let y = |i: usize| from_top(i, n);
    let unit = results.settings.unit;
    let mut chart = ChartBuilder::on(area)
        .caption(
            format!("where a {unit}'s time goes (share; its wall time at the end)"),
            ("sans-serif", 16),
        )
        .margin(10)
        .x_label_area_size(30)
        .y_label_area_size(10)
        .build_cartesian_2d(0.0..1.7f64, (0..n).into_segmented())?;
    chart
        .configure_mesh()
        .disable_y_mesh()
        .y_labels(n)
        .y_label_formatter(&|_| String::new())
        .x_labels(6)
        .x_label_formatter(&|v| {
            if *v <= 1.0 {
                format!("{:.0}%", v * 100.0)
            } else {
                String::new()
            }
        })
        .draw()?;
    let names = crate::figures::TimeSplit::default().parts();
    for (part, (name, _)) in names.iter().enumerate() {
        let colour = SPLIT[part];
        chart
            .draw_series(rows.iter().enumerate().filter_map(|(i, r)| {
                let (from, to) = span(r.time_split?, part)?;
                let mut bar = Rectangle::new(
                    [
                        (from, SegmentValue::Exact(y(i))),
                        (to, SegmentValue::Exact(y(i) + 1)),
                    ],
                    colour.filled(),
                );
                bar.set_margin(4, 4, 0, 0);
                Some(bar)
            }))?
            .label(*name)
            .legend(move |(x, y)| Rectangle::new([(x, y - 5), (x + 10, y + 5)], colour.filled()));
    }
    chart.draw_series(rows.iter().enumerate().filter_map(|(i, r)| {
        Some(Text::new(
            wall_time(unit, r.time_split?.total_ms()),
            (1.02, SegmentValue::CenterOf(y(i))),
            ("sans-serif", 13),
        ))
    }))?;
    chart
        .configure_series_labels()
        .position(SeriesLabelPosition::UpperRight)
        .background_style(WHITE.mix(0.85))
        .border_style(BLACK)
        .draw()?;
    Ok(())
}

/// Where part `part` of a time split lies, as shares of its total: (from, to).
fn span(split: crate::figures::TimeSplit, part: usize) -> Option<(f64, f64)> {
    let parts = split.parts();
    let total = split.total_ms();
    if total <= 0.0 {
        return None;
    }
    let from: f64 = parts[..part].iter().map(|p| p.1).sum::<f64>() / total;
    Some((from, from + parts[part].1 / total))
}

/// A unit's wall time: a frame's in ms, a log line's in the unit of its size (ns or µs).
fn wall_time(unit: crate::results::conditions::Unit, total_ms: f64) -> String {
    match unit {
        crate::results::conditions::Unit::Frame => crate::units::milliseconds(total_ms),
        crate::results::conditions::Unit::Line => {
            crate::units::nanoseconds((total_ms * 1e6).round() as u64)
        }
    }
}

/// The axis counts from the bottom; rows are listed from the top.
fn flip(v: &SegmentValue<usize>, n: usize) -> SegmentValue<usize> {
    match v {
        SegmentValue::CenterOf(i) if *i < n => SegmentValue::CenterOf(n - 1 - i),
        SegmentValue::Exact(i) if *i < n => SegmentValue::Exact(n - 1 - i),
        _ => SegmentValue::Last,
    }
}

/// A title's list that fits: more than three of a kind are counted (each row names its own).
fn few<T: std::fmt::Display>(items: &[T], what: &str) -> String {
    match items.len() {
        0..=3 => {
            let names: Vec<String> = items.iter().map(ToString::to_string).collect();
            format!("{what} {}", names.join(", "))
        }
        n => format!("{n} {what}s"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plots_every_row() {
        let results = crate::results::export::fixture::results();
        let svg = svg(&results).unwrap();
        for row in &results.results {
            assert!(
                svg.contains(&row.subject.to_string()),
                "{} missing",
                row.subject
            );
        }
        assert!(svg.starts_with("<svg"));
        // The time split's panel: its legend, and each row's frame time.
        for (name, _) in crate::figures::TimeSplit::default().parts() {
            assert!(svg.contains(name), "{name} missing from the legend");
        }
        let thread = results
            .results
            .iter()
            .find(|r| r.subject.to_string() == "stdout/thread");
        let total = thread.and_then(|r| r.time_split).unwrap().total_ms();
        assert!(svg.contains(&crate::units::milliseconds(total)));
    }
}
