//! An SVG chart of painted frames: per terminal × mode × sync × size, the frames accepted a
//! second (light bar) and the frames painted (dark bar over it), medians of the runs, on a log
//! axis. Where the two bars differ, the terminal skipped frames.

use plotters::coord::ranged1d::SegmentValue;
use plotters::prelude::*;

use flushlab_core::results::painted::PaintRun;
use flushlab_core::statistics::median;

const ROW_HEIGHT: u32 = 30;
const ACCEPTED: RGBColor = RGBColor(170, 200, 235);
const PAINTED: RGBColor = RGBColor(40, 110, 200);

/// One bar pair: the label and the medians.
struct Bar {
    label: String,
    accepted: f64,
    painted: Option<f64>,
}

fn bars(runs: &[PaintRun]) -> Vec<Bar> {
    flushlab_core::results::painted::groups(runs)
        .iter()
        .map(|g| Bar {
            label: format!(
                "{} {} {}x{}{}",
                flushlab_core::units::printable(&g[0].terminal),
                g[0].mode,
                g[0].cols,
                g[0].rows,
                if g[0].sync { " sync" } else { "" }
            ),
            accepted: median(g.iter().map(|r| r.painted.accepted_fps)).unwrap_or(0.0),
            painted: g[0]
                .observed
                .then(|| median(g.iter().map(|r| r.painted.painted_fps)))
                .flatten(),
        })
        .collect()
}

/// The log axis: from below the slowest bar (half of it, a tenth of the top at most) to room
/// for the value labels right of the fastest.
fn axis(bars: &[Bar]) -> (f64, f64) {
    let max = bars.iter().map(|b| b.accepted).fold(1.0, f64::max) * 8.0;
    let start = bars
        .iter()
        .flat_map(|b| [Some(b.accepted), b.painted])
        .flatten()
        .filter(|v| *v > 0.0)
        .fold(max, f64::min)
        .min(max / 10.0)
        / 2.0;
    (start, max)
}

/// "painted of accepted", or the accepted rate alone where the run was not read.
fn value_label(bar: &Bar) -> String {
    match bar.painted {
        Some(p) => format!(
            "{} of {}",
            flushlab_core::units::count(p),
            flushlab_core::units::count(bar.accepted)
        ),
        None => format!("{} (not read)", flushlab_core::units::count(bar.accepted)),
    }
}

/// The chart as SVG text: pure.
pub fn svg(runs: &[PaintRun]) -> anyhow::Result<String> {
    let bars = bars(runs);
    anyhow::ensure!(!bars.is_empty(), "no runs to plot");
    let n = bars.len();
    let mut out = String::new();
    {
        let root = SVGBackend::with_string(&mut out, (1200, 110 + ROW_HEIGHT * n as u32))
            .into_drawing_area();
        root.fill(&WHITE)?;
        let (start, max) = axis(&bars);
        let label = |v: &SegmentValue<usize>| match v {
            // Row 0 at the top: the axis counts from the bottom.
            SegmentValue::CenterOf(i) | SegmentValue::Exact(i) => n
                .checked_sub(1 + *i)
                .and_then(|j| bars.get(j))
                .map_or_else(String::new, |b| b.label.clone()),
            SegmentValue::Last => String::new(),
        };
        let mut chart = ChartBuilder::on(&root)
            .caption(
                "frames accepted and painted a second (medians; log)",
                ("sans-serif", 18),
            )
            .margin(12)
            .x_label_area_size(30)
            .y_label_area_size(330)
            .build_cartesian_2d((start..max).log_scale(), (0..n).into_segmented())?;
        chart
            .configure_mesh()
            .disable_y_mesh()
            .y_labels(n)
            .y_label_formatter(&label)
            .x_label_formatter(&|v| flushlab_core::units::count(*v))
            .x_desc("frames/s")
            .draw()?;
        let y = |i: usize| n - 1 - i;
        let bar = |i: usize, value: f64, colour: RGBColor, inset: u32| {
            let mut bar = Rectangle::new(
                [
                    (start, SegmentValue::Exact(y(i))),
                    (value, SegmentValue::Exact(y(i) + 1)),
                ],
                colour.filled(),
            );
            bar.set_margin(inset, inset, 0, 0);
            bar
        };
        chart
            .draw_series(
                bars.iter()
                    .enumerate()
                    .map(|(i, b)| bar(i, b.accepted, ACCEPTED, 3)),
            )?
            .label("accepted")
            .legend(|(x, y)| Rectangle::new([(x, y - 5), (x + 10, y + 5)], ACCEPTED.filled()));
        chart
            .draw_series(
                bars.iter()
                    .enumerate()
                    .filter_map(|(i, b)| Some(bar(i, b.painted?, PAINTED, 9))),
            )?
            .label("painted")
            .legend(|(x, y)| Rectangle::new([(x, y - 5), (x + 10, y + 5)], PAINTED.filled()));
        chart.draw_series(bars.iter().enumerate().map(|(i, b)| {
            Text::new(
                value_label(b),
                (b.accepted * 1.15, SegmentValue::CenterOf(y(i))),
                ("sans-serif", 12),
            )
        }))?;
        chart
            .configure_series_labels()
            .position(SeriesLabelPosition::LowerRight)
            .background_style(WHITE.mix(0.85))
            .border_style(BLACK)
            .draw()?;
        root.present()?;
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    #[test]
    fn every_row_is_drawn_with_what_it_painted() {
        let results: super::super::PaintResults =
            serde_json::from_slice(&std::fs::read("docs/results/paint-200x60.json").unwrap())
                .unwrap();
        let svg = super::svg(&results.runs).unwrap();
        assert!(svg.starts_with("<svg"));
        // Eight rows (4 terminals × sync off/on), each labelled with painted of accepted.
        assert_eq!(svg.matches(" of ").count(), 8, "{svg}");
        assert!(svg.contains("kitty stdout/frame 200x60 sync"));
        assert!(super::svg(&[]).is_err());
    }
}
