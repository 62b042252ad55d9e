#!/usr/bin/env python3
"""`wrap --via ssh`'s pieces a frame against strace's count of the ssh client's write(2)s to the
near terminal, key by key: an independent count of what the near end wrote.

    python3 scripts/via-pieces-strace.py [--flushlab PATH] [WRAP FLAGS...] -- CMD ARGS...

wrap runs with `--via ssh` and the flags given (give `--keys`); strace attaches to the ssh
client as soon as it starts, and each key's window (its send to its frame's last byte at the
near end, on CLOCK_MONOTONIC, strace's stamps taken back to it) counts the client's writes to
the terminal. Prints one line a key (pieces, writes) and how many agree. Needs root and strace.
"""

import json
import os
import re
import subprocess
import sys
import tempfile
import time


def main():
    args = sys.argv[1:]
    flushlab = "target/debug/flushlab"
    if args[:1] == ["--flushlab"]:
        flushlab, args = args[1], args[2:]
    with tempfile.TemporaryDirectory() as scratch:
        report = os.path.join(scratch, "r.json")
        traced = os.path.join(scratch, "strace.txt")
        wrap = subprocess.Popen(
            [flushlab, "wrap", "--via", "ssh", "--export-json", report] + args,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        client = None
        while client is None and wrap.poll() is None:
            found = subprocess.run(
                ["pgrep", "-n", "-f", f"^/usr/bin/ssh -F {tempfile.gettempdir()}/flushlab-via"],
                capture_output=True,
                text=True,
            ).stdout.split()
            client = found[0] if found else None
            time.sleep(0.005)
        if client is None:
            sys.exit("the ssh client never started")
        strace = subprocess.Popen(
            ["strace", "-p", client, "-e", "trace=write", "-ttt", "-o", traced],
            stderr=subprocess.DEVNULL,
        )
        # The client's terminal: its fds on the pty wrap made (/dev/pts/N), looked at while
        # it runs (it dups the terminal once its session starts).
        ttys = set()
        while wrap.poll() is None:
            try:
                for fd in os.listdir(f"/proc/{client}/fd"):
                    if os.readlink(f"/proc/{client}/fd/{fd}").startswith("/dev/pts/"):
                        ttys.add(fd)
            except OSError:
                pass
            time.sleep(0.05)
        strace.wait()
        offset = time.time() - time.clock_gettime(time.CLOCK_MONOTONIC)
        ran = json.load(open(report))
        writes = {fd: [] for fd in ttys}
        for line in open(traced):
            m = re.match(r"(\d+\.\d+) write\((\d+),.*= (\d+)", line)
            if m and m.group(2) in writes:
                writes[m.group(2)].append(float(m.group(1)) - offset)
        if not ttys:
            sys.exit("the ssh client has no terminal fd")
        tty = max(ttys, key=lambda fd: len(writes[fd]))
        agree = rows = 0
        for key in ran["keys"]["each"]:
            if key.get("pieces") is None:
                continue
            sent = key["sent_ns"] / 1e9
            last = sent + key["last_byte_ms"] / 1e3
            counted = sum(1 for at in writes[tty] if sent <= at <= last + 0.0005)
            rows += 1
            agree += key["pieces"] == counted
            print(f"{key['key']} pieces {key['pieces']} strace {counted}")
        print(f"{agree} of {rows} keys: pieces equal to strace's writes to fd {tty}")


if __name__ == "__main__":
    main()
