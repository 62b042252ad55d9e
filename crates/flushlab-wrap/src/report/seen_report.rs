//! What a person saw of each key's answer: from the terminal model (`flushlab_core::seen`) fed
//! the bytes wrap read, or from the camera on a real terminal's window. The report's `seen`
//! part and its line in the summary.

use serde::Serialize;

use flushlab_core::detect::keyed::KeyAnswer;
use flushlab_core::detect::timeline::Inside;
use flushlab_core::seen::states::{KeySeen, Window, see, see_film};
use flushlab_core::seen::{PaintPolicy, Transcript};
use flushlab_core::units::{milliseconds, thousands};
use flushlab_terminals::camera::Film;

/// What saw the states.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum SeenBy {
    /// A terminal model, fed the bytes as they arrived, painting by `policy`.
    Model,
    /// A camera on the terminal's window: its pixels, grabbed at a fixed cadence (X11) or at
    /// each commit (Wayland).
    Camera,
    /// A browser terminal's rows as its DOM renderer drew them, at each render (xterm.js).
    PageRows,
}

/// The `seen` part of a report.
#[derive(Clone, Debug, Serialize)]
pub struct SeenReport {
    pub by: SeenBy,
    /// The model's paint policy (`--paint`); `null` for the camera.
    pub policy: Option<PaintPolicy>,
    /// Keys whose answer showed at least one flash (or tear) for a 60 Hz refresh or longer.
    pub keys_flashed: u64,
    pub keys_torn: u64,
    /// Of the keys that flashed: their longest flash, p50, in ms.
    pub flash_p50_ms: Option<f64>,
    /// Lines copied into the scrollback, over all keys (the model only).
    pub scrollback_churn: Option<u64>,
    /// The share of the keys' bytes inside synchronized-output blocks (either form; the model).
    pub sync_share: Option<f64>,
    /// The share of those that the policy held its paints for (blocks of a form it honours).
    pub sync_honoured_share: Option<f64>,
    /// The model's paints, or the camera's distinct grabs.
    pub paints: u64,
    /// The camera's grabs, distinct or not, and those a whole cadence late.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub grabs: Option<(u64, u64)>,
    /// The CPU it took, in ms: the model's after the run, the camera's during it.
    pub cpu_ms: f64,
    /// It stopped short (the transcript's or the film's limit): later keys' states are missing.
    pub cut: bool,
    pub keys: Vec<KeySeen>,
    /// The same, frame by frame (the camera, where the observer found CMD's frames): each
    /// frame from its first write to the next frame's, S0 and S1 the screens at those edges.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub frames: Option<FramesTorn>,
    /// `--via`: CMD's synchronized-output blocks that did not reach the near end, and the layer
    /// that dropped them.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sync_lost: Option<crate::via::SyncLost>,
}

/// What the camera saw of each of CMD's frames.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct FramesTorn {
    pub frames: u64,
    /// Frames that showed a tear, or a flash, for a 60 Hz refresh or longer.
    pub torn: u64,
    pub flashed: u64,
    /// Frames whose only states between were shorter than a refresh.
    pub brief_only: u64,
}

impl FramesTorn {
    fn of(seen: &[KeySeen]) -> FramesTorn {
        let count = |f: &dyn Fn(&KeySeen) -> bool| seen.iter().filter(|k| f(k)).count() as u64;
        FramesTorn {
            frames: seen.len() as u64,
            torn: count(&|k| k.tears > 0),
            flashed: count(&|k| k.flashes > 0),
            brief_only: count(&|k| k.tears + k.flashes + k.steps == 0 && k.brief > 0),
        }
    }
}

/// A window a frame: from its first write to the next frame's (the last one's to `end_ns`),
/// frames as the observer found them (a burst that continues the one before is its frame's).
pub(crate) fn frame_windows(inside: Option<&Inside>, end_ns: u64) -> Vec<Window> {
    let starts: Vec<u64> = inside
        .map(|inside| {
            inside
                .bursts
                .iter()
                .filter(|b| !b.continues && b.bytes > 0)
                .map(|b| b.first_write_ns)
                .collect()
        })
        .unwrap_or_default();
    starts
        .iter()
        .enumerate()
        .map(|(i, &from_ns)| Window {
            from_ns,
            to_ns: starts.get(i + 1).copied().unwrap_or(end_ns),
        })
        .filter(|w| w.from_ns < w.to_ns)
        .collect()
}

/// A window a key, from its send to the next key's (the last key's to `end_ns`).
pub(crate) fn windows(keys: &[KeyAnswer], end_ns: u64) -> Vec<Window> {
    keys.iter()
        .enumerate()
        .map(|(i, key)| Window {
            from_ns: key.sent_ns,
            to_ns: keys.get(i + 1).map_or(end_ns, |next| next.sent_ns),
        })
        .filter(|w| w.from_ns < w.to_ns)
        .collect()
}

impl SeenReport {
    /// The model's report of a run, where there is a model (`--paint`), a transcript and keys.
    pub fn of_run(
        policy: Option<PaintPolicy>,
        (size, transcript): ((u16, u16), Option<&Transcript>),
        (keys, end_ns): (Option<&[KeyAnswer]>, u64),
    ) -> Option<SeenReport> {
        Some(SeenReport::of_model(
            policy?,
            size,
            transcript?,
            (keys?, end_ns),
        ))
    }

    /// The model run over `transcript` under `policy`.
    pub fn of_model(
        policy: PaintPolicy,
        size: (u16, u16),
        transcript: &Transcript,
        (keys, end_ns): (&[KeyAnswer], u64),
    ) -> SeenReport {
        let cpu = flushlab_core::sys::thread_cpu_ns();
        let (seen, paints) = see(policy, size, transcript, &windows(keys, end_ns), end_ns);
        let cpu_ms = flushlab_core::sys::thread_cpu_ns().saturating_sub(cpu) as f64 / 1e6;
        let (bytes, in_blocks, held) = seen.iter().fold((0, 0, 0), |(b, i, h), k| {
            (b + k.bytes, i + k.bytes_in_blocks, h + k.bytes_held)
        });
        SeenReport {
            policy: Some(policy),
            scrollback_churn: Some(seen.iter().map(|k| k.scrollback_churn).sum()),
            sync_share: (bytes > 0).then(|| in_blocks as f64 / bytes as f64),
            sync_honoured_share: (in_blocks > 0).then(|| held as f64 / in_blocks as f64),
            paints,
            cpu_ms,
            cut: transcript.cut > 0,
            ..SeenReport::of_keys(SeenBy::Model, seen)
        }
    }

    /// The camera's film of a run in a terminal: by key, and by frame where the observer
    /// found CMD's frames (`inside`).
    pub fn of_film(
        film: &Film,
        (keys, inside, end_ns): (&[KeyAnswer], Option<&Inside>, u64),
        seconds: f64,
    ) -> SeenReport {
        let seen = see_film(&film.frames, &windows(keys, end_ns), end_ns);
        let frames = frame_windows(inside, end_ns);
        SeenReport {
            frames: (!frames.is_empty())
                .then(|| FramesTorn::of(&see_film(&film.frames, &frames, end_ns))),
            paints: film.frames.len() as u64,
            grabs: Some((film.grabs, film.late)),
            cpu_ms: film.cpu_share * seconds * 1e3,
            cut: film.cut,
            ..SeenReport::of_keys(
                match film.cells {
                    true => SeenBy::PageRows,
                    false => SeenBy::Camera,
                },
                seen,
            )
        }
    }

    /// The figures over the keys, whatever saw them.
    pub(crate) fn of_keys(by: SeenBy, seen: Vec<KeySeen>) -> SeenReport {
        let mut flashes: Vec<f64> = seen.iter().filter_map(|k| k.longest_flash_ms).collect();
        flashes.sort_by(f64::total_cmp);
        SeenReport {
            by,
            policy: None,
            keys_flashed: seen.iter().filter(|k| k.flashes > 0).count() as u64,
            keys_torn: seen.iter().filter(|k| k.tears > 0).count() as u64,
            flash_p50_ms: (!flashes.is_empty())
                .then(|| flushlab_core::statistics::percentile(&flashes, 0.5)),
            scrollback_churn: None,
            sync_share: None,
            sync_honoured_share: None,
            paints: 0,
            grabs: None,
            cpu_ms: 0.0,
            cut: false,
            keys: seen,
            frames: None,
            sync_lost: None,
        }
    }

    /// The summary's line: what a person saw, and what saw it.
    pub fn summary(&self) -> String {
        let keys = thousands(self.keys.len() as u64);
        let by = match (&self.policy, self.by) {
            (Some(policy), _) => format!("a terminal that paints {policy}"),
            (None, SeenBy::PageRows) => "the page's rows at each render".to_owned(),
            (None, SeenBy::Model | SeenBy::Camera) => "the camera on the window".to_owned(),
        };
        let mut out = format!(
            "\n  seen ({by}): {} of {keys} keys flashed the screen",
            thousands(self.keys_flashed)
        );
        if let Some(p50) = self.flash_p50_ms {
            out += &format!(" (visible {} p50)", milliseconds(p50));
        }
        out += &format!(", {} tore", thousands(self.keys_torn));
        if let Some(churn) = self.scrollback_churn.filter(|&c| c > 0) {
            out += &format!("; {} lines copied into the scrollback", thousands(churn));
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
        if let Some(frames) = &self.frames {
            out += &format!(
                "; of {} frames, {} tore and {} flashed for a refresh or longer, {} only more briefly",
                thousands(frames.frames),
                thousands(frames.torn),
                thousands(frames.flashed),
                thousands(frames.brief_only)
            );
        }
        if let Some(lost) = &self.sync_lost {
            out += &format!("; {}", lost.clause());
        }
        if self.cut {
            out += "; it stopped short of the run's end (the keys after are not counted)";
        }
        out += &match self.grabs {
            None => format!(
                " (the model: {} paints, {} of CPU after the run)",
                thousands(self.paints),
                milliseconds(self.cpu_ms)
            ),
            Some((grabs, _)) if self.by == SeenBy::PageRows => format!(
                " (the page: {} renders, {} distinct; read in the page, its CPU not counted)",
                thousands(grabs),
                thousands(self.paints)
            ),
            Some((grabs, late)) => format!(
                " (the camera: {} grabs, {} distinct, {} late; {} of CPU)",
                thousands(grabs),
                thousands(self.paints),
                thousands(late),
                milliseconds(self.cpu_ms)
            ),
        };
        out
    }
}
