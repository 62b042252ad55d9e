#!/usr/bin/env bash
# What one write a frame buys over a wire: unbuffered against one write a frame, through
# `flushlab wrap --via LAYERS` at several round trips and at 125,000 B/s. Prints one line a row
# (the run's own "wrap via" line); docs/wrap/wire.md quotes it. Needs root (the layers' namespaces),
# openssh-server, tmux and mosh.
#
#   scripts/via-table.sh [KEYS]                  --via ssh: examples/keyed_ratatui, stderr
#                                                against bufwriter
#   LAYERS=tmux scripts/via-table.sh [KEYS]      --via tmux, and ssh,tmux at each link:
#   LAYERS=ssh,tmux scripts/via-table.sh         tests/corpus/stages.c, a write(2) a cell
#                                                against one a frame (keyed_ratatui will not
#                                                start in tmux 3.3a, which answers its DA1 and
#                                                not its OSC 11)
#   LAYERS=mosh scripts/via-table.sh             --via mosh at each link, stages.c as for tmux
#   PROGRAM=stages scripts/via-table.sh          --via ssh with stages.c, to set beside tmux
#
# PROFILE=dev uses the debug build (release by default).
set -euo pipefail
cd "$(dirname "$0")/.."
keys="${1:-j*10@400ms q}"
layers="${LAYERS:-ssh}"
profile="${PROFILE:-release}"
dir=$([[ "$profile" == dev ]] && echo debug || echo "$profile")
cargo build --quiet --locked --profile "$profile" --example keyed_ratatui
cargo build --quiet --locked --profile "$profile"
flushlab="target/$dir/flushlab"
links=("--rtt 0" "--rtt 20" "--rtt 100" "--rtt 0 --rate 125000")
program_name="${PROGRAM:-$([[ "$layers" == ssh ]] && echo keyed_ratatui || echo stages)}"
[[ "$layers" == tmux ]] && links=("")
case "$program_name" in
    keyed_ratatui)
        program=("$PWD/target/$dir/examples/keyed_ratatui")
        writers=(stderr bufwriter)
        ;;
    stages)
        scratch="$(mktemp -d)"
        trap 'rm -rf "$scratch"' EXIT
        chmod 755 "$scratch"
        gcc -O2 -o "$scratch/stages" tests/corpus/stages.c
        program=("$scratch/stages" poll 0)
        writers=(raw frame)
        ;;
    *) echo "via-table.sh: PROGRAM '$program_name' is not one of keyed_ratatui, stages" >&2; exit 2 ;;
esac
case "$layers" in
    ssh | tmux | ssh,tmux | mosh | mosh,tmux) ;;
    *) echo "via-table.sh: LAYERS '$layers' is not one of ssh, tmux, ssh,tmux, mosh, mosh,tmux" >&2; exit 2 ;;
esac
for link in "${links[@]}"; do
    for writer in "${writers[@]}"; do
        # shellcheck disable=SC2086 # the link's flags are words
        line=$("$flushlab" wrap --via "$layers" $link --size 80x24 --keys "$keys" -- "${program[@]}" "$writer" 2>&1 |
            grep 'wrap via' || echo "no figures (the run failed)")
        printf '%s | %s | %s\n' "${link:-no link}" "$writer" "${line#flushlab: }"
    done
done
