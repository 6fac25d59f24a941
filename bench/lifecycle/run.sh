#!/bin/bash
# The leader's runtime shape, measured (issue 33): threads of an idle leader
# with every surface on (library, web, MPD, JSON-RPC, Snapcast), threads with
# N speakers playing, and SIGTERM with them playing: how long the leader takes
# to exit, whether every speaker logged its goodbye, and the threads left.
#
#   bench/lifecycle/run.sh [--bin DIR] [--rooms N] [--runs K] [--load]
#
# --load runs two busy loops beside it (a loaded 2-core board). Prints one
# line per run. Needs the built tuttid and tutti-follower (release: DIR=.build/release).
set -u
BIN=.build/release; ROOMS=16; RUNS=3; LOAD=0
while [ $# -gt 0 ]; do
    case $1 in
        --bin) BIN=$2; shift ;;
        --rooms) ROOMS=$2; shift ;;
        --runs) RUNS=$2; shift ;;
        --load) LOAD=1 ;;
        *) echo "unknown option $1" >&2; exit 64 ;;
    esac
    shift
done
command -v ffmpeg >/dev/null || { echo "needs ffmpeg" >&2; exit 1; }
WORK=$(mktemp -d)
trap 'pkill -P $$ 2>/dev/null; rm -rf "$WORK"' EXIT
mkdir -p "$WORK/music"
ffmpeg -loglevel error -f lavfi -i sine=440:d=30 "$WORK/music/tone.mp3"
ffmpeg -loglevel error -f lavfi -i sine=440:d=30 "$WORK/tone.wav"
LOADERS=()
if [ $LOAD = 1 ]; then for i in 1 2; do (while :; do :; done) & LOADERS+=($!); done; fi

threads() { ls /proc/$1/task | wc -l; }

for run in $(seq 1 "$RUNS"); do
    D="$WORK/run$run"; mkdir -p "$D"
    P=$((20000 + RANDOM % 20000))
    "$BIN/tuttid" leader --listen 127.0.0.1:$P --control 127.0.0.1:$((P+1)) --mpd 127.0.0.1:$((P+2)) --web 127.0.0.1:$((P+3)) \
        --snapcast-stream 127.0.0.1:$((P+4)) --snapcast-control 127.0.0.1:$((P+5)) --snapcast-http 127.0.0.1:$((P+6)) \
        --web-root "$PWD/web" --no-announce --no-airplay --music "$WORK/music" --db "$D/library.db" 2> "$D/leader.log" &
    L=$!
    sleep 3
    IDLE=$(threads $L)
    # Something to play in every room: the tone, looping.
    printf '{"jsonrpc":"2.0","id":1,"method":"queue.add","params":{"uris":["%s"]}}\n{"jsonrpc":"2.0","id":2,"method":"player.play"}\n{"jsonrpc":"2.0","id":3,"method":"options.set","params":{"repeat":true}}\n' "$WORK/tone.wav" \
        | timeout 3 python3 -c 'import socket,sys; s=socket.create_connection(("127.0.0.1",'$((P+1))')); s.sendall(sys.stdin.buffer.read()); s.settimeout(2)
try:
    while s.recv(65536): pass
except Exception: pass' >/dev/null 2>&1
    for i in $(seq 1 "$ROOMS"); do
        "$BIN/tutti-follower" --leader 127.0.0.1:$P --name room$i --no-realtime --output "file:$D/r$i.raw" 2> "$D/s$i.log" &
    done
    sleep 6
    PLAYING=$(for i in $(seq 1 "$ROOMS"); do [ "$(stat -c %s "$D/r$i.raw" 2>/dev/null || echo 0)" -gt 192000 ] && echo y; done | wc -l)
    BUSY=$(threads $L)
    t0=$(date +%s%N); kill -TERM $L; wait $L; RC=$?; t1=$(date +%s%N)
    sleep 1
    BYE=$(grep -l 'leader closed the connection: leader stopping' "$D"/s*.log 2>/dev/null | wc -l)
    LEFT=$(grep -o 'stopped in [0-9]* ms, [0-9]* other threads left' "$D/leader.log" | tail -1)
    echo "run $run: idle $IDLE threads; $PLAYING/$ROOMS rooms playing, $BUSY threads; SIGTERM: exit $RC after $(( (t1 - t0) / 1000000 )) ms, $BYE/$ROOMS speakers logged the goodbye; $LEFT"
    pkill -f "tutti-follower --leader 127.0.0.1:$P " 2>/dev/null
    sleep 1
done
for p in "${LOADERS[@]}"; do kill "$p"; done
