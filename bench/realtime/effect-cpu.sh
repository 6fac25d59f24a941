#!/usr/bin/env bash
# What eq-cpu.sh and reverb-cpu.sh share: a speaker's CPU with one effect on
# against off. One leader (tuttid, PCM so the speaker does no Opus work that
# would hide the effect's) and one speaker (tutti-follower, the real speaker
# binary) on a virtual DAC. The speaker plays SECONDS with the effect off,
# SECONDS on, SECONDS off again; its CPU time is read from /proc (schedstat:
# nanoseconds, all threads, and the playout thread alone).
#
#   bench/realtime/effect-cpu.sh SECONDS NAME -- OFF-ARGS... -- ON-ARGS...
# OFF-ARGS and ON-ARGS are `tutti` commands for the room "bench" (e.g.
# `eq bench Flat` and `eq bench Loudness`). BIN=DIR measures release builds
# of yours (tuttid, tutti-follower and tutti in DIR).
set -euo pipefail
cd "$(dirname "$0")/../.."
seconds=$1; name=$2; shift 2
[ "${1:-}" = "--" ] || { echo "usage: effect-cpu.sh SECONDS NAME -- OFF-ARGS... -- ON-ARGS..." >&2; exit 64; }
shift
off=(); while [ $# -gt 0 ] && [ "$1" != "--" ]; do off+=("$1"); shift; done
[ "${1:-}" = "--" ] || { echo "usage: effect-cpu.sh SECONDS NAME -- OFF-ARGS... -- ON-ARGS..." >&2; exit 64; }
shift
on=("$@")
work=$(mktemp -d)
bin=${BIN:-}
if [ -z "$bin" ]; then
  swift build -c release --product tuttid >/dev/null
  swift build -c release --product tutti-follower >/dev/null
  swift build -c release --product tutti >/dev/null
  bin=.build/release
fi
python3 - "$work/music.wav" <<'PY'
import math, random, struct, sys, wave
random.seed(1)
w = wave.open(sys.argv[1], "wb"); w.setnchannels(2); w.setsampwidth(2); w.setframerate(48000)
frames = bytearray()
for i in range(48000 * 10):
    t = i / 48000
    v = 0.2 * math.sin(2 * math.pi * 55 * t) + 0.1 * math.sin(2 * math.pi * 440 * t) + 0.05 * (random.random() - 0.5)
    s = int(max(-1, min(1, v)) * 32767)
    frames += struct.pack("<hh", s, s)
w.writeframes(bytes(frames)); w.close()
PY
port=$((20000 + RANDOM % 20000)); control=$((port + 1))
"$bin/tuttid" leader --play "$work/music.wav" --loop --codec pcm --listen 127.0.0.1:$port --control 127.0.0.1:$control \
  --mpd off --web off --no-announce --log-level warning 2>"$work/leader.err" &
leader=$!
sleep 0.5
"$bin/tutti-follower" --leader 127.0.0.1:$port --name bench --output "file:$work/bench.raw" --log-level warning 2>"$work/follower.err" &
follower=$!
trap 'kill $follower $leader 2>/dev/null; wait 2>/dev/null; rm -rf "$work"' EXIT
sleep 3
tutti() { "$bin/tutti" --port $control "$@" >/dev/null; }

# Nanoseconds on the CPU: the whole process, and its playout thread.
cpu() {
  local total=0 playout=0
  for t in /proc/$follower/task/*; do
    local ns; ns=$(cut -d' ' -f1 "$t/schedstat")
    total=$((total + ns))
    if grep -q tutti-playout "$t/comm"; then playout=$((playout + ns)); fi
  done
  echo "$total $playout"
}
measure() {
  local label=$1
  read -r t0 p0 < <(cpu); local w0; w0=$(date +%s%N)
  sleep "$seconds"
  read -r t1 p1 < <(cpu); local w1; w1=$(date +%s%N)
  local wall=$((w1 - w0))
  echo "$label $(echo "scale=3; 100 * ($t1 - $t0) / $wall" | bc) $(echo "scale=3; 100 * ($p1 - $p0) / $wall" | bc)"
}
tutti "${off[@]}"
a=$(measure off)
tutti "${on[@]}"
b=$(measure on)
tutti "${off[@]}"
c=$(measure off)
echo "speaker (tutti-follower, PCM stream) CPU % of one core over ${seconds} s each: process, playout thread"
printf '%s\n' "$a" "$b" "$c"
read -r _ fa pa <<<"$a"; read -r _ fb pb <<<"$b"; read -r _ fc pc <<<"$c"
echo "$name costs $(echo "scale=3; $fb - ($fa + $fc) / 2" | bc) % of one core (process), $(echo "scale=3; $pb - ($pa + $pc) / 2" | bc) % (playout thread)"
