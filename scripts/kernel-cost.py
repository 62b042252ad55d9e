#!/usr/bin/env python3
"""What each way of looking inside a program costs it, by the program's own stamps: a program
that stamps its stages (tests/corpus/stages.c: when a key's read returned, when its frame's
first write began, when its last write ended) run under `flushlab wrap --keys` with each
observer in turn, rounds alternated, the median of each round's p50 and each side's ratio to
the unobserved.

    python3 scripts/kernel-cost.py [--rounds N] [--size WxH] [--keys N] [--flushlab PATH]
        [--sides none,floor,kernel,...] -- STAGES_BINARY ARGS...

Sides: `none` (--observer none), `floor` (the kernel observer's hooks with programs that return
at once: FLUSHLAB_KERNEL_FLOOR=1), `kernel`, `kernel-timed` (the kernel observer with the
kernel timing its programs, BPF_ENABLE_STATS: FLUSHLAB_KERNEL_STATS=1), `preload`, `ptrace`. Needs eBPF (root) for the
kernel sides. docs/wrap/observers.md quotes what this printed, with the command.
"""

import argparse
import os
import statistics
import subprocess
import sys
import tempfile

SIDES = {
    "none": (["--observer", "none"], {}),
    "floor": (["--observer", "kernel"], {"FLUSHLAB_KERNEL_FLOOR": "1"}),
    "kernel": (["--observer", "kernel"], {}),
    "kernel-timed": (["--observer", "kernel"], {"FLUSHLAB_KERNEL_STATS": "1"}),
    "preload": (["--observer", "preload"], {}),
    "ptrace": (["--observer", "ptrace"], {}),
}


def one_run(args, side, log):
    flags, env = SIDES[side]
    if os.path.exists(log):
        os.remove(log)
    run = subprocess.run(
        [args.flushlab, "wrap", *flags, "--size", args.size,
         "--keys", f"j*{args.keys}@100ms q", "--", *args.command],
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
        env={**os.environ, **env, "KEYS_LOG": log}, timeout=120,
    )
    if run.returncode != 0:
        sys.exit(f"kernel-cost.py: {side}: wrap exited {run.returncode}: {run.stderr.strip()[-300:]}")
    emits, frames = [], []
    with open(log) as f:
        for line in f:
            words = line.split()
            if len(words) >= 3 and words[0].isdigit() and int(words[1]) > 0:
                read, first, last = (int(w) for w in words[:3])
                emits.append((last - first) / 1e6)
                frames.append((last - read) / 1e6)
    if len(emits) < args.keys // 2:
        sys.exit(f"kernel-cost.py: {side}: the program stamped {len(emits)} frames of {args.keys} keys")
    return statistics.median(emits), statistics.median(frames)


def spread(values):
    return f"{statistics.median(values):.2f} [{min(values):.2f}–{max(values):.2f}]"


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--size", default="100x40")
    parser.add_argument("--keys", type=int, default=20)
    parser.add_argument("--flushlab", default="target/release/flushlab")
    parser.add_argument("--sides", default="none,floor,kernel")
    parser.add_argument("command", nargs="+")
    args = parser.parse_args()
    sides = args.sides.split(",")
    unknown = [s for s in sides if s not in SIDES]
    if unknown:
        sys.exit(f"kernel-cost.py: --sides {','.join(unknown)}: not one of {', '.join(SIDES)}")
    if args.rounds < 1 or args.keys < 2:
        sys.exit(f"kernel-cost.py: --rounds {args.rounds} --keys {args.keys}: give 1 or more rounds, 2 or more keys")
    if not os.access(args.flushlab, os.X_OK):
        sys.exit(f"kernel-cost.py: --flushlab {args.flushlab}: not an executable (cargo build --release)")
    results = {side: [] for side in sides}
    with tempfile.TemporaryDirectory() as scratch:
        log = os.path.join(scratch, "keys.log")
        for r in range(args.rounds):
            # Each round in another order, so that no side always runs first on a cold machine.
            order = sides[r % len(sides):] + sides[:r % len(sides)]
            for side in order:
                results[side].append(one_run(args, side, log))
    base = results.get("none")
    print(f"{args.rounds} rounds, {args.size}, {args.keys} keys: {' '.join(args.command)}")
    print("| observer | emit p50, ms | × none | read→last write p50, ms | × none |")
    print("|---|---|---|---|---|")
    for side, runs in results.items():
        emit = [e for e, _ in runs]
        frame = [f for _, f in runs]
        if base:
            e_ratio = statistics.median(emit) / statistics.median([e for e, _ in base])
            f_ratio = statistics.median(frame) / statistics.median([f for _, f in base])
            ratios = f"×{e_ratio:.3f} | {spread(frame)} | ×{f_ratio:.3f}"
        else:
            ratios = f"– | {spread(frame)} | –"
        print(f"| {side} | {spread(emit)} | {ratios} |")


if __name__ == "__main__":
    main()
