#!/usr/bin/env bash
# Sets up, builds, and runs the main job: a leader and two virtual speakers
# (DACs at -100 and +120 ppm) playing a generated track, printing once a
# second how far apart the speakers are. Extra arguments go to `tuttid demo`
# (default: --seconds 20).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
swift build -c release --product tuttid >/dev/null
args=("$@")
[ ${#args[@]} -gt 0 ] || args=(--seconds 20)
exec .build/release/tuttid demo "${args[@]}"
