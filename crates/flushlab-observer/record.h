/*
 * The observers' record, defined once: what the preload (observer.c) and the kernel observer
 * (kernel.bpf.c) send wrap, and what the tracer writes in their place
 * (crates/flushlab-wrap/src/observers/tracer/). 64 bytes, native endian. The Rust side (this
 * crate's src/lib.rs, `wire`) is held to this file, field offset by field offset and value by value, by a test that
 * reads it (`wire_matches_record_h`).
 *
 * A record's kind is in the low 16 bits of `kind`; a WAIT's or WAITING's kind of wait, and the
 * flags, ride in the high 16. READ: a read of the terminal that took `bytes` (a key, an
 * answer), begun at start_ns and returned at end_ns. WAITING: a blocking wait began (start_ns)
 * with terminal writes before it not yet said; its WAIT says them again when it returns, but a
 * program ended while it waits (wrap's end, a kill) never returns, and without this its last
 * frame would be lost. HELLO carries the program's name, 24 bytes, in writes..first_ns; FORK
 * the parent's pid in `writes`; COST, UNTRACED and KERNEL_COST are the tracer's and the kernel
 * observer's own accounts (their fields: lib.rs's `Record::parse`).
 */
#ifndef FLUSHLAB_RECORD_H
#define FLUSHLAB_RECORD_H

#ifdef __bpf__
#include <linux/types.h>
typedef __u32 record_u32;
typedef __u64 record_u64;
#else
#include <stdint.h>
typedef uint32_t record_u32;
typedef uint64_t record_u64;
#endif

enum kind {
    HELLO = 1,
    WAIT = 2,
    TAIL = 3,
    FORK = 4,
    RELEASE = 5,
    READ = 6,
    COST = 7,
    UNTRACED = 8,
    WAITING = 9,
    KERNEL_COST = 10,
};

enum wait_kind {
    W_POLL = 1,
    W_SELECT = 2,
    W_EPOLL = 3,
    W_SLEEP = 4,
    W_SIGNAL = 5,
    W_FUTEX = 6,
    W_READ = 7,
};

/* Flags in the high half of `kind`: the wait returned because its time was up (a tick, a
 * timer), not because something came; the tracer sent it; the kernel observer sent it; a
 * terminal write of the frame it ends (WAIT, WAITING, TAIL) opened a synchronized-output block
 * (its bytes began `ESC[?2026h` or `ESC P=1s`: looked at in a frame's first write, and in any
 * write no longer than a block's start). */
#define TIMED_OUT (1u << 15)
#define TRACED (1u << 14)
#define KERNEL (1u << 13)
#define SYNC_OPENED (1u << 12)

struct record {
    record_u32 kind;
    record_u32 pid;
    record_u32 tid;
    record_u32 lost; /* records this process could not send before this one */
    record_u64 writes;
    record_u64 bytes;
    record_u64 first_ns; /* CLOCK_MONOTONIC of the frame's first terminal write */
    record_u64 start_ns; /* the wait began (WAIT), or now */
    record_u64 end_ns; /* the wait ended (WAIT), or now */
    record_u32 flushed_writes; /* --try: write(2) calls the held bytes took since the last record */
    record_u32 flushed_bytes;
};
_Static_assert(sizeof(struct record) == 64, "the wire format is 64 bytes");

#endif
