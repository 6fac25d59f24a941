#!/bin/sh
# "Play here" in step with the house: headless Chromium as a room, its clicks
# (recorded from a PulseAudio null sink with parec) against a speaker's file
# DAC, over several runs; prints each run's median and p99 offset and the
# runs' together. The method is in docs/web.md ("Play here", "Measured").
#
#   bench/web/playhere.sh [--runs 5] [--seconds 30] [--no-realtime] [--codec opus|pcm]
#   TUTTID=path/to/tuttid bench/web/playhere.sh      # skip the build
#
# --no-realtime leaves PulseAudio and Chromium's audio service at ordinary
# priority (on a loaded two-core machine their output then underruns).
# --codec opus (the default: the page is on http://127.0.0.1, a secure
# origin, and decodes Opus with WebCodecs) or pcm (AudioDecoder deleted
# before the app loads, as on plain http on the LAN); each run prints the
# audio bytes per second the page received.
set -eu
cd "$(dirname "$0")/../.."
repo=$(pwd)
runs=5 seconds=30 realtime=--realtime codec=opus
while [ $# -gt 0 ]; do
    case "$1" in
        --runs) runs=${2:?--runs needs a value}; shift 2 ;;
        --seconds) seconds=${2:?--seconds needs a value}; shift 2 ;;
        --no-realtime) realtime=""; shift ;;
        --codec) codec=${2:?--codec needs opus or pcm}; shift 2
                 case "$codec" in opus|pcm) ;; *) echo "bench/web/playhere: --codec opus or pcm" >&2; exit 2 ;; esac ;;
        -h|--help) sed -n '2,16p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
        *) echo "bench/web/playhere: unknown option $1 (see --help)" >&2; exit 2 ;;
    esac
done
for tool in /usr/bin/python3 /usr/bin/chromium /usr/bin/chromedriver /usr/bin/lame /usr/bin/pulseaudio /usr/bin/parec; do
    [ -x "$tool" ] || { echo "bench/web/playhere needs $tool: scripts/setup.sh" >&2; exit 1; }
done
if [ -z "${TUTTID:-}" ]; then
    swift build --product tuttid >&2
    TUTTID=$repo/.build/debug/tuttid
fi
work=$(mktemp -d /tmp/playhere-bench.XXXXXX)
pids=""
cleanup() {
    for p in $pids; do kill "$p" 2>/dev/null || true; done
    for p in $pids; do wait "$p" 2>/dev/null || true; done
    rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# An album "Clicks": two 60 s MP3s, a 2 ms 2 kHz burst every 250 ms.
/usr/bin/python3 - "$work" <<'PY'
import os, struct, subprocess, sys
w = sys.argv[1]
n = 48000 * 60
buf = bytearray(n * 4)
for start in range(0, n, 12000):
    for i in range(96):
        v = 24000 if (i // 12) % 2 == 0 else -24000
        struct.pack_into('<hh', buf, (start + i) * 4, v, v)
hdr = b'RIFF' + struct.pack('<I', 36 + len(buf)) + b'WAVEfmt ' + struct.pack('<IHHIIHH', 16, 1, 2, 48000, 192000, 4, 16) + b'data' + struct.pack('<I', len(buf))
open(w + '/clicks.wav', 'wb').write(hdr + bytes(buf))
os.makedirs(w + '/music/Clicks')
for k, t in enumerate(["Click One", "Click Two"]):
    subprocess.run(["lame", "--quiet", "-b", "192", "--tt", t, "--ta", "Metronome", "--tl", "Clicks", "--tn", str(k + 1),
                    w + '/clicks.wav', w + '/music/Clicks/0%d.mp3' % (k + 1)], check=True)
PY
port() { /usr/bin/python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
listen=$(port) control=$(port) web=$(port)
"$TUTTID" leader --listen 127.0.0.1:$listen --control 127.0.0.1:$control --mpd off --web 127.0.0.1:$web --web-root "$repo/web" \
    --music "$work/music" --db "$work/library.db" --state "$work/state" --codec opus >"$work/leader.log" 2>&1 &
pids="$pids $!"
until grep -q "scan of" "$work/leader.log" 2>/dev/null; do sleep 0.1; done
"$TUTTID" follower --leader 127.0.0.1:$listen --name kitchen --output "file:$work/kitchen.raw" >"$work/follower.log" 2>&1 &
pids="$pids $!"
until grep -q "follower kitchen joined" "$work/leader.log" 2>/dev/null; do sleep 0.1; done

out="$work/runs.txt"
webcodecs=""
[ "$codec" = pcm ] && webcodecs=--no-webcodecs
i=1
while [ $i -le "$runs" ]; do
    /usr/bin/python3 Tests/Web/playhere_test.py --url "http://127.0.0.1:$web" --control-port "$control" --dac "$work/kitchen.raw" \
        --seconds "$seconds" --bound-ms 1000 --verbose $realtime --codec "$codec" $webcodecs | tee -a "$out" |
        grep -E "^(ok sync|ok heard|ok codec|FAIL|     steps)" | sed "s/^/run $i: /"
    i=$((i + 1))
done
/usr/bin/python3 - "$out" "$codec" <<'PY'
import statistics, sys
xs = []
for line in open(sys.argv[1]):
    if line.startswith("offsets (ms): "):
        xs += [float(x) for x in line.split(": ", 1)[1].split()]
if xs:
    s = sorted(abs(x) for x in xs)
    print("all runs (%s): %d clicks, browser − speaker median %+.2f ms, |p99| %.2f ms, |max| %.2f ms" % (
        sys.argv[2], len(xs), statistics.median(xs), s[min(len(s) - 1, round(0.99 * (len(s) - 1)))], s[-1]))
PY
