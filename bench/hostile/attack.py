#!/usr/bin/python3
"""Hostile peers against a running leader (bench/hostile/run.sh).

    attack.py --pid LEADER_PID --ports stream=P,jsonrpc=P,mpd=P,web=P,snapcast=P
              --control PORT [--seconds 30] [--idle 200] [--slow 5] --timing ROOM.raw.timing --out RESULT.json

Phases: `quiet` (no attack) then `attack`, each --seconds long. In both, a
probe sends JSON-RPC `player.status` on one persistent connection every
20 ms and times each round trip; the leader's RSS is sampled every 100 ms
from /proc. During `attack`, on every port at once:
  * --idle connections opened at once and held, silent (a thousand in all
    with the defaults);
  * --slow slowloris writers: one byte a second, never a newline;
  * one flooder of oversized lines (1 MiB without a newline, again and
    again; on the stream port, frames that announce 1 GiB);
  * one flooder of random bytes.
Flooders reconnect whenever the leader closes them. The speaker's file DAC
timing (CLOCK_MONOTONIC per block) tells whether it went silent: a jump
between blocks over 50 ms is a gap. Standard library only.
"""
import argparse
import json
import multiprocessing
import os
import random
import socket
import statistics
import struct
import time


def rss_kib(pid):
    try:
        with open("/proc/%d/status" % pid) as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1])
    except OSError:
        return None
    return None


def probe(port, seconds, out):
    s = socket.create_connection(("127.0.0.1", port))
    s.settimeout(5)
    f = s.makefile("rb")
    times = []
    errors = 0
    end = time.monotonic() + seconds
    i = 0
    while time.monotonic() < end:
        i += 1
        t0 = time.perf_counter_ns()
        try:
            s.sendall(b'{"jsonrpc":"2.0","id":%d,"method":"player.status"}\n' % i)
            while True:
                line = f.readline()
                if not line:
                    raise OSError("closed")
                m = json.loads(line)
                if m.get("id") == i:
                    break
            times.append((time.perf_counter_ns() - t0) / 1e6)
        except (OSError, ValueError):
            errors += 1
            time.sleep(0.05)
            try:
                s = socket.create_connection(("127.0.0.1", port))
                s.settimeout(5)
                f = s.makefile("rb")
            except OSError:
                pass
        time.sleep(0.02)
    out.put({"times": times, "errors": errors})


def hold_idle(port, n, seconds):
    socks = []
    for _ in range(n):
        try:
            socks.append(socket.create_connection(("127.0.0.1", port), timeout=2))
        except OSError:
            pass
    time.sleep(seconds)
    opened = len(socks)
    alive = 0
    for s in socks:
        # Open: reading what waits ends in EAGAIN; closed by the leader: in EOF (after any goodbye it sent).
        s.setblocking(False)
        try:
            while True:
                if s.recv(65536) == b"":
                    break
        except BlockingIOError:
            alive += 1
        except OSError:
            pass
        s.close()
    return opened, alive


def slowloris(port, seconds):
    end = time.monotonic() + seconds
    s = None
    while time.monotonic() < end:
        try:
            if s is None:
                s = socket.create_connection(("127.0.0.1", port), timeout=2)
            s.send(b"x")
        except OSError:
            s = None
        time.sleep(1)


def flood(port, seconds, kind, stream_port):
    rng = random.Random(port * 7 + (1 if kind == "random" else 0))
    end = time.monotonic() + seconds
    sent = 0
    big = b"A" * (1 << 20)
    while time.monotonic() < end:
        try:
            s = socket.create_connection(("127.0.0.1", port), timeout=2)
            s.settimeout(2)
            while time.monotonic() < end:
                if kind == "oversized":
                    data = struct.pack(">I", 1 << 30) + b"\x06" + big[:65536] if port == stream_port else big
                else:
                    data = bytes(rng.getrandbits(8) for _ in range(4096))
                s.sendall(data)
                sent += len(data)
        except OSError:
            time.sleep(0.01)
    return sent


def gaps(timing_path, start_ns, end_ns):
    blocks = []
    try:
        with open(timing_path) as f:
            for line in f:
                p = line.split()
                if len(p) == 2:
                    blocks.append(int(p[1]))
    except OSError:
        return None
    inside = [t for t in blocks if start_ns <= t <= end_ns]
    worst = 0
    count = 0
    for a, b in zip(inside, inside[1:]):
        if b - a > 50_000_000:
            count += 1
            worst = max(worst, b - a)
    if inside:
        worst = max(worst, inside[0] - start_ns if inside[0] - start_ns > 50_000_000 else 0)
    return {"gaps": count, "longestMs": worst / 1e6, "blocks": len(inside)}


def phase(args, ports, attack):
    q = multiprocessing.Queue()
    p = multiprocessing.Process(target=probe, args=(args.control, args.seconds, q))
    workers = []
    pool = None
    if attack:
        pool = multiprocessing.Pool(processes=len(ports) * (3 + args.slow))  # every task at once
        for name, port in ports.items():
            workers.append((name, "idle", pool.apply_async(hold_idle, (port, args.idle, args.seconds))))
            for _ in range(args.slow):
                pool.apply_async(slowloris, (port, args.seconds))
            workers.append((name, "oversized", pool.apply_async(flood, (port, args.seconds, "oversized", ports["stream"]))))
            workers.append((name, "random", pool.apply_async(flood, (port, args.seconds, "random", ports["stream"]))))
        time.sleep(1)  # the attack is on before the probe starts
    t0 = time.clock_gettime_ns(time.CLOCK_MONOTONIC)
    p.start()
    peak = 0
    samples = []
    while p.is_alive():
        r = rss_kib(args.pid)
        if r is None:
            break
        peak = max(peak, r)
        samples.append(r)
        time.sleep(0.1)
    result = q.get()
    p.join()
    t1 = time.clock_gettime_ns(time.CLOCK_MONOTONIC)
    detail = {}
    if pool:
        for name, kind, w in workers:
            try:
                detail["%s %s" % (name, kind)] = w.get(timeout=args.seconds + 30)
            except Exception as e:  # noqa: BLE001
                detail["%s %s" % (name, kind)] = "failed: %s" % e
        pool.terminate()
    t = sorted(result["times"])

    def pct(x):
        return t[min(len(t) - 1, int(len(t) * x))] if t else None
    return {"n": len(t), "errors": result["errors"], "p50": pct(0.5), "p99": pct(0.99), "max": t[-1] if t else None,
            "rssPeakMiB": peak / 1024, "rssMedianMiB": statistics.median(samples) / 1024 if samples else None,
            "alive": rss_kib(args.pid) is not None, "speaker": gaps(args.timing, t0, t1), "detail": detail}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--pid", type=int, required=True)
    ap.add_argument("--ports", required=True)
    ap.add_argument("--control", type=int, required=True)
    ap.add_argument("--seconds", type=float, default=30)
    ap.add_argument("--idle", type=int, default=200)
    ap.add_argument("--slow", type=int, default=5)
    ap.add_argument("--timing", required=True)
    ap.add_argument("--out", required=True)
    args = ap.parse_args()
    ports = {k: int(v) for k, v in (p.split("=") for p in args.ports.split(","))}
    quiet = phase(args, ports, False)
    attack = phase(args, ports, True)
    time.sleep(2)
    after = rss_kib(args.pid)
    json.dump({"quiet": quiet, "attack": attack, "rssAfterMiB": (after or 0) / 1024, "alive": after is not None}, open(args.out, "w"), indent=1)
    for name, r in (("quiet", quiet), ("attack", attack)):
        sp = r["speaker"] or {}
        print("%-7s player.status p50 %6.1f ms  p99 %7.1f ms  max %7.1f ms  (%d round trips, %d failed)   leader RSS median %5.1f MiB, peak %5.1f MiB   speaker gaps %s (longest %.0f ms)" % (
            name, r["p50"] or -1, r["p99"] or -1, r["max"] or -1, r["n"], r["errors"], r["rssMedianMiB"] or -1, r["rssPeakMiB"],
            sp.get("gaps"), sp.get("longestMs", 0)))
    print("leader alive after the attack: %s, RSS %.1f MiB; p99 ratio %.1fx, peak RSS ratio %.2fx" % (
        after is not None, (after or 0) / 1024, (attack["p99"] or 0) / max(quiet["p99"] or 1, 0.001), attack["rssPeakMiB"] / max(quiet["rssPeakMiB"], 0.001)))
    idle = {k: v for k, v in attack["detail"].items() if k.endswith("idle")}
    print("idle connections (opened, still open at the end): " + ", ".join("%s %s" % (k.split()[0], v) for k, v in idle.items()))


if __name__ == "__main__":
    main()
