//! What a person saw of each key's answer, from the terminal model (`crate::seen`) fed the
//! bytes wrap read: the report's `seen` part and its line in the summary.

use serde::Serialize;

use crate::detect::keyed::KeyAnswer;
use crate::units::{milliseconds, thousands};
use flushlab_core::seen::states::{KeySeen, Window, see};
use flushlab_core::seen::{PaintPolicy, Transcript};

/// The `seen` part of the `--report` JSON.
#[derive(Clone, Debug, Serialize)]
pub struct SeenReport {
    /// The paint policy the model used (`--paint`).
    pub policy: String,
    /// Keys whose answer showed at least one flash (or tear) for a 60 Hz refresh or longer.
    pub keys_flashed: u64,
    pub keys_torn: u64,
    /// Of the keys that flashed: their longest flash, p50, in ms.
    pub flash_p50_ms: Option<f64>,
    /// Lines copied into the scrollback, over all keys.
    pub scrollback_churn: u64,
    /// The share of the keys' bytes inside synchronized-output blocks (either form).
    pub sync_share: Option<f64>,
    /// The share of those that the policy held its paints for (blocks of a form it honours).
    pub sync_honoured_share: Option<f64>,
    /// Paints the model made, and the CPU time it took after the run, in ms.
    pub paints: u64,
    pub model_ms: f64,
    /// Bytes past the transcript's limit, not modelled (their keys' states are missing).
    pub cut_bytes: u64,
    pub keys: Vec<KeySeen>,
}

impl SeenReport {
    /// The model's report of a run, where there is a model (`--paint`), a transcript and keys.
    pub fn of_run(
        policy: Option<PaintPolicy>,
        (size, transcript): ((u16, u16), Option<Transcript>),
        (keys, end_ns): (Option<&[KeyAnswer]>, u64),
    ) -> Option<SeenReport> {
        Some(SeenReport::of(policy?, size, &transcript?, (keys?, end_ns)))
    }

    /// The model run over `transcript` with a window a key, from its send to the next key's
    /// (the last key's to `end_ns`).
    pub fn of(
        policy: PaintPolicy,
        size: (u16, u16),
        transcript: &Transcript,
        (keys, end_ns): (&[KeyAnswer], u64),
    ) -> SeenReport {
        let windows: Vec<Window> = keys
            .iter()
            .enumerate()
            .map(|(i, key)| Window {
                from_ns: key.sent_ns,
                to_ns: keys.get(i + 1).map_or(end_ns, |next| next.sent_ns),
            })
            .filter(|w| w.from_ns < w.to_ns)
            .collect();
        let cpu = crate::sys::thread_cpu_ns();
        let (seen, paints) = see(policy, size, transcript, &windows, end_ns);
        let model_ms = crate::sys::thread_cpu_ns().saturating_sub(cpu) as f64 / 1e6;
        let mut flashes: Vec<f64> = seen.iter().filter_map(|k| k.longest_flash_ms).collect();
        flashes.sort_by(f64::total_cmp);
        let (bytes, in_blocks, held) = seen.iter().fold((0, 0, 0), |(b, i, h), k| {
            (b + k.bytes, i + k.bytes_in_blocks, h + k.bytes_held)
        });
        SeenReport {
            policy: policy.to_string(),
            keys_flashed: seen.iter().filter(|k| k.flashes > 0).count() as u64,
            keys_torn: seen.iter().filter(|k| k.tears > 0).count() as u64,
            flash_p50_ms: (!flashes.is_empty())
                .then(|| crate::statistics::percentile(&flashes, 0.5)),
            scrollback_churn: seen.iter().map(|k| k.scrollback_churn).sum(),
            sync_share: (bytes > 0).then(|| in_blocks as f64 / bytes as f64),
            sync_honoured_share: (in_blocks > 0).then(|| held as f64 / in_blocks as f64),
            paints,
            model_ms,
            cut_bytes: transcript.cut,
            keys: seen,
        }
    }

    /// The summary's line: what a person saw, under which policy.
    pub fn summary(&self) -> String {
        let keys = thousands(self.keys.len() as u64);
        let mut out = format!(
            "\n  seen (a terminal that paints {}): {} of {keys} keys flashed the screen",
            self.policy,
            thousands(self.keys_flashed)
        );
        if let Some(p50) = self.flash_p50_ms {
            out += &format!(" (visible {} p50)", milliseconds(p50));
        }
        out += &format!(", {} tore", thousands(self.keys_torn));
        if self.scrollback_churn > 0 {
            out += &format!(
                "; {} lines copied into the scrollback",
                thousands(self.scrollback_churn)
            );
        }
        if let Some(share) = self.sync_share.filter(|&s| s > 0.0) {
            let honoured = self.sync_honoured_share.unwrap_or(0.0);
            out += &format!(
                "; {:.0}% of the bytes in synchronized-output blocks{}",
                share * 100.0,
                match honoured {
                    1.0 => String::new(),
                    0.0 => ", of a form this policy ignores".to_owned(),
                    h => format!(", {:.0}% of them in a form it honours", h * 100.0),
                }
            );
        }
        out += &format!(
            " (the model: {} paints, {} of CPU after the run)",
            thousands(self.paints),
            milliseconds(self.model_ms)
        );
        if self.cut_bytes > 0 {
            out += &format!(
                "; the model stopped after {} MiB (the keys after are not counted)",
                Transcript::LIMIT >> 20
            );
        }
        out
    }
}
