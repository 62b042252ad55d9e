//! What one measurement measures — a writer mode, one of the two ceilings, or a writer of the
//! log flood — as one typed value from the `--modes` flag to the exports: rows carry it, the
//! bench builds a child's command line from it, and its name is written only where it is
//! serialized.

use std::fmt;
use std::sync::Arc;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

use crate::writer_mode::{Buffering, Stream};

/// The two reference measurements every mode is compared with (see `ceiling.rs`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "clap", derive(clap::ValueEnum))]
pub enum Ceiling {
    Cpu,
    Transport,
}

impl Ceiling {
    pub fn name(self) -> &'static str {
        match self {
            Ceiling::Cpu => "ceiling/cpu",
            Ceiling::Transport => "ceiling/transport",
        }
    }

    /// The value `CEILING` takes: `cpu`, `transport`.
    pub fn value(self) -> &'static str {
        match self {
            Ceiling::Cpu => "cpu",
            Ceiling::Transport => "transport",
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "clap", derive(clap::ValueEnum))]
#[serde(rename_all = "kebab-case")]
pub enum FloodWriter {
    /// `writeln!(stdout(), …)` per line, what `println!` does: lock, LineWriter, one write(2)
    /// per line.
    Println,
    /// `writeln!(stderr(), …)` per line, what `eprintln!` does: unbuffered.
    Eprintln,
    /// One `stdout().lock()` held for the whole run: no lock per line, still line-buffered.
    Lock,
    /// `BufWriter::with_capacity(--capacity, dup of stdout)`.
    Block,
    /// An unbuffered dup of stdout: every formatting fragment is a write(2).
    Raw,
    /// One `write_all` call per byte into a BufWriter: the per-call cost (the `putchar`
    /// lesson) with no system call behind it.
    PerByte,
    /// Lines handed to a writer thread over a bounded channel (`--queue`); the thread writes
    /// them through a BufWriter. See `--on-full`.
    Thread,
    /// `tracing::info!` through tracing-subscriber's fmt layer, as `fmt().init()` sets it up:
    /// to stdout, a write per event.
    Tracing,
    /// The same through `tracing_appender::non_blocking(stdout())` with its defaults: a
    /// writer thread behind 128,000 lines, lossy (a full queue drops the event and counts it).
    TracingNonBlocking,
    /// `tracing_appender::non_blocking` with `lossy(false)`: a full queue blocks the caller.
    TracingLossless,
    /// `log::info!` through env_logger with its defaults but the level (info): to stderr.
    EnvLogger,
    /// No logging at all: the request loop's baseline (`--work`), what the others are compared
    /// with.
    None,
}

impl FloodWriter {
    /// Every writer, in `--writer`'s order.
    pub const ALL: [FloodWriter; 12] = [
        FloodWriter::Println,
        FloodWriter::Eprintln,
        FloodWriter::Lock,
        FloodWriter::Block,
        FloodWriter::Raw,
        FloodWriter::PerByte,
        FloodWriter::Thread,
        FloodWriter::Tracing,
        FloodWriter::TracingNonBlocking,
        FloodWriter::TracingLossless,
        FloodWriter::EnvLogger,
        FloodWriter::None,
    ];

    /// The name `--writer` takes: `println`, `per-byte`.
    pub fn name(self) -> &'static str {
        match self {
            FloodWriter::Println => "println",
            FloodWriter::Eprintln => "eprintln",
            FloodWriter::Lock => "lock",
            FloodWriter::Block => "block",
            FloodWriter::Raw => "raw",
            FloodWriter::PerByte => "per-byte",
            FloodWriter::Thread => "thread",
            FloodWriter::Tracing => "tracing",
            FloodWriter::TracingNonBlocking => "tracing-non-blocking",
            FloodWriter::TracingLossless => "tracing-lossless",
            FloodWriter::EnvLogger => "env-logger",
            FloodWriter::None => "none",
        }
    }
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Subject {
    Mode(Stream, Buffering),
    Ceiling(Ceiling),
    /// A writer of the log-flood workload (`flushlab flood`).
    Flood(FloodWriter),
    /// Another program, measured through `flushlab wrap` (`bench --command NAME=CMD`): shared,
    /// since every row and run of it names it.
    Command(Arc<ExternalCommand>),
}

/// A program the bench measures beside the modes: `--command NAME=CMD ARGS…`.
#[derive(Debug, PartialEq, Eq)]
pub struct ExternalCommand {
    pub name: String,
    /// The program and its arguments; empty when read back from a results file.
    pub argv: Vec<String>,
}

/// Parses `--command NAME=CMD ARGS…` (arguments split at spaces; `sh -c '…'` for anything
/// subtler): NAME of letters, digits, `-` and `_`.
pub fn parse_command(text: &str) -> Result<Subject, String> {
    let (name, command) = text
        .split_once('=')
        .ok_or("expected NAME=COMMAND, e.g. mytui='./target/release/mytui --demo'")?;
    if name.is_empty()
        || !name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
    {
        return Err(format!(
            "the name {:?} must be letters, digits, - and _",
            crate::units::printable(name)
        ));
    }
    let argv: Vec<String> = command.split_whitespace().map(str::to_owned).collect();
    if argv.is_empty() {
        return Err(format!("no command after {name}="));
    }
    Ok(Subject::Command(Arc::new(ExternalCommand {
        name: name.to_owned(),
        argv,
    })))
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
        FloodWriter::ALL.into_iter().map(Subject::Flood)
    }

    pub fn ceilings() -> [Subject; 2] {
        [
            Subject::Ceiling(Ceiling::Cpu),
            Subject::Ceiling(Ceiling::Transport),
        ]
    }

    /// Everything one name can stand for.
    fn every() -> impl Iterator<Item = Subject> {
        Subject::ceilings()
            .into_iter()
            .chain(Subject::all_modes())
            .chain(Subject::flood_writers())
    }

    pub fn is_ceiling(&self) -> bool {
        matches!(self, Subject::Ceiling(_))
    }

    /// A row that measures the rest of the work without the thing compared: the ceilings of
    /// the frame modes, the flood's `none` (the loop without logging). The others are
    /// compared with it (`× ceiling`), never it with them (`× fastest`).
    pub fn is_baseline(&self) -> bool {
        matches!(
            self,
            Subject::Ceiling(_) | Subject::Flood(FloodWriter::None)
        )
    }

    /// Whether its rows do the modes' work (the same frame): another program's do not, and no
    /// ratio compares them.
    pub fn draws_the_frame(&self) -> bool {
        !matches!(self, Subject::Command(_))
    }

    /// The stream whose file descriptor the subject writes to.
    pub fn stream(&self) -> Stream {
        match self {
            Subject::Mode(stream, _) => *stream,
            Subject::Command(_) => Stream::Stdout,
            Subject::Flood(FloodWriter::Eprintln | FloodWriter::EnvLogger) => Stream::Stderr,
            Subject::Ceiling(_) | Subject::Flood(_) => Stream::Stdout,
        }
    }

    /// What a plot colours it by: its stream, or `ceiling`.
    pub fn family(&self) -> &'static str {
        match self {
            Subject::Ceiling(_) => "ceiling",
            Subject::Flood(_) => "flood",
            Subject::Command(_) => "command",
            Subject::Mode(stream, _) => stream.name(),
        }
    }

    /// The subject one exact name stands for (`stderr/raw`, `ceiling/cpu`, `flood/per-byte`).
    pub fn from_name(name: &str) -> Option<Subject> {
        if let Some(command) = name.strip_prefix("cmd/") {
            // Read back from results: the name alone (the command line is not kept).
            return parse_command(&format!("{command}=?"))
                .ok()
                .map(|s| match s {
                    Subject::Command(c) => Subject::Command(Arc::new(ExternalCommand {
                        name: c.name.clone(),
                        argv: Vec::new(),
                    })),
                    other => other,
                });
        }
        Subject::every().find(|s| s.to_string() == name)
    }
}

/// `stderr/raw`, `ceiling/cpu`: the names the JSON and the `--modes` flag use.
impl fmt::Display for Subject {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Subject::Mode(stream, buffering) => write!(f, "{}/{}", stream.name(), buffering.name()),
            Subject::Ceiling(ceiling) => f.write_str(ceiling.name()),
            Subject::Flood(writer) => write!(f, "flood/{}", writer.name()),
            Subject::Command(command) => write!(f, "cmd/{}", command.name),
        }
    }
}

impl Serialize for Subject {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for Subject {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let name = String::deserialize(deserializer)?;
        // Results written before rows were typed name block rows with their capacity
        // (`stdout/block:8KiB`); the capacity is in the settings.
        let bare = name.split_once(':').map_or(name.as_str(), |(bare, _)| bare);
        Subject::from_name(bare).ok_or_else(|| {
            serde::de::Error::custom(format!("unknown mode {:?}", crate::units::printable(&name)))
        })
    }
}

/// The groups `--modes` accepts besides single names.
const GROUPS: &str =
    "std, all, modes, ceilings, flood, stdout, stderr, raw, line, block, frame, thread";

/// Every value one `--modes` item takes, as a shell completes it: the groups, then every
/// subject's name (a test holds it to the groups and to every subject).
pub const MODE_NAMES: &[&str] = &[
    "std",
    "all",
    "modes",
    "ceilings",
    "flood",
    "stdout",
    "stderr",
    "raw",
    "line",
    "block",
    "frame",
    "thread",
    "ceiling/cpu",
    "ceiling/transport",
    "stdout/raw",
    "stdout/line",
    "stdout/block",
    "stdout/frame",
    "stdout/thread",
    "stderr/raw",
    "stderr/line",
    "stderr/block",
    "stderr/frame",
    "stderr/thread",
    "flood/println",
    "flood/eprintln",
    "flood/lock",
    "flood/block",
    "flood/raw",
    "flood/per-byte",
    "flood/thread",
    "flood/tracing",
    "flood/tracing-non-blocking",
    "flood/tracing-lossless",
    "flood/env-logger",
    "flood/none",
];

/// `--modes`' parser, with [`MODE_NAMES`] for shell completion.
pub const MODES: crate::units::Completed<Vec<Subject>> = crate::units::Completed {
    parse: parse_subjects,
    names: MODE_NAMES,
};

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
    if text.starts_with("cmd/") {
        return Err("a cmd/NAME row comes from --command NAME=CMD, not from --modes".to_owned());
    }
    Subject::from_name(text).map(|s| vec![s]).ok_or_else(|| {
        let names: Vec<String> = Subject::every().map(|s| s.to_string()).collect();
        format!("unknown mode; valid: {GROUPS}, {}", names.join(", "))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn completion_offers_every_name_modes_takes() {
        let every: Vec<String> = GROUPS
            .split(", ")
            .map(str::to_owned)
            .chain(Subject::every().map(|s| s.to_string()))
            .collect();
        assert_eq!(
            MODE_NAMES,
            every.iter().map(String::as_str).collect::<Vec<_>>()
        );
        for name in MODE_NAMES {
            assert!(parse_subjects(name).is_ok(), "{name}");
        }
    }

    #[test]
    fn names_round_trip() {
        // The flags' names (clap's, from the variants) are the names written in results.
        #[cfg(feature = "clap")]
        {
            use clap::ValueEnum;
            for ceiling in Ceiling::value_variants() {
                let value = ceiling.to_possible_value().unwrap();
                assert_eq!(value.get_name(), ceiling.value());
            }
            assert_eq!(FloodWriter::value_variants(), FloodWriter::ALL);
            for writer in FloodWriter::value_variants() {
                let value = writer.to_possible_value().unwrap();
                assert_eq!(value.get_name(), writer.name());
            }
        }
        for subject in Subject::ceilings()
            .into_iter()
            .chain(Subject::all_modes())
            .chain(Subject::flood_writers())
        {
            assert_eq!(parse_subjects(&subject.to_string()), Ok(vec![subject]));
        }
        assert_eq!(parse_subjects("all").unwrap().len(), 12);
        assert_eq!(parse_subjects("flood").unwrap().len(), 12);
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

    #[test]
    fn a_subject_is_serialized_as_its_name() {
        for subject in Subject::every() {
            let json = serde_json::to_string(&subject).unwrap();
            assert_eq!(json, format!("{:?}", subject.to_string()));
            assert_eq!(serde_json::from_str::<Subject>(&json).unwrap(), subject);
        }
        let err = serde_json::from_str::<Subject>(r#""stdout/\u001b[2J""#).unwrap_err();
        assert!(!err.to_string().contains('\x1b'), "{err}");
    }
}
