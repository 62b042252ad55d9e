//! What a bench hands each child flushlab it starts: a headless run, a flood or a wrap, each one
//! typed value written as the very flags its command parses (each command's tests read them
//! back equal), so that no setting travels as an environment string the child might take from
//! somewhere else. A shared room: the bench writes these, the commands read their flags, and
//! neither imports the other.

use std::ffi::OsString;
use std::time::Duration;

use crate::plumbing::frame_args::ChildOf;
use flushlab_core::accounting::Accounting;
use flushlab_core::backend::BackendKind;
use flushlab_core::results::conditions::ReaderModel;
use flushlab_core::scene::Scene;
use flushlab_core::subject::{Ceiling, FloodWriter};
use flushlab_core::wait::Wait;
use flushlab_core::writer_mode::{Buffering, Stream};

/// Every environment variable a headless run reads: what a parent clears so that its own
/// environment never leaks into a child it configures. The run's clap definition is the truth;
/// a test of the run command checks that this list is it.
pub const RUN_ENV: [&str; 14] = [
    "ACCOUNTING",
    "STREAM",
    "BUFFERING",
    "CAPACITY",
    "DURATION",
    "SYNC",
    "SCENE",
    "BACKEND",
    "WAIT",
    "SIZE",
    "FPS_CAP",
    "PAINT",
    "HUD",
    "CEILING",
];

/// A headless run of one mode (or ceiling).
#[derive(Clone, Debug, PartialEq)]
pub struct HeadlessRun {
    pub stream: Stream,
    /// `None`: as std buffers the stream.
    pub buffering: Option<Buffering>,
    pub ceiling: Option<Ceiling>,
    pub capacity: usize,
    pub duration: Duration,
    pub scene: Scene,
    pub sync: bool,
    pub backend: BackendKind,
    pub wait: Wait,
    pub size: (u16, u16),
    /// How the child counts write(2): as its parent does.
    pub accounting: Accounting,
    pub child_of: ChildOf,
}

impl HeadlessRun {
    /// The child's command-line flags.
    pub fn args(&self) -> Vec<OsString> {
        let mut args: Vec<OsString> = [
            "--stream",
            self.stream.name(),
            "--capacity",
            &self.capacity.to_string(),
            "--duration",
            &self.duration.as_secs_f64().to_string(),
            "--scene",
            self.scene.name(),
            if self.sync { "--sync=on" } else { "--sync=off" },
            "--backend",
            self.backend.name(),
            "--wait",
            self.wait.name(),
            "--size",
            &format!("{}x{}", self.size.0, self.size.1),
            "--accounting",
            self.accounting.name(),
        ]
        .map(OsString::from)
        .into();
        if let Some(buffering) = self.buffering {
            args.extend(["--buffering".into(), buffering.name().into()]);
        }
        if let Some(ceiling) = self.ceiling {
            args.extend(["--ceiling".into(), ceiling.value().into()]);
        }
        args.extend(self.child_of.args());
        args
    }
}

/// A bench's flood row.
#[derive(Clone, Debug, PartialEq)]
pub struct HeadlessFlood {
    pub writer: FloodWriter,
    pub duration: Duration,
    pub capacity: usize,
    /// `--work` and `--rate`: the lines as a server's requests.
    pub work: Option<Duration>,
    pub rate: Option<u64>,
    pub accounting: Accounting,
    pub child_of: ChildOf,
}

impl HeadlessFlood {
    /// The child's command line after the program: `flood` and its flags.
    pub fn args(&self) -> Vec<OsString> {
        let mut args: Vec<OsString> = [
            "flood",
            "--writer",
            self.writer.name(),
            "--duration",
            &self.duration.as_secs_f64().to_string(),
            "--capacity",
            &self.capacity.to_string(),
            "--accounting",
            self.accounting.name(),
        ]
        .map(OsString::from)
        .into();
        if let Some(work) = self.work {
            args.extend(["--work".into(), work.as_secs_f64().to_string().into()]);
        }
        if let Some(rate) = self.rate {
            args.extend(["--rate".into(), rate.to_string().into()]);
        }
        args.extend(self.child_of.args());
        args
    }
}

/// A bench's `--command` row: another program run by wrap headless for the duration, in a
/// pty of the bench's size read by the bench's reader model.
#[derive(Clone, Debug, PartialEq)]
pub struct HeadlessWrap {
    pub duration: Duration,
    pub size: (u16, u16),
    pub reader: ReaderModel,
    /// Keys typed into CMD (`bench --keys`), as the script was written.
    pub keys: Option<flushlab_core::keyscript::KeyScript>,
    pub child_of: ChildOf,
    pub command: Vec<OsString>,
}

impl HeadlessWrap {
    /// The child's command line after the program: `wrap`, its flags, `--`, CMD.
    pub fn args(&self) -> Vec<OsString> {
        let mut args: Vec<OsString> = [
            "wrap",
            "--duration",
            &self.duration.as_secs_f64().to_string(),
            "--size",
            &format!("{}x{}", self.size.0, self.size.1),
            "--reader",
            &self.reader.to_string(),
        ]
        .map(OsString::from)
        .into();
        if let Some(keys) = &self.keys {
            args.extend(["--keys".into(), keys.source.clone().into()]);
        }
        args.extend(self.child_of.args());
        args.push("--".into());
        args.extend(self.command.iter().cloned());
        args
    }
}
