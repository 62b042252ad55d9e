use std::fmt::Write;

use super::Exporter;
use crate::detect::keyed::Stage;
use crate::results::BenchResults;
use crate::results::conditions::Unit;

/// One line per row, summary figures only (the raw runs are in the JSON).
pub struct CsvExporter;

/// The columns of a frame's results; a log line's say `lines_per_second` and `_per_line` (as
/// the flood's JSON does). The time split is in ms a frame or a line either way.
const HEADER: &str = "mode,size,reader,sink,fps_median,fps_min,fps_max,writes_per_frame,bytes_per_frame,bytes_per_write,kernel_share,peak_rss_kib,ratio_to_ceiling,ratio_to_fastest,runs,failed_runs,bytes_per_second,writes_per_second,cpu_ms_per_frame,build_ms,encode_ms,kernel_ms,cpu_wait_ms,reader_wait_ms,idle_ms,writer_on_cpu_ms,writer_cpu_wait_ms,writer_frame_wait_ms,writer_reader_wait_ms,p50_ns,p99_ns,key_to_frame_p50_ms,key_to_frame_p95_ms,input_delay_p50_ms,processing_p50_ms,emit_p50_ms,drain_p50_ms";

fn header(unit: Unit) -> String {
    match unit {
        Unit::Frame => HEADER.to_owned(),
        Unit::Line => HEADER
            .replace("fps_", "lines_per_second_")
            .replace("_per_frame", "_per_line"),
    }
}

impl Exporter for CsvExporter {
    fn serialize(&self, results: &BenchResults) -> anyhow::Result<Vec<u8>> {
        let mut out = header(results.settings.unit);
        out.push('\n');
        let num = |v: Option<f64>| v.map_or_else(String::new, |v| format!("{v}"));
        for row in &results.results {
            let fields = [
                field(&results.row_name(row)),
                field(&row.size.to_string()),
                field(&row.reader.to_string()),
                field(row.sink.name()),
                num(row.fps.map(|f| f.median)),
                num(row.fps.map(|f| f.min)),
                num(row.fps.map(|f| f.max)),
                num(row.writes_per_frame),
                num(row.bytes_per_frame),
                num(row.bytes_per_write),
                num(row.kernel_share),
                row.peak_rss_kib.map_or_else(String::new, |v| v.to_string()),
                num(row.ratio_to_ceiling),
                num(row.ratio_to_fastest),
                row.runs.len().to_string(),
                row.failed_runs.len().to_string(),
                // Only for another program's rows whose frames are unknown.
                num(row.per_second.map(|p| p.bytes_per_second)),
                num(row.per_second.and_then(|p| p.writes_per_second)),
                num(row.cpu_ms_per_frame),
            ]
            .into_iter()
            // Where a frame's time went, in TimeSplit::parts' order.
            .chain((0..6).map(|i| num(row.time_split.map(|s| s.parts()[i].1))))
            // The writer thread's, in WriterSplit::parts' order (thread modes only).
            .chain((0..4).map(|i| {
                num(row
                    .time_split
                    .and_then(|s| s.writer)
                    .map(|w| w.parts()[i].1))
            }))
            // A flood's latency (median of the runs' p50 and p99), where it was timed.
            .chain([
                num(row.latency_ns().map(|l| l.0)),
                num(row.latency_ns().map(|l| l.1)),
            ])
            // A keyed program's time from a key to its frame (`--command … --keys`).
            .chain([
                num(row.key_to_frame_ms().map(|k| k.0)),
                num(row.key_to_frame_ms().map(|k| k.1)),
            ])
            // And its stages' p50s, each where it was seen.
            .chain(
                [
                    Stage::InputDelay,
                    Stage::Processing,
                    Stage::Emit,
                    Stage::Drain,
                ]
                .map(|stage| {
                    num(row
                        .key_stages_p50_ms()
                        .and_then(|s| s.iter().find(|x| x.0 == stage).map(|x| x.1)))
                }),
            )
            .collect::<Vec<_>>();
            writeln!(out, "{}", fields.join(","))?;
        }
        Ok(out.into_bytes())
    }
}

/// Quotes a text field when it holds a comma, quote or line break (RFC 4180).
pub fn field(text: &str) -> String {
    if text.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", text.replace('"', "\"\""))
    } else {
        text.to_owned()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn csv_snapshot() {
        let bytes = CsvExporter
            .serialize(&crate::results::export::fixture::results())
            .unwrap();
        insta::assert_snapshot!(String::from_utf8(bytes).unwrap());
    }

    #[test]
    fn a_flood_speaks_of_lines() {
        let mut results = crate::results::export::fixture::results();
        results.settings.unit = Unit::Line;
        let text = String::from_utf8(CsvExporter.serialize(&results).unwrap()).unwrap();
        let header = text.lines().next().unwrap();
        assert!(header.contains("lines_per_second_median,"), "{header}");
        assert!(header.contains(",writes_per_line,") && header.contains(",cpu_ms_per_line,"));
        assert!(
            !header.contains("_per_frame") && !header.contains("fps"),
            "{header}"
        );
        let columns = header.split(',').count();
        assert!(
            text.lines().all(|l| l.split(',').count() == columns),
            "{text}"
        );
    }

    #[test]
    fn quotes_fields_that_need_it() {
        assert_eq!(field("throttle:20MB/s"), "throttle:20MB/s");
        assert_eq!(field("a,b"), "\"a,b\"");
        assert_eq!(field("say \"hi\""), "\"say \"\"hi\"\"\"");
    }
}
