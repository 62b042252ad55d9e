use std::process::ExitCode;

use clap::Parser;
use flushlab::cli::{Cli, Command};

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Some(Command::Bench(args)) => flushlab::bench::run(args),
        Some(Command::Profile(args)) => flushlab::profile_digest::run(args),
        None => {
            if let Err(e) = cli.run.validate() {
                e.exit();
            }
            flushlab::runner::run(cli.run)
        }
    };
    match result {
        Ok(code) => code,
        Err(e) => {
            eprintln!("flushlab: {e:#}");
            ExitCode::FAILURE
        }
    }
}
