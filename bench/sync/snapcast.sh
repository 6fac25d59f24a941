#!/usr/bin/env bash
# bench/sync/snapcast.sh: Snapcast 0.26 (Debian) on issue 11's cases, through the same relay.
#
#   bench/sync/snapcast.sh [--seconds N] [--runs R | --seeds S,S,...] [--relay c|python] [--keep] [CASE ...]
#                          (cases: clean jitter bursts loss; default all; --runs R = seeds 1..R)
#
# snapserver (pipe source fed in real time, Opus, its default 1000 ms buffer)
# and 3 snapclients, each through its own relay port (relay.c, built with cc,
# or relay.py, with the same options as in cases.sh, seeded 1..R), a 4th snapclient at +20 s;
# prints one 'case' line per case and run as it finishes. Needs snapserver,
# snapclient and python3; installs nothing. Every process started is stopped
# on exit. See README.md ("Snapcast through the same relay").
set -euo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
SECS=60 RUNS=1 SEEDS= CASES=() EXTRA=() RELAY_KIND=c
while [ $# -gt 0 ]; do
    case "$1" in
        --seconds) SECS=$2; shift 2 ;;
        --runs) RUNS=$2; shift 2 ;;
        --seeds) SEEDS=$2; shift 2 ;;
        --keep) EXTRA+=(--keep); shift ;;
        --relay) RELAY_KIND=$2; shift 2 ;;
        -h|--help) sed -n 2,12p "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
        -*) echo "snapcast.sh: unknown option $1 (see --help)" >&2; exit 64 ;;
        *) CASES+=("$1"); shift ;;
    esac
done
[[ $SECS =~ ^[0-9]+$ && $RUNS =~ ^[0-9]+$ && $SEEDS =~ ^([0-9]+(,[0-9]+)*)?$ ]] \
    || { echo "snapcast.sh: --seconds and --runs take whole numbers, --seeds a list such as 1,2,3" >&2; exit 64; }
[ -n "$SEEDS" ] || SEEDS=$(seq -s, 1 "$RUNS")
[ ${#CASES[@]} -gt 0 ] || CASES=(clean jitter bursts loss)
case "$RELAY_KIND" in
    c) RELAY_BIN=$(mktemp /tmp/snapcast-sync-relay.XXXXXX)
       cc -O2 -pthread -o "$RELAY_BIN" "$HERE/relay.c" -lm || { echo "snapcast.sh: cannot build relay.c (cc); --relay python runs without it" >&2; exit 1; }
       export SYNC_RELAY=$RELAY_BIN ;;
    python) RELAY_BIN= ;;
    *) echo "snapcast.sh: --relay c or python" >&2; exit 64 ;;
esac
for tool in snapserver snapclient python3; do
    command -v "$tool" >/dev/null || { echo "snapcast.sh needs $tool (apt-get install -y snapserver snapclient python3)" >&2; exit 1; }
done

# snapcast_sync.py lists its children for the trap to stop (children.inc),
# which also removes the relay it built.
. "$HERE/../snapcast/children.inc" snapcast-sync
CLEANUP_FILES+=(${RELAY_BIN:+"$RELAY_BIN"})

# The same cases as cases.sh.
. "$HERE/cases.inc"
echo "$(snapserver -v 2>&1 | grep -io 'v[0-9][0-9.]*' | head -1) snapserver, $(snapclient -v 2>&1 | grep -io 'v[0-9][0-9.]*' | head -1) snapclient; $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg)" >&2
for r in ${SEEDS//,/ }; do
    for c in "${CASES[@]}"; do
        case_args "$c" snapcast.sh
        echo "== $c, seed $r" >&2
        python3 "$HERE/snapcast_sync.py" --case "$c" --seed "$r" --seconds "$SECS" ${EXTRA[@]+"${EXTRA[@]}"} \
            -- ${args[@]+"${args[@]}"} &
        PY_PID=$!
        wait "$PY_PID" || echo "case $c: run failed (seed $r)"
        PY_PID=
        : >"$PIDFILE"
    done
done
