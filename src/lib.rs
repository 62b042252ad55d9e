//! flushlab: a terminal lab that makes the cost of stdout/stderr buffering visible.
//!
//! See ARCHITECTURE.md for the code map and the invariants.

#![forbid(unsafe_code)]

pub mod accounting;
pub mod app;
pub mod bench;
pub mod ceiling;
pub mod cli;
pub mod condition;
pub mod embed;
pub mod figures;
pub mod files;
pub mod flood;
pub mod frame_args;
pub mod frame_writer;
pub mod hud;
pub mod keyboard;
pub mod keys;
pub mod latency;
pub mod lesson;
pub mod measured;
pub mod meters;
pub mod outcome;
pub mod paint;
pub mod profile_digest;
pub mod pty;
pub mod renderer;
pub mod report;
pub mod results;
pub mod runner;
pub mod scene;
pub mod subject;
pub mod sys;
pub mod terminal_report;
pub mod terminal_session;
pub mod timing;
pub mod tour;
pub mod units;
pub mod wrap;
pub mod writer_mode;
