/* A program that does to a tracer what programs do (tests/it/tracer.rs): it draws a line a key
 * (`q` ends it), after doing what its argument says first:
 *
 *   traceme   asks to be traced itself (anti-debugging: PTRACE_TRACEME fails when traced),
 *             and says whether it was refused;
 *   seccomp   installs a seccomp filter of its own (allow everything), stacked on the tracer's;
 *   threads   starts 200 threads that each write a line to the terminal and exit;
 *   vfork     vforks a child that execs /bin/echo (glibc's stdio: its writes escape a preload);
 *   stopself  stops itself (SIGSTOP) and a child it forked continues it after 200 ms;
 *   rawread   reads its keys with a raw system call (syscall(SYS_read), as rustix does), which
 *             a preload never sees.
 *
 * Raw mode, the keys read with read(2) after poll(2). */
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/ptrace.h>
#include <sys/wait.h>
#include <termios.h>
#include <unistd.h>

static void *one_line(void *arg) {
    char line[32];
    int k = snprintf(line, sizeof line, "thread %ld\r\n", (long)arg);
    write(1, line, (size_t)k);
    return NULL;
}

int main(int argc, char **argv) {
    const char *what = argc > 1 ? argv[1] : "";
    char said[64] = "";
    if (strcmp(what, "traceme") == 0) {
        long r = ptrace(PTRACE_TRACEME, 0, 0, 0);
        snprintf(said, sizeof said, "traceme %s\r\n", r == 0 ? "allowed" : "refused");
    } else if (strcmp(what, "seccomp") == 0) {
        struct sock_filter allow[] = {BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW)};
        struct sock_fprog prog = {1, allow};
        prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0);
        int r = prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog);
        snprintf(said, sizeof said, "seccomp %s\r\n", r == 0 ? "installed" : "refused");
    } else if (strcmp(what, "threads") == 0) {
        pthread_t t[200];
        for (long i = 0; i < 200; i++)
            pthread_create(&t[i], NULL, one_line, (void *)i);
        for (int i = 0; i < 200; i++)
            pthread_join(t[i], NULL);
        snprintf(said, sizeof said, "threads done\r\n");
    } else if (strcmp(what, "vfork") == 0) {
        pid_t child = vfork();
        if (child == 0) {
            execl("/bin/echo", "echo", "from echo\r", (char *)NULL);
            _exit(127);
        }
        int status;
        waitpid(child, &status, 0);
        snprintf(said, sizeof said, "vfork done\r\n");
    } else if (strcmp(what, "stopself") == 0) {
        pid_t me = getpid();
        if (fork() == 0) {
            usleep(200000);
            kill(me, SIGCONT);
            _exit(0);
        }
        raise(SIGSTOP);
        wait(NULL);
        snprintf(said, sizeof said, "continued\r\n");
    }
    write(1, said, strlen(said));
    struct termios saved, raw;
    tcgetattr(0, &saved);
    raw = saved;
    cfmakeraw(&raw);
    tcsetattr(0, TCSANOW, &raw);
    int keys = 0;
    for (;;) {
        struct pollfd in = {0, POLLIN, 0};
        if (poll(&in, 1, -1) < 0)
            continue;
        char buf[64];
        ssize_t n = strcmp(what, "rawread") == 0 ? syscall(SYS_read, 0, buf, sizeof buf)
                                                 : read(0, buf, sizeof buf);
        if (n <= 0)
            break;
        char line[32];
        int k = snprintf(line, sizeof line, "\033[Hkeys %d", keys += (int)n);
        write(1, line, (size_t)k);
        if (memchr(buf, 'q', (size_t)n))
            break;
    }
    tcsetattr(0, TCSANOW, &saved);
    return 0;
}
