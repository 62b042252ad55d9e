#!/usr/bin/env python3
"""A refactor changes no figure: two builds' JSON exports of the same fixed set compared.

Prints the fields one side has and the other lacks (array elements merged: a path is its keys,
not its indices), and each count that differs where the machine does not decide it (keys sent,
keys answered, rounds, runs). Timings are the machine's and are not compared.

    scripts/same-exports.py BEFORE.json AFTER.json
"""
import json
import sys

# Counts a build decides, not the machine: they must match.
COUNTS = {"keys", "sent", "unanswered", "rounds", "cols", "rows", "exit_code", "fix", "measure"}


def paths(value, at=""):
    if isinstance(value, dict):
        for key, child in value.items():
            yield f"{at}.{key}"
            yield from paths(child, f"{at}.{key}")
    elif isinstance(value, list):
        for child in value:
            yield from paths(child, f"{at}[]")


def counts(value, at=""):
    if isinstance(value, dict):
        for key, child in value.items():
            if key in COUNTS and not isinstance(child, (dict, list)):
                yield (f"{at}.{key}", child)
            yield from counts(child, f"{at}.{key}")
    elif isinstance(value, list):
        for i, child in enumerate(value):
            yield from counts(child, f"{at}[{i}]")


def main():
    before, after = (json.load(open(p)) for p in sys.argv[1:3])
    b, a = set(paths(before)), set(paths(after))
    for path in sorted(b - a):
        print(f"only before: {path}")
    for path in sorted(a - b):
        print(f"only after:  {path}")
    bc, ac = dict(counts(before)), dict(counts(after))
    for path in sorted(set(bc) & set(ac)):
        if bc[path] != ac[path]:
            print(f"count differs: {path}: {bc[path]} before, {ac[path]} after")
    print(f"{len(b)} fields before, {len(a)} after; {len(set(bc) & set(ac))} counts compared")


main()
