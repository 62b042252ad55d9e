#!/usr/bin/env bash
# Re-run the benches whose figures README.md and docs/ quote, then put their figures in the docs.
#
#   scripts/regenerate-docs.sh             the commands as docs/results/README.md and the
#                                          guide give them (3 runs of 2 s a frame's row, of
#                                          1 s a log line's; ~12 minutes here), into
#                                          docs/results; then every marked figure in the docs
#                                          is rewritten from those files (tests/it/figures.rs)
#   scripts/regenerate-docs.sh --short     1 run of 1 s a row (~3 minutes) into a scratch
#                                          directory, then checks every quoted figure against
#                                          it with the tolerance tests/it/figures.rs states (where
#                                          a figure fails, the benches run once more and a
#                                          figure holds if it held once); CI runs this.
#                                          Nothing in docs/ changes.
#   --out DIR                              keep the fresh results in DIR instead
#
# A figure is marked where a document quotes it: `317<!--fig std-200x60 stdout/line
# writes_per_frame-->`; tests/it/figures.rs says how, and `cargo test` checks that every quoted
# figure is the one in its file.
set -euo pipefail
cd "$(dirname "$0")/.."

short=false
out=""
while (($#)); do
    case "$1" in
        --short) short=true ;;
        --out)
            [[ $# -ge 2 ]] || { echo "regenerate-docs.sh: --out needs a directory" >&2; exit 2; }
            out="$2"
            shift
            ;;
        -h | --help) sed -n '2,19p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
        *) echo "regenerate-docs.sh: unknown argument '$1' (choose --short, --out DIR)" >&2; exit 2 ;;
    esac
    shift
done

scratch=""
if [[ -z "$out" ]]; then
    if $short; then
        scratch="$(mktemp -d)"
        trap 'rm -rf "$scratch"' EXIT
        out="$scratch"
    else
        out="docs/results"
    fi
fi
mkdir -p "$out"

# A frame's rows run 2 s, a log line's 1 s (it writes millions a second).
if $short; then
    runs=(--runs 1 --warmup 0 --duration 1)
    flood_runs=("${runs[@]}")
else
    runs=(--runs 3 --warmup 1 --duration 2)
    flood_runs=(--runs 3 --warmup 1 --duration 1)
fi

cargo build --release --locked --quiet
flushlab=target/release/flushlab

# NAME, then the bench's arguments: the result is docs/results/NAME.json (and .md).
bench() {
    local name="$1"
    shift
    local how=("${runs[@]}")
    [[ "$*" == *"--workload flood"* ]] && how=("${flood_runs[@]}")
    echo "== $name: flushlab bench $* ${how[*]}"
    "$flushlab" bench "$@" "${how[@]}" --export-json "$out/$name.json" \
        --export-markdown "$out/$name.md" 2>&1 | tail -n 3
}

# Every bench the docs quote.
run_benches() {
    bench std-200x60 --size 200x60
    bench std-80x24 --size 80x24
    bench time-split --modes stderr/raw,stdout/line,stdout/block,stdout/frame,stdout/thread \
        --sink pty --reader drain,throttle:2MB/s --size 200x60,80x24
    bench backends-200x60 --size 200x60 --modes stdout,stderr/raw,ceilings --backend crossterm,lean,termion
    bench backends-80x24 --size 80x24 --modes stdout,stderr/raw,ceilings --backend crossterm,lean,termion
    bench stderr-tui-120x40 --modes stdout/line,stdout/block,stderr/raw,stderr/block,stderr/thread \
        --size 120x40
    bench flood --workload flood --sink pty,pipe,file,null --reader drain,throttle:20MB/s
    bench flood-null --workload flood --sink null \
        --modes flood/println,flood/lock,flood/eprintln,flood/raw,flood/block,flood/per-byte,flood/thread
    bench flood-pipe-pty --workload flood --sink pipe,pty \
        --modes flood/println,flood/lock,flood/block,flood/thread,flood/eprintln
    bench flood-throttle-2MB --workload flood --modes flood/println,flood/block --reader throttle:2MB/s
    requests=flood/none,flood/println,flood/block,flood/tracing-non-blocking,flood/tracing-lossless
    bench requests-work17us --workload flood --modes "$requests,flood/tracing,flood/env-logger" \
        --work 0.000017 --reader drain,throttle:1MB/s
    bench requests-rate20k --workload flood --modes "$requests" \
        --work 0.000017 --rate 20000 --reader drain,throttle:1MB/s
}
run_benches

if $short; then
    # The test binary CI's test step built (both tiers): the same features, nothing rebuilt.
    check() {
        FLUSHLAB_FRESH_RESULTS="$1" \
            cargo test --locked --quiet --features slow-tests --test it -- \
            figures::quoted_figures_hold_on_a_fresh_run --nocapture
    }
    first="$(cd "$out" && pwd)"
    echo "== the quoted figures against this run"
    if ! check "$first"; then
        # One noisy second on a shared machine moves a figure now and then; a figure the code
        # moved fails again. So the benches run once more, and a figure holds if it held once.
        out="$first/again"
        mkdir -p "$out"
        echo "== a figure failed: the benches once more, into $out"
        run_benches
        echo "== the quoted figures against either run"
        check "$first:$(cd "$out" && pwd)"
    fi
else
    for chart in time-split flood; do
        "$flushlab" report "$out/$chart.json" --plot "$out/$chart.svg"
    done
    echo "== every marked figure rewritten from docs/results"
    FLUSHLAB_WRITE_FIGURES=1 cargo test --locked --quiet --test it -- figures::every_quoted_figure
    git --no-pager diff --stat -- README.md docs
fi
