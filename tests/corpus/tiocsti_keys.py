"""Keys pushed into this process's terminal with TIOCSTI, as a test harness, tmux send-keys or
expect reach a program that wrap did not type into: after 0.5 s, N times KEY, GAP seconds
apart, then each of the rest once. Exits 3 when the kernel refuses TIOCSTI (Linux 6.2 and
later without dev.tty.legacy_tiocsti, unless CAP_SYS_ADMIN), so a test can say so.

    python3 tiocsti_keys.py N GAP KEY [LAST...]
"""
import fcntl
import sys
import termios
import time

n, gap, key, rest = int(sys.argv[1]), float(sys.argv[2]), sys.argv[3], sys.argv[4:]
time.sleep(0.5)
with open("/dev/tty", "rb") as tty:
    try:
        for _ in range(n):
            fcntl.ioctl(tty, termios.TIOCSTI, key.encode())
            time.sleep(gap)
        for k in rest:
            fcntl.ioctl(tty, termios.TIOCSTI, k.encode())
    except OSError:
        sys.exit(3)
