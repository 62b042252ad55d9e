//! What a wrap writes besides its summary: the JSON (`--export-json`), the trace (`--trace`),
//! the keys' waterfall (`--plot`), a key's filmstrip (`--filmstrip`), the line that says what
//! `--profile` recorded, a plot's title.

use anyhow::Context;

use crate::plan::Plan;
use crate::report::wrap_report::WrapReport;
use flushlab_core::detect::timeline::Timeline;
use flushlab_core::files::Destination;
use flushlab_core::outcome::complain;
use flushlab_core::results::drawings::waterfall::{Panel, waterfall_svg};

/// `--export-json`, then `--trace`: the run's report, and its timeline (with a terminal's
/// window changes) as trace-event JSON. Before the summary: a summary written to a terminal
/// that stopped reading would wait forever.
pub(crate) fn write_report_and_trace(
    plan: &Plan,
    report: &impl serde::Serialize,
    timeline: &Timeline,
    keys: Option<&flushlab_core::detect::keyed::KeyLatencies>,
) -> anyhow::Result<()> {
    if let Some(destination) = &plan.outputs.report {
        destination
            .write_json(report)
            .with_context(|| format!("writing the report to {destination}"))?;
    }
    let Some(destination) = &plan.outputs.trace else {
        return Ok(());
    };
    let trace = flushlab_core::results::drawings::trace::trace_json(
        &flushlab_core::results::drawings::trace::TraceRun {
            timeline,
            keys,
            command: &plan.cmd.line(),
            wrap_pid: std::process::id(),
        },
    )?;
    destination
        .write(&trace)
        .with_context(|| format!("writing the trace to {destination}"))
}

/// `--plot`: the keys' waterfall written to `destination` (a run without keys to draw is said,
/// and draws nothing).
pub(crate) fn draw_keys(
    destination: &Destination,
    title: &str,
    panels: &[Panel],
) -> anyhow::Result<()> {
    match waterfall_svg(title, panels) {
        Ok(svg) => destination
            .write(svg.as_bytes())
            .with_context(|| format!("writing the plot to {destination}")),
        Err(e) => {
            complain(&format!("wrap: --plot '{destination}': {e}; nothing drawn"));
            Ok(())
        }
    }
}

/// What `--profile` gave, in a line.
pub(crate) fn profile_line(
    recorded: &crate::run::profiling::Recorded,
    file: Option<&std::path::Path>,
) -> Option<String> {
    let file = flushlab_core::units::printable(&file?.to_string_lossy());
    Some(if recorded.saved {
        let lost = match recorded.handed.checked_sub(recorded.markers) {
            Some(0) | None => String::new(),
            Some(lost) => format!(
                " ({lost} more handed to samply are not in the file: their lines came after \
                 it read them)"
            ),
        };
        format!(
            "wrap --profile: {file} written by samply, {} key(s) marked on the thread that drew them{lost} (`samply load {file}` opens it; `flushlab profile {file}` reads it by key)",
            recorded.markers
        )
    } else {
        format!(
            "wrap: --profile '{file}': samply recorded nothing: {}",
            recorded.said
        )
    })
}

/// A waterfall's title: CMD, the terminal's size, the keys.
pub(crate) fn plot_title(command: &str, report: &WrapReport) -> String {
    let keys = report.keys.as_ref().map_or(0, |k| k.sent);
    format!(
        "flushlab wrap · {command} · {}x{} · {keys} keys",
        report.cols, report.rows
    )
}

/// `--filmstrip`: the strip written as its file is named (PNG for `.png`, else SVG), and the
/// line that says what it shows; empty without the flag.
pub(crate) fn write_filmstrip(
    plan: &Plan,
    strip: Option<&crate::report::filmstrip::Filmstrip>,
) -> anyhow::Result<String> {
    let Some(destination) = &plan.outputs.filmstrip else {
        return Ok(String::new());
    };
    let shown = flushlab_core::units::printable(&destination.to_string());
    let Some(strip) = strip else {
        return Ok(format!(
            "\n  filmstrip: nothing to film (no camera on this terminal, or no key drew): {shown} \
             not written"
        ));
    };
    let png = destination
        .file()
        .and_then(std::path::Path::extension)
        .is_some_and(|e| e.eq_ignore_ascii_case("png"));
    let bytes = match png {
        true => strip.png()?,
        false => strip.svg()?.into_bytes(),
    };
    destination
        .write(&bytes)
        .with_context(|| format!("writing the filmstrip to {destination}"))?;
    Ok(format!(
        "\n  filmstrip: {}: {} state(s) between the screen before the key and after it → {shown}",
        flushlab_core::units::printable(&strip.title),
        strip.shots.len().saturating_sub(2),
    ))
}
