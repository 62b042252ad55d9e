/* Frames drawn with C stdio, the way C terminal programs draw them, counting their own frames:
 * the truth `flushlab wrap` is checked against (tests/corpus.rs). Every frame homes the cursor
 * and paints every cell of the terminal a colour that moves each frame.
 *
 *   stdio MODE      MODE is one of
 *     line          printf per cell on stdout: glibc's terminal buffer (1 KiB on a pty)
 *     full          setvbuf _IOFBF 64 KiB, fflush once a frame, 30 fps
 *     unbuffered    fprintf per cell on stderr (unbuffered)
 *     twophase      the frame built in memory, written in two write(2) (top half, bottom half),
 *                   30 fps
 *     continuous    full buffering, fflush once a frame, no pause at all
 *     unbalanced    full, 30 fps, each frame opens DEC 2026 synchronized output, none closes it
 *
 * FRAMES_FILE receives "FRAMES SECONDS" at the end (SIGTERM, SIGHUP, or FRAMES frames drawn):
 * frames drawn, and the time from the first frame's start to the last frame's end. */
#define _POSIX_C_SOURCE 200809L
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <time.h>
#include <unistd.h>

static volatile sig_atomic_t stop = 0;
static void on_signal(int sig) { (void)sig; stop = 1; }

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec / 1e9;
}

static void pace(double start, long frame, double fps) {
    double due = start + frame / fps, wait = due - now();
    if (wait > 0) {
        struct timespec ts = {(time_t)wait, (long)((wait - (time_t)wait) * 1e9)};
        nanosleep(&ts, NULL);
    }
}

/* One frame into `out`: home, then every row from its first column. */
static void frame(FILE *out, int cols, int rows, long n) {
    fputs("\033[H", out);
    for (int r = 0; r < rows; r++) {
        if (r > 0) fprintf(out, "\033[%d;1H", r + 1);
        for (int c = 0; c < cols; c++) fprintf(out, "\033[48;5;%ldm ", (c + r + n) % 216 + 16);
    }
    fputs("\033[0m", out);
}

int main(int argc, char **argv) {
    const char *mode = argc > 1 ? argv[1] : "line";
    struct winsize ws = {0};
    ioctl(1, TIOCGWINSZ, &ws);
    int cols = ws.ws_col ? ws.ws_col : 80, rows = ws.ws_row ? ws.ws_row : 24;
    signal(SIGTERM, on_signal);
    signal(SIGHUP, on_signal);
    const char *limit_text = getenv("FRAMES");
    long limit = limit_text ? atol(limit_text) : -1;
    static char big[1 << 16];
    FILE *out = stdout;
    double fps = 0; /* 0: as fast as it goes */
    int two_phase = 0, unbalanced = 0;
    if (!strcmp(mode, "line")) {
    } else if (!strcmp(mode, "full") || !strcmp(mode, "continuous") || !strcmp(mode, "unbalanced")) {
        setvbuf(stdout, big, _IOFBF, sizeof big);
        fps = strcmp(mode, "continuous") ? 30 : 0;
        unbalanced = !strcmp(mode, "unbalanced");
    } else if (!strcmp(mode, "unbuffered")) {
        out = stderr;
    } else if (!strcmp(mode, "twophase")) {
        two_phase = 1;
        fps = 30;
    } else {
        fprintf(stderr, "stdio: unknown mode '%s'\n", mode);
        return 2;
    }
    char *mem = NULL;
    size_t mem_size = 0;
    long n = 0;
    double first = now(), last_end = first;
    while (!stop && (limit < 0 || n < limit)) {
        if (fps > 0) pace(first, n, fps);
        if (n == 0) first = now();
        if (two_phase) {
            FILE *m = open_memstream(&mem, &mem_size);
            frame(m, cols, rows, n);
            fclose(m);
            size_t half = mem_size / 2;
            if (write(1, mem, half) < 0 || write(1, mem + half, mem_size - half) < 0) break;
            free(mem);
            mem = NULL;
        } else {
            if (unbalanced) fputs("\033[?2026h", out);
            frame(out, cols, rows, n);
            fflush(out);
        }
        n++;
        last_end = now();
    }
    const char *file = getenv("FRAMES_FILE");
    if (file) {
        FILE *f = fopen(file, "w");
        if (f) {
            fprintf(f, "%ld %.6f\n", n, last_end - first);
            fclose(f);
        }
    }
    return 0;
}
