#!/usr/bin/env python3
"""Check bench/sync's analysis and control client on synthetic data (no tuttid).

  python3 bench/sync/selftest.py        prints the analysis and "selftest ok"

Builds, in a temporary directory, what a run would leave behind: three DACs
(two tuttid virtual-DAC files at -150/+150 ppm, one vdac log) whose clicks
leave at known offsets, a late joiner that is 300 µs off for its first two
clicks, a pause (silence 250 ms after acceptedAt, resumed 250 ms after
play's acceptedAt) and a next (track B's frame 0 heard 250 ms after
acceptedAt); plus a commands.jsonl whose rooms.list answer comes from a
mock JSON-RPC server through control.Client. Then runs analyze.py on it and
checks the figures.
"""
import array
import json
import math
import os
import re
import socket
import subprocess
import sys
import tempfile
import threading

HERE = os.path.dirname(os.path.abspath(__file__))
sys.dont_write_bytecode = True   # no __pycache__ in the source tree
sys.path.insert(0, HERE)
import control  # noqa: E402

RATE = 48000
T0 = 1_000_000_000_000
S = 1_000_000_000


def content_events():
    """Leader-time schedule: clicks, silent spans, and the commands."""
    a_start = T0 + S * 3 // 10
    pause_acc, play_acc, next_acc = T0 + 10 * S, T0 + 11_500_000_000, T0 + 14 * S
    silent = (pause_acc + 250_000_000, play_acc + 250_000_000)
    b_start = next_acc + 250_000_000
    clicks = [a_start + 500_000_000, a_start + 620_000_000]
    k = 1
    while True:
        c = a_start + k * S + 500_000_000
        if c >= silent[0]:
            break
        clicks.append(c)
        k += 1
    shift = silent[1] - silent[0]   # A resumes where it stopped
    while True:
        c = a_start + k * S + 500_000_000 + shift
        if c >= b_start:
            break
        if c >= silent[1]:
            clicks.append(c)
        k += 1
    clicks += [b_start + 250_000_000, b_start + 400_000_000]
    clicks += [b_start + k * S + 250_000_000 for k in range(1, 11)]
    commands = [("player.pause", pause_acc), ("player.play", play_acc), ("player.next", next_acc)]
    return clicks, silent, commands


def write_file_dac(path, ppm, offset_ns, start_ns, end_ns, clicks, silent, late_error=None):
    ns_per_frame = 1e9 / (RATE * (1 + ppm / 1e6))
    n = int((end_ns - start_ns) / ns_per_frame)
    a = array.array("h", [0, 3000]) * n                  # L silent, R audible
    def frame(t):   # first frame at or after t on the DAC's own grid; the offset then delays the whole DAC
        return math.ceil((t - start_ns) / ns_per_frame - 1e-6)
    lo, hi = max(0, frame(silent[0])), min(n, frame(silent[1]))
    if hi > lo:
        a[2 * lo:2 * hi] = array.array("h", bytes(4 * (hi - lo)))
    for i, c in enumerate(clicks):
        extra = late_error(i, c) if late_error else 0
        g = frame(c + extra)
        if 0 <= g < n:
            a[2 * g] = 29491
    with open(path, "wb") as f:
        a.tofile(f)
    with open(path + ".timing", "w") as f:
        for F in range(0, n, 240):
            f.write(f"{F} {start_ns + offset_ns + round(F * ns_per_frame)}\n")


def write_vdac_log(path, ppm, offset_ns, start_ns, end_ns, clicks, silent):
    ns_per_frame = 1e9 / (RATE * (1 + ppm / 1e6))
    with open(path, "w") as f:
        f.write(f"# vdac 1 pid=1 pcm=x ppm={ppm:.6f} extra_delay_us=0.000 click_threshold=0.5\n")
        f.write("# hw_params rate=48000 channels=2 format=S16_LE access=RW_INTERLEAVED period=480 buffer=1920 periods=4\n")
        f.write(f"START {start_ns + offset_ns} 0 rate=48000 ppm={ppm:g} start\n")
        frame = 0
        cs = iter(sorted(c for c in clicks if start_ns <= c < end_ns))
        c = next(cs, None)
        while True:
            t = start_ns + offset_ns + round(frame * ns_per_frame)
            if t > end_ns:
                break
            peak = 0.0 if silent[0] <= t - offset_ns and t - offset_ns + 480 * ns_per_frame <= silent[1] else 0.09
            f.write(f"{t} {frame} 480 {peak:.6f}\n")
            frame += 480
            t_end = start_ns + offset_ns + round(frame * ns_per_frame)
            while c is not None and c + offset_ns < t_end:
                g = math.ceil((c - start_ns) / ns_per_frame - 1e-6)
                f.write(f"CLICK {start_ns + offset_ns + round(g * ns_per_frame)} {int(g)}\n")
                c = next(cs, None)


class MockLeader:
    """JSON-RPC over TCP: answers like the coming --control port."""

    def __init__(self):
        self.server = socket.socket()
        self.server.bind(("127.0.0.1", 0))
        self.server.listen(1)
        self.port = self.server.getsockname()[1]
        threading.Thread(target=self.serve, daemon=True).start()

    def serve(self):
        conn, _ = self.server.accept()
        buf = b""
        while True:
            data = conn.recv(4096)
            if not data:
                return
            buf += data
            while b"\n" in buf:
                line, buf = buf.split(b"\n", 1)
                req = json.loads(line)
                now = control.mono()
                if req["method"] == "rooms.list":
                    result = {"rooms": [{"name": "f1", "health": {"underruns": 0, "hardResyncs": 1, "concealed": 2}},
                                        {"name": "f2", "underruns": 0, "hardResyncs": 0, "concealed": 0}]}
                else:
                    result = {"acceptedAt": now, "effectiveAt": now + 250_000_000}
                # a notification first: the client must skip it
                conn.sendall(b'{"jsonrpc":"2.0","method":"player.changed","params":{}}\n')
                conn.sendall(json.dumps({"jsonrpc": "2.0", "id": req["id"], "result": result}).encode() + b"\n")


def main():
    clicks, silent, commands = content_events()
    end = T0 + 25 * S
    mock = MockLeader()
    client = control.Client("127.0.0.1", mock.port)
    client.connect()
    sent, received, reply = client.call("player.pause")
    assert "acceptedAt" in reply["result"] and received >= sent, reply
    _, _, rooms = client.call("rooms.list")

    with tempfile.TemporaryDirectory() as d:
        offsets = {"f1": 0, "f2": 7_000, "f3": -12_000}
        write_file_dac(os.path.join(d, "f1.raw"), -150, offsets["f1"], T0, end, clicks, silent)
        write_file_dac(os.path.join(d, "f2.raw"), 150, offsets["f2"], T0, end, clicks, silent)
        write_vdac_log(os.path.join(d, "f3.vdac.log"), 0, offsets["f3"], T0, end, clicks, silent)
        late_start = T0 + 5 * S
        write_file_dac(os.path.join(d, "late.raw"), 80, 0, late_start, end, clicks, silent,
                       late_error=lambda i, c: 300_000 if c < late_start + 2 * S else 0)
        with open(os.path.join(d, "manifest"), "w") as f:
            f.write(f"run t0={T0} end={end} warmup=3 sink=file control=on\n")
            f.write("dac name=f1 kind=file path=f1.raw ppm=-150 late=0\n")
            f.write("dac name=f2 kind=file path=f2.raw ppm=150 late=0\n")
            f.write("dac name=f3 kind=vdac path=f3.vdac.log ppm=0 late=0\n")
            f.write(f"dac name=late kind=file path=late.raw ppm=80 late=1 launch={late_start}\n")
        with open(os.path.join(d, "commands.jsonl"), "w") as f:
            for method, acc in commands:
                f.write(json.dumps({"method": method, "sent_ns": acc - 100_000, "received_ns": acc + 100_000,
                                    "result": {"acceptedAt": acc, "effectiveAt": acc + 250_000_000}}) + "\n")
            f.write(json.dumps({"method": "rooms.list", "result": rooms["result"]}) + "\n")
        out = subprocess.run([sys.executable, os.path.join(HERE, "analyze.py"), d],
                             capture_output=True, text=True)
    print(out.stdout, end="")
    print(out.stderr, end="", file=sys.stderr)
    text = out.stdout

    def figure(pattern):
        m = re.search(pattern, text, re.M)  # $: the end of a line (the case line follows)
        assert m, f"missing: {pattern}"
        return float(m.group(1))

    failures = []
    def check(name, value, lo, hi):
        if not lo <= value <= hi:
            failures.append(f"{name}={value} not in [{lo}, {hi}]")
    # Frames are 20.8 µs apart: each click lands on the first frame at or after its instant, so
    # offsets come out within a frame; interpolation (file DACs) is exact for a one-sample click.
    check("f1~f2 median", figure(r"pair f1~f2: .*? median=([\d.]+)"), 7 - 21, 7 + 21)
    check("f1~f3 median", figure(r"pair f1~f3: .*? median=([\d.]+)"), 12 - 21, 12 + 21)
    check("pause", figure(r"command pause: .*?worst DAC=([\d.]+)"), 249.9, 260.5)
    check("play", figure(r"command play: .*?worst DAC=([\d.]+)"), 249.9, 260.5)
    check("next", figure(r"command next: .*?worst DAC=([\d.]+)"), 249.9, 250.1)
    check("join", figure(r"join_s=([\d.]+)"), 2.0, 3.0)
    check("hardResyncs f1", figure(r"health f1: .*hardResyncs=(\d+)"), 1, 1)
    check("final", figure(r"sync_us median=([\d.]+) p99=[\d.]+ max=[\d.]+ pause_ms=[\d.]+ next_ms=[\d.]+$"), 0, 40)
    if failures or out.returncode != 0:
        print("selftest FAILED: " + "; ".join(failures) + f" (rc={out.returncode})")
        return 1
    print("selftest ok")
    return 0


if __name__ == "__main__":
    sys.exit(main())
