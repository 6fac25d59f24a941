#!/usr/bin/env bash
# bench/sync/cases.sh: the Wi-Fi cases of issue 11, one line each.
#
#   bench/sync/cases.sh [--seconds N] [--runs R] [--relay c|python] [--sink file|alsa] [CASE ...]
#   (cases: clean jitter bursts loss, NAME/fifo the same in order, NAME/wmm in order
#   with Wi-Fi's WMM on (see cases.inc), load; default all)
#
# Each case is one run.sh (3 followers + a late joiner at +20 s, commands);
# its closing 'case' line is printed as it finishes, R times per case.
# TUTTID as for run.sh (built once here when unset).
set -euo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
REPO=$(cd "$HERE/../.." && pwd)
SECS=60 RUNS=1 CASES=() RELAY_KIND=c SINK=file
while [ $# -gt 0 ]; do
    case "$1" in
        --seconds) SECS=$2; shift 2 ;;
        --runs) RUNS=$2; shift 2 ;;
        --relay) RELAY_KIND=$2; shift 2 ;;
        --sink) SINK=$2; shift 2 ;;
        -h|--help) sed -n 2,10p "$0"; exit 0 ;;
        *) CASES+=("$1"); shift ;;
    esac
done
[ ${#CASES[@]} -gt 0 ] || CASES=(clean jitter bursts loss jitter/fifo bursts/fifo loss/fifo load)
if [ -z "${TUTTID:-}" ]; then
    (cd "$REPO" && swift build -c release --product tuttid >&2 && swift build -c release --product tutti-follower >&2)
    export TUTTID=$REPO/.build/release/tuttid
fi
. "$HERE/cases.inc"
for ((r = 1; r <= RUNS; r++)); do
    for c in "${CASES[@]}"; do
        case_args "$c" cases.sh
        out=$("$HERE/run.sh" --seconds "$SECS" --seed "$r" --case "$c" --relay "$RELAY_KIND" --sink "$SINK" ${args[@]+"${args[@]}"} 2>/dev/null) || true
        grep '^case ' <<<"$out" || echo "case $c: run failed"
    done
done
