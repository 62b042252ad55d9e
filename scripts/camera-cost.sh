#!/usr/bin/env bash
# What the camera costs the run it films: key→last pixel p50 in xterm with `--camera off` and
# `--camera on`, alternated (off-on, on-off, …) for ROUNDS rounds, and each round's ratio.
#
#   scripts/camera-cost.sh [ROUNDS] -- PROGRAM ARGS…     (docs/flicker.md: `flash place`)
#
# FLUSHLAB names the binary (default: target/release/flushlab).
set -euo pipefail
cd "$(dirname "$0")/.."

rounds=5
if [[ "${1:-}" != "--" ]]; then
    rounds="${1:-5}"
    shift || true
fi
if [[ "${1:-}" != "--" || $# -lt 2 || ! "$rounds" =~ ^[1-9][0-9]*$ ]]; then
    echo "camera-cost.sh: usage: camera-cost.sh [ROUNDS] -- PROGRAM ARGS… (ROUNDS a positive whole number, not '$rounds')" >&2
    exit 2
fi
shift
flushlab="${FLUSHLAB:-target/release/flushlab}"
scratch=$(mktemp -d)
trap 'rm -rf -- "$scratch"' EXIT

# key→last pixel p50, in ms, of one run with the camera `$1`.
one() {
    "$flushlab" wrap --terminal xterm --camera "$1" --size 80x24 --keys 'a*20@150ms q' \
        --export-json "$scratch/$1.json" -- "${command[@]}" >/dev/null 2>&1
    python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["keys"]["pixels_ms"]["last"]["p50"])' \
        "$scratch/$1.json"
}

command=("$@")
for ((round = 1; round <= rounds; round++)); do
    if ((round % 2)); then
        off=$(one off)
        on=$(one on)
    else
        on=$(one on)
        off=$(one off)
    fi
    python3 -c 'import sys; off, on = map(float, sys.argv[1:3]); print(f"round {sys.argv[3]}: off {off:.3f} ms, on {on:.3f} ms, on/off {on / off:.3f}")' \
        "$off" "$on" "$round"
done
