#!/bin/sh
# Faults survived, one line per case with its result and time to recover:
# kill -9 of a playing leader (state back, speaker rejoins), kill -9 of a
# speaker, 100 power cuts (kill -9 at random moments of playlist saves and
# scans, then PRAGMA integrity_check and every acknowledged save), damaged
# databases at start, the music disk unplugged and back, a full disk (root:
# a small tmpfs), the speaker's DAC missing and unplugged. See
# Tests/Faults/faults.py for each case.
#
#   bench/faults/run.sh [--power-cuts 100] [--case leader-kill ...]
#   TUTTID=/path/to/tuttid bench/faults/run.sh
set -eu
cd "$(dirname "$0")/../.."
if [ -z "${TUTTID:-}" ]; then
    swift build -c release --product tuttid >/dev/null
    TUTTID=.build/release/tuttid
fi
exec python3 Tests/Faults/faults.py --tuttid "$TUTTID" "$@"
