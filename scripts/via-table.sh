#!/usr/bin/env bash
# What one write a frame buys over ssh: examples/keyed_ratatui unbuffered (stderr) against one
# write a frame (bufwriter), through `flushlab wrap --via ssh` at several round trips and at
# 125,000 B/s. Prints one line a row (the run's own "wrap via" line); docs/wrap.md quotes it.
# Needs root (the link's namespaces) and openssh-server. Usage: scripts/via-table.sh [KEYS]
# PROFILE=dev uses the debug build (release by default).
set -euo pipefail
cd "$(dirname "$0")/.."
keys="${1:-j*10@400ms q}"
profile="${PROFILE:-release}"
dir=$([[ "$profile" == dev ]] && echo debug || echo "$profile")
cargo build --quiet --locked --profile "$profile" --example keyed_ratatui
cargo build --quiet --locked --profile "$profile"
flushlab="target/$dir/flushlab"
program="$PWD/target/$dir/examples/keyed_ratatui"
for link in "--rtt 0" "--rtt 20" "--rtt 100" "--rtt 0 --rate 125000"; do
    for writer in stderr bufwriter; do
        # shellcheck disable=SC2086 # the link's flags are words
        line=$("$flushlab" wrap --via ssh $link --size 80x24 --keys "$keys" -- "$program" "$writer" 2>&1 |
            grep 'wrap via' || echo "no figures (the run failed)")
        printf '%s | %s | %s\n' "$link" "$writer" "${line#flushlab: }"
    done
done
