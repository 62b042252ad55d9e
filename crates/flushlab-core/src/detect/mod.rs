//! Finding the frames in a program's output stream, with no help from the program: a cursor
//! model of the terminal ([`screen`]), frame detectors on its events behind one trait
//! ([`detector`]: [`sync_markers`], [`waits`] — the program's own waits, seen from inside it —
//! and [`cursor_restarts`]), the [`finder`] that asks them in order of trust, and what it found
//! ([`frames`]); one run's events in time ([`timeline`]), recorded as they happen
//! ([`recording`]), and what each key cost a program that
//! draws on keys, stage by stage ([`keyed`]). `flushlab wrap` feeds it what a wrapped program
//! writes; anything that holds such a stream can.

pub mod cursor_restarts;
pub mod detector;
pub mod finder;
pub mod frames;
pub mod keyed;
pub mod near;
pub mod pixels;
pub mod recording;
pub mod screen;
pub mod sync_markers;
pub mod timeline;
pub mod waits;
pub mod wire;
