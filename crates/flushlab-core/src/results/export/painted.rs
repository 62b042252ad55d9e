//! A painted run's table and CSV (`flushlab paint`, the tour's painted rows, `flushlab
//! report`): exporters of [`PaintRun`]s, as the bench's are of its rows.

use super::csv_field;
use super::table::{cell as markdown_cell, table};
use crate::results::painted::{PaintRun, groups};
use crate::statistics::Spread;
use crate::units::{count, percent, printable};

/// The results as a Markdown table: a row per terminal × mode × sync × size, each figure the
/// median of its runs with [min–max] where there were several.
pub fn painted_markdown(runs: &[PaintRun]) -> String {
    let header: Vec<String> = [
        "terminal",
        "mode",
        "sync",
        "size",
        "runs",
        "accepted fps",
        "painted fps",
        "skipped",
        "torn",
        "write→paint p50",
        "p99",
        "read p99",
        "observer CPU",
    ]
    .map(str::to_owned)
    .to_vec();
    let groups = groups(runs);
    let mut rows = Vec::new();
    for group in &groups {
        let first = group[0];
        let cell =
            |value: fn(&PaintRun) -> Option<f64>, show: &dyn Fn(f64) -> String| match Spread::of(
                group.iter().filter_map(|r| value(r)),
            ) {
                None => "–".to_owned(),
                Some(s) if group.len() == 1 || s.min == s.max => show(s.median),
                Some(s) => format!("{} [{}–{}]", show(s.median), show(s.min), show(s.max)),
            };
        let ms = |v: f64| format!("{v:.1} ms");
        let fps = |v: f64| count(v);
        let share = |v: f64| percent(v);
        rows.push(vec![
            markdown_cell(&printable(&first.terminal)),
            markdown_cell(&printable(&first.mode.to_string())),
            if first.sync { "on" } else { "off" }.to_owned(),
            format!("{}x{}", first.cols, first.rows),
            group.len().to_string(),
            cell(|r| Some(r.painted.accepted_fps), &fps),
            if first.observed {
                cell(|r| Some(r.painted.painted_fps), &fps)
            } else {
                "not read".to_owned()
            },
            cell(|r| r.observed.then_some(r.painted.skipped_share), &share),
            cell(|r| r.observed.then_some(r.painted.torn_share), &share),
            cell(|r| r.painted.latency_p50_ms, &ms),
            cell(|r| r.painted.latency_p99_ms, &ms),
            cell(|r| r.painted.read_p99_ms, &ms),
            cell(|r| Some(r.observer_cpu_share), &share),
        ]);
    }
    let mut text = table(&header, &rows, 4);
    for run in runs {
        for warning in &run.painted.warnings {
            text.push_str(&format!(
                "\n{} {}: {warning}\n",
                printable(&run.terminal),
                run.mode
            ));
        }
    }
    text
}

/// The runs as CSV, a line a run (RFC 4180; empty where a figure is unknown).
pub fn painted_csv(runs: &[PaintRun]) -> String {
    let mut text = String::from(
        "terminal,mode,sync,cols,rows,observed,accepted_frames,accepted_fps,painted_frames,painted_fps,skipped_share,torn_share,reads,rejected_reads,latency_p50_ms,latency_p99_ms,read_p50_ms,read_p99_ms,observer_cpu_share,failed_checks\n",
    );
    let opt = |v: Option<f64>| v.map_or(String::new(), |v| v.to_string());
    for r in runs {
        let p = &r.painted;
        let fields = [
            csv_field(&r.terminal),
            csv_field(&r.mode.to_string()),
            r.sync.to_string(),
            r.cols.to_string(),
            r.rows.to_string(),
            r.observed.to_string(),
            p.accepted_frames.to_string(),
            p.accepted_fps.to_string(),
            p.painted_frames.to_string(),
            p.painted_fps.to_string(),
            p.skipped_share.to_string(),
            p.torn_share.to_string(),
            p.reads.to_string(),
            p.rejected_reads.to_string(),
            opt(p.latency_p50_ms),
            opt(p.latency_p99_ms),
            opt(p.read_p50_ms),
            opt(p.read_p99_ms),
            r.observer_cpu_share.to_string(),
            csv_field(&p.failed_checks.join("; ")),
        ];
        text.push_str(&fields.join(","));
        text.push('\n');
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::results::painted::Painted;
    use crate::subject::Subject;
    use crate::writer_mode::{Buffering, Stream};

    fn run(terminal: &str, painted_fps: f64, observed: bool) -> PaintRun {
        PaintRun {
            terminal: terminal.to_owned(),
            mode: Subject::Mode(Stream::Stdout, Buffering::Frame),
            sync: false,
            cols: 80,
            rows: 24,
            observed,
            observer_cpu_share: 0.01,
            painted: Painted {
                accepted_fps: 300.0,
                painted_fps,
                ..Default::default()
            },
        }
    }

    #[test]
    fn csv_has_a_line_a_run_and_quotes_what_needs_it() {
        let text = painted_csv(&[run("st", 28.0, true), run("a,\"b", 1.0, false)]);
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 3);
        let columns = lines[0].split(',').count();
        assert_eq!(lines[1].split(',').count(), columns);
        assert!(
            lines[1].starts_with("st,stdout/frame,false,80,24,true,0,300,0,28,"),
            "{}",
            lines[1]
        );
        assert!(
            lines[2].starts_with("\"a,\"\"b\",stdout/frame"),
            "{}",
            lines[2]
        );
    }

    #[test]
    fn runs_of_one_row_are_a_median_and_their_spread() {
        let text = painted_markdown(&[
            run("st", 28.0, true),
            run("st", 30.0, true),
            run("st", 29.0, true),
            run("x\u{1b}[2J", 1.0, false),
        ]);
        let rows: Vec<&str> = text
            .lines()
            .filter(|l| l.starts_with("| ") && !l.starts_with("| terminal"))
            .collect();
        assert_eq!(rows.len(), 2, "{text}");
        let cells: Vec<&str> = rows[0].split('|').map(str::trim).collect();
        assert_eq!(
            cells[1..8],
            [
                "st",
                "stdout/frame",
                "off",
                "80x24",
                "3",
                "300",
                "29 [28–30]"
            ],
            "{}",
            rows[0]
        );
        // A run whose window was not read has no painted figures, and a name is never a command.
        assert!(
            rows[1].contains("not read") && !rows[1].contains('\u{1b}'),
            "{}",
            rows[1]
        );
    }
}
