#!/usr/bin/env bash
# wrap's key→pixel in xterm against an independent truth: examples/key_pixel_probe.rs, an X
# client with no code of wrap's, types the same keys into the same program in the same xterm
# (same arguments, same Xvfb) and times the window's DAMAGE reports itself. The two alternate,
# ROUNDS times each, on one Xvfb started here with wrap's own options.
#
#   scripts/pixel-probe.sh SIZE KEYS PAUSE_MS ROUNDS -- CMD [ARGS...]
#   e.g. scripts/pixel-probe.sh 200x60 jjjjjkkkkkjjjjjkkkkk 300 3 -- dua i /usr/share
#
# Prints each side's key→first and key→last pixel p50 per round. WRAP_ARGS: more of wrap's
# arguments (e.g. WRAP_ARGS='--observer preload'), split at spaces.
# Needs a release build (target/release/flushlab and the example), Xvfb and xterm.
set -euo pipefail

usage() {
    echo "usage: scripts/pixel-probe.sh SIZE KEYS PAUSE_MS ROUNDS -- CMD [ARGS...]" >&2
    exit 2
}
[[ $# -ge 6 && "$5" == "--" ]] || usage
size="$1" keys="$2" pause="$3" rounds="$4"
shift 5
[[ "$size" =~ ^([0-9]{1,3})x([0-9]{1,3})$ ]] || { echo "pixel-probe.sh: SIZE '$size' is not COLSxROWS" >&2; exit 2; }
[[ "$keys" =~ ^[a-z0-9]+$ ]] || { echo "pixel-probe.sh: KEYS '$keys': letters and digits only" >&2; exit 2; }
[[ "$pause" =~ ^[0-9]{2,5}$ ]] || { echo "pixel-probe.sh: PAUSE_MS '$pause' is not 10 to 99999" >&2; exit 2; }
[[ "$rounds" =~ ^[1-9][0-9]?$ ]] || { echo "pixel-probe.sh: ROUNDS '$rounds' is not 1 to 99" >&2; exit 2; }

root="$(cd "$(dirname "$0")/.." && pwd)"
flushlab="$root/target/release/flushlab"
probe="$root/target/release/examples/key_pixel_probe"
for f in "$flushlab" "$probe"; do
    [[ -x "$f" ]] || { echo "pixel-probe.sh: $f missing: cargo build --release --example key_pixel_probe" >&2; exit 2; }
done

scratch="$(mktemp -d)"
pids=()
cleanup() {
    for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
    wait 2>/dev/null || true
    rm -rf "$scratch"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# The same Xvfb as wrap's own (src/painting/display.rs).
exec 3> "$scratch/displayfd"
Xvfb -displayfd 3 -screen 0 3840x2160x24 -nolisten tcp -schedInterval 1 -noreset 2>/dev/null &
pids+=($!)
for _ in $(seq 100); do [[ -s "$scratch/displayfd" ]] && break; sleep 0.1; done
display=":$(head -1 "$scratch/displayfd")"
[[ "$display" != ":" ]] || { echo "pixel-probe.sh: Xvfb did not start" >&2; exit 1; }

# wrap's key script: each key, then its pause.
script=""
for ((i = 0; i < ${#keys}; i++)); do script+="${keys:i:1}<wait ${pause}ms>"; done

p50() { sed -n "s/.*key→$1 pixel p50 \([0-9.]*\).*/\1/p" | head -1; }
wrap_p50() { sed -n "s/.*to $1 pixel p50 \([0-9.]*\) *ms.*/\1/p" | head -1; }

echo "round side first_p50_ms last_p50_ms"
for ((r = 1; r <= rounds; r++)); do
    # The probe's side: xterm as wrap starts it, CMD in it, the keys once it is quiet.
    DISPLAY="$display" xterm -geometry "$size" -fa 'DejaVu Sans Mono' -fs 10 \
        -xrm 'XTerm*metaSendsEscape: true' -e "$@" &
    term=$!
    pids+=("$term")
    sleep 3
    out="$("$probe" "$display" "$keys" "$pause")"
    kill "$term" 2>/dev/null || true
    wait "$term" 2>/dev/null || true
    echo "$out" > "$scratch/probe-$r.txt"
    echo "$r probe $(echo "$out" | p50 first) $(echo "$out" | p50 last)"

    # shellcheck disable=SC2086
    out="$("$flushlab" wrap ${WRAP_ARGS:-} --terminal xterm --display "$display" --size "$size" --keys "$script" -- "$@" 2>&1 >/dev/null || true)"
    echo "$out" > "$scratch/wrap-$r.txt"
    echo "$r wrap $(echo "$out" | wrap_p50 first) $(echo "$out" | wrap_p50 last)"
done
