#!/bin/sh
# Line-in over time: a private PulseAudio's null sink is the capture device
# (its monitor, through ALSA's pulse plugin); a real program (paplay) plays a
# 440 Hz tone into it for SECONDS (default 600) while a leader plays the
# input to one room (a file DAC). Every second the leader's reported delay
# from the input to the rooms (player.status bufferedSeconds) is sampled.
# Prints its min/median/max, its drift (least-squares slope, ms per hour)
# and the number of 10 ms blocks of the tone the room missed.
#
#   bench/linein/run.sh             # 600 s
#   SECONDS_TO_RUN=60 bench/linein/run.sh
#   TUTTID=.build/release/tuttid bench/linein/run.sh   # a given build
#
# Needs pulseaudio, libasound2-plugins, python3 (scripts/setup.sh).
set -eu
cd "$(dirname "$0")/../.."
secs=${SECONDS_TO_RUN:-600}
if [ -n "${TUTTID:-}" ]; then
    tuttid=$TUTTID # a given build (bench/sync's TUTTID likewise)
else
    scratch=${TUTTI_BENCH_SCRATCH:-/tmp/linein-build}
    swift build -c release --product tuttid --scratch-path "$scratch" >&2
    tuttid="$scratch/release/tuttid"
fi

work=$(mktemp -d /tmp/tutti-bench-linein.XXXXXX)
pids=""
cleanup() { for p in $pids; do kill "$p" 2>/dev/null || true; done; wait 2>/dev/null; tail -5 "$work/leader.log" >&2; rm -rf "$work"; }
trap cleanup EXIT INT TERM

HOME="$work" PULSE_RUNTIME_PATH="$work/run" pulseaudio -n --daemonize=no --exit-idle-time=-1 --use-pid-file=false \
    -L "module-null-sink sink_name=line rate=48000" -L "module-native-protocol-unix socket=$work/pulse.socket auth-anonymous=1" \
    2>"$work/pulse.log" &
pids="$pids $!"
export PULSE_SERVER="unix:$work/pulse.socket"
i=0; until [ -S "$work/pulse.socket" ]; do i=$((i+1)); [ $i -lt 100 ] || { echo "pulseaudio did not start" >&2; exit 1; }; sleep 0.1; done
pactl set-sink-volume line 100%

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
lp=$(free_port); cp=$(free_port)
"$tuttid" leader --listen 127.0.0.1:$lp --control 127.0.0.1:$cp --mpd off --web off --snapcast-stream off --snapcast-control off --snapcast-http off \
    --line-in "pulse:DEVICE=line.monitor" --codec pcm --no-announce --log-level warning 2>"$work/leader.log" &
pids="$pids $!"
"$tuttid" follower --leader 127.0.0.1:$lp --name bench --output "file:$work/room.raw" --log-level warning 2>"$work/follower.log" &
pids="$pids $!"

python3 - "$cp" "$secs" "$work" <<'PY'
import json, math, socket, struct, subprocess, sys, time
port, secs, work = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
def rpc(method, params=None):
    for _ in range(100):
        try:
            s = socket.create_connection(("127.0.0.1", port), timeout=5)
            break
        except OSError:
            time.sleep(0.1)
    else:
        raise SystemExit("the leader does not answer on %d: see its log" % port)
    f = s.makefile("rwb")
    f.write((json.dumps({"jsonrpc": "2.0", "id": 1, "method": method, "params": params or {}}) + "\n").encode()); f.flush()
    while True: # notifications may come first
        r = json.loads(f.readline())
        if r.get("id") == 1: break
    s.close()
    if "error" in r: raise SystemExit("%s: %s" % (method, r["error"]))
    return r["result"]
rpc("queue.add", {"uris": ["line:pulse:DEVICE=line.monitor?name=Bench"]})
rpc("queue.play", {"index": 0})
# The tone, as raw PCM into the sink, in real time (paplay paces itself).
tone = subprocess.Popen(["pacat", "--playback", "--device=line", "--format=s16le", "--rate=48000", "--channels=2", "--latency-msec=20"], stdin=subprocess.PIPE)
import threading
def feed():
    n, block = 0, 4800
    while tone.poll() is None:
        data = b"".join(struct.pack("<hh", v, v) for v in (int(16384 * math.sin(2 * math.pi * 440 * (n + i) / 48000)) for i in range(block)))
        try: tone.stdin.write(data); tone.stdin.flush()
        except (BrokenPipeError, ValueError): return
        n += block
threading.Thread(target=feed, daemon=True).start()
time.sleep(3)
samples = []
start = time.monotonic()
while time.monotonic() - start < secs:
    st = rpc("player.status")
    if "bufferedSeconds" in st: samples.append((time.monotonic() - start, st["bufferedSeconds"] * 1000))
    time.sleep(1)
tone.kill()
ts = [t for t, _ in samples]; ds = sorted(d for _, d in samples)
n = len(samples); mt = sum(ts) / n; md = sum(d for _, d in samples) / n
slope = sum((t - mt) * (d - md) for t, d in samples) / max(1e-9, sum((t - mt) ** 2 for t in ts))
# The room's copy: 10 ms blocks, from 2 s after the tone arrived, without the tone's peak.
raw = open(work + "/room.raw", "rb").read()
left = struct.unpack("<%dh" % (len(raw) // 2), raw)[0::2]
loud = [i for i in range(0, len(left), 48) if abs(left[i]) > 8000]
first = loud[0] + 2 * 48000 if loud else len(left)
missed = sum(1 for b in range(first, len(left) - 96000, 480) if max(abs(x) for x in left[b:b + 480]) < 12000)
print("line-in over %d s: delay to the rooms min %.1f ms, median %.1f ms, max %.1f ms; drift %.2f ms/hour; %d samples; %d of %d 10 ms blocks missed"
      % (secs, ds[0], ds[n // 2], ds[-1], slope * 3600, n, missed, max(0, (len(left) - 96000 - first) // 480)))
PY
