//! What a verdict reads of one run: its keys' figures (`RunFigures`) on one of a key's times
//! (`Measure`) — of a run `--against` ran, or of one stored with `--export-json`.

use serde::Serialize;

use flushlab_core::detect::keyed::{KeyLatencies, Stage};

/// Which of a key's times the verdict is on.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Measure {
    /// Headless: from the key to its frame's end.
    KeyToFrame,
    /// In a real terminal (`--terminal`): from the key to the window's last change for it.
    KeyToLastPixel,
    /// Over a wire (`--via`): from the key to its frame's last byte at the near end.
    KeyToLastByte,
}

impl Measure {
    /// What a verdict reads: a key's last pixel in a terminal, its last byte at a wire's near
    /// end, else its frame.
    pub fn of(in_a_terminal: bool, over_a_wire: bool) -> Measure {
        match (in_a_terminal, over_a_wire) {
            (true, _) => Measure::KeyToLastPixel,
            (false, true) => Measure::KeyToLastByte,
            (false, false) => Measure::KeyToFrame,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Measure::KeyToFrame => "key→frame",
            Measure::KeyToLastPixel => "key→last pixel",
            Measure::KeyToLastByte => "key→last byte",
        }
    }
}

/// One run's figures, as the verdict reads them.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct RunFigures {
    pub key_to_frame_p50_ms: Option<f64>,
    pub key_to_frame_p95_ms: Option<f64>,
    /// Each stage's p50 (ms), where known.
    pub stages_p50_ms: Vec<(Stage, f64)>,
    /// Keys that reached the terminal with an answer (a byte or a frame).
    pub answered: u64,
    pub keys: u64,
    pub bytes_per_key: f64,
    /// CMD's exit status (`None`: wrap ended it).
    pub exit_code: Option<i32>,
    /// Keys whose answer flashed the screen (`seen`, the model's or the camera's; `None`
    /// without either).
    pub flashed: Option<u64>,
}

impl RunFigures {
    /// A run's figures for a verdict on `measure`, which of a key's times it reads (in a
    /// terminal, its last pixel).
    pub fn of_keys(
        keys: Option<&KeyLatencies>,
        exit_code: Option<i32>,
        measure: Measure,
    ) -> RunFigures {
        let k2f = keys.and_then(|k| match measure {
            Measure::KeyToFrame => k.key_to_frame_ms,
            Measure::KeyToLastPixel => k.pixels_ms.map(|p| p.last),
            Measure::KeyToLastByte => k.key_to_last_byte_ms,
        });
        RunFigures {
            key_to_frame_p50_ms: k2f.map(|p| p.p50),
            key_to_frame_p95_ms: k2f.map(|p| p.p95),
            stages_p50_ms: keys
                .and_then(|k| k.stages_ms)
                .map(|s| s.each().map(|(stage, p)| (stage, p.p50)).collect())
                .unwrap_or_default(),
            answered: keys.map_or(0, |k| k.keys - k.unanswered),
            keys: keys.map_or(0, |k| k.keys),
            bytes_per_key: keys.map_or(0.0, |k| k.bytes_per_key),
            exit_code,
            flashed: None,
        }
    }

    /// With the keys that flashed the screen, as the run's `seen` says (`None`: nothing saw).
    pub fn seeing(self, keys_flashed: Option<u64>) -> RunFigures {
        RunFigures {
            flashed: keys_flashed,
            ..self
        }
    }

    pub fn stage(&self, stage: Stage) -> Option<f64> {
        self.stages_p50_ms
            .iter()
            .find(|(s, _)| *s == stage)
            .map(|(_, ms)| *ms)
    }
}
