//! Key→pixel on Wayland: a headless wlroots compositor of flushlab's own (sway: no GPU, no
//! input devices, software rendering), the terminal on it, the keys typed through the
//! virtual-keyboard protocol (as `wtype`) and the terminal's region of the output watched
//! through wlr-screencopy with damage (as `grim`, once a change).
//!
//! `--wayland-display` runs the terminal on a sway session of the person's instead, found through
//! sway's IPC as on the own one: the window made floating at the size it asked for and given
//! the keyboard, its output's refresh read from sway.
//!
//! sway refuses to run as root ("Unable to drop root"): when wrap is root the compositor runs as
//! `nobody` in a runtime directory of its own, while the terminal and CMD run as wrap (root may
//! use any socket), so the observer reaches CMD as it does on X11.
//!
//! Screencopy answers a copy at the output's next commit that changed the region: a change is
//! timed when the compositor committed it (the `ready` event's CLOCK_MONOTONIC time), so a key
//! waits for the output's next refresh on Wayland as it does on a real display. Commits made
//! while no copy was pending merge into the next copy: the next copy is asked for before the
//! last one is read, so only a commit within that round trip (well under one refresh) merges.

mod client;
mod compositor;
mod ipc;
mod keyboard;
mod screencopy;

pub use self::client::Client;
pub use self::compositor::{Compositor, Session};
pub use self::ipc::{Output, Placed, Region, SessionPaths, find_session};
pub use self::keyboard::{Keyboard, Stroke};
pub use self::screencopy::Capture;
