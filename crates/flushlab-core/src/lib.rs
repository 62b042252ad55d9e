//! flushlab's measurement core: what the `flushlab` binary measures with, without its command
//! line or its screens, for programs that measure their own output.
//!
//! - [`writer_mode`]: the writer stacks (stream × buffering), built in one place, over a
//!   duplicated file descriptor, never a stolen one.
//! - [`accounting`]: how write(2) calls and bytes are counted (`/proc/self/io`, or a layer).
//! - [`meters`], [`timing`]: per-frame counts and the frame's time split (build, encode,
//!   write(2), asleep in the kernel).
//! - [`embed`]: the same for another ratatui app: wrap its writer, measure each draw.
//! - [`backend`]: the encoders a frame is drawn with (ratatui's crossterm backend, and
//!   [`backend::LeanBackend`], the same screen for a fraction of the CPU).
//! - [`scene`], [`condition`]: what a frame shows and under which conditions it was measured.
//! - [`detect`]: finding the frames in another program's output stream.
//! - [`seen`]: what a person sees while a frame arrives: a terminal model that paints by a
//!   policy, and each key's flashes, tears and scrollback churn.
//! - [`confirm`]: evidence from the terminal's side that frames got there (cursor-position
//!   answers; painted frames plug in through the same trait).
//! - [`results`]: the typed results schema, statistics and exporters (JSON, CSV, Markdown, SVG).
//! - [`reader`]: the reader models at work: a pty's other side read as fast as a terminal would.
//! - [`samply`]: reading the profiles samply writes (the Firefox Profiler's format).
//! - [`sys`]: the operating system's calls (Linux today), in one place.
//!
//! See ARCHITECTURE.md at the repository's top for the code map and its invariants.

#![forbid(unsafe_code)]

pub mod accounting;
pub mod backend;
pub mod condition;
pub mod confirm;
pub mod detect;
pub mod embed;
pub mod figures;
pub mod files;
pub mod frame_writer;
pub mod keyscript;
pub mod latency;
pub mod meters;
pub mod outcome;
pub mod reader;
pub mod results;
pub mod samply;
pub mod scene;
pub mod seen;
pub mod statistics;
pub mod subject;
pub mod sys;
pub mod timing;
pub mod units;
pub mod wait;
pub mod writer_mode;
