/*
 * flushlab's observer: a shared object `flushlab wrap` preloads (LD_PRELOAD) into CMD and its
 * dynamically linked descendants. It sees, from inside the program:
 *
 *   - every write to *the pty wrap made* (write, writev, pwrite, pwritev: an fd is the pty when
 *     fstat's st_rdev is the pty's, asked once per fd and forgotten when the fd is closed,
 *     dup2'd over or handed out again), so pipes, files, eventfds and sockets never count;
 *   - the waits that end a frame: poll, ppoll, select, pselect, epoll_wait/epoll_pwait(2),
 *     nanosleep, clock_nanosleep, usleep, sleep, sigsuspend, pause, reads of the terminal, and
 *     futex waits made through syscall() (Rust's channels, condvars, park) that lasted 0.5 ms or
 *     more; a wait with a zero timeout never ends a frame;
 *   - fork (the child starts clean), exec and exit.
 *
 * After each blocking wait returns, one fixed-size record goes to wrap over a pipe wrap holds
 * (reached through /proc/<wrap>/fd/<n>, never a file in a shared directory): when the wait began
 * and ended, and the terminal writes the thread made before it. As it goes, never only at exit,
 * since dash and many C programs end with _exit. wrap makes frames of them: what reached the
 * terminal between two waits of CMD's tree is a frame.
 *
 * With mode `frame` (`wrap --try frame`) terminal writes are held in one process-wide buffer
 * and written at once when any thread waits (blocking or not), reads the terminal, forks,
 * spawns, execs, exits, changes the terminal's settings, signals a process, writes to a pipe or
 * socket, closes or dup2s over a terminal fd, or when 1 MiB is held: the same bytes in the same
 * order, fewer write(2) calls. Held bytes never wait longer than a bound (10 ms) after the program's
 * last terminal write: a wait the observer cannot see (a raw syscall, a spin) must not keep a
 * frame from the screen until something else happens (see the watchdog, which says each release
 * it makes). stdout and stderr, where they are the terminal, are fully
 * buffered too and flushed at the same moments, held bytes first (see the stdio section). What a
 * signal that kills the program (SIGKILL) can lose is at most what is held: one frame.
 *
 * glibc stdio's own writes call libc-internal functions that no interposed write sees: its
 * output calls are interposed, for the order of held bytes, with `frame` for its buffering, and
 * to see what left a terminal stream's buffer during each call (see the stdio section).
 *
 * Not seen (wrap then says "seen from outside" and why): raw syscall(SYS_write), static
 * programs and setuid programs (the loader drops LD_PRELOAD), a program that clears its
 * environment before exec.
 *
 * Why C, not a Rust cdylib: the observer *defines* libc's symbols (write, execl...), some of
 * them variadic, which stable Rust cannot define; it must run inside programs that are not Rust,
 * before and after their runtime, without bringing a second allocator, panic machinery or std's
 * own calls to write(2) (which would come back here); and it is a few hundred lines.
 *
 * Settings, from the environment: FLUSHLAB_OBSERVER=<channel path>:<pty st_rdev>:<mode>,
 * mode `o` (observe) or `f<bound in ns>` (hold frames); st_rdev 0: the terminal the first
 * process's standard streams are on. Without it (or malformed) every function passes
 * straight through.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <semaphore.h>
#include <signal.h>
#include <spawn.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdio_ext.h>
#include <stdlib.h>
#include <string.h>
#include <linux/futex.h>
#include <sys/epoll.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/select.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>

#define EXPORT __attribute__((visibility("default")))
#define TLS __thread __attribute__((tls_model("initial-exec")))

/* The wire format, read by crates/flushlab-observer/src/lib.rs: record.h, the one definition
 * the kernel observer shares. */
#include "record.h"

/* ---- the real functions ------------------------------------------------------------------ */

#define REAL(ret, name, args)                                                                    \
    static ret(*real_##name) args;                                                               \
    static ret(*get_##name(void)) args {                                                         \
        if (!real_##name)                                                                        \
            real_##name = (ret(*) args)dlsym(RTLD_NEXT, #name);                                  \
        return real_##name;                                                                      \
    }

REAL(ssize_t, write, (int, const void *, size_t))
REAL(ssize_t, writev, (int, const struct iovec *, int))
REAL(ssize_t, pwrite, (int, const void *, size_t, off_t))
REAL(ssize_t, pwrite64, (int, const void *, size_t, off_t))
REAL(ssize_t, pwritev, (int, const struct iovec *, int, off_t))
REAL(ssize_t, read, (int, void *, size_t))
REAL(ssize_t, readv, (int, const struct iovec *, int))
REAL(int, close, (int))
REAL(int, close_range, (unsigned, unsigned, int))
REAL(int, dup, (int))
REAL(int, dup2, (int, int))
REAL(int, dup3, (int, int, int))
REAL(int, fclose, (FILE *))
REAL(int, pclose, (FILE *))
REAL(int, open, (const char *, int, ...))
REAL(int, open64, (const char *, int, ...))
REAL(int, openat, (int, const char *, int, ...))
REAL(int, openat64, (int, const char *, int, ...))
REAL(int, pipe, (int[2]))
REAL(int, pipe2, (int[2], int))
REAL(int, socket, (int, int, int))
REAL(int, accept, (int, struct sockaddr *, socklen_t *))
REAL(int, accept4, (int, struct sockaddr *, socklen_t *, int))
REAL(int, poll, (struct pollfd *, nfds_t, int))
REAL(int, ppoll, (struct pollfd *, nfds_t, const struct timespec *, const sigset_t *))
REAL(int, select, (int, fd_set *, fd_set *, fd_set *, struct timeval *))
REAL(int, pselect, (int, fd_set *, fd_set *, fd_set *, const struct timespec *, const sigset_t *))
REAL(int, epoll_wait, (int, struct epoll_event *, int, int))
REAL(int, epoll_pwait, (int, struct epoll_event *, int, int, const sigset_t *))
REAL(int, nanosleep, (const struct timespec *, struct timespec *))
REAL(int, clock_nanosleep, (clockid_t, int, const struct timespec *, struct timespec *))
REAL(int, usleep, (useconds_t))
REAL(long, syscall, (long, ...))
REAL(unsigned, sleep, (unsigned))
REAL(int, sigsuspend, (const sigset_t *))
REAL(int, pause, (void))
REAL(pid_t, waitpid, (pid_t, int *, int))
REAL(pid_t, wait, (int *))
REAL(pid_t, wait4, (pid_t, int *, int, struct rusage *))
REAL(int, waitid, (idtype_t, id_t, siginfo_t *, int))
REAL(int, ioctl, (int, unsigned long, ...))
REAL(int, tcsetattr, (int, int, const struct termios *))
REAL(int, tcdrain, (int))
REAL(int, tcflush, (int, int))
REAL(int, kill, (pid_t, int))
REAL(int, killpg, (pid_t, int))
REAL(int, raise, (int))
REAL(int, execve, (const char *, char *const[], char *const[]))
REAL(int, execv, (const char *, char *const[]))
REAL(int, execvp, (const char *, char *const[]))
REAL(int, execvpe, (const char *, char *const[], char *const[]))
REAL(int, fexecve, (int, char *const[], char *const[]))
REAL(int, posix_spawn, (pid_t *, const char *, const posix_spawn_file_actions_t *,
                        const posix_spawnattr_t *, char *const[], char *const[]))
REAL(int, posix_spawnp, (pid_t *, const char *, const posix_spawn_file_actions_t *,
                         const posix_spawnattr_t *, char *const[], char *const[]))
REAL(int, system, (const char *))
REAL(FILE *, popen, (const char *, const char *))
REAL(void, _exit, (int))
REAL(size_t, fwrite, (const void *, size_t, size_t, FILE *))
REAL(int, fputs, (const char *, FILE *))
REAL(int, puts, (const char *))
REAL(int, fputc, (int, FILE *))
REAL(int, putc, (int, FILE *))
REAL(int, putchar, (int))
REAL(int, fflush, (FILE *))
REAL(int, vfprintf, (FILE *, const char *, va_list))
REAL(int, __vfprintf_chk, (FILE *, int, const char *, va_list))
REAL(void, _Exit, (int))
REAL(void, abort, (void))
REAL(int, __overflow, (FILE *, int))
REAL(size_t, fwrite_unlocked, (const void *, size_t, size_t, FILE *))
REAL(int, fputs_unlocked, (const char *, FILE *))
REAL(int, fputc_unlocked, (int, FILE *))
REAL(int, putc_unlocked, (int, FILE *))
REAL(int, putchar_unlocked, (int))
REAL(int, fflush_unlocked, (FILE *))
REAL(void, perror, (const char *))
REAL(int, vdprintf, (int, const char *, va_list))
REAL(int, __vdprintf_chk, (int, int, const char *, va_list))
REAL(int, setvbuf, (FILE *, char *, int, size_t))
REAL(void, setbuf, (FILE *, char *))
REAL(void, setbuffer, (FILE *, char *, size_t))
REAL(void, setlinebuf, (FILE *))
REAL(char *, fgets, (char *, int, FILE *))
REAL(char *, fgets_unlocked, (char *, int, FILE *))
REAL(char *, __fgets_chk, (char *, size_t, int, FILE *))
REAL(char *, __fgets_unlocked_chk, (char *, size_t, int, FILE *))
REAL(int, fgetc, (FILE *))
REAL(int, getc, (FILE *))
REAL(int, getchar, (void))
REAL(int, fgetc_unlocked, (FILE *))
REAL(int, getc_unlocked, (FILE *))
REAL(int, getchar_unlocked, (void))
REAL(int, __uflow, (FILE *))
REAL(int, __underflow, (FILE *))
REAL(size_t, fread, (void *, size_t, size_t, FILE *))
REAL(size_t, fread_unlocked, (void *, size_t, size_t, FILE *))
REAL(size_t, __fread_chk, (void *, size_t, size_t, size_t, FILE *))
REAL(size_t, __fread_unlocked_chk, (void *, size_t, size_t, size_t, FILE *))
REAL(ssize_t, getline, (char **, size_t *, FILE *))
REAL(ssize_t, getdelim, (char **, size_t *, int, FILE *))
REAL(ssize_t, __getdelim, (char **, size_t *, int, FILE *))
REAL(int, vfscanf, (FILE *, const char *, va_list))
REAL(int, __isoc99_vfscanf, (FILE *, const char *, va_list))

/* ---- settings and state ------------------------------------------------------------------ */

static int active;      /* FLUSHLAB_OBSERVER was read and the channel opened */
static int holding;     /* --try frame */
static int syncing;     /* --try sync */
static dev_t tty_rdev;  /* the pty wrap made */
static char channel_path[128];
static atomic_int channel = -1;
static atomic_uint lost;

/* What an fd is, asked once: 0 not asked yet, then one of these. */
enum { K_UNKNOWN = 0, K_TTY = 1, K_PIPE = 2, K_OTHER = 3 };
#define FD_CACHE 4096
static _Atomic unsigned char fd_kind[FD_CACHE];

/* A thread's frame so far: its terminal writes since its last blocking wait. */
static TLS uint64_t t_writes, t_bytes, t_first_ns;
/* A write of this thread's frame so far opened a synchronized-output block (record.h's
 * SYNC_OPENED). */
static TLS uint32_t t_opened;
/* t_writes when a WAITING last said them (0: not said since the last WAIT). */
static TLS uint64_t t_said;
/* Set while this thread is inside the observer's held-buffer code: a signal handler that writes
 * then must not take the lock this thread holds (it would wait for itself for ever). */
static TLS int t_inside;
/* A signal handler's terminal writes while its thread was inside: appended after the write it
 * interrupted, before the lock is let go, so nothing is reordered. */
#define SIDE 4096
static TLS char t_side[SIDE];
static TLS size_t t_side_len;
static TLS int t_side_fd;

/* --try frame: the held bytes, in order, and the fd of the terminal they go to. */
#define CAP (1 << 20)
/* A spin lock, not a mutex: taken for every held write (hundreds of thousands a frame in the
 * programs this is for), where a mutex's lock and unlock, two atomic operations and two calls,
 * were a third of the held write's cost. Held briefly (a copy) but for the letting out of a
 * frame, which a waiter sits out yielding the CPU. */
static atomic_int held_lock;

static void lock_held(void) {
    for (int spins = 0; atomic_exchange_explicit(&held_lock, 1, memory_order_acquire);) {
        if (++spins >= 64) {
            sched_yield();
            spins = 0;
        }
    }
}
static void unlock_held(void) { atomic_store_explicit(&held_lock, 0, memory_order_release); }
static char *held;
static size_t held_len;
static int held_fd = -1;
static atomic_uint flushed_writes, flushed_bytes;

/* --try frame: the longest held bytes wait after the program's last terminal write before a
 * thread of the observer's own (the watchdog) lets them out: wrap's HOLD_BOUND (lib.rs says
 * why that long), given in the setting. Only write(2) bytes: stdio's buffers belong to the
 * program's threads. */
static uint64_t bound_ns = 10000000u;
static sem_t held_appeared; /* posted when held bytes appear: the watchdog wakes */
static int watchdog_running;     /* under held_lock; a forked child has none */
/* Held writes so far, under held_lock: the watchdog tells "no write since I last looked" from
 * it, so a held write costs no clock read (a clock read was a third of its cost). */
static uint64_t held_generation;

/* --try frame: stdout and stderr, when they are the terminal, fully buffered (1 MiB, as stdbuf
 * would) and flushed wherever held bytes are let out, held bytes first (see let_out). */
#define STDIO_CAP (1 << 20)
static FILE *held_streams[2];
/* Set while this thread is inside one of the program's stdio calls (through the observer): a
 * signal handler then must not flush the stream its thread is in the middle of. */
static TLS int t_in_stdio;
static void let_out(void);

static uint64_t now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* ---- the channel to wrap ------------------------------------------------------------------ */

/* The channel's fd sits at 900 or above, out of the way of programs that count on low fds. */
static void open_channel(void) {
    int fd = get_open()(channel_path, O_WRONLY | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0)
        return;
    int high = fcntl(fd, F_DUPFD_CLOEXEC, 900);
    get_close()(fd);
    atomic_store(&channel, high);
}

/* One record, never blocking the program and never killing it: a full pipe drops the record
 * (counted in the next), and a wrap that is gone (EPIPE) ends the reporting without the SIGPIPE
 * that would end the program. */
static void send_record(struct record *r) {
    int fd = atomic_load(&channel);
    if (fd < 0)
        return;
    r->pid = (uint32_t)getpid();
    r->tid = (uint32_t)syscall(SYS_gettid);
    r->lost = atomic_exchange(&lost, 0);
    r->flushed_writes = atomic_exchange(&flushed_writes, 0);
    r->flushed_bytes = atomic_exchange(&flushed_bytes, 0);
    sigset_t pipe_only, before;
    sigemptyset(&pipe_only);
    sigaddset(&pipe_only, SIGPIPE);
    pthread_sigmask(SIG_BLOCK, &pipe_only, &before);
    ssize_t n = get_write()(fd, r, sizeof *r);
    int err = errno;
    if (n < 0 && err == EPIPE) {
        sigset_t pending;
        sigpending(&pending);
        /* Ours, unless the program had one pending before: taken off, never delivered. */
        if (!sigismember(&before, SIGPIPE) && sigismember(&pending, SIGPIPE)) {
            struct timespec zero = {0, 0};
            sigtimedwait(&pipe_only, NULL, &zero);
        }
        atomic_store(&channel, -1);
    } else if (n != (ssize_t)sizeof *r) {
        atomic_fetch_add(&lost, 1);
    }
    pthread_sigmask(SIG_SETMASK, &before, NULL);
    errno = err;
}

/* ---- what an fd is ------------------------------------------------------------------------ */

static int kind_of(int fd) {
    if (fd >= 0 && fd < FD_CACHE) {
        int k = atomic_load_explicit(&fd_kind[fd], memory_order_relaxed);
        if (k != K_UNKNOWN)
            return k;
    }
    struct stat st;
    int saved = errno;
    if (fd < 0 || fstat(fd, &st) != 0) {
        errno = saved;
        return K_OTHER; /* not cached: the number may be handed out later */
    }
    errno = saved;
    /* /dev/tty is the process's controlling terminal, which in CMD's session is the pty
     * (crossterm reads its keys from it, some programs write there). */
    int k = S_ISCHR(st.st_mode) && (st.st_rdev == tty_rdev || st.st_rdev == makedev(5, 0))
                ? K_TTY
            : S_ISFIFO(st.st_mode) || S_ISSOCK(st.st_mode) ? K_PIPE
                                                           : K_OTHER;
    if (fd < FD_CACHE)
        atomic_store_explicit(&fd_kind[fd], (unsigned char)k, memory_order_relaxed);
    return k;
}

static void forget(int fd) {
    if (fd >= 0 && fd < FD_CACHE)
        atomic_store_explicit(&fd_kind[fd], K_UNKNOWN, memory_order_relaxed);
    if (fd >= 0 && fd == atomic_load(&channel))
        atomic_store(&channel, -1); /* the program took our number: reopened at the next record */
}

/* ---- held bytes (--try frame) --------------------------------------------------------------- */

/* All of `n` bytes to `fd` through the real write(2), however the terminal takes them: partial
 * writes continued, EINTR retried, EAGAIN (a non-blocking tty) waited out. Counted. */
static void write_all(int fd, const char *p, size_t n) {
    while (n > 0) {
        ssize_t w = get_write()(fd, p, n);
        atomic_fetch_add(&flushed_writes, 1);
        if (w > 0) {
            atomic_fetch_add(&flushed_bytes, (unsigned)w);
            p += w;
            n -= (size_t)w;
        } else if (w < 0 && errno == EINTR) {
            continue;
        } else if (w < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
            struct pollfd out = {fd, POLLOUT, 0};
            get_poll()(&out, 1, 100);
        } else {
            return; /* the terminal is gone: so are the bytes, as they would be unheld */
        }
    }
}

static void start_watchdog_locked(void);

static void append_locked(int fd, const char *p, size_t n) {
    if (held_len > 0 && (held_len + n > CAP || fd != held_fd)) {
        write_all(held_fd, held, held_len);
        held_len = 0;
    }
    if (n >= CAP || !held) {
        write_all(fd, p, n);
        return;
    }
    if (held_len == 0) {
        start_watchdog_locked();
        sem_post(&held_appeared);
    }
    memcpy(held + held_len, p, n);
    held_len += n;
    held_fd = fd;
    held_generation++;
}

/* The watchdog: asleep while nothing is held (on a semaphore the first held write posts); else
 * it looks every quarter of bound_ns, and lets out what is held after three looks in a row saw
 * no new write, said to wrap (a RELEASE record: when, and how many bytes). The last write came
 * between the look before those three and the one before that, so it went out 3/4 to 4/4 of
 * bound_ns after it (on time: a late wake-up is late as a clock would be), and the program's
 * writes cost no clock read. Its waits are glibc's own (sem_wait, clock_nanosleep through the
 * real symbol), which the observer neither sees nor holds for. */
static void *watchdog(void *unused) {
    (void)unused;
    t_inside = 1; /* this thread never re-enters the held buffer's code */
    uint64_t step = bound_ns / 4;
    for (;;) {
        while (sem_wait(&held_appeared) != 0) {
        }
        /* The first look counts as a change: the bytes that woke the watchdog. */
        uint64_t seen = UINT64_MAX, changed = now_ns(), look = changed;
        int quiet = 0, waiting = 1;
        while (waiting) {
            /* Looks on a fixed beat (an absolute clock), so late wake-ups do not add up; the
             * real clock_nanosleep, not the observer's (which would report a wait). */
            look += step;
            struct timespec at = {(time_t)(look / 1000000000u), (long)(look % 1000000000u)};
            while (get_clock_nanosleep()(CLOCK_MONOTONIC, TIMER_ABSTIME, &at, NULL) == EINTR) {
            }
            /* Taken by a thread of the program (writing, or letting a frame out into a full
             * terminal): that is activity, and the watchdog never spins beside it for a CPU. */
            if (atomic_exchange_explicit(&held_lock, 1, memory_order_acquire)) {
                quiet = 0;
                continue;
            }
            if (held_len == 0) {
                waiting = 0;
            } else if (held_generation != seen) {
                seen = held_generation;
                changed = now_ns();
                quiet = 0;
            } else if (++quiet >= 3) {
                /* first_ns: the look that last saw a new write (the write came before it). */
                struct record r = {.kind = RELEASE, .bytes = held_len, .first_ns = changed};
                r.start_ns = now_ns();
                write_all(held_fd, held, held_len);
                held_len = 0;
                r.end_ns = now_ns();
                send_record(&r);
                waiting = 0;
            }
            unlock_held();
        }
    }
    return NULL;
}

/* Started with the first held bytes (not before: a program that never writes to the terminal
 * gets no thread), with every signal blocked (they are the program's threads' to take). A
 * watchdog that cannot start leaves holding as it was: bytes out at the next wait. */
static void start_watchdog_locked(void) {
    if (watchdog_running)
        return;
    sigset_t all, before;
    sigfillset(&all);
    pthread_sigmask(SIG_BLOCK, &all, &before);
    pthread_attr_t attr;
    pthread_t thread;
    if (pthread_attr_init(&attr) == 0) {
        pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
        pthread_attr_setstacksize(&attr, 64 * 1024);
        watchdog_running = pthread_create(&thread, &attr, watchdog, NULL) == 0;
        pthread_attr_destroy(&attr);
    }
    pthread_sigmask(SIG_SETMASK, &before, NULL);
}

static void init_held_cond(void) { sem_init(&held_appeared, 0, 0); }

/* A signal handler's bytes that came while this thread was inside, after what it interrupted. */
static void drain_side_locked(void) {
    while (t_side_len > 0) {
        size_t n = t_side_len;
        char copy[SIDE];
        memcpy(copy, t_side, n);
        t_side_len = 0;
        append_locked(t_side_fd, copy, n);
    }
}

/* Enters the held buffer's code, or says that this thread is already inside (a signal handler
 * interrupted it): then nothing may wait for the lock. */
static int enter(void) {
    if (t_inside)
        return 0;
    t_inside = 1;
    lock_held();
    return 1;
}

static void leave(void) {
    drain_side_locked();
    unlock_held();
    t_inside = 0;
    /* A handler that came after the last drain and before t_inside was cleared. */
    if (t_side_len > 0 && enter())
        leave();
}

static void flush_held(void) {
    if (!holding || !enter())
        return;
    if (held_len > 0) {
        write_all(held_fd, held, held_len);
        held_len = 0;
    }
    leave();
}

/* stdio's buffered terminal output (--try frame), out through its own fflush. */
static void flush_stdio(void) {
    for (int i = 0; i < 2; i++) {
        FILE *f = held_streams[i];
        if (f && __fpending(f) > 0) {
            t_in_stdio++;
            get_fflush()(f);
            t_in_stdio--;
        }
    }
}

/* Everything held goes out, in the order the program wrote it: the held write(2) bytes, then
 * stdio's. The order holds because a stdio call lets held bytes out before it runs
 * (before_stdio) and a terminal write lets stdio's out before it is held: held bytes never
 * follow stdio's. A signal handler that interrupted the observer or a stdio call of its
 * thread flushes nothing of stdio's (the stream may be half updated). */
static void let_out(void) {
    if (!holding || !active)
        return;
    flush_held();
    if (t_inside || t_in_stdio)
        return;
    flush_stdio();
}

/* Whether a held stream has bytes buffered: on every held write, so glibc's own fields are read
 * where they are public (<bits/types/struct_FILE.h>) rather than through a call a write. */
static int stdio_pending(FILE *f) {
#ifdef __GLIBC__
    return f->_IO_write_ptr > f->_IO_write_base;
#else
    return __fpending(f) > 0;
#endif
}

static void stdio_before_terminal_write(void) {
    for (int i = 0; i < 2; i++)
        if (held_streams[i] && stdio_pending(held_streams[i])) {
            let_out();
            return;
        }
}

static ssize_t hold(int fd, const char *p, size_t n) {
    if (!enter()) {
        /* Re-entered from a signal handler: kept aside, after the interrupted write. */
        if (t_side_len + n <= SIDE && (t_side_len == 0 || t_side_fd == fd)) {
            memcpy(t_side + t_side_len, p, n);
            t_side_len += n;
            t_side_fd = fd;
        } else {
            write_all(fd, p, n);
        }
        return (ssize_t)n;
    }
    append_locked(fd, p, n);
    leave();
    return (ssize_t)n;
}

/* ---- samply markers (wrap --profile) ------------------------------------------------------ *
 * samply shows markers a process writes to a file named marker-<pid>-<tid>.txt that it has
 * mmapped: the mmap, in perf's record, is how samply learns of the file, and the thread that
 * mapped it is the thread the markers go on. A thread maps its file at its first terminal write
 * (the drawing thread's); wrap writes the lines (each key's span and stages, which only wrap
 * knows) when the program ends, and samply reads the file when the process exits: so a process
 * that mapped one waits at exit, after its last records, until wrap says the lines are written
 * (it closes the pipe named in FLUSHLAB_MARKERS), 5 s at most. */

static int markers;         /* FLUSHLAB_MARKERS was given */
static char marker_ack[128]; /* the pipe wrap closes once the lines are written */
static char marker_dir[256];
static atomic_int marked;   /* this process mapped a marker file */
static TLS int t_marked;

static void map_marker_file(void) {
    t_marked = 1;
    int saved = errno;
    char path[sizeof marker_dir + 48];
    int n = snprintf(path, sizeof path, "%s/marker-%d-%ld.txt", marker_dir, (int)getpid(),
                     (long)syscall(SYS_gettid));
    if (n > 0 && (size_t)n < sizeof path) {
        int fd = get_open()(path, O_CREAT | O_RDWR | O_CLOEXEC, 0600);
        if (fd >= 0) {
            void *page = mmap(NULL, 4096, PROT_READ, MAP_SHARED, fd, 0);
            get_close()(fd);
            if (page != MAP_FAILED)
                atomic_store(&marked, 1);
        }
    }
    errno = saved;
}

static void wait_for_markers(void) {
    if (!markers || !atomic_load(&marked))
        return;
    int saved = errno;
    int fd = get_open()(marker_ack, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    if (fd >= 0) {
        struct pollfd p = {.fd = fd, .events = POLLIN};
        get_poll()(&p, 1, 5000);
        get_close()(fd);
    }
    errno = saved;
}

/* <ack pipe>:<directory> */
static void read_marker_setting(void) {
    const char *setting = getenv("FLUSHLAB_MARKERS");
    const char *colon = setting ? strchr(setting, ':') : NULL;
    if (!colon)
        return;
    size_t ack_len = (size_t)(colon - setting), dir_len = strlen(colon + 1);
    if (ack_len == 0 || ack_len >= sizeof marker_ack || dir_len == 0 || dir_len >= sizeof marker_dir)
        return;
    memcpy(marker_ack, setting, ack_len);
    marker_ack[ack_len] = 0;
    memcpy(marker_dir, colon + 1, dir_len + 1);
    markers = 1;
}

/* ---- --try sync: each answer in a synchronized-output block --------------------------------- *
 * A block (DEC 2026) opens before the first terminal write after the terminal was read, and
 * ends before the program next waits for input: a read of the terminal, a poll or select on a
 * set that holds it, an epoll wait (whose set the observer cannot see: a TUI's holds its
 * terminal). A wait for anything else (a sleep, a lock) is inside the answer and leaves the
 * block open: a clear, a sleep and a draw are one block. The markers are the observer's own
 * bytes, written straight to the terminal and counted as none of the program's writes; a
 * block never ended is the terminal's to let go (its hold limit). A thread already blocked in
 * a read when the block opened does not end it. */
static atomic_int sync_fd = -1; /* the terminal fd a block is open on; -1: none */

static void put_marker(int fd, const char *marker) {
    size_t n = strlen(marker);
    while (n > 0) {
        ssize_t w = get_write()(fd, marker, n);
        if (w > 0) {
            marker += w;
            n -= (size_t)w;
        } else if (!(w < 0 && errno == EINTR)) {
            return;
        }
    }
}

static void sync_before_write(int fd) {
    int none = -1;
    if (syncing && atomic_load_explicit(&sync_fd, memory_order_relaxed) < 0 &&
        atomic_compare_exchange_strong(&sync_fd, &none, fd)) {
        int saved = errno;
        put_marker(fd, "\033[?2026h");
        errno = saved;
    }
}

static void sync_end(void) {
    if (!syncing || atomic_load_explicit(&sync_fd, memory_order_relaxed) < 0)
        return;
    int fd = atomic_exchange(&sync_fd, -1);
    if (fd >= 0) {
        int saved = errno;
        put_marker(fd, "\033[?2026l");
        errno = saved;
    }
}

/* Whether a poll waits on the terminal. */
static int polls_terminal(const struct pollfd *fds, nfds_t n) {
    for (nfds_t i = 0; i < n && i < 64; i++)
        if (fds[i].fd >= 0 && kind_of(fds[i].fd) == K_TTY)
            return 1;
    return 0;
}

static int selects_terminal(int n, const fd_set *r) {
    if (!r)
        return 0;
    for (int fd = 0; fd < n && fd < FD_SETSIZE; fd++)
        if (FD_ISSET(fd, r) && kind_of(fd) == K_TTY)
            return 1;
    return 0;
}

/* ---- frames ------------------------------------------------------------------------------ */

/* Before a terminal write: the frame's first begins now (stamped before the call, as a program
 * stamps its own: a first write that blocks or is preempted is the frame's emit, not the work
 * before it). */
/* Whether `head` (n bytes) opens a synchronized-output block, where the kernel observer looks
 * too: a frame's first write, and any write no longer than a block's start. */
static void note_opened(const void *head, size_t n) {
    if (!t_opened && head && n >= 7 && (t_writes == 0 || n <= 8))
        t_opened = (n >= 8 && memcmp(head, "\033[?2026h", 8) == 0) ||
                   memcmp(head, "\033P=1s", 5) == 0;
}

/* A frame's first write begins at `at`. */
static void frame_begins(uint64_t at) {
    t_first_ns = at;
    if (markers && !t_marked)
        map_marker_file();
}

static void write_begins(const void *head, size_t n) {
    note_opened(head, n);
    if (t_writes == 0)
        frame_begins(now_ns());
}

static void count_write(ssize_t done) {
    t_writes++;
    if (done > 0)
        t_bytes += (uint64_t)done;
}

/* Before any wait: held bytes go out (a wait is where a frame ends, and the program may wait for
 * an answer to what it wrote). */
/* The records of a read of the terminal, kept until the thread's next wait (or exit) and sent
 * there: between the read and what the program does with the key nothing of the observer's
 * runs (two writes to wrap's pipe, which can wake a thread and cost the program its CPU on a
 * busy machine), and that stretch is a key's processing. */
static TLS struct record t_kept[2];
static TLS int t_kept_n;

static void send_kept(void) {
    int n = t_kept_n;
    t_kept_n = 0;
    for (int i = 0; i < n; i++)
        send_record(&t_kept[i]);
}

static void send_or_keep(struct record *r, int keep) {
    if (keep && t_kept_n < 2)
        t_kept[t_kept_n++] = *r;
    else
        send_record(r);
}

/* Before a wait: kept records and held bytes go out; a wait that blocks (`blocks`) with writes
 * not yet said says them (WAITING), stamped after the wait's start so that saying them is no
 * part of the frame. A futex wait is mostly a lock's microseconds (`again` 0): it says them once
 * a frame at most, so that a program taking a lock between its writes pays one record, not one
 * a write. */
static uint64_t before_wait(int blocks, int again, enum wait_kind how) {
    if (!active)
        return 0;
    send_kept();
    let_out();
    uint64_t start = now_ns();
    if (blocks && t_writes > t_said && (again || t_said == 0)) {
        int saved = errno;
        struct record r = {.kind = WAITING | ((uint32_t)how | (t_opened ? SYNC_OPENED : 0)) << 16,
                           .writes = t_writes,
                           .bytes = t_bytes,
                           .first_ns = t_first_ns,
                           .start_ns = start,
                           .end_ns = start};
        t_said = t_writes;
        send_record(&r);
        errno = saved;
    }
    return start;
}

/* A wait with no terminal write of its thread before it is said too (a shell's children draw
 * and `sleep` waits; a stdio program's writes are not seen, its waits are), at most once a
 * millisecond a process: a program that polls faster than that is not slowed by its reports. */
#define QUIET_WAIT_EVERY_NS 1000000u
static _Atomic uint64_t last_quiet_wait_ns;

/* After a blocking wait returned: when it began and ended, and the terminal writes this thread
 * made before it, go to wrap. */

static void after_wait(uint64_t start, int blocking, enum wait_kind how, int keep, int timed_out) {
    if (!active || !blocking)
        return;
    int saved = errno;
    uint64_t end = now_ns();
    if (t_writes == 0) {
        uint64_t last = atomic_load_explicit(&last_quiet_wait_ns, memory_order_relaxed);
        if (end - last < QUIET_WAIT_EVERY_NS ||
            !atomic_compare_exchange_strong(&last_quiet_wait_ns, &last, end)) {
            errno = saved;
            return;
        }
    }
    struct record r = {.kind = WAIT | ((uint32_t)how | (timed_out ? TIMED_OUT : 0) |
                                       (t_opened ? SYNC_OPENED : 0))
                                          << 16,
                       .writes = t_writes,
                       .bytes = t_bytes,
                       .first_ns = t_first_ns,
                       .start_ns = start,
                       .end_ns = end};
    t_writes = t_bytes = t_said = 0;
    t_opened = 0;
    send_or_keep(&r, keep);
    errno = saved;
}

/* Exit, exec: what is held goes out, and the writes after the last wait are said (a teardown,
 * or a program that never waits). */
static void tail(void) {
    if (!active)
        return;
    int saved = errno;
    send_kept();
    let_out();
    sync_end();
    struct record r = {.kind = TAIL | (t_opened ? SYNC_OPENED : 0) << 16,
                       .writes = t_writes,
                       .bytes = t_bytes,
                       .first_ns = t_first_ns};
    r.start_ns = r.end_ns = now_ns();
    t_writes = t_bytes = t_said = 0;
    t_opened = 0;
    send_record(&r);
    errno = saved;
}

static int timeout_blocks_ms(int ms) { return ms != 0; }
static int timespec_blocks(const struct timespec *ts) {
    return !ts || ts->tv_sec != 0 || ts->tv_nsec != 0;
}
static int timeval_blocks(const struct timeval *tv) {
    return !tv || tv->tv_sec != 0 || tv->tv_usec != 0;
}

/* ---- start, fork ---------------------------------------------------------------------------- */

/* Before main, no output yet: the stream fully buffered in a buffer of its own, as stdbuf does
 * (glibc's own for a terminal would be 1 KiB: a write(2) a KiB). */
static void hold_stream(int slot, FILE *f) {
    int fd = fileno(f);
    if (fd < 0 || kind_of(fd) != K_TTY)
        return;
    char *buffer = malloc(STDIO_CAP);
    if (buffer && get_setvbuf()(f, buffer, _IOFBF, STDIO_CAP) == 0)
        held_streams[slot] = f;
    else
        free(buffer);
}

static void prepare_fork(void) {
    if (!active)
        return;
    /* The child must not inherit a buffer of the parent's output and write it a second time. */
    let_out();
    if (holding) {
        t_inside = 1;
        lock_held();
    }
}
static void parent_after_fork(void) {
    if (active && holding) {
        unlock_held();
        t_inside = 0;
    }
}
static void child_after_fork(void) {
    if (!active)
        return;
    if (holding) {
        atomic_store(&held_lock, 0);
        init_held_cond();
        watchdog_running = 0; /* threads do not fork: the parent's watchdog stayed there */
        held_len = 0;
        t_inside = 0;
    }
    /* The child starts clean: its parent's frame is its parent's, and so is its marker file. */
    t_writes = t_bytes = t_said = 0;
    t_opened = 0;
    t_marked = 0;
    atomic_store(&marked, 0);
    t_side_len = 0;
    t_kept_n = 0;
    atomic_store(&lost, 0);
    struct record r = {.kind = FORK, .writes = (uint64_t)getppid()};
    r.start_ns = r.end_ns = now_ns();
    send_record(&r);
}

__attribute__((constructor)) static void observer_start(void) {
    const char *setting = getenv("FLUSHLAB_OBSERVER");
    if (!setting)
        return;
    /* <path>:<rdev>:<mode> */
    const char *last = strrchr(setting, ':');
    if (!last || last == setting)
        return;
    const char *middle = last - 1;
    while (middle > setting && *middle != ':')
        middle--;
    size_t path_len = (size_t)(middle - setting);
    if (*middle != ':' || path_len == 0 || path_len >= sizeof channel_path)
        return;
    memcpy(channel_path, setting, path_len);
    channel_path[path_len] = 0;
    char *end;
    unsigned long long rdev = strtoull(middle + 1, &end, 10);
    if (end != last)
        return;
    if (rdev == 0) {
        /* `wrap --terminal`: the terminal emulator made the pty, so wrap cannot name it. The
         * first process (CMD, started by the terminal on it) takes the terminal its standard
         * streams are on and writes its number into the setting, for the processes it starts
         * (whose streams may be pipes). */
        struct stat st;
        for (int fd = 0; fd < 3 && rdev == 0; fd++)
            if (isatty(fd) && fstat(fd, &st) == 0 && S_ISCHR(st.st_mode))
                rdev = st.st_rdev;
        if (rdev == 0)
            return;
        char resolved[sizeof channel_path + 64];
        int n = snprintf(resolved, sizeof resolved, "%s:%llu%s", channel_path, rdev, last);
        if (n <= 0 || (size_t)n >= sizeof resolved || setenv("FLUSHLAB_OBSERVER", resolved, 1) != 0)
            return;
        setting = getenv("FLUSHLAB_OBSERVER");
        last = strrchr(setting, ':');
    }
    tty_rdev = (dev_t)rdev;
    holding = last[1] == 'f';
    syncing = last[1] == 's';
    if (holding && last[2]) {
        unsigned long long bound = strtoull(last + 2, &end, 10);
        if (*end == 0 && bound > 0)
            bound_ns = bound;
    }
    if (holding) {
        held = malloc(CAP);
        if (!held)
            holding = 0;
        init_held_cond();
    }
    open_channel();
    if (atomic_load(&channel) < 0)
        return;
    read_marker_setting();
    pthread_atfork(prepare_fork, parent_after_fork, child_after_fork);
    active = 1;
    if (holding) {
        hold_stream(0, stdout);
        hold_stream(1, stderr);
        /* Resolved now, not first in abort() or a flush a signal handler reaches: dlsym may
         * take locks and allocate. */
        (void)get_abort();
        (void)get_fflush();
    }
    struct record r = {.kind = HELLO};
    extern char *program_invocation_short_name;
    char name[24] = {0};
    strncpy(name, program_invocation_short_name ? program_invocation_short_name : "", 23);
    memcpy(&r.writes, name, sizeof name);
    r.start_ns = r.end_ns = now_ns();
    send_record(&r);
}

/* The end of the process: its last records, then, under wrap --profile, the wait for its marker
 * lines. */
static void exiting(void) {
    tail();
    if (active)
        wait_for_markers();
}

__attribute__((destructor)) static void observer_end(void) { exiting(); }

/* ---- writes ------------------------------------------------------------------------------ */

EXPORT ssize_t write(int fd, const void *buf, size_t n) {
    if (active) {
        int k = kind_of(fd);
        if (k == K_TTY) {
            if (holding)
                stdio_before_terminal_write();
            sync_before_write(fd);
            write_begins(buf, n);
            ssize_t done = holding ? hold(fd, buf, n) : get_write()(fd, buf, n);
            count_write(done);
            return done;
        }
        if (k == K_PIPE)
            let_out();
    }
    return get_write()(fd, buf, n);
}

/* A vector written as one: held as its bytes in order, counted as one call. */
static ssize_t hold_vector(int fd, const struct iovec *iov, int n) {
    size_t total = 0;
    if (!enter()) {
        for (int i = 0; i < n; i++) {
            write_all(fd, iov[i].iov_base, iov[i].iov_len);
            total += iov[i].iov_len;
        }
        return (ssize_t)total;
    }
    for (int i = 0; i < n; i++) {
        append_locked(fd, iov[i].iov_base, iov[i].iov_len);
        total += iov[i].iov_len;
    }
    leave();
    return (ssize_t)total;
}

EXPORT ssize_t writev(int fd, const struct iovec *iov, int n) {
    if (active) {
        int k = kind_of(fd);
        if (k == K_TTY) {
            if (holding)
                stdio_before_terminal_write();
            sync_before_write(fd);
            write_begins(n > 0 ? iov[0].iov_base : NULL, n > 0 ? iov[0].iov_len : 0);
            ssize_t done = holding && n >= 0 ? hold_vector(fd, iov, n) : get_writev()(fd, iov, n);
            count_write(done);
            return done;
        }
        if (k == K_PIPE)
            let_out();
    }
    return get_writev()(fd, iov, n);
}

EXPORT ssize_t pwrite(int fd, const void *buf, size_t n, off_t off) {
    if (active && kind_of(fd) == K_TTY) {
        sync_before_write(fd);
        write_begins(buf, n);
        ssize_t done = get_pwrite()(fd, buf, n, off);
        count_write(done);
        return done;
    }
    return get_pwrite()(fd, buf, n, off);
}

EXPORT ssize_t pwrite64(int fd, const void *buf, size_t n, off_t off) {
    if (active && kind_of(fd) == K_TTY) {
        sync_before_write(fd);
        write_begins(buf, n);
        ssize_t done = get_pwrite64()(fd, buf, n, off);
        count_write(done);
        return done;
    }
    return get_pwrite64()(fd, buf, n, off);
}

EXPORT ssize_t pwritev(int fd, const struct iovec *iov, int n, off_t off) {
    if (active && kind_of(fd) == K_TTY) {
        sync_before_write(fd);
        write_begins(n > 0 ? iov[0].iov_base : NULL, n > 0 ? iov[0].iov_len : 0);
        ssize_t done = get_pwritev()(fd, iov, n, off);
        count_write(done);
        return done;
    }
    return get_pwritev()(fd, iov, n, off);
}

/* ---- reads: of the terminal, a wait for the user ---------------------------------------- */

/* A read of the terminal is a wait (for the user); one that took bytes is said as well, with
 * when it returned: where a key's input delay ends. */
static void after_read(uint64_t start, int k, ssize_t got) {
    if (k != K_TTY)
        return;
    int saved = errno;
    uint64_t end = now_ns();
    after_wait(start, 1, W_READ, 1, 0);
    if (got > 0) {
        struct record r = {.kind = READ, .bytes = (uint64_t)got, .start_ns = start, .end_ns = end};
        send_or_keep(&r, 1);
    }
    errno = saved;
}

EXPORT ssize_t read(int fd, void *buf, size_t n) {
    if (!active)
        return get_read()(fd, buf, n);
    int k = kind_of(fd);
    if (k == K_OTHER)
        return get_read()(fd, buf, n);
    if (k == K_TTY)
        sync_end();
    uint64_t start = before_wait(k == K_TTY, 1, W_READ);
    ssize_t got = get_read()(fd, buf, n);
    after_read(start, k, got);
    return got;
}

EXPORT ssize_t readv(int fd, const struct iovec *iov, int n) {
    if (!active)
        return get_readv()(fd, iov, n);
    int k = kind_of(fd);
    if (k == K_OTHER)
        return get_readv()(fd, iov, n);
    if (k == K_TTY)
        sync_end();
    uint64_t start = before_wait(k == K_TTY, 1, W_READ);
    ssize_t got = get_readv()(fd, iov, n);
    after_read(start, k, got);
    return got;
}

/* ---- waits ---------------------------------------------------------------------------------- */

#define WAIT(how, blocks, call)                                                                  \
    do {                                                                                         \
        int blocks_ = (blocks);                                                                  \
        uint64_t start_ = before_wait(blocks_, 1, how);                                          \
        __typeof__(call) result_ = call;                                                         \
        int saved_ = errno;                                                                      \
        after_wait(start_, blocks_, how, 0, result_ == 0);                                       \
        errno = saved_;                                                                          \
        return result_;                                                                          \
    } while (0)

EXPORT int poll(struct pollfd *fds, nfds_t n, int ms) {
    if (syncing && ms != 0 && polls_terminal(fds, n))
        sync_end();
    WAIT(W_POLL, timeout_blocks_ms(ms), get_poll()(fds, n, ms));
}
EXPORT int ppoll(struct pollfd *fds, nfds_t n, const struct timespec *ts, const sigset_t *m) {
    if (syncing && timespec_blocks(ts) && polls_terminal(fds, n))
        sync_end();
    WAIT(W_POLL, timespec_blocks(ts), get_ppoll()(fds, n, ts, m));
}
EXPORT int select(int n, fd_set *r, fd_set *w, fd_set *e, struct timeval *tv) {
    int blocks = timeval_blocks(tv);
    if (syncing && blocks && selects_terminal(n, r))
        sync_end();
    WAIT(W_SELECT, blocks, get_select()(n, r, w, e, tv));
}
EXPORT int pselect(int n, fd_set *r, fd_set *w, fd_set *e, const struct timespec *ts,
                   const sigset_t *m) {
    if (syncing && timespec_blocks(ts) && selects_terminal(n, r))
        sync_end();
    WAIT(W_SELECT, timespec_blocks(ts), get_pselect()(n, r, w, e, ts, m));
}
EXPORT int epoll_wait(int ep, struct epoll_event *ev, int max, int ms) {
    if (syncing && ms != 0)
        sync_end();
    WAIT(W_EPOLL, timeout_blocks_ms(ms), get_epoll_wait()(ep, ev, max, ms));
}
EXPORT int epoll_pwait(int ep, struct epoll_event *ev, int max, int ms, const sigset_t *m) {
    if (syncing && ms != 0)
        sync_end();
    WAIT(W_EPOLL, timeout_blocks_ms(ms), get_epoll_pwait()(ep, ev, max, ms, m));
}
EXPORT int nanosleep(const struct timespec *req, struct timespec *rem) {
    WAIT(W_SLEEP, timespec_blocks(req), get_nanosleep()(req, rem));
}
EXPORT int clock_nanosleep(clockid_t c, int flags, const struct timespec *req,
                           struct timespec *rem) {
    WAIT(W_SLEEP, flags != 0 || timespec_blocks(req), get_clock_nanosleep()(c, flags, req, rem));
}
EXPORT int usleep(useconds_t us) { WAIT(W_SLEEP, us != 0, get_usleep()(us)); }
EXPORT unsigned sleep(unsigned s) { WAIT(W_SLEEP, s != 0, get_sleep()(s)); }
EXPORT int sigsuspend(const sigset_t *m) { WAIT(W_SIGNAL, 1, get_sigsuspend()(m)); }
EXPORT int pause(void) { WAIT(W_SIGNAL, 1, get_pause()()); }

/* A futex wait: how Rust's channels, condition variables and `park` wait (std calls it through
 * glibc's syscall(), which is why that can be seen here; glibc's own locks call the kernel
 * directly and are not). Most futex waits are a lock's few microseconds, so whether one was a
 * wait between frames is known only when it returns: one that lasted FUTEX_BLOCKED_NS or more
 * is said like any blocking wait. Held bytes go out before any of them (the thread may be about
 * to wait for a key that only its frame makes a user press). */
#define FUTEX_BLOCKED_NS 500000u
EXPORT long syscall(long number, ...) {
    va_list ap;
    va_start(ap, number);
    long a1 = va_arg(ap, long), a2 = va_arg(ap, long), a3 = va_arg(ap, long);
    long a4 = va_arg(ap, long), a5 = va_arg(ap, long), a6 = va_arg(ap, long);
    va_end(ap);
    int op = (int)a2 & FUTEX_CMD_MASK;
    if (!active || number != SYS_futex ||
        (op != FUTEX_WAIT && op != FUTEX_WAIT_BITSET && op != FUTEX_WAIT_REQUEUE_PI &&
         op != FUTEX_LOCK_PI && op != FUTEX_LOCK_PI2))
        return get_syscall()(number, a1, a2, a3, a4, a5, a6);
    uint64_t start = before_wait(1, 0, W_FUTEX);
    long result = get_syscall()(number, a1, a2, a3, a4, a5, a6);
    int saved = errno;
    after_wait(start, now_ns() - start >= FUTEX_BLOCKED_NS, W_FUTEX, 0,
               result == -1 && saved == ETIMEDOUT);
    errno = saved;
    return result;
}

/* A parent waiting for a child (a shell) is no frame's end, or the frames of children that draw
 * would be split at each child: held bytes still go out first. */
EXPORT pid_t waitpid(pid_t pid, int *status, int options) {
    if (active)
        let_out();
    return get_waitpid()(pid, status, options);
}
EXPORT pid_t wait(int *status) {
    if (active)
        let_out();
    return get_wait()(status);
}
EXPORT pid_t wait4(pid_t pid, int *status, int options, struct rusage *ru) {
    if (active)
        let_out();
    return get_wait4()(pid, status, options, ru);
}
EXPORT int waitid(idtype_t id, id_t which, siginfo_t *info, int options) {
    if (active)
        let_out();
    return get_waitid()(id, which, info, options);
}

/* ---- fds: forgotten when closed or replaced, flushed first when they are the terminal ------ */

/* A held stream's fd replaced (a shell's `2>/dev/null` around a builtin): what it buffered goes
 * where it was written, before, as it would have unbuffered. */
static int is_held_stream_fd(int fd) {
    for (int i = 0; i < 2; i++)
        if (held_streams[i] && fileno(held_streams[i]) == fd)
            return 1;
    return 0;
}

static void before_closing(int fd) {
    if (holding && active && (fd == held_fd || kind_of(fd) == K_TTY || is_held_stream_fd(fd)))
        let_out();
}

EXPORT int close(int fd) {
    before_closing(fd);
    forget(fd);
    return get_close()(fd);
}
EXPORT int close_range(unsigned first, unsigned last, int flags) {
    if (holding && active && held_fd >= 0 && (unsigned)held_fd >= first &&
        (unsigned)held_fd <= last)
        let_out();
    for (unsigned fd = first; fd <= last && fd < FD_CACHE; fd++)
        forget((int)fd);
    int ch = atomic_load(&channel);
    if (ch >= 0 && (unsigned)ch >= first && (unsigned)ch <= last)
        atomic_store(&channel, -1);
    return get_close_range()(first, last, flags);
}
EXPORT int dup2(int old, int new) {
    before_closing(new);
    forget(new);
    return get_dup2()(old, new);
}
EXPORT int dup3(int old, int new, int flags) {
    before_closing(new);
    forget(new);
    return get_dup3()(old, new, flags);
}
EXPORT int dup(int old) {
    int fd = get_dup()(old);
    forget(fd);
    return fd;
}
EXPORT int fclose(FILE *f) {
    int fd = f ? fileno(f) : -1;
    if (fd >= 0) {
        before_closing(fd);
        forget(fd);
    }
    for (int i = 0; i < 2; i++)
        if (f && held_streams[i] == f)
            held_streams[i] = NULL; /* fclose flushes it; then it is gone */
    return get_fclose()(f);
}
EXPORT int pclose(FILE *f) {
    int fd = f ? fileno(f) : -1;
    forget(fd);
    if (active)
        let_out();
    return get_pclose()(f);
}

/* Every new fd is asked about afresh: its number may have been closed inside libc. */
#define NEW_FD(call)                                                                             \
    do {                                                                                         \
        int fd_ = call;                                                                          \
        forget(fd_);                                                                             \
        return fd_;                                                                              \
    } while (0)

static mode_t mode_arg(int flags, va_list ap) {
    return (flags & O_CREAT) || (flags & __O_TMPFILE) == __O_TMPFILE ? va_arg(ap, mode_t) : 0;
}
EXPORT int open(const char *path, int flags, ...) {
    va_list ap;
    va_start(ap, flags);
    mode_t mode = mode_arg(flags, ap);
    va_end(ap);
    NEW_FD(get_open()(path, flags, mode));
}
EXPORT int open64(const char *path, int flags, ...) {
    va_list ap;
    va_start(ap, flags);
    mode_t mode = mode_arg(flags, ap);
    va_end(ap);
    NEW_FD(get_open64()(path, flags, mode));
}
EXPORT int openat(int dir, const char *path, int flags, ...) {
    va_list ap;
    va_start(ap, flags);
    mode_t mode = mode_arg(flags, ap);
    va_end(ap);
    NEW_FD(get_openat()(dir, path, flags, mode));
}
EXPORT int openat64(int dir, const char *path, int flags, ...) {
    va_list ap;
    va_start(ap, flags);
    mode_t mode = mode_arg(flags, ap);
    va_end(ap);
    NEW_FD(get_openat64()(dir, path, flags, mode));
}
EXPORT int pipe(int fds[2]) {
    int r = get_pipe()(fds);
    if (r == 0) {
        forget(fds[0]);
        forget(fds[1]);
    }
    return r;
}
EXPORT int pipe2(int fds[2], int flags) {
    int r = get_pipe2()(fds, flags);
    if (r == 0) {
        forget(fds[0]);
        forget(fds[1]);
    }
    return r;
}
EXPORT int socket(int d, int t, int p) { NEW_FD(get_socket()(d, t, p)); }
EXPORT int accept(int s, struct sockaddr *a, socklen_t *l) { NEW_FD(get_accept()(s, a, l)); }
EXPORT int accept4(int s, struct sockaddr *a, socklen_t *l, int f) {
    NEW_FD(get_accept4()(s, a, l, f));
}

/* ---- the terminal's settings, signals: what is held goes out first ------------------------ */

EXPORT int ioctl(int fd, unsigned long request, ...) {
    va_list ap;
    va_start(ap, request);
    void *arg = va_arg(ap, void *);
    va_end(ap);
    if (holding && active && kind_of(fd) == K_TTY)
        let_out();
    return get_ioctl()(fd, request, arg);
}
EXPORT int tcsetattr(int fd, int when, const struct termios *t) {
    if (active)
        let_out();
    return get_tcsetattr()(fd, when, t);
}
EXPORT int tcdrain(int fd) {
    if (active)
        let_out();
    return get_tcdrain()(fd);
}
EXPORT int tcflush(int fd, int which) {
    if (active)
        let_out();
    return get_tcflush()(fd, which);
}
EXPORT int kill(pid_t pid, int sig) {
    if (active)
        let_out();
    return get_kill()(pid, sig);
}
EXPORT int killpg(pid_t pg, int sig) {
    if (active)
        let_out();
    return get_killpg()(pg, sig);
}
EXPORT int raise(int sig) {
    if (active)
        let_out();
    return get_raise()(sig);
}

/* ---- new programs: held bytes out, the frame so far said ------------------------------------ */

EXPORT int execve(const char *path, char *const argv[], char *const envp[]) {
    tail();
    return get_execve()(path, argv, envp);
}
EXPORT int execv(const char *path, char *const argv[]) {
    tail();
    return get_execv()(path, argv);
}
EXPORT int execvp(const char *file, char *const argv[]) {
    tail();
    return get_execvp()(file, argv);
}
EXPORT int execvpe(const char *file, char *const argv[], char *const envp[]) {
    tail();
    return get_execvpe()(file, argv, envp);
}
EXPORT int fexecve(int fd, char *const argv[], char *const envp[]) {
    tail();
    return get_fexecve()(fd, argv, envp);
}

/* execl and friends: their arguments gathered into the vector the v-forms take. */
#define GATHER(first, argv, ap)                                                                  \
    size_t count_ = 1;                                                                           \
    va_list counting_;                                                                           \
    va_copy(counting_, ap);                                                                      \
    while (va_arg(counting_, char *))                                                            \
        count_++;                                                                                \
    va_end(counting_);                                                                           \
    char **argv = alloca((count_ + 1) * sizeof(char *));                                         \
    argv[0] = (char *)(first);                                                                   \
    for (size_t i_ = 1; i_ <= count_; i_++)                                                      \
        argv[i_] = va_arg(ap, char *);

EXPORT int execl(const char *path, const char *arg, ...) {
    va_list ap;
    va_start(ap, arg);
    GATHER(arg, argv, ap);
    va_end(ap);
    return execv(path, argv);
}
EXPORT int execlp(const char *file, const char *arg, ...) {
    va_list ap;
    va_start(ap, arg);
    GATHER(arg, argv, ap);
    va_end(ap);
    return execvp(file, argv);
}
EXPORT int execle(const char *path, const char *arg, ...) {
    va_list ap;
    va_start(ap, arg);
    GATHER(arg, argv, ap);
    char *const *envp = va_arg(ap, char *const *);
    va_end(ap);
    return execve(path, argv, envp);
}

EXPORT int posix_spawn(pid_t *pid, const char *path, const posix_spawn_file_actions_t *fa,
                       const posix_spawnattr_t *at, char *const argv[], char *const envp[]) {
    if (active)
        let_out();
    return get_posix_spawn()(pid, path, fa, at, argv, envp);
}
EXPORT int posix_spawnp(pid_t *pid, const char *file, const posix_spawn_file_actions_t *fa,
                        const posix_spawnattr_t *at, char *const argv[], char *const envp[]) {
    if (active)
        let_out();
    return get_posix_spawnp()(pid, file, fa, at, argv, envp);
}
EXPORT int system(const char *command) {
    if (active)
        let_out();
    return get_system()(command);
}
EXPORT FILE *popen(const char *command, const char *type) {
    if (active)
        let_out();
    return get_popen()(command, type);
}

EXPORT void _exit(int status) {
    exiting();
    get__exit()(status);
    __builtin_unreachable();
}
EXPORT void _Exit(int status) {
    exiting();
    get__Exit()(status);
    __builtin_unreachable();
}

/* ---- stdio ------------------------------------------------------------------------------ *
 * glibc's stdio writes through libc-internal calls, so what it writes is never seen as a
 * write(2). Its output calls are interposed for the order: bytes held before a stdio call go
 * out first (without the observer they came first). With --try frame, stdout and stderr on the
 * terminal are also fully buffered (hold_stream) and flushed where held bytes are (let_out):
 * a stdio program's frame then goes out in one write(2) too. Reading the terminal through stdio
 * (a prompt, then fgets) lets everything out first, as a wait does; a program's own setvbuf,
 * setbuf or setlinebuf that would make a held stream unbuffered or line-buffered is ignored
 * (that is the fix being tried), full buffering of its own is kept. */

static void before_stdio(void) {
    if (holding && active && held_len > 0)
        flush_held();
}

/* What stdio writes to the terminal, seen by its stream's buffer. Its write(2)s happen inside
 * libc, where no interposed call sees them; but bytes that left a terminal stream's buffer
 * during a call went out in them. So a stdio output call on a stream whose fd is the terminal
 * notes the bytes pending before it; after it, those plus what it added less what is pending
 * now went out, and are said as one terminal write made during the call (the frame's first
 * stamped at the call's start). A buffered stream's flush is one write(2); an unbuffered one's
 * output may be a few, counted as one. Not with --try frame, whose held streams are flushed by
 * the observer itself. */
struct stdio_look {
    FILE *f;
    size_t before;
    const void *head; /* where the bytes about to go out begin */
    uint64_t start;
};

static size_t stdio_pending_bytes(FILE *f) {
#ifdef __GLIBC__
    return (size_t)(f->_IO_write_ptr - f->_IO_write_base);
#else
    return __fpending(f);
#endif
}

static struct stdio_look stdio_look(FILE *f, const void *p) {
    struct stdio_look look = {0};
    if (!active || holding || t_in_stdio || !f)
        return look;
    int fd = fileno_unlocked(f);
    if (fd < 0 || kind_of(fd) != K_TTY)
        return look;
    look.f = f;
    look.before = stdio_pending_bytes(f);
#ifdef __GLIBC__
    look.head = look.before > 0 ? (const void *)f->_IO_write_base : p;
#else
    look.head = look.before > 0 ? NULL : p;
#endif
    if (t_writes == 0)
        look.start = now_ns();
    return look;
}

static void stdio_seen(const struct stdio_look *look, size_t added) {
    if (!look->f)
        return;
    int saved = errno;
    size_t after = stdio_pending_bytes(look->f);
    if (look->before + added > after) {
        size_t out = look->before + added - after;
        note_opened(look->head, out < 8 ? out : 8);
        if (t_writes == 0)
            frame_begins(look->start);
        count_write((ssize_t)out);
    }
    errno = saved;
}

/* A stdio output call on `f` (`p`: its own bytes, where it has them), which added `added`
 * bytes to the stream (an expression of `result_`, the call's result). */
#define STDIO_OUT(type, f, p, call, added)                                                      \
    do {                                                                                         \
        before_stdio();                                                                          \
        struct stdio_look look_ = stdio_look(f, p);                                              \
        t_in_stdio++;                                                                            \
        type result_ = call;                                                                     \
        t_in_stdio--;                                                                            \
        stdio_seen(&look_, (added));                                                             \
        return result_;                                                                          \
    } while (0)

/* The bytes a character call added: one, unless it failed. */
#define ONE_CHAR (result_ == EOF ? 0u : 1u)

EXPORT size_t fwrite(const void *p, size_t size, size_t n, FILE *f) {
    STDIO_OUT(size_t, f, p, get_fwrite()(p, size, n, f), result_ * size);
}
EXPORT size_t(fwrite_unlocked)(const void *p, size_t size, size_t n, FILE *f) {
    STDIO_OUT(size_t, f, p, get_fwrite_unlocked()(p, size, n, f), result_ * size);
}
EXPORT int fputs(const char *s, FILE *f) {
    STDIO_OUT(int, f, s, get_fputs()(s, f), result_ == EOF ? 0u : strlen(s));
}
EXPORT int fputs_unlocked(const char *s, FILE *f) {
    STDIO_OUT(int, f, s, get_fputs_unlocked()(s, f), result_ == EOF ? 0u : strlen(s));
}
EXPORT int puts(const char *s) {
    STDIO_OUT(int, stdout, s, get_puts()(s), result_ == EOF ? 0u : strlen(s) + 1);
}
EXPORT int fputc(int c, FILE *f) { STDIO_OUT(int, f, NULL, get_fputc()(c, f), ONE_CHAR); }
EXPORT int fputc_unlocked(int c, FILE *f) {
    STDIO_OUT(int, f, NULL, get_fputc_unlocked()(c, f), ONE_CHAR);
}
EXPORT int putc(int c, FILE *f) { STDIO_OUT(int, f, NULL, get_putc()(c, f), ONE_CHAR); }
EXPORT int putc_unlocked(int c, FILE *f) {
    STDIO_OUT(int, f, NULL, get_putc_unlocked()(c, f), ONE_CHAR);
}
EXPORT int putchar(int c) { STDIO_OUT(int, stdout, NULL, get_putchar()(c), ONE_CHAR); }
EXPORT int putchar_unlocked(int c) {
    STDIO_OUT(int, stdout, NULL, get_putchar_unlocked()(c), ONE_CHAR);
}
/* What the putc macros call when the buffer is full. */
EXPORT int __overflow(FILE *f, int c) {
    STDIO_OUT(int, f, NULL, get___overflow()(f, c), c == EOF || result_ == EOF ? 0u : 1u);
}
EXPORT int fflush(FILE *f) { STDIO_OUT(int, f, NULL, get_fflush()(f), 0u); }
/* emacs flushes its own stream on the tty this way. */
EXPORT int fflush_unlocked(FILE *f) { STDIO_OUT(int, f, NULL, get_fflush_unlocked()(f), 0u); }
EXPORT void perror(const char *s) {
    before_stdio();
    t_in_stdio++;
    get_perror()(s);
    t_in_stdio--;
}
/* The bytes a printf added: its result, unless it failed. */
#define PRINTED (result_ < 0 ? 0u : (size_t)result_)

EXPORT int vfprintf(FILE *f, const char *fmt, va_list ap) {
    STDIO_OUT(int, f, NULL, get_vfprintf()(f, fmt, ap), PRINTED);
}
EXPORT int vprintf(const char *fmt, va_list ap) {
    STDIO_OUT(int, stdout, NULL, get_vfprintf()(stdout, fmt, ap), PRINTED);
}
/* The variadic ones through their v-forms, looked at the same way. */
static int printed_to(FILE *f, const char *fmt, va_list ap) {
    before_stdio();
    struct stdio_look look_ = stdio_look(f, NULL);
    t_in_stdio++;
    int result_ = get_vfprintf()(f, fmt, ap);
    t_in_stdio--;
    stdio_seen(&look_, PRINTED);
    return result_;
}
static int printed_chk_to(FILE *f, int flag, const char *fmt, va_list ap) {
    before_stdio();
    struct stdio_look look_ = stdio_look(f, NULL);
    t_in_stdio++;
    int result_ = get___vfprintf_chk()(f, flag, fmt, ap);
    t_in_stdio--;
    stdio_seen(&look_, PRINTED);
    return result_;
}
EXPORT int fprintf(FILE *f, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    int n = printed_to(f, fmt, ap);
    va_end(ap);
    return n;
}
EXPORT int printf(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    int n = printed_to(stdout, fmt, ap);
    va_end(ap);
    return n;
}
/* What programs built with _FORTIFY_SOURCE call instead (Debian builds its packages so). */
EXPORT int __vfprintf_chk(FILE *f, int flag, const char *fmt, va_list ap) {
    STDIO_OUT(int, f, NULL, get___vfprintf_chk()(f, flag, fmt, ap), PRINTED);
}
EXPORT int __vprintf_chk(int flag, const char *fmt, va_list ap) {
    STDIO_OUT(int, stdout, NULL, get___vfprintf_chk()(stdout, flag, fmt, ap), PRINTED);
}
EXPORT int __fprintf_chk(FILE *f, int flag, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    int n = printed_chk_to(f, flag, fmt, ap);
    va_end(ap);
    return n;
}
EXPORT int __printf_chk(int flag, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    int n = printed_chk_to(stdout, flag, fmt, ap);
    va_end(ap);
    return n;
}

/* dprintf writes to the fd at once, like write(2), through libc-internal calls: to the
 * terminal, everything held before it first, and its output seen as one terminal write (it
 * makes one write(2) of what it formatted). Returns whether `fd` is the terminal. */
static int before_fd_output(int fd) {
    if (!active || kind_of(fd) != K_TTY)
        return 0;
    if (holding)
        let_out();
    else if (t_writes == 0 && !t_in_stdio)
        frame_begins(now_ns());
    return !holding && !t_in_stdio;
}
static int fd_output_seen(int seen, int n) {
    if (seen && n > 0)
        count_write(n);
    return n;
}
EXPORT int vdprintf(int fd, const char *fmt, va_list ap) {
    int seen = before_fd_output(fd);
    return fd_output_seen(seen, get_vdprintf()(fd, fmt, ap));
}
EXPORT int dprintf(int fd, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    int seen = before_fd_output(fd);
    int n = get_vdprintf()(fd, fmt, ap);
    va_end(ap);
    return fd_output_seen(seen, n);
}
EXPORT int __vdprintf_chk(int fd, int flag, const char *fmt, va_list ap) {
    int seen = before_fd_output(fd);
    return fd_output_seen(seen, get___vdprintf_chk()(fd, flag, fmt, ap));
}
EXPORT int __dprintf_chk(int fd, int flag, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    int seen = before_fd_output(fd);
    int n = get___vdprintf_chk()(fd, flag, fmt, ap);
    va_end(ap);
    return fd_output_seen(seen, n);
}

/* A held stream keeps full buffering: the program's unbuffered or line-buffered wish is what
 * --try frame tries without. */
static int is_held_stream(FILE *f) {
    return holding && active && f && (f == held_streams[0] || f == held_streams[1]);
}
EXPORT int setvbuf(FILE *f, char *buffer, int mode, size_t size) {
    if (is_held_stream(f) && mode != _IOFBF)
        return 0;
    return get_setvbuf()(f, buffer, mode, size);
}
EXPORT void setbuf(FILE *f, char *buffer) {
    if (!is_held_stream(f))
        get_setbuf()(f, buffer);
}
EXPORT void setbuffer(FILE *f, char *buffer, size_t size) {
    if (!is_held_stream(f))
        get_setbuffer()(f, buffer, size);
}
EXPORT void setlinebuf(FILE *f) {
    if (!is_held_stream(f))
        get_setlinebuf()(f);
}

/* Reading the terminal through stdio: a wait for the user, whose prompt must be out. */
static void before_stdio_input(FILE *f) {
    if (!holding || !active || !f)
        return;
    int saved = errno; /* fileno sets EBADF for a stream of memory */
    if (kind_of(fileno(f)) == K_TTY)
        let_out();
    errno = saved;
}
#define STDIO_IN(f, call)                                                                        \
    do {                                                                                         \
        before_stdio_input(f);                                                                   \
        return call;                                                                             \
    } while (0)

EXPORT char *fgets(char *s, int n, FILE *f) { STDIO_IN(f, get_fgets()(s, n, f)); }
EXPORT char *fgets_unlocked(char *s, int n, FILE *f) {
    STDIO_IN(f, get_fgets_unlocked()(s, n, f));
}
EXPORT char *__fgets_chk(char *s, size_t size, int n, FILE *f) {
    STDIO_IN(f, get___fgets_chk()(s, size, n, f));
}
EXPORT char *__fgets_unlocked_chk(char *s, size_t size, int n, FILE *f) {
    STDIO_IN(f, get___fgets_unlocked_chk()(s, size, n, f));
}
EXPORT int fgetc(FILE *f) { STDIO_IN(f, get_fgetc()(f)); }
EXPORT int getc(FILE *f) { STDIO_IN(f, get_getc()(f)); }
EXPORT int getchar(void) { STDIO_IN(stdin, get_getchar()()); }
EXPORT int fgetc_unlocked(FILE *f) { STDIO_IN(f, get_fgetc_unlocked()(f)); }
EXPORT int getc_unlocked(FILE *f) { STDIO_IN(f, get_getc_unlocked()(f)); }
EXPORT int getchar_unlocked(void) { STDIO_IN(stdin, get_getchar_unlocked()()); }
/* What the getc macros call when the buffer is empty. */
EXPORT int __uflow(FILE *f) { STDIO_IN(f, get___uflow()(f)); }
EXPORT int __underflow(FILE *f) { STDIO_IN(f, get___underflow()(f)); }
EXPORT size_t fread(void *p, size_t size, size_t n, FILE *f) {
    STDIO_IN(f, get_fread()(p, size, n, f));
}
EXPORT size_t(fread_unlocked)(void *p, size_t size, size_t n, FILE *f) {
    STDIO_IN(f, get_fread_unlocked()(p, size, n, f));
}
EXPORT size_t __fread_chk(void *p, size_t room, size_t size, size_t n, FILE *f) {
    STDIO_IN(f, get___fread_chk()(p, room, size, n, f));
}
EXPORT size_t __fread_unlocked_chk(void *p, size_t room, size_t size, size_t n, FILE *f) {
    STDIO_IN(f, get___fread_unlocked_chk()(p, room, size, n, f));
}
EXPORT ssize_t getline(char **line, size_t *n, FILE *f) { STDIO_IN(f, get_getline()(line, n, f)); }
EXPORT ssize_t getdelim(char **line, size_t *n, int d, FILE *f) {
    STDIO_IN(f, get_getdelim()(line, n, d, f));
}
EXPORT ssize_t __getdelim(char **line, size_t *n, int d, FILE *f) {
    STDIO_IN(f, get___getdelim()(line, n, d, f));
}
/* stdio.h renames scanf and its kin to their __isoc99_ forms (asm labels): the plain symbols,
 * which older programs call, are defined under C names of their own. */
int plain_vfscanf(FILE *, const char *, va_list) __asm__("vfscanf");
int plain_vscanf(const char *, va_list) __asm__("vscanf");
int plain_fscanf(FILE *, const char *, ...) __asm__("fscanf");
int plain_scanf(const char *, ...) __asm__("scanf");
EXPORT int plain_vfscanf(FILE *f, const char *fmt, va_list ap) {
    STDIO_IN(f, get_vfscanf()(f, fmt, ap));
}
EXPORT int __isoc99_vfscanf(FILE *f, const char *fmt, va_list ap) {
    STDIO_IN(f, get___isoc99_vfscanf()(f, fmt, ap));
}
EXPORT int plain_vscanf(const char *fmt, va_list ap) { STDIO_IN(stdin, get_vfscanf()(stdin, fmt, ap)); }
EXPORT int __isoc99_vscanf(const char *fmt, va_list ap) {
    STDIO_IN(stdin, get___isoc99_vfscanf()(stdin, fmt, ap));
}
#define SCAN(f, real, fmt)                                                                       \
    va_list ap;                                                                                  \
    va_start(ap, fmt);                                                                           \
    before_stdio_input(f);                                                                       \
    int n = real(f, fmt, ap);                                                                    \
    va_end(ap);                                                                                  \
    return n;
EXPORT int plain_fscanf(FILE *f, const char *fmt, ...) { SCAN(f, get_vfscanf(), fmt) }
EXPORT int plain_scanf(const char *fmt, ...) { SCAN(stdin, get_vfscanf(), fmt) }
EXPORT int __isoc99_fscanf(FILE *f, const char *fmt, ...) {
    SCAN(f, get___isoc99_vfscanf(), fmt)
}
EXPORT int __isoc99_scanf(const char *fmt, ...) { SCAN(stdin, get___isoc99_vfscanf(), fmt) }

/* abort() does not flush stdio: a message written just before it is let out first. */
EXPORT void abort(void) {
    let_out();
    get_abort()();
    __builtin_unreachable();
}
