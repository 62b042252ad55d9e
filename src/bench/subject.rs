//! What one benchmark row measures: a writer mode, or one of the two ceilings.

use std::fmt;

use clap::ValueEnum;

use crate::ceiling::Ceiling;
use crate::flood::FloodWriter;
use crate::writer_mode::{Buffering, Stream};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Subject {
    Mode(Stream, Buffering),
    Ceiling(Ceiling),
    /// A writer of the log-flood workload (`flushlab flood`).
    Flood(FloodWriter),
}

impl Subject {
    /// Every writer mode, in the explorer's order.
    pub fn all_modes() -> impl Iterator<Item = Subject> {
        Stream::ALL
            .into_iter()
            .flat_map(|s| Buffering::ALL.into_iter().map(move |b| Subject::Mode(s, b)))
    }

    /// Every writer of the flood workload.
    pub fn flood_writers() -> impl Iterator<Item = Subject> {
        FloodWriter::value_variants()
            .iter()
            .map(|&w| Subject::Flood(w))
    }

    pub fn ceilings() -> [Subject; 2] {
        [
            Subject::Ceiling(Ceiling::Cpu),
            Subject::Ceiling(Ceiling::Transport),
        ]
    }

    pub fn is_ceiling(self) -> bool {
        matches!(self, Subject::Ceiling(_))
    }

    /// The environment of the headless run that measures this subject (the flood takes flags).
    pub fn env(self) -> Vec<(&'static str, &'static str)> {
        match self {
            Subject::Flood(_) => vec![],
            Subject::Mode(stream, buffering) => {
                vec![("STREAM", stream.name()), ("BUFFERING", buffering.name())]
            }
            // Ceilings write where stdout/frame would: the same fd, the same reader.
            Subject::Ceiling(ceiling) => vec![
                ("STREAM", "stdout"),
                ("BUFFERING", "frame"),
                (
                    "CEILING",
                    match ceiling {
                        Ceiling::Cpu => "cpu",
                        Ceiling::Transport => "transport",
                    },
                ),
            ],
        }
    }

    pub fn stream(self) -> Stream {
        match self {
            Subject::Mode(stream, _) => stream,
            Subject::Flood(FloodWriter::Eprintln) => Stream::Stderr,
            Subject::Ceiling(_) | Subject::Flood(_) => Stream::Stdout,
        }
    }
}

/// `stderr/raw`, `ceiling/cpu`: the names the JSON and the `--modes` flag use.
impl fmt::Display for Subject {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Subject::Mode(stream, buffering) => write!(f, "{}/{}", stream.name(), buffering.name()),
            Subject::Ceiling(ceiling) => f.write_str(ceiling.name()),
            Subject::Flood(writer) => {
                let name = writer
                    .to_possible_value()
                    .map(|v| v.get_name().to_owned())
                    .unwrap_or_default();
                write!(f, "flood/{name}")
            }
        }
    }
}

/// The groups `--modes` accepts besides single names.
const GROUPS: &str =
    "std, all, modes, ceilings, flood, stdout, stderr, raw, line, block, frame, thread";

/// The default matrix, the seed's question: std's `stdout()` against std's `stderr()`, what
/// buffering buys on top (block, frame, thread), and the two ceilings. 7 rows.
pub fn std_lesson() -> Vec<Subject> {
    let mut subjects = Subject::ceilings().to_vec();
    subjects.push(Subject::Mode(Stream::Stdout, Buffering::Line));
    subjects.push(Subject::Mode(Stream::Stderr, Buffering::Raw));
    for buffering in [Buffering::Block, Buffering::Frame, Buffering::Thread] {
        subjects.push(Subject::Mode(Stream::Stdout, buffering));
    }
    subjects
}

/// Parses one `--modes` item: a mode name, a ceiling, a flood writer (`flood/println`), `all`
/// (every mode and both ceilings), `modes`, `ceilings`, `flood` (every flood writer), a stream
/// (`stdout`: its every buffering) or a buffering (`frame`: on both streams).
pub fn parse_subjects(text: &str) -> Result<Vec<Subject>, String> {
    let every = || {
        Subject::ceilings()
            .into_iter()
            .chain(Subject::all_modes())
            .chain(Subject::flood_writers())
    };
    let text = text.trim();
    match text {
        "all" => {
            return Ok(Subject::ceilings()
                .into_iter()
                .chain(Subject::all_modes())
                .collect());
        }
        "modes" => return Ok(Subject::all_modes().collect()),
        "std" => return Ok(std_lesson()),
        "ceilings" => return Ok(Subject::ceilings().to_vec()),
        "flood" => return Ok(Subject::flood_writers().collect()),
        _ => {}
    }
    if let Some(&stream) = Stream::ALL.iter().find(|s| s.name() == text) {
        return Ok(Buffering::ALL.map(|b| Subject::Mode(stream, b)).to_vec());
    }
    if let Some(&buffering) = Buffering::ALL.iter().find(|b| b.name() == text) {
        return Ok(Stream::ALL.map(|s| Subject::Mode(s, buffering)).to_vec());
    }
    every()
        .find(|s| s.to_string() == text)
        .map(|s| vec![s])
        .ok_or_else(|| {
            let names: Vec<String> = every().map(|s| s.to_string()).collect();
            format!("unknown mode; valid: {GROUPS}, {}", names.join(", "))
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip() {
        for subject in Subject::ceilings()
            .into_iter()
            .chain(Subject::all_modes())
            .chain(Subject::flood_writers())
        {
            assert_eq!(parse_subjects(&subject.to_string()), Ok(vec![subject]));
        }
        assert_eq!(parse_subjects("all").unwrap().len(), 12);
        assert_eq!(parse_subjects("flood").unwrap().len(), 7);
        assert_eq!(
            Subject::Flood(FloodWriter::PerByte).to_string(),
            "flood/per-byte"
        );
        let stdout = parse_subjects("stdout").unwrap();
        assert_eq!(stdout.len(), Buffering::ALL.len());
        assert!(stdout.iter().all(|s| s.stream() == Stream::Stdout));
        assert_eq!(
            parse_subjects("frame").unwrap(),
            [
                Subject::Mode(Stream::Stdout, Buffering::Frame),
                Subject::Mode(Stream::Stderr, Buffering::Frame)
            ]
        );
        let err = parse_subjects("stdout/fast").unwrap_err();
        assert!(
            err.contains("stderr/raw") && err.contains("ceiling/cpu"),
            "{err}"
        );
    }
}
