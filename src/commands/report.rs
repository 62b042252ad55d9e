//! `flushlab report`: merges the JSON of several tours (one per terminal) into one terminals ×
//! modes table and one chart. The results stay the bench format; this only rearranges them.

use std::path::PathBuf;

use anyhow::Context;
use clap::Args;

use crate::painting::PaintResults;
use flushlab_core::files::Destination;
use flushlab_core::outcome::{Outcome, Refusal, print};
use flushlab_core::results::conditions::Reader;
use flushlab_core::results::drawings::plot;
use flushlab_core::results::export::{markdown_cell, or_dash};
use flushlab_core::results::painted::PaintRun;
use flushlab_core::results::{BenchResults, TerminalIdentity};
use flushlab_core::subject::Subject;

const REPORTARGS_EXAMPLES: &str = "\
Examples:
  flushlab report xterm.json tmux.json --export-markdown terminals.md --plot terminals.svg
  flushlab report results.json --plot - > results.svg";

#[derive(Debug, Args)]
#[command(after_help = REPORTARGS_EXAMPLES)]
pub struct ReportArgs {
    /// Result files written by `flushlab tour --export-json`, `flushlab bench` or `flushlab
    /// paint`.
    #[arg(required = true, value_name = "JSON")]
    pub results: Vec<PathBuf>,

    /// Write the table here as well as to stdout.
    #[arg(long = "export-markdown", alias = "markdown", value_name = "FILE", value_parser = Destination::parse)]
    pub markdown: Option<Destination>,

    /// Write a chart of every row (grouped by terminal) as SVG (`-` = stdout, the table then
    /// on stderr).
    #[arg(long, value_name = "FILE.svg", value_parser = Destination::parse)]
    pub plot: Option<Destination>,
}

/// The name a result file's rows go by: the terminal's own answer, its $TERM_PROGRAM or $TERM,
/// or for a bench, its reader.
fn terminal_name(results: &BenchResults) -> String {
    results
        .terminal
        .as_ref()
        .and_then(TerminalIdentity::name)
        .or_else(|| {
            results
                .results
                .first()
                .map(|r| format!("{} {}", r.sink, r.reader))
        })
        .unwrap_or_else(|| "unknown".to_owned())
}

/// One line per terminal, one column per mode: accepted fps, and shown fps after a slash.
pub fn pivot(all: &[BenchResults]) -> String {
    use std::fmt::Write;
    // Each mode named as the first results that have it name it (a block row with its capacity).
    let mut modes: Vec<Subject> = Vec::new();
    let mut names: Vec<String> = Vec::new();
    for results in all {
        for row in &results.results {
            if !modes.contains(&row.subject) {
                modes.push(row.subject.clone());
                names.push(results.row_name(row));
            }
        }
    }
    let header: Vec<String> = ["terminal", "size", "sync output"]
        .into_iter()
        .map(str::to_owned)
        .chain(names.iter().map(|n| markdown_cell(n)))
        .collect();
    let mut rows = Vec::new();
    for results in all {
        let cells: Vec<String> = modes
            .iter()
            .map(
                |mode| match results.results.iter().find(|r| r.subject == *mode) {
                    Some(row) => format!(
                        "{} / {}",
                        or_dash(row.fps.map(|f| f.median), |v| format!("{v:.1}")),
                        or_dash(row.shown_fps, |v| format!("{v:.1}"))
                    ),
                    None => "–".to_owned(),
                },
            )
            .collect();
        let size = results
            .settings
            .sizes
            .iter()
            .map(ToString::to_string)
            .collect::<Vec<_>>()
            .join(",");
        let sync = results
            .terminal
            .as_ref()
            .map_or("–", |t| t.sync_output.name());
        let named = [
            markdown_cell(&terminal_name(results)),
            markdown_cell(&size),
            markdown_cell(sync),
        ];
        rows.push(named.into_iter().chain(cells).collect::<Vec<String>>());
    }
    let mut out = flushlab_core::results::export::markdown_table(&header, &rows, 3);
    let _ = writeln!(
        out,
        "\nCells: accepted fps / shown fps (confirmed by cursor-position round trips; – unknown)."
    );
    out
}

/// The report's flags checked before any file is read: one destination an output, each one
/// writable.
fn plan(args: &ReportArgs) -> Result<(), Refusal> {
    let outputs = [
        ("--export-markdown", &args.markdown),
        ("--plot", &args.plot),
    ];
    let destinations: Vec<&Destination> = outputs.iter().filter_map(|(_, d)| d.as_ref()).collect();
    flushlab_core::results::export::distinct_destinations(
        &destinations,
        "--export-markdown, --plot",
    )?;
    for (flag, destination) in outputs {
        if let Some(destination) = destination {
            destination
                .check()
                .map_err(|e| format!("{flag} '{destination}': {e}"))?;
        }
    }
    Ok(())
}

pub fn run(args: ReportArgs) -> anyhow::Result<Outcome> {
    if let Err(refusal) = plan(&args) {
        return Ok(refusal.of("report").tell());
    }
    let (all, painted) = read_results(&args.results)?;
    let table = table(&all, &painted);
    // Names come from files others send: no byte of them reaches the terminal as a command.
    let shown = flushlab_core::units::printable(&table);
    if [&args.markdown, &args.plot]
        .into_iter()
        .flatten()
        .any(Destination::is_stdout)
    {
        flushlab_core::outcome::print_aside(shown.as_bytes())?;
    } else {
        print(shown.as_bytes())?;
    }
    if let Some(destination) = &args.markdown {
        let bytes = if destination.is_stdout() {
            &shown
        } else {
            &table
        };
        destination
            .write(bytes.as_bytes())
            .with_context(|| format!("writing {destination}"))?;
    }
    if let Some(destination) = &args.plot {
        let svg = if all.is_empty() {
            // Only `flushlab paint` results: their own chart.
            crate::painting::plot::svg(&painted)?.into_bytes()
        } else {
            flushlab_core::results::export::Exporter::serialize(&plot::SvgPlot, &merged(&all))?
        };
        destination
            .write(&svg)
            .with_context(|| format!("writing {destination}"))?;
    }
    Ok(Outcome::Finished)
}

/// Tours' and benches' results, and every painted run (paint's files and tours' painted rows).
fn read_results(paths: &[PathBuf]) -> anyhow::Result<(Vec<BenchResults>, Vec<PaintRun>)> {
    let mut all = Vec::new();
    let mut painted = Vec::new();
    for path in paths {
        let bytes =
            flushlab_core::files::read_input(path, flushlab_core::files::InputKind::Results)
                .with_context(|| format!("reading {}", path.display()))?;
        match BenchResults::from_json(&bytes) {
            Ok(results) => {
                painted.extend(results.painted.iter().cloned());
                all.push(results);
            }
            Err(e) => match flushlab_core::results::from_sent_json::<PaintResults>(&bytes) {
                Ok(paint) => painted.extend(paint.runs),
                Err(_) => {
                    return Err(
                        e.context(format!("{} is not a flushlab result file", path.display()))
                    );
                }
            },
        }
    }
    Ok((all, painted))
}

/// The terminals × modes table, then the painted table.
fn table(all: &[BenchResults], painted: &[PaintRun]) -> String {
    let mut table = if all.is_empty() {
        String::new()
    } else {
        pivot(all)
    };
    if !painted.is_empty() {
        if !table.is_empty() {
            table.push_str("\nWhat the terminals painted (read from their windows):\n\n");
        }
        table.push_str(&flushlab_core::results::export::painted_markdown(painted));
    }
    table
}

/// Every row of every file as one result for one chart, each row named after its terminal.
fn merged(all: &[BenchResults]) -> BenchResults {
    let mut merged = all[0].clone();
    merged.results = all
        .iter()
        .flat_map(|r| {
            let terminal = r.terminal.as_ref().and_then(TerminalIdentity::name);
            r.results.iter().cloned().map(move |mut row| {
                // The terminal's name where it answered, else what the bench read with.
                if let Some(terminal) = &terminal {
                    row.reader = Reader::Terminal(terminal.clone());
                }
                row
            })
        })
        .collect();
    merged.settings.readers = Vec::new();
    for row in &merged.results {
        if !merged.settings.readers.contains(&row.reader) {
            merged.settings.readers.push(row.reader.clone());
        }
    }
    merged
}
