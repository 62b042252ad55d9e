#!/usr/bin/env bash
# What the kernel observer costs a process outside CMD's tree: dd's 2,000,000 one-byte reads and
# writes (4 million system calls), timed with nothing attached, beside a wrap whose kernel
# observer watches another tree (`sleep 30`), and beside the floor (the same hooks, empty
# programs), rounds alternated; the median [min–max] of each, and its ratio to nothing. Root.
#
#   scripts/outside-cost.sh [ROUNDS] [FLUSHLAB]   (defaults 7, target/release/flushlab)
set -euo pipefail
rounds=${1:-7}
flushlab=${2:-target/release/flushlab}
[[ "$rounds" =~ ^[1-9][0-9]*$ ]] || { echo "outside-cost.sh: ROUNDS '$rounds': a whole number, 1 or more" >&2; exit 2; }
[[ -x "$flushlab" ]] || { echo "outside-cost.sh: $flushlab: not an executable (cargo build --release)" >&2; exit 2; }
timed() {
    local start
    start=$(date +%s%N)
    dd if=/dev/zero of=/dev/null bs=1 count=2000000 2>/dev/null
    echo $((($(date +%s%N) - start) / 1000000))
}
beside() {
    local wrap
    env "$@" "$flushlab" wrap --observer kernel --size 80x24 -- sleep 30 </dev/null >/dev/null 2>&1 &
    wrap=$!
    sleep 1
    timed
    kill "$wrap"
    wait "$wrap" 2>/dev/null || true
}
out=$(mktemp)
trap 'rm -f "$out"' EXIT
for _ in $(seq "$rounds"); do
    echo "$(timed) $(beside FLUSHLAB_KERNEL_FLOOR=0) $(beside FLUSHLAB_KERNEL_FLOOR=1)" >> "$out"
done
python3 - "$out" <<'PY'
import statistics, sys
rows = [list(map(int, l.split())) for l in open(sys.argv[1])]
base = statistics.median(r[0] for r in rows)
for i, name in enumerate(["nothing attached", "the kernel observer", "the floor"]):
    v = [r[i] for r in rows]
    print(f"{name}: {statistics.median(v):.0f} ms [{min(v)}–{max(v)}], ×{statistics.median(v) / base:.3f}")
PY
