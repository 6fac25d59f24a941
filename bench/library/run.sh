#!/bin/sh
# Library benchmark: Tutti's leader against MPD 0.23 on the same files and
# the same queries, one after the other (bench/library/compare.py).
#
#   bench/library/run.sh                      # 100,000 generated MP3s (made once, kept in /var/tmp)
#   bench/library/run.sh --files 10000        # a smaller generated corpus
#   bench/library/run.sh --music ~/Music      # someone else's collection
#   bench/library/run.sh --music DIR --out bench/library/last-run-mixed.txt
#                                             # a mixed library (MP3, FLAC, AAC, Ogg, Opus; docs/library.md)
#   bench/library/instructions.py OLD/tuttid NEW/tuttid
#                                             # instructions per ranked search under callgrind, two leaders
#                                             # side by side (repeats to 0.1 %; needs valgrind)
#
# Needs lame, mpd and mpc (scripts/setup.sh installs them). Release build;
# the table goes to stdout and bench/library/last-run.txt.
set -eu
cd "$(dirname "$0")/../.."
for tool in lame mpd mpc python3; do
    command -v "$tool" >/dev/null || { echo "bench/library needs $tool (apt-get install $tool)" >&2; exit 1; }
done
swift build -c release --product tuttid >&2
exec python3 bench/library/compare.py "$@"
