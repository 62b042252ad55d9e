//! The seccomp filter the traced program runs under: a classic BPF program that returns
//! `SECCOMP_RET_TRACE` for the system calls the tracer needs and `SECCOMP_RET_ALLOW` for every
//! other, so the program stops only where it must (strace's `--seccomp-bpf`). Pure: the program
//! is built here and tested by running it through a small interpreter of the same instructions.
//!
//! What it stops at: the terminal's writes (when the tracer is the one that counts them), reads,
//! and the waits a frame ends at (poll, select, epoll, sleeps, signal waits, futex waits). Polls
//! that cannot block (a zero timeout: Go's netpoller asks one every scheduling round) and futex
//! calls that wake rather than wait are let through in the filter itself, without a stop.

use flushlab_observer::wire::{W_EPOLL, W_FUTEX, W_POLL, W_SELECT, W_SIGNAL, W_SLEEP};
use seccompiler::sock_filter;

/// The system calls, by what the tracer does with them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Call {
    Write,
    Read,
    /// A wait, with the kind the wire says (record.h's `enum wait_kind`).
    Wait(u16),
}

/// What the filter looks at beyond the number: the low half of one argument.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Only {
    Always,
    /// The descriptor (argument 0) is a standard one, 0 to 2: where a terminal program reads
    /// its keys.
    StandardFd,
    /// The argument (an int timeout) is not zero.
    Nonzero(u32),
    /// The futex operation (argument 1, its flags masked off) is one that waits.
    FutexWaits,
}

/// What the tracer stops the program at.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "clap", derive(clap::ValueEnum))]
pub enum Stops {
    /// The terminal's writes, reads and the waits: the tracer sees alone.
    Everything,
    /// Reads and the waits: a preload counts the writes.
    ReadsAndWaits,
    /// Reads of the standard descriptors alone (a key's read made with a raw system call):
    /// beside a preload that sees the rest.
    KeyReads,
}

impl Stops {
    /// As the flag spells it.
    pub fn name(self) -> &'static str {
        match self {
            Stops::Everything => "everything",
            Stops::ReadsAndWaits => "reads-and-waits",
            Stops::KeyReads => "key-reads",
        }
    }
}

/// The calls the filter stops at, each with its kind and what lets it through.
fn rules(stops: Stops) -> Vec<(i64, Call, Only)> {
    use nix::libc::*;
    if stops == Stops::KeyReads {
        return vec![
            (SYS_read, Call::Read, Only::StandardFd),
            (SYS_readv, Call::Read, Only::StandardFd),
        ];
    }
    let writes = stops == Stops::Everything;
    let mut rules = vec![
        (SYS_read, Call::Read, Only::Always),
        (SYS_readv, Call::Read, Only::Always),
        (SYS_poll, Call::Wait(W_POLL), Only::Nonzero(2)),
        (SYS_ppoll, Call::Wait(W_POLL), Only::Always),
        (SYS_select, Call::Wait(W_SELECT), Only::Always),
        (SYS_pselect6, Call::Wait(W_SELECT), Only::Always),
        (SYS_epoll_wait, Call::Wait(W_EPOLL), Only::Nonzero(3)),
        (SYS_epoll_pwait, Call::Wait(W_EPOLL), Only::Nonzero(3)),
        (SYS_epoll_pwait2, Call::Wait(W_EPOLL), Only::Always),
        (SYS_nanosleep, Call::Wait(W_SLEEP), Only::Always),
        (SYS_clock_nanosleep, Call::Wait(W_SLEEP), Only::Always),
        (SYS_pause, Call::Wait(W_SIGNAL), Only::Always),
        (SYS_rt_sigsuspend, Call::Wait(W_SIGNAL), Only::Always),
        (SYS_futex, Call::Wait(W_FUTEX), Only::FutexWaits),
    ];
    if writes {
        rules.extend([
            (SYS_write, Call::Write, Only::Always),
            (SYS_writev, Call::Write, Only::Always),
            (SYS_pwrite64, Call::Write, Only::Always),
            (SYS_pwritev, Call::Write, Only::Always),
            (SYS_pwritev2, Call::Write, Only::Always),
        ]);
    }
    rules
}

/// What a stopped call is to the tracer (`None`: one the filter does not stop at).
pub fn call_of(number: i64) -> Option<Call> {
    rules(Stops::Everything)
        .into_iter()
        .find(|&(n, _, _)| n == number)
        .map(|(_, call, _)| call)
}

/// The futex operations that wait (`FUTEX_CMD_MASK` applied): what the preload counts as a
/// futex wait too.
/// (FUTEX_WAIT, FUTEX_LOCK_PI, FUTEX_WAIT_BITSET, FUTEX_WAIT_REQUEUE_PI, FUTEX_LOCK_PI2: the
/// kernel's numbers, linux/futex.h.)
const FUTEX_WAITS: [u32; 5] = [0, 6, 9, 11, 13];
/// The flags a futex operation carries (FUTEX_PRIVATE_FLAG, FUTEX_CLOCK_REALTIME), masked off.
const FUTEX_CMD_MASK: u32 = !(128 | 256);

/// AUDIT_ARCH_X86_64 (linux/audit.h): the tracer is built for x86_64 alone.
const AUDIT_ARCH: u32 = 0xc000_003e;

// The instructions used, as linux/filter.h numbers them.
const LD_W_ABS: u16 = 0x20;
const JEQ_K: u16 = 0x15;
const JGT_K: u16 = 0x25;
const AND_K: u16 = 0x54;
const RET_K: u16 = 0x06;
const ALLOW: u32 = 0x7fff_0000;
const TRACE: u32 = 0x7ff0_0000;
/// `struct seccomp_data`: nr at 0, arch at 4, the instruction pointer at 8, args from 16.
const NR: u32 = 0;
const ARCH: u32 = 4;
fn arg_low(i: u32) -> u32 {
    16 + 8 * i
}

fn op(code: u16, jt: u8, jf: u8, k: u32) -> sock_filter {
    sock_filter { code, jt, jf, k }
}

/// The filter: the architecture checked (a call made through another ABI is let through: the
/// numbers would mean other calls), then one block a call, each returning.
pub fn program(stops: Stops) -> Vec<sock_filter> {
    let mut p = vec![
        op(LD_W_ABS, 0, 0, ARCH),
        op(JEQ_K, 1, 0, AUDIT_ARCH),
        op(RET_K, 0, 0, ALLOW),
        op(LD_W_ABS, 0, 0, NR),
    ];
    for (number, _, only) in rules(stops) {
        let number = u32::try_from(number).unwrap_or(u32::MAX);
        match only {
            Only::Always => {
                p.push(op(JEQ_K, 0, 1, number));
                p.push(op(RET_K, 0, 0, TRACE));
            }
            Only::StandardFd => {
                p.push(op(JEQ_K, 0, 4, number));
                p.push(op(LD_W_ABS, 0, 0, arg_low(0)));
                p.push(op(JGT_K, 0, 1, 2));
                p.push(op(RET_K, 0, 0, ALLOW));
                p.push(op(RET_K, 0, 0, TRACE));
            }
            Only::Nonzero(arg) => {
                p.push(op(JEQ_K, 0, 4, number));
                p.push(op(LD_W_ABS, 0, 0, arg_low(arg)));
                p.push(op(JEQ_K, 0, 1, 0));
                p.push(op(RET_K, 0, 0, ALLOW));
                p.push(op(RET_K, 0, 0, TRACE));
            }
            Only::FutexWaits => {
                let n = FUTEX_WAITS.len() as u8;
                // nr, load, and, n compares, allow, trace: skip all but the first when not futex.
                p.push(op(JEQ_K, 0, 3 + n + 1, number));
                p.push(op(LD_W_ABS, 0, 0, arg_low(1)));
                p.push(op(AND_K, 0, 0, FUTEX_CMD_MASK));
                for (i, wait) in FUTEX_WAITS.iter().enumerate() {
                    // Equal: jump over the rest of the compares and the allow, to the trace.
                    p.push(op(JEQ_K, n - i as u8, 0, *wait));
                }
                p.push(op(RET_K, 0, 0, ALLOW));
                p.push(op(RET_K, 0, 0, TRACE));
            }
        }
    }
    p.push(op(RET_K, 0, 0, ALLOW));
    p
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Runs the filter on one call, as the kernel would: its verdict.
    fn run(program: &[sock_filter], arch: u32, nr: i64, args: [u64; 6]) -> u32 {
        let mut data = [0u8; 64];
        data[0..4].copy_from_slice(&(nr as u32).to_ne_bytes());
        data[4..8].copy_from_slice(&arch.to_ne_bytes());
        for (i, a) in args.iter().enumerate() {
            data[16 + 8 * i..24 + 8 * i].copy_from_slice(&a.to_ne_bytes());
        }
        let (mut pc, mut a) = (0usize, 0u32);
        loop {
            let i = &program[pc];
            pc += 1;
            match i.code {
                LD_W_ABS => {
                    let k = i.k as usize;
                    a = u32::from_ne_bytes(data[k..k + 4].try_into().unwrap());
                }
                AND_K => a &= i.k,
                JEQ_K => pc += usize::from(if a == i.k { i.jt } else { i.jf }),
                JGT_K => pc += usize::from(if a > i.k { i.jt } else { i.jf }),
                RET_K => return i.k,
                other => panic!("instruction {other:#x} is not one the filter uses"),
            }
        }
    }

    #[test]
    fn stops_where_the_tracer_looks_and_nowhere_else() {
        let p = program(Stops::Everything);
        let stop = |nr: i64, args: [u64; 6]| run(&p, AUDIT_ARCH, nr, args) == TRACE;
        assert!(stop(nix::libc::SYS_write, [1, 0, 10, 0, 0, 0]));
        assert!(stop(nix::libc::SYS_writev, [1, 0, 2, 0, 0, 0]));
        assert!(stop(nix::libc::SYS_read, [0; 6]));
        assert!(stop(nix::libc::SYS_nanosleep, [0; 6]));
        assert!(stop(nix::libc::SYS_ppoll, [0; 6]));
        // Polls that cannot block go through; -1 (forever) and a timeout stop.
        assert!(!stop(nix::libc::SYS_poll, [0, 1, 0, 0, 0, 0]));
        assert!(stop(nix::libc::SYS_poll, [0, 1, u64::MAX, 0, 0, 0]));
        assert!(!stop(nix::libc::SYS_epoll_wait, [3, 0, 8, 0, 0, 0]));
        assert!(stop(nix::libc::SYS_epoll_pwait, [3, 0, 8, 16, 0, 0]));
        // A futex wait stops, private or not; a wake does not.
        let (wait, wake, wait_bitset, lock_pi2, private) = (0, 1, 9, 13, 128);
        assert!(stop(nix::libc::SYS_futex, [0, wait, 0, 0, 0, 0]));
        assert!(stop(
            nix::libc::SYS_futex,
            [0, wait_bitset | private, 0, 0, 0, 0]
        ));
        assert!(stop(nix::libc::SYS_futex, [0, lock_pi2, 0, 0, 0, 0]));
        assert!(!stop(nix::libc::SYS_futex, [0, wake | private, 1, 0, 0, 0]));
        // The rest runs as if untraced: opens, closes, mmap, exits.
        for nr in [
            nix::libc::SYS_openat,
            nix::libc::SYS_close,
            nix::libc::SYS_mmap,
            nix::libc::SYS_exit_group,
        ] {
            assert!(!stop(nr, [0; 6]), "{nr} stopped");
        }
        // Another ABI's numbers are not these calls.
        assert_eq!(run(&p, 0x4000_0003, nix::libc::SYS_write, [0; 6]), ALLOW);
    }

    #[test]
    fn without_writes_the_writes_go_through() {
        let p = program(Stops::ReadsAndWaits);
        assert_eq!(
            run(&p, AUDIT_ARCH, nix::libc::SYS_write, [1, 0, 1, 0, 0, 0]),
            ALLOW
        );
        assert_eq!(run(&p, AUDIT_ARCH, nix::libc::SYS_read, [0; 6]), TRACE);
        assert!(p.len() < 100, "{} instructions", p.len());
    }

    #[test]
    fn beside_a_preload_only_reads_of_the_standard_fds_stop() {
        let p = program(Stops::KeyReads);
        let stop = |nr: i64, fd: u64| run(&p, AUDIT_ARCH, nr, [fd, 0, 64, 0, 0, 0]) == TRACE;
        assert!(stop(nix::libc::SYS_read, 0) && stop(nix::libc::SYS_readv, 2));
        assert!(!stop(nix::libc::SYS_read, 3), "a file's read");
        assert!(!stop(nix::libc::SYS_write, 1) && !stop(nix::libc::SYS_poll, 0));
        assert!(!stop(nix::libc::SYS_futex, 0));
    }

    #[test]
    fn every_call_stopped_has_a_kind() {
        for (nr, call, _) in rules(Stops::Everything) {
            assert_eq!(call_of(nr), Some(call));
        }
        assert_eq!(call_of(nix::libc::SYS_openat), None);
    }
}
