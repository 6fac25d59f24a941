#!/usr/bin/env bash
# Regenerates link/code-order.txt: which functions run, in start-up and in
# steady state, so that the release link puts them together (see leanLink in
# Package.swift and "Memory" in docs/architecture.md). Run it after changes
# that move a lot of code; a stale file only costs memory (names it lists
# that no longer exist are skipped), never correctness.
#
#   scripts/code-order.sh [--skip-build]
#
# Needs valgrind (callgrind) and mpc. About 5 minutes. Three runs, each
# profiled for 40 s of start-up and joining, then 40 s of steady state (the
# way out is not counted):
#   1. a leader streaming a file to three speakers, as bench/resources runs it;
#   2. one speaker (tutti-follower) playing from such a leader;
#   3. a leader as installed: control, MPD, web and Snapcast ports on, a
#      scanned music folder, played from MPD, with an idle MPD client and
#      three speakers.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
scratch=.build/static
if [ "${1:-}" != "--skip-build" ]; then scripts/build-static.sh tutti-follower tuttid; fi
for tool in valgrind callgrind_control mpc objcopy; do
    command -v $tool >/dev/null || { echo "code-order.sh: needs $tool (apt-get install valgrind mpc binutils)" >&2; exit 1; }
done
work=$(mktemp -d /tmp/tutti-code-order.XXXXXX)
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; wait 2>/dev/null || true; rm -rf "$work"; }
trap cleanup EXIT
# Valgrind 3.19 cannot read the toolchain's DWARF 5; the symbol table is enough.
mkdir -p "$work/bin"
objcopy --strip-debug "$scratch/release/tuttid" "$work/bin/tuttid"
objcopy --strip-debug "$scratch/release/tutti-follower" "$work/bin/tutti-follower"
python3 -c "import sys; sys.path.insert(0, 'bench/resources'); import measure; measure.write_track('$work/track.wav')"
port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
profile() { # OUT PROGRAM ARGS...: runs PROGRAM under callgrind in the background
    local out=$1; shift
    valgrind --tool=callgrind --callgrind-out-file="$out.%p" --dump-instr=no --collect-jumps=no --demangle=no \
        "$@" >"$out.log" 2>&1 &
    pids+=($!); profiled=$!
}
speakers() { # PORT NAME-PREFIX
    for i in 1 2 3; do
        "$work/bin/tuttid" follower --leader "127.0.0.1:$1" --name "$2$i" --output "file:$work/$2$i.raw" \
            --no-realtime --log-level warning >"$work/$2$i.log" 2>&1 &
        pids+=($!)
    done
}
halves() { # PID: start-up and joining (OUT.PID.1), then steady state (OUT.PID.2), not the way out
    sleep 40; callgrind_control -d "$1" >/dev/null; sleep 40; callgrind_control -d "$1" >/dev/null
    kill -INT "$1"; wait "$1" || true
}
stream=(--play "$work/track.wav" --loop --codec opus --bitrate 160 --log-level warning)

echo "code-order: 1/3 a leader streaming to three speakers"
p=$(port)
profile "$work/leader.out" "$work/bin/tuttid" leader --listen "127.0.0.1:$p" --control off --mpd off \
    --no-announce "${stream[@]}"
leader=$profiled; sleep 15; speakers "$p" a; halves "$leader"

echo "code-order: 2/3 one speaker"
p=$(port)
"$work/bin/tuttid" leader --listen "127.0.0.1:$p" --control off --mpd off --web off --snapcast-stream off \
    --snapcast-control off --snapcast-http off --no-announce "${stream[@]}" >"$work/plain.log" 2>&1 &
pids+=($!)
sleep 2
profile "$work/speaker.out" "$work/bin/tutti-follower" --leader "127.0.0.1:$p" --name s1 \
    --output "file:$work/s1.raw" --no-realtime --log-level warning
halves "$profiled"

echo "code-order: 3/3 a leader as installed"
mkdir -p "$work/music/Artist/Album"
for n in 1 2 3; do cp "$work/track.wav" "$work/music/Artist/Album/0$n Track $n.wav"; done
p=$(port) c=$(port) m=$(port) w=$(port) s1=$(port) s2=$(port) s3=$(port)
profile "$work/full.out" "$work/bin/tuttid" leader --listen "127.0.0.1:$p" --control "127.0.0.1:$c" \
    --mpd "127.0.0.1:$m" --web "127.0.0.1:$w" --snapcast-stream "127.0.0.1:$s1" --snapcast-control "127.0.0.1:$s2" \
    --snapcast-http "127.0.0.1:$s3" --web-root "$root/web" --music "$work/music" --db "$work/library.db" --no-announce --log-level warning
full=$profiled
for _ in $(seq 60); do mpc -q -p "$m" status >/dev/null 2>&1 && break; sleep 1; done
mpc -q -p "$m" update --wait >/dev/null 2>&1 || true
mpc -q -p "$m" add / && mpc -q -p "$m" repeat on && mpc -q -p "$m" play
mpc -p "$m" idleloop >/dev/null 2>&1 &
pids+=($!)
speakers "$p" f; halves "$full"

python3 scripts/code-order.py link/code-order.txt --binary "$scratch/release/tuttid" --binary "$scratch/release/tutti-follower" \
    --steady "tuttid:$(echo "$work"/leader.out.*.2)" "tutti-follower:$(echo "$work"/speaker.out.*.2)" \
             "tuttid:$(echo "$work"/full.out.*.2)" \
    --start-up "tuttid:$(echo "$work"/leader.out.*.1)" "tutti-follower:$(echo "$work"/speaker.out.*.1)" \
               "tuttid:$(echo "$work"/full.out.*.1)"
# SwiftPM does not know the link reads the file: remove the programs so the next build links them again.
rm -f "$scratch/release/tuttid" "$scratch/release/tutti-follower" "$scratch/release/tutti"
echo "code-order: wrote link/code-order.txt; build again to link with it"
