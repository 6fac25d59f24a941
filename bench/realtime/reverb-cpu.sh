#!/usr/bin/env bash
# A speaker's CPU with its reverb on against off (effect-cpu.sh does the work).
# The network's cost is the same for every preset and mix above 0: eight lines a frame.
#
#   bench/realtime/reverb-cpu.sh [SECONDS] [PRESET] [MIX]    (default 30, Cathedral, 30)
set -euo pipefail
preset=${2:-Cathedral}; mix=${3:-30}
exec "$(dirname "$0")/effect-cpu.sh" "${1:-30}" "reverb $preset at $mix %" -- reverb bench off -- reverb bench "$preset" "$mix"
