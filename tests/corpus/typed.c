/* A program that logs every byte it reads from its terminal: the truth `wrap --terminal`'s
 * typing is checked against (tests/key_pixels.rs). Raw mode; with the argument `app`, it first
 * asks for application cursor keys (DECCKM, `ESC [ ? 1 h`), as vim and less do. Each read is
 * answered with a frame of one line (how many bytes so far), so every key has a frame. `q`
 * ends it; then TYPED_LOG receives every byte read, in order, as two hex digits each. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <termios.h>
#include <unistd.h>

int main(int argc, char **argv) {
    struct termios saved, raw;
    if (tcgetattr(0, &saved) != 0)
        return 2;
    raw = saved;
    cfmakeraw(&raw);
    tcsetattr(0, TCSANOW, &raw);
    if (argc > 1 && strcmp(argv[1], "app") == 0)
        write(1, "\x1b[?1h", 5);
    static const char first[] = "\x1b[2J\x1b[Hready";
    write(1, first, sizeof first - 1);
    static unsigned char seen[1 << 16];
    size_t n = 0;
    for (;;) {
        unsigned char buf[256];
        ssize_t got = read(0, buf, sizeof buf);
        if (got <= 0)
            break;
        for (ssize_t i = 0; i < got && n < sizeof seen; i++)
            seen[n++] = buf[i];
        char frame[64];
        int len = snprintf(frame, sizeof frame, "\x1b[H\x1b[2Kbytes %zu", n);
        write(1, frame, (size_t)len);
        if (memchr(buf, 'q', (size_t)got))
            break;
    }
    tcsetattr(0, TCSANOW, &saved);
    const char *log = getenv("TYPED_LOG");
    FILE *f = log ? fopen(log, "w") : NULL;
    if (f) {
        for (size_t i = 0; i < n; i++)
            fprintf(f, "%02x", seen[i]);
        fclose(f);
    }
    return 0;
}
