//! The default tier: every fast integration test, one binary (one link after a change, and
//! one process whose threads run the files' tests side by side). The slow suites (corpus, docs,
//! the explorer in a pty, reliability, the lesson in tmux, painted frames, plots) are their own
//! binaries behind the `slow-tests` feature; CONTRIBUTING.md lists both tiers.

#[path = "../common/mod.rs"]
mod common;
#[path = "../common/example.rs"]
#[allow(dead_code)]
mod example;

mod accounting;
mod against;
mod app_fuzz;
mod architecture;
mod bench;
mod destinations;
mod doctor;
mod examples;
mod faults;
mod figures;
mod flood;
mod kernel;
mod keyed;
mod links;
mod observer;
mod profile_digest;
mod seen;
mod surfaces;
mod terminal_report;
mod tour;
mod trace;
mod tracer;
mod via;
mod wrap;
mod writer_stack;
mod xtermjs;
