//! The observer: an X client that watches a terminal's window and reads the frame marker
//! after each repaint.
//!
//! The X DAMAGE extension reports every repaint of the window (xterm and st draw with core
//! requests, alacritty and kitty on software GL with a PutImage: all of them damage it). On each
//! report the damage is re-armed and two one-pixel-high strips through the markers are read
//! with two pipelined GetImage requests, one round trip: reading the whole window would take
//! 2–20 ms, longer than a frame. Where the markers' pixels are is found once, from the
//! calibration pattern the painted run draws first (no font, padding or border is assumed).

use std::os::fd::AsFd;
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use x11rb::connection::{Connection, RequestConnection};
use x11rb::protocol::Event;
use x11rb::protocol::damage::{self, ConnectionExt as _};
use x11rb::protocol::xproto::{ConnectionExt as _, ImageFormat, ImageOrder, MapState, Window};
use x11rb::rust_connection::RustConnection;

use crate::strips::{Strips, decode_strip, find_strips};
use flushlab_core::detect::recording::Recording;

/// A connection to the display, and the window it watches once found.
pub struct X11Watcher {
    conn: RustConnection,
    root: Window,
}

impl X11Watcher {
    pub fn connect(display: &str) -> anyhow::Result<X11Watcher> {
        let (conn, screen) = RustConnection::connect(Some(display))
            .with_context(|| format!("connecting to the X display {display}"))?;
        if conn.setup().image_byte_order != ImageOrder::LSB_FIRST {
            bail!(
                "the X server sends pixels most significant byte first, which the observer does not read"
            );
        }
        let root = conn.setup().roots[screen].root;
        Ok(X11Watcher { conn, root })
    }

    /// The terminal's window: the largest viewable top-level window (the display is the
    /// observer's own, so the terminal's windows are the only ones). `None` while there is none.
    pub fn terminal_window(&self) -> anyhow::Result<Option<Window>> {
        let children = self.conn.query_tree(self.root)?.reply()?.children;
        let mut best = None;
        for window in children {
            // A window that vanished meanwhile (kitty maps a temporary one first) is skipped.
            let Ok(attributes) = self.conn.get_window_attributes(window)?.reply() else {
                continue;
            };
            let Ok(geometry) = self.conn.get_geometry(window)?.reply() else {
                continue;
            };
            let area = u32::from(geometry.width) * u32::from(geometry.height);
            if attributes.map_state == MapState::VIEWABLE && best.is_none_or(|(_, a)| area > a) {
                best = Some((window, area));
            }
        }
        Ok(best.map(|(window, _)| window))
    }

    /// The window of the terminal this process runs in, on a desktop: `$WINDOWID` (xterm,
    /// urxvt, st, alacritty and kitty set it), else the window whose `_NET_WM_PID` is one of
    /// this process's ancestors (looked for among the top-level windows and their children,
    /// where a window manager put them in frames).
    pub fn own_window(&self) -> anyhow::Result<Option<Window>> {
        if let Some(id) = std::env::var("WINDOWID")
            .ok()
            .and_then(|w| w.trim().parse::<u32>().ok())
            && self.conn.get_geometry(id)?.reply().is_ok()
        {
            return Ok(Some(id));
        }
        let mut ancestors = Vec::new();
        let mut ids = flushlab_core::sys::process_ids(None);
        while let Some(parent) = ids
            .map(|i| i.parent)
            .filter(|p| *p > 0 && ancestors.len() < 64)
        {
            ancestors.push(parent as u32);
            ids = flushlab_core::sys::process_ids(Some(parent));
        }
        self.window_of(&ancestors)
    }

    /// The window whose `_NET_WM_PID` is one of `pids`, among the top-level windows and their
    /// children (where a window manager put them in frames); `None` while there is none.
    pub fn window_of(&self, pids: &[u32]) -> anyhow::Result<Option<Window>> {
        let atom = self.conn.intern_atom(true, b"_NET_WM_PID")?.reply()?.atom;
        if atom == x11rb::NONE {
            return Ok(None);
        }
        let top = self.conn.query_tree(self.root)?.reply()?.children;
        let mut windows = top.clone();
        for window in top {
            if let Ok(tree) = self.conn.query_tree(window)?.reply() {
                windows.extend(tree.children);
            }
        }
        for window in windows {
            let Ok(property) = self
                .conn
                .get_property(
                    false,
                    window,
                    atom,
                    x11rb::protocol::xproto::AtomEnum::CARDINAL,
                    0,
                    1,
                )?
                .reply()
            else {
                continue;
            };
            let pid = property.value32().and_then(|mut v| v.next());
            let viewable = || {
                self.conn
                    .get_window_attributes(window)
                    .ok()
                    .and_then(|c| c.reply().ok())
                    .is_some_and(|a| a.map_state == MapState::VIEWABLE)
            };
            if pid.is_some_and(|pid| pids.contains(&pid)) && viewable() {
                return Ok(Some(window));
            }
        }
        Ok(None)
    }

    /// The mouse pointer moved to the screen's far corner: Xvfb draws it into its framebuffer,
    /// and a terminal that hides it while keys are typed (kitty) would show the camera its
    /// comings and goings as changes of the window.
    pub fn pointer_away(&self) -> anyhow::Result<()> {
        let screen = &self.conn.setup().roots[0];
        let (x, y) = (
            i16::try_from(screen.width_in_pixels.saturating_sub(1)).unwrap_or(i16::MAX),
            i16::try_from(screen.height_in_pixels.saturating_sub(1)).unwrap_or(i16::MAX),
        );
        self.conn
            .warp_pointer(x11rb::NONE, self.root, 0, 0, 0, 0, x, y)?
            .check()?;
        Ok(())
    }

    /// Where `window` is on the screen, and its size: what the camera reads.
    pub fn region(&self, window: Window) -> anyhow::Result<crate::camera::Region> {
        let geometry = self.conn.get_geometry(window)?.reply()?;
        let at = self
            .conn
            .translate_coordinates(window, self.root, 0, 0)?
            .reply()?;
        let (x, y) = (
            u32::try_from(at.dst_x).unwrap_or(0),
            u32::try_from(at.dst_y).unwrap_or(0),
        );
        Ok((x, y, u32::from(geometry.width), u32::from(geometry.height)))
    }

    /// Reads the whole window once and finds the calibration pattern in it; `None` while it is
    /// not (yet) on screen.
    pub fn calibrate(&self, window: Window) -> anyhow::Result<Option<Strips>> {
        let geometry = self.conn.get_geometry(window)?.reply()?;
        let (width, height) = (geometry.width, geometry.height);
        let Ok(image) = self
            .conn
            .get_image(ImageFormat::Z_PIXMAP, window, 0, 0, width, height, !0)?
            .reply()
        else {
            return Ok(None);
        };
        Ok(find_strips(
            &image.data,
            usize::from(width),
            usize::from(height),
        ))
    }

    /// Reads the markers after every repaint of `window` until `done`, on a thread of its own
    /// (which owns this connection): the painter goes on drawing meanwhile.
    pub fn read_on_a_thread(
        self,
        window: Window,
        strips: Strips,
        done: std::sync::Arc<std::sync::atomic::AtomicBool>,
    ) -> std::io::Result<std::thread::JoinHandle<anyhow::Result<Observed>>> {
        flushlab_core::sys::spawn_thread("paint-observer", move || {
            let core = CoreShare::start();
            let watch = self.watch(window)?;
            let reads = watch.reads(&strips, || done.load(std::sync::atomic::Ordering::Relaxed))?;
            Ok(Observed {
                reads,
                cpu_share: core.share(),
            })
        })
    }

    /// Starts the damage reports of `window`: one each time it becomes damaged, re-armed by the
    /// watcher (what `reads` needs: one read back a report).
    pub fn watch(&self, window: Window) -> anyhow::Result<Watch<'_>> {
        self.watch_at(window, damage::ReportLevel::NON_EMPTY)
    }

    /// Starts the damage reports of `window`, every rectangle drawn (what `changes` needs: a
    /// re-armed report loses the changes made between the report and the re-arming, and with
    /// them a frame's last paint when the watcher is slow to wake).
    pub fn watch_every_change(&self, window: Window) -> anyhow::Result<Watch<'_>> {
        self.watch_at(window, damage::ReportLevel::RAW_RECTANGLES)
    }

    fn watch_at(&self, window: Window, level: damage::ReportLevel) -> anyhow::Result<Watch<'_>> {
        if self
            .conn
            .extension_information(damage::X11_EXTENSION_NAME)?
            .is_none()
        {
            bail!("the X server has no DAMAGE extension");
        }
        self.conn.damage_query_version(1, 1)?.reply()?;
        let id = self.conn.generate_id()?;
        self.conn.damage_create(id, window, level)?.check()?;
        Ok(Watch {
            observer: self,
            window,
            damage: id,
            rearm: level == damage::ReportLevel::NON_EMPTY,
            server: std::cell::Cell::new(None),
        })
    }
}

/// The share of a core the calling thread takes from now on: a watcher's cost, said in every
/// run that watches a window.
pub struct CoreShare {
    started: Instant,
    cpu_before: f64,
}

impl CoreShare {
    pub fn start() -> CoreShare {
        CoreShare {
            started: Instant::now(),
            cpu_before: Self::cpu(),
        }
    }

    fn cpu() -> f64 {
        let (user, system) = flushlab_core::sys::cpu_time(flushlab_core::sys::Usage::Thread);
        (user + system).as_secs_f64()
    }

    /// Its CPU time since [`CoreShare::start`] over the wall time.
    pub fn share(&self) -> f64 {
        (Self::cpu() - self.cpu_before) / self.started.elapsed().as_secs_f64().max(1e-9)
    }
}

/// A window's changes, one at a time, as a watcher sees them: X11's DAMAGE reports, Wayland's
/// screencopy commits. [`record_changes`] is the one loop over them.
pub trait Changes {
    /// Waits for the window's next change: when it was seen (CLOCK_MONOTONIC ns; of the reports
    /// read in one go, the first and the last); `None` once `done` says so (asked at least
    /// every 20 ms) or the window is gone.
    fn next_change(&mut self, done: &mut dyn FnMut() -> bool)
    -> anyhow::Result<Option<(u64, u64)>>;

    /// The two markers' frame numbers in the picture of the change just seen; `None` once the
    /// window is gone.
    fn markers(&mut self, strips: &Strips) -> anyhow::Result<Option<(Option<u32>, Option<u32>)>>;

    /// The display server's own stamps of the change just seen (the first and the last of the
    /// reports read in one go), CLOCK_MONOTONIC ns; `None` where it stamps nothing.
    fn server_stamps(&self) -> Option<(u64, u64)> {
        None
    }
}

/// Records when the window changed as each change comes, until `done` says to stop. Once
/// `strips` are known (the window showed the calibration pattern), the frame markers are read
/// back after each change and the frame both carry is recorded (`None`: the two disagreed, or
/// one was caught half painted). Returns the share of a core it took.
pub fn record_changes(
    watched: &mut dyn Changes,
    mut done: impl FnMut() -> bool,
    recording: &Recording,
    strips: &std::sync::OnceLock<Strips>,
) -> anyhow::Result<f64> {
    let core = CoreShare::start();
    while let Some((first, last)) = watched.next_change(&mut done)? {
        recording.window_changed(first);
        if last > first {
            recording.window_changed(last);
        }
        if let Some((server_first, server_last)) = watched.server_stamps() {
            recording.window_stamped(first, server_first);
            if last > first {
                recording.window_stamped(last, server_last);
            }
        }
        if let Some(strips) = strips.get() {
            let Some((top, bottom)) = watched.markers(strips)? else {
                break;
            };
            recording.window_showed(last, top.filter(|_| top == bottom));
        }
    }
    Ok(core.share())
}

impl Changes for Watch<'_> {
    fn next_change(
        &mut self,
        mut done: &mut dyn FnMut() -> bool,
    ) -> anyhow::Result<Option<(u64, u64)>> {
        let change = Watch::next_change(self, &mut done)?;
        if change.is_some() && self.rearm {
            self.observer.conn.flush()?;
        }
        Ok(change)
    }

    fn markers(&mut self, strips: &Strips) -> anyhow::Result<Option<(Option<u32>, Option<u32>)>> {
        self.read_strips(strips)
    }

    fn server_stamps(&self) -> Option<(u64, u64)> {
        self.server.get()
    }
}

/// One look at the window after a repaint.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Read {
    /// When the repaint's report arrived (CLOCK_MONOTONIC ns): the paint was at or before it.
    pub at_ns: u64,
    /// How long reading the two strips took: a frame shown for less is missed.
    pub round_trip: Duration,
    /// The frame number in the top and the bottom marker; `None` where the check failed.
    pub top: Option<u32>,
    pub bottom: Option<u32>,
}

/// What an observer thread saw, and the share of a core it took.
#[derive(Debug)]
pub struct Observed {
    pub reads: Vec<Read>,
    pub cpu_share: f64,
}

/// Damage reports of one window, armed.
pub struct Watch<'a> {
    observer: &'a X11Watcher,
    window: Window,
    damage: damage::Damage,
    /// Reports come once until re-armed (`watch`), or for every change (`watch_every_change`).
    rearm: bool,
    /// The server's stamps of the last change seen (its first and last report).
    server: std::cell::Cell<Option<(u64, u64)>>,
}

impl Watch<'_> {
    /// Reads the markers after every repaint until `done` says to stop (it is asked at least
    /// every 20 ms); a read the window no longer allows (it closed) ends the watch too.
    pub fn reads(
        &self,
        strips: &Strips,
        mut done: impl FnMut() -> bool,
    ) -> anyhow::Result<Vec<Read>> {
        let mut reads = Vec::with_capacity(1 << 14);
        while let Some((at_ns, _)) = self.next_change(&mut done)? {
            let asked = Instant::now();
            let Some((top, bottom)) = self.read_strips(strips)? else {
                break;
            };
            reads.push(Read {
                at_ns,
                round_trip: asked.elapsed(),
                top,
                bottom,
            });
        }
        Ok(reads)
    }

    /// The two markers' frame numbers now; `None` once the window is gone.
    fn read_strips(&self, strips: &Strips) -> anyhow::Result<Option<(Option<u32>, Option<u32>)>> {
        let conn = &self.observer.conn;
        let strip = |y| {
            conn.get_image(
                ImageFormat::Z_PIXMAP,
                self.window,
                strips.x,
                y,
                strips.width,
                1,
                !0,
            )
        };
        let (top, bottom) = (strip(strips.top_y)?, strip(strips.bottom_y)?);
        let (Ok(top), Ok(bottom)) = (top.reply(), bottom.reply()) else {
            return Ok(None);
        };
        Ok(Some((
            decode_strip(&top.data, &strips.centres),
            decode_strip(&bottom.data, &strips.centres),
        )))
    }

    /// Waits for the window's next change and re-arms the report (queued before anything is
    /// read back, so that a change meanwhile is reported again): the times the first and the
    /// last of the reports read in one go were taken (a terminal painting for milliseconds
    /// sends every-change reports without a pause); `None` once `done` says so (asked at least
    /// every 20 ms).
    fn next_change(&self, done: &mut impl FnMut() -> bool) -> anyhow::Result<Option<(u64, u64)>> {
        let conn = &self.observer.conn;
        while !done() {
            let mut damaged: Option<(u64, u64)> = None;
            let mut stamped: Option<(u64, u64)> = None;
            while let Some(event) = conn.poll_for_event()? {
                if let Event::DamageNotify(notify) = event
                    && notify.damage == self.damage
                {
                    let now = flushlab_core::sys::monotonic_ns();
                    damaged = Some((damaged.map_or(now, |d| d.0), now));
                    let server = server_ns(notify.timestamp, now);
                    stamped = Some((stamped.map_or(server, |s| s.0), server));
                }
            }
            self.server.set(stamped);
            if let Some(at_ns) = damaged {
                if self.rearm {
                    // Sent with what the caller asks next (reads flush it with their requests).
                    conn.damage_subtract(self.damage, x11rb::NONE, x11rb::NONE)?;
                }
                return Ok(Some(at_ns));
            }
            // Events are read at the loop's top, whether this says they came or the time is up.
            flushlab_core::sys::readable_within(conn.stream().as_fd(), Duration::from_millis(20))?;
        }
        Ok(None)
    }
}

/// An X server's timestamp (`GetTimeInMillis`: CLOCK_MONOTONIC in whole milliseconds, kept in
/// 32 bits) as CLOCK_MONOTONIC ns, read at `now_ns`, not after it: the stamp's wrap (every 49.7
/// days) undone by its distance from now.
fn server_ns(timestamp: u32, now_ns: u64) -> u64 {
    let now_ms = now_ns / 1_000_000;
    let behind = u64::from((now_ms as u32).wrapping_sub(timestamp));
    now_ms.saturating_sub(behind) * 1_000_000
}

impl Drop for Watch<'_> {
    fn drop(&mut self) {
        let _ = self.observer.conn.damage_destroy(self.damage);
        let _ = self.observer.conn.flush();
    }
}

/// Waits for `find` to give something, asking every 50 ms, for `limit` at most or until
/// `give_up` says so.
pub fn wait_for<T>(
    limit: Duration,
    mut give_up: impl FnMut() -> bool,
    mut find: impl FnMut() -> anyhow::Result<Option<T>>,
) -> anyhow::Result<Option<T>> {
    let start = Instant::now();
    while start.elapsed() < limit && !give_up() {
        if let Some(found) = find()? {
            return Ok(Some(found));
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    Ok(None)
}

#[cfg(test)]
mod server_stamp_tests {
    /// A stamp from before now, whole milliseconds; one from before the 32-bit wrap.
    #[test]
    fn a_server_stamp_is_now_less_its_distance() {
        let now = 5_000_123_456_789u64; // 5,000,123 ms
        let now_ms = now / 1_000_000;
        assert_eq!(
            super::server_ns((now_ms - 4) as u32, now),
            (now_ms - 4) * 1_000_000
        );
        assert_eq!(super::server_ns(now_ms as u32, now), now_ms * 1_000_000);
        let wrapped = (1u64 << 32) + 3; // 3 ms after the wrap
        let stamp = ((1u64 << 32) - 2) as u32; // 5 ms before
        assert_eq!(
            super::server_ns(stamp, wrapped * 1_000_000),
            (wrapped - 5) * 1_000_000
        );
    }
}
