#!/usr/bin/env bash
# Published programs under `flushlab wrap`'s default observer, 120x40, 20 keys 100 ms apart: a
# markdown row each — the observer that looked, the headline's frames, the keys' frames
# (answering + unprompted + before the first key) and the answering keys with every stage.
# docs/wrap/observers.md ("The kernel observer") quotes what this printed. A program not installed is
# skipped, said.
#
#   scripts/observer-programs.sh [FLUSHLAB]     (default target/release/flushlab)
set -euo pipefail
flushlab=$(realpath "${1:-target/release/flushlab}")
[[ -x "$flushlab" ]] || { echo "observer-programs.sh: $flushlab: not an executable (cargo build --release)" >&2; exit 2; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$work"
seq 1 20000 > lines.txt
printf 'a,b\n' > t.csv
seq 1 200 | awk '{ print $1 "," $1 * 2 }' >> t.csv
{ echo '<html><body>'; seq 1 500 | sed 's|.*|<p>line &</p>|'; echo '</body></html>'; } > page.html
mkdir repo
(cd repo && git init -q && for i in $(seq 30); do echo "$i" > "f$i"; git add "f$i";
    git -c user.email=a@b -c user.name=a commit -qm "c$i"; done)
run() {
    local name=$1 keys=$2
    shift 2
    if ! command -v "$1" >/dev/null 2>&1; then
        echo "| $name | not installed | | | |"
        return
    fi
    mkdir -p "home-$name"
    HOME="$work/home-$name" timeout 60 "$flushlab" wrap --size 120x40 --keys "$keys" \
        --export-json "$work/$name.json" -- "$@" </dev/null >/dev/null 2>"$work/$name.err" || true
    python3 - "$work/$name.json" "$name" "$work/$name.err" <<'PY'
import json, sys
try:
    r = json.load(open(sys.argv[1]))
except (OSError, ValueError):
    print(f"| {sys.argv[2]} | no report: {open(sys.argv[3]).read().strip()[-200:]!r} | | | |")
    sys.exit()
k = r["keys"]
f = k["frames"]
stages = ("input_delay", "processing", "emit", "drain")
staged = sum(1 for e in k["each"] if all(isinstance((e.get("stages_ms") or {}).get(s), (int, float)) for s in stages))
parts = f["answering"] + f["unprompted"] + f["before_keys"]
print(f"| {sys.argv[2]} | {r['inside']['observer']} | {r['frame_detection']['frames']} | "
      f"{f['answering']} + {f['unprompted']} + {f['before_keys']} = {parts} | {staged} of {f['answering']} |")
PY
}
echo "| program | observer | frames | answering + unprompted + before | every stage |"
echo "|---|---|--:|---|---|"
run less 'j*20@100ms' less lines.txt
run vim 'j*20@100ms' vim -u NONE lines.txt
run nano '<Down>*20@100ms' nano lines.txt
run mc '<Down>*20@100ms' mc -u
run htop '<Down>*20@100ms' htop
run btop '<Down>*20@100ms' btop
run emacs '<C-n>*20@100ms' emacs -nw -Q lines.txt
run w3m 'j*20@100ms' w3m page.html
run fzf-env '<Down>*20@100ms' env FZF_DEFAULT_COMMAND='seq 1 100000' fzf
run lf-sh 'j*20@100ms' sh -c "cd $work/repo && exec lf"
# shellcheck disable=SC2016 # $l is the shell's own, expanded there
run echo-sh 'x<Enter>*20@100ms' sh -c 'stty -echo; while IFS= read -r l; do /bin/echo "got $l"; done'
run ranger 'j*20@100ms' ranger repo
run vd 'j*20@100ms' vd t.csv
run micro '<Down>*20@100ms' micro lines.txt
run ncdu 'j*20@100ms' ncdu /usr/share/doc
run tig 'j*20@100ms' sh -c "cd $work/repo && exec tig"
run vifm 'j*20@100ms' vifm repo
run nnn 'j*20@100ms' nnn repo
run lynx '<Down>*20@100ms' lynx page.html
run kak 'j*20@100ms' kak -n lines.txt
run dialog '<Down>*20@100ms' dialog --menu pick 30 60 25 1 a 2 b 3 c 4 d 5 e 6 f 7 g 8 h 9 i 10 j 11 k 12 l 13 m 14 n 15 o 16 p 17 q 18 r 19 s 20 t 21 u 22 v 23 w 24 x 25 y
