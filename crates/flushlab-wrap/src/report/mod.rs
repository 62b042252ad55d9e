//! What a run measured, as data and as words: the headless report ([`wrap_report`]), a real
//! terminal's ([`pixel_report`]) and a browser's ([`browser_report`]), what a person saw
//! ([`seen_report`]), the summary ([`summary`]) and the diagnosis ([`mod@diagnose`]), and the
//! files written besides them ([`outputs`], [`filmstrip`]).
//!
//! It imports what a run and a terminal produce (`run`, `in_terminal`), the plan, the observers
//! and the wire; never a mode.

pub mod browser_report;
pub mod diagnose;
pub mod filmstrip;
pub mod outputs;
pub mod pixel_report;
pub mod seen_report;
pub mod summary;
pub mod wrap_report;
