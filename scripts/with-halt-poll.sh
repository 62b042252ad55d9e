#!/usr/bin/env bash
# Runs a command with the guest kernel's halt polling set to NS nanoseconds, then puts the old
# value back (on every way out). On a KVM guest whose idle driver is cpuidle-haltpoll, an idle
# vCPU polls that long for a wake-up before it halts; halted, waking it costs an exit to the
# host and the host's scheduling. This machine boots with 0 (halt at once), and a writer that
# sleeps on a pty pays that at every wake-up: docs/results/writer-wait.md.
#
#   scripts/with-halt-poll.sh NS -- COMMAND [ARGS...]     (root; writes one sysfs parameter)
set -euo pipefail

param=/sys/module/haltpoll/parameters/guest_halt_poll_ns
usage() {
    echo "usage: scripts/with-halt-poll.sh NS -- COMMAND [ARGS...]" >&2
    exit 2
}
[[ $# -ge 3 && "$2" == "--" ]] || usage
ns="$1"
shift 2
if ! [[ "$ns" =~ ^[0-9]{1,10}$ ]]; then
    echo "with-halt-poll.sh: NS '$ns' is not a whole number of nanoseconds (0 to 9999999999)" >&2
    exit 2
fi
if [[ ! -w "$param" ]]; then
    echo "with-halt-poll.sh: $param is not writable (not a cpuidle-haltpoll guest, or not root)" >&2
    exit 2
fi
before="$(cat "$param")"
trap 'echo "$before" > "$param"' EXIT
trap 'exit 130' INT TERM
echo "$ns" > "$param"
echo "with-halt-poll.sh: guest_halt_poll_ns $before -> $ns, put back on exit" >&2
"$@"
