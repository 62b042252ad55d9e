/* A C program that draws a frame for each key and stamps each stage of it itself: the truth
 * `wrap --keys`'s stages are checked against (tests/it/keyed.rs). Raw mode. Arguments:
 *
 *   1. `tick`: a loop that sleeps 16 ms, then looks at the input without waiting (a key waits
 *      up to a tick to be read); `poll`: a loop that waits in poll(2) for the input; `clock`:
 *      `poll`, and every 250 ms without a key it redraws a clock line by itself (frames nobody
 *      asked for).
 *   2. the work a key costs before its frame, in microseconds of busy CPU.
 *   3. how the frame goes to stderr: `raw` (or nothing) one write(2) a cell (thousands a
 *      frame), `rows` one a row, `frame` one a frame; `stdio` one a row through glibc's stdio
 *      (stderr given a full buffer, each row fwrite(3) then fflush(3)).
 *   4. `sync`: each frame in a synchronized-output block (DEC 2026), its begin in the frame's
 *      first write and its end in its last.
 *
 * `q` ends it. KEYS_LOG receives, at the end, one line a read that took keys: when the read
 * returned, when the frame's first write began and when its last write (and, under `wrap --try
 * frame`, the held frame's release: a write to a pipe, which lets held bytes out) was done,
 * CLOCK_MONOTONIC nanoseconds; then `clock N`, the frames it drew by itself. With
 * KEYS_LOG_APPEND set, each run appends (its `clock` line ends it). */
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>

static uint64_t now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static volatile sig_atomic_t stop;
static void on_term(int sig) { (void)sig; stop = 1; }

#define MAX_READS 20000
static uint64_t read_ns[MAX_READS], first_ns[MAX_READS], last_ns[MAX_READS];

/* The work a key costs, in a function of its own: a profile of the program names it. */
__attribute__((noinline)) static void busy_work(uint64_t since, long us) {
    while (now_ns() - since < (uint64_t)us * 1000u) {
    }
}

int main(int argc, char **argv) {
    int tick = argc > 1 && strcmp(argv[1], "tick") == 0;
    int clock = argc > 1 && strcmp(argv[1], "clock") == 0;
    int clock_frames = 0;
    long work_us = argc > 2 ? atol(argv[2]) : 0;
    enum { CELL, ROW, FRAME, STDIO_ROW } writes_per = CELL;
    if (argc > 3 && strcmp(argv[3], "rows") == 0)
        writes_per = ROW;
    if (argc > 3 && strcmp(argv[3], "stdio") == 0) {
        writes_per = STDIO_ROW;
        static char stdio_buffer[1 << 16];
        setvbuf(stderr, stdio_buffer, _IOFBF, sizeof stdio_buffer);
    }
    if (argc > 3 && strcmp(argv[3], "frame") == 0)
        writes_per = FRAME;
    int sync = argc > 4 && strcmp(argv[4], "sync") == 0;
    struct sigaction sa = {0};
    sa.sa_handler = on_term;
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGHUP, &sa, NULL);
    struct termios saved, raw;
    tcgetattr(0, &saved);
    raw = saved;
    cfmakeraw(&raw);
    raw.c_cc[VMIN] = 0; /* a read returns what is there, at once */
    raw.c_cc[VTIME] = 0;
    tcsetattr(0, TCSANOW, &raw);
    struct winsize ws = {0};
    ioctl(2, TIOCGWINSZ, &ws);
    int cols = ws.ws_col ? ws.ws_col : 80, rows = ws.ws_row ? ws.ws_row : 24;
    int release[2];
    if (pipe(release) != 0)
        return 1;
    int reads = 0, done = 0;
    while (!stop && !done && reads < MAX_READS) {
        if (tick) {
            struct timespec t = {0, 16000000};
            nanosleep(&t, NULL);
        } else {
            struct pollfd in = {0, POLLIN, 0};
            int ready = poll(&in, 1, clock ? 250 : -1);
            if (ready < 0)
                continue;
            if (ready == 0) {
                char line[64];
                int k = snprintf(line, sizeof line, "\033[%d;1H\033[7mclock %d\033[m", rows,
                                 ++clock_frames);
                write(2, line, (size_t)k);
                continue;
            }
        }
        char buf[64];
        ssize_t n = read(0, buf, sizeof buf);
        if (n <= 0)
            continue;
        uint64_t got = now_ns();
        done = memchr(buf, 'q', (size_t)n) != NULL;
        busy_work(got, work_us);
        uint64_t first = now_ns();
        static char frame[1 << 20];
        size_t held = 0;
        if (sync)
            held = (size_t)snprintf(frame, 32, "\033[?2026h");
        for (int r = 0; r < rows; r++) {
            for (int c = 0; c < cols; c++) {
                int k = snprintf(frame + held, 32, "\033[%d;%dH\033[38;5;%dm%c", r + 1, c + 1,
                                 (r + c + reads) % 256, 'a' + reads % 26);
                held += (size_t)k;
                if (writes_per == CELL) {
                    write(2, frame, held);
                    held = 0;
                }
            }
            if (writes_per == ROW) {
                write(2, frame, held);
                held = 0;
            }
            if (writes_per == STDIO_ROW) {
                fwrite(frame, 1, held, stderr);
                fflush(stderr);
                held = 0;
            }
        }
        if (sync)
            held += (size_t)snprintf(frame + held, 32, "\033[?2026l");
        if (held > 0 && writes_per == STDIO_ROW) {
            fwrite(frame, 1, held, stderr);
            fflush(stderr);
        } else if (held > 0) {
            write(2, frame, held);
        }
        write(release[1], "", 0);
        read_ns[reads] = got;
        first_ns[reads] = first;
        last_ns[reads] = now_ns();
        reads++;
    }
    tcsetattr(0, TCSANOW, &saved);
    const char *path = getenv("KEYS_LOG");
    FILE *log = path ? fopen(path, getenv("KEYS_LOG_APPEND") ? "a" : "w") : NULL;
    for (int i = 0; log && i < reads; i++)
        fprintf(log, "%llu %llu %llu\n", (unsigned long long)read_ns[i],
                (unsigned long long)first_ns[i], (unsigned long long)last_ns[i]);
    if (log) {
        fprintf(log, "clock %d\n", clock_frames);
        fclose(log);
    }
    return 0;
}
