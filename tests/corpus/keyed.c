/* A C program that draws when a key arrives, and times itself: the truth `wrap --keys` is
 * checked against (tests/it/keyed.rs). Raw mode; `app` as the first argument turns on the
 * application cursor keys (DECCKM, ESC[?1h) as vim and less do. Each read of the terminal
 * (blocking, through libc) is one batch of keys; for each batch it draws a full screen — every
 * cell — into unbuffered stderr one cell a write(2) (second argument `raw`, the default) or the
 * whole frame in one write (`frame`). `q` ends it. A third argument `unseen` waits for keys and
 * reads them through raw system calls, which no LD_PRELOAD object sees (as a program built on
 * rustix does): wrap's observer then never sees it wait.
 *
 * KEYS_LOG receives, at the end, one line a read: the bytes read in hex, when the read returned
 * and when the frame it caused was written and drained (tcdrain), CLOCK_MONOTONIC nanoseconds. */
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <poll.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>

static uint64_t now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* A system call made with the instruction itself, not through any libc function. */
static long raw_syscall3(long number, long a, long b, long c) {
#if defined(__x86_64__)
    long ret;
    __asm__ volatile("syscall"
                     : "=a"(ret)
                     : "a"(number), "D"(a), "S"(b), "d"(c)
                     : "rcx", "r11", "memory");
    return ret;
#else
    return syscall(number, a, b, c); /* glibc's: the observer passes all but futex through */
#endif
}

static ssize_t read_key(int unseen, char *buf, size_t size) {
    if (!unseen)
        return read(0, buf, size);
    struct pollfd in = {0, POLLIN, 0};
#if defined(__x86_64__)
    long ready = raw_syscall3(SYS_poll, (long)&in, 1, -1);
#else
    long ready = syscall(SYS_ppoll, &in, 1, NULL, NULL, 8);
#endif
    if (ready <= 0)
        return -1;
    return raw_syscall3(SYS_read, 0, (long)buf, (long)size);
}

static volatile sig_atomic_t stop;
static void on_term(int sig) { (void)sig; stop = 1; }

#define MAX_READS 20000
static char keys[MAX_READS][16];
static int key_len[MAX_READS];
static uint64_t read_ns[MAX_READS], frame_ns[MAX_READS];

int main(int argc, char **argv) {
    int app = argc > 1 && strcmp(argv[1], "app") == 0;
    int whole = argc > 2 && strcmp(argv[2], "frame") == 0;
    int unseen = argc > 3 && strcmp(argv[3], "unseen") == 0;
    struct sigaction sa = {0};
    sa.sa_handler = on_term;
    sigaction(SIGTERM, &sa, NULL); /* no SA_RESTART: a blocked read returns */
    sigaction(SIGHUP, &sa, NULL);
    struct termios saved, raw;
    tcgetattr(0, &saved);
    raw = saved;
    cfmakeraw(&raw);
    tcsetattr(0, TCSANOW, &raw);
    struct winsize ws = {0};
    ioctl(2, TIOCGWINSZ, &ws);
    int cols = ws.ws_col ? ws.ws_col : 80, rows = ws.ws_row ? ws.ws_row : 24;
    char *frame = malloc((size_t)cols * rows * 32 + 64);
    if (app)
        write(1, "\033[?1h", 5);
    int reads = 0, n_frames = 0;
    while (!stop && reads < MAX_READS) {
        char buf[16];
        ssize_t n = read_key(unseen, buf, sizeof buf);
        if (n <= 0)
            break;
        uint64_t got = now_ns();
        memcpy(keys[reads], buf, (size_t)n);
        key_len[reads] = (int)n;
        read_ns[reads] = got;
        n_frames++;
        size_t len = 0;
        for (int r = 0; r < rows; r++) {
            for (int c = 0; c < cols; c++) {
                int k = snprintf(frame + len, 32, "\033[%d;%dH\033[38;5;%dm%c", r + 1, c + 1,
                                 (r + c + n_frames) % 256, 'a' + n_frames % 26);
                if (!whole)
                    write(2, frame + len, (size_t)k);
                else
                    len += (size_t)k;
            }
        }
        if (whole)
            write(2, frame, len);
        /* The frame is finished when the kernel has taken it: under `wrap --try frame` the
         * observer holds writes, and lets them out here (tcdrain is a libc call it sees). */
        if (!unseen)
            tcdrain(2);
        frame_ns[reads] = now_ns();
        reads++;
        if (memchr(buf, 'q', (size_t)n))
            break;
    }
    if (app)
        write(1, "\033[?1l", 5);
    tcsetattr(0, TCSANOW, &saved);
    const char *path = getenv("KEYS_LOG");
    FILE *log = path ? fopen(path, "w") : NULL;
    for (int i = 0; log && i < reads; i++) {
        for (int j = 0; j < key_len[i]; j++)
            fprintf(log, "%02x", (unsigned char)keys[i][j]);
        fprintf(log, " %llu %llu\n", (unsigned long long)read_ns[i],
                (unsigned long long)frame_ns[i]);
    }
    if (log)
        fclose(log);
    return 0;
}
