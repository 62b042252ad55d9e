//! `flushlab wrap`'s command line: its flags as clap parses them ([`args`]), lowered once into
//! the `flushlab-wrap` crate's plan ([`lower`]), and the crate's run of it. A refusal of the
//! flags is said here, before anything starts.

pub mod args;
pub mod lower;

use flushlab_core::outcome::Outcome;

pub fn run(args: &args::WrapArgs) -> anyhow::Result<Outcome> {
    match lower::plan(args) {
        Ok(plan) => flushlab_wrap::run(plan),
        Err(refusal) => Ok(refusal.tell()),
    }
}
