#!/bin/sh
# Hostile peers on every port of a leader while a speaker plays: idle
# connections by the hundred, slowloris writers, oversized lines and frames,
# random bytes. Prints the control round trip and the leader's memory
# without and with the attack, and whether the speaker went silent.
#
#   bench/hostile/run.sh [--seconds 30] [--idle 200] [--slow 5]
#   TUTTID=/path/to/tuttid bench/hostile/run.sh
#
# Without TUTTID it builds `swift build -c release --product tuttid`.
set -eu
cd "$(dirname "$0")/../.."
if [ -z "${TUTTID:-}" ]; then
    swift build -c release --product tuttid >/dev/null
    TUTTID=.build/release/tuttid
fi
run=$(mktemp -d /tmp/tutti-hostile.XXXXXX)
pids=""
cleanup() { for p in $pids; do kill "$p" 2>/dev/null || true; done; wait 2>/dev/null || true; rm -rf "$run"; }
trap cleanup EXIT INT TERM
python3 - "$run" <<'PY'
import math, struct, sys, wave
w = wave.open(sys.argv[1] + "/A.wav", "wb"); w.setnchannels(2); w.setsampwidth(2); w.setframerate(48000)
w.writeframes(b"".join(struct.pack("<hh", int(3000 * math.sin(2 * math.pi * 440 * i / 48000)), 0) for i in range(48000 * 20)))
PY
base=$(( 20000 + $$ % 20000 ))
stream=$base; control=$((base + 1)); mpd=$((base + 2)); web=$((base + 3)); snap=$((base + 4)); snaphttp=$((base + 5)); snapctl=$((base + 6))
"$TUTTID" leader --listen 127.0.0.1:$stream --control 127.0.0.1:$control --mpd 127.0.0.1:$mpd --web 127.0.0.1:$web \
    --snapcast-stream 127.0.0.1:$snap --snapcast-control 127.0.0.1:$snapctl --snapcast-http 127.0.0.1:$snaphttp \
    --no-announce --db "$run/library.db" --play "$run/A.wav" --loop 2>"$run/leader.log" &
leader=$!; pids="$pids $leader"
sleep 1
"$TUTTID" follower --leader 127.0.0.1:$stream --name bench --output "file:$run/room.raw" --no-realtime 2>"$run/follower.log" &
pids="$pids $!"
sleep 3
python3 bench/hostile/attack.py --pid "$leader" --control "$control" \
    --ports "stream=$stream,jsonrpc=$control,mpd=$mpd,web=$web,snapcast=$snapctl" \
    --timing "$run/room.raw.timing" --out "$run/result.json" "$@"
