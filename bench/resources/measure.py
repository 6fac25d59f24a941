"""CPU and memory of Tutti and of Snapcast 0.26 doing the same work: one
Opus stream at 160 kbps of the same generated 48 kHz stereo track, played
in a loop to N rooms that write what they play to raw PCM files, all on
127.0.0.1. The two systems run one after the other, never at once.

Called by run.sh (which builds tuttid and checks the tools):

    python3 measure.py --tuttid PATH [--seconds 60] [--rooms 3] [--warmup 5]

Per process: CPU time (utime + stime of all its threads, /proc/PID/stat)
over the steady window as % of one core; RSS: the median of VmRSS sampled
once a second over the window ("steady") and VmHWM at its end ("peak").
"""
import argparse
import array
import math
import os
import random
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
RATE, BYTES_PER_SECOND = 48000, 48000 * 4
TICK = os.sysconf("SC_CLK_TCK")
BITRATE_KBPS = 160
procs = []  # every process we started, in start order


# ---------------------------------------------------------------- the track

# Extra options for every `tuttid follower` (--follower-arg).
FOLLOWER_ARGS = []


def write_track(path, seconds=20):
    """Music-like and never silent: a chord that changes every 2.5 s (three
    notes with two harmonics each), a 5 Hz tremolo, a different pan per
    note, and white noise at about -40 dBFS. 48 kHz, stereo, 16 bit."""
    chords = [(220.0, 261.63, 329.63), (174.61, 220.0, 261.63), (196.0, 246.94, 293.66), (164.81, 207.65, 246.94)]
    pans = (0.25, 0.5, 0.75)
    rnd = random.Random(1)
    out = array.array("h")
    two_pi = 2 * math.pi
    for i in range(RATE * seconds):
        t = i / RATE
        notes = chords[int(t / 2.5) % len(chords)]
        trem = 0.8 + 0.2 * math.sin(two_pi * 5 * t)
        left = right = 0.0
        for f, p in zip(notes, pans):
            v = math.sin(two_pi * f * t) + 0.4 * math.sin(two_pi * 2 * f * t) + 0.2 * math.sin(two_pi * 3 * f * t)
            left += v * (1 - p)
            right += v * p
        n = 300 * (rnd.random() - 0.5)
        out.append(int(3500 * trem * left + n))
        out.append(int(3500 * trem * right + n))
    if sys.byteorder != "little":
        out.byteswap()
    data = out.tobytes()
    hdr = (b"RIFF" + (36 + len(data)).to_bytes(4, "little") + b"WAVEfmt "
           + (16).to_bytes(4, "little") + (1).to_bytes(2, "little") + (2).to_bytes(2, "little")
           + RATE.to_bytes(4, "little") + BYTES_PER_SECOND.to_bytes(4, "little")
           + (4).to_bytes(2, "little") + (16).to_bytes(2, "little")
           + b"data" + len(data).to_bytes(4, "little"))
    with open(path, "wb") as f:
        f.write(hdr + data)


# ---------------------------------------------------------------- processes

def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_port(port, proc, what, timeout=15):
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if proc.poll() is not None:
            raise RuntimeError(f"{what} exited with status {proc.returncode} before listening")
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            return
        except OSError:
            time.sleep(0.05)
    raise RuntimeError(f"{what} never listened on 127.0.0.1:{port}")


def start(argv, log):
    # Own session: a Ctrl-C at the terminal reaches only us, and we stop
    # the children ourselves, by PID.
    p = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=open(log, "wb"),
                         stderr=subprocess.STDOUT, start_new_session=True)
    procs.append(p)
    return p


def stop_all():
    for p in reversed(procs):
        if p.poll() is None:
            try:
                p.terminate()
            except ProcessLookupError:
                pass
    end = time.monotonic() + 5
    for p in reversed(procs):
        try:
            p.wait(timeout=max(0.1, end - time.monotonic()))
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()
    procs.clear()


# ---------------------------------------------------------------- /proc

def cpu_ticks(pid):
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rpartition(")")[2].split()
    return int(fields[11]) + int(fields[12])  # utime, stime (fields 14, 15)


def status_kib(pid, key):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith(key + ":"):
                return int(line.split()[1])
    return 0


def audible_fraction(path, start, end):
    """Of one 100 ms slice per second of [start, end) bytes: the fraction
    whose RMS is above -50 dBFS (silence padding would not be)."""
    loud = total = 0
    with open(path, "rb") as f:
        for off in range(start - start % 4, end - 19200, BYTES_PER_SECOND):
            f.seek(off)
            a = array.array("h")
            a.frombytes(f.read(19200))
            if sys.byteorder != "little":
                a.byteswap()
            total += 1
            if math.sqrt(sum(x * x for x in a) / len(a)) > 32768 * 10 ** (-50 / 20):
                loud += 1
    return loud / total if total else 0.0


def measure(named, outputs, warmup, seconds):
    """named: {label: Popen}. Returns per label: cpu %, steady and peak RSS
    (MiB), and per output file its byte rate and audible fraction."""
    deadline = time.monotonic() + warmup
    while time.monotonic() < deadline:
        check_alive(named)
        time.sleep(0.2)
    t0 = time.monotonic()
    c0 = {k: cpu_ticks(p.pid) for k, p in named.items()}
    s0 = {path: os.path.getsize(path) if os.path.exists(path) else 0 for path in outputs}
    rss = {k: [] for k in named}
    for i in range(1, seconds + 1):
        while time.monotonic() < t0 + i:
            time.sleep(max(0.0, min(0.25, t0 + i - time.monotonic())))
        check_alive(named)
        for k, p in named.items():
            rss[k].append(status_kib(p.pid, "VmRSS"))
    c1 = {k: cpu_ticks(p.pid) for k, p in named.items()}
    s1 = {path: os.path.getsize(path) if os.path.exists(path) else 0 for path in outputs}
    elapsed = time.monotonic() - t0
    peak = {k: status_kib(p.pid, "VmHWM") for k, p in named.items()}
    res = {}
    for k in named:
        res[k] = {
            "cpu": 100.0 * (c1[k] - c0[k]) / TICK / elapsed,
            "rss": statistics.median(rss[k]) / 1024,
            "peak": peak[k] / 1024,
        }
    files = {path: ((s1[path] - s0[path]) / elapsed, audible_fraction(path, s0[path], s1[path])) for path in outputs}
    return res, files


def check_alive(named):
    for k, p in named.items():
        if p.poll() is not None:
            raise RuntimeError(f"{k} (pid {p.pid}) exited with status {p.returncode} during the run")


# ---------------------------------------------------------------- the two systems

def run_tutti(tuttid, work, track, rooms, warmup, seconds):
    d = os.path.join(work, "tutti")
    os.makedirs(d)
    port = free_port()
    leader = start([tuttid, "leader", "--listen", f"127.0.0.1:{port}", "--control", "off", "--mpd", "off",
                    "--no-announce", "--play", track, "--loop", "--codec", "opus", "--bitrate", str(BITRATE_KBPS),
                    "--log-level", "warning"], os.path.join(d, "leader.log"))
    wait_port(port, leader, "tuttid leader")
    named, outputs = {"stream": leader}, []
    for i in range(1, rooms + 1):
        out = os.path.join(d, f"room{i}.raw")
        named[f"room{i}"] = start([tuttid, "follower", "--leader", f"127.0.0.1:{port}", "--name", f"room{i}",
                                   "--output", f"file:{out}", "--no-realtime", "--log-level", "warning"] + FOLLOWER_ARGS,
                                  os.path.join(d, f"room{i}.log"))
        outputs.append(out)
    try:
        return measure(named, outputs, warmup, seconds)
    finally:
        stop_all()


def run_snapcast(work, track, rooms, warmup, seconds):
    d = os.path.join(work, "snapcast")
    os.makedirs(d)
    fifo = os.path.join(d, "fifo")
    os.mkfifo(fifo)
    conf = os.path.join(d, "snapserver.conf")
    open(conf, "w").close()  # nothing from /etc/snapserver.conf
    sport, tport = free_port(), free_port()
    source = (f"pipe://{fifo}?name=default&mode=read&sampleformat=48000:16:2"
              f"&codec=opus:BITRATE:{BITRATE_KBPS * 1000},COMPLEXITY:10")
    server = start(["snapserver", "-c", conf, f"--server.datadir={d}", "--logging.sink=stdout",
                    "--http.enabled=false",
                    "--tcp.bind_to_address=127.0.0.1", f"--tcp.port={tport}",
                    "--stream.bind_to_address=127.0.0.1", f"--stream.port={sport}",
                    f"--stream.source={source}"], os.path.join(d, "snapserver.log"))
    feeder = start([sys.executable, os.path.join(HERE, "feeder.py"), track, fifo], os.path.join(d, "feeder.log"))
    wait_port(sport, server, "snapserver")
    named, outputs = {"stream": server, "feeder": feeder}, []
    for i in range(1, rooms + 1):
        out = os.path.join(d, f"room{i}.raw")
        named[f"room{i}"] = start(["snapclient", "-h", "127.0.0.1", "-p", str(sport), "--hostID", f"bench-room{i}",
                                   "-i", str(i), "--player", f"file:filename={out}", "--logsink", "stdout"],
                                  os.path.join(d, f"room{i}.log"))
        outputs.append(out)
    try:
        return measure(named, outputs, warmup, seconds)
    finally:
        stop_all()


# ---------------------------------------------------------------- report

def ratio(a, b):
    return f"{a / b:.2f}" if b > 0 else "n/a"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--tuttid", required=True)
    ap.add_argument("--seconds", type=int, default=60)
    ap.add_argument("--rooms", type=int, default=3)
    ap.add_argument("--warmup", type=int, default=5)
    ap.add_argument("--follower-arg", action="append", default=[],
                    help="an extra follower option (repeat it), e.g. --follower-arg=--protocol-version --follower-arg=6 "
                         "for speakers that do no handshake (nothing sealed: the cost of sealing is the difference)")
    a = ap.parse_args()
    FOLLOWER_ARGS.extend(a.follower_arg)
    if a.seconds < 5 or a.rooms < 1:
        sys.exit("--seconds must be at least 5 and --rooms at least 1")

    work = tempfile.mkdtemp(prefix="tutti-bench-resources.")
    try:
        track = os.path.join(work, "track.wav")
        write_track(track)
        print(f"Tutti: 1 leader + {a.rooms} followers, then Snapcast: 1 snapserver + {a.rooms} snapclients; "
              f"{a.warmup} s warm-up, {a.seconds} s measured each", file=sys.stderr)
        tutti, tfiles = run_tutti(a.tuttid, work, track, a.rooms, a.warmup, a.seconds)
        snap, sfiles = run_snapcast(work, track, a.rooms, a.warmup, a.seconds)
    finally:
        stop_all()
        keep = os.environ.get("KEEP_WORK")
        if keep:
            print(f"work folder kept: {work}", file=sys.stderr)
        else:
            shutil.rmtree(work, ignore_errors=True)

    rooms = [f"room{i}" for i in range(1, a.rooms + 1)]
    mean = lambda res, key: statistics.mean(res[r][key] for r in rooms)
    rows = [
        ("stream  CPU % of one core", tutti["stream"]["cpu"], snap["stream"]["cpu"], "{:.2f}"),
        ("stream  RSS MiB steady", tutti["stream"]["rss"], snap["stream"]["rss"], "{:.1f}"),
        ("stream  RSS MiB peak", tutti["stream"]["peak"], snap["stream"]["peak"], "{:.1f}"),
        (f"speaker CPU % (mean of {a.rooms})", mean(tutti, "cpu"), mean(snap, "cpu"), "{:.2f}"),
        ("speaker RSS MiB steady", mean(tutti, "rss"), mean(snap, "rss"), "{:.1f}"),
        ("speaker RSS MiB peak", mean(tutti, "peak"), mean(snap, "peak"), "{:.1f}"),
        (f"all {1 + a.rooms} CPU %", tutti["stream"]["cpu"] + a.rooms * mean(tutti, "cpu"),
         snap["stream"]["cpu"] + a.rooms * mean(snap, "cpu"), "{:.2f}"),
        (f"all {1 + a.rooms} RSS MiB steady", tutti["stream"]["rss"] + a.rooms * mean(tutti, "rss"),
         snap["stream"]["rss"] + a.rooms * mean(snap, "rss"), "{:.1f}"),
    ]
    print(f"Opus {BITRATE_KBPS} kbps, complexity 10, 48 kHz stereo, {a.rooms} rooms writing raw PCM files; "
          f"{a.seconds} s after a {a.warmup} s warm-up")
    print(f"  {'':32} {'Tutti':>9} {'Snapcast':>9} {'Tutti/Snap':>10}")
    for name, t, s, fmt in rows:
        print(f"  {name:32} {fmt.format(t):>9} {fmt.format(s):>9} {ratio(t, s):>10}")
    for r in rooms:
        print(f"  {r:8} CPU % Tutti {tutti[r]['cpu']:6.2f}  Snapcast {snap[r]['cpu']:6.2f};  "
              f"RSS MiB Tutti {tutti[r]['rss']:5.1f}  Snapcast {snap[r]['rss']:5.1f}")
    f = snap["feeder"]
    print(f"  not counted above: Snapcast's feeder (python3 writing the PCM into the pipe at real time) "
          f"CPU {f['cpu']:.2f} %, RSS {f['rss']:.1f} MiB; Tutti's leader reads and decodes the WAV itself, "
          f"inside its figure")

    ok = True
    print("output byte rates (expected 192000 B/s) and audible share of 1 s probes:")
    for label, files in (("Tutti", tfiles), ("Snapcast", sfiles)):
        for path, (rate, audible) in files.items():
            good = abs(rate - BYTES_PER_SECOND) <= 0.05 * BYTES_PER_SECOND and audible >= 0.95
            ok &= good
            print(f"  {label:8} {os.path.basename(path):10} {rate:9.0f} B/s  audible {100 * audible:5.1f} %"
                  f"{'' if good else '  <-- FAILED'}")

    print("resources " + " ".join([
        f"leader_cpu_pct={tutti['stream']['cpu']:.2f}", f"snapserver_cpu_pct={snap['stream']['cpu']:.2f}",
        f"follower_cpu_pct={mean(tutti, 'cpu'):.2f}", f"snapclient_cpu_pct={mean(snap, 'cpu'):.2f}",
        f"leader_rss_mib={tutti['stream']['rss']:.1f}", f"snapserver_rss_mib={snap['stream']['rss']:.1f}",
        f"follower_rss_mib={mean(tutti, 'rss'):.1f}", f"snapclient_rss_mib={mean(snap, 'rss'):.1f}",
        f"feeder_cpu_pct={f['cpu']:.2f}", f"rooms={a.rooms}", f"seconds={a.seconds}",
        f"ok={'yes' if ok else 'no'}"]))
    if not ok:
        print("FAILED: a room did not play at 48000 frames/s, or played silence", file=sys.stderr)
        sys.exit(1)


if __name__ == "__main__":
    sys.path.insert(0, os.path.join(HERE, ".."))
    import benchmain                     # bench/benchmain.py: signals and exit codes
    benchmain.run(main)
