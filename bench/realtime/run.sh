#!/usr/bin/env bash
# Proves the playout (audio) thread is real-time clean: runs `tuttid demo`
# (a leader and two followers on virtual DACs) with an LD_PRELOAD shim that
# counts heap allocations and mutex locks made on threads named
# "tutti-playout", second by second. After start-up both must be zero.
# Also prints the demo's CPU time and peak memory.
#
#   bench/realtime/run.sh [SECONDS] [--eq PRESET] [--channels MAP|pair] [--reverb PRESET[:MIX]] [--announce]
#                                   (default 30 s, flat, stereo; TUTTID=PATH: a build of yours)
#
# With --eq every speaker plays through that EQ preset (e.g. Loudness: ten
# active bands), so the counts cover the equaliser's kernel and its
# coefficient hand-off too. With --channels every speaker plays that channel
# map (left, mono, …), or `pair` makes the two one stereo pair: the counts
# cover the channel-map kernel and its crossfade. With --reverb every speaker
# plays through that reverb preset (e.g. Cathedral:40): the counts cover the
# reverb's network, its mix ramps and its seqlock hand-off. With --announce a 2 s chime is
# mixed over the music of both speakers every 4 s (the overlay ring, the duck
# and its ramps).
set -euo pipefail
cd "$(dirname "$0")/../.."
seconds=30
eq=()
channels=()
reverb=()
announce=()
while [ $# -gt 0 ]; do
  case "$1" in
    --eq) eq=(--eq "$2"); shift 2 ;;
    --channels) channels=(--channels "$2"); shift 2 ;;
    --reverb) reverb=(--reverb "$2"); shift 2 ;;
    --announce) announce=(--announce); shift ;;
    *) seconds=$1; shift ;;
  esac
done
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
gcc -O2 -shared -fPIC -o "$work/rtcount.so" bench/realtime/rtcount.c
# TUTTID=PATH measures a tuttid built already (the packaged build: scripts/build-static.sh).
bin=${TUTTID:-}
if [ -z "$bin" ]; then
  swift build -c release --product tuttid >/dev/null
  bin=.build/release/tuttid
fi

# The shim goes into tuttid alone (not into `time`, whose exit would overwrite the counts).
/usr/bin/time -f "%e %U %S %M" -o "$work/time" env RTCOUNT_OUT="$work/counts" LD_PRELOAD="$work/rtcount.so" \
  "$bin" demo --seconds "$seconds" --codec opus --dir "$work/demo" "${eq[@]}" "${channels[@]}" "${reverb[@]}" "${announce[@]}" >"$work/demo.out" 2>"$work/demo.err"
tail -n 1 "$work/demo.out"
read -r wall user sys rss <"$work/time"
awk -v warm=2 '
  { c += $4; if ($1 < warm) { sa += $2; sl += $3 } else { a += $2; l += $3; n++ } }
  END {
    printf "check: the leader source thread made %d allocations meanwhile (the counter does see Swift allocations)\n", c
    printf "playout thread, first %d s (start-up): %d allocations, %d mutex locks\n", warm, sa, sl
    printf "playout thread, next %d s (steady state): %d allocations, %d mutex locks\n", n, a, l
  }' "$work/counts"
cpu=$(echo "$user + $sys" | bc)
echo "EQ: ${eq[1]:-flat (bypassed)}; channels: ${channels[1]:-stereo}; reverb: ${reverb[1]:-off}; announcements: $([ ${#announce[@]} -gt 0 ] && echo "a 2 s chime every 4 s" || echo none)"
echo "demo process (leader + 2 followers, opus): wall ${wall}s, cpu ${cpu}s ($(echo "scale=1; 100 * $cpu / $wall" | bc)% of one core), peak RSS $((rss / 1024)) MiB"
steady=$(awk -v warm=2 '$1 >= warm { a += $2; l += $3 } END { print a + l }' "$work/counts")
echo "realtime steady_allocs_plus_locks=$steady"
