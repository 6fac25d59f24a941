#!/bin/sh
# Clients that stop reading must not stall anyone else. For each count S of
# stalled clients (JSON-RPC over TCP and the web app's WebSocket, alternately;
# each sends one request with SO_RCVBUF 4096 and never reads again), a hammer
# sets the speaker room's volume as fast as replies come, and a probe times
# its own rooms.set and player.status round trips, one at a time, for N
# seconds. Printed per S: probe p50/p99/max (ms), the hammer's request
# count, how many stalled clients the leader ended within the window and by
# the end (the hammer goes on after the window, at most --linger s, until
# every one is ended), the reasons it logged, and whether the one speaker
# (a file DAC) played without a gap.
#
#   bench/control/stall.sh                              # 20 s per count, S = 0,1,10,50
#   bench/control/stall.sh --seconds 10 --stalled 0,50 --linger 0
#
# Needs /usr/bin/python3 (standard library only). Release build in its own
# scratch folder (TUTTI_BENCH_SCRATCH); TUTTI_BENCH_KEEP=1 keeps the work
# folder (logs, results.json, room.raw). The last line is the summary. See
# bench/control/README.md.
set -eu
cd "$(dirname "$0")/../.."
seconds=20
stalled=0,1,10,50
linger=60
while [ $# -gt 0 ]; do
    case "$1" in
        --seconds) seconds=$2; shift 2 ;;
        --stalled) stalled=$2; shift 2 ;;
        --linger) linger=$2; shift 2 ;;
        *) echo "usage: bench/control/stall.sh [--seconds N] [--stalled 0,1,10,50] [--linger S]" >&2; exit 2 ;;
    esac
done
py=/usr/bin/python3
scratch=${TUTTI_BENCH_SCRATCH:-/tmp/stall-build}
swift build -c release --product tuttid --scratch-path "$scratch" >&2
swift build -c release --product tutti-follower --scratch-path "$scratch" >&2
tuttid="$scratch/release/tuttid"

work=$(mktemp -d /tmp/tutti-bench-stall.XXXXXX)
pids=""
cleanup() {
    for p in $pids; do kill "$p" 2>/dev/null || true; done
    for p in $pids; do wait "$p" 2>/dev/null || true; done
    if [ -n "${TUTTI_BENCH_KEEP:-}" ]; then echo "kept $work" >&2; else rm -rf "$work"; fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# A 30 s stereo tone, two copies, played in a loop (as run.sh).
$py - "$work/a.wav" <<'PY'
import math, struct, sys
rate, secs = 48000, 30
frames = b"".join(struct.pack("<hh", v, v) for v in (int(8000 * math.sin(2 * math.pi * 440 * i / rate)) for i in range(rate * secs)))
hdr = b"RIFF" + struct.pack("<I", 36 + len(frames)) + b"WAVEfmt " + struct.pack("<IHHIIHH", 16, 1, 2, rate, rate * 4, 4, 16) + b"data" + struct.pack("<I", len(frames))
open(sys.argv[1], "wb").write(hdr + frames)
PY
cp "$work/a.wav" "$work/b.wav"

free_port() { $py -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
lp=$(free_port); cp=$(free_port); mp=$(free_port); wp=$(free_port)

# --web-root: the scratch folder is outside the checkout, so tuttid would not find web/ beside itself.
"$tuttid" leader --listen 127.0.0.1:$lp --control 127.0.0.1:$cp --mpd 127.0.0.1:$mp --web 127.0.0.1:$wp --web-root "$PWD/web" \
    --play "$work/a.wav" "$work/b.wav" --loop --codec opus --no-announce --log-level info 2>"$work/leader.log" &
pids="$pids $!"
"$tuttid" follower --leader 127.0.0.1:$lp --name bench --output "file:$work/room.raw" --no-realtime 2>"$work/follower.log" &
follower=$!
pids="$pids $follower"

# Ready once the speaker is connected and the tone is heard.
$py - $cp <<'PY'
import json, socket, sys, time
deadline = time.monotonic() + 20
while time.monotonic() < deadline:
    try:
        s = socket.create_connection(("127.0.0.1", int(sys.argv[1])), timeout=2)
        f = s.makefile("rwb")
        def call(method):
            f.write(b'{"jsonrpc":"2.0","id":1,"method":"%s"}\n' % method.encode()); f.flush()
            while True:
                line = json.loads(f.readline())
                if line.get("id") == 1:
                    return line["result"]
        rooms = call("rooms.list")["rooms"]
        if call("player.status")["state"] == "playing" and any(r["name"] == "bench" and r["connected"] for r in rooms):
            sys.exit(0)
        s.close()
    except (OSError, ValueError, KeyError):
        pass
    time.sleep(0.2)
sys.exit("the leader and its speaker were not playing after 20 s")
PY
sleep 2 # past the speaker's start-up silence

echo "$(date -u +%FT%TZ) $(git rev-parse --short HEAD 2>/dev/null || echo '?'): $seconds s per count, stalled $stalled (load: $(cut -d' ' -f1-3 /proc/loadavg))"
$py bench/control/stall.py phases --control $cp --web $wp --leader-log "$work/leader.log" \
    --seconds "$seconds" --stalled "$stalled" --linger "$linger" --out "$work/results.json"

# The follower closes its files on SIGTERM; then the whole log can be read.
kill -TERM $follower; wait $follower 2>/dev/null || true
$py bench/control/stall.py report "$work/results.json" --timing "$work/room.raw.timing" --raw "$work/room.raw"
echo "(load after: $(cut -d' ' -f1-3 /proc/loadavg))"
