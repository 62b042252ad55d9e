//! What a thread stopped at a call asks for, read from its registers' arguments and its memory:
//! the bytes a write would write, and whether a wait can block.

use nix::sys::ptrace;
use nix::unistd::Pid;

/// The bytes a write asks to write: its count, or its vectors' lengths added (read from the
/// program's memory, 1,024 vectors at most, as the kernel's IOV_MAX).
pub(super) fn asked_bytes(pid: Pid, number: i64, args: &[u64; 6]) -> u64 {
    use nix::libc as c;
    match number {
        c::SYS_write | c::SYS_pwrite64 => args[2],
        _ => (0..args[2].min(1024))
            .map(|i| {
                let len = args[1] + i * 16 + 8;
                ptrace::read(pid, len as ptrace::AddressType).map_or(0, |n| n as u64)
            })
            .sum(),
    }
}

/// Whether a wait can block, from its arguments (futex: from how long it took).
pub(super) fn blocks(pid: Pid, number: i64, args: &[u64; 6]) -> bool {
    use nix::libc as c;
    // A timespec or timeval pointer: none waits for ever; all zero does not wait.
    let timeout = |ptr: u64| {
        if ptr == 0 {
            return true;
        }
        let word = |offset: u64| ptrace::read(pid, (ptr + offset) as ptrace::AddressType);
        !matches!((word(0), word(8)), (Ok(0), Ok(0)))
    };
    match number {
        c::SYS_ppoll => timeout(args[2]),
        c::SYS_select | c::SYS_pselect6 => timeout(args[4]),
        c::SYS_epoll_pwait2 => timeout(args[3]),
        c::SYS_nanosleep => timeout(args[0]),
        c::SYS_clock_nanosleep => args[1] != 0 || timeout(args[2]),
        c::SYS_futex => false,
        _ => true,
    }
}
