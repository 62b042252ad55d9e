//! Whether the frame loop's time is split (on unless `--no-time-split`, which exists to measure
//! what splitting it costs), and the writer threads' time (the thread modes) as one
//! process-wide clock that only goes forward, like the process's CPU times: what every writer thread that has ended spent, plus
//! what the live ones have spent so far. The frame loop reads it once a second (with its own
//! times) and splits the writer thread's wall time as it splits its own.
//!
//! A writer thread costs itself two `Instant::now()` a frame (its wait for the next frame); its
//! time on a CPU and waiting for one are the scheduler's, read by whoever asks.

use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

static TIME_SPLIT: AtomicBool = AtomicBool::new(true);

/// Turns the time split's measurement on or off for the whole process.
pub fn time_split(on: bool) {
    TIME_SPLIT.store(on, Ordering::Relaxed);
}

/// Whether the frame loop times its phases, and writer threads their waits.
pub fn timing() -> bool {
    TIME_SPLIT.load(Ordering::Relaxed)
}

/// Writer threads' time so far, summed over all of them.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct WriterTimes {
    /// On a CPU: copying frames into the kernel (mostly system time).
    pub on_cpu: Duration,
    /// Runnable, waiting for a core.
    pub cpu_wait: Duration,
    /// Asleep until the painter hands over the next frame.
    pub frame_wait: Duration,
}

impl WriterTimes {
    pub fn since(self, start: WriterTimes) -> WriterTimes {
        WriterTimes {
            on_cpu: self.on_cpu.saturating_sub(start.on_cpu),
            cpu_wait: self.cpu_wait.saturating_sub(start.cpu_wait),
            frame_wait: self.frame_wait.saturating_sub(start.frame_wait),
        }
    }

    pub fn add(&mut self, other: WriterTimes) {
        self.on_cpu += other.on_cpu;
        self.cpu_wait += other.cpu_wait;
        self.frame_wait += other.frame_wait;
    }
}

#[derive(Default)]
struct Account {
    /// On-CPU and CPU-wait time of the writer threads that have ended.
    ended: (Duration, Duration),
    /// Kernel ids of the writer threads running now.
    live: Vec<i32>,
}

static ACCOUNT: Mutex<Account> = Mutex::new(Account {
    ended: (Duration::ZERO, Duration::ZERO),
    live: Vec::new(),
});
static FRAME_WAIT_NS: AtomicU64 = AtomicU64::new(0);

/// All writer threads' time so far; `None` where the scheduler's statistics cannot be read.
pub fn now() -> Option<WriterTimes> {
    let account = ACCOUNT.lock().unwrap_or_else(|e| e.into_inner());
    let (mut on_cpu, mut cpu_wait) = account.ended;
    for tid in &account.live {
        let (cpu, wait) = crate::sys::thread_schedstat(*tid)?;
        on_cpu += cpu;
        cpu_wait += wait;
    }
    Some(WriterTimes {
        on_cpu,
        cpu_wait,
        frame_wait: Duration::from_nanos(FRAME_WAIT_NS.load(Ordering::Relaxed)),
    })
}

/// Held by a writer thread for its whole life: the thread counts in [`now`] while it runs, and
/// its final times are added to the ended ones when it ends (under the same lock, so a reading
/// never loses or counts twice a thread that is ending).
pub struct Registration {
    tid: i32,
}

impl Registration {
    /// Called on the writer thread itself.
    pub fn on_this_thread() -> Registration {
        let tid = crate::sys::thread_id();
        ACCOUNT
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .live
            .push(tid);
        Registration { tid }
    }

    /// Runs `wait` (the writer's wait for the next frame) and counts its time as frame wait.
    pub fn waiting<T>(&self, wait: impl FnOnce() -> T) -> T {
        let start = Instant::now();
        let result = wait();
        let ns = u64::try_from(start.elapsed().as_nanos()).unwrap_or(u64::MAX);
        FRAME_WAIT_NS.fetch_add(ns, Ordering::Relaxed);
        result
    }
}

impl Drop for Registration {
    fn drop(&mut self) {
        let mut account = ACCOUNT.lock().unwrap_or_else(|e| e.into_inner());
        if let Some((cpu, wait)) = crate::sys::own_schedstat() {
            account.ended.0 += cpu;
            account.ended.1 += wait;
        }
        account.live.retain(|&t| t != self.tid);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_clock_keeps_an_ended_threads_time() {
        let Some(before) = now() else {
            return; // no schedstat on this kernel
        };
        std::thread::spawn(|| {
            let registration = Registration::on_this_thread();
            registration.waiting(|| std::thread::sleep(Duration::from_millis(20)));
            // 20 ms on a CPU by the scheduler's own count, however long a busy machine takes
            // to give them (a wall-clock spin got 8.6 ms of CPU under load).
            let on_cpu = || crate::sys::own_schedstat().map(|(cpu, _)| cpu);
            let start = on_cpu().unwrap_or_default();
            while on_cpu().is_some_and(|cpu| cpu - start < Duration::from_millis(20)) {}
        })
        .join()
        .unwrap();
        let spent = now().unwrap().since(before);
        assert!(spent.frame_wait >= Duration::from_millis(20), "{spent:?}");
        assert!(spent.on_cpu >= Duration::from_millis(20), "{spent:?}");
    }
}
