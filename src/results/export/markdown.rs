use std::fmt::Write;

use super::{Exporter, or_dash};
use crate::results::BenchResults;
use crate::units::{bytes, count, percent};

/// The table a person reads, padded so that it reads as well in a terminal as rendered; the
/// bench prints the same to stdout.
pub struct MarkdownExporter;

/// Text columns (left-aligned) come first.
const TEXT_COLUMNS: usize = 4;

/// Rates below 1,000 with a decimal, above with thousands separators.
fn rate(v: f64) -> String {
    if v < 1000.0 {
        format!("{v:.1}")
    } else {
        count(v)
    }
}

impl Exporter for MarkdownExporter {
    fn serialize(&self, results: &BenchResults) -> anyhow::Result<Vec<u8>> {
        let ratio = |v: Option<f64>| or_dash(v, |r| format!("{r:.2}"));
        let unit = &results.settings.unit;
        let mut header: Vec<String> = vec![
            "mode".into(),
            "size".into(),
            "sink".into(),
            "reader".into(),
            format!("{unit}s/s median [min–max]"),
            format!("writes/{unit}"),
            format!("bytes/{unit}"),
            "bytes/write".into(),
            "kernel".into(),
            format!("CPU ms/{unit}"),
            "peak RSS".into(),
            "× ceiling".into(),
            "× fastest".into(),
        ];
        // Only a tour measures what the terminal confirmed it showed.
        let shown = results.results.iter().any(|r| r.shown_fps.is_some());
        if shown {
            header.insert(5, format!("shown {unit}s/s"));
        }
        let rows: Vec<Vec<String>> = results
            .results
            .iter()
            .map(|row| {
                let failed = if row.failed_runs.is_empty() {
                    String::new()
                } else {
                    format!(" ({} failed)", row.failed_runs.len())
                };
                let cells = [
                    results.name(row.subject),
                    row.size.clone(),
                    row.sink.clone(),
                    row.reader.clone(),
                    row.fps.map_or_else(
                        || format!("failed{failed}"),
                        |f| {
                            format!(
                                "{} [{}–{}]{failed}",
                                rate(f.median),
                                rate(f.min),
                                rate(f.max)
                            )
                        },
                    ),
                    or_dash(row.writes_per_frame, count),
                    or_dash(row.bytes_per_frame, bytes),
                    or_dash(row.bytes_per_write, |v| format!("{v:.1} B")),
                    or_dash(row.kernel_share, percent),
                    or_dash(row.cpu_ms_per_frame, |v| format!("{v:.3}")),
                    row.peak_rss_kib
                        .map_or_else(|| "–".into(), |k| bytes(k as f64 * 1024.0)),
                    ratio(row.ratio_to_ceiling),
                    ratio(row.ratio_to_fastest),
                ];
                let mut cells = cells.to_vec();
                if shown {
                    cells.insert(5, or_dash(row.shown_fps, rate));
                }
                cells
            })
            .collect();
        let widths: Vec<usize> = (0..header.len())
            .map(|i| {
                rows.iter()
                    .map(|r| r[i].chars().count())
                    .chain([header[i].chars().count()])
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
                    if i < TEXT_COLUMNS {
                        format!("{c}{}", " ".repeat(pad))
                    } else {
                        format!("{}{c}", " ".repeat(pad))
                    }
                })
                .collect();
            format!("| {} |", padded.join(" | "))
        };
        let mut out = String::new();
        writeln!(out, "{}", line(&header))?;
        let rule: Vec<String> = widths
            .iter()
            .enumerate()
            .map(|(i, w)| {
                if i < TEXT_COLUMNS {
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
        let alike = results.indistinguishable();
        if !alike.is_empty() {
            let names: Vec<String> = alike
                .iter()
                .map(|(a, b)| {
                    format!(
                        "{} ≈ {} ({})",
                        results.name(a.subject),
                        results.name(b.subject),
                        a.size
                    )
                })
                .collect();
            writeln!(
                out,
                "\nThe runs cannot tell these apart (their [min–max] overlap; no ratio between them means anything): {}.",
                names.join(", ")
            )?;
        }
        let s = &results.settings;
        writeln!(
            out,
            "\n{} workload: {} run(s) of {} s per row after {} warm-up{}; flushlab {} on {} ({} cores, {}).",
            s.workload,
            s.runs,
            s.duration_seconds,
            s.warmup,
            if s.workload == "tui" {
                format!(
                    ", scene {}, sync {}",
                    s.scene,
                    if s.sync { "on" } else { "off" }
                )
            } else {
                String::new()
            },
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
            .serialize(&crate::results::export::fixture::results())
            .unwrap();
        insta::assert_snapshot!(String::from_utf8(bytes).unwrap());
    }
}
