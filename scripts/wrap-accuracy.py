#!/usr/bin/env python3
"""How right `flushlab wrap` is, and what it costs, on the corpus of tests/corpus.rs.

    scripts/wrap-accuracy.py [--runs N] [--sizes 200x60,80x24] [--overhead]

Builds the corpus (release), then for each program and size runs `flushlab wrap --duration`
N times and prints one Markdown row per run: the program's own frame rate (its count, written
when it ends), wrap's, how wrap found the frames with the evidence behind the decision (the share
of frames a sequence came once in, restarts after a pause, pauses a frame), bytes a write(2),
the share of samples the writer slept in write(2) on the pty, and the diagnoses.

With --overhead, each program also draws a fixed number of frames (FRAMES=N) in a plain pty
(util-linux `script`, output to /dev/null) and under headless wrap, alternately, 5 times: the
ratio of the program's own frame rates, median and range.
"""

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CORPUS = os.path.join(ROOT, "tests", "corpus")


def build(tmp):
    subprocess.run(["cargo", "build", "--release", "--quiet", "--examples", "--bins"],
                   cwd=ROOT, check=True)
    stdio = os.path.join(tmp, "stdio")
    subprocess.run(["gcc", "-O2", "-o", stdio, os.path.join(CORPUS, "stdio.c")], check=True)
    ratatui = os.path.join(ROOT, "target", "release", "examples", "corpus_ratatui")
    flushlab = os.path.join(ROOT, "target", "release", "flushlab")
    return flushlab, stdio, ratatui


def cases(stdio, ratatui):
    py = ["python3", os.path.join(CORPUS, "frames.py")]
    sh = ["sh", os.path.join(CORPUS, "frames.sh")]
    out = [(f"rust/{w}", [ratatui, w], 5 if w == "stderr" else 2)
           for w in ["stderr", "stdout", "bufwriter", "sync", "default"]]
    out += [(f"c/{m}", [stdio, m], 2)
            for m in ["line", "full", "unbuffered", "twophase", "continuous", "unbalanced"]]
    out += [(f"python/{m}", py + [m], 3 if m == "flush" else 2) for m in ["flush", "buffered", "curses"]]
    out += [("shell/cells", sh + ["cells"], 4), ("shell/rows", sh + ["rows"], 2)]
    if shutil.which("node"):
        out.append(("node/cells", ["node", os.path.join(CORPUS, "frames.js")], 2))
    return out


def own(path):
    try:
        frames, seconds = open(path).read().split()
        os.remove(path)
        return int(frames) / float(seconds) if float(seconds) > 0 else None
    except (OSError, ValueError):
        return None


def wrap(flushlab, size, seconds, command, tmp, envs=()):
    report = os.path.join(tmp, "report.json")
    subprocess.run([flushlab, "wrap", "--size", size, "--duration", str(seconds), "--export-json",
                    report, "--", "env", *envs, *command],
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)
    with open(report) as f:
        return json.load(f)


def fmt(value, spec="{:.1f}"):
    return "–" if value is None else spec.format(value)


def accuracy(flushlab, programs, sizes, runs, tmp):
    print("| program | size | own fps | wrap fps | method, confirmed by | sequence once / "
          "after a pause / pauses a frame | B/write | asleep in write(2) | diagnoses |")
    print("|---|---|--:|--:|---|---|--:|--:|---|")
    frames_file = os.path.join(tmp, "frames")
    for name, command, seconds in programs:
        for size in sizes:
            for _ in range(runs):
                r = wrap(flushlab, size, seconds, command, tmp, [f"FRAMES_FILE={frames_file}"])
                d = r["frame_detection"]
                by = ", ".join(c.get("detail", "pauses") for c in d["confirmed_by"]) or "–"
                f = r["figures"] or {}
                calls, written = r["tree_write_calls"], r["tree_bytes_written"]
                per_write = written / calls if calls else None
                print(f"| {name} | {size} | {fmt(own(frames_file))} | {fmt(f.get('fps'))} | "
                      f"{r['frame_method']} ({by}) | {d['sequence_share']:.2f} / "
                      f"{d['pause_share']:.2f} / {d['pauses_per_frame']:.1f} | "
                      f"{fmt(per_write)} | {fmt(r['blocked_share'], '{:.0%}')} | "
                      f"{', '.join(x['code'] for x in r['diagnoses']) or '–'} |")
                sys.stdout.flush()


def overhead(flushlab, programs, size, tmp):
    cols, rows = size.split("x")
    frames_file = os.path.join(tmp, "frames")
    print(f"\n| program | frames | fps in a plain pty (script) | fps under wrap | wrap / plain, "
          f"median [min–max] |\n|---|--:|--:|--:|--:|")
    for name, command, _ in programs:
        count = 6 if name in ("rust/stderr", "shell/cells", "python/flush") else 60
        plain, wrapped = [], []
        for _ in range(5):
            inner = " ".join(["stty", "cols", cols, "rows", rows, ";", "exec", "env",
                              f"FRAMES={count}", f"FRAMES_FILE={frames_file}", *command])
            subprocess.run(["script", "-qfec", inner, "/dev/null"], stdout=subprocess.DEVNULL,
                           stdin=subprocess.DEVNULL, check=False)
            plain.append(own(frames_file))
            report = os.path.join(tmp, "r.json")
            subprocess.run([flushlab, "wrap", "--size", size, "--export-json", report, "--", "env",
                            f"FRAMES={count}", f"FRAMES_FILE={frames_file}", *command],
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)
            wrapped.append(own(frames_file))
        ratios = [w / p for w, p in zip(wrapped, plain) if w and p]
        print(f"| {name} | {count} | {statistics.median(plain):.1f} | "
              f"{statistics.median(wrapped):.1f} | {statistics.median(ratios):.3f} "
              f"[{min(ratios):.3f}–{max(ratios):.3f}] |")
        sys.stdout.flush()


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=1)
    parser.add_argument("--sizes", default="200x60,80x24")
    parser.add_argument("--overhead", action="store_true")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        flushlab, stdio, ratatui = build(tmp)
        programs = cases(stdio, ratatui)
        accuracy(flushlab, programs, args.sizes.split(","), args.runs, tmp)
        if args.overhead:
            overhead(flushlab, programs, args.sizes.split(",")[0], tmp)


main()
