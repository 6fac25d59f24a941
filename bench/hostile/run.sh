#!/bin/sh
# Hostile peers from one host (127.0.0.2) on every port of a leader, while
# the clients that are not attacking (127.0.0.1) are measured: a control
# client's round trip, a phone page and its logged-in WebSocket, the speaker
# already playing, a new speaker joining, and the leader's memory and threads.
#
#   bench/hostile/run.sh [--seconds 30] [--idle 300] [--slow 5] [--sockets 100] [--commands 100000]
#   TUTTID=/path/to/tuttid bench/hostile/run.sh --idle 1000
#
# The leader has a password and asks it on loopback too
# (--password-on-loopback), so that 127.0.0.2 is a stranger that must log
# in, as a device on the LAN would be. Without TUTTID it builds
# `swift build -c release --product tuttid`.
set -eu
cd "$(dirname "$0")/../.."
if [ -z "${TUTTID:-}" ]; then
    swift build -c release --product tuttid >/dev/null
    TUTTID=.build/release/tuttid
fi
TUTTID=$(readlink -f "$TUTTID")
run=$(mktemp -d /tmp/tutti-hostile.XXXXXX)
pids=""
cleanup() { for p in $pids; do kill "$p" 2>/dev/null || true; done; wait 2>/dev/null || true; rm -rf "$run"; }
trap cleanup EXIT INT TERM
python3 - "$run" <<'PY'
import math, struct, sys, wave
w = wave.open(sys.argv[1] + "/A.wav", "wb"); w.setnchannels(2); w.setsampwidth(2); w.setframerate(48000)
w.writeframes(b"".join(struct.pack("<hh", int(3000 * math.sin(2 * math.pi * 440 * i / 48000)), 0) for i in range(48000 * 20)))
PY
password="hostile-bench-$$"
printf '%s\n' "$password" > "$run/password"
base=$(( 20000 + $$ % 20000 ))
stream=$base; control=$((base + 1)); mpd=$((base + 2)); web=$((base + 3)); snap=$((base + 4)); snaphttp=$((base + 5)); snapctl=$((base + 6))
ulimit -n "$(ulimit -Hn)" 2>/dev/null || true
"$TUTTID" leader --listen 127.0.0.1:$stream --control 127.0.0.1:$control --mpd 127.0.0.1:$mpd --web 127.0.0.1:$web \
    --snapcast-stream 127.0.0.1:$snap --snapcast-control 127.0.0.1:$snapctl --snapcast-http 127.0.0.1:$snaphttp \
    --password-file "$run/password" --password-on-loopback \
    --no-announce --db "$run/library.db" --play "$run/A.wav" --loop 2>"$run/leader.log" &
leader=$!; pids="$pids $leader"
sleep 1
"$TUTTID" follower --leader 127.0.0.1:$stream --name bench --output "file:$run/room.raw" --no-realtime 2>"$run/follower.log" &
pids="$pids $!"
sleep 3
python3 bench/hostile/attack.py --pid "$leader" --control "$control" --stream "$stream" --web "$web" \
    --password "$password" --tuttid "$TUTTID" --leader-log "$run/leader.log" --run "$run" \
    --ports "stream=$stream,jsonrpc=$control,mpd=$mpd,web=$web,snapstream=$snap,snapctl=$snapctl,snaphttp=$snaphttp" \
    --timing "$run/room.raw.timing" --out "$run/result.json" "$@"
if [ -n "${KEEP:-}" ]; then cp "$run/result.json" "$KEEP.json"; cp "$run/leader.log" "$KEEP.leader.log"; fi
