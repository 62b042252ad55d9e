#!/usr/bin/env bash
# A published pair, before and after its own fix: `wrap --against` RUNS times (default 10) with
# its default stopping rule, then each build alone SEPARATE times (default 5, alternating), so
# that the verdict's ratio can be held against the ratio of separate runs. dua-cli 2.41.0 drew
# its interactive screen unbuffered; 2.41.1 is its own BufWriter fix:
#
#   cargo install dua-cli --version 2.41.0 --root /tmp/dua-before --locked
#   cargo install dua-cli --version 2.41.1 --root /tmp/dua-after --locked
#   scripts/against-published.sh        # NEW = 2.41.0, OLD = 2.41.1: expect slower
set -euo pipefail
cd "$(dirname "$0")/.."
runs=${RUNS:-10}
separate=${SEPARATE:-5}
flushlab=${FLUSHLAB:-target/release/flushlab}
new=${NEW:-/tmp/dua-before/bin/dua i /usr/share/doc}
old=${OLD:-/tmp/dua-after/bin/dua i /usr/share/doc}
keys=${KEYS:-<Down>*20@100ms q}
size=${SIZE:-200x60}
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
for i in $(seq 1 "$runs"); do
    code=0
    start=$(date +%s)
    # shellcheck disable=SC2086 # NEW is a command line, split as a shell splits it
    "$flushlab" wrap --size "$size" --keys "$keys" --against "$old" \
        --export-json "$scratch/run.json" -- $new 2>/dev/null || code=$?
    python3 -c '
import json, sys
a = json.load(open(sys.argv[1]))["against"]
r = a["ratio"] or {}
print("run %s: exit %s, %s x%.3f (x%.3f-x%.3f), %d rounds, %s, %s s" % (sys.argv[2], sys.argv[3],
    a["verdict"], r.get("estimate", 0), r.get("low", 0), r.get("high", 0), a["rounds"],
    a["stopped_because"], sys.argv[4]))
' "$scratch/run.json" "$i" "$code" "$(( $(date +%s) - start ))"
done
for i in $(seq 1 "$separate"); do
    for side in old new; do
        # shellcheck disable=SC2086
        "$flushlab" wrap --size "$size" --keys "$keys" --export-json "$scratch/$side-$i.json" \
            -- ${!side} 2>/dev/null >/dev/null || true
    done
done
python3 -c '
import json, sys, statistics
n = int(sys.argv[2])
p50 = lambda side: [json.load(open("%s/%s-%d.json" % (sys.argv[1], side, i)))["keys"]["key_to_frame_ms"]["p50"] for i in range(1, n + 1)]
old, new = p50("old"), p50("new")
print("separate runs, key->frame p50 (ms): OLD %s, NEW %s; medians %.2f and %.2f: x%.3f" % (
    old, new, statistics.median(old), statistics.median(new), statistics.median(new) / statistics.median(old)))
' "$scratch" "$separate"
