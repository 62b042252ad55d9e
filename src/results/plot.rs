//! An SVG chart of the results: FPS per row (median bar, min–max whisker) beside write(2) calls
//! per frame on a log axis, one horizontal bar per row so that long mode names stay readable.

use std::path::Path;

use plotters::coord::ranged1d::SegmentValue;
use plotters::prelude::*;

use super::BenchResults;
use crate::subject::Subject;

const ROW_HEIGHT: u32 = 26;
const CEILING: RGBColor = RGBColor(150, 150, 150);
const STDOUT: RGBColor = RGBColor(40, 110, 200);
const STDERR: RGBColor = RGBColor(220, 110, 40);

/// Writes the chart to `path` (see [`crate::files::write_atomically`]).
pub fn write_svg(results: &BenchResults, path: &Path) -> anyhow::Result<()> {
    let svg = svg(results)?;
    crate::files::write_atomically(path, svg.as_bytes())?;
    Ok(())
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
    let root = SVGBackend::with_string(out, (1400, height)).into_drawing_area();
    root.fill(&WHITE)?;
    let settings = &results.settings;
    let title = format!(
        "flushlab bench · {} workload · {} · sink {} · reader {} · {} run(s) × {} s",
        settings.workload,
        settings.sizes.join(", "),
        settings.sinks.join(", "),
        settings.readers.join(", "),
        settings.runs,
        settings.duration_seconds
    );
    let unit = &settings.unit;
    let root = root.titled(&title, ("sans-serif", 20))?;
    let (left, right) = root.split_horizontally(800);
    let label = |v: &SegmentValue<usize>| match v {
        SegmentValue::CenterOf(i) | SegmentValue::Exact(i) => {
            rows.get(*i).map_or_else(String::new, |r| {
                format!("{} {}", results.name(r.subject), r.size)
            })
        }
        SegmentValue::Last => String::new(),
    };
    let color = |subject: Subject| match subject.family() {
        "ceiling" => CEILING,
        "stderr" => STDERR,
        _ => STDOUT,
    };
    // Row 0 at the top.
    let y = |i: usize| n - 1 - i;

    let max_fps = rows
        .iter()
        .filter_map(|r| r.fps.map(|f| f.max))
        .fold(1.0, f64::max)
        * 1.1;
    let mut fps = ChartBuilder::on(&left)
        .caption(
            format!("{unit}s per second (median, min–max)"),
            ("sans-serif", 16),
        )
        .margin(10)
        .x_label_area_size(30)
        .y_label_area_size(300)
        .build_cartesian_2d(0.0..max_fps, (0..n).into_segmented())?;
    fps.configure_mesh()
        .disable_y_mesh()
        .y_labels(n)
        .y_label_formatter(&|v| label(&flip(v, n)))
        .x_desc(format!("{unit}s/s"))
        .draw()?;
    fps.draw_series(rows.iter().enumerate().filter_map(|(i, r)| {
        let f = r.fps?;
        let mut bar = Rectangle::new(
            [
                (0.0, SegmentValue::Exact(y(i))),
                (f.median, SegmentValue::Exact(y(i) + 1)),
            ],
            color(r.subject).filled(),
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

    let max_writes = rows
        .iter()
        .filter_map(|r| r.writes_per_frame)
        .fold(10.0, f64::max)
        * 2.0;
    let mut writes = ChartBuilder::on(&right)
        .caption(
            format!("write(2) calls per {unit} (log)"),
            ("sans-serif", 16),
        )
        .margin(10)
        .x_label_area_size(30)
        .y_label_area_size(10)
        .build_cartesian_2d((0.5..max_writes).log_scale(), (0..n).into_segmented())?;
    writes
        .configure_mesh()
        .disable_y_mesh()
        .y_labels(n)
        .y_label_formatter(&|_| String::new())
        .x_desc(format!("writes/{unit}"))
        .draw()?;
    writes.draw_series(rows.iter().enumerate().filter_map(|(i, r)| {
        let w = r.writes_per_frame.filter(|w| *w >= 0.5)?;
        let mut bar = Rectangle::new(
            [
                (0.5, SegmentValue::Exact(y(i))),
                (w, SegmentValue::Exact(y(i) + 1)),
            ],
            color(r.subject).filled(),
        );
        bar.set_margin(4, 4, 0, 0);
        Some(bar)
    }))?;
    root.present()?;
    Ok(())
}

/// The axis counts from the bottom; rows are listed from the top.
fn flip(v: &SegmentValue<usize>, n: usize) -> SegmentValue<usize> {
    match v {
        SegmentValue::CenterOf(i) if *i < n => SegmentValue::CenterOf(n - 1 - i),
        SegmentValue::Exact(i) if *i < n => SegmentValue::Exact(n - 1 - i),
        _ => SegmentValue::Last,
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
    }
}
