#!/usr/bin/env python3
"""How close `wrap --try frame` comes to a program's real fix: the ratatui program that draws a
full screen a key (examples/keyed_ratatui.rs) into unbuffered `stderr()`, tried, against the same
program behind its own 64 KiB `BufWriter`, as is; alternated, each key→frame p50 from wrap's
JSON (with `--terminal NAME`: in that terminal, key→last pixel p50), and their ratio round by
round. docs/wrap/comparing.md quotes what this printed.

    cargo build --release --example keyed_ratatui
    python3 scripts/tried-vs-real.py [--rounds N] [--size WxH] [--keys SCRIPT] [--terminal NAME]
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile


def p50(flushlab, size, keys, flags, mode, report):
    """Key→frame p50 (key→last pixel p50 in a terminal) and emit p50 of one run."""
    subprocess.run(
        [flushlab, "wrap", *flags, "--keys", keys, "--size", size, "--export-json", report,
         "--", "target/release/examples/keyed_ratatui", mode],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True,
    )
    with open(report) as f:
        keyed = json.load(f)["keys"]
    whole = keyed["pixels_ms"]["last"] if "pixels_ms" in keyed else keyed["key_to_frame_ms"]
    return whole["p50"], keyed["stages_ms"]["emit"]["p50"]


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=4)
    parser.add_argument("--size", default="200x60")
    parser.add_argument("--keys", default="j*20@150ms q")
    parser.add_argument("--flushlab", default="target/release/flushlab")
    parser.add_argument("--terminal", help="in this terminal (wrap --terminal): key→last pixel")
    args = parser.parse_args()
    where = ["--terminal", args.terminal] if args.terminal else []
    figure = "key→last pixel" if args.terminal else "key→frame"
    if not os.path.exists("target/release/examples/keyed_ratatui"):
        sys.exit("build it first: cargo build --release --example keyed_ratatui")
    ratios = []
    with tempfile.TemporaryDirectory() as scratch:
        report = os.path.join(scratch, "r.json")
        for round_ in range(args.rounds):
            tried, tried_emit = p50(args.flushlab, args.size, args.keys,
                                    [*where, "--try", "frame"], "stderr", report)
            real, real_emit = p50(args.flushlab, args.size, args.keys, where, "bufwriter", report)
            ratios.append(tried / real)
            print(f"round {round_ + 1}: {figure} p50 tried {tried:.2f} ms (emit {tried_emit:.2f}),"
                  f" BufWriter {real:.2f} ms (emit {real_emit:.2f}): ×{tried / real:.2f}")
    print(f"tried over the real fix: median ×{statistics.median(ratios):.2f}"
          f" (×{min(ratios):.2f}–×{max(ratios):.2f}), {figure}, {args.size}, keys '{args.keys}'"
          + (f", in {args.terminal}" if args.terminal else ""))


if __name__ == "__main__":
    main()
