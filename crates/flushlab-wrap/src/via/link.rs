//! The link: two network namespaces of wrap's own, the near end's and the far end's, each with
//! one TUN device, and a relay of wrap's threads between the two that delays each packet by
//! half the round trip, paces each direction to the rate through a bounded queue, and drops the
//! asked share. TCP itself sees the round trip and the loss (a relay of sockets would hide them
//! from it), and no one outside the namespaces can reach what listens in them.
//!
//! This kernel has no netem (`CONFIG_NET_SCH_NETEM` is not set), but has TUN. The namespaces
//! live as long as something holds them: the relay's devices (wrap's, gone with it however it
//! ends) and the processes started in them.

use std::io::{Read, Write};
use std::os::fd::{AsFd, OwnedFd};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{Receiver, RecvTimeoutError, Sender};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// The near end's address, on its TUN device.
const NEAR: &str = "10.77.0.1";
/// The far end's address, where sshd listens (but over `--loopback`).
const FAR: &str = "10.77.0.2";

/// Deliveries kept a direction (16 B each: 64 MiB at most, ten minutes of a saturated link).
const MAX_DELIVERIES: usize = 1 << 22;

/// Under `--rate`, each direction's backlog (bytes waiting for the line) holds at most this
/// many bytes; a packet that would pass it is dropped at the tail, as a router's queue drops. 64 KiB: about one TCP window of the default size, so
/// a bulk transfer at a low rate fills it and TCP backs off, as it would at a real bottleneck.
pub const QUEUE_BYTES: u64 = 64 * 1024;

/// The link's settings: `--rtt`, `--rate`, `--loss`, `--loopback`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct LinkSettings {
    pub rtt: Duration,
    pub rate: Option<u64>,
    pub loss: f64,
    /// No relay: both ends in one namespace, over its loopback.
    pub loopback: bool,
}

/// A step over the link that takes this many round trips or fewer is given
/// [`LinkSettings::patience`] for them: 1 in 100 such steps may still be cut short by loss.
const GIVE_UP_CHANCE: f64 = 0.01;

/// What a lost packet costs TCP before it is sent again, at least: its initial retransmission
/// timeout (RFC 6298: 1 s), the longer of it and a round trip. Later losses of the same packet
/// wait longer still (the timeout doubles), which the tries' count does not follow: the
/// patience is a bound for the step as a whole, not TCP's own schedule.
const RESEND_AFTER: Duration = Duration::from_secs(1);

impl LinkSettings {
    /// How long a step that takes `round_trips` round trips over this link may take before it
    /// is given up: `base` (what it needs on no link at all) plus, for each round trip, the round
    /// trip itself; under loss, each round trip tried until both its packets got through but
    /// for a `GIVE_UP_CHANCE`, each try costing the round trip and `RESEND_AFTER`.
    /// At `--loss 0.5` (a round trip gets through 1 time in 4) that is 17 tries of a round trip.
    pub fn patience(&self, base: Duration, round_trips: u32) -> Duration {
        let through = (1.0 - self.loss) * (1.0 - self.loss);
        let (tries, each) = if self.loss > 0.0 {
            let tries = (GIVE_UP_CHANCE.ln() / (1.0 - through).ln()).ceil().max(1.0);
            (tries, self.rtt + RESEND_AFTER)
        } else {
            (1.0, self.rtt)
        };
        base + each.mul_f64(tries * f64::from(round_trips))
    }
}

/// What crossed the link one way, as the relay delivered it: each packet's delivery time
/// (CLOCK_MONOTONIC ns) and its size; dropped packets counted apart.
#[derive(Debug, Default)]
struct WireCount {
    delivered: Vec<(u64, u32)>,
    /// Deliveries past [`MAX_DELIVERIES`] are not kept: from then on nothing is said of them.
    full_at: Option<u64>,
    dropped: u64,
}

impl WireCount {
    /// A packet of `len` bytes delivered now.
    fn delivered(&mut self, len: usize) {
        let at = flushlab_observer::now_ns();
        if self.delivered.len() < MAX_DELIVERIES {
            self.delivered.push((at, len as u32));
        } else {
            self.full_at.get_or_insert(at);
        }
    }
}

/// The link up: both namespaces, the relay running.
pub struct Link {
    settings: LinkSettings,
    near: OwnedFd,
    far: OwnedFd,
    /// The direction from the far end to the near end (what a frame crosses).
    down: Arc<Mutex<WireCount>>,
    up: Arc<Mutex<WireCount>>,
    stop: Arc<AtomicBool>,
    threads: Vec<std::thread::JoinHandle<()>>,
}

impl Link {
    pub fn start(settings: LinkSettings) -> std::io::Result<Link> {
        if settings.loopback {
            return Link::loopback(settings);
        }
        // A thread of its own makes the namespaces: unshare moves the calling thread alone,
        // and this one ends once both devices exist.
        let made = std::thread::Builder::new()
            .name("wrap-link-setup".into())
            .spawn(|| -> std::io::Result<_> {
                let near = device_in_new_namespace("flnear", NEAR, FAR)?;
                let far = device_in_new_namespace("flfar", FAR, NEAR)?;
                Ok((near, far))
            })?
            .join()
            .map_err(|_| std::io::Error::other("the link's setup panicked"))??;
        let ((near_device, near), (far_device, far)) = made;
        let (near_reader, near_writer) = near_device.split();
        let (far_reader, far_writer) = far_device.split();
        let stop = Arc::new(AtomicBool::new(false));
        let down = Arc::new(Mutex::new(WireCount::default()));
        let up = Arc::new(Mutex::new(WireCount::default()));
        let mut threads = Vec::new();
        for (name, reader, writer, count, seed) in [
            (
                "wrap-link-up",
                near_reader,
                far_writer,
                &up,
                0x9e37_79b9_7f4a_7c15_u64,
            ),
            (
                "wrap-link-down",
                far_reader,
                near_writer,
                &down,
                0xd1b5_4a32_d192_ed03,
            ),
        ] {
            // Nothing to delay, pace or drop: each packet passed on by the thread that read
            // it (a hand-over to another thread cost about 0.1 ms a key each way).
            if settings.rtt.is_zero() && settings.rate.is_none() && settings.loss == 0.0 {
                let count = Arc::clone(count);
                threads.push(
                    std::thread::Builder::new()
                        .name(format!("{name}-in"))
                        .spawn(move || pass(reader, writer, &count))?,
                );
                continue;
            }
            let (queue, due) = std::sync::mpsc::channel();
            let stop_reading = Arc::clone(&stop);
            threads.push(
                std::thread::Builder::new()
                    .name(format!("{name}-in"))
                    .spawn(move || take(reader, &queue, &stop_reading))?,
            );
            let way = Way {
                settings,
                count: Arc::clone(count),
                stop: Arc::clone(&stop),
                random: seed,
            };
            threads.push(
                std::thread::Builder::new()
                    .name(name.into())
                    .spawn(move || way.deliver(&due, writer))?,
            );
        }
        Ok(Link {
            settings,
            near,
            far,
            down,
            up,
            stop,
            threads,
        })
    }

    /// No relay: one namespace of wrap's own, its loopback up, both ends in it.
    fn loopback(settings: LinkSettings) -> std::io::Result<Link> {
        let namespace = std::thread::Builder::new()
            .name("wrap-link-setup".into())
            .spawn(|| -> std::io::Result<OwnedFd> {
                nix::sched::unshare(nix::sched::CloneFlags::CLONE_NEWNET).map_err(|e| {
                    std::io::Error::other(format!("a network namespace (unshare): {e}"))
                })?;
                let up = std::process::Command::new("ip")
                    .args(["link", "set", "lo", "up"])
                    .status()?;
                if !up.success() {
                    return Err(std::io::Error::other(format!(
                        "wrap --loopback: ip link set lo up failed ({up})"
                    )));
                }
                flushlab_core::sys::process::thread_net_namespace()
            })?
            .join()
            .map_err(|_| std::io::Error::other("the link's setup panicked"))??;
        Ok(Link {
            settings,
            far: namespace.try_clone()?,
            near: namespace,
            down: Arc::default(),
            up: Arc::default(),
            stop: Arc::default(),
            threads: Vec::new(),
        })
    }

    pub fn settings(&self) -> LinkSettings {
        self.settings
    }

    /// Where the far end listens, as the near end reaches it.
    pub fn far_address(&self) -> &'static str {
        if self.settings.loopback {
            "127.0.0.1"
        } else {
            FAR
        }
    }

    /// Runs `f` on this thread in the near end's namespace (what it spawns stays there), then
    /// moves the thread back.
    pub fn in_near<T>(&self, f: impl FnOnce() -> T) -> std::io::Result<T> {
        in_namespace(self.near.as_fd(), f)
    }

    /// The same in the far end's.
    pub fn in_far<T>(&self, f: impl FnOnce() -> T) -> std::io::Result<T> {
        in_namespace(self.far.as_fd(), f)
    }

    /// What crossed towards the near end from `from` (CLOCK_MONOTONIC ns): packets and bytes
    /// delivered in `[from, to)`; `None` where deliveries stopped being kept before `to`.
    pub fn down_between(&self, from: u64, to: u64) -> Option<(u64, u64)> {
        let count = self
            .down
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if count.full_at.is_some_and(|full| full < to) {
            return None;
        }
        let start = count.delivered.partition_point(|(at, _)| *at < from);
        let found = count.delivered[start..]
            .iter()
            .take_while(|(at, _)| *at < to)
            .fold((0, 0), |(n, b), (_, len)| (n + 1, b + u64::from(*len)));
        Some(found)
    }

    /// Packets dropped each way so far (by `--loss`, or at a full queue): (up, down).
    pub fn dropped(&self) -> (u64, u64) {
        let lock = |c: &Mutex<WireCount>| {
            c.lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .dropped
        };
        (lock(&self.up), lock(&self.down))
    }
}

impl Drop for Link {
    fn drop(&mut self) {
        // The deliverers look at `stop` every few ms; the readers block in read(2) on their
        // device and end with the process (their devices and namespaces with them).
        self.stop.store(true, Ordering::Relaxed);
        for thread in self.threads.drain(..) {
            if thread.thread().name().is_some_and(|n| !n.ends_with("-in")) {
                let _ = thread.join();
            }
        }
    }
}

/// A new network namespace for the calling thread, and a TUN device `name`
/// there with `address`, its peer `peer`; the device and the namespace (a handle to keep it).
fn device_in_new_namespace(
    name: &str,
    address: &str,
    peer: &str,
) -> std::io::Result<(tun::Device, OwnedFd)> {
    nix::sched::unshare(nix::sched::CloneFlags::CLONE_NEWNET).map_err(|e| {
        std::io::Error::other(format!("a network namespace for the link (unshare): {e}"))
    })?;
    let mut config = tun::Configuration::default();
    config
        .tun_name(name)
        .address(address)
        .destination(peer)
        .netmask("255.255.255.255")
        .mtu(1500)
        .up();
    let device = tun::create(&config)
        .map_err(|e| std::io::Error::other(format!("the link's TUN device {name}: {e}")))?;
    Ok((device, flushlab_core::sys::process::thread_net_namespace()?))
}

/// `f` run on this thread inside the namespace `ns`, then back in the one it was in.
fn in_namespace<T>(ns: std::os::fd::BorrowedFd<'_>, f: impl FnOnce() -> T) -> std::io::Result<T> {
    let home = flushlab_core::sys::process::thread_net_namespace()?;
    nix::sched::setns(ns, nix::sched::CloneFlags::CLONE_NEWNET)
        .map_err(|e| std::io::Error::other(format!("entering the link's namespace: {e}")))?;
    let result = f();
    nix::sched::setns(home.as_fd(), nix::sched::CloneFlags::CLONE_NEWNET)
        .map_err(|e| std::io::Error::other(format!("leaving the link's namespace: {e}")))?;
    Ok(result)
}

/// Packets read off one device as the kernel hands them over, stamped, queued for delivery.
fn take(mut reader: tun::Reader, queue: &Sender<(u64, Vec<u8>)>, stop: &AtomicBool) {
    let mut buffer = vec![0; 65_536];
    while !stop.load(Ordering::Relaxed) {
        match reader.read(&mut buffer) {
            Ok(0) => return,
            Ok(n) => {
                if queue
                    .send((flushlab_observer::now_ns(), buffer[..n].to_vec()))
                    .is_err()
                {
                    return;
                }
            }
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(_) => return,
        }
    }
}

/// Each packet read off one device written to the other at once, and counted.
fn pass(mut reader: tun::Reader, mut writer: tun::Writer, count: &Mutex<WireCount>) {
    let mut buffer = vec![0; 65_536];
    loop {
        match reader.read(&mut buffer) {
            Ok(0) => return,
            Ok(n) => {
                let _ = writer.write(&buffer[..n]);
                let at = flushlab_observer::now_ns();
                let mut count = count
                    .lock()
                    .unwrap_or_else(std::sync::PoisonError::into_inner);
                if count.delivered.len() < MAX_DELIVERIES {
                    count.delivered.push((at, n as u32));
                } else {
                    count.full_at.get_or_insert(at);
                }
            }
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(_) => return,
        }
    }
}

/// One direction of the link.
struct Way {
    settings: LinkSettings,
    count: Arc<Mutex<WireCount>>,
    stop: Arc<AtomicBool>,
    /// xorshift64's state: the drops are the same sequence every run.
    random: u64,
}

impl Way {
    /// Each packet delivered half the round trip after it was taken, and no sooner than the
    /// rate allows after the one before (its serialisation time, `len / rate`), or dropped: by
    /// `--loss`, or because the backlog the rate has not sent would pass [`QUEUE_BYTES`].
    fn deliver(mut self, due: &Receiver<(u64, Vec<u8>)>, mut writer: tun::Writer) {
        let half = self.settings.rtt.as_nanos() as u64 / 2;
        let mut waiting: std::collections::VecDeque<(u64, Vec<u8>)> = Default::default();
        // When the line is free again: the rate's clock.
        let mut free_at = 0u64;
        loop {
            let now = flushlab_observer::now_ns();
            while let Some((at, _)) = waiting.front() {
                if *at > now {
                    break;
                }
                let (_, packet) = waiting.pop_front().expect("looked at");
                let _ = writer.write(&packet);
                self.counted(|c| c.delivered(packet.len()));
            }
            if self.stop.load(Ordering::Relaxed) {
                return;
            }
            let wait = waiting
                .front()
                .map_or(Duration::from_millis(20), |(at, _)| {
                    Duration::from_nanos(at.saturating_sub(now)).min(Duration::from_millis(20))
                });
            match due.recv_timeout(wait) {
                Ok((taken, packet)) => {
                    // The queue is the backlog before the line (the bytes the rate has not
                    // sent yet); packets on their way, delayed, are the line's, never dropped.
                    let backlog = self.settings.rate.map_or(0, |rate| {
                        free_at.saturating_sub(taken).saturating_mul(rate) / 1_000_000_000
                    });
                    if self.drops() || backlog + packet.len() as u64 > QUEUE_BYTES {
                        self.counted(|c| c.dropped += 1);
                        continue;
                    }
                    let sent_at = match self.settings.rate {
                        Some(rate) => {
                            let serialise = packet.len() as u64 * 1_000_000_000 / rate;
                            free_at = free_at.max(taken) + serialise;
                            free_at
                        }
                        None => taken,
                    };
                    waiting.push_back((sent_at + half, packet));
                }
                Err(RecvTimeoutError::Timeout) => {}
                Err(RecvTimeoutError::Disconnected) => {
                    if waiting.is_empty() {
                        return;
                    }
                    let until = waiting.front().map_or(0, |(at, _)| *at);
                    std::thread::sleep(Duration::from_nanos(
                        until.saturating_sub(flushlab_observer::now_ns()),
                    ));
                }
            }
        }
    }

    fn counted(&self, f: impl FnOnce(&mut WireCount)) {
        f(&mut self
            .count
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner));
    }

    /// Whether the next packet is dropped (`--loss`).
    fn drops(&mut self) -> bool {
        if self.settings.loss <= 0.0 {
            return false;
        }
        self.random ^= self.random << 13;
        self.random ^= self.random >> 7;
        self.random ^= self.random << 17;
        (self.random >> 11) as f64 / (1u64 << 53) as f64 <= self.settings.loss
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn patience_grows_with_the_round_trip_and_the_loss() {
        let link = |rtt_ms: u64, loss: f64| LinkSettings {
            rtt: Duration::from_millis(rtt_ms),
            rate: None,
            loss,
            loopback: false,
        };
        let base = Duration::from_secs(10);
        assert_eq!(link(0, 0.0).patience(base, 10), base);
        assert_eq!(link(600, 0.0).patience(base, 10), Duration::from_secs(16));
        // Half the packets lost each way: a round trip gets through 1 time in 4, 17 tries.
        assert_eq!(
            link(0, 0.5).patience(base, 10),
            base + Duration::from_secs(170)
        );
        // 1% lost: 2 tries of the round trip and the resend timeout.
        assert_eq!(
            link(100, 0.01).patience(Duration::ZERO, 1),
            Duration::from_millis(2200)
        );
    }
}
