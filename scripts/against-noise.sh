#!/usr/bin/env bash
# Does `wrap --against` decide, and rightly? One build (tests/corpus/stages.c, 3.0 ms of work a
# key) against NEW with NEW_WORK µs of work a key (default 3000: itself), RUNS times (default
# 10), with a CPU burner busy beside it, each run with its default stopping rule (rounds until
# the interval decides, within the budget). Prints each run's verdict, rounds, why it stopped and
# its seconds, then the count of each verdict. Against itself none should say slower or faster;
# at NEW_WORK=3600 (20% more work a key) none should say same.
#
#   scripts/against-noise.sh                          # target/release/flushlab, itself
#   NEW_WORK=3600 RUNS=10 scripts/against-noise.sh    # 20% more work a key
#   KEEP=DIR scripts/against-noise.sh                 # also keep each run's JSON in DIR
set -euo pipefail
cd "$(dirname "$0")/.."
runs=${RUNS:-10}
new_work=${NEW_WORK:-3000}
flushlab=${FLUSHLAB:-target/release/flushlab}
scratch=$(mktemp -d)
burner=""
cleanup() {
    [[ -n "$burner" ]] && kill "$burner" 2>/dev/null
    rm -rf "$scratch"
}
trap cleanup EXIT
gcc -O2 -o "$scratch/stages" tests/corpus/stages.c
# A CPU burner: one busy process, beside the runs (on a 2-core machine, the other core).
(while :; do :; done) &
burner=$!
declare -A seen=()
for i in $(seq 1 "$runs"); do
    code=0
    start=$(date +%s)
    "$flushlab" wrap --size 80x24 --keys 'j*40@30ms q' \
        --against "$scratch/stages poll 3000 rows" --export-json "$scratch/run.json" \
        -- "$scratch/stages" poll "$new_work" rows 2>/dev/null || code=$?
    seconds=$(( $(date +%s) - start ))
    [[ -n "${KEEP:-}" ]] && mkdir -p "$KEEP" && cp "$scratch/run.json" "$KEEP/run-$new_work-$i.json"
    verdict=$(python3 -c '
import json, sys
a = json.load(open(sys.argv[1]))["against"]
r = a["ratio"] or {}
print(a["verdict"], "x%.3f (x%.3f-x%.3f), %d rounds, %s" % (
    r.get("estimate", 0), r.get("low", 0), r.get("high", 0), a["rounds"], a["stopped_because"]))
' "$scratch/run.json")
    echo "run $i: exit $code, $verdict, ${seconds} s"
    seen[${verdict%% *}]=$(( ${seen[${verdict%% *}]:-0} + 1 ))
done
for v in "${!seen[@]}"; do
    echo "$v: ${seen[$v]} of $runs"
done
