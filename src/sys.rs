//! The scheduler's own accounting of a thread, read where Linux keeps it. Other platforms get
//! `None`, and the figures that need it are left out.

use std::time::Duration;

/// A thread's time so far on a CPU and runnable but waiting for one, from its `schedstat`
/// (nanoseconds; `path` is `/proc/thread-self/schedstat` or `/proc/self/task/TID/schedstat`).
pub fn schedstat(path: &str) -> Option<(Duration, Duration)> {
    let stat = std::fs::read_to_string(path).ok()?;
    let mut fields = stat.split_whitespace().map(|f| f.parse::<u64>().ok());
    let (on_cpu, cpu_wait) = (fields.next()??, fields.next()??);
    Some((Duration::from_nanos(on_cpu), Duration::from_nanos(cpu_wait)))
}

/// The calling thread's own [`schedstat`].
pub fn own_schedstat() -> Option<(Duration, Duration)> {
    schedstat("/proc/thread-self/schedstat")
}

/// The kernel's id of the calling thread.
pub fn thread_id() -> i32 {
    rustix::thread::gettid().as_raw_nonzero().get()
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_thread_that_spins_is_on_a_cpu() {
        let Some((before, _)) = super::own_schedstat() else {
            return; // no schedstat on this kernel
        };
        let start = std::time::Instant::now();
        while start.elapsed() < std::time::Duration::from_millis(30) {}
        let (after, _) = super::own_schedstat().unwrap();
        assert!(after > before);
        let by_id = format!("/proc/self/task/{}/schedstat", super::thread_id());
        assert!(super::schedstat(&by_id).unwrap().0 >= after);
    }
}
