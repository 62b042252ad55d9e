/* A program that answers each key by redrawing its 80x24 screen, the way argv[1] says:
 *   clear  clears it (ESC[H ESC[2J), sleeps 30 ms, then draws 23 rows: a flash a key;
 *   csi    the same inside a DEC 2026 synchronized-output block (ESC[?2026h … ESC[?2026l);
 *   dcs    the same inside the older DCS block (ESC P=1s ESC\ … ESC P=2s ESC\);
 *   place  draws the rows in place, in one write(2) of at most 2,048 bytes, each row placed by
 *          a cursor move: no clear, no newline;
 *   rows   draws them in place with every row naming the key, in 4 write(2)s of 6 rows 30 ms
 *          apart (spent working, not waiting: one frame to an observer): half old, half new
 *          rows on screen for a refresh or longer, a tear a key.
 * The cursor is hidden; only the first row changes from key to key. 'q' ends it. Its own count
 * of the screens it blanked is written to argv[2] at the end (the truth a model's flash count is
 * held to). With argv[3] "poll" it waits for each key in poll(2) before it reads it, as event
 * loops do.
 * tests/it/seen.rs. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <poll.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>

static void sleep_ms(long ms) {
    struct timespec ts = {0, ms * 1000000L};
    nanosleep(&ts, NULL);
}

static void put(const char *bytes, size_t len) {
    while (len > 0) {
        ssize_t n = write(1, bytes, len);
        if (n <= 0)
            exit(1);
        bytes += n;
        len -= (size_t)n;
    }
}

/* Rows `from` to `to` (of 23), each placed by a cursor move, 60 characters each: the first
 * names the key, the others the same text on every frame (or, `every`, the key too). */
static size_t some_rows(char *buf, int key, int from, int to, int every) {
    size_t len = 0;
    for (int r = from; r < to; r++) {
        len += (size_t)sprintf(buf + len, "\033[%d;1H", r + 1);
        if (r == 0 || every)
            len += (size_t)sprintf(buf + len, "key %-5d row %02d%-41s", key, r, "");
        else
            len += (size_t)sprintf(buf + len, "row %02d: the same text on every frame, never moved", r);
    }
    return len;
}

static size_t rows(char *buf, int key) {
    return some_rows(buf, key, 0, 23, 0);
}

/* Busy for `ms`: work, not a wait (no system call an observer takes for one). */
static void work_ms(long ms) {
    struct timespec start, now;
    clock_gettime(CLOCK_MONOTONIC, &start);
    do
        clock_gettime(CLOCK_MONOTONIC, &now);
    while ((now.tv_sec - start.tv_sec) * 1000L + (now.tv_nsec - start.tv_nsec) / 1000000L < ms);
}

int main(int argc, char **argv) {
    const char *mode = argc > 1 ? argv[1] : "clear";
    int place = strcmp(mode, "place") == 0;
    int in_rows = strcmp(mode, "rows") == 0;
    const char *begin = strcmp(mode, "csi") == 0 ? "\033[?2026h" : strcmp(mode, "dcs") == 0 ? "\033P=1s\033\\" : "";
    const char *end = strcmp(mode, "csi") == 0 ? "\033[?2026l" : strcmp(mode, "dcs") == 0 ? "\033P=2s\033\\" : "";
    struct termios raw;
    if (tcgetattr(0, &raw) == 0) {
        cfmakeraw(&raw);
        raw.c_oflag |= OPOST | ONLCR;
        tcsetattr(0, TCSANOW, &raw);
    }
    static char buf[4096];
    /* The cursor hidden, as a full-screen program's is: a camera would see it move. */
    put("\033[?25l", 6);
    size_t len = rows(buf, 0);
    put(buf, len);
    int key = 0, blanked = 0;
    int polls = argc > 3 && strcmp(argv[3], "poll") == 0;
    char c;
    for (;;) {
        struct pollfd in = {.fd = 0, .events = POLLIN};
        if (polls && poll(&in, 1, -1) != 1)
            break;
        if (read(0, &c, 1) != 1 || c == 'q')
            break;
        key++;
        if (place) {
            len = rows(buf, key);
            put(buf, len);
            continue;
        }
        if (in_rows) {
            for (int part = 0; part < 4; part++) {
                if (part > 0)
                    work_ms(30);
                len = some_rows(buf, key, part * 6, part == 3 ? 23 : part * 6 + 6, 1);
                put(buf, len);
            }
            continue;
        }
        len = (size_t)sprintf(buf, "%s\033[H\033[2J", begin);
        put(buf, len);
        blanked++;
        sleep_ms(30);
        len = rows(buf, key);
        len += (size_t)sprintf(buf + len, "%s", end);
        put(buf, len);
    }
    if (argc > 2) {
        FILE *f = fopen(argv[2], "w");
        if (f) {
            fprintf(f, "%d\n", blanked);
            fclose(f);
        }
    }
    return 0;
}
