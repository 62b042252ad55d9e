//! What the kernel counts of a process's writes: `/proc/PID/io` (Linux). Elsewhere every reader
//! here says `None`, and the accounting's counting layer counts instead.

use std::fs::File;
use std::os::unix::fs::FileExt;

/// Write-family system calls and bytes written by the whole process, all threads.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct IoCounters {
    pub write_calls: u64,
    pub bytes: u64,
}

impl IoCounters {
    /// What was counted since `before`; never negative, even if the counters were reset.
    pub fn since(self, before: IoCounters) -> IoCounters {
        IoCounters {
            write_calls: self.write_calls.saturating_sub(before.write_calls),
            bytes: self.bytes.saturating_sub(before.bytes),
        }
    }
}

/// This process's `/proc/self/io`, opened once to be re-read with one `pread` a sample; `None`
/// where the kernel keeps no such counters.
pub fn open_own() -> Option<File> {
    let file = File::open("/proc/self/io").ok()?;
    read_proc_io(&file).map(|_| file)
}

/// The kernel's counters of another process (`/proc/PID/io`): every write of it, and of the
/// children it has reaped, whose counts the kernel adds to their parent's. `None` where the
/// kernel keeps none (not Linux) or the process is gone.
pub fn process_io(pid: i32) -> Option<IoCounters> {
    read_proc_io(&File::open(format!("/proc/{pid}/io")).ok()?)
}

/// The counters in an open `/proc/…/io` file (a process's, or a thread's under `task/`).
pub fn read_proc_io(file: &File) -> Option<IoCounters> {
    let mut buf = [0u8; 512];
    let n = file.read_at(&mut buf, 0).ok()?;
    parse_proc_io(std::str::from_utf8(&buf[..n]).ok()?)
}

fn parse_proc_io(text: &str) -> Option<IoCounters> {
    let field = |name: &str| {
        text.lines()
            .find_map(|line| line.strip_prefix(name)?.strip_prefix(':'))
            .and_then(|value| value.trim().parse().ok())
    };
    Some(IoCounters {
        write_calls: field("syscw")?,
        bytes: field("wchar")?,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_proc_self_io() {
        let text = "rchar: 10\nwchar: 4096\nsyscr: 3\nsyscw: 7\nread_bytes: 0\n";
        assert_eq!(
            parse_proc_io(text),
            Some(IoCounters {
                write_calls: 7,
                bytes: 4096
            })
        );
        assert_eq!(parse_proc_io("rchar: 1\n"), None);
    }
}
