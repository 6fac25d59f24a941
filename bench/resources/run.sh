#!/bin/sh
# CPU and memory of Tutti and of Snapcast 0.26 doing the same work: the same
# generated 48 kHz stereo track, looped, streamed as Opus 160 kbps to N rooms
# on 127.0.0.1 that write what they play to raw PCM files. Each system runs
# alone (Tutti first), 5 s warm-up, then the measured window. Prints CPU % of
# one core and RSS (steady and peak) for the stream process and per speaker,
# with Tutti/Snapcast ratios; the last line is the summary.
#
#   bench/resources/run.sh [--seconds 60] [--rooms 3]
#   TUTTID=.build/release/tuttid bench/resources/run.sh     # skip the build
#   FOLLOWER_ARGS="--protocol-version 6" bench/resources/run.sh   # speakers without sealing
#
# Needs snapserver, snapclient (0.26, Debian) and python3; installs nothing.
# Release build in its own scratch folder (TUTTI_BENCH_SCRATCH). See README.md.
set -eu
cd "$(dirname "$0")/../.."
seconds=60 rooms=3
while [ $# -gt 0 ]; do
    case "$1" in
        --seconds) seconds=${2:?--seconds needs a value}; shift 2 ;;
        --rooms) rooms=${2:?--rooms needs a value}; shift 2 ;;
        -h|--help) sed -n '2,13p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
        *) echo "bench/resources: unknown option $1 (see --help)" >&2; exit 2 ;;
    esac
done
for tool in snapserver snapclient python3; do
    command -v "$tool" >/dev/null || {
        echo "bench/resources needs $tool: apt-get install -y snapserver snapclient python3" >&2; exit 1; }
done
if [ -n "${TUTTID:-}" ]; then
    tuttid=$TUTTID
else
    scratch=${TUTTI_BENCH_SCRATCH:-/tmp/tutti-bench-resources-build}
    # tutti-follower too: `tuttid follower` runs it when it sits beside tuttid.
    swift build -c release --product tuttid --scratch-path "$scratch" >&2
    swift build -c release --product tutti-follower --scratch-path "$scratch" >&2
    tuttid="$scratch/release/tuttid"
fi
[ -x "$tuttid" ] || { echo "bench/resources: no tuttid at $tuttid" >&2; exit 1; }
echo "$(snapserver -v 2>&1 | grep -io 'v[0-9][0-9.]*' | head -1) snapserver; tuttid $tuttid" >&2
# FOLLOWER_ARGS="--protocol-version 6": speakers without the handshake (nothing sealed), to price sealing.
extra=""
for a in ${FOLLOWER_ARGS:-}; do extra="$extra --follower-arg=$a"; done
# shellcheck disable=SC2086 # each word of $extra is one option
exec python3 bench/resources/measure.py --tuttid "$tuttid" --seconds "$seconds" --rooms "$rooms" $extra
