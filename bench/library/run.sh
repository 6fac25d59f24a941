#!/bin/sh
# Library benchmark: scan throughput on generated tagged MP3s (empty library
# and unchanged rescan) and search latency over a large library, for Tutti
# and for MPD 0.23 on the same files and queries, side by side.
#
#   bench/library/run.sh                 # 10,000 files, 100,000 tracks
#   TUTTI_BENCH_FILES=2000 TUTTI_BENCH_TRACKS=20000 bench/library/run.sh
#
# Needs lame, mpd and mpc (scripts/setup.sh installs them). Release build in
# its own scratch folder; the figures go to stdout and bench/library/last-run.txt.
set -eu
cd "$(dirname "$0")/../.."
for tool in lame mpd mpc; do
    command -v "$tool" >/dev/null || { echo "bench/library needs $tool (apt-get install $tool)" >&2; exit 1; }
done
scratch=${TUTTI_BENCH_SCRATCH:-/tmp/tutti-bench-library-build}
# swift test (not swift build) so the test targets' @testable imports compile in release.
TUTTI_BENCH=1 swift test -c release --scratch-path "$scratch" \
    --filter 'TuttiLibraryTests.LibraryBenchmarkTests' 2>&1 | tee bench/library/last-run.txt
