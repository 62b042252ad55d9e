//! What a bench hands each child (`crate::plumbing::children`) is what the child's command reads,
//! through the same clap definitions: tested here, above every command, where all of them are
//! in reach (a command never names another, nor the command line).

use std::ffi::OsString;
use std::time::Duration;

use clap::Parser;

use super::{Cli, Command};
use crate::commands::run::RunArgs;
use crate::plumbing::children::{HeadlessFlood, HeadlessRun, HeadlessWrap, RUN_ENV};
use crate::plumbing::frame_args::ChildOf;
use flushlab_core::accounting::Accounting;
use flushlab_core::backend::BackendKind;
use flushlab_core::files::Destination;
use flushlab_core::results::conditions::ReaderModel;
use flushlab_core::scene::Scene;
use flushlab_core::subject::{Ceiling, FloodWriter};
use flushlab_core::wait::Wait;
use flushlab_core::writer_mode::{Buffering, DEFAULT_CAPACITY, Stream};

/// The variables a bench clears before it starts a run are every one the run reads.
#[test]
fn a_bench_clears_every_variable_a_run_reads() {
    let mut read = RunArgs::env_vars();
    let mut cleared: Vec<String> = RUN_ENV.iter().map(|v| (*v).to_owned()).collect();
    read.sort();
    cleared.sort();
    assert_eq!(read, cleared);
}

/// What a parent hands a child is what the child reads: every setting, through the same
/// clap definition, with no environment variable in between.
#[test]
fn a_headless_run_reads_back_what_its_parent_wrote() {
    let runs = [
        HeadlessRun {
            stream: Stream::Stderr,
            buffering: Some(Buffering::Block),
            ceiling: None,
            capacity: 8192,
            duration: Duration::from_secs_f64(0.3),
            scene: Scene::Sparse,
            sync: true,
            backend: BackendKind::Lean,
            wait: Wait::Poll,
            size: (80, 24),
            accounting: Accounting::Counting,
            child_of: ChildOf {
                parent: 4321,
                report: "/tmp/scratch/report.json".into(),
            },
        },
        HeadlessRun {
            stream: Stream::Stdout,
            buffering: None,
            ceiling: Some(Ceiling::Transport),
            capacity: 64,
            duration: Duration::from_secs(2),
            scene: Scene::Full,
            sync: false,
            backend: BackendKind::Crossterm,
            wait: Wait::Sleep,
            size: (200, 60),
            accounting: Accounting::Kernel,
            child_of: ChildOf {
                parent: 1,
                report: "r.json".into(),
            },
        },
    ];
    for run in runs {
        let args = std::iter::once("flushlab".into()).chain(run.args());
        let cli = Cli::try_parse_from(args).unwrap().run;
        let Some(flushlab_core::files::Destination::File(report)) = cli.report else {
            panic!("no report file in {:?}", run.args());
        };
        let read = HeadlessRun {
            stream: cli.stream,
            buffering: cli.buffering,
            ceiling: cli.ceiling,
            capacity: cli.capacity,
            duration: cli.duration.unwrap(),
            scene: cli.scene,
            sync: cli.sync,
            backend: cli.backend,
            wait: cli.wait,
            size: cli.size.unwrap(),
            accounting: cli.accounting.accounting.unwrap(),
            child_of: ChildOf {
                parent: cli.exit_with_parent.unwrap(),
                report,
            },
        };
        assert_eq!(read, run);
    }
}

/// What a bench hands its flood child is what the child reads, through the same clap
/// definition.
#[test]
fn a_headless_flood_reads_back_what_its_parent_wrote() {
    let floods = [
        HeadlessFlood {
            writer: FloodWriter::Thread,
            duration: Duration::from_secs_f64(0.5),
            capacity: 4096,
            work: Some(Duration::from_micros(17)),
            rate: Some(20_000),
            accounting: Accounting::Counting,
            child_of: ChildOf {
                parent: 77,
                report: "/tmp/x/report.json".into(),
            },
        },
        HeadlessFlood {
            writer: FloodWriter::Println,
            duration: Duration::from_secs(3),
            capacity: DEFAULT_CAPACITY,
            work: None,
            rate: None,
            accounting: Accounting::Kernel,
            child_of: ChildOf {
                parent: 1,
                report: "r.json".into(),
            },
        },
    ];
    for flood in floods {
        let args = std::iter::once("flushlab".into()).chain(flood.args());
        let Some(Command::Flood(read)) = Cli::try_parse_from(args).unwrap().command else {
            panic!("not a flood: {:?}", flood.args());
        };
        let Some(Destination::File(report)) = read.report else {
            panic!("no report file in {:?}", flood.args());
        };
        let read = HeadlessFlood {
            writer: read.writer,
            duration: read.duration.unwrap(),
            capacity: read.capacity,
            work: read.work,
            rate: read.rate,
            accounting: read.accounting.accounting.unwrap(),
            child_of: ChildOf {
                parent: read.exit_with_parent.unwrap(),
                report,
            },
        };
        assert_eq!(read, flood);
    }
}

/// What a bench hands its `--command` child is what wrap reads, through the same clap
/// definition; CMD's own flags stay CMD's.
#[test]
fn a_headless_wrap_reads_back_what_its_parent_wrote() {
    let wrap = HeadlessWrap {
        duration: Duration::from_secs_f64(1.5),
        size: (80, 24),
        reader: ReaderModel::Throttle {
            bytes_per_second: 2_000_000,
        },
        keys: Some(
            flushlab_core::keyscript::KeyScript::parse("j*10@20ms <wait 1s> <C-x> q").unwrap(),
        ),
        child_of: ChildOf {
            parent: 99,
            report: "/tmp/y/report.json".into(),
        },
        command: ["cmatrix", "-b", "--duration", "7"]
            .map(OsString::from)
            .into(),
    };
    let args = std::iter::once("flushlab".into()).chain(wrap.args());
    let Some(Command::Wrap(read)) = Cli::try_parse_from(args).unwrap().command else {
        panic!("not a wrap: {:?}", wrap.args());
    };
    let Some(Destination::File(report)) = read.report else {
        panic!("no report file in {:?}", wrap.args());
    };
    let read = HeadlessWrap {
        duration: read.duration.unwrap(),
        size: read.size,
        reader: read.reader,
        keys: read.keys,
        child_of: ChildOf {
            parent: read.exit_with_parent.unwrap(),
            report,
        },
        command: read.command,
    };
    assert_eq!(read, wrap);
}
