#!/usr/bin/env bash
# Runs `flushlab tour` inside each terminal emulator this machine has, headless under Xvfb, and
# merges the results into one terminals x modes table and chart.
#
#   scripts/terminal-matrix.sh [--install] [--paint] [--keys] [--seconds N] [--size COLSxROWS] [--out DIR] [TERMINAL...]
#
# TERMINAL: xterm urxvt st mlterm alacritty kitty foot tmux pty (default: all; missing ones are
# skipped and listed). `pty` is the baseline: a bare pseudo-terminal drained by util-linux
# `script`, which answers no queries. --install installs the Debian packages first (root).
# Each tour checks inside its terminal that the size really is COLSxROWS before measuring.
# --paint adds the frames each X terminal painted (`flushlab paint`, sync off and on) as
# DIR/paint.md and DIR/paint.json. --keys adds key→pixel in each terminal on each path it draws
# through (`flushlab wrap --terminal`: X11, keys typed as X key events; Wayland, `--wayland`):
# a ratatui program with its own BufWriter (examples/keyed_ratatui) and the floor (a raw `cat`
# echoing each key in one write), as DIR/keys.md and DIR/keys-*.json. Only processes this script started are stopped.
set -euo pipefail

die() { echo "terminal-matrix: $*" >&2; exit 1; }
usage() { sed -n '2,15p' "$0" | sed 's/^# \{0,1\}//'; }

install=false
paint=false
keys=false
seconds=2
size=200x60
out=results
terminals=()
while (($#)); do
    case "$1" in
        --install) install=true ;;
        --paint) paint=true ;;
        --keys) keys=true ;;
        --seconds) seconds="${2:?--seconds needs N}"; shift ;;
        --size) size="${2:?--size needs COLSxROWS}"; shift ;;
        --out) out="${2:?--out needs DIR}"; shift ;;
        -h|--help) usage; exit 0 ;;
        -*) die "unknown option '$1' (valid: --install, --paint, --keys, --seconds, --size, --out, --help)" ;;
        *) terminals+=("$1") ;;
    esac
    shift
done
all=(xterm urxvt st mlterm alacritty kitty foot tmux pty)
((${#terminals[@]})) || terminals=("${all[@]}")
for t in "${terminals[@]}"; do
    [[ " ${all[*]} " == *" $t "* ]] || die "unknown terminal '$t' (valid: ${all[*]})"
done
[[ "$size" =~ ^([1-9][0-9]*)x([1-9][0-9]*)$ ]] || die "bad --size '$size' (expected COLSxROWS)"
cols=${BASH_REMATCH[1]}
rows=${BASH_REMATCH[2]}
[[ "$seconds" =~ ^[0-9]*\.?[0-9]+$ ]] || die "bad --seconds '$seconds'"

if $install; then
    echo "+ apt-get install (terminals, Xvfb, fonts)"
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
        xvfb xauth xterm rxvt-unicode stterm mlterm alacritty kitty weston foot sway \
        fonts-dejavu-core tmux libgl1-mesa-dri libegl-mesa0 x11-utils bsdutils >/dev/null
fi

root="$(cd "$(dirname "$0")/.." && pwd)"
mkdir -p "$out"
out="$(cd "$out" && pwd)"
cd "$root"
echo "+ cargo build --release"
cargo build --release --quiet
if $keys; then
    cargo build --release --quiet --example keyed_ratatui
fi
bin="$root/target/release/flushlab"

started=()
cleanup() {
    for pid in "${started[@]}"; do kill "$pid" 2>/dev/null || true; done
    tmux -L flushlab-matrix kill-server 2>/dev/null || true
}
trap cleanup EXIT

# The command every terminal runs: check the size from inside, then tour.
inner() {
    local name=$1
    # The emulator sets its own TERM_PROGRAM, if any; ours must not leak into it. A window can
    # open at a default size and be resized a moment later (foot under weston): wait a second.
    printf '%s' "sleep 1; unset TERM_PROGRAM TERM_PROGRAM_VERSION; [ '$name' = pty ] && export TERM_PROGRAM=pty-baseline; set -- \$(stty size); if [ \"\$2x\$1\" != '${cols}x${rows}' ]; then echo \"size \$2x\$1, wanted ${cols}x${rows}\" > '$out/$name.err'; exit 3; fi; exec '$bin' tour --seconds $seconds --export-json '$out/$name.json'"
}

has() { command -v "$1" >/dev/null; }
x_display=""
start_x() {
    [[ -n "$x_display" ]] && return
    has Xvfb || return 1
    local n
    for n in $(seq 90 120); do
        [[ -e "/tmp/.X11-unix/X$n" || -e "/tmp/.X$n-lock" ]] || break
    done
    echo "+ Xvfb :$n"
    Xvfb ":$n" -screen 0 3840x2160x24 -nolisten tcp >/dev/null 2>&1 &
    started+=($!)
    x_display=":$n"
    sleep 1
}

# Waits for a started terminal to finish, killing it after the tour's time plus a margin.
wait_for() {
    local pid=$1 limit=$2 waited=0
    while kill -0 "$pid" 2>/dev/null; do
        sleep 1
        waited=$((waited + 1))
        if ((waited > limit)); then
            kill "$pid" 2>/dev/null || true
            return 1
        fi
    done
    wait "$pid" 2>/dev/null || true
}

limit=$(( ${seconds%.*} * 10 + 120 ))
skipped=()
measured=()
for t in "${terminals[@]}"; do
    rm -f "$out/$t.json" "$out/$t.err"
    cmd="$(inner "$t")"
    case "$t" in
        tmux)
            has tmux || { skipped+=("$t"); continue; }
            echo "+ tmux new-session -x $cols -y $rows (status off)"
            tmux -L flushlab-matrix -f /dev/null new-session -d -x "$cols" -y "$rows" "$cmd" \; set-option -g status off
            waited=0
            while tmux -L flushlab-matrix has-session 2>/dev/null && ((waited < limit)); do sleep 1; waited=$((waited + 1)); done
            tmux -L flushlab-matrix kill-server 2>/dev/null || true
            ;;
        pty)
            echo "+ script (bare pty, ${cols}x${rows})"
            script -q -e -c "stty cols $cols rows $rows; $cmd" /dev/null </dev/null >/dev/null 2>&1 &
            started+=($!)
            wait_for "$!" "$limit" || true
            ;;
        *)
            case "$t" in
                xterm) prog=xterm; args=(-geometry "${cols}x${rows}" -fa 'DejaVu Sans Mono' -fs 10 -e sh -c "$cmd") ;;
                urxvt) prog=urxvt; args=(-geometry "${cols}x${rows}" -fn 'xft:DejaVu Sans Mono:size=10' -e sh -c "$cmd") ;;
                st) prog=stterm; args=(-g "${cols}x${rows}" -f 'DejaVu Sans Mono:size=10' -e sh -c "$cmd") ;;
                mlterm) prog=mlterm; args=(-g "${cols}x${rows}" -w 13 -e sh -c "$cmd") ;;
                alacritty) prog=alacritty; args=(-o "window.dimensions.columns=$cols" -o "window.dimensions.lines=$rows" -o font.size=10 -e sh -c "$cmd") ;;
                kitty) prog=kitty; args=(-o "initial_window_width=${cols}c" -o "initial_window_height=${rows}c" -o remember_window_size=no -o font_size=10 sh -c "$cmd") ;;
                foot) prog=foot; args=(-W "${cols}x${rows}" sh -c "$cmd") ;;
            esac
            if ! has "$prog" || ! start_x; then skipped+=("$t"); continue; fi
            if [[ "$t" == foot ]]; then
                has weston || { skipped+=("$t"); continue; }
                runtime="$(mktemp -d)"
                chmod 700 "$runtime"
                echo "+ weston (x11 backend) for foot"
                DISPLAY=$x_display XDG_RUNTIME_DIR=$runtime weston --backend=x11-backend.so --use-pixman \
                    --width=3000 --height=2000 --socket=wl-flushlab --no-config >/dev/null 2>&1 &
                started+=($!)
                sleep 2
                echo "+ foot -W ${cols}x${rows}"
                WAYLAND_DISPLAY=wl-flushlab XDG_RUNTIME_DIR=$runtime "$prog" "${args[@]}" >/dev/null 2>&1 &
            else
                echo "+ $prog ${args[*]:0:2} ..."
                DISPLAY=$x_display "$prog" "${args[@]}" >/dev/null 2>&1 &
            fi
            started+=($!)
            wait_for "$!" "$limit" || echo "  $t did not finish in ${limit}s: stopped"
            ;;
    esac
    if [[ -s "$out/$t.json" ]]; then
        measured+=("$t")
        echo "  $t: $out/$t.json"
    else
        [[ -s "$out/$t.err" ]] && echo "  $t: $(cat "$out/$t.err")"
        echo "  $t: no result"
    fi
done

((${#skipped[@]})) && echo "skipped (not installed): ${skipped[*]}"
((${#measured[@]})) || die "no terminal produced a result"
files=()
for t in "${measured[@]}"; do files+=("$out/$t.json"); done
echo "+ flushlab report (${measured[*]})"
"$bin" report "${files[@]}" --export-markdown "$out/terminals.md" --plot "$out/terminals.svg"

if $paint; then
    painted=()
    for t in "${measured[@]}"; do
        case "$t" in xterm|st|alacritty|kitty|urxvt|mlterm) painted+=("$t") ;; esac
    done
    if ((${#painted[@]})); then
        list="$(IFS=,; echo "${painted[*]}")"
        echo "+ flushlab paint --terminal $list --size $size --sync off,on"
        "$bin" paint --terminal "$list" --size "$size" --sync off,on --duration "$seconds" \
            --export-json "$out/paint.json" --export-markdown "$out/paint.md"
    else
        echo "no X terminal was measured: nothing to paint"
    fi
fi

if $keys; then
    # Each terminal on each path it draws through: X11 (Xvfb, XTEST, DAMAGE) and Wayland
    # (flushlab's headless sway, a virtual keyboard, wlr-screencopy; its output at 60 Hz).
    typed=()
    for t in "${terminals[@]}"; do
        case "$t" in
            xterm|st|urxvt|mlterm) paths=(x11) ;;
            alacritty|kitty) paths=(x11 wayland) ;;
            foot) paths=(wayland) ;;
            *) continue ;;
        esac
        for path in "${paths[@]}"; do
            flags=()
            [[ $path == wayland ]] && flags=(--wayland)
            for subject in floor program; do
                report="$out/keys-$t-$path-$subject.json"
                rm -f "$report"
                if [[ $subject == floor ]]; then
                    script='j*30@100ms'
                    cmd=(sh -c 'stty raw -echo; exec cat')
                else
                    script='j*20@300ms q'
                    cmd=("$root/target/release/examples/keyed_ratatui" bufwriter)
                fi
                echo "+ flushlab wrap --terminal $t ${flags[*]} --size $size --keys '$script' -- ${cmd[*]}"
                "$bin" wrap --terminal "$t" "${flags[@]}" --size "$size" --keys "$script" \
                    --export-json "$report" -- "${cmd[@]}" 2>/dev/null ||
                    echo "  $t ($path): wrap --terminal failed (not installed, or no GL here?)"
            done
            [[ -s "$out/keys-$t-$path-program.json" && -s "$out/keys-$t-$path-floor.json" ]] &&
                typed+=("$t:$path")
        done
    done
    if ((${#typed[@]})); then
        python3 - "$out" "$size" "${typed[@]}" > "$out/keys.md" <<'PY'
import json, sys
out, size, runs = sys.argv[1], sys.argv[2], sys.argv[3:]
ms = lambda v: f"{v:.2f}" if v < 10 else f"{v:.1f}"
print(f"key→pixel at {size}: X11 — keys typed as X key events, the window's changes (DAMAGE); "
      f"Wayland — flushlab's headless sway (software rendering), a virtual keyboard, the "
      f"window's region copied at each commit (wlr-screencopy); ms, p50 / p95\n")
print("| terminal | path | floor: raw cat, last pixel | ratatui + BufWriter: first pixel | last pixel | key→frame (inside) | paint |")
print("|---|---|---|---|---|---|---|")
for run in runs:
    t, path = run.split(":")
    floor = json.load(open(f"{out}/keys-{t}-{path}-floor.json"))
    prog = json.load(open(f"{out}/keys-{t}-{path}-program.json"))
    shown = "X11" if path == "x11" else f"Wayland, {prog.get('refresh_hz')} Hz"
    floor, prog = floor["keys"], prog["keys"]
    pair = lambda p: f"{ms(p['p50'])} / {ms(p['p95'])}" if p else "unknown"
    px = lambda k, edge: pair((k.get("pixels_ms") or {}).get(edge))
    paint = (prog.get("stages_ms") or {}).get("paint")
    print(f"| {t} | {shown} | {px(floor, 'last')} | {px(prog, 'first')} | {px(prog, 'last')} | "
          f"{pair(prog.get('key_to_frame_ms'))} | {pair(paint)} |")
PY
        echo "  key→pixel: $out/keys.md"
    else
        echo "no terminal was typed into: no key→pixel table"
    fi
fi
