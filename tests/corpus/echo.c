/* A program that echoes each key it reads, as a line editor does: raw mode, and every byte
 * read is written back at once (a frame a read). `q` ends it. The truth `wrap --via mosh`'s
 * predictive echo is told apart against: mosh shows a typed character before the program's
 * echo comes back only where the program echoes it. */
#include <termios.h>
#include <unistd.h>

int main(void) {
    struct termios saved, raw;
    if (tcgetattr(0, &saved) != 0)
        return 2;
    raw = saved;
    cfmakeraw(&raw);
    tcsetattr(0, TCSANOW, &raw);
    write(1, "> ", 2);
    char buf[256];
    for (;;) {
        ssize_t n = read(0, buf, sizeof buf);
        if (n <= 0)
            break;
        int quit = 0;
        for (ssize_t i = 0; i < n; i++)
            quit |= buf[i] == 'q';
        if (quit)
            break;
        write(1, buf, (size_t)n);
    }
    tcsetattr(0, TCSANOW, &saved);
    return 0;
}
