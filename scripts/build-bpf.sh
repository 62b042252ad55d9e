#!/usr/bin/env bash
# Builds the kernel observer's eBPF objects that flushlab commits and embeds, so that
# `cargo build` and `cargo install` need no clang and no libbpf headers:
#   crates/flushlab-observer/bpf/flushlab-kernel.bpf.o        (kernel.bpf.c)
#   crates/flushlab-observer/bpf/flushlab-kernel-floor.bpf.o  (the same, -DFLUSHLAB_FLOOR)
#   crates/flushlab-observer/bpf/STAMP                         (what they were built from)
# with the pinned compiler: Debian 12's clang 14.0.6 and libbpf-dev 1.1.2 (its headers are
# inputs too). Paths are mapped out of the debug info, so the objects are the same wherever
# they are built; they are not stripped (the CO-RE relocations are in .BTF.ext).
#
#   scripts/build-bpf.sh          rebuild them in place
#   scripts/build-bpf.sh --check  rebuild them in a scratch directory and compare, byte for
#                                 byte, and the stamp with the sources: CI's check
set -euo pipefail
cd "$(dirname "$0")/../crates/flushlab-observer"

readonly CLANG_WANTED="Debian clang version 14.0.6"
readonly LIBBPF_WANTED="1:1.1.2-0+deb12u1"
readonly REBUILD="scripts/build-bpf.sh"

check=""
case "${1:-}" in
    "") ;;
    --check) check=1 ;;
    *)
        echo "build-bpf.sh: '$1' is not an option: --check, or nothing" >&2
        exit 2
        ;;
esac

# What the objects are built from: the sources' sums, the flags, the compiler and headers.
flags=(-O2 -g -target bpf -Wall -Werror -idirafter /usr/include/x86_64-linux-gnu
    "-fdebug-prefix-map=$PWD=." "-fdebug-prefix-map=/usr/include=include")
stamp() {
    sha256sum kernel.bpf.c record.h
    echo "flags: ${flags[*]/$PWD/SOURCE}"
    echo "clang: $CLANG_WANTED"
    echo "libbpf-dev: $LIBBPF_WANTED"
}

if [[ -n "$check" ]] && ! diff <(stamp) bpf/STAMP >/dev/null; then
    echo "the kernel observer's committed objects are older than kernel.bpf.c or record.h: run $REBUILD" >&2
    exit 1
fi

# Another compiler or other headers build other bytes: a rebuild needs the pinned ones. The
# check, where they are missing (a distribution's point release moved them), holds the stamp
# alone and says so: it cannot tell the committed objects wrong.
missing=""
clang_said=$(clang --version 2>/dev/null | head -n 1 || true)
if [[ "$clang_said" != "$CLANG_WANTED"* ]]; then
    missing="$CLANG_WANTED (this machine has '${clang_said:-no clang}': apt-get install clang-14)"
fi
libbpf_said=$(dpkg-query -W -f '${Version}' libbpf-dev 2>/dev/null || true)
if [[ "$libbpf_said" != "$LIBBPF_WANTED" ]]; then
    missing="${missing:+$missing, }libbpf-dev $LIBBPF_WANTED (this machine has '${libbpf_said:-none}')"
fi
if [[ -n "$missing" && -n "$check" ]]; then
    echo "build-bpf.sh --check: the stamp holds; the objects were not rebuilt to compare: needs $missing"
    exit 0
elif [[ -n "$missing" ]]; then
    echo "build-bpf.sh: the objects are built with $missing" >&2
    exit 2
fi

out=bpf
if [[ -n "$check" ]]; then
    out=$(mktemp -d)
    trap 'rm -rf -- "$out"' EXIT
fi
mkdir -p "$out"
clang "${flags[@]}" -c kernel.bpf.c -o "$out/flushlab-kernel.bpf.o"
clang "${flags[@]}" -DFLUSHLAB_FLOOR -c kernel.bpf.c -o "$out/flushlab-kernel-floor.bpf.o"

if [[ -n "$check" ]]; then
    for object in flushlab-kernel.bpf.o flushlab-kernel-floor.bpf.o; do
        if ! cmp -s "$out/$object" "bpf/$object"; then
            echo "the committed bpf/$object is not what kernel.bpf.c builds to with $CLANG_WANTED: run $REBUILD" >&2
            exit 1
        fi
    done
    echo "the kernel observer's committed objects are what their sources build to"
else
    stamp > bpf/STAMP
    echo "built bpf/flushlab-kernel.bpf.o and bpf/flushlab-kernel-floor.bpf.o; commit them with bpf/STAMP"
fi
