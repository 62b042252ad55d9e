//! The terminal's region of the output watched through wlr-screencopy with damage (as `grim`,
//! once a change): each change timed when the compositor committed it.

use std::os::fd::{AsFd, OwnedFd};
use std::time::Duration;

use anyhow::{Context, bail};
use wayland_client::protocol::{wl_buffer, wl_output, wl_shm, wl_shm_pool};
use wayland_client::{Connection, Dispatch, EventQueue, Proxy, QueueHandle, WEnum, delegate_noop};
use wayland_protocols_wlr::screencopy::v1::client::{
    zwlr_screencopy_frame_v1 as frame, zwlr_screencopy_manager_v1 as screencopy,
};

use super::ipc::Region;
use crate::camera::{Film, KEPT_BYTES};
use crate::strips::{Strips, decode_strip};
use crate::window_watch::Changes;

/// One copy's outcome, as its events arrive.
#[derive(Debug, Default)]
pub(super) struct Shot {
    /// The buffer the compositor asks for: format, width, height, stride.
    pub(super) wanted: Option<(u32, u32, u32, u32)>,
    pub(super) buffer_done: bool,
    /// When the copied picture was committed (CLOCK_MONOTONIC ns), or `None`: it failed.
    pub(super) ready: Option<Option<u64>>,
}

/// The watcher's queue state: the copy in each of two slots.
#[derive(Debug, Default)]
pub(super) struct Shots([Shot; 2]);

impl Dispatch<frame::ZwlrScreencopyFrameV1, usize> for Shots {
    fn event(
        state: &mut Self,
        _: &frame::ZwlrScreencopyFrameV1,
        event: frame::Event,
        slot: &usize,
        _: &Connection,
        _: &QueueHandle<Self>,
    ) {
        let shot = &mut state.0[*slot];
        match event {
            frame::Event::Buffer {
                format: WEnum::Value(format),
                width,
                height,
                stride,
            } => shot.wanted = Some((format as u32, width, height, stride)),
            frame::Event::BufferDone => shot.buffer_done = true,
            frame::Event::Ready {
                tv_sec_hi,
                tv_sec_lo,
                tv_nsec,
            } => {
                let seconds = (u64::from(tv_sec_hi) << 32) | u64::from(tv_sec_lo);
                shot.ready = Some(Some(seconds * 1_000_000_000 + u64::from(tv_nsec)));
            }
            frame::Event::Failed => shot.ready = Some(None),
            _ => {}
        }
    }
}
delegate_noop!(Shots: ignore wl_buffer::WlBuffer);
delegate_noop!(Shots: wl_shm_pool::WlShmPool);

/// A shared-memory buffer the compositor copies into.
pub(super) struct Buffer {
    pub(super) wl: wl_buffer::WlBuffer,
    pub(super) fd: OwnedFd,
    pub(super) size: (u32, u32),
    pub(super) stride: u32,
}

/// The watcher of one region of the output.
pub struct Capture {
    pub(super) conn: Connection,
    pub(super) output: wl_output::WlOutput,
    pub(super) shm: wl_shm::WlShm,
    pub(super) screencopy: screencopy::ZwlrScreencopyManagerV1,
    pub(super) region: Region,
    pub(super) queue: EventQueue<Shots>,
    pub(super) shots: Shots,
    pub(super) buffers: [Option<Buffer>; 2],
}

impl Capture {
    /// Asks for a copy of the region into `slot`'s buffer, at once or (`damage`) at the next
    /// commit that changes it; the frame to destroy once its outcome is read.
    fn ask(
        &mut self,
        slot: usize,
        damage: bool,
        done: &mut impl FnMut() -> bool,
    ) -> anyhow::Result<Option<frame::ZwlrScreencopyFrameV1>> {
        self.shots.0[slot] = Shot::default();
        let qh = self.queue.handle();
        let r = self.region;
        let frame = self.screencopy.capture_output_region(
            0,
            &self.output,
            r.x,
            r.y,
            r.width,
            r.height,
            &qh,
            slot,
        );
        let v3 = self.screencopy.version() >= 3;
        if !self.dispatch_until(
            |s| {
                s.0[slot].wanted.is_some() && (s.0[slot].buffer_done || !v3)
                    || s.0[slot].ready.is_some()
            },
            done,
        )? {
            frame.destroy();
            return Ok(None);
        }
        let Some((format, width, height, stride)) = self.shots.0[slot].wanted else {
            bail!("the compositor cannot copy the terminal's region of its output");
        };
        if ![
            wl_shm::Format::Xrgb8888 as u32,
            wl_shm::Format::Argb8888 as u32,
        ]
        .contains(&format)
        {
            bail!(
                "the compositor copies pixels in format {format:#x}, not the XRGB8888 the watcher reads"
            );
        }
        let fits = self.buffers[slot]
            .as_ref()
            .is_some_and(|b| b.size == (width, height) && b.stride == stride);
        if !fits {
            self.buffers[slot] = Some(self.buffer(format, (width, height), stride)?);
        }
        let buffer = &self.buffers[slot].as_ref().expect("made above").wl;
        if damage {
            frame.copy_with_damage(buffer);
        } else {
            frame.copy(buffer);
        }
        self.conn.flush()?;
        Ok(Some(frame))
    }

    /// A buffer the compositor asked for (`format`, size, `stride`), in a memfd of its own
    /// that the watcher reads back with pread (no mapping: the crate has no `unsafe`).
    fn buffer(
        &self,
        format: u32,
        (width, height): (u32, u32),
        stride: u32,
    ) -> anyhow::Result<Buffer> {
        let fd = rustix::fs::memfd_create("flushlab-screencopy", rustix::fs::MemfdFlags::CLOEXEC)?;
        let bytes = u64::from(stride) * u64::from(height);
        rustix::fs::ftruncate(&fd, bytes)?;
        let qh = self.queue.handle();
        let signed = |v: u32| i32::try_from(v).unwrap_or(i32::MAX);
        let pool = self.shm.create_pool(
            fd.as_fd(),
            signed(u32::try_from(bytes).unwrap_or(u32::MAX)),
            &qh,
            (),
        );
        let format = wl_shm::Format::try_from(format)
            .map_err(|()| anyhow::anyhow!("pixel format {format:#x}"))?;
        let wl = pool.create_buffer(
            0,
            signed(width),
            signed(height),
            signed(stride),
            format,
            &qh,
            (),
        );
        pool.destroy();
        Ok(Buffer {
            wl,
            fd,
            size: (width, height),
            stride,
        })
    }

    /// Dispatches the queue until `ready` holds (true) or `done` says to stop (false), asking
    /// `done` at least every 20 ms.
    fn dispatch_until(
        &mut self,
        ready: impl Fn(&Shots) -> bool,
        done: &mut impl FnMut() -> bool,
    ) -> anyhow::Result<bool> {
        loop {
            self.queue.dispatch_pending(&mut self.shots)?;
            if ready(&self.shots) {
                return Ok(true);
            }
            if done() {
                return Ok(false);
            }
            self.conn.flush()?;
            let Some(guard) = self.queue.prepare_read() else {
                continue;
            };
            if flushlab_core::sys::readable_within(
                guard.connection_fd(),
                Duration::from_millis(20),
            )? {
                match guard.read() {
                    Ok(_) => {}
                    Err(wayland_client::backend::WaylandError::Io(e))
                        if e.kind() == std::io::ErrorKind::WouldBlock => {}
                    Err(e) => return Err(e).context("reading from the Wayland display"),
                }
            }
        }
    }

    /// Waits for the copy in `slot`: when it was committed, `None` once `done`.
    fn outcome(
        &mut self,
        slot: usize,
        done: &mut impl FnMut() -> bool,
    ) -> anyhow::Result<Option<u64>> {
        if !self.dispatch_until(|s| s.0[slot].ready.is_some(), done)? {
            return Ok(None);
        }
        match self.shots.0[slot].ready.flatten() {
            Some(at) => Ok(Some(at)),
            None => bail!("the compositor failed a copy of the terminal's region"),
        }
    }

    /// The region now, as one picture (`width` x `height` pixels, 32 bits each, rows packed).
    pub fn picture(&mut self) -> anyhow::Result<Option<(Vec<u8>, usize, usize)>> {
        let mut never = || false;
        let Some(frame) = self.ask(0, false, &mut never)? else {
            return Ok(None);
        };
        let at = self.outcome(0, &mut never);
        frame.destroy();
        at?;
        self.pixels(0).map(Some)
    }

    /// The picture in `slot`'s buffer: its pixels, rows packed, its width and height.
    fn pixels(&self, slot: usize) -> anyhow::Result<(Vec<u8>, usize, usize)> {
        let buffer = self.buffers[slot].as_ref().context("no picture yet")?;
        let (width, height) = (buffer.size.0 as usize, buffer.size.1 as usize);
        let stride = buffer.stride as usize;
        // One read of the whole buffer: a row a read costs a system call a row, at each change.
        let mut all = vec![0u8; stride * height];
        let read = rustix::io::pread(&buffer.fd, &mut all, 0)?;
        if read != all.len() {
            bail!("the compositor's copy is shorter than its buffer");
        }
        let data = match stride == width * 4 {
            true => all,
            false => all
                .chunks_exact(stride)
                .flat_map(|row| &row[..width * 4])
                .copied()
                .collect(),
        };
        Ok((data, width, height))
    }

    /// `width` pixels of row `y` from `x` of the picture in `slot`'s buffer.
    fn row(&self, slot: usize, y: usize, x: usize, width: usize) -> anyhow::Result<Vec<u8>> {
        let buffer = self.buffers[slot].as_ref().context("no picture yet")?;
        let mut data = vec![0u8; width * 4];
        let offset = y as u64 * u64::from(buffer.stride) + x as u64 * 4;
        rustix::io::pread(&buffer.fd, &mut data, offset)?;
        Ok(data)
    }
}

/// The region's changes, copy after copy, as [`Changes`]: each copy's commit time; the next
/// copy asked for before this one is read, so that a commit meanwhile is caught.
pub struct Copies {
    capture: Capture,
    /// The buffer of the change just seen.
    slot: usize,
    /// The copy asked for and not yet answered.
    pending: Option<frame::ZwlrScreencopyFrameV1>,
    /// A change was returned: the next looks at the other buffer.
    seen: bool,
}

impl Capture {
    /// Every change of the region, as it comes.
    pub fn copies(self) -> Copies {
        Copies {
            capture: self,
            slot: 0,
            pending: None,
            seen: false,
        }
    }
}

impl Copies {
    /// No more changes: the copy asked for is withdrawn.
    fn end(&mut self) -> anyhow::Result<Option<(u64, u64)>> {
        if let Some(pending) = self.pending.take() {
            pending.destroy();
        }
        let _ = self.capture.conn.flush();
        Ok(None)
    }
}

impl Copies {
    /// The camera on the region: each change's picture, timed when the compositor committed
    /// it, until `done`; a picture the same as the one before is no new state.
    pub fn film(mut self, mut done: impl FnMut() -> bool) -> anyhow::Result<Film> {
        let cpu = flushlab_core::sys::thread_cpu_ns();
        let started = std::time::Instant::now();
        let mut film = Film::default();
        let mut kept = 0usize;
        while let Some((at_ns, _)) = self.next_change(&mut done)? {
            film.grabs += 1;
            let (data, width, _) = self.capture.pixels(self.slot)?;
            let pixels: Vec<u32> = data
                .chunks_exact(4)
                .map(|p| u32::from_le_bytes([p[0], p[1], p[2], p[3]]))
                .collect();
            if film.frames.last().is_some_and(|(_, last)| *last == pixels) {
                continue;
            }
            if kept + data.len() > KEPT_BYTES {
                film.cut = true;
                continue;
            }
            kept += data.len();
            film.width = u32::try_from(width).unwrap_or(u32::MAX);
            film.frames.push((at_ns, pixels));
        }
        let wall = started.elapsed().as_nanos().max(1) as f64;
        film.cpu_share = flushlab_core::sys::thread_cpu_ns().saturating_sub(cpu) as f64 / wall;
        Ok(film)
    }
}

impl Changes for Copies {
    fn next_change(
        &mut self,
        mut done: &mut dyn FnMut() -> bool,
    ) -> anyhow::Result<Option<(u64, u64)>> {
        if self.seen {
            self.slot = 1 - self.slot;
        } else if self.pending.is_none() {
            match self.capture.ask(self.slot, true, &mut done)? {
                Some(first) => self.pending = Some(first),
                None => return self.end(),
            }
        }
        let Some(at) = self.capture.outcome(self.slot, &mut done)? else {
            return self.end();
        };
        let Some(next) = self.capture.ask(1 - self.slot, true, &mut done)? else {
            return self.end();
        };
        if let Some(answered) = self.pending.replace(next) {
            answered.destroy();
        }
        self.seen = true;
        Ok(Some((at, at)))
    }

    fn markers(&mut self, strips: &Strips) -> anyhow::Result<Option<(Option<u32>, Option<u32>)>> {
        let read = |y: i16| -> anyhow::Result<Option<u32>> {
            let row = self.capture.row(
                self.slot,
                y.max(0) as usize,
                strips.x.max(0) as usize,
                usize::from(strips.width),
            )?;
            Ok(decode_strip(&row, &strips.centres))
        };
        Ok(Some((read(strips.top_y)?, read(strips.bottom_y)?)))
    }
}
