#!/usr/bin/env bash
# What the kernel observer costs a process outside CMD's tree, two loads: 2,000,000 getppid
# calls (a call the observer does not watch) and dd's 2,000,000 one-byte reads and writes (calls
# it does watch, 4 million), each timed with nothing attached, beside a wrap whose kernel
# observer watches another tree (`sleep 30`), and beside the floor (the same hooks, empty
# programs), rounds alternated; the median [min–max] of each, and its ratio to nothing. Root.
# The run's hooks (trampolines, or the raw tracepoints and why) are printed first.
#
#   scripts/outside-cost.sh [ROUNDS] [FLUSHLAB]   (defaults 7, target/release/flushlab)
set -euo pipefail
rounds=${1:-7}
flushlab=${2:-target/release/flushlab}
[[ "$rounds" =~ ^[1-9][0-9]*$ ]] || { echo "outside-cost.sh: ROUNDS '$rounds': a whole number, 1 or more" >&2; exit 2; }
[[ -x "$flushlab" ]] || { echo "outside-cost.sh: $flushlab: not an executable (cargo build --release)" >&2; exit 2; }
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
cat > "$scratch/getppid.c" <<'C'
#include <sys/syscall.h>
#include <unistd.h>
int main(void) {
    for (int i = 0; i < 2000000; i++)
        syscall(SYS_getppid);
    return 0;
}
C
cc -O2 -o "$scratch/getppid" "$scratch/getppid.c"
timed() {
    local start
    start=$(date +%s%N)
    "$@"
    echo -n "$((($(date +%s%N) - start) / 1000000)) "
}
loads() {
    timed "$scratch/getppid"
    timed dd if=/dev/zero of=/dev/null bs=1 count=2000000 status=none
}
beside() {
    local wrap
    env "$@" "$flushlab" wrap --observer kernel --size 80x24 --export-json "$scratch/r.json" \
        -- sleep 30 </dev/null >/dev/null 2>&1 &
    wrap=$!
    sleep 1
    loads
    kill "$wrap"
    wait "$wrap" 2>/dev/null || true
}
beside FLUSHLAB_KERNEL_FLOOR=0 >/dev/null
python3 -c 'import json,sys; print("hooks:", json.load(open(sys.argv[1]))["inside"]["observer_why"])' "$scratch/r.json"
for _ in $(seq "$rounds"); do
    echo "$(loads)$(beside FLUSHLAB_KERNEL_FLOOR=0)$(beside FLUSHLAB_KERNEL_FLOOR=1)" >> "$scratch/rows"
done
python3 - "$scratch/rows" <<'PY'
import statistics, sys
rows = [list(map(int, l.split())) for l in open(sys.argv[1])]
for load, name in enumerate(["getppid ×2,000,000 (not watched)", "dd bs=1 ×2,000,000 (read and write, watched)"]):
    print(name)
    base = statistics.median(r[load] for r in rows)
    for side, label in enumerate(["nothing attached", "the kernel observer", "the floor"]):
        v = [r[2 * side + load] for r in rows]
        print(f"  {label}: {statistics.median(v):.0f} ms [{min(v)}–{max(v)}], ×{statistics.median(v) / base:.3f}")
PY
