#!/bin/bash
# A cold scan of a big library while a client searches: the repro of a heap
# corruption seen in release builds (glibc "corrupted size vs. prev_size",
# found 2026-12-07). Each run starts a fresh leader on the corpus
# bench/library/compare.py makes (100,000 MP3s), has a JSON-RPC client call
# library.search every 0.25 s, and waits until the scan is logged done
# (+4 s) or the leader dies. Prints alive/DEAD per run and the scan's time.
# The cause was a stale tuttid main.o in an incrementally built tree (it
# allocated the Leader 8 bytes smaller than Leader.init writes; see
# docs/architecture.md, "Finding your way"), not the scan or the search:
# a binary built from scratch, or with Package.swift's full dependency
# lists, survives. Kept as a check of a release binary under load.
#
#   bench/library/scan-under-search.sh [--tuttid PATH] [--runs N] [--corpus DIR]
set -u
TUTTID=.build/release/tuttid; RUNS=4; CORPUS=/var/tmp/tutti-bench-corpus-100000
while [ $# -gt 0 ]; do
    case $1 in
        --tuttid) TUTTID=$2; shift ;;
        --runs) RUNS=$2; shift ;;
        --corpus) CORPUS=$2; shift ;;
        *) echo "unknown option $1" >&2; exit 64 ;;
    esac
    shift
done
[ -d "$CORPUS/music" ] || python3 bench/library/corpus.py --files 100000 --out "$CORPUS"
WORK=$(mktemp -d)
trap 'kill $(jobs -p) 2>/dev/null; rm -rf "$WORK"' EXIT
: > "$WORK/none.conf"
cat > "$WORK/search.py" <<'PY'
import json, socket, sys, time
port, seconds = int(sys.argv[1]), float(sys.argv[2])
start, n = time.time(), 0
try:
    r = socket.create_connection(("127.0.0.1", port)); rf = r.makefile("rb")
    while time.time() - start < seconds:
        n += 1
        r.sendall(json.dumps({"jsonrpc": "2.0", "id": n, "method": "library.search", "params": {"query": "lo", "limit": 50}}).encode() + b"\n")
        if not rf.readline(): raise ConnectionError("closed")
        time.sleep(0.25)
except Exception as e:
    print("client:", e, round(time.time() - start, 1), "s")
PY
for i in $(seq 1 "$RUNS"); do
    P0=$((30000 + RANDOM % 20000))
    rm -f "$WORK"/library.db* "$WORK"/state.db*
    "$TUTTID" leader --music "$CORPUS/music" --db "$WORK/library.db" --mpd 127.0.0.1:$P0 --control 127.0.0.1:$((P0+1)) \
        --listen 127.0.0.1:$((P0+2)) --web off --snapcast-stream off --snapcast-control off --snapcast-http off --no-announce \
        --log-level info --config "$WORK/none.conf" 2> "$WORK/leader.log" &
    L=$!
    for _ in $(seq 1 100); do (exec 3<>/dev/tcp/127.0.0.1/$((P0+1))) 2>/dev/null && break; sleep 0.1; done
    python3 "$WORK/search.py" $((P0+1)) 300 & C=$!
    t=0; done_at=""
    while kill -0 $L 2>/dev/null && [ $t -lt 600 ]; do
        if [ -z "$done_at" ] && grep -q 'scan of' "$WORK/leader.log"; then done_at=$t; fi
        if [ -n "$done_at" ] && [ $((t - done_at)) -ge 8 ]; then break; fi
        sleep 0.5; t=$((t+1))
    done
    scan=$(grep -o 'in [0-9.]* s$' "$WORK/leader.log" | head -1)
    if kill -0 $L 2>/dev/null; then
        echo "run $i: alive (scan ${scan:-not done})"; kill $L; wait $L 2>/dev/null
    else
        echo "run $i: DEAD $(grep -m1 'corrupt\|double free\|Fatal\|cannot start' "$WORK/leader.log") (scan ${scan:-not done})"
        cp "$WORK/leader.log" "/tmp/scan-under-search-dead-$i.log"
    fi
    kill $C 2>/dev/null; wait $C 2>/dev/null
done
