use std::fmt::Write;

use super::{Exporter, or_dash};
use crate::bench::results::BenchResults;
use crate::hud::{bytes, count, percent};

/// The table a person reads, padded so that it reads as well in a terminal as rendered; the
/// bench prints the same to stdout.
pub struct MarkdownExporter;

const HEADER: [&str; 11] = [
    "mode",
    "size",
    "reader",
    "fps median [min–max]",
    "writes/frame",
    "bytes/frame",
    "bytes/write",
    "kernel",
    "peak RSS",
    "× ceiling",
    "× fastest",
];

impl Exporter for MarkdownExporter {
    fn serialize(&self, results: &BenchResults) -> anyhow::Result<Vec<u8>> {
        let ratio = |v: Option<f64>| or_dash(v, |r| format!("{r:.2}"));
        let rows: Vec<[String; 11]> = results
            .results
            .iter()
            .map(|row| {
                let failed = if row.failed_runs.is_empty() {
                    String::new()
                } else {
                    format!(" ({} failed)", row.failed_runs.len())
                };
                [
                    row.mode.clone(),
                    row.size.clone(),
                    row.reader.clone(),
                    row.fps.map_or_else(
                        || format!("failed{failed}"),
                        |f| format!("{:.1} [{:.1}–{:.1}]{failed}", f.median, f.min, f.max),
                    ),
                    or_dash(row.writes_per_frame, count),
                    or_dash(row.bytes_per_frame, bytes),
                    or_dash(row.bytes_per_write, |v| format!("{v:.1} B")),
                    or_dash(row.kernel_share, percent),
                    row.peak_rss_kib
                        .map_or_else(|| "–".into(), |k| bytes(k as f64 * 1024.0)),
                    ratio(row.ratio_to_ceiling),
                    ratio(row.ratio_to_fastest),
                ]
            })
            .collect();
        let widths: Vec<usize> = (0..HEADER.len())
            .map(|i| {
                rows.iter()
                    .map(|r| r[i].chars().count())
                    .chain([HEADER[i].chars().count()])
                    .max()
                    .unwrap_or(0)
            })
            .collect();
        let line = |cells: &[String]| {
            let padded: Vec<String> = cells
                .iter()
                .zip(&widths)
                .enumerate()
                .map(|(i, (c, w))| {
                    let pad = w - c.chars().count();
                    // Text left, numbers right.
                    if i < 3 {
                        format!("{c}{}", " ".repeat(pad))
                    } else {
                        format!("{}{c}", " ".repeat(pad))
                    }
                })
                .collect();
            format!("| {} |", padded.join(" | "))
        };
        let mut out = String::new();
        writeln!(out, "{}", line(&HEADER.map(String::from)))?;
        let rule: Vec<String> = widths
            .iter()
            .enumerate()
            .map(|(i, w)| {
                if i < 3 {
                    "-".repeat(w + 2)
                } else {
                    format!("{}:", "-".repeat(w + 1))
                }
            })
            .collect();
        writeln!(out, "|{}|", rule.join("|"))?;
        for row in &rows {
            writeln!(out, "{}", line(row))?;
        }
        let s = &results.settings;
        writeln!(
            out,
            "\n{} run(s) of {} s per row after {} warm-up, {} sink, scene {}, sync {}; flushlab {} on {} ({} cores, {}).",
            s.runs,
            s.duration_seconds,
            s.warmup,
            s.sink,
            s.scene,
            if s.sync { "on" } else { "off" },
            results.flushlab_version,
            results.machine.cpu_model,
            results.machine.cores,
            results.machine.kernel,
        )?;
        writeln!(out, "Command: `{}`", s.command)?;
        Ok(out.into_bytes())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn markdown_snapshot() {
        let bytes = MarkdownExporter
            .serialize(&crate::bench::export::fixture::results())
            .unwrap();
        insta::assert_snapshot!(String::from_utf8(bytes).unwrap());
    }
}
