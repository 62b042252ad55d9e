#!/usr/bin/env bash
# wrap's key→pixel in a real terminal against an independent truth: a client with no code of
# wrap's types the same keys into the same program in the same terminal (same arguments, same
# display) and times the window's changes itself. The two alternate, ROUNDS times each.
#
#   scripts/pixel-probe.sh SIZE KEYS PAUSE_MS ROUNDS -- CMD [ARGS...]
#   e.g. scripts/pixel-probe.sh 200x60 jjjjjkkkkkjjjjjkkkkk 300 3 -- dua i /usr/share
#
# TERMINAL picks the terminal and the probe:
#   xterm (the default)  on an Xvfb started here with wrap's own options;
#                        examples/key_pixel_probe.rs: XTEST keys, the window's DAMAGE reports
#   foot                 on a headless sway started here as wrap starts its own (as nobody when
#                        root); wrap joins it with --wayland-display.
#                        examples/wayland_key_pixel_probe.rs: virtual-keyboard keys, each
#                        change of the window's region timed by sway's stamp (screencopy)
# Prints each side's key→first and key→last pixel p50 per round, and the probe's own summary
# line after its round (as a comment). WRAP_ARGS: more of wrap's
# arguments (e.g. WRAP_ARGS='--observer preload'), split at spaces.
# Needs a release build (target/release/flushlab and the probe), and Xvfb and xterm, or sway
# and foot.
set -euo pipefail

usage() {
    echo "usage: [TERMINAL=xterm|foot] scripts/pixel-probe.sh SIZE KEYS PAUSE_MS ROUNDS -- CMD [ARGS...]" >&2
    exit 2
}
[[ $# -ge 6 && "$5" == "--" ]] || usage
size="$1" keys="$2" pause="$3" rounds="$4"
shift 5
[[ "$size" =~ ^([0-9]{1,3})x([0-9]{1,3})$ ]] || { echo "pixel-probe.sh: SIZE '$size' is not COLSxROWS" >&2; exit 2; }
[[ "$keys" =~ ^[a-z0-9]+$ ]] || { echo "pixel-probe.sh: KEYS '$keys': letters and digits only" >&2; exit 2; }
[[ "$pause" =~ ^[0-9]{2,5}$ ]] || { echo "pixel-probe.sh: PAUSE_MS '$pause' is not 10 to 99999" >&2; exit 2; }
[[ "$rounds" =~ ^[1-9][0-9]?$ ]] || { echo "pixel-probe.sh: ROUNDS '$rounds' is not 1 to 99" >&2; exit 2; }
terminal="${TERMINAL:-xterm}"
case "$terminal" in
    xterm) example=key_pixel_probe ;;
    foot) example=wayland_key_pixel_probe ;;
    *) echo "pixel-probe.sh: TERMINAL '$terminal' is not one of xterm, foot" >&2; exit 2 ;;
esac

root="$(cd "$(dirname "$0")/.." && pwd)"
flushlab="$root/target/release/flushlab"
probe="$root/target/release/examples/$example"
for f in "$flushlab" "$probe"; do
    [[ -x "$f" ]] || { echo "pixel-probe.sh: $f missing: cargo build --release --example $example" >&2; exit 2; }
done

scratch="$(mktemp -d)"
runtime=""
pids=()
cleanup() {
    for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
    wait 2>/dev/null || true
    rm -rf "$scratch" ${runtime:+"$runtime"}
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# wrap's key script: each key, then its pause.
script=""
for ((i = 0; i < ${#keys}; i++)); do script+="${keys:i:1}<wait ${pause}ms>"; done

if [[ "$terminal" == xterm ]]; then
    # The same Xvfb as wrap's own (crates/flushlab-terminals/src/display.rs).
    exec 3> "$scratch/displayfd"
    Xvfb -displayfd 3 -screen 0 3840x2160x24 -nolisten tcp -schedInterval 1 -noreset 2>/dev/null &
    pids+=($!)
    for _ in $(seq 100); do [[ -s "$scratch/displayfd" ]] && break; sleep 0.1; done
    display=":$(head -1 "$scratch/displayfd")"
    [[ "$display" != ":" ]] || { echo "pixel-probe.sh: Xvfb did not start" >&2; exit 1; }
    start_terminal() {
        DISPLAY="$display" xterm -geometry "$size" -fa 'DejaVu Sans Mono' -fs 10 \
            -xrm 'XTerm*metaSendsEscape: true' -e "$@" &
        term=$!
    }
    run_probe() { "$probe" "$display" "$keys" "$pause"; }
    place=(--terminal xterm --display "$display")
else
    # The same sway as wrap's own (crates/flushlab-terminals/src/wayland/compositor.rs), and a rule that floats
    # the probe's foot as wrap floats its own.
    # Its own directory: sway's user must reach it, and $scratch is root's alone.
    runtime="$(mktemp -d)"
    as=()
    if [[ "$(id -u)" == 0 ]]; then
        chown 65534:65534 "$runtime"
        as=(--reuid=65534 --regid=65534 --clear-groups)
    fi
    cat > "$runtime/sway.conf" <<CONF
output * mode --custom 2560x1600@60Hz
default_border none
default_floating_border none
focus_follows_mouse no
for_window [app_id="^flushlab-probe\$"] floating enable
CONF
    env -i HOME="$runtime" XDG_RUNTIME_DIR="$runtime" PATH="$PATH" WLR_BACKENDS=headless \
        WLR_RENDERER=pixman WLR_LIBINPUT_NO_DEVICES=1 WLR_HEADLESS_OUTPUTS=1 \
        setpriv "${as[@]}" --pdeathsig KILL -- sway -c "$runtime/sway.conf" \
        < /dev/null > /dev/null 2> "$scratch/sway.log" &
    pids+=($!)
    socket="" ipc=""
    for _ in $(seq 100); do
        socket="$(find "$runtime" -maxdepth 1 -name 'wayland-*' ! -name '*.lock' | head -1)"
        ipc="$(find "$runtime" -maxdepth 1 -name 'sway-ipc.*.sock' | head -1)"
        [[ -n "$socket" && -n "$ipc" ]] && break
        sleep 0.1
    done
    [[ -n "$socket" && -n "$ipc" ]] || { echo "pixel-probe.sh: sway did not start: $(tail -1 "$scratch/sway.log")" >&2; exit 1; }
    start_terminal() {
        XDG_RUNTIME_DIR="$runtime" WAYLAND_DISPLAY="$socket" foot --window-size-chars="$size" \
            --font='DejaVu Sans Mono:size=10' --config=/dev/null --app-id=flushlab-probe -- "$@" \
            2> /dev/null &
        term=$!
    }
    # The probe's window, as sway places it: X,Y,W,H on the output.
    run_probe() {
        local region
        region="$(swaymsg -s "$ipc" -r -t get_tree | python3 -c '
import json, sys
def walk(n):
    if n.get("app_id") == "flushlab-probe":
        r = n["rect"]
        print("%d,%d,%d,%d" % (r["x"], r["y"], r["width"], r["height"]))
        sys.exit()
    for c in n.get("nodes", []) + n.get("floating_nodes", []):
        walk(c)
walk(json.load(sys.stdin))
sys.exit("pixel-probe.sh: no window of the probe in the tree sway lists")')"
        "$probe" "$socket" "$region" "$keys" "$pause"
    }
    place=(--terminal foot --wayland-display "$socket")
    export XDG_RUNTIME_DIR="$runtime" SWAYSOCK="$ipc"
fi

p50() { sed -n "s/.*key→$1 pixel p50 \([0-9.]*\).*/\1/p" | head -1; }
wrap_p50() { sed -n "s/.*to $1 pixel p50 \([0-9.]*\) *ms.*/\1/p" | head -1; }

echo "round side first_p50_ms last_p50_ms"
for ((r = 1; r <= rounds; r++)); do
    # The probe's side: the terminal as wrap starts it, CMD in it, the keys once it is quiet.
    start_terminal "$@"
    pids+=("$term")
    sleep 3
    out="$(run_probe)"
    kill "$term" 2>/dev/null || true
    wait "$term" 2>/dev/null || true
    echo "$out" > "$scratch/probe-$r.txt"
    echo "$r probe $(echo "$out" | p50 first) $(echo "$out" | p50 last)"
    echo "# $(echo "$out" | tail -1)"

    # shellcheck disable=SC2086
    out="$("$flushlab" wrap ${WRAP_ARGS:-} "${place[@]}" --size "$size" --keys "$script" -- "$@" 2>&1 >/dev/null || true)"
    echo "$out" > "$scratch/wrap-$r.txt"
    echo "$r wrap $(echo "$out" | wrap_p50 first) $(echo "$out" | wrap_p50 last)"
done
