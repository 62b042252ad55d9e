//! The commands, a room each: what `flushlab CMD` runs, from its flags to its exit. A command
//! imports the shared rooms beside `commands/` (the frame loop's parts, the explorer's screen,
//! painted frames, pty readers, a bench's children) and the core, never another command; only
//! `cli.rs` and `main.rs`, above them, name them all (ARCHITECTURE.md, `tests/it/architecture.rs`).

pub mod bench;
pub mod flood;
pub mod paint;
pub mod profile;
pub mod report;
pub mod run;
pub mod tour;
