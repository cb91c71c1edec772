#!/usr/bin/env bash
# Runs a command with its wall clock moved (libfaketime) to a chosen phase of an interval,
# or to a chosen instant, so that a test whose verdict depends on where the wall clock
# stands (a poller's cycle end, a scheduler's tick, a cron field) can be made to meet the
# bad moment on purpose instead of once in a while.
#
#   scripts/at-phase.sh PERIOD PHASE -- COMMAND [ARGS...]
#       the wall clock stands PHASE seconds into a PERIOD-second interval since the Unix
#       epoch when COMMAND starts (e.g. `60 59.3`: 0.7 s before a minute ends)
#   scripts/at-phase.sh --at 'YYYY-MM-DD hh:mm:ss[.fff]' -- COMMAND [ARGS...]
#       the wall clock stands at that UTC instant when COMMAND starts
#   scripts/at-phase.sh --wait PERIOD PHASE -- COMMAND [ARGS...]
#       no libfaketime: waits until the host's own clock reaches that phase, then starts
#       COMMAND (for a test whose child processes set their own clocks with libfaketime)
#
# The clock then runs on at its normal rate. Only the wall clock moves
# (FAKETIME_DONT_FAKE_MONOTONIC=1): timers, `Instant` and the in-memory backend's lease
# times do not. Run a test binary, not `cargo test` (cargo and rustc would run on the
# moved clock too, and see every file as modified):
#
#   cargo test -p leader-tenant --all-features --test it --no-run   # prints the binary's path
#   scripts/at-phase.sh 60 59.3 -- target/debug/deps/it-<hash> --exact poller_async::<test name>
#
# Child processes inherit the moved clock, except the servers of `leader_rig::fixtures`,
# which run on the host's (a store's clock is not the node's, and Redis' binaries hang under
# libfaketime). A child that sets its own `FAKETIME` offset counts it from the host's clock,
# not from the moved one: run such a test (leader-schedule's processes module) with --wait.
set -euo pipefail

usage() {
    sed -n '2,16p' "$0" >&2
    exit 2
}

[ $# -ge 3 ] || usage
wait=
if [ "$1" = "--wait" ]; then
    wait=1
    shift
fi
now=$(date +%s.%N)
if [ "$1" = "--at" ] && [ -z "$wait" ]; then
    target=$(TZ=UTC date -d "$2" +%s.%N) || usage
    offset=$(awk -v t="$target" -v n="$now" 'BEGIN { printf "%.6f", t - n }')
    where="$2 UTC"
else
    offset=$(awk -v p="$1" -v f="$2" -v n="$now" \
        'BEGIN { if (p <= 0 || f < 0 || f >= p) exit 1; o = f - (n % p); if (o < 0) o += p; printf "%.6f", o }') ||
        usage
    where="${2}s into a ${1}s interval"
fi
shift 2
[ "${1:-}" = "--" ] && shift
[ $# -ge 1 ] || usage

if [ -n "$wait" ]; then
    echo "at-phase: waiting ${offset} s for the host's clock to reach ${where}" >&2
    sleep "$offset"
    exec "$@"
fi

lib=
for candidate in /usr/lib/*/faketime/libfaketime.so.1 /usr/lib/faketime/libfaketime.so.1; do
    if [ -e "$candidate" ]; then
        lib=$candidate
        break
    fi
done
if [ -z "$lib" ]; then
    echo "at-phase: libfaketime.so.1 is not in /usr/lib/*/faketime/ (Debian package libfaketime)" >&2
    exit 1
fi
case $offset in -*) ;; *) offset="+$offset" ;; esac
echo "at-phase: wall clock moved ${offset} s, to ${where}" >&2
LD_PRELOAD="$lib" FAKETIME="${offset}s" FAKETIME_DONT_FAKE_MONOTONIC=1 exec "$@"
