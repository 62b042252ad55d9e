#!/usr/bin/env bash
# What one write a frame buys against unbuffered, headless and in each terminal: `wrap
# --against` (ABBA rounds until its interval decides) of a buffered build (NEW) against an
# unbuffered one (OLD), on the floor (flushlab's keyed_ratatui: BufWriter against stderr) and on
# a published pair (dua-cli 2.41.1, its own buffering fix, against 2.41.0), each headless and in
# each terminal given, and again with the terminal's render delays off where it has them.
#
#   scripts/buffering-in-terminals.sh OUT_DIR [TERMINAL...]     (default: xterm foot kitty)
#
# Env: DUA_OLD, DUA_NEW (dua binaries: cargo install dua-cli --version 2.41.0|2.41.1 --root D),
# SIZE (200x60: dua's), FLOOR_SIZE (80x24: unbuffered full-screen frames at 200x60 take half a
# second each headless, and keys queue behind them), KEYS ('j*10@300ms k*10@300ms'), HEADLESS (1;
# 0 leaves the headless pairs out, for terminals added to a table made before). Each line: the pair, where, the verdict and
# ratio NEW/OLD of key→last pixel (key→frame headless) with its interval and rounds, each
# side's median p50 and its emit and paint, and bytes and write(2)s a key. OUT_DIR keeps each
# run's JSON.
set -euo pipefail
cd "$(dirname "$0")/.."

[[ $# -ge 1 ]] || { echo "usage: scripts/buffering-in-terminals.sh OUT_DIR [TERMINAL...]" >&2; exit 2; }
out="$1"
shift
terminals=("$@")
[[ ${#terminals[@]} -gt 0 ]] || terminals=(xterm foot kitty)
mkdir -p "$out"
flushlab=target/release/flushlab
floor=target/release/examples/keyed_ratatui
dua_old=${DUA_OLD:-/tmp/dua-before/bin/dua}
dua_new=${DUA_NEW:-/tmp/dua-after/bin/dua}
size=${SIZE:-200x60}
floor_size=${FLOOR_SIZE:-80x24}
keys=${KEYS:-j*10@300ms k*10@300ms}
for f in "$flushlab" "$floor" "$dua_old" "$dua_new"; do
    [[ -x "$f" ]] || { echo "buffering-in-terminals.sh: $f missing" >&2; exit 2; }
done

# The render delays each terminal has, off.
delays_off() {
    case "$1" in
        foot) echo "--terminal-option tweak.delayed-render-lower=0 --terminal-option tweak.delayed-render-upper=0" ;;
        kitty) echo "--terminal-option input_delay=0 --terminal-option repaint_delay=0 --terminal-option sync_to_monitor=no" ;;
        *) echo "" ;;
    esac
}

# name, where, size, extra wrap arguments, OLD command, NEW command
one() {
    local name="$1" where="$2" size="$3" extra="$4" old="$5" new="$6"
    local json="$out/$name-$where.json" code=0
    # shellcheck disable=SC2086 # extra and NEW are argument lists, split as a shell splits them
    "$flushlab" wrap $extra --size "$size" --keys "$keys" --against "$old" \
        --export-json "$json" -- $new > /dev/null 2> "$out/$name-$where.err" || code=$?
    python3 - "$json" "$name" "$where" "$code" <<'EOF'
import json, statistics, sys
path, name, where, code = sys.argv[1:]
try:
    d = json.load(open(path))
except Exception as e:
    print(f"{name:6} {where:22} exit {code}: no JSON ({e})")
    sys.exit()
a = d["against"]
r = a.get("ratio") or {}
def med(side, f):
    v = [f(x[side]) for x in d["rounds"] if f(x[side]) is not None]
    return statistics.median(v) if v else float("nan")
def stage(name):
    return lambda f: dict((s, v) for s, v in f.get("stages_p50_ms", [])).get(name)
def per_key(runs, field):
    v = [run[field] / max(run["keys"]["sent"], 1) for run in runs if field in run]
    return statistics.median(v) if v else float("nan")
writes = lambda runs: per_key(runs, "terminal_write_calls")
bytes_ = lambda runs: per_key(runs, "terminal_bytes_written")
print(f"{name:6} {where:22} {d['old_runs'][0].get('cols', '')}x{d['old_runs'][0].get('rows', '')} {a.get('verdict') or a.get('no_verdict')}: NEW/OLD x{r.get('estimate', float('nan')):.3f} "
      f"[x{r.get('low', float('nan')):.3f}-x{r.get('high', float('nan')):.3f}] {a['rounds']} rounds; "
      f"OLD p50 {med('old', lambda f: f['key_to_frame_p50_ms']):.2f} ms (emit {med('old', stage('emit')):.2f}, paint {med('old', stage('paint')):.2f}), "
      f"NEW {med('new', lambda f: f['key_to_frame_p50_ms']):.2f} ms (emit {med('new', stage('emit')):.2f}, paint {med('new', stage('paint')):.2f}); "
      f"a key: OLD {bytes_(d['old_runs']):.0f} B in {writes(d['old_runs']):.1f} write(2), NEW {bytes_(d['new_runs']):.0f} B in {writes(d['new_runs']):.1f}")
EOF
}

pairs() {
    local where="$1" extra="$2"
    one floor "$where" "$floor_size" "$extra" "$floor stderr" "$floor bufwriter"
    one dua "$where" "$size" "$extra" "$dua_old i /usr/share/doc" "$dua_new i /usr/share/doc"
}

if [[ ${HEADLESS:-1} == 1 ]]; then
    pairs headless ""
fi
for t in "${terminals[@]}"; do
    pairs "$t" "--terminal $t"
    off="$(delays_off "$t")"
    if [[ -n "$off" ]]; then
        pairs "$t-delays-off" "--terminal $t $off"
    fi
done
