#!/usr/bin/env python3
"""A stock snapclient (Debian's 0.26) as a room of a Tutti leader: how far
from a Tutti speaker it plays, how soon it hears pause, play and next
(against snapserver 0.26 driving the same client binary), and what the
snapclients cost the leader. Called by run.sh, which builds tuttid:

    measure.py --tuttid PATH [--seconds 30] [--reps 5] [--cpu-seconds 30] [--runs 1] [--keep]
    measure.py --analyze WORK_DIR            (re-analyse a kept run's phases A and B)

Everything listens on 127.0.0.1. Every process this script starts runs in
its own session and is stopped by PID on exit. Python 3 standard library
only. See README.md for the definitions.

Phases of one run:
  A. Tutti leader (click tracks, --loop --codec opus), one Tutti speaker on
     a virtual DAC (tutti1.raw + .timing) and one snapclient writing
     snap1.raw; --seconds of clicks for the offset, then --reps times
     pause (+3 s) play (+3 s) next over the leader's JSON-RPC control port.
  B. snapserver 0.26 (pipe source, Opus) fed in real time by this script's
     feeder, the same snapclient binary writing snap2.raw; the same
     schedule, pause = the feeder stops writing, play = it resumes, next =
     it switches to the other track.
  C. The leader's CPU and RSS with 3 Tutti speakers + 3 snapclients, and
     with the 3 Tutti speakers alone.
"""
import argparse
import array
import bisect
import json
import math
import os
import random
import select
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time

RATE = 48000
FRAME_BYTES = 4
NS = 1_000_000_000
TICK = os.sysconf("SC_CLK_TCK")

# The click tracks: a 2 ms, 2 kHz cosine burst at 0.9 full scale on the left
# every 500 ms (at 0.25 s + k * 0.5 s), a 1 kHz (A) / 1.5 kHz (B) tone at
# 0.1 full scale on the right, so the moment audio stops shows. Each track
# opens with a marker: a second click 120 ms (A) / 150 ms (B) after the
# first, so "frame 0 of a track was heard" = first marker click - 0.25 s.
TRACK_SECONDS = 60
CLICK_PHASE_S = 0.25
MARKER_GAPS = {"A": 0.120, "B": 0.150}
MARKER_TOLERANCE_S = 0.008
TONES_HZ = {"A": 1000.0, "B": 1500.0}

# Click and silence detection (as bench/sync/analyze.py).
THRESHOLD = 16384                                   # 0.5 full scale
QUIET_FRAMES = 4800                                 # 100 ms below it before an onset
LOUD_HI = bytes(1 if 0x40 <= b <= 0xBF else 0 for b in range(256))    # |x| >= 16384
AUDIBLE_HI = bytes(0 if b in (0x00, 0xFF) else 1 for b in range(256))  # |x| >= 256 (-42 dBFS)
LONG_SILENCE_NS = 300_000_000                       # "paused": silent for at least this long

# snapclient's file player (client/player/file_player.cpp, 0.26 as today):
# a 50 ms block every 50 ms on an absolute steady_clock timer, each asked
# for with getPlayerChunkOrSilence(buffer, 10ms, frames): its first frame
# is meant to be heard 10 ms after the request.
SNAP_BLOCK_FRAMES = 2400
SNAP_BLOCK_BYTES = SNAP_BLOCK_FRAMES * FRAME_BYTES
SNAP_PERIOD_NS = 50_000_000
SNAP_DAC_NS = 10_000_000
POLL_S = 0.0005

# Command schedule (per repetition, s): pause, play, next; repetition length.
SCHEDULE = [(0.0, "pause"), (3.0, "play"), (6.0, "next")]
REP_SECONDS = 9.5


def dither(rep, j):
    """0-50 ms, random (seeded: the same for the same run number): snapclient's 50 ms block
    schedule, whose phase a codec header resets, and snapserver's 20 ms
    reads meet the commands at every phase."""
    return int(random.Random(RUN[0] * 100000 + rep * 1000 + j).random() * SNAP_PERIOD_NS)


# The feeder: 20 ms blocks (3840 bytes < PIPE_BUF, so each write is atomic),
# at most 40 ms ahead of real time.
FEED_BLOCK_FRAMES = 960
FEED_AHEAD_NS = 40_000_000

procs = []
RUN = [1]  # the run number (seeds the command dither)
RT = []   # ["chrt", "-f", "10"] for the processes under test in phases A and B (--priority rt)


def mono():
    return time.clock_gettime_ns(time.CLOCK_MONOTONIC)


def log(msg):
    print(msg, file=sys.stderr, flush=True)


# ------------------------------------------------------------------ tracks

def write_wav(path, pcm):
    hdr = (b"RIFF" + (36 + len(pcm)).to_bytes(4, "little") + b"WAVEfmt "
           + (16).to_bytes(4, "little") + (1).to_bytes(2, "little") + (2).to_bytes(2, "little")
           + RATE.to_bytes(4, "little") + (RATE * FRAME_BYTES).to_bytes(4, "little")
           + (4).to_bytes(2, "little") + (16).to_bytes(2, "little")
           + b"data" + len(pcm).to_bytes(4, "little"))
    with open(path, "wb") as f:
        f.write(hdr + pcm)


def track_pcm(name, seconds=TRACK_SECONDS):
    half = RATE // 2
    click = [int(round(32767 * 0.9 * math.cos(2 * math.pi * 2000 * k / RATE))) for k in range(96)]
    hz = TONES_HZ[name]
    tone = [int(round(32767 * 0.1 * math.sin(2 * math.pi * hz * k / RATE))) for k in range(half)]

    def block(clicks_at):
        a = array.array("h", bytes(FRAME_BYTES * half))
        a[1::2] = array.array("h", tone)
        for pos in clicks_at:
            for k, v in enumerate(click):
                a[2 * (pos + k)] = v
        if sys.byteorder != "little":
            a.byteswap()
        return a.tobytes()

    c = int(CLICK_PHASE_S * RATE)
    first = block([c, c + int(round(MARKER_GAPS[name] * RATE))])
    steady = block([c])
    return first + steady * (2 * seconds - 1)


def pcm_of_wav(path):
    data = open(path, "rb").read()
    i = 12
    while i + 8 <= len(data):
        tag, size = data[i:i + 4], int.from_bytes(data[i + 4:i + 8], "little")
        if tag == b"data":
            return data[i + 8:i + 8 + size]
        i += 8 + size + (size & 1)
    raise RuntimeError(f"no data chunk in {path}")


# ------------------------------------------------------------------ the feeder (a child process)

def feeder_main(track_a, track_b, fifo):
    """Writes track A's PCM into the FIFO in real time, looped; commands on
    stdin, one a line: pause (stop writing), play (resume where it was),
    next (switch to the other track's frame 0). Acknowledges each on stdout
    with the CLOCK_MONOTONIC ns it acted at and the bytes still in the FIFO."""
    import fcntl
    import termios
    tracks = [pcm_of_wav(track_a), pcm_of_wav(track_b)]
    block = FEED_BLOCK_FRAMES * FRAME_BYTES
    tracks = [t[:len(t) - len(t) % block] for t in tracks]
    out = os.open(fifo, os.O_WRONLY)       # blocks until snapserver opens it
    cur, pos, playing = 0, 0, True
    base, sent = mono(), 0
    period = FEED_BLOCK_FRAMES * NS // RATE
    stdin = sys.stdin.fileno()
    buf = b""

    def queued():
        b = array.array("i", [0])
        try:
            fcntl.ioctl(out, termios.FIONREAD, b, True)
            return b[0]
        except OSError:
            return -1

    while True:
        due = base + sent * period - FEED_AHEAD_NS
        now = mono()
        timeout = max(0.0, (due - now) / NS) if playing else None
        r, _, _ = select.select([stdin], [], [], timeout)
        if r:
            chunk = os.read(stdin, 4096)
            if not chunk:
                return
            buf += chunk
            while b"\n" in buf:
                line, buf = buf.split(b"\n", 1)
                cmd = line.decode().strip()
                t = mono()
                q = queued()
                if cmd == "pause":
                    playing = False
                elif cmd == "play" and not playing:
                    playing, base, sent = True, t, 0
                elif cmd == "next":
                    cur, pos = 1 - cur, 0
                print(f"ack {cmd} {t} {q}", flush=True)
            continue
        if not playing or mono() < due:
            continue
        data = tracks[cur][pos:pos + block]
        view = memoryview(data)
        while view:
            view = view[os.write(out, view):]
        pos = (pos + block) % len(tracks[cur])
        sent += 1


# ------------------------------------------------------------------ processes

def free_ports(n):
    socks = []
    for _ in range(n):
        s = socket.socket()
        s.bind(("127.0.0.1", 0))
        socks.append(s)
    ports = [s.getsockname()[1] for s in socks]
    for s in socks:
        s.close()
    return ports


def start(argv, logpath, stdin=subprocess.DEVNULL, stdout=None):
    p = subprocess.Popen(argv, stdin=stdin, stdout=stdout if stdout is not None else open(logpath, "wb"),
                         stderr=open(logpath, "ab") if stdout is not None else subprocess.STDOUT,
                         start_new_session=True)
    procs.append(p)
    pidfile = os.environ.get("SNAPCAST_BENCH_PIDFILE")
    if pidfile:  # run.sh's trap stops these too if this script is killed outright
        try:
            with open(f"/proc/{p.pid}/stat") as f:
                starttime = f.read().rpartition(")")[2].split()[19]
            with open(pidfile, "a") as f:
                f.write(f"{p.pid} {starttime}\n")
        except OSError:
            pass
    return p


def stop(ps):
    for p in reversed(ps):
        if p.poll() is None:
            try:
                p.terminate()
            except ProcessLookupError:
                pass
    end = time.monotonic() + 5
    for p in reversed(ps):
        try:
            p.wait(timeout=max(0.1, end - time.monotonic()))
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()
        if p in procs:
            procs.remove(p)


def stop_all():
    stop(list(procs))


def wait_port(port, proc, what, timeout=20):
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if proc.poll() is not None:
            raise RuntimeError(f"{what} exited with status {proc.returncode} before listening on {port}")
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            return
        except OSError:
            time.sleep(0.05)
    raise RuntimeError(f"{what} never listened on 127.0.0.1:{port}")


def wait_growing(paths, alive, what, timeout=20):
    """Until every file exists and has grown by at least 0.5 s of audio."""
    first = {}
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        for p in alive:
            if p.poll() is not None:
                raise RuntimeError(f"{what}: a process (pid {p.pid}) exited with status {p.returncode}")
        done = True
        for path in paths:
            size = os.path.getsize(path) if os.path.exists(path) else -1
            if size < 0:
                done = False
                continue
            first.setdefault(path, size)
            if size - first[path] < RATE * FRAME_BYTES // 2:
                done = False
        if done:
            return
        time.sleep(0.1)
    raise RuntimeError(f"{what}: {', '.join(os.path.basename(p) for p in paths)} did not start playing in {timeout} s")


def sleep_until(t_ns, alive=()):
    while True:
        for p in alive:
            if p.poll() is not None:
                prog = p.args[3] if p.args[0] == "chrt" else p.args[0]
                raise RuntimeError(f"pid {p.pid} ({os.path.basename(prog)}) exited with status {p.returncode}")
        left = (t_ns - mono()) / NS
        if left <= 0:
            return
        time.sleep(min(left, 0.2))


def leader_argv(tuttid, d, ports, tracks):
    listen, control, snap = ports
    return [tuttid, "leader", "--listen", f"127.0.0.1:{listen}", "--control", f"127.0.0.1:{control}",
            "--snapcast-stream", f"127.0.0.1:{snap}", "--snapcast-control", "off", "--snapcast-http", "off",
            "--mpd", "off", "--web", "off", "--no-announce", "--db", os.path.join(d, "library.db"),
            "--play", *tracks, "--loop", "--codec", "opus"]


def follower_argv(tuttid, port, name, out, realtime=True):
    a = [tuttid, "follower", "--leader", f"127.0.0.1:{port}", "--name", name, "--output", f"file:{out}"]
    return a if realtime else a + ["--no-realtime"]


def snapclient_argv(port, host_id, instance, out):
    # mode=a: snapclient re-creates its player (and re-opens the file) on
    # every codec header, which Tutti sends at each cut; "w" would truncate it.
    return ["snapclient", "-h", "127.0.0.1", "-p", str(port), "--hostID", host_id, "-i", str(instance),
            "--player", f"file:filename={out},mode=a", "--logsink", "stdout"]


class RPC:
    def __init__(self, port):
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=5)
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.buf, self.n = b"", 0

    def call(self, method, params=None):
        self.n += 1
        req = {"jsonrpc": "2.0", "id": self.n, "method": method}
        if params is not None:
            req["params"] = params
        sent = mono()
        self.sock.sendall(json.dumps(req).encode() + b"\n")
        while True:
            while b"\n" not in self.buf:
                data = self.sock.recv(65536)
                if not data:
                    raise RuntimeError("the leader closed the control connection")
                self.buf += data
            line, self.buf = self.buf.split(b"\n", 1)
            if not line.strip():
                continue
            m = json.loads(line)
            if m.get("id") == self.n:
                if m.get("error"):
                    raise RuntimeError(f"{method}: {m['error']}")
                return sent, mono(), m.get("result") or {}


class Poller(threading.Thread):
    """Watches a file's size every ~0.5 ms; for each change records
    (time of the last poll that saw the old size, time of the poll that saw
    the new one, new size), CLOCK_MONOTONIC ns."""

    def __init__(self, path):
        super().__init__(daemon=True)
        self.path, self.changes, self.running, self.polls = path, [], True, 0
        self.t_first = self.t_last = None

    def run(self):
        if RT:  # this thread only: the measuring instrument keeps time whatever else runs
            try:
                os.sched_setscheduler(0, os.SCHED_FIFO, os.sched_param(10))
            except (OSError, AttributeError):
                pass
        last_size, last_t = 0, mono()
        self.t_first = last_t
        stat, sleep, clock = os.stat, time.sleep, mono
        while self.running:
            t_a = clock()
            try:
                size = stat(self.path).st_size
            except FileNotFoundError:
                size = 0
            if size != last_size:
                self.changes.append((last_t, clock(), size))
                last_size = size
            last_t = t_a
            self.polls += 1
            sleep(POLL_S)
        self.t_last = mono()

    def stop(self):
        self.running = False
        self.join()

    def save(self, path):
        with open(path, "w") as f:
            f.write(f"# lo_ns hi_ns size (polls={self.polls} from {self.t_first} to {self.t_last})\n")
            for lo, hi, size in self.changes:
                f.write(f"{lo} {hi} {size}\n")


# ------------------------------------------------------------------ outputs and their clocks

class TuttiOutput:
    """A Tutti speaker's virtual DAC: PATH (S16LE stereo) and PATH.timing."""

    def __init__(self, path):
        self.path = path
        with open(path + ".timing") as f:
            nums = f.read().split()
        self.F = [int(x) for x in nums[0::2]]
        self.T = [int(x) for x in nums[1::2]]
        n = min(len(self.F), len(self.T))
        del self.F[n:], self.T[n:]
        self.frames = os.path.getsize(path) // FRAME_BYTES
        self.note = f"{n} timing lines"

    def time_of_frame(self, f):
        i = max(0, bisect.bisect_right(self.F, f) - 1)
        return self.T[i] + (f - self.F[i]) * NS / RATE

    def frame_at_time(self, t):
        i = bisect.bisect_right(self.T, t) - 1
        if i < 0:
            return 0
        f = self.F[i] + (t - self.T[i]) * RATE / NS
        if i + 1 < len(self.F):
            f = min(f, self.F[i + 1])
        return max(0, int(math.ceil(f)))


class SnapOutput:
    """snapclient's file player: the block schedule from the size poll,
    fitted per player instance (a codec header re-creates the player, which
    restarts its timer), block b's first frame heard at write(b) + 10 ms."""

    def __init__(self, path, changes, hints=()):
        self.path = path
        self.frames = os.path.getsize(path) // FRAME_BYTES
        nblocks = self.frames // SNAP_BLOCK_FRAMES
        # Block k is complete once the size reaches (k + 1) * 9600 bytes.
        lo, hi = [None] * nblocks, [None] * nblocks
        done = 0
        for a, b, size in changes:
            k_end = min(size // SNAP_BLOCK_BYTES, nblocks)
            while done < k_end:
                lo[done], hi[done] = a, b
                done += 1
        self.blocks = [k for k in range(nblocks) if lo[k] is not None]
        self.mid = {k: (lo[k] + hi[k]) / 2 for k in self.blocks}
        self.width = {k: hi[k] - lo[k] for k in self.blocks}
        self.shared = sum(1 for i in range(1, len(self.blocks)) if lo[self.blocks[i]] == lo[self.blocks[i - 1]])
        self.segments = self.segment(hints)
        self.fit()

    def segment(self, hints):
        """Split the blocks into player instances. The phase of block k is
        its write time - k x 50 ms: constant for one instance, stepping by
        0-50 ms where a codec header made a new one (whose first block comes
        50 ms after it). Steps are looked for (median of the 10 blocks after
        minus median of the 10 before) near each hint (a command: where
        Tutti sends a header; a step of more than 0.3 ms counts) and
        anywhere for steps of more than 5 ms (a timer that fell more than a
        period behind restarts its schedule); the split is put where the
        step is clearest (see refine)."""
        ks = self.blocks
        mids = [self.mid[k] for k in ks]
        phase = [m - k * SNAP_PERIOD_NS for m, k in zip(mids, ks)]
        n, W = len(ks), 10
        step = [0.0] * n
        for i in range(1, n):
            left, right = phase[max(0, i - W):i], phase[i:i + W]
            if len(left) >= 3 and len(right) >= 3:
                step[i] = abs(statistics.median(right) - statistics.median(left))

        def refine(i):
            # Where the step between the two sides' medians, less twice the
            # mean distance of their blocks from those medians, is largest:
            # the split between two pure sides; a stray block (snapclient may
            # write one more, late, as its player is replaced) does not move it.
            def score(j):
                left, right = phase[max(0, j - W):j], phase[j:j + W]
                ml, mr = statistics.median(left), statistics.median(right)
                spread = (sum(abs(x - ml) for x in left) + sum(abs(x - mr) for x in right)) / (len(left) + len(right))
                return abs(mr - ml) - 2 * spread
            js = range(max(1, i - W), min(n - 1, i + W + 1))
            return max(js, key=score) if js else i

        breaks = {0}
        for h in hints:
            cands = [i for i in range(1, n) if h - 5_000_000 <= mids[i] <= h + 150_000_000]
            if cands:
                i = max(cands, key=lambda j: step[j])
                if step[i] > 300_000:
                    breaks.add(refine(i))
        for i in range(1, n):
            if step[i] > 5_000_000 and step[i] >= max(step[max(1, i - W):i + W]):
                breaks.add(refine(i))
            if ks[i] - ks[i - 1] > 1:
                breaks.add(i)
        breaks = sorted(breaks) + [n]
        return [ks[breaks[j]:breaks[j + 1]] for j in range(len(breaks) - 1) if breaks[j + 1] > breaks[j]]

    def fit(self):
        """Per segment: least squares of write time on block index,
        excluding outliers (|residual| > max(0.5 ms, 4 x 1.4826 x MAD))
        twice; segments under 20 blocks keep the period at 50 ms. An
        outlier block keeps its observed write time (midpoint of the poll
        interval in which it appeared)."""
        self.params = []          # (first block, last block, intercept ns, slope ns/block)
        self.residuals, self.outliers, self.slopes_ppm, self.observed = [], 0, [], {}
        for seg in self.segments:
            use = list(seg)
            a, s = None, SNAP_PERIOD_NS
            for _ in range(3):
                if len(use) >= 20:
                    xs = [k for k in use]
                    ys = [self.mid[k] for k in use]
                    mx, my = statistics.fmean(xs), statistics.fmean(ys)
                    sxx = sum((x - mx) ** 2 for x in xs)
                    s = sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / sxx if sxx else SNAP_PERIOD_NS
                    a = my - s * mx
                else:
                    s = SNAP_PERIOD_NS
                    a = statistics.median(self.mid[k] - s * k for k in use)
                res = [self.mid[k] - (a + s * k) for k in seg]
                mad = statistics.median(abs(r - statistics.median(res)) for r in res) if res else 0
                limit = max(500_000, 4 * 1.4826 * mad)
                new = [k for k, r in zip(seg, res) if abs(r) <= limit]
                if len(new) < max(2, len(seg) // 2) or new == use:
                    break
                use = new
            res = {k: self.mid[k] - (a + s * k) for k in seg}
            keep = set(use)
            for k in seg:
                if k not in keep:     # off the schedule: its own (observed) time
                    self.observed[k] = self.mid[k]
            self.residuals += [res[k] for k in use]
            self.outliers += len(seg) - len(use)
            if len(seg) >= 20:
                self.slopes_ppm.append((s / SNAP_PERIOD_NS - 1) * 1e6)
            self.params.append((seg[0], seg[-1], a, s))
        self.firsts = [p[0] for p in self.params]
        n = len(self.blocks)
        self.note = (f"{n} blocks, {len(self.segments)} player instances, {self.outliers} outliers "
                     f"({100 * self.outliers / max(1, n):.1f} %)")

    def write_time(self, k):
        if k in self.observed:
            return self.observed[k]
        i = max(0, bisect.bisect_right(self.firsts, k) - 1)
        _, _, a, s = self.params[i]
        return a + s * k

    def time_of_frame(self, f):
        k = int(f // SNAP_BLOCK_FRAMES)
        return self.write_time(k) + SNAP_DAC_NS + (f - k * SNAP_BLOCK_FRAMES) * NS / RATE

    def frame_at_time(self, t):
        # heard times increase with frames (apart from sub-ms steps between instances): bisect on blocks
        lo, hi = 0, self.frames // SNAP_BLOCK_FRAMES
        while lo < hi:
            m = (lo + hi) // 2
            if self.time_of_frame((m + 1) * SNAP_BLOCK_FRAMES) <= t:
                lo = m + 1
            else:
                hi = m
        k = lo
        f = k * SNAP_BLOCK_FRAMES + (t - self.write_time(k) - SNAP_DAC_NS) * RATE / NS
        return int(max(k * SNAP_BLOCK_FRAMES, min(f, (k + 1) * SNAP_BLOCK_FRAMES)))

    def residual_stats(self):
        a = sorted(abs(r) for r in self.residuals)
        return {"median": pct(a, 50) / 1e3, "p95": pct(a, 95) / 1e3, "p99": pct(a, 99) / 1e3,
                "max": a[-1] / 1e3 if a else float("nan"), "outliers": self.outliers, "blocks": len(self.blocks),
                "instances": len(self.segments), "slope_ppm": self.slopes_ppm,
                "poll_width": pct(sorted(self.width.values()), 50) / 1e3}


# ------------------------------------------------------------------ detection

def s16(buf, off):
    return int.from_bytes(buf[off:off + 2], "little", signed=True)


def scan(path):
    """Click onsets (fractional frames, left channel) and the audible map
    (one byte per frame: 1 if either channel is at or above -42 dBFS)."""
    data = open(path, "rb").read()
    n = len(data) // FRAME_BYTES
    data = data[:n * FRAME_BYTES]
    loud = data[1::4].translate(LOUD_HI)
    hi_l, hi_r = data[1::4].translate(AUDIBLE_HI), data[3::4].translate(AUDIBLE_HI)
    audible = (int.from_bytes(hi_l, "big") | int.from_bytes(hi_r, "big")).to_bytes(n, "big") if n else b""
    onsets, last = [], -(1 << 60)
    pos = loud.find(1)
    while pos != -1:
        if pos - last > QUIET_FRAMES:
            cur = s16(data, 4 * pos)
            prev = s16(data, 4 * pos - 4) if pos > 0 else 0
            sign = 1 if cur > 0 else -1
            a, b = prev * sign, cur * sign
            frac = 1.0 if b <= a else min(1.0, max(0.0, (THRESHOLD - a) / (b - a)))
            onsets.append(pos - 1 + frac)
        last = pos
        pos = loud.find(1, pos + 1)
    return onsets, audible


class Heard:
    """An output with its clock: clicks (ns) and audible runs (ns)."""

    def __init__(self, out):
        self.out = out
        onsets, self.audible = scan(out.path)
        self.clicks = [out.time_of_frame(f) for f in onsets]
        # Audible runs as (first frame, end frame); silent stretches of at least 30 ms split them.
        runs, i, n, gap = [], 0, len(self.audible), bytes(int(0.030 * RATE))
        while i < n:
            i = self.audible.find(1, i)
            if i < 0:
                break
            j = self.audible.find(gap, i)
            j = n if j < 0 else j
            runs.append((i, j))
            i = j
        # ...in time, joining runs whose silence in between (or a hole between
        # two snapclient player instances) is shorter than 30 ms.
        self.runs = []
        for a, b in runs:
            # A run ends when its last frame has been heard (not when the next
            # frame is: snapclient's player instances leave holes in time).
            ta, tb = out.time_of_frame(a), out.time_of_frame(b - 1) + NS / RATE
            if self.runs and ta - self.runs[-1][1] < 30_000_000:
                self.runs[-1][1] = max(self.runs[-1][1], tb)
            else:
                self.runs.append([ta, tb])

    def silent_from(self, t, until):
        """Pause heard: the end of the audible run after which the output is
        silent for >= 300 ms, looking from t (before t if it already was)."""
        prev_end = None
        for a, b in self.runs:
            if b <= t:
                prev_end = b
                continue
            if a > until:
                break
            if a > t and prev_end is not None and a - prev_end >= LONG_SILENCE_NS:
                return prev_end
            prev_end = b
        if prev_end is not None and until - prev_end >= LONG_SILENCE_NS:
            return prev_end
        return None

    def audible_from(self, t, until):
        """Play heard: the start of the first audible run of at least 100 ms
        after t, provided silence at t; and the shorter blips before it."""
        blips = 0
        for a, b in self.runs:
            if b <= t:
                continue
            if a <= t or a > until:
                return None, blips    # still sounding at t, or nothing
            if b - a >= 100_000_000:
                return a, blips
            blips += 1
        return None, blips

    def track_start(self, t, until):
        """Next heard: frame 0 of the track whose marker comes first after t."""
        i = bisect.bisect_left(self.clicks, t)
        while i + 1 < len(self.clicks) and self.clicks[i] <= until:
            gap = (self.clicks[i + 1] - self.clicks[i]) / NS
            for g in MARKER_GAPS.values():
                if abs(gap - g) < MARKER_TOLERANCE_S:
                    return self.clicks[i] - CLICK_PHASE_S * NS
            i += 1
        return None

    def silence_between(self, t0, t1):
        """Total silent time in [t0, t1) (the hole a cut leaves)."""
        sound = 0
        for a, b in self.runs:
            lo, hi = max(a, t0), min(b, t1)
            if hi > lo:
                sound += hi - lo
        return max(0, (t1 - t0) - sound)


def pct(sorted_values, q):
    if not sorted_values:
        return float("nan")
    pos = (len(sorted_values) - 1) * q / 100
    lo = int(pos)
    hi = min(lo + 1, len(sorted_values) - 1)
    return sorted_values[lo] + (sorted_values[hi] - sorted_values[lo]) * (pos - lo)


def med(values):
    v = [x for x in values if x is not None and not (isinstance(x, float) and math.isnan(x))]
    return statistics.median(v) if v else float("nan")


def pair_offsets(ref, other, t0, t1):
    """(ref click ns, other - ref ns) for ref clicks in [t0, t1) with a click of other within 200 ms."""
    out = []
    for c in ref:
        if not t0 <= c < t1:
            continue
        j = bisect.bisect_left(other, c)
        best = None
        for k in (j - 1, j):
            if 0 <= k < len(other) and (best is None or abs(other[k] - c) < abs(best - c)):
                best = other[k]
        if best is not None and abs(best - c) < 200_000_000:
            out.append((c, best - c))
    return out


def offset_stats(pairs):
    if not pairs:
        return None
    d = [x / 1e3 for _, x in pairs]
    a = sorted(abs(x) for x in d)
    ts = [c / NS for c, _ in pairs]
    mt, md = statistics.fmean(ts), statistics.fmean(d)
    sxx = sum((t - mt) ** 2 for t in ts)
    slope = sum((t - mt) * (x - md) for t, x in zip(ts, d)) / sxx if sxx else 0.0
    return {"n": len(d), "median": pct(a, 50), "p95": pct(a, 95), "p99": pct(a, 99), "max": a[-1],
            "signed_median": statistics.median(d), "signed_mean": md, "slope": slope,
            "first": statistics.median(d[:10]), "last": statistics.median(d[-10:])}


# ------------------------------------------------------------------ phases

def phase_tutti(a, work, tracks):
    """A: offset and commands, Tutti leader with a Tutti speaker and a snapclient."""
    d = os.path.join(work, "A")
    os.makedirs(d)
    listen, control, snap = ports = free_ports(3)
    leader = start(RT + leader_argv(a.tuttid, d, ports, tracks), os.path.join(d, "leader.log"))
    wait_port(listen, leader, "tuttid leader")
    wait_port(control, leader, "tuttid leader (control)")
    wait_port(snap, leader, "tuttid leader (--snapcast-stream)")
    tutti_out, snap_out = os.path.join(d, "tutti1.raw"), os.path.join(d, "snap1.raw")
    poller = Poller(snap_out)
    poller.start()
    follower = start(RT + follower_argv(a.tuttid, listen, "tutti1", tutti_out), os.path.join(d, "tutti1.log"))
    client = start(RT + snapclient_argv(snap, "snap1", 1, snap_out), os.path.join(d, "snap1.log"))
    alive = [leader, follower, client]
    events = []
    try:
        wait_growing([tutti_out, snap_out], alive, "phase A")
        t_sync0 = mono() + a.warmup * NS
        t_sync1 = t_sync0 + a.seconds * NS
        log(f"  A: Tutti leader + Tutti speaker + snapclient: {a.warmup:g} s warm-up, {a.seconds} s of clicks, "
            f"then {a.reps} x pause/play/next")
        sleep_until(t_sync1, alive)
        rpc = RPC(control)
        t_cmd0 = mono() + 1 * NS
        for r in range(a.reps):
            for j, (dt, cmd) in enumerate(SCHEDULE):
                sleep_until(t_cmd0 + int((r * REP_SECONDS + dt) * NS) + dither(r, j), alive)
                sent, received, res = rpc.call(f"player.{cmd}")
                events.append({"cmd": cmd, "rep": r, "sent": sent, "received": received,
                               "accepted": res.get("acceptedAt"), "effective": res.get("effectiveAt")})
        t_end = t_cmd0 + int(a.reps * REP_SECONDS * NS)
        sleep_until(t_end, alive)
    finally:
        stop([follower, client])
        poller.stop()
        stop([leader])
    poller.save(os.path.join(d, "snap1.poll"))
    with open(os.path.join(d, "run.json"), "w") as f:
        json.dump({"sync": [t_sync0, t_sync1], "end": t_end, "events": events}, f)
    return d


def phase_snapserver(a, work, tracks):
    """B: the same commands on snapserver 0.26 and the same snapclient binary."""
    d = os.path.join(work, "B")
    os.makedirs(d)
    fifo = os.path.join(d, "fifo")
    os.mkfifo(fifo)
    conf = os.path.join(d, "snapserver.conf")
    open(conf, "w").close()                 # nothing from /etc/snapserver.conf
    sport, tport, hport = free_ports(3)
    source = (f"pipe://{fifo}?name=default&mode=read&sampleformat=48000:16:2"
              f"&codec=opus:BITRATE:160000,COMPLEXITY:10")
    server = start(RT + ["snapserver", "-c", conf, f"--server.datadir={d}", "--logging.sink=stdout",
                    "--http.enabled=false", f"--http.bind_to_address=127.0.0.1", f"--http.port={hport}",
                    "--tcp.bind_to_address=127.0.0.1", f"--tcp.port={tport}",
                    "--stream.bind_to_address=127.0.0.1", f"--stream.port={sport}",
                    f"--stream.source={source}"], os.path.join(d, "snapserver.log"))
    feeder = start(RT + [sys.executable, os.path.abspath(__file__), "--feeder", tracks[0], tracks[1], fifo],
                   os.path.join(d, "feeder.log"), stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    wait_port(sport, server, "snapserver")
    snap_out = os.path.join(d, "snap2.raw")
    poller = Poller(snap_out)
    poller.start()
    client = start(RT + snapclient_argv(sport, "snap2", 1, snap_out), os.path.join(d, "snap2.log"))
    alive = [server, feeder, client]
    events = []
    try:
        wait_growing([snap_out], alive, "phase B")
        # snapclient writes silence from the start: wait until it is audible.
        end = time.monotonic() + 15
        while time.monotonic() < end:
            with open(snap_out, "rb") as f:
                f.seek(max(0, os.path.getsize(snap_out) - 9600))
                if f.read()[1::2].translate(AUDIBLE_HI).count(1) > 1000:
                    break
            time.sleep(0.1)
        else:
            raise RuntimeError("phase B: snapclient never played snapserver's audio")
        log(f"  B: snapserver + feeder + snapclient: {a.warmup:g} s warm-up, then {a.reps} x pause/play/next")
        t_cmd0 = mono() + int(a.warmup * NS)
        for r in range(a.reps):
            for j, (dt, cmd) in enumerate(SCHEDULE):
                sleep_until(t_cmd0 + int((r * REP_SECONDS + dt) * NS) + dither(r, j), alive)
                sent = mono()
                feeder.stdin.write(cmd.encode() + b"\n")
                feeder.stdin.flush()
                ack = feeder.stdout.readline().decode().split()
                if len(ack) != 4 or ack[0] != "ack":
                    raise RuntimeError(f"the feeder answered {ack!r} to {cmd}")
                events.append({"cmd": cmd, "rep": r, "sent": sent, "acted": int(ack[2]), "queued": int(ack[3])})
        t_end = t_cmd0 + int(a.reps * REP_SECONDS * NS)
        sleep_until(t_end, alive)
    finally:
        stop([client])
        poller.stop()
        stop([feeder, server])
    poller.save(os.path.join(d, "snap2.poll"))
    with open(os.path.join(d, "run.json"), "w") as f:
        json.dump({"end": t_end, "events": events}, f)
    return d


def cpu_ticks(pid):
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rpartition(")")[2].split()
    return int(fields[11]) + int(fields[12])


def rss_kib(pid, key="VmRSS"):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith(key + ":"):
                return int(line.split()[1])
    return 0


def phase_cpu(a, work, tracks, with_snapclients):
    """C: the leader's CPU % of one core and RSS with 3 Tutti speakers (and 3 snapclients)."""
    tag = "C-snap" if with_snapclients else "C-tutti"
    d = os.path.join(work, tag)
    os.makedirs(d)
    listen, control, snap = ports = free_ports(3)
    leader = start(leader_argv(a.tuttid, d, ports, tracks), os.path.join(d, "leader.log"))
    wait_port(listen, leader, "tuttid leader")
    wait_port(snap, leader, "tuttid leader (--snapcast-stream)")
    named, outs = {"leader": leader}, []
    for i in range(1, 4):
        out = os.path.join(d, f"tutti{i}.raw")
        named[f"tutti{i}"] = start(follower_argv(a.tuttid, listen, f"tutti{i}", out, realtime=False),
                                   os.path.join(d, f"tutti{i}.log"))
        outs.append(out)
    if with_snapclients:
        for i in range(1, 4):
            out = os.path.join(d, f"snap{i}.raw")
            named[f"snap{i}"] = start(snapclient_argv(snap, f"snapcpu{i}", i, out), os.path.join(d, f"snap{i}.log"))
            outs.append(out)
    alive = list(named.values())
    try:
        wait_growing(outs, alive, tag)
        sleep_until(mono() + 5 * NS, alive)
        t0 = mono()
        c0 = {k: cpu_ticks(p.pid) for k, p in named.items()}
        s0 = {o: os.path.getsize(o) for o in outs}
        rss = {k: [] for k in named}
        for i in range(1, a.cpu_seconds + 1):
            sleep_until(t0 + i * NS, alive)
            for k, p in named.items():
                rss[k].append(rss_kib(p.pid))
        c1 = {k: cpu_ticks(p.pid) for k, p in named.items()}
        s1 = {o: os.path.getsize(o) for o in outs}
        el = (mono() - t0) / NS
    finally:
        stop(list(named.values()))
    res = {k: {"cpu": 100 * (c1[k] - c0[k]) / TICK / el, "rss": statistics.median(rss[k]) / 1024} for k in named}
    rates = {os.path.basename(o): (s1[o] - s0[o]) / el for o in outs}
    bad = [f"{k} {v:.0f} B/s" for k, v in rates.items() if abs(v - RATE * FRAME_BYTES) > 0.05 * RATE * FRAME_BYTES]
    if bad:
        raise RuntimeError(f"{tag}: an output did not play at 192000 B/s: {', '.join(bad)}")
    return res


# ------------------------------------------------------------------ analysis

def load_snap(d, name, hints=()):
    changes = []
    with open(os.path.join(d, name + ".poll")) as f:
        for line in f:
            if not line.startswith("#"):
                lo, hi, size = map(int, line.split())
                changes.append((lo, hi, size))
    return SnapOutput(os.path.join(d, name + ".raw"), changes, hints)


def command_latencies(heard, events, t_key, end):
    """{cmd: [latency ms per repetition]} plus the hole a next leaves (ms)."""
    out = {"pause": [], "play": [], "next": [], "next_hole": [], "play_blips": []}
    for i, e in enumerate(events):
        t = e[t_key]
        until = events[i + 1][t_key] if i + 1 < len(events) else end
        if e["cmd"] == "pause":
            h = heard.silent_from(t, until)
            out["pause"].append(None if h is None else (h - t) / 1e6)
        elif e["cmd"] == "play":
            h, blips = heard.audible_from(t, until)
            out["play"].append(None if h is None else (h - t) / 1e6)
            out["play_blips"].append(blips)
        elif e["cmd"] == "next":
            h = heard.track_start(t, until)
            out["next"].append(None if h is None else (h - t) / 1e6)
            out["next_hole"].append(None if h is None else heard.silence_between(t, h) / 1e6)
    return out


def analyze_tutti(d):
    run = json.load(open(os.path.join(d, "run.json")))
    tutti = Heard(TuttiOutput(os.path.join(d, "tutti1.raw")))
    snapout = load_snap(d, "snap1", [e["accepted"] for e in run["events"] if e.get("accepted")])
    snap = Heard(snapout)
    t0, t1 = run["sync"]
    events = run["events"]
    sync = offset_stats(pair_offsets(tutti.clicks, snap.clicks, t0, t1))
    after_pairs = pair_offsets(tutti.clicks, snap.clicks, t1, run["end"])
    after = offset_stats(after_pairs)
    if after:
        c, x = max(after_pairs, key=lambda p: abs(p[1]))
        last = max((e for e in events if e["sent"] <= c), key=lambda e: e["sent"], default=None)
        after["max_at"] = f"{(c - last['sent']) / NS:.2f} s after a {last['cmd']}" if last else "before the commands"
    ev = [dict(e, t=e["sent"]) for e in events]
    lat = {"tutti": command_latencies(tutti, ev, "t", run["end"]),
           "snap": command_latencies(snap, ev, "t", run["end"])}
    # Tutti's own schedule, for reference: effectiveAt - sent.
    lat["scheduled"] = {c: [(e["effective"] - e["sent"]) / 1e6 for e in events if e["cmd"] == c and e.get("effective")]
                        for c in ("pause", "play", "next")}
    lat["rpc"] = [(e["accepted"] - e["sent"]) / 1e6 for e in events if e.get("accepted")]
    headers = 1 + sum(1 for e in events if e["cmd"] in ("pause", "next"))
    check = "" if len(snapout.segments) == headers else f"  <-- expected {headers} (1 + a codec header per pause and next)"
    return {"sync": sync, "after": after, "lat": lat, "fit": snapout.residual_stats(),
            "notes": [f"tutti1: {tutti.out.note}", f"snap1: {snapout.note}{check}"]}


def analyze_snapserver(d):
    run = json.load(open(os.path.join(d, "run.json")))
    snapout = load_snap(d, "snap2")
    snap = Heard(snapout)
    ev = run["events"]
    lat = command_latencies(snap, ev, "sent", run["end"])
    lat["queued_ms"] = [e["queued"] / (RATE * FRAME_BYTES) * 1e3 for e in ev if e["queued"] >= 0 and e["cmd"] != "play"]
    return {"lat": lat, "fit": snapout.residual_stats(), "notes": [f"snap2: {snapout.note}"]}


# ------------------------------------------------------------------ report

def f(x, digits=1):
    return "n/a" if x is None or (isinstance(x, float) and math.isnan(x)) else f"{x:.{digits}f}"


def one_run_summary(A, B, C):
    """The figures of one run, flat."""
    s, la, lb = A["sync"] or {}, A["lat"], B["lat"]
    after = A["after"] or {}
    row = {
        "offset_median_us": s.get("median"), "offset_p95_us": s.get("p95"), "offset_p99_us": s.get("p99"),
        "offset_max_us": s.get("max"), "offset_signed_median_us": s.get("signed_median"),
        "offset_slope_us_per_s": s.get("slope"), "offset_clicks": s.get("n"),
        "after_median_us": after.get("median"), "after_p99_us": after.get("p99"), "after_max_us": after.get("max"),
        "after_signed_median_us": after.get("signed_median"), "after_clicks": after.get("n"),
        "fit_median_us": A["fit"]["median"], "fit_p95_us": A["fit"]["p95"], "fit_p99_us": A["fit"]["p99"],
        "fit_max_us": A["fit"]["max"], "fit_outliers": A["fit"]["outliers"], "fit_blocks": A["fit"]["blocks"],
        "fit_instances": A["fit"]["instances"], "fit_poll_width_us": A["fit"]["poll_width"],
        "fitB_p99_us": B["fit"]["p99"],
        "rpc_ms": med(la["rpc"]),
        "scheduled_pause_ms": med(la["scheduled"]["pause"]), "scheduled_next_ms": med(la["scheduled"]["next"]),
        "queued_ms": med(lb["queued_ms"]),
    }
    for who, lat in (("tutti", la["tutti"]), ("snap", la["snap"]), ("server", lb)):
        for c in ("pause", "play", "next", "next_hole"):
            row[f"{who}_{c}_ms"] = med(lat[c])
            row[f"{who}_{c}_missed"] = sum(1 for x in lat[c] if x is None)
        row[f"{who}_blips"] = sum(lat["play_blips"])
    for k in ("tutti", "snap"):
        row[f"cpu_{k}_leader_pct"] = C[k]["leader"]["cpu"]
        row[f"cpu_{k}_leader_rss"] = C[k]["leader"]["rss"]
    row["cpu_delta_pct"] = row["cpu_snap_leader_pct"] - row["cpu_tutti_leader_pct"]
    row["cpu_snapclient_pct"] = statistics.fmean(C["snap"][f"snap{i}"]["cpu"] for i in range(1, 4))
    row["cpu_follower_pct"] = statistics.fmean(C["tutti"][f"tutti{i}"]["cpu"] for i in range(1, 4))
    row["rss_snapclient"] = statistics.fmean(C["snap"][f"snap{i}"]["rss"] for i in range(1, 4))
    return row


def print_run(i, A, B, C, row):
    s = A["sync"]
    print(f"run {i}:")
    for n in A["notes"] + B["notes"]:
        print(f"  {n}")
    if s:
        print(f"  offset snapclient - Tutti speaker, {s['n']} clicks in the sync window: |µs| median {f(s['median'])} "
              f"p95 {f(s['p95'])} p99 {f(s['p99'])} max {f(s['max'])}; signed median {f(s['signed_median'])} µs, "
              f"first/last 10 clicks {f(s['first'])}/{f(s['last'])} µs, slope {f(s['slope'], 3)} µs/s")
    else:
        print("  offset: no paired clicks in the sync window")
    if A["after"]:
        s = A["after"]
        print(f"  offset during the command phase (after cuts), {s['n']} clicks: |µs| median {f(s['median'])} "
              f"p99 {f(s['p99'])} max {f(s['max'])} ({s['max_at']}); signed median {f(s['signed_median'])} µs")
    fa = A["fit"]
    print(f"  snapclient block fit (phase A): |residual| µs median {f(fa['median'])} p95 {f(fa['p95'])} "
          f"p99 {f(fa['p99'])} max {f(fa['max'])} (inliers), {fa['outliers']}/{fa['blocks']} outliers, "
          f"{fa['instances']} player instances, period error {', '.join(f(x, 2) for x in fa['slope_ppm'])} ppm; "
          f"poll interval median {f(fa['poll_width'])} µs")
    fb = B["fit"]
    print(f"  snapclient block fit (phase B): |residual| µs median {f(fb['median'])} p99 {f(fb['p99'])} "
          f"max {f(fb['max'])}, {fb['outliers']}/{fb['blocks']} outliers, {fb['instances']} player instances")
    la, lb = A["lat"], B["lat"]
    for c in ("pause", "play", "next", "next_hole"):
        print(f"  {c:9} ms per repetition: Tutti speaker {[f(x) for x in la['tutti'][c]]}  "
              f"snapclient on Tutti {[f(x) for x in la['snap'][c]]}  snapclient on snapserver {[f(x) for x in lb[c]]}")
    print(f"  blips (audible for < 100 ms) between play and the sound: Tutti speaker {row['tutti_blips']}, "
          f"snapclient on Tutti {row['snap_blips']}, snapclient on snapserver {row['server_blips']}")
    print(f"  Tutti: command sent -> acceptedAt {f(row['rpc_ms'], 2)} ms, -> effectiveAt pause {f(row['scheduled_pause_ms'])} "
          f"next {f(row['scheduled_next_ms'])} ms; snapserver's FIFO held {f(row['queued_ms'])} ms at the feeder's pause and next")
    print(f"  leader CPU % / RSS MiB: 3 Tutti speakers {f(row['cpu_tutti_leader_pct'], 2)} / {f(row['cpu_tutti_leader_rss'])}; "
          f"+ 3 snapclients {f(row['cpu_snap_leader_pct'], 2)} / {f(row['cpu_snap_leader_rss'])}; "
          f"snapclient CPU {f(row['cpu_snapclient_pct'], 2)} %, RSS {f(row['rss_snapclient'])} MiB; "
          f"Tutti speaker CPU {f(row['cpu_follower_pct'], 2)} %")


def print_table(rows, a):
    m = {k: med([r[k] for r in rows]) for k in rows[0]}
    rng = lambda k, d=1: (f"  ({f(min(r[k] for r in rows), d)}–{f(max(r[k] for r in rows), d)})"
                          if len(rows) > 1 and all(r[k] is not None and not math.isnan(r[k]) for r in rows) else "")
    miss = lambda w, c: (f", {sum(r[f'{w}_{c}_missed'] for r in rows)} not seen" if any(r[f"{w}_{c}_missed"] for r in rows) else "")
    n = len(rows)
    print()
    print(f"bench/snapcast summary: {'median of ' + str(n) + ' runs' if n > 1 else '1 run'} "
          f"(range in brackets); {a.seconds} s of clicks, {a.reps} repetitions, CPU over {a.cpu_seconds} s")
    print(f"  {'snapclient (on the Tutti leader) - Tutti speaker, µs':58} median {f(m['offset_median_us'])}  p95 {f(m['offset_p95_us'])}  "
          f"p99 {f(m['offset_p99_us'])}  max {f(m['offset_max_us'])}{rng('offset_max_us')}")
    print(f"  {'  signed median µs; drift µs/s':58} {f(m['offset_signed_median_us'])}{rng('offset_signed_median_us')};  "
          f"{f(m['offset_slope_us_per_s'], 3)}{rng('offset_slope_us_per_s', 3)}")
    print(f"  {'  after cuts (command phase) |µs|':58} median {f(m['after_median_us'])}  p99 {f(m['after_p99_us'])}  "
          f"max {f(m['after_max_us'])}{rng('after_max_us')}; signed median {f(m['after_signed_median_us'])}")
    print(f"  {'  block-time fit |residual| µs (measurement precision)':58} median {f(m['fit_median_us'])}  p95 {f(m['fit_p95_us'])}  "
          f"p99 {f(m['fit_p99_us'])}  max {f(m['fit_max_us'])}{rng('fit_p99_us')}")
    print(f"  {'heard latency, ms (median of ' + str(a.reps) + ')':42} {'Tutti speaker':>14} {'snapclient/Tutti':>17} {'snapclient/snapserver':>22}")
    for c, label in (("pause", "pause -> silent"), ("play", "play -> sound"), ("next", "next -> next track's frame 0"),
                     ("next_hole", "  silence heard around the next")):
        cells = [f(m[f"{w}_{c}_ms"]) + miss(w, c) for w in ("tutti", "snap", "server")]
        print(f"  {label:42} {cells[0]:>14} {cells[1]:>17} {cells[2]:>22}")
    blips = {w: sum(r[f"{w}_blips"] for r in rows) for w in ("tutti", "snap", "server")}
    if any(blips.values()):
        print(f"  {'  blips of < 100 ms before the sound after play (all runs)':42} {blips['tutti']:>14} {blips['snap']:>17} {blips['server']:>22}")
    print(f"  {'leader CPU % of one core: 3 Tutti speakers':58} {f(m['cpu_tutti_leader_pct'], 2)}{rng('cpu_tutti_leader_pct', 2)}")
    print(f"  {'leader CPU %: 3 Tutti speakers + 3 snapclients':58} {f(m['cpu_snap_leader_pct'], 2)}{rng('cpu_snap_leader_pct', 2)}")
    print(f"  {'  the 3 snapclients cost the leader (per-run difference)':58} {f(m['cpu_delta_pct'], 2)}{rng('cpu_delta_pct', 2)}")
    print(f"  {'leader RSS MiB: without / with the snapclients':58} {f(m['cpu_tutti_leader_rss'])} / {f(m['cpu_snap_leader_rss'])}")
    print(f"  {'(snapclient CPU % / RSS MiB; Tutti speaker CPU %)':58} {f(m['cpu_snapclient_pct'], 2)} / {f(m['rss_snapclient'])}; "
          f"{f(m['cpu_follower_pct'], 2)}")
    print("snapcast " + " ".join(f"{k}={f(m[k], 2)}" for k in (
        "offset_median_us", "offset_p99_us", "offset_max_us", "fit_p99_us", "tutti_pause_ms", "snap_pause_ms",
        "server_pause_ms", "tutti_next_ms", "snap_next_ms", "server_next_ms", "cpu_tutti_leader_pct",
        "cpu_snap_leader_pct")) + f" runs={n}")


# ------------------------------------------------------------------ main

def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--tuttid")
    ap.add_argument("--seconds", type=int, default=30)
    ap.add_argument("--warmup", type=float, default=3.0)
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--cpu-seconds", type=int, default=30)
    ap.add_argument("--runs", type=int, default=1)
    ap.add_argument("--keep", action="store_true")
    ap.add_argument("--priority", choices=("rt", "normal"), default="rt",
                    help="rt: in phases A and B run every process under test and the size poll SCHED_FIFO 10")
    ap.add_argument("--analyze", metavar="WORK_DIR")
    a = ap.parse_args()
    if a.analyze:
        A = analyze_tutti(os.path.join(a.analyze, "A"))
        B = analyze_snapserver(os.path.join(a.analyze, "B"))
        print(json.dumps({"A": A, "B": B}, indent=1, default=str))
        return
    if not a.tuttid:
        ap.error("--tuttid is required")
    if a.seconds < 5 or a.reps < 1 or a.cpu_seconds < 5 or a.runs < 1:
        ap.error("--seconds and --cpu-seconds at least 5, --reps and --runs at least 1")
    if a.priority == "rt":
        if shutil.which("chrt") and subprocess.run(["chrt", "-f", "10", "true"]).returncode == 0:
            RT[:] = ["chrt", "-f", "10"]
        else:
            log("note: cannot run SCHED_FIFO here (chrt -f 10 failed): phases A and B run at normal priority")
    work = tempfile.mkdtemp(prefix="tutti-bench-snapcast.")
    rows = []
    try:
        tracks = []
        for name in ("A", "B"):
            p = os.path.join(work, name + ".wav")
            write_wav(p, track_pcm(name))
            tracks.append(p)
        measured = []
        for i in range(1, a.runs + 1):
            log(f"run {i}/{a.runs} (work folder {work}/run{i})")
            RUN[0] = i
            w = os.path.join(work, f"run{i}")
            os.makedirs(w)
            da = phase_tutti(a, w, tracks)
            db = phase_snapserver(a, w, tracks)
            log("  C: the leader's CPU with 3 Tutti speakers, then with 3 snapclients too")
            C = {"tutti": phase_cpu(a, w, tracks, False), "snap": phase_cpu(a, w, tracks, True)}
            measured.append((da, db, C))
        # Every process is stopped: the analysis may yield to the machine's other work.
        os.nice(5)
        log("analysing")
        for i, (da, db, C) in enumerate(measured, 1):
            A, B = analyze_tutti(da), analyze_snapserver(db)
            row = one_run_summary(A, B, C)
            rows.append(row)
            print_run(i, A, B, C, row)
            sys.stdout.flush()
        print_table(rows, a)
    finally:
        stop_all()
        if a.keep:
            log(f"work folder kept: {work}")
        else:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    if len(sys.argv) == 5 and sys.argv[1] == "--feeder":
        signal.signal(signal.SIGPIPE, signal.SIG_DFL)
        try:
            feeder_main(*sys.argv[2:])
        except (BrokenPipeError, KeyboardInterrupt):
            pass
        sys.exit(0)

    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
    import benchmain                     # bench/benchmain.py: signals and exit codes
    benchmain.run(main)
