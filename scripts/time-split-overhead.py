#!/usr/bin/env python3
"""What measuring the time split costs: the same binary, headless at SIZE into /dev/null, with
the split on and with --no-time-split, alternated run by run; the ratio of median fps per mode.

    cargo build --release && python3 scripts/time-split-overhead.py [--runs 5] [--seconds 3] [--size 200x60] [--modes stdout/thread,…]
"""
import argparse, json, os, statistics, subprocess, sys, tempfile

MODES = ["stdout/raw", "stdout/line", "stdout/block", "stdout/frame", "stdout/thread",
         "stderr/raw", "stderr/frame"]

def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--seconds", type=float, default=3)
    ap.add_argument("--size", default="200x60")
    ap.add_argument("--binary", default="target/release/flushlab")
    ap.add_argument("--modes", default=",".join(MODES), help="comma-separated modes")
    a = ap.parse_args()
    modes = a.modes.split(",")
    fps = {(m, on): [] for m in modes for on in (True, False)}
    with tempfile.TemporaryDirectory() as tmp:
        report = os.path.join(tmp, "r.json")
        for _ in range(a.runs):
            for mode in modes:
                stream, buffering = mode.split("/")
                for on in (True, False):
                    env = dict(os.environ, DURATION=str(a.seconds), SIZE=a.size,
                               STREAM=stream, BUFFERING=buffering)
                    args = [a.binary, "--export-json", report] + ([] if on else ["--no-time-split"])
                    with open(os.devnull, "w") as null:
                        subprocess.run(args, env=env, stdout=null, stderr=null, check=True)
                    fps[(mode, on)].append(json.load(open(report))["fps"])
    print(f"| mode | fps, split on (median of {a.runs}) | fps, split off | on / off |")
    print("|---|---:|---:|---:|")
    for mode in modes:
        on, off = statistics.median(fps[(mode, True)]), statistics.median(fps[(mode, False)])
        print(f"| {mode} | {on:,.1f} | {off:,.1f} | {on / off:.3f} |")

if __name__ == "__main__":
    sys.exit(main())
