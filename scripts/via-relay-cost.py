#!/usr/bin/env python3
"""What wrap's relay itself adds to a key over ssh: `wrap --via ssh --rtt 0` (through the relay,
no delay asked) against `wrap --via ssh --loopback` (the same sshd and client over one
namespace's loopback, no relay), in interleaved rounds (ABBA), key→last byte p50 and uplink p50
each run. Prints each round and the median of the differences (relay − loopback).

    sudo python3 scripts/via-relay-cost.py [--flushlab PATH] [--rounds N] [--writer frame|raw]

tests/corpus/stages.c (`poll 0 WRITER`) at 80x24, keys `j*20@100ms q`. Needs root, gcc,
openssh-server and iproute2.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--flushlab", default="target/release/flushlab")
    parser.add_argument("--rounds", type=int, default=8)
    parser.add_argument("--writer", choices=["frame", "raw"], default="frame")
    args = parser.parse_args()
    if args.rounds < 1:
        sys.exit(f"via-relay-cost.py: --rounds {args.rounds}: give 1 or more")
    with tempfile.TemporaryDirectory() as scratch:
        os.chmod(scratch, 0o755)
        program = os.path.join(scratch, "stages")
        here = os.path.dirname(os.path.abspath(__file__))
        subprocess.run(
            ["gcc", "-O2", "-o", program, os.path.join(here, "..", "tests/corpus/stages.c")],
            check=True,
        )
        report = os.path.join(scratch, "r.json")

        def run(link):
            done = subprocess.run(
                [args.flushlab, "wrap", "--via", "ssh", *link, "--size", "80x24"]
                + ["--keys", "j*20@100ms q", "--export-json", report, "--"]
                + [program, "poll", "0", args.writer],
                stdout=subprocess.DEVNULL,
                stderr=subprocess.PIPE,
                text=True,
            )
            if done.returncode != 0:
                sys.exit(f"via-relay-cost.py: wrap failed: {done.stderr.strip()[-400:]}")
            keys = json.load(open(report))["keys"]
            return keys["key_to_last_byte_ms"]["p50"], keys["stages_ms"]["uplink"]["p50"]

        relay, loopback = ["--rtt", "0"], ["--loopback"]
        differences = []
        for round in range(args.rounds):
            order = [relay, loopback] if round % 2 == 0 else [loopback, relay]
            ran = {tuple(link): run(link) for link in order}
            (a, a_up), (b, b_up) = ran[tuple(relay)], ran[tuple(loopback)]
            differences.append(a - b)
            print(
                f"round {round + 1}: key→last byte relay {a:.3f} ms, loopback {b:.3f} ms "
                f"(uplink {a_up:.3f} / {b_up:.3f})"
            )
        print(
            f"median of {args.rounds} differences (relay − loopback): "
            f"{statistics.median(differences):+.3f} ms"
        )


if __name__ == "__main__":
    main()
