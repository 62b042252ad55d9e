/*
 * flushlab's kernel observer: eBPF programs `flushlab wrap --observer kernel` attaches to the
 * watched system calls (fentry and fexit on each call's own function where the kernel takes
 * trampolines, else the raw tracepoints sys_enter and sys_exit) and to the scheduler's
 * tracepoints (sched_process_fork, sched_process_exec, sched_process_exit). They see what the preload sees (observer.c), for
 * every program of CMD's tree whatever it is made of — glibc's stdio, Go, static, musl, raw
 * system calls, a launcher's exec — and never stop it: what a frame needs is kept in the kernel
 * and goes to wrap as one record, the preload's own 64-byte `struct record`, through a ring
 * buffer.
 *
 * The tree is a map of CMD's processes (their thread-group ids, as the kernel's initial pid
 * namespace numbers them): a fork by a process in it, or by the thread wrap spawns CMD from
 * (`spawners`, set only while it spawns), adds the child; a thread group's end removes it. A
 * program outside the tree pays, on a watched call, a failed lookup at entry and at exit; under
 * the tracepoints, every call of it also takes the slow path and a switch on its number.
 *
 * The terminal is decided from the open file, not the fd's number: its device is the pty's
 * slave (config TTY_RDEV, the kernel's dev_t), or it is /dev/tty (5:0) whose tty is that slave
 * (less and fzf read their keys there). Pipes, files and sockets never count.
 *
 * Raw tracepoints need no tracefs (not mounted at boot on these machines). The structures are
 * read through CO-RE (the kernel's BTF), so one object runs on every kernel with BTF.
 *
 * Built by build.rs with clang -target bpf; the x86_64 system-call numbers and pt_regs.
 */
#include <linux/types.h>
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_core_read.h>

char LICENSE[] SEC("license") = "GPL";

/* The kernel's structures, as much of each as is read; CO-RE finds each field's offset. */
struct pt_regs {
    unsigned long di, si, dx, r10, r8, r9;
} __attribute__((preserve_access_index));
struct inode {
    __u32 i_rdev;
} __attribute__((preserve_access_index));
struct file {
    struct inode *f_inode;
    void *private_data;
} __attribute__((preserve_access_index));
struct fdtable {
    unsigned int max_fds;
    struct file **fd;
} __attribute__((preserve_access_index));
struct files_struct {
    struct fdtable *fdt;
} __attribute__((preserve_access_index));
typedef struct {
    int counter;
} atomic_t;
struct signal_struct {
    atomic_t live;
} __attribute__((preserve_access_index));
struct upid {
    int nr;
} __attribute__((preserve_access_index));
struct pid {
    unsigned int level;
    struct upid numbers[1];
} __attribute__((preserve_access_index));
struct task_struct {
    int pid;
    int tgid;
    struct files_struct *files;
    struct signal_struct *signal;
    struct pid *thread_pid;
    struct task_struct *group_leader;
} __attribute__((preserve_access_index));
struct tty_driver {
    int major;
    int minor_start;
} __attribute__((preserve_access_index));
struct tty_struct {
    struct tty_driver *driver;
    int index;
} __attribute__((preserve_access_index));
struct tty_file_private {
    struct tty_struct *tty;
} __attribute__((preserve_access_index));

/* The wire format, the one definition the preload shares. */
#include "record.h"

/* The preload's rules (observer.c): a futex wait shorter than this is a lock; a wait with no
 * terminal write before it is said at most this often a process. */
#define FUTEX_BLOCKED_NS 500000ull
#define QUIET_WAIT_EVERY_NS 1000000ull

/* What wrap sets before loading (lib.rs `kernel::load`): a constant to the verifier, read
 * without a map lookup: the pty's slave as the kernel encodes a dev_t; 0 where the terminal is
 * known only once a root names itself (`--terminal`: the emulator makes the pty). */
volatile const __u64 flushlab_tty = 0;

/* A second terminal, set by wrap while the programs run (`Attached::far_terminal`): the pty at
 * the far end of `wrap --via`, whose CMD is rooted in the same tree as the near end's writer.
 * 0 where there is none. Read only when an fd is first looked at (then remembered). */
struct {
    __uint(type, BPF_MAP_TYPE_ARRAY);
    __uint(max_entries, 1);
    __type(key, __u32);
    __type(value, __u64);
} flushlab_far_tty SEC(".maps");

/* What the programs count (lib.rs `kernel::Counter`), an array of u64. */
enum counter { LOST = 0, SENT = 1, COUNTERS_LEN = 2 };

/* The level of wrap's pid namespace (0: the initial one), whose numbers the records carry:
 * taken from wrap's own thread as it spawns CMD (wrap cannot know it itself when its /proc is
 * its namespace's own: NSpid then starts there). */
struct {
    __uint(type, BPF_MAP_TYPE_ARRAY);
    __uint(max_entries, 1);
    __type(key, __u32);
    __type(value, __u32);
} flushlab_level SEC(".maps");

struct {
    __uint(type, BPF_MAP_TYPE_ARRAY);
    __uint(max_entries, COUNTERS_LEN);
    __type(key, __u32);
    __type(value, __u64);
} flushlab_counts SEC(".maps");

/* A process of CMD's tree, and which of its fds below 64 are the terminal: `known` fds were
 * looked at while open, `terminal` of those are. An fd's number is handed out again only after
 * a close, a dup2/dup3 over it or an exec (close-on-exec), each of which forgets it here. */
struct process {
    __u64 known;
    __u64 terminal;
};

/* Bumped after a process of the tree may have given an fd number to another file (a close, a
 * dup2/dup3 over it, close_range, an exec) and forgotten it: a thread's copy of its process's
 * fds (struct thread's `fds_*`) holds only while the generation it was copied at is current, so
 * that a write to a known fd costs no lookup in the tree. */
struct {
    __uint(type, BPF_MAP_TYPE_ARRAY);
    __uint(max_entries, 1);
    __type(key, __u32);
    __type(value, __u64);
} flushlab_fd_generation SEC(".maps");

/* CMD's processes: thread-group id (initial namespace) → what is known of their fds. */
struct {
    __uint(type, BPF_MAP_TYPE_HASH);
    __uint(max_entries, 65536);
    __type(key, __u32);
    __type(value, struct process);
} flushlab_tree SEC(".maps");

/* The thread wrap spawns CMD from, in wrap's pid namespace, while it spawns. */
struct {
    __uint(type, BPF_MAP_TYPE_HASH);
    __uint(max_entries, 16);
    __type(key, __u32);
    __type(value, __u32);
} flushlab_spawn SEC(".maps");

enum pending { P_NONE = 0, P_WRITE = 1, P_READ = 2, P_WAIT = 3 };
struct thread {
    __u64 writes;
    __u64 bytes;
    __u64 first_ns;
    __u64 start_ns; /* the pending call's entry */
    __u32 pending;
    __u32 how; /* a wait's kind */
    __u32 blocks;
    __u32 said; /* a WAITING said these writes */
    __u32 opened; /* a write of this frame opened a synchronized-output block */
    __u32 lost; /* records this thread could not send since its last */
    __u32 tgid_ns; /* its process, in wrap's pid namespace */
    __u32 tid_ns; /* itself, there */
    /* Its process's `known` and `terminal` fds, copied at fd generation `fds_generation - 1`
     * (0: never copied). */
    __u64 fds_known;
    __u64 fds_terminal;
    __u64 fds_generation;
};

/* Each thread of the tree: its frame so far, the call it is in. Kept in the task itself (task
 * storage: no hashing on every call, and freed with the task). */
struct {
    __uint(type, BPF_MAP_TYPE_TASK_STORAGE);
    __uint(map_flags, BPF_F_NO_PREALLOC);
    __type(key, int);
    __type(value, struct thread);
} flushlab_thread SEC(".maps");

/* A process's last quiet wait said. */
struct {
    __uint(type, BPF_MAP_TYPE_HASH);
    __uint(max_entries, 65536);
    __type(key, __u32);
    __type(value, __u64);
} flushlab_quiet SEC(".maps");

struct {
    __uint(type, BPF_MAP_TYPE_RINGBUF);
    __uint(max_entries, 1 << 20);
} flushlab_events SEC(".maps");

static __always_inline void count(__u32 key) {
    __u64 *value = bpf_map_lookup_elem(&flushlab_counts, &key);
    if (value)
        __sync_fetch_and_add(value, 1);
}

/* A task's id in wrap's pid namespace: its pid's number at that namespace's level (CMD's tree
 * is in wrap's namespace or below it: `unshare -pf` gives its processes a number at each
 * level). bpf_get_ns_current_pid_tgid would answer only for a task whose own namespace is
 * wrap's. */
static __always_inline __u32 pid_at(struct task_struct *task, __u32 level) {
    struct pid *pid = BPF_CORE_READ(task, thread_pid);
    if (!pid || level > 31 || level > BPF_CORE_READ(pid, level))
        return 0;
    int nr = 0;
    bpf_probe_read_kernel(&nr, sizeof(nr),
                          (char *)pid + bpf_core_field_offset(struct pid, numbers) +
                              level * bpf_core_type_size(struct upid) +
                              bpf_core_field_offset(struct upid, nr));
    return (__u32)nr;
}

static __always_inline __u32 ns_pid_of(struct task_struct *task) {
    __u32 zero = 0;
    __u32 *level = bpf_map_lookup_elem(&flushlab_level, &zero);
    return pid_at(task, level ? *level : 0);
}

/* The current thread's and process's ids in wrap's pid namespace. */
static __always_inline int ns_ids(__u32 *tgid, __u32 *tid) {
    struct task_struct *task = (struct task_struct *)bpf_get_current_task();
    *tid = ns_pid_of(task);
    *tgid = ns_pid_of(BPF_CORE_READ(task, group_leader));
    return *tid && *tgid ? 0 : -1;
}

/* Sends a record; a full ring buffer is counted, and said with the thread's next one. */
static __always_inline void send(struct record *r, struct thread *t) {
    struct record *out = bpf_ringbuf_reserve(&flushlab_events, sizeof(*out), 0);
    if (!out) {
        count(LOST);
        if (t)
            t->lost++;
        return;
    }
    *out = *r;
    out->kind |= KERNEL << 16;
    if (t) {
        out->lost = t->lost;
        t->lost = 0;
    }
    bpf_ringbuf_submit(out, 0);
    count(SENT);
}

/* Whether fd is the terminal: the pty's slave, or /dev/tty whose tty is that slave; -1 where
 * no file is open on it (nothing to remember). */
static __always_inline int open_on_terminal(unsigned long fd) {
    struct task_struct *task = (struct task_struct *)bpf_get_current_task();
    struct fdtable *fdt = BPF_CORE_READ(task, files, fdt);
    if (!fdt || fd >= BPF_CORE_READ(fdt, max_fds))
        return -1;
    struct file **fds = BPF_CORE_READ(fdt, fd);
    struct file *file = 0;
    bpf_probe_read_kernel(&file, sizeof(file), &fds[fd]);
    if (!file)
        return -1;
    __u32 rdev = BPF_CORE_READ(file, f_inode, i_rdev);
    __u32 tty_rdev = (__u32)flushlab_tty;
    __u32 zero = 0;
    __u64 *far = bpf_map_lookup_elem(&flushlab_far_tty, &zero);
    __u32 far_rdev = far ? (__u32)*far : 0;
    if ((tty_rdev && rdev == tty_rdev) || (far_rdev && rdev == far_rdev))
        return 1;
    if (rdev != ((5u << 20) | 0u))
        return 0;
    struct tty_file_private *private = BPF_CORE_READ(file, private_data);
    if (!private)
        return 0;
    struct tty_struct *tty = BPF_CORE_READ(private, tty);
    if (!tty)
        return 0;
    __u32 major = (__u32)BPF_CORE_READ(tty, driver, major);
    __u32 minor = (__u32)(BPF_CORE_READ(tty, driver, minor_start) + BPF_CORE_READ(tty, index));
    __u32 own = (major << 20) | minor;
    return (tty_rdev && own == tty_rdev) || (far_rdev && own == far_rdev);
}

/* Whether fd is the terminal, remembered for the process below 64. */
static __always_inline int is_terminal(struct process *p, unsigned long fd) {
    __u64 bit = fd < 64 ? 1ull << fd : 0;
    if (p->known & bit)
        return (p->terminal & bit) != 0;
    int terminal = open_on_terminal(fd);
    if (terminal < 0)
        return 0;
    if (bit) {
        p->known |= bit;
        if (terminal)
            p->terminal |= bit;
    }
    return terminal;
}

/* The fd generation now (flushlab_fd_generation). */
static __always_inline __u64 fd_generation(void) {
    __u32 zero = 0;
    __u64 *generation = bpf_map_lookup_elem(&flushlab_fd_generation, &zero);
    return generation ? *generation : 0;
}

/* What a process forgot of its fds is forgotten by every thread's copy. */
static __always_inline void fds_changed(void) {
    __u32 zero = 0;
    __u64 *generation = bpf_map_lookup_elem(&flushlab_fd_generation, &zero);
    if (generation)
        __sync_fetch_and_add(generation, 1);
}

/* Whether fd is the terminal, for thread `t` of process `tgid`: from the thread's copy where it
 * is current and knows fd, else from the process (which learns it), then copied. */
static __always_inline int thread_sees_terminal(struct thread *t, __u32 tgid, unsigned long fd) {
    __u64 generation = fd_generation() + 1;
    __u64 bit = fd < 64 ? 1ull << fd : 0;
    if (t->fds_generation == generation && (t->fds_known & bit))
        return (t->fds_terminal & bit) != 0;
    struct process *p = bpf_map_lookup_elem(&flushlab_tree, &tgid);
    if (!p)
        return 0;
    int terminal = is_terminal(p, fd);
    t->fds_known = p->known;
    t->fds_terminal = p->terminal;
    t->fds_generation = generation;
    return terminal;
}

/* An fd's number about to be given to another file (or none): forgotten. */
static __always_inline void forget(struct process *p, unsigned long fd) {
    if (fd < 64) {
        p->known &= ~(1ull << fd);
        p->terminal &= ~(1ull << fd);
    }
}

/* A timeout argument (struct timespec or timeval, in the program's memory): none waits for
 * ever; all zero does not wait. */
static __always_inline int timeout_waits(unsigned long ptr) {
    if (!ptr)
        return 1;
    __u64 words[2] = {};
    if (bpf_probe_read_user(words, sizeof(words), (void *)ptr))
        return 1;
    return words[0] != 0 || words[1] != 0;
}

/* The x86_64 numbers of the calls watched (the tracer's filter's list:
 * crates/flushlab-wrap/src/observers/tracer/filter.rs). */
enum sys {
    S_READ = 0, S_WRITE = 1, S_POLL = 7, S_PWRITE64 = 18, S_READV = 19, S_WRITEV = 20,
    S_SELECT = 23, S_PAUSE = 34, S_NANOSLEEP = 35, S_RT_SIGSUSPEND = 130, S_FUTEX = 202,
    S_CLOCK_NANOSLEEP = 230, S_EPOLL_WAIT = 232, S_PSELECT6 = 270, S_EPOLL_PWAIT = 281,
    S_PPOLL = 271, S_PWRITEV = 296, S_PWRITEV2 = 328, S_EPOLL_PWAIT2 = 441,
    /* what changes which file an fd number is */
    S_CLOSE = 3, S_DUP2 = 33, S_DUP3 = 292, S_CLOSE_RANGE = 436,
};

/* Whether the terminal write at `regs` (call `id`, which wrote `done` bytes) opened a
 * synchronized-output block: its bytes begin `ESC[?2026h` or the DCS form's `ESC P=1s`. Looked
 * at on the way out, where the length is the call's result: only in a frame's first write
 * (`first`) and in a write as long as a block's start alone (an unbuffered program writes each
 * escape sequence apart), so that other writes read nothing more; the bytes are still in the
 * program's buffer. */
static __always_inline int opens_sync(long id, struct pt_regs *regs, long done, int first) {
    if (done < 7 || (!first && done > 8))
        return 0;
    unsigned long buf = BPF_CORE_READ(regs, si);
    __u64 len = (__u64)done;
    if (id == S_WRITEV || id == S_PWRITEV || id == S_PWRITEV2) {
        /* The first iovec's base and length. */
        __u64 vec[2] = {};
        if (bpf_probe_read_user(vec, sizeof(vec), (void *)buf))
            return 0;
        buf = vec[0];
        len = vec[1] < len ? vec[1] : len;
    }
    if (len < 7)
        return 0;
    char head[8] = {};
    long failed = len >= 8 ? bpf_probe_read_user(head, 8, (void *)buf)
                           : bpf_probe_read_user(head, 7, (void *)buf);
    if (failed)
        return 0;
    int csi = len >= 8 && head[0] == 27 && head[1] == '[' && head[2] == '?' && head[3] == '2' &&
              head[4] == '0' && head[5] == '2' && head[6] == '6' && head[7] == 'h';
    int dcs = head[0] == 27 && head[1] == 'P' && head[2] == '=' && head[3] == '1' && head[4] == 's';
    return csi || dcs;
}

/* The futex operations that wait (FUTEX_CMD_MASK applied), as the tracer's filter says. */
static __always_inline int futex_waits(unsigned long op) {
    unsigned long cmd = op & ~(128ul | 256ul);
    return cmd == 0 || cmd == 6 || cmd == 9 || cmd == 11 || cmd == 13;
}

/* A thread of the tree: its entry, made at its first watched call (a thread outside the tree
 * has none, so the lookup alone tells). */
static __always_inline struct thread *thread_of(__u32 tgid) {
    struct task_struct *task = bpf_get_current_task_btf();
    struct thread *t = bpf_task_storage_get(&flushlab_thread, task, 0, 0);
    if (t)
        return t;
    if (!bpf_map_lookup_elem(&flushlab_tree, &tgid))
        return 0;
    struct thread fresh = {};
    if (ns_ids(&fresh.tgid_ns, &fresh.tid_ns))
        return 0;
    return bpf_task_storage_get(&flushlab_thread, task, &fresh, BPF_LOCAL_STORAGE_GET_F_CREATE);
}

/* An fd closed or replaced by a process of the tree: what was known of it forgotten. */
static __always_inline int fd_changes(long id, struct pt_regs *regs) {
    __u32 tgid = bpf_get_current_pid_tgid() >> 32;
    struct process *p = bpf_map_lookup_elem(&flushlab_tree, &tgid);
    if (!p)
        return 0;
    if (id == S_CLOSE_RANGE) {
        p->known = 0;
        p->terminal = 0;
    } else {
        forget(p, id == S_CLOSE ? BPF_CORE_READ(regs, di) : BPF_CORE_READ(regs, si));
    }
    fds_changed();
    return 0;
}

/* A watched call's entry, by its number (a constant where a call's own function is hooked: the
 * switch folds away). */
static __always_inline int on_enter(long id, struct pt_regs *regs) {
#ifdef FLUSHLAB_FLOOR
    return 0; /* the floor: what an empty program on this hook costs every call */
#endif
    __u32 pending = P_WAIT, how = 0;
    switch (id) {
    case S_WRITE: case S_WRITEV: case S_PWRITE64: case S_PWRITEV: case S_PWRITEV2:
        pending = P_WRITE; break;
    case S_READ: case S_READV: pending = P_READ; how = W_READ; break;
    case S_POLL: case S_EPOLL_WAIT: case S_EPOLL_PWAIT: case S_EPOLL_PWAIT2: case S_PPOLL:
        how = id == S_POLL ? W_POLL : W_EPOLL; break;
    case S_SELECT: case S_PSELECT6: how = W_SELECT; break;
    case S_NANOSLEEP: case S_CLOCK_NANOSLEEP: how = W_SLEEP; break;
    case S_PAUSE: case S_RT_SIGSUSPEND: how = W_SIGNAL; break;
    case S_FUTEX: how = W_FUTEX; break;
    case S_CLOSE: case S_DUP2: case S_DUP3: case S_CLOSE_RANGE: return fd_changes(id, regs);
    default: return 0;
    }
    __u64 pid_tgid = bpf_get_current_pid_tgid();
    struct thread *t = thread_of(pid_tgid >> 32);
    if (!t)
        return 0;
    unsigned long a0 = BPF_CORE_READ(regs, di);
    if ((pending == P_WRITE || pending == P_READ) && !thread_sees_terminal(t, pid_tgid >> 32, a0))
        return 0;
    if (pending == P_WRITE) {
        /* Only a frame's first write needs its time (the frame's start). */
        t->pending = P_WRITE;
        t->how = (__u32)id; /* which write call: its bytes are looked at on the way out */
        if (t->writes == 0)
            t->start_ns = bpf_ktime_get_ns();
        return 0;
    }
    __u64 now = bpf_ktime_get_ns();
    __u32 blocks = 1;
    if (pending == P_WAIT) {
        switch (id) {
        case S_POLL: blocks = BPF_CORE_READ(regs, dx) != 0; break;
        case S_PPOLL: blocks = timeout_waits(BPF_CORE_READ(regs, dx)); how = W_POLL; break;
        case S_EPOLL_WAIT: case S_EPOLL_PWAIT: blocks = BPF_CORE_READ(regs, r10) != 0; break;
        case S_EPOLL_PWAIT2: blocks = timeout_waits(BPF_CORE_READ(regs, r10)); break;
        case S_SELECT: case S_PSELECT6: blocks = timeout_waits(BPF_CORE_READ(regs, r8)); break;
        case S_NANOSLEEP: blocks = timeout_waits(a0); break;
        case S_CLOCK_NANOSLEEP:
            blocks = BPF_CORE_READ(regs, si) != 0 || timeout_waits(BPF_CORE_READ(regs, dx));
            break;
        case S_FUTEX:
            if (!futex_waits(BPF_CORE_READ(regs, si)))
                return 0;
            blocks = 0; /* decided by how long it took */
            break;
        default: break;
        }
        /* A wait that returns at once never ends a frame: not even looked at on its way out. */
        if (!blocks && id != S_FUTEX)
            return 0;
    }
    t->pending = pending;
    t->how = how;
    t->blocks = blocks;
    t->start_ns = now;
    /* A wait that blocks, with writes before it not yet said: said now, in case it never
     * returns (the run ends, a kill); its WAIT says them again. */
    if (pending != P_WRITE && blocks && t->writes > 0 && !t->said) {
        struct record r = {.kind = WAITING | (how | (t->opened ? SYNC_OPENED : 0)) << 16,
                           .pid = t->tgid_ns, .tid = t->tid_ns,
                           .writes = t->writes, .bytes = t->bytes, .first_ns = t->first_ns,
                           .start_ns = now, .end_ns = now};
        send(&r, t);
        t->said = 1;
    }
    return 0;
}

/* A watched call's return, with its result. */
static __always_inline int on_exit(long result, struct pt_regs *regs) {
#ifdef FLUSHLAB_FLOOR
    return 0;
#endif
    struct thread *t = bpf_task_storage_get(&flushlab_thread, bpf_get_current_task_btf(), 0, 0);
    if (!t || t->pending == P_NONE)
        return 0;
    __u32 pending = t->pending, how = t->how, blocks = t->blocks;
    __u64 start = t->start_ns;
    t->pending = P_NONE;
    /* A write's end needs no time: a frame's start is its first write's entry. */
    if (pending == P_WRITE) {
        if (result > 0) {
            if (!t->opened && opens_sync(how, regs, result, t->writes == 0))
                t->opened = 1;
            if (t->writes == 0)
                t->first_ns = start;
            t->writes++;
            t->bytes += (__u64)result;
        }
        return 0;
    }
    __u64 now = bpf_ktime_get_ns();
    if (pending == P_READ && result > 0) {
        struct record r = {.kind = READ, .pid = t->tgid_ns, .tid = t->tid_ns,
                           .bytes = (__u64)result, .start_ns = start, .end_ns = now};
        send(&r, t);
    }
    __u32 timed_out = 0;
    if (how == W_FUTEX) {
        blocks = now - start >= FUTEX_BLOCKED_NS;
        timed_out = result == -110; /* ETIMEDOUT */
    } else if (how != W_SIGNAL && how != W_READ) {
        timed_out = result == 0;
    }
    if (!blocks)
        return 0;
    /* A runtime's wait for its timer that came may be where a key waits for the program's
     * tick: always said. Quiet waits otherwise at most one a millisecond a process. */
    int a_tick = timed_out && how != W_SLEEP;
    if (t->writes == 0 && !a_tick) {
        __u32 key = t->tgid_ns;
        __u64 *last = bpf_map_lookup_elem(&flushlab_quiet, &key);
        if (last && now - *last < QUIET_WAIT_EVERY_NS)
            return 0;
        bpf_map_update_elem(&flushlab_quiet, &key, &now, BPF_ANY);
    }
    struct record r = {.kind = WAIT | (how | (timed_out ? TIMED_OUT : 0) |
                                       (t->opened ? SYNC_OPENED : 0)) << 16,
                       .pid = t->tgid_ns, .tid = t->tid_ns, .writes = t->writes,
                       .bytes = t->bytes, .first_ns = t->first_ns, .start_ns = start,
                       .end_ns = now};
    send(&r, t);
    t->writes = 0;
    t->bytes = 0;
    t->said = 0;
    t->opened = 0;
    return 0;
}

/* The hooks, two ways (kernel.rs `Hooks`). Where the kernel has BPF trampolines, each watched
 * call's own function gets an fentry and an fexit program, and a call nobody watches (getppid,
 * mmap, …) runs as if nothing were attached. Elsewhere, the raw system-call tracepoints: every
 * call of every process on the machine then takes the kernel's slow path in and out, and pays
 * the switch on its number (measured: scripts/outside-cost.sh). */
SEC("raw_tracepoint/sys_enter")
int flushlab_enter(struct bpf_raw_tracepoint_args *ctx) {
    return on_enter((long)ctx->args[1], (struct pt_regs *)ctx->args[0]);
}

SEC("raw_tracepoint/sys_exit")
int flushlab_exit(struct bpf_raw_tracepoint_args *ctx) {
    return on_exit((long)ctx->args[1], (struct pt_regs *)ctx->args[0]);
}

/* `__x64_sys_NAME(const struct pt_regs *regs)`: fentry's context is its arguments, fexit's its
 * arguments then its result. The names are kernel.rs's `WATCHED` and `FD_CALLS`. */
#define WATCH(name, number)                                                                   \
    SEC("fentry/__x64_sys_" #name)                                                            \
    int flushlab_in_##name(__u64 *ctx) { return on_enter(number, (struct pt_regs *)ctx[0]); } \
    SEC("fexit/__x64_sys_" #name)                                                             \
    int flushlab_out_##name(__u64 *ctx) {                                                    \
        return on_exit((long)ctx[1], (struct pt_regs *)ctx[0]);                               \
    }
#define WATCH_ENTRY(name, number)                                                             \
    SEC("fentry/__x64_sys_" #name)                                                            \
    int flushlab_in_##name(__u64 *ctx) { return on_enter(number, (struct pt_regs *)ctx[0]); }

WATCH(read, S_READ)
WATCH(write, S_WRITE)
WATCH(poll, S_POLL)
WATCH(pwrite64, S_PWRITE64)
WATCH(readv, S_READV)
WATCH(writev, S_WRITEV)
WATCH(select, S_SELECT)
WATCH(pause, S_PAUSE)
WATCH(nanosleep, S_NANOSLEEP)
WATCH(rt_sigsuspend, S_RT_SIGSUSPEND)
WATCH(futex, S_FUTEX)
WATCH(clock_nanosleep, S_CLOCK_NANOSLEEP)
WATCH(epoll_wait, S_EPOLL_WAIT)
WATCH(pselect6, S_PSELECT6)
WATCH(epoll_pwait, S_EPOLL_PWAIT)
WATCH(ppoll, S_PPOLL)
WATCH(pwritev, S_PWRITEV)
WATCH(pwritev2, S_PWRITEV2)
WATCH(epoll_pwait2, S_EPOLL_PWAIT2)
WATCH_ENTRY(close, S_CLOSE)
WATCH_ENTRY(dup2, S_DUP2)
WATCH_ENTRY(dup3, S_DUP3)
WATCH_ENTRY(close_range, S_CLOSE_RANGE)

/* The writes the current thread made after its last wait, as it ends, execs (`gone`: its
 * entry goes) or starts a process. */
static __always_inline void tail(int gone) {
    struct task_struct *task = bpf_get_current_task_btf();
    struct thread *t = bpf_task_storage_get(&flushlab_thread, task, 0, 0);
    if (!t)
        return;
    if (t->writes > 0) {
        __u64 now = bpf_ktime_get_ns();
        struct record r = {.kind = TAIL | (t->opened ? SYNC_OPENED : 0) << 16,
                           .pid = t->tgid_ns, .tid = t->tid_ns, .writes = t->writes,
                           .bytes = t->bytes, .first_ns = t->first_ns, .start_ns = now,
                           .end_ns = now};
        send(&r, t);
        t->writes = 0;
        t->bytes = 0;
        t->said = 0;
        t->opened = 0;
    }
    if (gone)
        bpf_task_storage_delete(&flushlab_thread, task);
}

SEC("raw_tracepoint/sched_process_fork")
int flushlab_fork(struct bpf_raw_tracepoint_args *ctx) {
    struct task_struct *child = (struct task_struct *)ctx->args[1];
    __u32 child_pid = BPF_CORE_READ(child, pid), child_tgid = BPF_CORE_READ(child, tgid);
    if (child_pid != child_tgid)
        return 0; /* a thread: its process is in the tree or not already */
    __u64 pid_tgid = bpf_get_current_pid_tgid();
    __u32 tgid = pid_tgid >> 32;
    int in_tree = bpf_map_lookup_elem(&flushlab_tree, &tgid) != 0;
    if (!in_tree) {
        /* wrap's spawning thread, named by its id in its own namespace (what gettid says):
         * that namespace's level is the records'. */
        struct task_struct *task = (struct task_struct *)bpf_get_current_task();
        __u32 level = BPF_CORE_READ(task, thread_pid, level);
        __u32 own = pid_at(task, level);
        if (!bpf_map_lookup_elem(&flushlab_spawn, &own))
            return 0;
        __u32 zero = 0;
        bpf_map_update_elem(&flushlab_level, &zero, &level, BPF_ANY);
    }
    __u32 ns_tgid = 0, ns_tid = 0;
    if (ns_ids(&ns_tgid, &ns_tid))
        return 0;
    struct process fresh = {};
    bpf_map_update_elem(&flushlab_tree, &child_tgid, &fresh, BPF_ANY);
    if (in_tree) {
        /* A process that starts another ends what it drew so far, as the preload's fork does
         * (its child carries the writes and says them at its exec): a shell that draws, then
         * runs `sleep`, draws a frame a child. */
        tail(0);
        struct record r = {.kind = FORK, .pid = ns_pid_of(child), .tid = ns_tid,
                           .writes = ns_tgid};
        send(&r, 0);
    }
    return 0;
}

SEC("raw_tracepoint/sched_process_exec")
int flushlab_exec(struct bpf_raw_tracepoint_args *ctx) {
    __u64 pid_tgid = bpf_get_current_pid_tgid();
    __u32 tgid = pid_tgid >> 32;
    struct process *p = bpf_map_lookup_elem(&flushlab_tree, &tgid);
    if (!p)
        return 0;
    __u32 ns_tgid = 0, ns_tid = 0;
    if (ns_ids(&ns_tgid, &ns_tid))
        return 0;
    /* Close-on-exec fds are closed: nothing known of the fds holds. */
    p->known = 0;
    p->terminal = 0;
    fds_changed();
    /* The thread that exec'd keeps its task (a thread other than the leader takes the leader's
     * id): its writes end here, and the new program's threads start clean. Its process's
     * numbers may have changed: the entry goes, and is made again at its next call. */
    tail(1);
    struct record r = {.kind = HELLO, .pid = ns_tgid, .tid = ns_tgid};
    bpf_get_current_comm(&r.writes, 16);
    send(&r, 0);
    return 0;
}

SEC("raw_tracepoint/sched_process_exit")
int flushlab_gone(struct bpf_raw_tracepoint_args *ctx) {
    __u64 pid_tgid = bpf_get_current_pid_tgid();
    __u32 tgid = pid_tgid >> 32;
    if (!bpf_map_lookup_elem(&flushlab_tree, &tgid))
        return 0;
    __u32 ns_tgid = 0, ns_tid = 0;
    if (ns_ids(&ns_tgid, &ns_tid))
        return 0;
    tail(1);
    struct task_struct *task = (struct task_struct *)bpf_get_current_task();
    /* The last thread of its group: the process is gone, its number free for another. */
    if (BPF_CORE_READ(task, signal, live.counter) == 0) {
        bpf_map_delete_elem(&flushlab_tree, &tgid);
        __u32 key = ns_tgid;
        bpf_map_delete_elem(&flushlab_quiet, &key);
    }
    return 0;
}
