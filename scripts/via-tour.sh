#!/usr/bin/env bash
# The explorer's own modes over a wire: `flushlab tour` one mode a run through
# `flushlab wrap --via LAYERS` at one link, and a markdown row a mode: the tour's own accepted
# frames a second (writes returned) and shown (confirmed by its cursor-position round trips,
# which cross the wire), from its --export-json; then wrap's: the far end's frames (between its
# waits, seen from inside it: the tour waits only for those round trips) that reached the near
# end, their pieces (the near end's writer's write(2)s) and tear (first piece to last), p50.
# Needs root.
#
#   scripts/via-tour.sh [LINK…]      (default: --rtt 40); LAYERS=ssh by default
#
# One key late in the run (`z`, which the tour ignores): --via times keys, and needs one.
set -euo pipefail
cd "$(dirname "$0")/.."
layers="${LAYERS:-ssh}"
link=("$@")
((${#link[@]})) || link=(--rtt 40)
cargo build --quiet --locked --release
flushlab="$PWD/target/release/flushlab"
scratch="$(mktemp -d)"
trap 'rm -rf "$scratch"' EXIT
chmod 777 "$scratch" # the far user writes the tour's results
echo "| mode | accepted fps | shown fps | far frames arrived | pieces a frame p50 | tear p50 ms |"
echo "|---|--:|--:|--:|--:|--:|"
for mode in stderr/raw stderr/line stdout/line stdout/block stdout/frame stdout/thread; do
    "$flushlab" wrap --via "$layers" "${link[@]}" --size 80x24 --duration 8 --keys 'z@2s' \
        --export-json "$scratch/r.json" -- "$flushlab" tour --seconds 3 --modes "$mode" \
        --export-json "$scratch/tour.json" \
        </dev/null >/dev/null 2>"$scratch/err" || { echo "| $mode | failed: $(tail -1 "$scratch/err") |"; continue; }
    python3 - "$scratch/r.json" "$scratch/tour.json" "$mode" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
tour = json.load(open(sys.argv[2]))
row = next(x for x in tour["results"] if x.get("runs"))
every = (r.get("via") or {}).get("every_frame") or {}
cell = lambda v, f: "n/a" if v is None else format(v, f)
median = lambda v: v.get("median") if isinstance(v, dict) else v
print(f"| {sys.argv[3]} | {cell(median(row.get('fps')), '.1f')} | {cell(median(row.get('shown_fps')), '.1f')} | "
      f"{every.get('frames', 'n/a')} | "
      f"{cell((every.get('pieces_per_frame') or {}).get('p50'), '.0f')} | "
      f"{cell((every.get('tear_ms') or {}).get('p50'), '.2f')} |")
PY
done
