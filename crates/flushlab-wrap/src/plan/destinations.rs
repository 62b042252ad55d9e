//! The files wrap writes (`--export-json`, `--trace`, `--plot`, `--filmstrip`,
//! `--export-markdown`): each checked writable before anything runs, as the identity that will
//! write it, distinct from the others and named for what it holds.

use flushlab_core::files::Destination;
use flushlab_core::outcome::Refusal;

/// The files (or stdout) wrap writes.
#[derive(Clone, Debug, Default)]
pub struct Outputs {
    /// `--export-json`.
    pub report: Option<Destination>,
    pub trace: Option<Destination>,
    pub plot: Option<Destination>,
    /// `--filmstrip`: SVG, or PNG where the file is named so.
    pub filmstrip: Option<Destination>,
    /// `--export-markdown` (`--against`).
    pub markdown: Option<Destination>,
}

impl Outputs {
    /// Each with its flag.
    fn each(&self) -> impl Iterator<Item = (&'static str, &Destination)> {
        [
            ("--export-json", &self.report),
            ("--trace", &self.trace),
            ("--plot", &self.plot),
            ("--filmstrip", &self.filmstrip),
            ("--export-markdown", &self.markdown),
        ]
        .into_iter()
        .filter_map(|(flag, d)| Some((flag, d.as_ref()?)))
    }
}

/// The outputs, each writable (checked as the person under sudo where `as_them`), distinct
/// from the others and named for what it holds.
pub fn checked(outputs: Outputs, as_them: bool) -> Result<Outputs, Refusal> {
    check_outputs(&outputs, as_them)?;
    if let Some(plot) = &outputs.plot {
        plot.check_named_for("svg")
            .map_err(|e| format!("wrap: --plot {e}"))?;
    }
    if let Some(strip) = &outputs.filmstrip
        && strip.check_named_for("svg").is_err()
        && strip.check_named_for("png").is_err()
    {
        return Err(format!(
            "wrap: --filmstrip '{}': name it FILE.svg or FILE.png (or - for SVG on stdout)",
            flushlab_core::units::printable(&strip.to_string())
        )
        .into());
    }
    let destinations: Vec<&Destination> = outputs.each().map(|(_, d)| d).collect();
    flushlab_core::results::export::distinct_destinations(
        &destinations,
        "--export-json, --trace, --plot, --filmstrip, --export-markdown",
    )
    .map_err(|e| format!("wrap: {e}"))?;
    Ok(outputs)
}

/// Every output writable, checked before anything runs as the identity that will write it:
/// under sudo wrap becomes the person who ran it before it writes (running.rs) unless it keeps
/// root (`as_them` false: `--as-root`, a wire, a terminal), so their outputs are checked as
/// them, or a run would be measured only to be lost.
fn check_outputs(outputs: &Outputs, as_them: bool) -> Result<(), Refusal> {
    let writer = as_them
        .then(flushlab_core::sys::user::sudo_invoker)
        .flatten();
    for (flag, destination) in outputs.each() {
        let checked = match &writer {
            Some(them) => them
                .as_them(|| destination.check())
                .and_then(|checked| checked)
                .map_err(|e| format!("{e} (as {}, whom wrap writes as under sudo)", them.name)),
            None => destination.check().map_err(|e| e.to_string()),
        };
        checked.map_err(|e| format!("wrap: {flag} '{destination}': {e}"))?;
    }
    Ok(())
}
