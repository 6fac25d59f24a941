#!/usr/bin/env python3
"""bench/groups: how fast and how tightly does a room join another group?

  bench/groups/run.py [--reps N] [--codec opus|pcm] [--keep]

Starts a leader and two followers on 127.0.0.1, each on tuttid's virtual DAC
(file output, crystals at -100 and +120 ppm, simulated clocks seconds apart).
The main group plays a track of 2 ms clicks once a second over silence; room
`f2` is put in its own group "B" playing a steady 880 Hz tone; after 10 s
(the clocks settle, as after bench/sync's warm-up), N times:
`party.on` (f2 joins the main group), 3 s, `party.off` (f2 back in B), `player.play`
for B, 3 s. From what each DAC really played (its raw samples and .timing log):

  join_ms   from the party.on request to f2's tone stopping (f2 switched),
  sync_us   |click instant at f2 - same click at f1| for every click f2 heard
            in party mode, from 0.3 s after it joined.

Last line:  groups party_join_ms median=… max=… sync_us median=… p99=… max=…
Environment: TUTTID / TUTTI (default .build/release/tuttid, built if missing).
Python 3 standard library only.
"""
import argparse
import array
import json
import math
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import wave

RATE = 48_000
HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))


def mono_ns():
    return time.clock_gettime_ns(time.CLOCK_MONOTONIC)


def write_wav(path, seconds, clicks, tone):
    """Clicks (2 ms, 2 kHz, full scale) once a second at 0.5 s, and/or a 0.3 sine at 880 Hz, both channels."""
    one = array.array("h", bytes(4 * RATE))
    for i in range(RATE):
        v = int(0.3 * 32767 * math.sin(2 * math.pi * 880 * i / RATE)) if tone else 0
        if clicks and RATE // 2 <= i < RATE // 2 + 96:
            v = int(0.9 * 32767 * math.cos(2 * math.pi * 2000 * (i - RATE // 2) / RATE))
        one[2 * i] = one[2 * i + 1] = v
    with wave.open(path, "wb") as w:
        w.setnchannels(2)
        w.setsampwidth(2)
        w.setframerate(RATE)
        for _ in range(seconds):
            w.writeframes(one.tobytes())


class DAC:
    """What one virtual DAC played: left-channel samples and when each block left."""

    def __init__(self, path, ppm):
        raw = array.array("h")
        with open(path, "rb") as f:
            raw.frombytes(f.read()[: (os.path.getsize(path) // 4) * 4])
        self.left = raw[0::2]
        self.rate = RATE * (1 + ppm * 1e-6)
        self.blocks = []
        with open(path + ".timing") as f:
            for line in f:
                parts = line.split()
                if len(parts) == 2 and line.endswith("\n"):
                    self.blocks.append((int(parts[0]), int(parts[1])))

    def time_of(self, frame):
        lo, hi = 0, len(self.blocks) - 1
        found = -1
        while lo <= hi:
            mid = (lo + hi) // 2
            if self.blocks[mid][0] <= frame:
                found, lo = mid, mid + 1
            else:
                hi = mid - 1
        if found < 0:
            return None
        f0, t0 = self.blocks[found]
        return t0 + int((frame - f0) / self.rate * 1e9)

    def frame_at(self, t):
        for f0, t0 in self.blocks:
            if t0 >= t:
                return f0
        return len(self.left)

    def clicks(self, start_ns, end_ns):
        """Onsets above 20000 after at least 0.1 s below it."""
        out, quiet = [], RATE
        for i in range(self.frame_at(start_ns), min(self.frame_at(end_ns), len(self.left))):
            if abs(self.left[i]) >= 20_000:
                if quiet >= RATE // 10:
                    t = self.time_of(i)
                    if t is not None:
                        out.append(t)
                quiet = 0
            else:
                quiet += 1
        return out

    def tone_stops(self, after_ns, level=2_000, frames=480):
        """First instant after `after_ns` from which the tone is gone for `frames` frames."""
        run = 0
        for i in range(self.frame_at(after_ns), len(self.left)):
            if abs(self.left[i]) < level:
                run += 1
                if run >= frames:
                    return self.time_of(i - frames + 1)
            else:
                run = 0
        return None


def rpc(port, method, params=None):
    with socket.create_connection(("127.0.0.1", port), timeout=5) as s:
        request = {"jsonrpc": "2.0", "id": 1, "method": method, "params": params or {}}
        sent = mono_ns()
        s.sendall((json.dumps(request) + "\n").encode())
        f = s.makefile()
        while True:
            line = f.readline()
            if not line:
                raise ConnectionError("leader closed the control connection")
            message = json.loads(line)
            if message.get("id") == 1:
                if "error" in message:
                    raise RuntimeError(f"{method}: {message['error']['message']}")
                return sent, message["result"]


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def pct(values, q):
    if not values:
        return float("nan")
    v = sorted(values)
    pos = (len(v) - 1) * q / 100
    lo = int(math.floor(pos))
    hi = min(lo + 1, len(v) - 1)
    return v[lo] + (v[hi] - v[lo]) * (pos - lo)


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--reps", type=int, default=5)
    p.add_argument("--codec", choices=["opus", "pcm"], default="opus")
    p.add_argument("--keep", action="store_true")
    a = p.parse_args()
    if not 1 <= a.reps <= 100:
        p.error("--reps: 1…100")

    tuttid = os.environ.get("TUTTID", os.path.join(REPO, ".build/release/tuttid"))
    if not os.path.exists(tuttid):
        for product in ["tuttid", "tutti-follower"]:  # `tuttid follower` runs tutti-follower when beside it
            subprocess.run(["swift", "build", "-c", "release", "--product", product], cwd=REPO, check=True)
    run = tempfile.mkdtemp(prefix="tutti-bench-groups-")
    seconds = 14 + 6 * a.reps + 4
    write_wav(os.path.join(run, "clicks.wav"), seconds + 10, clicks=True, tone=False)
    write_wav(os.path.join(run, "tone.wav"), seconds + 10, clicks=False, tone=True)
    listen, control = free_port(), free_port()
    procs = []
    try:
        procs.append(subprocess.Popen([tuttid, "leader", "--listen", f"127.0.0.1:{listen}", "--control", f"127.0.0.1:{control}",
                                       "--mpd", "off", "--no-announce", "--codec", a.codec, "--play", os.path.join(run, "clicks.wav")],
                                      stderr=open(os.path.join(run, "leader.log"), "w")))
        ppm = {"f1": -100, "f2": 120}
        clocks = {"f1": ("3000", "40"), "f2": ("-2500", "-35")}
        for name in ("f1", "f2"):
            procs.append(subprocess.Popen([tuttid, "follower", "--leader", f"127.0.0.1:{listen}", "--name", name,
                                           "--output", f"file:{run}/{name}.raw,ppm={ppm[name]}",
                                           "--clock-offset-ms", clocks[name][0], "--clock-skew-ppm", clocks[name][1]],
                                          stderr=open(os.path.join(run, f"{name}.log"), "w")))
        deadline = time.time() + 10
        while True:
            try:
                rooms = [r["name"] for r in rpc(control, "rooms.list")[1]["rooms"]]
                if sorted(rooms) == ["f1", "f2"]:
                    break
            except OSError:
                pass
            if time.time() > deadline:
                sys.exit("bench/groups: the followers did not join within 10 s")
            time.sleep(0.1)
        rpc(control, "groups.create", {"name": "B", "rooms": ["f2"]})
        rpc(control, "queue.add", {"group": "B", "uris": [os.path.join(run, "tone.wav")]})
        rpc(control, "player.play", {"group": "B"})
        time.sleep(10)  # clocks converge (as bench/sync's warm-up); f2 plays the tone
        parties = []
        for _ in range(a.reps):
            sent, _ = rpc(control, "party.on")
            parties.append(sent)
            time.sleep(3)
            rpc(control, "party.off")
            rpc(control, "player.play", {"group": "B"})
            time.sleep(3)
        time.sleep(1)
    finally:
        for proc in procs:
            proc.terminate()
        for proc in procs:
            proc.wait(timeout=10)

    f1, f2 = DAC(os.path.join(run, "f1.raw"), -100), DAC(os.path.join(run, "f2.raw"), 120)
    joins, diffs = [], []
    for t in parties:
        stop = f2.tone_stops(t)
        if stop is None or stop - t > 2e9:
            print(f"party at {t}: f2's tone did not stop within 2 s")
            continue
        joins.append((stop - t) / 1e6)
        c1 = f1.clicks(stop + 300_000_000, t + 3_000_000_000)
        for c in f2.clicks(stop + 300_000_000, t + 3_000_000_000):
            nearest = min(c1, key=lambda x: abs(x - c), default=None)
            if nearest is not None and abs(nearest - c) < 200_000_000:
                diffs.append(abs(nearest - c) / 1e3)
    print(f"{len(parties)} party joins, codec {a.codec}; join ms: {', '.join(f'{j:.1f}' for j in joins)}")
    print(f"{len(diffs)} clicks compared in party mode; |f2 - f1| µs: {', '.join(f'{d:.0f}' for d in sorted(diffs))}")
    if a.keep:
        print(f"run directory: {run}")
    else:
        shutil.rmtree(run, ignore_errors=True)
    print(f"groups party_join_ms median={pct(joins, 50):.1f} max={max(joins, default=float('nan')):.1f} "
          f"sync_us median={pct(diffs, 50):.1f} p99={pct(diffs, 99):.1f} max={max(diffs, default=float('nan')):.1f}")
    return 0 if joins and diffs else 1


if __name__ == "__main__":
    sys.exit(main())
