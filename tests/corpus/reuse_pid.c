/* Takes a pid that a process of wrap's tree had, for a process outside the tree (clone3 with
 * set_tid: root, or CAP_SYS_ADMIN in the pid namespace), which writes five lines to a terminal:
 * the truth that wrap's kernel observer forgets a process when it ends (tests/it/kernel.rs).
 *
 *   reuse_pid PID TTY     exit 0 when the child had PID and wrote; 1 when clone3 refused
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <linux/sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

int main(int argc, char **argv) {
    if (argc != 3)
        return 2;
    pid_t want[1] = {(pid_t)atoi(argv[1])};
    struct clone_args args = {0};
    args.set_tid = (uint64_t)(uintptr_t)want;
    args.set_tid_size = 1;
    args.exit_signal = SIGCHLD;
    long pid = syscall(SYS_clone3, &args, sizeof args);
    if (pid < 0) {
        perror("clone3");
        return 1;
    }
    if (pid == 0) {
        int fd = open(argv[2], O_WRONLY | O_NOCTTY);
        for (int i = 0; i < 5; i++)
            if (write(fd, "intruder\r\n", 10) != 10)
                _exit(3);
        _exit(0);
    }
    int status = 0;
    waitpid((pid_t)pid, &status, 0);
    return WIFEXITED(status) && WEXITSTATUS(status) == 0 && pid == want[0] ? 0 : 1;
}
