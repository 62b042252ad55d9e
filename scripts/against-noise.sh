#!/usr/bin/env bash
# No false alarm: one build against itself, RUNS times (default 20), with a CPU burner busy
# beside it, each run `wrap --against` with its default ten rounds. Prints each verdict and the
# count of each; none should say slower or faster, and at least half should say same.
#
#   scripts/against-noise.sh                 # target/release/flushlab (cargo build --release)
#   RUNS=5 FLUSHLAB=target/debug/flushlab scripts/against-noise.sh
set -euo pipefail
cd "$(dirname "$0")/.."
runs=${RUNS:-20}
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
    "$flushlab" wrap --size 80x24 --keys 'j*40@30ms q' \
        --against "$scratch/stages poll 3000 rows" --export-json "$scratch/run.json" \
        -- "$scratch/stages" poll 3000 rows 2>/dev/null || code=$?
    verdict=$(python3 -c 'import json,sys; a=json.load(open(sys.argv[1]))["against"]; r=a["ratio"] or {}; print(a["verdict"], "x%.3f (x%.3f-x%.3f)" % (r.get("estimate",0), r.get("low",0), r.get("high",0)))' "$scratch/run.json")
    echo "run $i: exit $code, $verdict"
    seen[${verdict%% *}]=$(( ${seen[${verdict%% *}]:-0} + 1 ))
done
for v in "${!seen[@]}"; do
    echo "$v: ${seen[$v]} of $runs"
done
