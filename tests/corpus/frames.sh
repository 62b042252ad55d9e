#!/bin/sh
# Frames drawn from a POSIX shell, counting their own frames: the truth `flushlab wrap` is
# checked against (tests/corpus.rs).
#
#   frames.sh MODE      MODE is one of
#     cells     home, then one printf per cell (a write(2) each)
#     rows      home, then one printf per row, 30 fps (sleep 0.033)
#
# FRAMES_FILE receives "FRAMES SECONDS" at the end (SIGTERM, SIGHUP, or FRAMES frames drawn).
mode=${1:-cells}
set -- $(stty size)
rows=$1 cols=$2
n=0
start=$(date +%s.%N)
last=$start
finish() {
    [ -n "${FRAMES_FILE:-}" ] && echo "$n $(echo "$last - $start" | awk '{print $1 - $3}')" >"$FRAMES_FILE"
    exit 0
}
trap finish TERM HUP
line=$(printf "%${cols}s" "")
while [ "${FRAMES:--1}" -lt 0 ] || [ "$n" -lt "${FRAMES:-0}" ]; do
    printf '\033[H'
    r=1
    while [ "$r" -le "$rows" ]; do
        [ "$r" -gt 1 ] && printf '\033[%d;1H' "$r"
        if [ "$mode" = cells ]; then
            c=1
            while [ "$c" -le "$cols" ]; do
                printf '\033[48;5;%dm ' $(((c + r + n) % 216 + 16))
                c=$((c + 1))
            done
        else
            printf '\033[48;5;%dm%s' $(((r + n) % 216 + 16)) "$line"
        fi
        r=$((r + 1))
    done
    printf '\033[0m'
    n=$((n + 1))
    # SIGTERM reaches the whole process group, `date` too: keep the last time that came back.
    now=$(date +%s.%N) && [ -n "$now" ] && last=$now
    [ "$mode" = rows ] && sleep 0.033
done
finish
