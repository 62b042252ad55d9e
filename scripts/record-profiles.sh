#!/usr/bin/env bash
# Records a samply profile of flushlab's headless run for each writer mode, into profiles/.
#
#   scripts/record-profiles.sh [--lower-paranoid] [--duration SECONDS] [--size COLSxROWS]
#                              [--rate HZ] [--out DIR] [--profile NAME] [--backend NAME] [MODE...]
#
# MODE is stdout/raw, stderr/block, ... (default: all ten). The run happens inside a
# pseudo-terminal (util-linux `script`) drained to /dev/null, so it needs no terminal and
# measures the same thing on a desktop and in CI. Each mode gives
#   DIR/<stream>-<buffering>.json.gz        the profile (Firefox Profiler format)
#   DIR/<stream>-<buffering>.json.syms.json its symbols (samply --unstable-presymbolicate)
#   DIR/<stream>-<buffering>.report.json    flushlab's own report of the run (frames, fps, ...)
# With --backend NAME (crossterm, the default, lean or termion) the files are named
# <stream>-<buffering>-<backend>.*, so that backends recorded side by side sit side by side.
# DIR defaults to profiles/. Defaults: --duration 5, --size 200x60, --rate 1000 (capped at the
# kernel's perf_event_max_sample_rate, which the kernel itself lowers when sampling is costly).
# --profile: the cargo profile to build (default profiling: full debug info for inlined frames;
# release has line tables only, enough for the digest's parts, and CI has it built already).
set -euo pipefail

usage() { sed -n '2,19p' "$0" | sed 's/^# \{0,1\}//'; }
die() { echo "record-profiles: $*" >&2; exit 1; }

lower=false
duration=5
size=200x60
out=profiles
rate=1000
profile=profiling
backend=crossterm
named=false
modes=()
while (($#)); do
    case "$1" in
        --lower-paranoid) lower=true ;;
        --duration) duration="${2:?--duration needs SECONDS}"; shift ;;
        --size) size="${2:?--size needs COLSxROWS}"; shift ;;
        --out) out="${2:?--out needs DIR}"; shift ;;
        --rate) rate="${2:?--rate needs HZ}"; shift ;;
        --profile) profile="${2:?--profile needs NAME}"; shift ;;
        --backend) backend="${2:?--backend needs NAME}"; named=true; shift ;;
        -h|--help) usage; exit 0 ;;
        -*) die "unknown option '$1' (valid: --lower-paranoid, --duration, --size, --rate, --out, --profile, --backend, --help)" ;;
        *) modes+=("$1") ;;
    esac
    shift
done
if ((${#modes[@]} == 0)); then
    for stream in stdout stderr; do
        for buffering in raw line block frame thread; do modes+=("$stream/$buffering"); done
    done
fi
[[ "$duration" =~ ^[0-9]*\.?[0-9]+$ ]] || die "bad --duration '$duration' (expected seconds, e.g. 5 or 0.5)"
[[ "$rate" =~ ^[1-9][0-9]*$ ]] || die "bad --rate '$rate' (expected samples per second, e.g. 1000)"
[[ "$profile" =~ ^(profiling|release)$ ]] || die "bad --profile '$profile' (valid: profiling, release)"
[[ "$backend" =~ ^(crossterm|lean|termion)$ ]] || die "bad --backend '$backend' (valid: crossterm, lean, termion)"
[[ "$size" =~ ^([1-9][0-9]*)x([1-9][0-9]*)$ ]] || die "bad --size '$size' (expected COLSxROWS, e.g. 200x60)"
cols=${BASH_REMATCH[1]}
rows=${BASH_REMATCH[2]}
for mode in "${modes[@]}"; do
    case "$mode" in
        stdout/raw|stdout/line|stdout/block|stdout/frame|stdout/thread) ;;
        stderr/raw|stderr/line|stderr/block|stderr/frame|stderr/thread) ;;
        *) die "unknown mode '$mode' (valid: stdout|stderr / raw|line|block|frame|thread)" ;;
    esac
done

root="$(cd "$(dirname "$0")/.." && pwd)"
mkdir -p "$out"
out="$(cd "$out" && pwd)"
cd "$root"

samply="$(command -v samply || true)"
[[ -z "$samply" && -x "$HOME/.cargo/bin/samply" ]] && samply="$HOME/.cargo/bin/samply"
[[ -n "$samply" ]] || die "samply is not installed: cargo install samply --locked"
command -v script >/dev/null || die "util-linux 'script' is missing (Debian: apt-get install bsdutils)"

paranoid="$(cat /proc/sys/kernel/perf_event_paranoid)"
if ((paranoid > 1)); then
    if $lower && [[ "$(id -u)" == 0 ]]; then
        echo "+ echo 1 > /proc/sys/kernel/perf_event_paranoid (was $paranoid)"
        echo 1 > /proc/sys/kernel/perf_event_paranoid
    else
        die "kernel.perf_event_paranoid is $paranoid; samply needs 1 or less. As root:
    echo 1 > /proc/sys/kernel/perf_event_paranoid     (or: sysctl kernel.perf_event_paranoid=1)
or run this script as root with --lower-paranoid."
    fi
fi

max_rate="$(cat /proc/sys/kernel/perf_event_max_sample_rate 2>/dev/null || echo "$rate")"
if ((rate > max_rate)); then
    echo "+ sampling at $max_rate Hz, the kernel's perf_event_max_sample_rate (asked: $rate)"
    rate=$max_rate
fi

echo "+ cargo build --profile $profile"
cargo build --profile "$profile" --locked --quiet
bin="$root/target/$profile/flushlab"

for mode in "${modes[@]}"; do
    stream="${mode%%/*}"
    buffering="${mode#*/}"
    name="$stream-$buffering"
    ! $named || name="$name-$backend"
    tmp="$(mktemp -d)"
    trap 'rm -rf "$tmp"' EXIT
    inner="stty cols $cols rows $rows && STREAM=$stream BUFFERING=$buffering BACKEND=$backend DURATION=$duration \
exec '$samply' record --save-only --unstable-presymbolicate --rate $rate -o '$tmp/$name.json.gz' \
-- '$bin' --export-json '$tmp/$name.report.json'"
    echo "+ $mode: samply record --rate $rate ... -- flushlab (STREAM=$stream BUFFERING=$buffering BACKEND=$backend DURATION=$duration, ${cols}x${rows} pty)"
    # script drains the pty; only the end of what was shown is kept, to explain a failure.
    if ! script -q -e -c "$inner" /dev/null < /dev/null 2>&1 | tail -c 4000 > "$tmp/pty.out"; then
        tail -c 2000 "$tmp/pty.out" | tr -d '\033' >&2 || true
        die "recording $mode failed; nothing was written to $out"
    fi
    for f in "$name.json.gz" "$name.json.syms.json" "$name.report.json"; do
        [[ -s "$tmp/$f" ]] || die "samply did not write $f for $mode; nothing was written to $out"
    done
    # Only complete sets reach the output directory.
    mv "$tmp/$name.json.gz" "$tmp/$name.json.syms.json" "$tmp/$name.report.json" "$out/"
    rm -rf "$tmp"
    trap - EXIT
    echo "  wrote $out/$name.json.gz"
done
