/* A program that waits in the middle of its frames: each frame starts at home (ESC[H), its
 * first half is written, then the program sleeps 6 ms, writes the second half and sleeps 27 ms
 * (about 30 frames a second). From inside, two waits a frame: the truth is the frame count
 * it is given (first argument), one frame a home. tests/it/observer.rs. */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

static void sleep_ms(long ms) {
    struct timespec ts = {0, ms * 1000000L};
    nanosleep(&ts, NULL);
}

int main(int argc, char **argv) {
    int frames = argc > 1 ? atoi(argv[1]) : 30;
    static char buf[80 * 24 + 16];
    for (int f = 0; f < frames; f++) {
        size_t len = (size_t)sprintf(buf, "\033[H");
        for (int r = 0; r < 24; r++) {
            for (int c = 0; c < 80; c++)
                buf[len++] = (char)('a' + (f + r + c) % 26);
            if (r == 11) {
                write(1, buf, len);
                len = 0;
                sleep_ms(6);
            }
        }
        write(1, buf, len);
        sleep_ms(27);
    }
    return 0;
}
