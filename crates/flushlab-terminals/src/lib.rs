//! flushlab's terminals: the part of flushlab that deals with terminals as things, not as
//! byte streams.
//!
//! - [`emulators`]: the launch table of the terminal emulators flushlab starts (how each is
//!   told its size, app id, own settings and command), and where each draws ([`emulators::Surface`]).
//! - [`display`]: an X server of flushlab's own, and the terminals launched on it;
//!   [`wayland`]: a headless compositor of its own and its client; [`browser`]: xterm.js in
//!   headless Chromium and the host process between it and a pty.
//! - [`keyboard`]: typing into a window as a person does (XTEST); [`window_watch`]: a window's
//!   changes through DAMAGE; [`strips`] and [`marker`]: the frame number painted into a frame
//!   and read back from its pixels; [`camera`]: the pictures kept of a window.
//! - [`session`]: the user's own terminal taken over (raw mode, alternate screen) and always
//!   given back; [`input`]: what the user's terminal sends, keys and replies, parsed.
//!
//! It knows nothing of wrap, paint or the explorer, which all build on it.

#![forbid(unsafe_code)]

pub mod browser;
pub mod camera;
pub mod display;
pub mod emulators;
pub mod input;
pub mod keyboard;
pub mod marker;
pub mod session;
pub mod strips;
pub mod terminal_option;
pub mod wayland;
pub mod window_watch;
