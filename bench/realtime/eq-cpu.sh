#!/usr/bin/env bash
# A speaker's CPU with its EQ on against flat (effect-cpu.sh does the work).
#
#   bench/realtime/eq-cpu.sh [SECONDS] [PRESET]      (default 30, Loudness)
set -euo pipefail
preset=${2:-Loudness}
exec "$(dirname "$0")/effect-cpu.sh" "${1:-30}" "EQ $preset" -- eq bench Flat -- eq bench "$preset"
