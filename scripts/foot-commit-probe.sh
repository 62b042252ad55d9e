#!/usr/bin/env bash
# wrap's key→last pixel in foot against an independent truth: foot's own last commit for each
# key, as the kernel saw foot send it to the compositor (strace -D --seccomp-bpf on foot's
# sendmsg(2) only: foot keeps its pid and stops at no other call). A key's picture can reach
# the output no sooner than foot sends it, so foot's last sendmsg after a key bounds its last
# pixel from below; what follows it is sway's composition and the copy.
#
#   scripts/foot-commit-probe.sh SIZE ROUNDS KEYS -- CMD [ARGS...]
#   e.g. scripts/foot-commit-probe.sh 200x60 3 'j*10@300ms k*10@300ms' -- dua i /usr/share
#
# Each round prints the median over its keys of wrap's key→last pixel and of key→foot's last
# commit (within 100 ms of the key), and their ratio.
set -euo pipefail
cd "$(dirname "$0")/.."

usage() {
    echo "usage: scripts/foot-commit-probe.sh SIZE ROUNDS KEYS -- CMD [ARGS...]" >&2
    exit 2
}
[[ $# -ge 5 && "$4" == "--" ]] || usage
size="$1" rounds="$2" keys="$3"
shift 4
[[ "$rounds" =~ ^[1-9][0-9]?$ ]] || { echo "foot-commit-probe.sh: ROUNDS '$rounds' is not 1 to 99" >&2; exit 2; }
foot="$(command -v foot)" || { echo "foot-commit-probe.sh: foot is not installed" >&2; exit 2; }
command -v strace > /dev/null || { echo "foot-commit-probe.sh: strace is not installed" >&2; exit 2; }

scratch="$(mktemp -d)"
trap '[[ -n "${KEEP:-}" ]] || rm -rf "$scratch"' EXIT
trap 'exit 130' INT TERM
mkdir "$scratch/bin"
# wrap finds foot through PATH: this one is foot under strace, detached (-D), so that foot
# keeps the pid wrap launched and finds its window by.
cat > "$scratch/bin/foot" <<EOF
#!/bin/sh
exec strace -D --seccomp-bpf -qq -e trace=sendmsg -e signal=none --timestamps=unix,ns -o "$scratch/foot.strace" "$foot" "\$@"
EOF
chmod +x "$scratch/bin/foot"

for ((r = 1; r <= rounds; r++)); do
    rm -f "$scratch/foot.strace"
    offset_before="$(python3 -c 'import time; print(time.time_ns() - time.monotonic_ns())')"
    PATH="$scratch/bin:$PATH" target/release/flushlab wrap --terminal foot --size "$size" \
        --keys "$keys" --export-json "$scratch/run.json" -- "$@" > /dev/null 2> "$scratch/wrap.err" ||
        { echo "round $r: wrap failed: $(tail -1 "$scratch/wrap.err")"; continue; }
    offset_after="$(python3 -c 'import time; print(time.time_ns() - time.monotonic_ns())')"
    python3 - "$scratch/run.json" "$scratch/foot.strace" "$offset_before" "$offset_after" "$r" <<'EOF'
import json, re, statistics, sys
run, log, before, after, r = sys.argv[1:]
offset = (int(before) + int(after)) // 2
drift = abs(int(before) - int(after))
sends = []
for line in open(log):
    m = re.match(r"(?:\d+\s+)?(\d+)\.(\d+) sendmsg\(", line)
    if m:
        sends.append(int(m.group(1)) * 10**9 + int(m.group(2).ljust(9, "0")[:9]) - offset)
sends.sort()
keys = json.load(open(run))["keys"]["each"]
wrap, truth = [], []
for k in keys:
    last = (k.get("pixels_ms") or {}).get("last")
    window = [s for s in sends if k["sent_ns"] <= s < k["sent_ns"] + 100_000_000]
    if last is None or not window:
        continue
    wrap.append(last)
    truth.append((window[-1] - k["sent_ns"]) / 1e6)
if not wrap:
    print(f"round {r}: no key with both figures ({len(sends)} sendmsg seen)")
    sys.exit()
w, t = statistics.median(wrap), statistics.median(truth)
print(f"round {r}: {len(wrap)} keys; wrap key→last pixel p50 {w:.2f} ms; key→foot's last commit p50 {t:.2f} ms; wrap/commit x{w / t:.2f} (clock offset drift {drift / 1e3:.0f} us)")
EOF
done
