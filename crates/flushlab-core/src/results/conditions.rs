//! The conditions a row was measured under, as types from the flag to the export: the frame's
//! size, what read the output (a reader model, a terminal, nobody), what was behind the file
//! descriptor, and the workload. Each is written in the results as the string people read
//! (`200x60`, `throttle:2MB/s`, `pty`), and read back from the same strings, so files written
//! before these were types still load.

use std::fmt;

use serde::{Deserialize, Serialize};

use crate::units::Completed;

/// A frame's size in cells, written `COLSxROWS`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(into = "String", try_from = "String")]
pub struct Size {
    pub cols: u16,
    pub rows: u16,
}

impl From<(u16, u16)> for Size {
    fn from((cols, rows): (u16, u16)) -> Size {
        Size { cols, rows }
    }
}

impl fmt::Display for Size {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}x{}", self.cols, self.rows)
    }
}

impl From<Size> for String {
    fn from(size: Size) -> String {
        size.to_string()
    }
}

impl TryFrom<String> for Size {
    type Error = String;

    fn try_from(text: String) -> Result<Size, String> {
        crate::units::parse_size(&text)
            .map(Size::from)
            .map_err(|why| format!("size '{text}': {why}"))
    }
}

/// How the master side of the pty (or the read end of the pipe) is read.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ReaderModel {
    /// As fast as possible, bytes discarded: the kernel is the only limit.
    Drain,
    /// Every byte through a terminal parser that keeps a screen (the vt100 crate): a terminal's
    /// parsing cost, without its drawing.
    Vt,
    /// At most this many bytes per second: a slow terminal.
    Throttle { bytes_per_second: u64 },
}

impl std::fmt::Display for ReaderModel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ReaderModel::Drain => f.write_str("drain"),
            ReaderModel::Vt => f.write_str("vt"),
            ReaderModel::Throttle { bytes_per_second } => {
                write!(f, "throttle:{}", rate(*bytes_per_second))
            }
        }
    }
}

/// `20MB/s`, `512KB/s`, `100B/s`, in the largest decimal unit that divides the rate.
fn rate(bytes_per_second: u64) -> String {
    match bytes_per_second {
        b if b >= 1_000_000 && b % 1_000_000 == 0 => format!("{}MB/s", b / 1_000_000),
        b if b >= 1_000 && b % 1_000 == 0 => format!("{}KB/s", b / 1_000),
        b => format!("{b}B/s"),
    }
}

/// Parses `drain`, `vt` or `throttle:RATE`, where RATE is a number with a unit among B/s,
/// KB/s, MB/s, GB/s (decimal) or KiB/s, MiB/s (binary), e.g. `throttle:20MB/s`.
/// `--reader`'s parser, with the values a shell completes (a throttle's rate is an example).
pub const READERS: Completed<ReaderModel> = Completed {
    parse: parse_reader,
    names: &["drain", "vt", "throttle:2MB/s", "throttle:20MB/s"],
};

pub fn parse_reader(text: &str) -> Result<ReaderModel, String> {
    let bad_rate = || {
        "expected throttle:RATE with RATE like 20MB/s, 512KB/s, 1MiB/s or 100B/s (more than 0)"
            .to_owned()
    };
    match text.trim() {
        "drain" => Ok(ReaderModel::Drain),
        "vt" => Ok(ReaderModel::Vt),
        other => {
            let Some(rate) = other.strip_prefix("throttle:") else {
                return Err(
                    "expected one of: drain, vt, throttle:RATE (e.g. throttle:20MB/s)".to_owned(),
                );
            };
            let rate = rate.trim().strip_suffix("/s").ok_or_else(bad_rate)?;
            let split = rate
                .find(|c: char| !c.is_ascii_digit() && c != '.')
                .unwrap_or(rate.len());
            let (number, unit) = rate.split_at(split);
            let scale = match unit {
                "B" => 1.0,
                "KB" | "kB" => 1e3,
                "MB" => 1e6,
                "GB" => 1e9,
                "KiB" => 1024.0,
                "MiB" => 1024.0 * 1024.0,
                _ => return Err(bad_rate()),
            };
            let value: f64 = number.parse().map_err(|_| bad_rate())?;
            let bytes_per_second = value * scale;
            if !(bytes_per_second >= 1.0 && bytes_per_second.is_finite()) {
                return Err(bad_rate());
            }
            Ok(ReaderModel::Throttle {
                bytes_per_second: bytes_per_second as u64,
            })
        }
    }
}

/// What read a row's output: a bench's reader model, the terminal a tour ran in (as it named
/// itself), or nobody (a file, /dev/null).
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(into = "String", from = "String")]
pub enum Reader {
    None,
    Model(ReaderModel),
    Terminal(String),
}

impl fmt::Display for Reader {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Reader::None => f.write_str("none"),
            Reader::Model(model) => model.fmt(f),
            Reader::Terminal(name) => f.write_str(name),
        }
    }
}

impl From<Reader> for String {
    fn from(reader: Reader) -> String {
        reader.to_string()
    }
}

impl From<String> for Reader {
    /// `none`, a reader model's name, or else the name of a terminal.
    fn from(text: String) -> Reader {
        match text.as_str() {
            "none" => Reader::None,
            name => parse_reader(name).map_or(Reader::Terminal(text), Reader::Model),
        }
    }
}

/// What is behind the measured file descriptor.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "clap", derive(clap::ValueEnum))]
#[serde(rename_all = "lowercase")]
pub enum Sink {
    /// A pseudo-terminal, the child's controlling terminal, read by the reader model.
    Pty,
    /// A pipe, read by the reader model.
    Pipe,
    /// A regular file in the temporary directory.
    File,
    /// /dev/null.
    Null,
    /// The terminal flushlab runs in (a tour's rows).
    #[cfg_attr(feature = "clap", value(skip))]
    Tty,
}

impl Sink {
    pub fn name(self) -> &'static str {
        match self {
            Sink::Pty => "pty",
            Sink::Pipe => "pipe",
            Sink::File => "file",
            Sink::Null => "null",
            Sink::Tty => "tty",
        }
    }

    /// Whether a reader model reads this sink (files and /dev/null have no reader).
    pub fn has_reader(self) -> bool {
        matches!(self, Sink::Pty | Sink::Pipe)
    }
}

impl fmt::Display for Sink {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// What a results file measured.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "clap", derive(clap::ValueEnum))]
#[serde(rename_all = "lowercase")]
pub enum Workload {
    /// Full-screen frames through the writer modes.
    Tui,
    /// Numbered log lines through the flood writers.
    Flood,
    /// Frames in the terminal flushlab runs in, mode after mode.
    #[cfg_attr(feature = "clap", value(skip))]
    Tour,
}

impl Workload {
    pub fn name(self) -> &'static str {
        match self {
            Workload::Tui => "tui",
            Workload::Flood => "flood",
            Workload::Tour => "tour",
        }
    }

    /// What a row's rate counts.
    pub fn unit(self) -> Unit {
        match self {
            Workload::Tui | Workload::Tour => Unit::Frame,
            Workload::Flood => Unit::Line,
        }
    }
}

impl fmt::Display for Workload {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// What a row's rate counts: frames or log lines.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Unit {
    Frame,
    Line,
}

impl fmt::Display for Unit {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Unit::Frame => "frame",
            Unit::Line => "line",
        })
    }
}

/// Synchronized output (DEC mode 2026), as the terminal answered DECRQM.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum SyncOutput {
    #[serde(rename = "supported")]
    Supported,
    #[serde(rename = "not recognized")]
    NotRecognized,
    #[serde(rename = "no answer")]
    NoAnswer,
}

impl SyncOutput {
    /// From DECRQM's status for the mode (0: not recognized), or no answer.
    pub fn from_status(status: Option<u8>) -> SyncOutput {
        match status {
            Some(0) => SyncOutput::NotRecognized,
            Some(_) => SyncOutput::Supported,
            None => SyncOutput::NoAnswer,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            SyncOutput::Supported => "supported",
            SyncOutput::NotRecognized => "not recognized",
            SyncOutput::NoAnswer => "no answer",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_reader_models() {
        assert_eq!(parse_reader("drain"), Ok(ReaderModel::Drain));
        assert_eq!(parse_reader("vt"), Ok(ReaderModel::Vt));
        assert_eq!(
            parse_reader("throttle:20MB/s"),
            Ok(ReaderModel::Throttle {
                bytes_per_second: 20_000_000
            })
        );
        assert_eq!(
            parse_reader("throttle:1MiB/s"),
            Ok(ReaderModel::Throttle {
                bytes_per_second: 1 << 20
            })
        );
        assert_eq!(
            parse_reader("throttle:1.5KB/s"),
            Ok(ReaderModel::Throttle {
                bytes_per_second: 1500
            })
        );
        for bad in [
            "throttle:",
            "throttle:20",
            "throttle:0MB/s",
            "throttle:-5MB/s",
            "throttle:fastMB/s",
            "throttle:5parsec/s",
            "slow",
        ] {
            assert!(parse_reader(bad).is_err(), "{bad}");
        }
        assert_eq!(
            parse_reader("throttle:20MB/s").unwrap().to_string(),
            "throttle:20MB/s"
        );
    }

    #[test]
    fn conditions_are_written_and_read_as_the_strings_people_read() {
        let round = |json: &str| {
            let reader: Reader = serde_json::from_str(json).unwrap();
            assert_eq!(serde_json::to_string(&reader).unwrap(), json);
            reader
        };
        assert_eq!(round("\"none\""), Reader::None);
        assert_eq!(round("\"vt\""), Reader::Model(ReaderModel::Vt));
        assert_eq!(
            round("\"throttle:2MB/s\""),
            Reader::Model(ReaderModel::Throttle {
                bytes_per_second: 2_000_000
            })
        );
        assert_eq!(
            round("\"XTerm(379)\""),
            Reader::Terminal("XTerm(379)".into())
        );
        let size: Size = serde_json::from_str("\"200x60\"").unwrap();
        assert_eq!(
            size,
            Size {
                cols: 200,
                rows: 60
            }
        );
        assert_eq!(serde_json::to_string(&size).unwrap(), "\"200x60\"");
        let bad = serde_json::from_str::<Size>("\"wide\"").unwrap_err();
        assert!(bad.to_string().contains("'wide'"), "{bad}");
        assert_eq!(serde_json::to_string(&Sink::Tty).unwrap(), "\"tty\"");
        let tour: Workload = serde_json::from_str("\"tour\"").unwrap();
        assert_eq!((tour, tour.unit()), (Workload::Tour, Unit::Frame));
        assert!(serde_json::from_str::<Sink>("\"socket\"").is_err());
    }
}
