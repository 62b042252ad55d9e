//! An independent truth for `wrap --terminal foot`'s key→pixel figures: a Wayland client of its
//! own, no code of wrap's, that types keys into the focused window through the virtual-keyboard
//! protocol and times each change of a region of the output through wlr-screencopy.
//!
//! ```sh
//! cargo run --release --example wayland_key_pixel_probe -- SOCKET X,Y,W,H KEYS PAUSE_MS
//! # e.g. on a sway where foot runs `dua i /usr/share`, its window at 580,460 1400x900:
//! cargo run --release --example wayland_key_pixel_probe -- /tmp/rt/wayland-1 580,460,1400,900 jjjjjkkkkk 300
//! ```
//!
//! For each character of KEYS (letters and digits) it reads CLOCK_MONOTONIC, presses and
//! releases the key, and collects the region's changes until PAUSE_MS after the key. A change is
//! timed twice: by the compositor's stamp of the commit that made it (screencopy's `ready`) and
//! by when its answer reached this client (the stamp plus the copy and the socket: an upper
//! bound). It prints each key and the p50/p95 of key→first and key→last pixel by the stamp,
//! and key→last by arrival (nearest rank), in ms. scripts/pixel-probe.sh runs it beside wrap
//! on the same sway.

#[path = "probes/summary.rs"]
mod summary;

use std::os::fd::AsFd;
use std::os::unix::net::UnixStream;

use wayland_client::globals::{GlobalListContents, registry_queue_init};
use wayland_client::protocol::{wl_buffer, wl_output, wl_registry, wl_seat, wl_shm, wl_shm_pool};
use wayland_client::{Connection, Dispatch, EventQueue, QueueHandle, WEnum, delegate_noop};
use wayland_protocols_misc::zwp_virtual_keyboard_v1::client::{
    zwp_virtual_keyboard_manager_v1 as keyboards, zwp_virtual_keyboard_v1 as keyboard,
};
use wayland_protocols_wlr::screencopy::v1::client::{
    zwlr_screencopy_frame_v1 as frame, zwlr_screencopy_manager_v1 as screencopy,
};

type Error = Box<dyn std::error::Error>;

fn main() {
    if let Err(e) = run() {
        eprintln!("wayland_key_pixel_probe: {e}");
        std::process::exit(1);
    }
}

/// What the one copy asked for has said so far.
#[derive(Default)]
struct Copy {
    /// format, width, height, stride of the buffer the compositor wants.
    wanted: Option<(WEnum<wl_shm::Format>, u32, u32, u32)>,
    buffer_done: bool,
    /// The commit's stamp (CLOCK_MONOTONIC ns) and when the answer was read; or failed.
    ready: Option<Result<(u64, u64), ()>>,
}

impl Dispatch<frame::ZwlrScreencopyFrameV1, ()> for Copy {
    fn event(
        copy: &mut Self,
        _: &frame::ZwlrScreencopyFrameV1,
        event: frame::Event,
        _: &(),
        _: &Connection,
        _: &QueueHandle<Self>,
    ) {
        match event {
            frame::Event::Buffer {
                format,
                width,
                height,
                stride,
            } => copy.wanted = Some((format, width, height, stride)),
            frame::Event::BufferDone => copy.buffer_done = true,
            frame::Event::Ready {
                tv_sec_hi,
                tv_sec_lo,
                tv_nsec,
            } => {
                let secs = (u64::from(tv_sec_hi) << 32) | u64::from(tv_sec_lo);
                copy.ready = Some(Ok((secs * 1_000_000_000 + u64::from(tv_nsec), now_ns())));
            }
            frame::Event::Failed => copy.ready = Some(Err(())),
            _ => {}
        }
    }
}

impl Dispatch<wl_registry::WlRegistry, GlobalListContents> for Copy {
    fn event(
        _: &mut Self,
        _: &wl_registry::WlRegistry,
        _: wl_registry::Event,
        _: &GlobalListContents,
        _: &Connection,
        _: &QueueHandle<Self>,
    ) {
    }
}
delegate_noop!(Copy: ignore wl_output::WlOutput);
delegate_noop!(Copy: ignore wl_seat::WlSeat);
delegate_noop!(Copy: ignore wl_shm::WlShm);
delegate_noop!(Copy: ignore wl_buffer::WlBuffer);
delegate_noop!(Copy: wl_shm_pool::WlShmPool);
delegate_noop!(Copy: screencopy::ZwlrScreencopyManagerV1);
delegate_noop!(Copy: keyboards::ZwpVirtualKeyboardManagerV1);
delegate_noop!(Copy: keyboard::ZwpVirtualKeyboardV1);

fn now_ns() -> u64 {
    let t = rustix::time::clock_gettime(rustix::time::ClockId::Monotonic);
    t.tv_sec as u64 * 1_000_000_000 + t.tv_nsec as u64
}

/// The probe's connection: the queue, the output's region and the buffer it is copied into.
struct Probe {
    conn: Connection,
    queue: EventQueue<Copy>,
    copy: Copy,
    output: wl_output::WlOutput,
    shm: wl_shm::WlShm,
    screencopy: screencopy::ZwlrScreencopyManagerV1,
    region: [i32; 4],
    buffer: Option<wl_buffer::WlBuffer>,
    /// The memfd behind the buffer, kept open while the compositor may write to it.
    _memory: Option<std::os::fd::OwnedFd>,
}

impl Probe {
    /// Asks for the region's next change: a copy that waits for damage.
    fn ask(&mut self) -> Result<frame::ZwlrScreencopyFrameV1, Error> {
        self.copy = Copy::default();
        let [x, y, w, h] = self.region;
        let qh = self.queue.handle();
        let asked = self
            .screencopy
            .capture_output_region(0, &self.output, x, y, w, h, &qh, ());
        while !(self.copy.wanted.is_some() && self.copy.buffer_done) {
            if let Some(Err(())) = self.copy.ready {
                return Err("the compositor refused to copy the region".into());
            }
            self.queue.blocking_dispatch(&mut self.copy)?;
        }
        if self.buffer.is_none() {
            let (format, width, height, stride) = self.copy.wanted.expect("checked above");
            let WEnum::Value(format) = format else {
                return Err("the compositor wants a pixel format this client does not know".into());
            };
            let memory =
                rustix::fs::memfd_create("probe-screencopy", rustix::fs::MemfdFlags::CLOEXEC)?;
            let bytes = u64::from(stride) * u64::from(height);
            rustix::fs::ftruncate(&memory, bytes)?;
            let pool = self
                .shm
                .create_pool(memory.as_fd(), i32::try_from(bytes)?, &qh, ());
            self.buffer = Some(pool.create_buffer(
                0,
                i32::try_from(width)?,
                i32::try_from(height)?,
                i32::try_from(stride)?,
                format,
                &qh,
                (),
            ));
            pool.destroy();
            self._memory = Some(memory);
        }
        asked.copy_with_damage(self.buffer.as_ref().expect("made above"));
        self.conn.flush()?;
        Ok(asked)
    }

    /// The changes until `end_ns`, each as (stamp, read), asking for the next after each; the
    /// copy still waiting at the end is returned with them.
    fn changes_until(
        &mut self,
        mut waiting: frame::ZwlrScreencopyFrameV1,
        end_ns: u64,
    ) -> Result<(Vec<(u64, u64)>, frame::ZwlrScreencopyFrameV1), Error> {
        let mut seen = Vec::new();
        loop {
            self.queue.dispatch_pending(&mut self.copy)?;
            match self.copy.ready.take() {
                Some(Ok(change)) => {
                    waiting.destroy();
                    seen.push(change);
                    waiting = self.ask()?;
                    continue;
                }
                Some(Err(())) => return Err("the compositor failed a copy of the region".into()),
                None => {}
            }
            let now = now_ns();
            if now >= end_ns {
                return Ok((seen, waiting));
            }
            self.conn.flush()?;
            let Some(guard) = self.queue.prepare_read() else {
                continue;
            };
            let left = end_ns - now;
            let timeout = rustix::event::Timespec {
                tv_sec: (left / 1_000_000_000) as i64,
                tv_nsec: (left % 1_000_000_000) as i64,
            };
            let fd = guard.connection_fd();
            let mut fds = [rustix::event::PollFd::new(
                &fd,
                rustix::event::PollFlags::IN,
            )];
            if rustix::event::poll(&mut fds, Some(&timeout))? > 0 {
                match guard.read() {
                    Ok(_) => {}
                    Err(wayland_client::backend::WaylandError::Io(e))
                        if e.kind() == std::io::ErrorKind::WouldBlock => {}
                    Err(e) => return Err(e.into()),
                }
            }
        }
    }
}

/// SOCKET, the region X,Y,W,H, KEYS and PAUSE_MS, checked.
fn args() -> Result<(String, [i32; 4], String, u64), Error> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [socket, region, keys, pause] = args.as_slice() else {
        return Err("usage: wayland_key_pixel_probe SOCKET X,Y,W,H KEYS PAUSE_MS".into());
    };
    let numbers: Vec<i32> = region
        .split(',')
        .map(str::parse)
        .collect::<Result<_, _>>()
        .map_err(|_| format!("region '{region}' is not X,Y,W,H in pixels"))?;
    let numbers: [i32; 4] = numbers
        .try_into()
        .map_err(|_| format!("region '{region}' is not X,Y,W,H: four numbers"))?;
    let pause_ms: u64 = pause
        .parse()
        .map_err(|_| format!("PAUSE_MS '{pause}' is not a whole number of ms"))?;
    if keys.is_empty() || !keys.chars().all(|c| c.is_ascii_alphanumeric()) {
        return Err(format!("KEYS '{keys}': letters and digits only").into());
    }
    Ok((socket.clone(), numbers, keys.clone(), pause_ms))
}

/// An xkb keymap giving evdev code i+1 (xkb key code i+9) the keysym of `chars[i]` (letters
/// and digits are their own Latin-1 keysyms), NUL-terminated as the protocol wants it.
fn keymap(chars: &[char]) -> String {
    let mut keycodes = String::new();
    let mut symbols = String::new();
    for (i, c) in chars.iter().enumerate() {
        keycodes.push_str(&format!("<P{i}> = {};\n", i + 9));
        symbols.push_str(&format!("key <P{i}> {{ [ 0x{:x} ] }};\n", u32::from(*c)));
    }
    format!(
        "xkb_keymap {{\nxkb_keycodes \"probe\" {{ minimum = 8; maximum = {}; {keycodes} }};\n\
         xkb_types \"probe\" {{ include \"complete\" }};\n\
         xkb_compat \"probe\" {{ include \"complete\" }};\n\
         xkb_symbols \"probe\" {{ {symbols} }};\n}};\n\0",
        chars.len() + 9
    )
}

/// Connects to `socket`, binds what the probe needs, and uploads a keymap of `chars`.
fn connect(
    socket: &str,
    region: [i32; 4],
    chars: &[char],
) -> Result<(Probe, keyboard::ZwpVirtualKeyboardV1), Error> {
    let conn = Connection::from_socket(
        UnixStream::connect(socket).map_err(|e| format!("connecting to {socket}: {e}"))?,
    )?;
    let (globals, mut queue) = registry_queue_init::<Copy>(&conn)?;
    let qh = queue.handle();
    let output: wl_output::WlOutput = globals.bind(&qh, 1..=4, ())?;
    let shm: wl_shm::WlShm = globals.bind(&qh, 1..=1, ())?;
    let seat: wl_seat::WlSeat = globals.bind(&qh, 1..=7, ())?;
    let screencopy: screencopy::ZwlrScreencopyManagerV1 = globals
        .bind(&qh, 3..=3, ())
        .map_err(|_| "the compositor has no wlr-screencopy version 3")?;
    let keyboards: keyboards::ZwpVirtualKeyboardManagerV1 = globals
        .bind(&qh, 1..=1, ())
        .map_err(|_| "the compositor has no virtual-keyboard protocol")?;
    let map = keymap(chars);
    let memory = rustix::fs::memfd_create("probe-keymap", rustix::fs::MemfdFlags::CLOEXEC)?;
    rustix::io::write(&memory, map.as_bytes())?;
    let typing = keyboards.create_virtual_keyboard(&seat, &qh, ());
    typing.keymap(1, memory.as_fd(), u32::try_from(map.len())?);
    let mut copy = Copy::default();
    queue.roundtrip(&mut copy)?;
    let probe = Probe {
        conn,
        queue,
        copy,
        output,
        shm,
        screencopy,
        region,
        buffer: None,
        _memory: None,
    };
    Ok((probe, typing))
}

fn run() -> Result<(), Error> {
    let (socket, region, keys, pause_ms) = args()?;
    let distinct: Vec<char> = keys.chars().fold(Vec::new(), |mut all, c| {
        if !all.contains(&c) {
            all.push(c);
        }
        all
    });
    let (mut probe, typing) = connect(&socket, region, &distinct)?;
    // What changes before the first key is not its answer: wait for 500 ms without one.
    let mut waiting = probe.ask()?;
    loop {
        let (seen, next) = probe.changes_until(waiting, now_ns() + 500_000_000)?;
        waiting = next;
        if seen.is_empty() {
            break;
        }
    }

    let (mut first, mut last, mut last_read) = (Vec::new(), Vec::new(), Vec::new());
    for (key, c) in keys.chars().enumerate() {
        let code = distinct
            .iter()
            .position(|&d| d == c)
            .expect("every key is in the map");
        let code = u32::try_from(code + 1)?;
        let sent = now_ns();
        let ms_stamp = u32::try_from(sent / 1_000_000 % u64::from(u32::MAX))?;
        typing.key(ms_stamp, code, 1);
        typing.key(ms_stamp, code, 0);
        probe.conn.flush()?;
        let (seen, next) = probe.changes_until(waiting, sent + pause_ms * 1_000_000)?;
        waiting = next;
        let after: Vec<(u64, u64)> = seen.into_iter().filter(|&(at, _)| at >= sent).collect();
        let ms = |t: u64| (t - sent) as f64 / 1e6;
        match (after.first(), after.last()) {
            (Some(&(a, _)), Some(&(b, read))) => {
                println!(
                    "key {key} '{c}': first pixel {:.2} ms, last pixel {:.2} ms (read at {:.2}), {} changes",
                    ms(a),
                    ms(b),
                    ms(read),
                    after.len()
                );
                first.push(ms(a));
                last.push(ms(b));
                last_read.push(ms(read));
            }
            _ => println!("key {key} '{c}': no change in {pause_ms} ms"),
        }
    }
    waiting.destroy();
    typing.destroy();
    probe.conn.flush()?;
    println!(
        "{}; key→last pixel read p50 {:.2} ms",
        summary::summary(keys.len(), &mut first, &mut last),
        summary::rank(&mut last_read, 0.50)
    );
    Ok(())
}
