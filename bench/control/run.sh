#!/bin/sh
# Control-surface latency: round trip of `status` over JSON-RPC
# (player.status) and over Tutti's MPD port, and MPD 0.23's own `status`,
# side by side. One connection each, N sequential requests (default 2000),
# p50/p99 in microseconds. A leader with a small library plays a generated
# WAV to one virtual room, so the figures include a real player's state.
#
#   bench/control/run.sh            # N=2000
#   N=5000 bench/control/run.sh
#
# Needs mpd and python3 (scripts/setup.sh). Release build in its own scratch
# folder (TUTTI_BENCH_SCRATCH); the last line is the summary.
set -eu
cd "$(dirname "$0")/../.."
N=${N:-2000}
command -v mpd >/dev/null || { echo "bench/control needs mpd (apt-get install mpd)" >&2; exit 1; }
scratch=${TUTTI_BENCH_SCRATCH:-/tmp/mpd-build}
swift build -c release --product tuttid --scratch-path "$scratch" >&2
tuttid="$scratch/release/tuttid"

work=$(mktemp -d /tmp/tutti-bench-control.XXXXXX)
pids=""
cleanup() { for p in $pids; do kill "$p" 2>/dev/null || true; done; wait 2>/dev/null; rm -rf "$work"; }
trap cleanup EXIT INT TERM

# A 30 s stereo tone, two copies, as the music folder for both servers.
mkdir -p "$work/music"
python3 - "$work/music/a.wav" <<'PY'
import math, struct, sys
rate, secs = 48000, 30
frames = b"".join(struct.pack("<hh", v, v) for v in (int(8000 * math.sin(2 * math.pi * 440 * i / rate)) for i in range(rate * secs)))
hdr = b"RIFF" + struct.pack("<I", 36 + len(frames)) + b"WAVEfmt " + struct.pack("<IHHIIHH", 16, 1, 2, rate, rate * 4, 4, 16) + b"data" + struct.pack("<I", len(frames))
open(sys.argv[1], "wb").write(hdr + frames)
PY
cp "$work/music/a.wav" "$work/music/b.wav"

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
lp=$(free_port); cp=$(free_port); mp=$(free_port); rp=$(free_port)

"$tuttid" leader --listen 127.0.0.1:$lp --control 127.0.0.1:$cp --mpd 127.0.0.1:$mp \
    --music "$work/music" --db "$work/db/library.db" --play "$work/music/a.wav" "$work/music/b.wav" --loop \
    --codec pcm --no-announce --log-level warning 2>"$work/leader.log" &
pids="$pids $!"
"$tuttid" follower --leader 127.0.0.1:$lp --name bench --output "file:$work/room.raw" --no-realtime --log-level warning 2>"$work/follower.log" &
pids="$pids $!"

cat > "$work/mpd.conf" <<CONF
music_directory "$work/music"
db_file "$work/mpd.db"
state_file "$work/mpd.state"
pid_file "$work/mpd.pid"
bind_to_address "127.0.0.1"
port "$rp"
zeroconf_enabled "no"
audio_output {
    type "null"
    name "null"
}
CONF
mpd --no-daemon --stderr "$work/mpd.conf" 2>"$work/mpd.log" &
pids="$pids $!"

wait_port() { for _ in $(seq 100); do python3 -c "import socket; socket.create_connection(('127.0.0.1', $1)).close()" 2>/dev/null && return 0; sleep 0.1; done; echo "port $1 never opened" >&2; exit 1; }
wait_port $cp; wait_port $mp; wait_port $rp
# Real MPD plays too, so both answer the same status fields.
mpc -q -h 127.0.0.1 -p $rp -w update
mpc -q -h 127.0.0.1 -p $rp add / && mpc -q -h 127.0.0.1 -p $rp repeat on && mpc -q -h 127.0.0.1 -p $rp play
sleep 1

set -- $(python3 bench/control/client.py jsonrpc 127.0.0.1 $cp "$N"); jp50=$1; jp99=$2
set -- $(python3 bench/control/client.py mpd 127.0.0.1 $mp "$N"); mp50=$1; mp99=$2
set -- $(python3 bench/control/client.py mpd 127.0.0.1 $rp "$N"); rp50=$1; rp99=$2

echo "status round trip, $N sequential requests on one connection (µs):"
printf '  %-22s p50 %8s  p99 %8s\n' "Tutti JSON-RPC" "$jp50" "$jp99" "Tutti MPD" "$mp50" "$mp99" "MPD $(mpd --version | head -1 | awk '{print $4}')" "$rp50" "$rp99"
echo "control_us jsonrpc_p50=$jp50 jsonrpc_p99=$jp99 mpd_p50=$mp50 mpd_p99=$mp99 realmpd_p50=$rp50 realmpd_p99=$rp99"
