#!/usr/bin/env bash
# bench/snapcast: Debian's stock snapclient (0.26) as a room of a Tutti leader.
#
#   1. its offset from a Tutti speaker on the same stream (click track, Opus),
#   2. pause / play / next heard on the Tutti speaker and on the snapclient,
#      against snapserver 0.26 driving the same snapclient binary,
#   3. the leader's CPU and RSS with 3 Tutti speakers + 3 snapclients, and
#      with the 3 Tutti speakers alone.
#
#   bench/snapcast/run.sh [--seconds 30] [--reps 5] [--cpu-seconds 30] [--runs 1]
#                         [--priority rt|normal] [--keep]
#   TUTTID=/path/to/tuttid bench/snapcast/run.sh     # a given binary, no build
#
# Without TUTTID: swift build -c release --product tuttid (and tutti-follower)
# --scratch-path ${TUTTI_BENCH_SCRATCH:-/tmp/snapcast-bench-build}.
# Needs snapserver, snapclient (0.26) and python3; installs nothing. Everything
# listens on 127.0.0.1; every process started is stopped on exit. See README.md.
set -euo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
REPO=$(cd "$HERE/../.." && pwd)

ARGS=()
while [ $# -gt 0 ]; do
    case "$1" in
        --seconds|--reps|--cpu-seconds|--runs|--warmup)
            [ $# -ge 2 ] || { echo "run.sh: $1 needs a value" >&2; exit 64; }
            [[ $2 =~ ^[0-9]+$ ]] || { echo "run.sh: $1 $2: a whole number" >&2; exit 64; }
            ARGS+=("$1" "$2"); shift 2 ;;
        --priority)
            [ $# -ge 2 ] && [[ $2 =~ ^(rt|normal)$ ]] || { echo "run.sh: --priority rt|normal" >&2; exit 64; }
            ARGS+=("$1" "$2"); shift 2 ;;
        --keep) ARGS+=("$1"); shift ;;
        -h|--help) sed -n '2,17p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
        *) echo "run.sh: unknown option $1 (see --help)" >&2; exit 64 ;;
    esac
done
for tool in snapserver snapclient python3; do
    command -v "$tool" >/dev/null || { echo "bench/snapcast needs $tool (apt-get install -y snapserver snapclient python3)" >&2; exit 1; }
done

if [ -n "${TUTTID:-}" ]; then
    tuttid=$TUTTID
else
    scratch=${TUTTI_BENCH_SCRATCH:-/tmp/snapcast-bench-build}
    echo "building tuttid and tutti-follower (release, $scratch) …" >&2
    (cd "$REPO" && swift build -c release --product tuttid --scratch-path "$scratch" >&2 \
        && swift build -c release --product tutti-follower --scratch-path "$scratch" >&2)
    tuttid=$scratch/release/tuttid
fi
[ -x "$tuttid" ] || { echo "run.sh: no tuttid at $tuttid" >&2; exit 1; }
echo "$(snapserver -v 2>&1 | grep -io 'v[0-9][0-9.]*' | head -1) snapserver, $(snapclient -v 2>&1 | grep -io 'v[0-9][0-9.]*' | head -1) snapclient; tuttid $tuttid; $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg)" >&2

# measure.py lists its children for the trap to stop (children.inc).
. "$HERE/children.inc" snapcast-bench

python3 "$HERE/measure.py" --tuttid "$tuttid" ${ARGS[@]+"${ARGS[@]}"} &
PY_PID=$!
wait "$PY_PID"
