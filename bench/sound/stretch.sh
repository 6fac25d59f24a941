#!/bin/sh
# The leader's CPU for a stretched stream: librubberband through
# TimeStretcher, per engine (faster = R2, finer = R3), at 1.5× and 0.75×
# speed and +3 semitones, fed in 20 ms chunks as the player does; % of one
# core, median of 3 runs of 20 s of audio. Release build in its own folder.
#
#   bench/sound/stretch.sh
set -eu
cd "$(dirname "$0")/../.."
scratch=${TUTTI_BENCH_SCRATCH:-/tmp/tutti-bench-sound-build}
TUTTI_BENCH=1 swift test -c release --scratch-path "$scratch" --filter 'TuttiAudioTests.TimeStretchBenchmark' 2>&1 \
    | grep -E '^stretch |error|FAIL' | tee bench/sound/last-run.txt
