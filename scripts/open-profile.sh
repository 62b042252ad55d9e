#!/usr/bin/env bash
# Opens a recorded profile in the Firefox Profiler: samply serves it locally and prints the URL.
#
#   scripts/open-profile.sh profiles/stderr-raw.json.gz
set -euo pipefail

[[ $# == 1 ]] || { echo "usage: scripts/open-profile.sh PROFILE.json.gz" >&2; exit 2; }
[[ -f "$1" ]] || { echo "open-profile: no such profile '$1'" >&2; exit 1; }
samply="$(command -v samply || true)"
[[ -z "$samply" && -x "$HOME/.cargo/bin/samply" ]] && samply="$HOME/.cargo/bin/samply"
[[ -n "$samply" ]] || { echo "open-profile: samply is not installed: cargo install samply --locked" >&2; exit 1; }
echo "+ samply load $1"
exec "$samply" load "$1"
