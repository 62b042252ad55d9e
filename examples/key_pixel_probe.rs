//! An independent truth for `wrap --terminal`'s key→pixel figures: an X client of its own, no
//! code of wrap's, that types keys into a terminal's window through XTEST and times the window's
//! DAMAGE reports (every rectangle drawn) as they reach it.
//!
//! ```sh
//! cargo run --release --example key_pixel_probe -- DISPLAY KEYS PAUSE_MS
//! # e.g. on an Xvfb where an xterm runs `dua i /usr/share`:
//! cargo run --release --example key_pixel_probe -- :7 jjjjjkkkkkjjjjjkkkkk 300
//! ```
//!
//! It finds the largest mapped top-level window, focuses it, then for each character of KEYS
//! (letters and digits) reads the clock, presses and releases the key, and collects the
//! window's changes until PAUSE_MS after the key: key→first pixel and key→last pixel are the
//! first and the last change seen in that time. It prints each key and the p50/p95 of both
//! (nearest rank), in ms. scripts/pixel-probe.sh runs it beside wrap on the same display.

#[path = "probes/summary.rs"]
mod summary;

use std::os::fd::AsFd;
use std::time::{Duration, Instant};

use x11rb::connection::Connection;
use x11rb::protocol::Event;
use x11rb::protocol::damage::{self, ConnectionExt as _};
use x11rb::protocol::xproto::{ConnectionExt as _, InputFocus, MapState, Window};
use x11rb::protocol::xtest::ConnectionExt as _;
use x11rb::rust_connection::RustConnection;
use x11rb::wrapper::ConnectionExt as _;

fn main() {
    if let Err(e) = run() {
        eprintln!("key_pixel_probe: {e}");
        std::process::exit(1);
    }
}

fn run() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [display, keys, pause] = args.as_slice() else {
        return Err("usage: key_pixel_probe DISPLAY KEYS PAUSE_MS".into());
    };
    let pause = Duration::from_millis(
        pause
            .parse()
            .map_err(|_| format!("PAUSE_MS '{pause}' is not a whole number of ms"))?,
    );
    if keys.is_empty() || !keys.chars().all(|c| c.is_ascii_alphanumeric()) {
        return Err(format!("KEYS '{keys}': letters and digits only").into());
    }
    let (conn, screen) = x11rb::connect(Some(display))?;
    let root = conn.setup().roots[screen].root;
    let window = largest_window(&conn, root)?.ok_or("no mapped window on the display")?;
    let codes = keycodes(&conn, keys)?;

    focus(&conn, window)?;
    conn.damage_query_version(1, 1)?.reply()?;
    let watched = conn.generate_id()?;
    // Every rectangle drawn is reported, no re-arming: a terminal paints a frame in many requests,
    // and a report level that must be re-armed misses those that come before the re-arm.
    conn.damage_create(watched, window, damage::ReportLevel::RAW_RECTANGLES)?;
    conn.sync()?;
    // What was pending before the first key is not its answer.
    settle(&conn, watched, Duration::from_millis(500))?;

    let mut first = Vec::new();
    let mut last = Vec::new();
    for (key, code) in keys.chars().zip(codes) {
        let sent = Instant::now();
        conn.xtest_fake_input(
            x11rb::protocol::xproto::KEY_PRESS_EVENT,
            code,
            0,
            root,
            0,
            0,
            0,
        )?;
        conn.xtest_fake_input(
            x11rb::protocol::xproto::KEY_RELEASE_EVENT,
            code,
            0,
            root,
            0,
            0,
            0,
        )?;
        conn.flush()?;
        let changes = changes_until(&conn, watched, sent + pause)?;
        let ms = |t: Instant| t.duration_since(sent).as_secs_f64() * 1e3;
        match (changes.first(), changes.last()) {
            (Some(&a), Some(&b)) => {
                println!(
                    "key {key}: first pixel {:.2} ms, last pixel {:.2} ms, {} changes",
                    ms(a),
                    ms(b),
                    changes.len()
                );
                first.push(ms(a));
                last.push(ms(b));
            }
            _ => println!("key {key}: no change in {} ms", pause.as_millis()),
        }
    }
    println!("{}", summary::summary(keys.len(), &mut first, &mut last));
    Ok(())
}

/// The pointer into `window` and the keyboard's focus on it: XTEST's keys go where the focus is.
fn focus(conn: &RustConnection, window: Window) -> Result<(), Box<dyn std::error::Error>> {
    let geometry = conn.get_geometry(window)?.reply()?;
    conn.warp_pointer(
        x11rb::NONE,
        window,
        0,
        0,
        0,
        0,
        (geometry.width / 2) as i16,
        (geometry.height / 2) as i16,
    )?;
    conn.set_input_focus(InputFocus::PARENT, window, x11rb::CURRENT_TIME)?;
    Ok(())
}

/// The largest mapped child of the root: the terminal, on a display with no window manager.
fn largest_window(
    conn: &impl Connection,
    root: Window,
) -> Result<Option<Window>, Box<dyn std::error::Error>> {
    let mut best = None;
    for child in conn.query_tree(root)?.reply()?.children {
        let Ok(attributes) = conn.get_window_attributes(child)?.reply() else {
            continue;
        };
        if attributes.map_state != MapState::VIEWABLE {
            continue;
        }
        let Ok(g) = conn.get_geometry(child)?.reply() else {
            continue;
        };
        let area = u32::from(g.width) * u32::from(g.height);
        if best.is_none_or(|(a, _)| area > a) {
            best = Some((area, child));
        }
    }
    Ok(best.map(|(_, w)| w))
}

/// Each key's code: the one whose first keysym is the character (Latin-1 keysyms are the
/// character's code).
fn keycodes(conn: &impl Connection, keys: &str) -> Result<Vec<u8>, Box<dyn std::error::Error>> {
    let setup = conn.setup();
    let count = setup.max_keycode - setup.min_keycode + 1;
    let map = conn
        .get_keyboard_mapping(setup.min_keycode, count)?
        .reply()?;
    let per = usize::from(map.keysyms_per_keycode);
    keys.chars()
        .map(|c| {
            map.keysyms
                .chunks(per)
                .position(|syms| syms.first() == Some(&u32::from(c)))
                .map(|i| setup.min_keycode + i as u8)
                .ok_or_else(|| format!("no key types '{c}'").into())
        })
        .collect()
}

/// Waits until the window has not changed for `quiet`.
fn settle(
    conn: &RustConnection,
    watched: damage::Damage,
    quiet: Duration,
) -> Result<(), Box<dyn std::error::Error>> {
    while !changes_until(conn, watched, Instant::now() + quiet)?.is_empty() {}
    Ok(())
}

/// The times the window's changes reached this client, until `end`.
fn changes_until(
    conn: &RustConnection,
    watched: damage::Damage,
    end: Instant,
) -> Result<Vec<Instant>, Box<dyn std::error::Error>> {
    let mut seen = Vec::new();
    loop {
        while let Some(event) = conn.poll_for_event()? {
            if let Event::DamageNotify(n) = event
                && n.damage == watched
            {
                seen.push(Instant::now());
            }
        }
        let now = Instant::now();
        if now >= end {
            return Ok(seen);
        }
        let left = end - now;
        let timeout = rustix::event::Timespec {
            tv_sec: left.as_secs() as i64,
            tv_nsec: i64::from(left.subsec_nanos()),
        };
        let fd = conn.stream().as_fd();
        let mut fds = [rustix::event::PollFd::new(
            &fd,
            rustix::event::PollFlags::IN,
        )];
        rustix::event::poll(&mut fds, Some(&timeout))?;
    }
}
