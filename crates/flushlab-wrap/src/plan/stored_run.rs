//! `--against FILE.json`: a run stored with `--export-json` as OLD — what a verdict reads of it,
//! read as every file others send is, and what differs between it and this run.

use std::path::Path;

use serde::Serialize;

use crate::plan::run_figures::RunFigures;
use flushlab_core::detect::keyed::Stage;

/// `--against FILE.json`: a stored run (one word naming a `.json` file), not a command.
pub fn stored_run(old: &[String]) -> Option<&Path> {
    match old {
        [one] if one.ends_with(".json") => Some(Path::new(one)),
        _ => None,
    }
}

/// A stored run (`wrap --export-json` of the old build): what a verdict reads of it, and what
/// it was measured under.
#[derive(Clone, Debug, Serialize)]
pub struct Baseline {
    pub path: String,
    pub version: String,
    pub machine: Option<String>,
    pub command: Vec<String>,
    pub size: (u16, u16),
    pub script: String,
    pub figures: RunFigures,
}

/// What is read of a stored run; the rest of its fields are left alone.
#[derive(serde::Deserialize)]
struct StoredRun {
    version: String,
    #[serde(default)]
    machine: Option<String>,
    command: Vec<String>,
    cols: u16,
    rows: u16,
    exit_code: Option<i32>,
    keys: Option<StoredKeys>,
}

#[derive(serde::Deserialize)]
struct StoredKeys {
    script: String,
    keys: u64,
    unanswered: u64,
    key_to_frame_ms: Option<flushlab_core::detect::keyed::Percentiles>,
    stages_ms: Option<flushlab_core::detect::keyed::StageSummary>,
    bytes_per_key: f64,
}

impl Baseline {
    /// The stored run at `path`, or why it is none: read as every file others send is (a
    /// regular file, 16 MiB at most), its texts escaped, its figures finite and not negative.
    pub fn load(path: &Path) -> Result<Baseline, String> {
        use flushlab_core::files::{InputKind, read_input};
        let bytes = read_input(path, InputKind::WrapRun).map_err(|e| e.to_string())?;
        if bytes.iter().all(u8::is_ascii_whitespace) {
            return Err("an empty file: a stored run is `flushlab wrap --export-json`'s".into());
        }
        let stored: StoredRun = flushlab_core::results::from_sent_json(&bytes).map_err(|e| {
            format!(
                "not a stored run (`flushlab wrap --keys … --export-json FILE` writes one): {e}"
            )
        })?;
        let keys = stored.keys.ok_or(
            "a run without keys: nothing to hold a key's time against (a run with --keys)",
        )?;
        let k2f = keys
            .key_to_frame_ms
            .ok_or("a run whose keys were never answered")?;
        // Every figure is one a run gives: from_sent_json checked each number's range.
        let stages: Vec<(Stage, f64)> = keys
            .stages_ms
            .map(|s| s.each().map(|(stage, p)| (stage, p.p50)).collect())
            .unwrap_or_default();
        Ok(Baseline {
            path: flushlab_core::units::one_line(&path.to_string_lossy()),
            version: stored.version,
            machine: stored.machine,
            command: stored.command,
            size: (stored.cols, stored.rows),
            script: keys.script,
            figures: RunFigures {
                key_to_frame_p50_ms: Some(k2f.p50),
                key_to_frame_p95_ms: Some(k2f.p95),
                stages_p50_ms: stages,
                answered: keys.keys.saturating_sub(keys.unanswered),
                keys: keys.keys,
                bytes_per_key: keys.bytes_per_key,
                exit_code: stored.exit_code,
                // What a stored run saw is not held against: its flashes are advice neither.
                flashed: None,
            },
        })
    }

    /// What differs between the stored run and this one's settings, in words.
    pub fn differences(&self, size: (u16, u16), script: &str) -> Vec<String> {
        let mut out = Vec::new();
        if self.version != env!("CARGO_PKG_VERSION") {
            out.push(format!(
                "flushlab {} stored it, {} runs now",
                self.version,
                env!("CARGO_PKG_VERSION")
            ));
        }
        let machine = flushlab_core::sys::process::cpu_model();
        if self.machine != machine {
            out.push(format!(
                "another machine ({} then, {} now)",
                self.machine.as_deref().unwrap_or("unnamed"),
                machine.as_deref().unwrap_or("unnamed")
            ));
        }
        if self.size != size {
            out.push(format!(
                "another size ({}x{} then, {}x{} now)",
                self.size.0, self.size.1, size.0, size.1
            ));
        }
        if self.script != script {
            out.push(format!(
                "other keys ('{}' then, '{}' now)",
                self.script,
                flushlab_core::units::one_line(script)
            ));
        }
        out
    }
}
