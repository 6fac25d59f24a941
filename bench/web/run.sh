#!/bin/sh
# Benchmark of the phone web app (web/) in headless Chromium at phone size
# (390x844) against a real leader: time to first render and to interactive
# (cold and warm), bytes of the first screen, mpc command -> page latency
# (volume and pause/play, split into leader -> page and page rendering), and
# the leader's memory with 1 and 10 pages open. See bench/web/README.md.
#
#   bench/web/run.sh [--commands 100] [--runs 3] [--pages 10]
#   TUTTID=path/to/tuttid bench/web/run.sh          # skip the build
#   KEEP_WORK=1 bench/web/run.sh                     # keep the leader's log (/tmp/web-bench-leader.log)
#
# Builds release tuttid and tutti-follower in $TUTTI_BENCH_SCRATCH
# (default /tmp/web-bench-build), makes a small tagged MP3 library with
# covers, starts a leader (--music --db --control --mpd --web, no mDNS) and
# two speakers on file DACs (kitchen, living), plays an album, and runs
# bench/web/measure.py with /usr/bin/python3 (Debian's python3-selenium,
# chromium, chromium-driver; lame and mpc). Kills all it started on exit.
set -eu
cd "$(dirname "$0")/../.."
repo=$(pwd)
commands=100 runs=3 pages=10
while [ $# -gt 0 ]; do
    case "$1" in
        --commands) commands=${2:?--commands needs a value}; shift 2 ;;
        --runs) runs=${2:?--runs needs a value}; shift 2 ;;
        --pages) pages=${2:?--pages needs a value}; shift 2 ;;
        -h|--help) sed -n '2,16p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
        *) echo "bench/web: unknown option $1 (see --help)" >&2; exit 2 ;;
    esac
done
for tool in /usr/bin/python3 /usr/bin/chromium /usr/bin/chromedriver /usr/bin/lame /usr/bin/mpc; do
    [ -x "$tool" ] || { echo "bench/web needs $tool: scripts/setup.sh (or apt-get install python3-selenium chromium chromium-driver lame mpc)" >&2; exit 1; }
done
/usr/bin/python3 -c 'import selenium' 2>/dev/null || { echo "bench/web needs python3-selenium (apt-get install python3-selenium)" >&2; exit 1; }

if [ -n "${TUTTID:-}" ]; then
    tuttid=$TUTTID
else
    scratch=${TUTTI_BENCH_SCRATCH:-/tmp/web-bench-build}
    # tutti-follower too: `tuttid follower` runs it when it sits beside tuttid.
    # Others may edit the sources meanwhile ("modified during the build"): try again, up to 3 times.
    for product in tuttid tutti-follower; do
        n=1
        until swift build -c release --product "$product" --scratch-path "$scratch" >&2; do
            [ $n -lt 3 ] || { echo "bench/web: swift build --product $product failed" >&2; exit 1; }
            n=$((n + 1)); sleep 5
        done
    done
    tuttid="$scratch/release/tuttid"
fi
[ -x "$tuttid" ] || { echo "bench/web: no tuttid at $tuttid" >&2; exit 1; }

work=$(mktemp -d /tmp/web-bench.XXXXXX)
pids=""
cleanup() {
    for p in $pids; do kill "$p" 2>/dev/null || true; done
    for p in $pids; do wait "$p" 2>/dev/null || true; done
    [ -n "${KEEP_WORK:-}" ] && cp "$work/leader.log" /tmp/web-bench-leader.log; rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

echo "bench/web: tuttid $tuttid, repo at $(git -C "$repo" rev-parse --short HEAD)$(git -C "$repo" diff --quiet HEAD -- Sources web 2>/dev/null || echo ' (with uncommitted changes in Sources/ or web/)')"
/usr/bin/python3 bench/web/measure.py make-music "$work/music"

# Four free ports on 127.0.0.1.
set -- $(/usr/bin/python3 -c '
import socket
ss = [socket.socket() for _ in range(4)]
for s in ss: s.bind(("127.0.0.1", 0))
print(" ".join(str(s.getsockname()[1]) for s in ss))')
listen=$1 control=$2 mpd=$3 web=$4

"$tuttid" leader --listen "127.0.0.1:$listen" --control "127.0.0.1:$control" --mpd "127.0.0.1:$mpd" \
    --web "127.0.0.1:$web" --web-root "$repo/web" --music "$work/music" --db "$work/db/library.db" \
    --no-announce --log-level warning >"$work/leader.log" 2>&1 &
leader=$!
pids="$leader"

rpc() { # METHOD [PARAMS-JSON]: one JSON-RPC call on the control port, prints the result
    /usr/bin/python3 -c '
import json, socket, sys
req = {"jsonrpc": "2.0", "id": 1, "method": sys.argv[2]}
if len(sys.argv) > 3: req["params"] = json.loads(sys.argv[3])
s = socket.create_connection(("127.0.0.1", int(sys.argv[1])), timeout=5)
s.sendall((json.dumps(req) + "\n").encode())
for line in s.makefile("r"):
    m = json.loads(line)
    if m.get("id") == 1:
        print(json.dumps(m.get("result", m.get("error"))))
        break' "$control" "$@"
}
wait_for() { # WHAT SECONDS PYTHON-CONDITION-ON-$r...: polls rpc until the condition holds
    what=$1 secs=$2 method=$3 cond=$4
    end=$(( $(date +%s) + secs ))
    while :; do
        kill -0 "$leader" 2>/dev/null || { echo "bench/web: the leader exited:" >&2; cat "$work/leader.log" >&2; exit 1; }
        r=$(rpc "$method" 2>/dev/null || true)
        if [ -n "$r" ] && /usr/bin/python3 -c "import json,sys; r=json.loads(sys.argv[1]); sys.exit(0 if ($cond) else 1)" "$r" 2>/dev/null; then
            return 0
        fi
        [ "$(date +%s)" -lt "$end" ] || { echo "bench/web: timed out waiting for $what (last: $r)" >&2; cat "$work/leader.log" >&2; exit 1; }
        sleep 0.2
    done
}
wait_for "the library scan (20 tracks)" 60 library.stats 'r.get("tracks") == 20'

for room in kitchen living; do
    "$tuttid" follower --leader "127.0.0.1:$listen" --name "$room" --output "file:$work/$room.raw" \
        --no-realtime --log-level warning >"$work/$room.log" 2>&1 &
    pids="$pids $!"
done
wait_for "kitchen and living to join" 20 rooms.list \
    'sorted(x["name"] for x in r["rooms"] if x.get("connected", True)) == ["kitchen", "living"]'

# Play an album with a cover (through the MPD port, as a phone's neighbour would).
mpc -q -p "$mpd" clear
mpc -q -p "$mpd" add "Aurora Lane/Dawn"
mpc -q -p "$mpd" play
mpc -q -p "$mpd" volume 50
wait_for "playing" 10 player.status 'r.get("state") == "playing"'
sleep 1

echo "$(/usr/bin/chromium --version 2>/dev/null | head -1); $(nproc) cores, load average $(cut -d' ' -f1-3 /proc/loadavg) (figures are noisy on a shared machine)"
echo "leader: http://127.0.0.1:$web (control $control, mpd $mpd), 2 speakers, playing \"$(mpc -p "$mpd" current)\""
/usr/bin/python3 bench/web/measure.py measure --url "http://127.0.0.1:$web/" --control-port "$control" --mpd-port "$mpd" \
    --leader-pid "$leader" --runs "$runs" --commands "$commands" --pages "$pages"
echo "load average at the end: $(cut -d' ' -f1-3 /proc/loadavg)"
