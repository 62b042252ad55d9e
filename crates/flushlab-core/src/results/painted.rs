//! What a terminal painted (`flushlab paint`, `flushlab tour --paint`), as plain data: a run's
//! figures ([`Painted`]), what was measured ([`PaintRun`]), and the table and CSV they are
//! shown as. The figures are made by `paint::analysis`; this room only holds and shows them.

use serde::{Deserialize, Serialize};

/// What a terminal painted of what it accepted, one run.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Painted {
    /// Frames written (accepted by the terminal: the writes returned), and per second.
    pub accepted_frames: u64,
    pub accepted_fps: f64,
    /// Frames seen whole or in part in the bottom marker, and per second.
    pub painted_frames: u64,
    pub painted_fps: f64,
    /// Accepted frames never seen painted.
    pub skipped_share: f64,
    /// Reads whose two markers named different frames, of the reads where both were readable.
    pub torn_share: f64,
    /// Repaints the observer read, and those where a marker was caught half painted.
    pub reads: u64,
    pub rejected_reads: u64,
    /// From the start of a frame's write(2) to the report of the repaint that first showed it.
    pub latency_p50_ms: Option<f64>,
    pub latency_p99_ms: Option<f64>,
    /// The observer's read round trip: paints shorter-lived than this can be missed.
    pub read_p50_ms: Option<f64>,
    pub read_p99_ms: Option<f64>,
    /// Self-checks that failed (none in a sound run), and warnings about the figures.
    pub failed_checks: Vec<String>,
    pub warnings: Vec<String>,
}

/// One run's painted figures, with what was measured: a row of `flushlab paint`, or a mode of
/// `flushlab tour --paint`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PaintRun {
    /// The terminal: as launched (`xterm`), or as the tour identified it.
    pub terminal: String,
    pub mode: crate::subject::Subject,
    pub sync: bool,
    pub cols: u16,
    pub rows: u16,
    /// Whether the window was read (`--no-observer`: not).
    pub observed: bool,
    /// The observer's CPU time (user + system) over its wall time: its share of a core.
    pub observer_cpu_share: f64,
    #[serde(flatten)]
    pub painted: Painted,
}

/// The results as a Markdown table: a row per terminal × mode × sync × size, each figure the
/// median of its runs with [min–max] where there were several.
pub fn markdown(runs: &[PaintRun]) -> String {
    use crate::results::statistics::Spread;
    use crate::units::{count, percent, printable};
    let mut text = String::from(
        "| terminal | mode | sync | size | runs | accepted fps | painted fps | skipped | torn | write→paint p50 | p99 | read p99 | observer CPU |\n|---|---|---|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|\n",
    );
    let groups = groups(runs);
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
        text.push_str(&format!(
            "| {} | {} | {} | {}x{} | {} | {} | {} | {} | {} | {} | {} | {} | {} |\n",
            printable(&first.terminal),
            printable(&first.mode.to_string()),
            if first.sync { "on" } else { "off" },
            first.cols,
            first.rows,
            group.len(),
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
        ));
    }
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

/// The runs grouped by what they measured (terminal, mode, sync, size, observed or not), in
/// the order they first came: a group's runs are the rounds of one row.
pub fn groups(runs: &[PaintRun]) -> Vec<Vec<&PaintRun>> {
    let key = |r: &PaintRun| {
        (
            r.terminal.clone(),
            r.mode.clone(),
            r.sync,
            r.cols,
            r.rows,
            r.observed,
        )
    };
    let mut groups: Vec<Vec<&PaintRun>> = Vec::new();
    for run in runs {
        match groups.iter_mut().find(|g| key(g[0]) == key(run)) {
            Some(group) => group.push(run),
            None => groups.push(vec![run]),
        }
    }
    groups
}

/// The runs as CSV, a line a run (RFC 4180; empty where a figure is unknown).
pub fn csv(runs: &[PaintRun]) -> String {
    use crate::results::export::csv_field;
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
        let text = csv(&[run("st", 28.0, true), run("a,\"b", 1.0, false)]);
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
        let text = markdown(&[
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
        assert!(
            rows[0].starts_with("| st | stdout/frame | off | 80x24 | 3 | 300 | 29 [28–30] |"),
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
