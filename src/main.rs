use std::process::ExitCode;

use clap::Parser;

fn main() -> ExitCode {
    let cli = flushlab::cli::Cli::parse();
    if let Err(e) = cli.validate() {
        e.exit();
    }
    match flushlab::runner::run(cli) {
        Ok(code) => code,
        Err(e) => {
            eprintln!("flushlab: {e:#}");
            ExitCode::FAILURE
        }
    }
}
