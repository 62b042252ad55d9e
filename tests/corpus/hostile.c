/* Programs that fight back, for the observer's held frames (tests/it/observer.rs): each draws
 * frames to fd 1 with many small write(2) and a pause between frames, doing one hostile thing.
 *
 *   hostile MODE FRAMES      MODE is one of
 *     dup2       mid-frame, /dev/null is dup2'd over fd 1, written to, and the terminal put back
 *     vfork      between frames, vfork + exec /bin/true
 *     signals    a 1 ms interval timer whose handler writes '!' to fd 1 while frames are drawn;
 *                the handler's writes are counted and said on stderr at the end ("signals N")
 *     mixed      stdout made unbuffered (setvbuf _IONBF), then each frame half through stdio
 *                (printf), half through write(2), and a line through stdio's stderr: as is, the
 *                terminal gets the calls' order; tried, stdio is fully buffered all the same
 *                (the program's setvbuf is what --try overrides) and the order must survive
 *     prompt     no frames: "name? " through stdio (no newline, no fflush), then a line read
 *                through stdio from the terminal, then "hello NAME": the prompt must be out
 *                before the read (glibc flushes a line-buffered stdout there; the observer must
 *                too once it has made stdout fully buffered)
 *
 * Output is fixed for dup2 and vfork (byte for byte the same with frames held or not); for
 * signals only the count of '!' is. */
#define _GNU_SOURCE
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <unistd.h>

static volatile sig_atomic_t alarms;

static void on_alarm(int sig) {
    (void)sig;
    if (write(1, "!", 1) == 1)
        alarms++;
}

static void put(const char *s) {
    size_t n = strlen(s);
    while (n > 0) {
        ssize_t w = write(1, s, n);
        if (w <= 0)
            exit(3);
        s += w;
        n -= (size_t)w;
    }
}

/* vfork in a function of its own: the child shares this frame until it execs. */
__attribute__((noinline)) static void run_true(void) {
    pid_t child = vfork();
    if (child == 0) {
        execl("/bin/true", "true", (char *)NULL);
        _exit(127);
    }
    waitpid(child, NULL, 0);
}

int main(int argc, char **argv) {
    if (argc < 3)
        return 2;
    const char *mode = argv[1];
    int frames = atoi(argv[2]);
    if (!strcmp(mode, "signals")) {
        struct sigaction sa;
        memset(&sa, 0, sizeof sa);
        sa.sa_handler = on_alarm;
        sa.sa_flags = SA_RESTART;
        sigaction(SIGALRM, &sa, NULL);
        struct itimerval every = {{0, 1000}, {0, 1000}};
        setitimer(ITIMER_REAL, &every, NULL);
    }
    if (!strcmp(mode, "prompt")) {
        char name[64];
        printf("name? ");
        if (!fgets(name, sizeof name, stdin))
            return 4;
        printf("hello %s", name);
        return 0;
    }
    if (!strcmp(mode, "mixed"))
        setvbuf(stdout, NULL, _IONBF, 0);
    char cell[32];
    for (int f = 0; f < frames; f++) {
        put("\033[H");
        for (int i = 0; i < 400; i++) {
            snprintf(cell, sizeof cell, "\033[3%dm%c", i % 8, 'a' + (f + i) % 26);
            if (!strcmp(mode, "mixed") && i % 2)
                printf("%s", cell);
            else
                put(cell);
            if (!strcmp(mode, "dup2") && i == 200) {
                int saved = dup(1), null = open("/dev/null", O_WRONLY);
                dup2(null, 1);
                put("never on the terminal");
                dup2(saved, 1);
                close(saved);
                close(null);
            }
        }
        if (!strcmp(mode, "vfork"))
            run_true();
        if (!strcmp(mode, "mixed"))
            fprintf(stderr, "\r\nframe %d\r\n", f);
        usleep(5000);
    }
    if (!strcmp(mode, "signals")) {
        struct itimerval off = {{0, 0}, {0, 0}};
        setitimer(ITIMER_REAL, &off, NULL);
        fprintf(stderr, "signals %d\n", (int)alarms);
    }
    return 0;
}
