#!/bin/bash
# Two network namespaces joined by a veth pair: a "home" host running the
# leader as the packages configure it (deploy/tutti.conf: speakers = paired)
# and a "LAN" host (10.231.7.2) with devices of all sorts, each namespace
# with its own D-Bus bus and avahi-daemon. Checks, one "ok" line each:
#   - from the LAN, the leader's control (JSON-RPC, MPD) is unreachable and
#     the web API wants a login; a v6 client (no handshake) sending a room
#     command is refused; an unpaired speaker is held, hears nothing, and is
#     not a room; denied, it is refused;
#   - pairing by code (`tutti-follower pair` on the LAN host, `tutti
#     speakers pair CODE` on the leader) and by approval (`tutti speakers
#     allow`) both work, and the approved speaker plays;
#   - a rogue leader on the LAN host, announced over mDNS under a name that
#     sorts first ("!x"), gets nothing from a paired speaker that finds its
#     leader over mDNS, which plays for the real one.
#
#   scripts/netns-pairing-test.sh BIN_DIR REPO
#
# BIN_DIR holds tuttid, tutti-follower and tutti. Needs root, ip (iproute2),
# unshare, dbus-daemon, avahi-daemon and /usr/bin/python3. Exit 0: every
# check passed; 1: one failed ("FAIL ..."); 77: network namespaces are not
# available here (the message says why). Everything is removed on exit.
set -u
BIN=${1:?usage: netns-pairing-test.sh BIN_DIR REPO}
REPO=${2:?usage: netns-pairing-test.sh BIN_DIR REPO}
PY=/usr/bin/python3
H=tutti-home-$$
L=tutti-lan-$$
VH=tth$$
VL=ttl$$
HA=10.231.7.1
LA=10.231.7.2
W=$(mktemp -d /tmp/tutti-netns.XXXXXX)
PIDS=()

fail() { echo "FAIL $*"; for f in "$W"/*.log "$W"/*/*.log; do [ -f "$f" ] && { echo "--- $f"; tail -n 15 "$f"; }; done; exit 1; }
ok() { printf 'ok   %-28s %s\n' "$1" "$2"; }
cleanup() {
    # Everything this test started runs in one of its two namespaces.
    for ns in "$H" "$L"; do ip netns pids "$ns" 2>/dev/null | xargs -r kill 2>/dev/null; done
    for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null; done
    sleep 0.5
    for ns in "$H" "$L"; do ip netns pids "$ns" 2>/dev/null | xargs -r kill -9 2>/dev/null; done
    for p in "${PIDS[@]}"; do kill -9 "$p" 2>/dev/null; done
    ip netns del "$H" 2>/dev/null
    ip netns del "$L" 2>/dev/null
    rm -rf "$W"
}
trap cleanup EXIT
trap 'exit 1' INT TERM

[ "$(id -u)" = 0 ] || { echo "SKIP: network namespaces need root"; exit 77; }
ip netns add "$H" 2>"$W/netns.err" || { echo "SKIP: ip netns is unavailable here: $(cat "$W/netns.err")"; exit 77; }
ip netns add "$L" || fail "ip netns add $L"
ip link add "$VH" type veth peer name "$VL" || fail "cannot make a veth pair"
ip link set "$VH" netns "$H" && ip link set "$VL" netns "$L" || fail "cannot move the veth ends"
ip -n "$H" addr add "$HA/24" dev "$VH"; ip -n "$H" link set "$VH" up; ip -n "$H" link set lo up
ip -n "$L" addr add "$LA/24" dev "$VL"; ip -n "$L" link set "$VL" up; ip -n "$L" link set lo up
ip -n "$L" route get "$HA" >/dev/null || fail "the LAN host has no route to the home host"

# In a namespace: run with that namespace's D-Bus bus.
in_ns() { local ns=$1 dir=$2; shift 2; ip netns exec "$ns" env DBUS_SYSTEM_BUS_ADDRESS="unix:path=$dir/bus" "$@"; }
start_avahi() {
    local ns=$1 dir=$2 iface=$3
    mkdir -p "$dir" /run/avahi-daemon
    printf '[server]\nhost-name=%s\nuse-ipv4=yes\nuse-ipv6=no\nallow-interfaces=%s,lo\n[wide-area]\nenable-wide-area=no\n[publish]\npublish-hinfo=no\npublish-workstation=no\npublish-aaaa-on-ipv4=no\n' \
        "$ns" "$iface" > "$dir/avahi.conf"
    ip netns exec "$ns" dbus-daemon --system --address="unix:path=$dir/bus" --nopidfile --fork || fail "dbus-daemon in $ns"
    # Its own /run/avahi-daemon (pid file, socket), so the daemons never meet.
    ip netns exec "$ns" unshare -m sh -c "mount -t tmpfs tmpfs /run/avahi-daemon && DBUS_SYSTEM_BUS_ADDRESS=unix:path=$dir/bus exec avahi-daemon -f $dir/avahi.conf --no-drop-root --no-chroot --no-rlimits" \
        > "$dir/avahi.log" 2>&1 &
    PIDS+=($!)
    for _ in $(seq 1 300); do
        in_ns "$ns" "$dir" dbus-send --system --dest=org.freedesktop.Avahi --print-reply / org.freedesktop.Avahi.Server.GetState 2>/dev/null | grep -q 'int32 2' && return 0
        sleep 0.05
    done
    fail "avahi-daemon in $ns did not start"
}
start_avahi "$H" "$W/home" "$VH"
start_avahi "$L" "$W/lan" "$VL"
# The dbus-daemons forked away: find them to stop them.
for p in $(pgrep -f "dbus-daemon --system --address=unix:path=$W/"); do PIDS+=("$p"); done
ok "two hosts" "$HA (home) and $LA (LAN), an avahi-daemon each"

# Whether ROOM is a connected room of the home leader.
connected() { home_tutti --json rooms | $PY -c "import json, sys; sys.exit(0 if any(r.get('name') == sys.argv[1] and r.get('connected') for r in json.load(sys.stdin)) else 1)" "$1"; }

# A 30 s tone, never silent.
mkdir -p "$W/music" "$W/leader"
$PY - "$W/music/tone.wav" <<'EOF'
import math, struct, sys
rate, n = 48000, 48000 * 30
data = bytearray()
for i in range(n):
    v = int(8000 * math.sin(2 * math.pi * 440 * i / rate))
    data += struct.pack('<hh', v, v)
hdr = b'RIFF' + struct.pack('<I', 36 + len(data)) + b'WAVEfmt ' + struct.pack('<IHHIIHH', 16, 1, 2, rate, rate * 4, 4, 16) + b'data' + struct.pack('<I', len(data))
open(sys.argv[1], 'wb').write(hdr + data)
EOF

# The leader, as the packages configure it (paths moved into the work folder).
in_ns "$H" "$W/home" "$BIN/tuttid" leader --config "$REPO/deploy/tutti.conf" --music "$W/music" --db "$W/leader/library.db" \
    --play "$W/music/tone.wav" --loop --name "Tutti home $$" --log-level debug > "$W/leader.log" 2>&1 &
PIDS+=($!)
home_tutti() { in_ns "$H" "$W/home" timeout 15 "$BIN/tutti" "$@"; }
for _ in $(seq 1 600); do home_tutti --json status >/dev/null 2>&1 && break; sleep 0.1; done
home_tutti --json status >/dev/null 2>&1 || fail "the leader did not start"
grep -q "speakers: paired ones only" "$W/leader.log" || fail "the leader is not in paired mode"
ok "leader" "deploy/tutti.conf: speakers = paired"

# From the LAN: control and MPD are not reachable, the web API wants a login.
lan_py() { ip netns exec "$L" timeout 20 $PY -c "$1"; }
lan_py "
import socket, sys
for port in (4954, 6600):
    try:
        socket.create_connection(('$HA', port), timeout=2).close(); sys.exit('port %d answered' % port)
    except OSError: pass
" || fail "control or MPD reachable from the LAN"
web=$(lan_py "
import json, urllib.request, urllib.error
req = urllib.request.Request('http://$HA:8080/api', data=json.dumps({'jsonrpc':'2.0','id':1,'method':'player.next'}).encode(), headers={'Content-Type':'application/json'})
try: print(urllib.request.urlopen(req, timeout=5).read().decode())
except urllib.error.HTTPError as e: print(e.code, e.read().decode())
")
echo "$web" | grep -qi "log in\|password\|401\|403" || fail "the web API from the LAN did not ask for a login: $web"
ok "control from the LAN" "JSON-RPC and MPD closed, web API: login needed"

# A v6 client (no handshake) that says hello and presses 'next'.
reject=$(lan_py "
import socket, struct
def frame(t, body): return struct.pack('>IB', len(body) + 1, t) + body
s = socket.create_connection(('$HA', 4953), timeout=5)
name = b'intruder'
s.sendall(frame(1, struct.pack('>H', 6) + struct.pack('>H', len(name)) + name) + frame(12, struct.pack('>H', 4) + b'next'))
data = b''
while True:
    chunk = s.recv(4096)
    if not chunk: break
    data += chunk
print('reject' if len(data) > 4 and data[4] == 3 else 'types %s' % data[4:5])
")
[ "$reject" = reject ] || fail "a v6 client was not rejected: $reject"
grep -q "refused 'intruder'" "$W/leader.log" || fail "the leader did not log the refusal"
ok "v6 client with a command" "rejected before any command"

# An unpaired speaker on the LAN: held, silent, not a room; then denied.
lan_speaker() { # NAME STATE [ARGS...]
    local name=$1 state=$2; shift 2
    mkdir -p "$state"
    in_ns "$L" "$W/lan" "$BIN/tutti-follower" --config "$REPO/deploy/tutti.conf" --name "$name" --state "$state" \
        --output "file:$W/$name.raw" --no-realtime "$@" > "$W/$name.log" 2>&1 &
    PIDS+=($!)
}
lan_speaker stranger "$W/stranger" --leader "$HA"
for _ in $(seq 1 100); do home_tutti speakers | grep -q "pending.stranger" && break; sleep 0.1; done
home_tutti speakers | grep -q "pending.stranger" || fail "the stranger's request is not listed"
sleep 2
connected stranger && fail "an unpaired speaker became a room"
heard=$($PY -c "import sys; d=open(sys.argv[1],'rb').read() if __import__('os').path.exists(sys.argv[1]) else b''; print(sum(1 for i in range(0, len(d) - 1, 2) if d[i:i+2] != b'\0\0'))" "$W/stranger.raw")
[ "$heard" = 0 ] || fail "the unpaired speaker played $heard non-zero samples"
strangerpid=${PIDS[-1]}
home_tutti speakers deny stranger >/dev/null || fail "speakers deny"
for _ in $(seq 1 50); do grep -q "denied" "$W/stranger.log" && break; sleep 0.1; done
grep -q "denied" "$W/stranger.log" || fail "the stranger was not told it was denied"
kill "$strangerpid" 2>/dev/null  # it would ask again at once
ok "unpaired speaker" "held, 0 samples heard, not a room, then denied"

# Pairing by code: the speaker shows a code, it is typed on the leader.
mkdir -p "$W/den"
in_ns "$L" "$W/lan" "$BIN/tutti-follower" pair --config "$REPO/deploy/tutti.conf" --name den --state "$W/den" --leader "$HA" \
    > "$W/den-pair.out" 2> "$W/den-pair.log" &
pairpid=$!
PIDS+=($pairpid)
for _ in $(seq 1 100); do grep -q "Pairing code" "$W/den-pair.out" && break; sleep 0.1; done
code=$(sed -n 's/^Pairing code: \([0-9]\{3\}\) \([0-9]\{3\}\).*/\1\2/p' "$W/den-pair.out")
[ -n "$code" ] || fail "tutti-follower pair showed no code: $(cat "$W/den-pair.out")"
for _ in $(seq 1 100); do home_tutti speakers | grep -q "pending.den" && break; sleep 0.1; done
wrong=000000; [ "$code" = 000000 ] && wrong=000001
home_tutti speakers pair "$wrong" > /dev/null 2>&1 && fail "a wrong code paired"
out=$(home_tutti speakers pair "${code:0:3} ${code:3:3}") || fail "speakers pair $code: $out"
wait "$pairpid"; status=$?
[ "$status" = 0 ] || fail "tutti-follower pair exited $status"
[ -s "$W/den/leader.pub" ] || fail "the speaker did not keep the leader's key"
ok "pair by code" "one wrong code, then $out"

# Pairing by approval, then it plays.
lan_speaker kitchen "$W/kitchen" --leader "$HA"
for _ in $(seq 1 100); do home_tutti speakers | grep -q "pending.kitchen" && break; sleep 0.1; done
home_tutti speakers allow kitchen > /dev/null || fail "speakers allow kitchen"
for _ in $(seq 1 100); do connected kitchen && break; sleep 0.1; done
sleep 3
heard=$($PY -c "import sys; d=open(sys.argv[1],'rb').read(); print(sum(1 for i in range(0, len(d) - 1, 2) if d[i:i+2] != b'\0\0'))" "$W/kitchen.raw")
[ "$heard" -gt 48000 ] || fail "the allowed speaker played only $heard non-zero samples"
ok "pair by approval" "kitchen joined and played $heard non-zero samples"

# A rogue leader on the LAN host, announced as "!x …" (first by name).
in_ns "$L" "$W/lan" "$BIN/tuttid" leader --listen 0.0.0.0:4960 --control off --mpd off --web off --snapcast-stream off \
    --snapcast-control off --snapcast-http off --play "$W/music/tone.wav" --loop --name "!x rogue $$" > "$W/rogue.log" 2>&1 &
PIDS+=($!)
sleep 2
lan_speaker den "$W/den"   # leader = auto (mDNS), paired with the home leader by code above
for _ in $(seq 1 200); do connected den && break; sleep 0.1; done
connected den || fail "the paired speaker did not find its leader over mDNS"
grep -q "found leader 'Tutti home $$'" "$W/den.log" || fail "den did not pick the home leader by its key"
if grep -q "'den'" "$W/rogue.log"; then
    grep "'den'" "$W/rogue.log" | grep -vq "is not the one this speaker is paired with" && fail "the rogue got more than a goodbye: $(grep "'den'" "$W/rogue.log")"
fi
ok "rogue leader over mDNS" "den ignored '!x rogue', joined the home leader; the rogue got no proof"
exit 0
