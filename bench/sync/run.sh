#!/usr/bin/env bash
# bench/sync: how closely do followers play the same sample at the same instant?
#
# Starts a leader and N followers on 127.0.0.1, each follower on a virtual DAC
# with its own crystal error and a simulated system clock offset and skew,
# plays a generated click track, then measures from what every DAC actually
# played: per pair of followers the median/p95/p99/max difference between the
# instants each click left each DAC; how long a late joiner takes to fall in
# step; and, when the leader has a control port, how long pause/play/next/
# seek/previous take to be heard. See bench/sync/README.md.
#
# Last line:  sync_us median=… p99=… max=… pause_ms=… next_ms=…
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
REPO=$(cd "$HERE/../.." && pwd)

usage() {
    cat <<'EOF'
usage: bench/sync/run.sh [OPTIONS]

  --seconds N          run length after the followers start (default 60; the issue's target is 600)
  --warmup S           seconds of clicks to ignore at the start (default 3)
  --followers N        number of followers (default 3)
  --ppm LIST           DAC crystal errors, comma-separated (default -150,0,150)
  --offsets-ms LIST    simulated clock offsets (default 3000,-2000,7500)
  --skews-ppm LIST     simulated clock skews (default 50,-50,20)
  --late-join S        start one more follower S s after the others (default 20 when
                       --seconds >= 40, else off; 0 = off)
  --reps N             command repetitions (pause, play, next, seek 0, previous), 0 = none
                       (default: as many as fit, at most 10)
  --codec opus|pcm     wire codec (default opus)
  --buffer-ms N        leader buffer (default: the leader's)
  --impair D,J         relay every follower (TCP and UDP) through relay.py: D±J ms each way, uniform
  --down SPEC          delay leader -> follower: uniform:M,H | normal:M,SD |
                       burst:LO,HI,EVERY_MS,STALL_LO,STALL_HI (see relay.py); implies the relay
  --up SPEC            delay follower -> leader (same forms)
  --loss P             loss 0..1 (UDP: dropped; TCP: held one RTO, 200 ms, doubled in a row)
  --reorder P          UDP datagrams held 10 ms longer with probability P
  --order independent|fifo   independent (default): datagrams have their own delays and overtake;
                       fifo: one queue per direction for TCP and UDP, as Wi-Fi sends (issue 30)
  --voice SPEC         Wi-Fi WMM: datagrams marked DSCP EF (the clock's) in a queue of their own
                       with this delay, never behind the best-effort one (relay.c only)
  --rate-kbps K        bandwidth cap per direction
  --seed N             relay seed (default 1)
  --relay c|python     which relay carries the impairments (default c: relay.c, built
                       here with cc; python: relay.py, whose own scheduling adds
                       0.1-2 ms of its own, differently each way; see relay.c)
  --case NAME          name printed on the closing 'case' line (default: the impairment)
  --sink file|alsa     file: tuttid's virtual DAC (default); alsa: vdac ALSA PCMs
  --no-realtime        pass --no-realtime to the followers
  --clock-log          followers log their clock model's true error each second (debug level)
  --keep               keep the run directory (printed at the end)
  -h, --help           this text

Environment: TUTTID=/path/to/tuttid (default: build with swift build -c release
--product tuttid in the repository and use .build/release/tuttid).
EOF
}

SECONDS_RUN=60 WARMUP=3 NFOLLOWERS=3 PPMS="" OFFSETS="" SKEWS="" LATE="" REPS="auto"
CODEC=opus BUFFER_MS="" IMPAIR="" SINK=file REALTIME=1 KEEP=0 CLOCK_LOG=0
VOICE="" DOWN="" UP="" LOSS=0 REORDER=0 RATE=0 SEED=1 CASE="" RELAY_KIND=c ORDER=independent
die() { echo "run.sh: $*" >&2; exit 64; }
while [ $# -gt 0 ]; do
    case "$1" in
        --seconds|--warmup|--followers|--ppm|--offsets-ms|--skews-ppm|--late-join|--reps|--codec|--buffer-ms|--impair|--sink|--down|--up|--loss|--reorder|--rate-kbps|--seed|--case|--relay|--order|--voice)
            [ $# -ge 2 ] || die "$1 needs a value (see --help)" ;;
    esac
    case "$1" in
        --seconds) SECONDS_RUN=$2; shift 2 ;;
        --warmup) WARMUP=$2; shift 2 ;;
        --followers) NFOLLOWERS=$2; shift 2 ;;
        --ppm) PPMS=$2; shift 2 ;;
        --offsets-ms) OFFSETS=$2; shift 2 ;;
        --skews-ppm) SKEWS=$2; shift 2 ;;
        --late-join) LATE=$2; shift 2 ;;
        --reps) REPS=$2; shift 2 ;;
        --codec) CODEC=$2; shift 2 ;;
        --buffer-ms) BUFFER_MS=$2; shift 2 ;;
        --impair) IMPAIR=$2; shift 2 ;;
        --sink) SINK=$2; shift 2 ;;
        --down) DOWN=$2; shift 2 ;;
        --up) UP=$2; shift 2 ;;
        --loss) LOSS=$2; shift 2 ;;
        --reorder) REORDER=$2; shift 2 ;;
        --rate-kbps) RATE=$2; shift 2 ;;
        --seed) SEED=$2; shift 2 ;;
        --case) CASE=$2; shift 2 ;;
        --relay) RELAY_KIND=$2; shift 2 ;;
        --order) ORDER=$2; shift 2 ;;
        --voice) VOICE=$2; shift 2 ;;
        --no-realtime) REALTIME=0; shift ;;
        --clock-log) CLOCK_LOG=1; shift ;;
        --keep) KEEP=1; shift ;;
        -h|--help) usage; exit 0 ;;
        *) echo "run.sh: unknown option $1" >&2; usage >&2; exit 64 ;;
    esac
done

isnum() { [[ $1 =~ ^-?[0-9]+([.][0-9]+)?$ ]]; }
isnum "$SECONDS_RUN" && [[ $SECONDS_RUN =~ ^[0-9]+$ ]] && [ "$SECONDS_RUN" -ge 10 ] || die "--seconds: a whole number >= 10"
isnum "$WARMUP" || die "--warmup: a number"
[[ $NFOLLOWERS =~ ^[0-9]+$ ]] && [ "$NFOLLOWERS" -ge 2 ] || die "--followers: at least 2"
case "$CODEC" in opus|pcm) ;; *) die "--codec: opus or pcm" ;; esac
case "$SINK" in file|alsa) ;; *) die "--sink: file or alsa" ;; esac
case "$RELAY_KIND" in c|python) ;; *) die "--relay: c or python" ;; esac
case "$ORDER" in independent|fifo) ;; *) die "--order: independent or fifo" ;; esac
[ "$REPS" = auto ] || [[ $REPS =~ ^[0-9]+$ ]] || die "--reps: a whole number"
if [ -z "$LATE" ]; then
    if [ "$SECONDS_RUN" -ge 40 ]; then LATE=20; else LATE=0; fi
fi
isnum "$LATE" || die "--late-join: a number of seconds"
awk -v l="$LATE" -v s="$SECONDS_RUN" 'BEGIN { exit !(l == 0 || l + 5 <= s) }' \
    || die "--late-join $LATE leaves less than 5 s of the run"
if [ -n "$IMPAIR" ]; then
    [[ $IMPAIR =~ ^[0-9]+([.][0-9]+)?,[0-9]+([.][0-9]+)?$ ]] || die "--impair: DELAY_MS,JITTER_MS"
fi
[ "$REPS" = auto ] && REPS=10
RELAY=0
RELAY_ARGS=(--seed "$SEED" --loss "$LOSS" --reorder "$REORDER" --rate-kbps "$RATE" --order "$ORDER")
[ -n "$IMPAIR" ] && { RELAY=1; RELAY_ARGS+=(--impair "$IMPAIR"); }
[ -n "$DOWN" ] && { RELAY=1; RELAY_ARGS+=(--down "$DOWN"); }
[ -n "$UP" ] && { RELAY=1; RELAY_ARGS+=(--up "$UP"); }
[ -n "$VOICE" ] && { [ "$RELAY_KIND" = c ] || die "--voice: relay.c only (--relay c)"; RELAY_ARGS+=(--voice "$VOICE"); }
awk -v l="$LOSS" -v r="$REORDER" -v k="$RATE" 'BEGIN { exit !(l > 0 || r > 0 || k > 0) }' && RELAY=1
if [ -z "$CASE" ]; then
    CASE=clean
    [ "$RELAY" = 1 ] && CASE="impair=${IMPAIR:--} down=${DOWN:--} up=${UP:--} loss=$LOSS reorder=$REORDER rate=$RATE order=$ORDER"
fi
for list in "$PPMS" "$OFFSETS" "$SKEWS"; do
    [ -z "$list" ] || [ "$(tr -cd , <<<"$list" | wc -c)" -eq $((NFOLLOWERS - 1)) ] \
        || die "list '$list' needs $NFOLLOWERS comma-separated values (one per follower)"
done

# Per-follower figures: given lists, or spread/cycled defaults for N followers.
pick() {   # pick LIST INDEX DEFAULT_CYCLE...
    local list=$1 i=$2; shift 2
    if [ -n "$list" ]; then
        IFS=, read -r -a xs <<<"$list"
        echo "${xs[$i]}"
    else
        local d=("$@"); echo "${d[$((i % ${#d[@]}))]}"
    fi
}
default_ppm() {   # -150 … +150 evenly
    if [ "$NFOLLOWERS" -eq 3 ]; then local d=(-150 0 150); echo "${d[$1]}"
    else awk -v i="$1" -v n="$NFOLLOWERS" 'BEGIN { printf "%g", -150 + 300 * i / (n - 1) }'; fi
}
NAMES=() FPPM=() FOFF=() FSKEW=()
for ((i = 0; i < NFOLLOWERS; i++)); do
    NAMES+=("f$((i + 1))")
    if [ -n "$PPMS" ]; then FPPM+=("$(pick "$PPMS" "$i")"); else FPPM+=("$(default_ppm "$i")"); fi
    FOFF+=("$(pick "$OFFSETS" "$i" 3000 -2000 7500 -4500 1200)")
    FSKEW+=("$(pick "$SKEWS" "$i" 50 -50 20 -35 10)")
done
for v in "${FPPM[@]}" "${FOFF[@]}" "${FSKEW[@]}"; do isnum "$v" || die "not a number: $v"; done
# The late joiner: another crystal and clock.
LATE_PPM=80 LATE_OFF=-4500 LATE_SKEW=-30

# --- tuttid ---
if [ -z "${TUTTID:-}" ]; then
    echo "building tuttid (swift build -c release --product tuttid) …" >&2
    (cd "$REPO" && swift build -c release --product tuttid >&2 && swift build -c release --product tutti-follower >&2)
    TUTTID=$REPO/.build/release/tuttid
fi
[ -x "$TUTTID" ] || die "TUTTID=$TUTTID is not an executable"

# --- run directory, processes, cleanup ---
# On tmpfs when there is one: the file "DACs" write in real time, and a write
# held up by the disk (dirty-page throttling while something else builds)
# shows up as a DAC late by milliseconds, which is not what is measured.
RUNROOT=${TUTTI_SYNC_RUNROOT:-$( [ -d /dev/shm ] && [ -w /dev/shm ] && echo /dev/shm || echo /tmp )}
TMP=$(mktemp -d "$RUNROOT/tutti-sync.XXXXXX")
PIDS=()
stop_pid() {   # TERM, then KILL after 3 s; only processes this script started
    local pid=$1 n=0
    kill -0 "$pid" 2>/dev/null || return 0
    kill -TERM "$pid" 2>/dev/null || true
    while kill -0 "$pid" 2>/dev/null && [ $n -lt 30 ]; do sleep 0.1; n=$((n + 1)); done
    kill -KILL "$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
}
cleanup() {
    local rc=$?
    trap - EXIT INT TERM
    [ -n "${SLEEP_PID:-}" ] && kill "$SLEEP_PID" 2>/dev/null
    for pid in "${PIDS[@]}"; do stop_pid "$pid"; done
    if [ "$KEEP" = 1 ]; then echo "run directory kept: $TMP" >&2; else rm -rf "$TMP"; fi
    exit $rc
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
U() { python3 "$HERE/util.py" "$@"; }

# --- signal ---
TRACK_SECONDS=120
python3 "$HERE/gen_signal.py" "$TMP" --seconds "$TRACK_SECONDS"

# --- ports ---
NEXTRA=0; [ "$LATE" != 0 ] && NEXTRA=1
read -r -a PORTS <<<"$(U ports $((2 + NFOLLOWERS + NEXTRA)))"
LEADER_PORT=${PORTS[0]} CONTROL_PORT=${PORTS[1]}
RELAY_PORTS=("${PORTS[@]:2}")

# --- vdac (ALSA mode) ---
ALSA_ENV=()
if [ "$SINK" = alsa ]; then
    cp -r /work/shared/tools/vdac "$TMP/vdac"
    chmod -R u+w "$TMP/vdac"
    make -s -C "$TMP/vdac" libasound_module_pcm_vdac.so >"$TMP/vdac-build.log" 2>&1 \
        || { cat "$TMP/vdac-build.log" >&2; die "building vdac failed"; }
    {
        echo "pcm_type.vdac { lib \"$TMP/vdac/libasound_module_pcm_vdac.so\" }"
        for ((i = 0; i < NFOLLOWERS; i++)); do
            printf 'pcm.tuttibench_%s {\n  type vdac\n  ppm %s\n  click_threshold 0.5\n  click_quiet_ms 100\n  log "%s"\n}\n' \
                "${NAMES[$i]}" "${FPPM[$i]}" "$TMP/${NAMES[$i]}.vdac.log"
        done
        printf 'pcm.tuttibench_late {\n  type vdac\n  ppm %s\n  click_threshold 0.5\n  click_quiet_ms 100\n  log "%s"\n}\n' \
            "$LATE_PPM" "$TMP/late.vdac.log"
    } >"$TMP/asound.conf"
    ALSA_ENV=(env "ALSA_CONFIG_PATH=/usr/share/alsa/alsa.conf:$TMP/asound.conf")
fi

# --- leader (with the control port if this tuttid has one) ---
LEADER_ARGS=(leader --listen "127.0.0.1:$LEADER_PORT" --play "$TMP/A.wav" "$TMP/B.wav" --loop --codec "$CODEC")
[ -n "$BUFFER_MS" ] && LEADER_ARGS+=(--buffer-ms "$BUFFER_MS")
# Newer leaders also serve MPD and keep a library database by default: keep
# the run self-contained (no fixed ports, nothing written outside the run directory).
LEADER_HELP=$("$TUTTID" leader --help 2>&1 || true)
grep -q -- "--mpd" <<<"$LEADER_HELP" && LEADER_ARGS+=(--mpd off)
grep -q -- "--db" <<<"$LEADER_HELP" && LEADER_ARGS+=(--db "$TMP/library.db")
start_leader() {
    "$TUTTID" "$@" 2>"$TMP/leader.log" &
    LEADER_PID=$!
    local n=0
    while ! grep -q "leader listening" "$TMP/leader.log" 2>/dev/null; do
        kill -0 "$LEADER_PID" 2>/dev/null || return 1
        n=$((n + 1)); [ $n -lt 200 ] || { stop_pid "$LEADER_PID"; return 1; }
        sleep 0.05
    done
}
# (even with --reps 0: rooms.list gives the leader's view of each follower's health)
CONTROL=unsupported
if grep -q -- "--control" <<<"$LEADER_HELP"; then
    if start_leader "${LEADER_ARGS[@]}" --control "127.0.0.1:$CONTROL_PORT"; then
        CONTROL=on
        PIDS+=("$LEADER_PID")
    else
        wait "$LEADER_PID" 2>/dev/null || true
        grep -q -- "--control" "$TMP/leader.log" || { cat "$TMP/leader.log" >&2; die "the leader did not start"; }
    fi
fi
if [ "$CONTROL" != on ]; then
    echo "note: this tuttid leader has no --control: command latencies and leader health skipped" >&2
    start_leader "${LEADER_ARGS[@]}" || { cat "$TMP/leader.log" >&2; die "the leader did not start"; }
    PIDS+=("$LEADER_PID")
fi
echo "leader: $TUTTID ${LEADER_ARGS[*]}$([ "$CONTROL" = on ] && echo " --control 127.0.0.1:$CONTROL_PORT")" >"$TMP/commands.txt"

# --- relays (impairment) ---
# One relay process per follower (seed SEED·100 + i): each room has its own
# radio, and one Python process for every room's packets (1 000 a second
# each during a join burst) queued them behind each other on its GIL, which
# added delays of 100 ms and more that no link had.
if [ "$RELAY" = 1 ]; then
    ARGS_NOSEED=()
    for ((k = 0; k < ${#RELAY_ARGS[@]}; k++)); do
        if [ "${RELAY_ARGS[$k]}" = --seed ]; then k=$((k + 1)); else ARGS_NOSEED+=("${RELAY_ARGS[$k]}"); fi
    done
    if [ "$RELAY_KIND" = c ]; then
        cc -O2 -pthread -o "$TMP/relay" "$HERE/relay.c" -lm || die "cannot build relay.c (cc); --relay python runs without it"
        RELAY_CMD=("$TMP/relay")
    else
        RELAY_CMD=(python3 "$HERE/relay.py")
    fi
    for ((i = 0; i < NFOLLOWERS + NEXTRA; i++)); do
        map="${RELAY_PORTS[$i]}:127.0.0.1:$LEADER_PORT"
        echo "relay $i: ${RELAY_CMD[*]} --seed $((SEED * 100 + i)) ${ARGS_NOSEED[*]} --stats $TMP/relay-$i.json $map" >>"$TMP/commands.txt"
        "${RELAY_CMD[@]}" --seed $((SEED * 100 + i)) "${ARGS_NOSEED[@]}" --stats "$TMP/relay-$i.json" "$map" >"$TMP/relay-$i.log" 2>&1 &
        pid=$!
        PIDS+=("$pid")
        n=0; until grep -q "relay ready" "$TMP/relay-$i.log"; do
            kill -0 "$pid" 2>/dev/null || { cat "$TMP/relay-$i.log" >&2; die "the relay did not start"; }
            n=$((n + 1)); [ $n -lt 100 ] || die "the relay did not start"; sleep 0.05
        done
    done
fi

# --- followers ---
MANIFEST_DACS=()
start_follower() {   # INDEX NAME PPM OFFSET SKEW LATE
    local i=$1 name=$2 ppm=$3 off=$4 skew=$5 late=$6 addr="127.0.0.1:$LEADER_PORT" output path kind
    [ "$RELAY" = 1 ] && addr="127.0.0.1:${RELAY_PORTS[$i]}"
    if [ "$SINK" = alsa ]; then
        output="alsa:tuttibench_$name" path="$name.vdac.log" kind=vdac
    else
        output="file:$TMP/$name.raw,ppm=$ppm" path="$name.raw" kind=file
    fi
    local args=(follower --leader "$addr" --name "$name" --output "$output"
                --clock-offset-ms "$off" --clock-skew-ppm "$skew")
    [ "$REALTIME" = 1 ] || args+=(--no-realtime)
    # Their clock's true error, once a second, in RUN/NAME.log (debug lines).
    [ "$CLOCK_LOG" = 1 ] && args+=(--log-level debug)
    echo "$name: $TUTTID ${args[*]}" >>"$TMP/commands.txt"
    ${ALSA_ENV[@]+"${ALSA_ENV[@]}"} python3 "$HERE/util.py" exec "$TMP/$name.start" "$TUTTID" "${args[@]}" \
        2>"$TMP/$name.log" &
    PIDS+=("$!")
    FOLLOWER_PIDS+=("$!")
    MANIFEST_DACS+=("dac name=$name kind=$kind path=$path ppm=$ppm late=$late log=$name.log stamp=$name.start")
}
FOLLOWER_PIDS=()
for ((i = 0; i < NFOLLOWERS; i++)); do
    start_follower "$i" "${NAMES[$i]}" "${FPPM[$i]}" "${FOFF[$i]}" "${FSKEW[$i]}" 0
done
n=0; until [ -s "$TMP/f1.start" ]; do n=$((n + 1)); [ $n -lt 200 ] || die "f1 did not start"; sleep 0.01; done
T0=$(cat "$TMP/f1.start")

if [ "$CONTROL" = on ]; then
    python3 "$HERE/control.py" --addr "127.0.0.1:$CONTROL_PORT" --t0-file "$TMP/f1.start" \
        --seconds "$SECONDS_RUN" --warmup "$WARMUP" --reps "$REPS" --out "$TMP/commands.jsonl" \
        2>"$TMP/control.log" &
    PIDS+=("$!")
fi

{
    head="bench/sync: $NFOLLOWERS followers, ${SECONDS_RUN} s, warm-up ${WARMUP} s, codec $CODEC, sink $SINK"
    [ "$RELAY" = 1 ] && head+=", relay: $CASE (seed $SEED, relay.$([ "$RELAY_KIND" = c ] && echo c || echo py))"
    [ "$LATE" != 0 ] && head+=", late joiner at +$LATE s"
    echo "$head, control $CONTROL"
    for ((i = 0; i < NFOLLOWERS; i++)); do
        echo "  ${NAMES[$i]}: DAC ${FPPM[$i]} ppm, clock offset ${FOFF[$i]} ms, skew ${FSKEW[$i]} ppm"
    done
    if [ "$LATE" != 0 ]; then echo "  late: DAC $LATE_PPM ppm, clock offset $LATE_OFF ms, skew $LATE_SKEW ppm"; fi
}

# --- the run ---
sleep_until() {   # seconds after T0
    local now; now=$(U now)
    local wait; wait=$(awk -v t0="$T0" -v s="$1" -v now="$now" 'BEGIN { w = (t0 + s * 1e9 - now) / 1e9; printf "%.3f", (w > 0 ? w : 0) }')
    # In the background so that a TERM/INT sent to this script alone runs the trap at once.
    sleep "$wait" &
    SLEEP_PID=$!
    wait "$SLEEP_PID"
    SLEEP_PID=
}
if [ "$LATE" != 0 ]; then
    sleep_until "$LATE"
    start_follower "$NFOLLOWERS" late "$LATE_PPM" "$LATE_OFF" "$LATE_SKEW" 1
fi
sleep_until "$SECONDS_RUN"
T_END=$(U now)
declare -A LOGBYTES=()
for f in "$TMP"/*.log; do LOGBYTES[$(basename "$f" .log)]=$(stat -c %s "$f"); done

# CPU used, then stop: followers first (they close their DACs' files), then the rest.
CPU_LINE="cpu seconds: leader $(U cpu "$LEADER_PID")"
for ((i = 0; i < ${#FOLLOWER_PIDS[@]}; i++)); do
    name=$( [ "$i" -lt "$NFOLLOWERS" ] && echo "${NAMES[$i]}" || echo late )
    CPU_LINE+=", $name $(U cpu "${FOLLOWER_PIDS[$i]}")"
done
for pid in "${FOLLOWER_PIDS[@]}"; do kill -TERM "$pid" 2>/dev/null || true; done
for pid in "${PIDS[@]}"; do stop_pid "$pid"; done
PIDS=()

# --- analysis ---
{
    echo "run t0=$T0 end=$T_END warmup=$WARMUP sink=$SINK control=$CONTROL"
    for line in "${MANIFEST_DACS[@]}"; do
        name=$(sed 's/^dac name=\([^ ]*\).*/\1/' <<<"$line")
        echo "$line launch=$(cat "$TMP/$name.start" 2>/dev/null || echo none) logbytes=${LOGBYTES[$name]:-none}"
    done
} >"$TMP/manifest"
echo "$CPU_LINE"
ANALYSIS_START=$(U now)
rc=0
python3 "$HERE/analyze.py" "$TMP" --case "$CASE" || rc=$?
echo "analysis took $(awk -v a="$ANALYSIS_START" -v b="$(U now)" 'BEGIN { printf "%.1f", (b - a) / 1e9 }') s" >&2
exit $rc
