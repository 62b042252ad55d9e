//! The figures every report gives, in one schema: the headless run's report (each mode), the
//! flood's report and each run of the bench and the tour are made of it, so one name means one
//! thing everywhere and the bench reads a child's report without translating it.

use serde::{Deserialize, Serialize};

/// What a stretch of output cost. The unit is a frame, or a log line for the flood (its report
/// and the bench's settings say `"unit": "line"`): `frames` counts units, `fps` is units per
/// second and the `_per_frame` figures are per unit. The flood's own report writes them under
/// their lines' names ([`PerLine`]); both names are read.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Figures {
    #[serde(alias = "lines")]
    pub frames: u64,
    pub seconds: f64,
    #[serde(alias = "lines_per_second")]
    pub fps: f64,
    /// `null` where write accounting is not available (not Linux).
    #[serde(alias = "writes_per_line")]
    pub writes_per_frame: Option<f64>,
    #[serde(alias = "bytes_per_line")]
    pub bytes_per_frame: Option<f64>,
    /// `null` also when nothing was written (the CPU ceiling).
    pub bytes_per_write: Option<f64>,
    /// Kernel CPU time over all CPU time, 0..=1: how much of the work is system calls.
    pub kernel_share: f64,
    /// CPU time of the measuring process (all its threads), seconds. Absent in results written
    /// before they were recorded.
    #[serde(default)]
    pub user_seconds: f64,
    #[serde(default)]
    pub kernel_seconds: f64,
    /// Where a frame's wall time went, on the thread that draws the frames; `null` where the
    /// thread's scheduler statistics are not available, and in results written before.
    #[serde(default)]
    pub time_split: Option<TimeSplit>,
}

/// [`Figures`] of log lines, written under the lines' names: `lines`, `lines_per_second`,
/// `writes_per_line`, `bytes_per_line` (the flood's report; a reader of [`Figures`] takes these
/// names too, and the frame names of reports written before).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct PerLine(pub Figures);

impl Serialize for PerLine {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeStruct;
        let f = &self.0;
        let mut line = serializer.serialize_struct("PerLine", 10)?;
        line.serialize_field("lines", &f.frames)?;
        line.serialize_field("seconds", &f.seconds)?;
        line.serialize_field("lines_per_second", &f.fps)?;
        line.serialize_field("writes_per_line", &f.writes_per_frame)?;
        line.serialize_field("bytes_per_line", &f.bytes_per_frame)?;
        line.serialize_field("bytes_per_write", &f.bytes_per_write)?;
        line.serialize_field("kernel_share", &f.kernel_share)?;
        line.serialize_field("user_seconds", &f.user_seconds)?;
        line.serialize_field("kernel_seconds", &f.kernel_seconds)?;
        line.serialize_field("time_split", &f.time_split)?;
        line.end()
    }
}

/// A frame's wall time, split (milliseconds a frame; the parts add up to the frame's wall
/// time). Measured on the thread that draws the frames: two `Instant::now()` a frame, and the
/// thread's scheduler statistics and CPU times read once a second.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct TimeSplit {
    /// Building it: the scene and the HUD painted into ratatui's buffer.
    pub build_ms: f64,
    /// User CPU outside building: ratatui's diff, crossterm's escape sequences, std's buffers.
    pub encode_ms: f64,
    /// Kernel CPU: mostly inside write(2).
    pub kernel_ms: f64,
    /// Runnable but not running: waiting for a core (the reader and the writer share them).
    pub cpu_wait_ms: f64,
    /// Asleep, not by choice: blocked in write(2) until the reader takes the bytes — the
    /// terminal is the limit.
    pub reader_wait_ms: f64,
    /// Asleep by choice: a frame-rate cap's pause.
    pub idle_ms: f64,
    /// In the thread modes, the writer thread's frame beside the painter's (whose
    /// `reader_wait_ms` is then its wait for the writer thread to take the frame); absent in
    /// the other modes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub writer: Option<WriterSplit>,
}

/// The writer thread's wall time a frame (milliseconds; the parts add up to the frame's wall
/// time): it writes frame N while the painter builds frame N+1.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct WriterSplit {
    /// On a CPU: copying the frame into the kernel, inside write(2).
    pub on_cpu_ms: f64,
    /// Runnable, waiting for a core.
    pub cpu_wait_ms: f64,
    /// Asleep until the painter hands over the next frame: the painter is the limit.
    pub frame_wait_ms: f64,
    /// Asleep inside write(2) until the reader takes the bytes: the terminal is the limit.
    pub reader_wait_ms: f64,
}

impl WriterSplit {
    /// The parts, named as the HUD names them.
    pub fn parts(&self) -> [(&'static str, f64); 4] {
        [
            ("on cpu", self.on_cpu_ms),
            ("cpu wait", self.cpu_wait_ms),
            ("frame wait", self.frame_wait_ms),
            ("reader wait", self.reader_wait_ms),
        ]
    }
}

impl TimeSplit {
    pub fn total_ms(&self) -> f64 {
        self.build_ms
            + self.encode_ms
            + self.kernel_ms
            + self.cpu_wait_ms
            + self.reader_wait_ms
            + self.idle_ms
    }

    /// The parts, named as the HUD and the tables name them, in drawing order.
    pub fn parts(&self) -> [(&'static str, f64); 6] {
        [
            ("build", self.build_ms),
            ("encode", self.encode_ms),
            ("kernel", self.kernel_ms),
            ("cpu wait", self.cpu_wait_ms),
            ("reader wait", self.reader_wait_ms),
            ("idle", self.idle_ms),
        ]
    }

    /// Whether waiting for the reader is the largest part of the thread that writes (the
    /// writer thread's, in the thread modes): the terminal, not the writer, is then the limit.
    pub fn reader_bound(&self) -> bool {
        self.reader_share()
            .is_some_and(|(share, largest)| largest && share > 0.0)
    }

    /// What share of the writing thread's frame waits for the reader, and whether that is its
    /// largest part.
    pub fn reader_share(&self) -> Option<(f64, bool)> {
        let (wait, parts): (f64, Vec<f64>) = match &self.writer {
            Some(w) => (w.reader_wait_ms, w.parts().iter().map(|p| p.1).collect()),
            None => (
                self.reader_wait_ms,
                self.parts().iter().map(|p| p.1).collect(),
            ),
        };
        let total: f64 = parts.iter().sum();
        (total > 0.0).then(|| (wait / total, parts.iter().all(|&ms| ms <= wait)))
    }
}

impl Figures {
    /// CPU time (user + kernel) per unit, in milliseconds: what a frame costs whatever the
    /// machine's speed did meanwhile. `None` when nothing was counted.
    pub fn cpu_ms_per_frame(&self) -> Option<f64> {
        let cpu = self.user_seconds + self.kernel_seconds;
        (self.frames > 0 && cpu > 0.0).then(|| cpu * 1000.0 / self.frames as f64)
    }
}

/// What a stretch of output cost when its frames are not known (another program's, through
/// `flushlab wrap`): per second only, never a made-up frame.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct PerSecond {
    pub bytes_per_second: f64,
    /// `null` where write accounting is not available.
    pub writes_per_second: Option<f64>,
}

/// The part of wrap's report a run of the bench is made of: written inside `flushlab wrap`'s report
/// (flattened) and read back by the bench with this same type.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct WrapRun {
    /// Bytes read from the pty: everything CMD's process tree wrote to the terminal.
    pub bytes: u64,
    #[serde(flatten)]
    pub per_second: PerSecond,
    /// Per-frame figures in the schema of every flushlab report; `null` when the frames are
    /// unknown (then only the per-second figures stand).
    pub figures: Option<Figures>,
    /// The largest resident set of a process of CMD's tree, KiB.
    pub peak_rss_kib: u64,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_are_written_as_lines_and_read_under_either_name() {
        let figures = Figures {
            frames: 1_000,
            seconds: 0.5,
            fps: 2_000.0,
            writes_per_frame: Some(0.01),
            bytes_per_frame: Some(72.0),
            bytes_per_write: Some(7_200.0),
            kernel_share: 0.1,
            ..Figures::default()
        };
        let json = serde_json::to_value(PerLine(figures)).unwrap();
        for name in [
            "lines",
            "lines_per_second",
            "writes_per_line",
            "bytes_per_line",
        ] {
            assert!(json.get(name).is_some(), "no {name} in {json}");
        }
        for name in ["frames", "fps", "writes_per_frame", "bytes_per_frame"] {
            assert!(json.get(name).is_none(), "{name} in {json}");
        }
        assert_eq!(serde_json::from_value::<Figures>(json).unwrap(), figures);
        // A flood report written before the lines had their names.
        let old = serde_json::to_value(figures).unwrap();
        assert!(old.get("frames").is_some());
        assert_eq!(serde_json::from_value::<Figures>(old).unwrap(), figures);
    }
}
