#!/usr/bin/env python3
"""What wrap's observer costs the program it watches: CMD's CPU a frame with the observer
preloaded and without it (`--no-observer`, the same pty), rounds alternated, the median and
spread of each side and of their ratio.

    python3 scripts/observer-cost.py [--rounds N] [--size WxH] [--flushlab PATH] -- CMD...

CMD must end by itself (a sized run: `env FRAMES=60 target/release/examples/corpus_ratatui
stdout`), so that both sides draw the same frames. The frames are counted by wrap on each
side (the observer's waits with it, the program's cursor or sync markers without); a side
whose frames are unknown is an error, never a guess. docs/wrap/costs.md quotes what this printed.
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile


def one_run(flushlab, size, observer, command, report):
    flags = [] if observer else ["--no-observer"]
    subprocess.run(
        [flushlab, "wrap", "--size", size, *flags, "--export-json", report, "--", *command],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        check=True,
    )
    with open(report) as f:
        run = json.load(f)
    figures = run["figures"]
    if not figures.get("frames"):
        sys.exit(f"observer-cost.py: wrap found no frames ({'with' if observer else 'without'} the observer)")
    cpu_ms = (figures["user_seconds"] + figures["kernel_seconds"]) * 1000 / figures["frames"]
    return cpu_ms, figures["frames"]


def spread(values):
    return f"{statistics.median(values):.3f} [{min(values):.3f}–{max(values):.3f}]"


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=9)
    parser.add_argument("--size", default="200x60")
    parser.add_argument("--flushlab", default="target/release/flushlab")
    parser.add_argument("command", nargs="+")
    args = parser.parse_args()
    if args.rounds < 1:
        sys.exit(f"observer-cost.py: --rounds {args.rounds}: give 1 or more")
    if not os.access(args.flushlab, os.X_OK):
        sys.exit(f"observer-cost.py: --flushlab {args.flushlab}: not an executable (cargo build --release)")
    sides = {True: [], False: []}
    with tempfile.TemporaryDirectory() as scratch:
        report = os.path.join(scratch, "report.json")
        for r in range(args.rounds):
            # Alternate which side goes first, so that neither always runs on a warmer machine.
            for observer in (True, False) if r % 2 == 0 else (False, True):
                sides[observer].append(one_run(args.flushlab, args.size, observer, args.command, report))
    for observer, runs in sides.items():
        frames = sorted({f for _, f in runs})
        print(f"{'observer   ' if observer else 'no observer'}: CPU ms a frame {spread([c for c, _ in runs])}, frames {frames}")
    ratios = [a[0] / b[0] for a, b in zip(sides[True], sides[False])]
    print(f"with / without, per round: {spread(ratios)} ({args.rounds} rounds, {args.size}: {' '.join(args.command)})")


if __name__ == "__main__":
    main()
