#!/usr/bin/env python3
"""bench/sendspin: a Sendspin player beside a Tutti speaker on one leader.

    bench/sendspin/run.py [--seconds 60] [--codec pcm|flac] [--runs 1] [--lead-ms 250] [--keep]
    bench/sendspin/run.py --mode player [--codec pcm|flac|opus|all]   # a Tutti speaker on aiosendspin's server
    TUTTID=/path/to/tuttid bench/sendspin/run.py        # a given build (default .build/release/tuttid)

One run: a leader plays bench/sync's click tracks (gen_signal.py: a click a
second on the left, track markers, a 1 kHz tone on the right) with PCM on
the wire; a Tutti speaker (`tuttid follower`) plays into the project's file
DAC (raw audio and a timing log); a Sendspin player built on PyPI's
aiosendspin 10.2.1 (Tests/Sendspin/sendspin_player.py: aiosendspin's
reference time filter, models and decoders) joins over the plain path and
"plays" each chunk when its filter maps the chunk's timestamp to now. After
a warm-up, pause, play and next are sent over JSON-RPC every few seconds.

It prints, for the Sendspin player against the Tutti speaker: how far apart
the same clicks were (median, p99, max, µs), and for each command the time
from the leader accepting it to each room hearing it (ms): a pause when its
audio stops, a play when it starts again, a next when the next track's
marker is heard.

Needs the venv the tests use (scripts/setup.sh makes it:
~/.cache/tutti/sendspin-venv). Everything listens on 127.0.0.1 on free
ports; every process started is stopped; the run folder is removed unless
--keep.
"""
import argparse
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(ROOT, "bench", "sync"))
import analyze  # noqa: E402  (bench/sync's FileDAC, click pairing and track markers)

RATE = 48000
VENV = os.path.join(os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "tutti", "sendspin-venv", "bin", "python3")


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def rpc(port, method, params=None):
    with socket.create_connection(("127.0.0.1", port), timeout=5) as s:
        s.sendall((json.dumps({"jsonrpc": "2.0", "id": 1, "method": method, "params": params or {}}) + "\n").encode())
        for line in s.makefile():
            reply = json.loads(line)
            if reply.get("id") == 1:  # notifications (player.changed) come first
                return reply
        return {}


class SendspinRoom:
    """The reference client's output as a DAC: played frames and when each block played."""

    def __init__(self, prefix):
        self.blocks = []  # (local ns, first frame, frames)
        with open(prefix + ".jsonl") as f:
            for line in f:
                r = json.loads(line)
                if r.get("kind") == "chunk":
                    self.blocks.append((int(r["local"]), int(r["offset"]), int(r["frames"])))
        # bench/sync's FileDAC reads "frame leaveNs" blocks: the client's log is exactly that.
        with open(prefix + ".raw.timing", "w") as f:
            for local, offset, _ in self.blocks:
                f.write(f"{offset} {local}\n")
        self.dac = analyze.FileDAC("sendspin", prefix + ".raw", 0)
        self.clicks = self.dac.clicks

    def end(self, i):
        local, _, frames = self.blocks[i]
        return local + frames * 1e9 / RATE

    def went_silent(self, t, horizon):
        """The end of the last block before a gap of 30 ms or more, after t."""
        for i in range(len(self.blocks) - 1):
            if self.end(i) < t:
                continue
            if self.end(i) > t + horizon:
                return None
            if self.blocks[i + 1][0] - self.end(i) >= 30e6:
                return self.end(i)
        return None

    def became_audible(self, t, horizon):
        """The first block after a gap of 30 ms or more, after t."""
        for i in range(1, len(self.blocks)):
            local = self.blocks[i][0]
            if local < t:
                continue
            if local > t + horizon:
                return None
            if local - self.end(i - 1) >= 30e6:
                return local
        return None


def run_once(args, tuttid, run):
    subprocess.run([sys.executable, os.path.join(ROOT, "bench", "sync", "gen_signal.py"), run, "--seconds", "30"], check=True)
    leader_port, control, sendspin = free_port(), free_port(), free_port()
    procs = []
    try:
        leader = subprocess.Popen([tuttid, "leader", "--listen", f"127.0.0.1:{leader_port}", "--play", f"{run}/A.wav", f"{run}/B.wav", "--loop",
                                   "--codec", "pcm", "--control", f"127.0.0.1:{control}", "--mpd", "off", "--web", "off",
                                   "--snapcast-stream", "off", "--snapcast-control", "off", "--snapcast-http", "off",
                                   "--sendspin", f"127.0.0.1:{sendspin}", "--no-announce", "--db", f"{run}/library.db"],
                                  stderr=open(f"{run}/leader.log", "w"))
        procs.append(leader)
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            try:
                rpc(control, "player.status")
                break
            except OSError:
                time.sleep(0.1)
        speaker = subprocess.Popen([tuttid, "follower", "--leader", f"127.0.0.1:{leader_port}", "--name", "den",
                                    "--output", f"file:{run}/den.raw", "--no-realtime"], stderr=open(f"{run}/den.log", "w"))
        procs.append(speaker)
        client = subprocess.Popen([VENV, os.path.join(ROOT, "Tests", "Sendspin", "sendspin_player.py"), "--url", f"ws://127.0.0.1:{sendspin}/sendspin",
                                   "--id", "porch", "--name", "porch", "--codec", args.codec, "--seconds", str(args.seconds + 5),
                                   "--out", f"{run}/porch"] + (["--required-lead-ms", str(args.lead_ms)] if args.lead_ms is not None else []),
                                  stderr=open(f"{run}/porch.stderr", "w"))
        procs.append(client)
        started = time.monotonic()
        time.sleep(args.warmup)
        accepted = []
        while time.monotonic() - started < args.seconds - 6:
            for method, wait in (("player.pause", 2.0), ("player.play", 3.0), ("player.next", 4.0)):
                r = rpc(control, method)
                if "result" in r and isinstance(r["result"], dict) and "acceptedAt" in r["result"]:
                    accepted.append((method.split(".")[1], int(r["result"]["acceptedAt"])))
                time.sleep(wait)
        remaining = args.seconds - (time.monotonic() - started)
        if remaining > 0:
            time.sleep(remaining)
    finally:
        for p in reversed(procs):
            if p.poll() is None:
                p.send_signal(signal.SIGKILL if p is procs[-1] else signal.SIGTERM)
        for p in procs:
            try:
                p.wait(timeout=10)
            except subprocess.TimeoutExpired:
                p.kill()
    return accepted


def run_player(args, tuttid, run):
    """The other way round: aiosendspin's own server (Tests/Sendspin/sendspin_server.py) streams a
    click track to a Tutti speaker (`tuttid follower --sendspin-server`, offering one codec) and to
    aiosendspin's reference client (PCM; its filter decides when each chunk plays)."""
    subprocess.run([sys.executable, os.path.join(ROOT, "bench", "sync", "gen_signal.py"), run, "--seconds", str(int(args.seconds + 30))], check=True)
    port = free_port()
    procs = []
    try:
        server = subprocess.Popen([VENV, os.path.join(ROOT, "Tests", "Sendspin", "sendspin_server.py"), "--port", str(port),
                                   "--wav", f"{run}/A.wav", "--players", "2"], stdin=subprocess.PIPE,
                                  stdout=open(f"{run}/server.out", "w"), stderr=open(f"{run}/server.log", "w"))
        procs.append(server)
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline and "listening" not in open(f"{run}/server.out").read():
            time.sleep(0.1)
        url = f"ws://127.0.0.1:{port}/sendspin"
        speaker = subprocess.Popen([tuttid, "follower", "--sendspin-server", url, "--sendspin-codecs", args.codec, "--name", "den",
                                    "--output", f"file:{run}/den.raw", "--no-realtime"], stderr=open(f"{run}/den.log", "w"))
        procs.append(speaker)
        client = subprocess.Popen([VENV, os.path.join(ROOT, "Tests", "Sendspin", "sendspin_reference_player.py"), "--url", url,
                                   "--name", "reference", "--seconds", str(args.seconds + 5), "--out", f"{run}/porch"],
                                  stderr=open(f"{run}/porch.stderr", "w"))
        procs.append(client)
        time.sleep(args.seconds)
        server.stdin.write(b"formats\n")
        server.stdin.flush()
        time.sleep(1)
        for line in open(f"{run}/server.out"):
            r = json.loads(line)
            if r.get("event") == "formats":
                print(f"the server sends: {r['players']}")
    finally:
        for p in reversed(procs):
            if p.poll() is None:
                p.send_signal(signal.SIGTERM if p is procs[1] else signal.SIGKILL)
        for p in procs:
            try:
                p.wait(timeout=10)
            except subprocess.TimeoutExpired:
                p.kill()


def analyse_player(run):
    den = analyze.FileDAC("den", f"{run}/den.raw", 0)
    ref = SendspinRoom(f"{run}/porch")
    start = den.clicks[0] + 5e9 if den.clicks else 0  # both clock models settle first
    pairs = [p for p in analyze.pair_clicks(ref.clicks, den.clicks) if p[0] >= start]
    diffs = [b - a for a, b in pairs]
    print(f"clicks: {len(diffs)} pairs, Tutti speaker minus aiosendspin's reference client (µs): " +
          (f"median {analyze.median([abs(d) for d in diffs]) / 1e3:.1f}, "
           f"p99 {analyze.percentile(sorted(abs(d) for d in diffs), 99) / 1e3:.1f}, "
           f"max {max(abs(d) for d in diffs) / 1e3:.1f}, signed median {analyze.median(diffs) / 1e3:+.1f}" if diffs else "none"))
    return diffs


def analyse(run, accepted):
    den = analyze.FileDAC("den", f"{run}/den.raw", 0)
    porch = SendspinRoom(f"{run}/porch")
    start = den.clicks[0] + 5e9 if den.clicks else 0  # the reference filter settles first
    pairs = [p for p in analyze.pair_clicks(den.clicks, porch.clicks) if p[0] >= start]
    diffs = [b - a for a, b in pairs]
    print(f"clicks: {len(diffs)} pairs, Sendspin player minus Tutti speaker (µs): " +
          (f"median {analyze.median([abs(d) for d in diffs]) / 1e3:.1f}, "
           f"p99 {analyze.percentile(sorted(abs(d) for d in diffs), 99) / 1e3:.1f}, "
           f"max {max(abs(d) for d in diffs) / 1e3:.1f}, signed median {analyze.median(diffs) / 1e3:+.1f}" if diffs else "none"))
    starts = {"den": analyze.track_starts(den.clicks), "porch": analyze.track_starts(porch.clicks)}
    heard = {}
    for n, (method, acc) in enumerate(accepted):
        horizon = 4e9
        for name, room in (("den", den), ("porch", porch)):
            if method == "pause":
                h = room.went_silent(acc, horizon / 1e9) if name == "den" else room.went_silent(acc, horizon)
            elif method == "play":
                h = room.became_audible(acc, horizon / 1e9) if name == "den" else room.became_audible(acc, horizon)
            else:
                later = [t for t, _ in starts[name] if acc <= t <= acc + horizon]
                h = later[0] if later else None
            heard.setdefault((method, name), []).append(None if h is None else (h - acc) / 1e6)
    for method in ("pause", "play", "next"):
        line = []
        for name, label in (("den", "Tutti speaker"), ("porch", "Sendspin player")):
            values = [v for v in heard.get((method, name), []) if v is not None]
            missed = len(heard.get((method, name), [])) - len(values)
            line.append(f"{label} median {analyze.median(values):.0f} ms ({len(values)} heard" + (f", {missed} not" if missed else "") + ")"
                        if values else f"{label}: not heard")
        print(f"{method}: " + "; ".join(line))
    return diffs


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--seconds", type=float, default=60)
    ap.add_argument("--warmup", type=float, default=12)
    ap.add_argument("--mode", default="server", choices=["server", "player"],
                    help="server: Tutti's leader serves a Sendspin player; player: a Tutti speaker plays for aiosendspin's server")
    ap.add_argument("--codec", default="pcm", choices=["pcm", "flac", "opus", "all"], help="all: each codec in turn (player mode), then a table")
    ap.add_argument("--runs", type=int, default=1)
    ap.add_argument("--lead-ms", type=int, help="the Sendspin player's required_lead_time_ms (default: none sent)")
    ap.add_argument("--keep", action="store_true")
    args = ap.parse_args()
    tuttid = os.environ.get("TUTTID") or os.path.join(ROOT, ".build", "release", "tuttid")
    if not os.path.exists(tuttid):
        sys.exit(f"no tuttid at {tuttid}: swift build -c release --product tuttid, or TUTTID=PATH")
    if not os.path.exists(VENV):
        sys.exit(f"no aiosendspin venv at {VENV}: run scripts/setup.sh")
    if args.mode == "player" and args.codec == "all":
        table = []
        for codec in ("pcm", "flac", "opus"):
            for n in range(args.runs):
                run = tempfile.mkdtemp(prefix="tutti-sendspin.", dir="/dev/shm" if os.path.isdir("/dev/shm") else None)
                print(f"{codec} run {n + 1}: {run}")
                try:
                    run_player(argparse.Namespace(**{**vars(args), "codec": codec}), tuttid, run)
                    diffs = analyse_player(run)
                    if diffs:
                        a = sorted(abs(d) for d in diffs)
                        table.append((codec, len(diffs), analyze.median(a) / 1e3, analyze.percentile(a, 99) / 1e3, a[-1] / 1e3, analyze.median(diffs) / 1e3))
                finally:
                    if not args.keep:
                        shutil.rmtree(run, ignore_errors=True)
        print("\nTutti speaker vs aiosendspin's reference client, both on aiosendspin's server (µs)")
        print(f"{'codec':6} {'pairs':>5} {'median':>8} {'p99':>8} {'max':>8} {'signed':>8}")
        for codec, pairs, median, p99, largest, signed in table:
            print(f"{codec:6} {pairs:5d} {median:8.1f} {p99:8.1f} {largest:8.1f} {signed:+8.1f}")
        return
    for n in range(args.runs):
        run = tempfile.mkdtemp(prefix="tutti-sendspin.", dir="/dev/shm" if os.path.isdir("/dev/shm") else None)
        try:
            if args.mode == "player":
                print(f"run {n + 1}: {run} (a Tutti speaker on aiosendspin's server, {args.codec}, beside its reference client, {args.seconds:.0f} s)")
                run_player(args, tuttid, run)
                analyse_player(run)
                continue
            if args.codec == "opus":
                sys.exit("--codec opus: only with --mode player (Tutti's leader sends Opus only when its own wire is Opus)")
            print(f"run {n + 1}: {run} ({args.codec} to the Sendspin player, {args.seconds:.0f} s)")
            accepted = run_once(args, tuttid, run)
            analyse(run, accepted)
        finally:
            if not args.keep:
                shutil.rmtree(run, ignore_errors=True)


if __name__ == "__main__":
    main()
