//! `wrap --via LAYERS`: CMD at the far end of real layers (an ssh connection to an sshd of
//! wrap's own, a tmux of wrap's own, or tmux on the far side of ssh), over a link of wrap's own
//! (two network namespaces joined by a packet relay that delays, paces and drops), with the
//! kernel observer rooted at CMD on the far side. Keys are typed into the near end as a person
//! types them; every event is on CLOCK_MONOTONIC, so a key is timed end to end on one clock.
//!
//! What runs, from the near end, for `--via ssh,tmux`: wrap's pty ← the ssh client (near
//! namespace) ⇄ the relay (wrap's threads, one TUN device in each namespace) ⇄ sshd (far
//! namespace, a pid and mount namespace of its own) → tmux → the shim ([`far_root`]) → CMD.
//! The wire (link, sshd, keys) is started once a wrap and ends with it; each run is one
//! connection. `--via tmux` alone needs no link: its client and server run in a pid namespace
//! of their own, so the server (a daemon) ends with wrap however wrap ends.

pub mod both_ends;
pub mod far_root;
mod far_user;
mod layers;
mod link;
mod mosh;
mod report;
mod sshd;
mod tmux;
mod wire;

pub use self::layers::{Layer, check, parse_loss, parse_rate, parse_rtt};
pub use self::link::LinkSettings;
pub use self::report::{SyncLost, ViaReport};
pub(crate) use self::wire::LinkWaits;
pub use self::wire::{NearCommand, Wire};
