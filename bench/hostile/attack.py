#!/usr/bin/python3
"""Hostile peers against a running leader (bench/hostile/run.sh).

    attack.py --pid LEADER_PID --ports name=P,... --control PORT --stream PORT --web PORT
              --password PW --tuttid PATH --leader-log FILE --run DIR
              [--seconds 30] [--idle 300] [--slow 5] [--sockets 100] [--commands 100000]
              --timing ROOM.raw.timing --out RESULT.json

Two phases, each --seconds long: `quiet` (no attack), then `attack`.
Attackers come from 127.0.0.2 (one host); the clients that are not
attacking come from 127.0.0.1 and are measured in both phases:
  * a control client: JSON-RPC `player.status` every 20 ms on one connection
    (it logs in first), round trip timed;
  * a phone page, once a second: the web app's page and every file it names
    fetched over one keep-alive connection (as a browser does), timed; then
    a WebSocket to /ws that logs in and asks `player.status`, timed;
  * the speaker already playing (its DAC timing: a jump over 50 ms between
    blocks is an audio gap);
  * a new speaker (`tuttid follower`) started halfway: the time until the
    leader logs it as joined;
  * the leader's RSS and thread count, every 100 ms.
During `attack`, from 127.0.0.2, on every port in --ports at once: --idle
silent connections opened at once and held; --slow slowloris writers (a byte
a second); a flooder of oversized lines (on the speaker port, frames
announcing 1 GiB) and one of random bytes, each reconnecting when closed.
On the web port, --sockets WebSockets that never log in (they answer every
ping). On the speaker port, a peer that says hello as a room and sends
--commands roomCommand frames as fast as the socket takes them.
Standard library only.
"""
import argparse
import base64
import json
import multiprocessing
import os
import random
import re
import resource
import select
import socket
import statistics
import struct
import subprocess
import threading
import time

ATTACKER = "127.0.0.2"


def raise_fd_limit():
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))


def connect(port, source=None, timeout=2):
    return socket.create_connection(("127.0.0.1", port), timeout=timeout,
                                    source_address=(source, 0) if source else None)


def proc_status(pid):
    rss = threads = None
    try:
        with open("/proc/%d/status" % pid) as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    rss = int(line.split()[1])
                elif line.startswith("Threads:"):
                    threads = int(line.split()[1])
    except OSError:
        pass
    return rss, threads


# ---------- Tutti wire protocol (docs/protocol.md): u32 length, u8 type, body ----------

def frame(kind, body):
    return struct.pack(">IB", len(body) + 1, kind) + body


def wire_string(s):
    b = s.encode()
    return struct.pack(">H", len(b)) + b


def hello(name, version=6):
    return frame(1, struct.pack(">H", version) + wire_string(name))


def room_command(command):
    return frame(12, wire_string(command))


# ---------- WebSocket (RFC 6455), just enough ----------

def ws_open(port, source=None, timeout=5):
    s = connect(port, source, timeout)
    s.settimeout(timeout)
    key = base64.b64encode(os.urandom(16)).decode()
    s.sendall(("GET /ws HTTP/1.1\r\nHost: 127.0.0.1:%d\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
               "Sec-WebSocket-Key: %s\r\nSec-WebSocket-Version: 13\r\n\r\n" % (port, key)).encode())
    head = b""
    while b"\r\n\r\n" not in head:
        d = s.recv(4096)
        if not d:
            raise OSError("closed during the upgrade")
        head += d
    if not head.startswith(b"HTTP/1.1 101"):
        raise OSError("upgrade refused: %r" % head[:40])
    return s, head.split(b"\r\n\r\n", 1)[1]


def ws_send(s, payload, opcode=1):
    mask = os.urandom(4)
    n = len(payload)
    head = bytes([0x80 | opcode])
    if n < 126:
        head += bytes([0x80 | n])
    elif n < 65536:
        head += bytes([0x80 | 126]) + struct.pack(">H", n)
    else:
        head += bytes([0x80 | 127]) + struct.pack(">Q", n)
    s.sendall(head + mask + bytes(b ^ mask[i % 4] for i, b in enumerate(payload)))


def ws_frames(buf):
    """Whole server frames in buf: ([(opcode, payload)], rest)."""
    out = []
    while len(buf) >= 2:
        op, n = buf[0] & 0x0F, buf[1] & 0x7F
        i = 2
        if n == 126:
            if len(buf) < 4:
                break
            n = struct.unpack(">H", buf[2:4])[0]
            i = 4
        elif n == 127:
            if len(buf) < 10:
                break
            n = struct.unpack(">Q", buf[2:10])[0]
            i = 10
        if len(buf) < i + n:
            break
        out.append((op, buf[i:i + n]))
        buf = buf[i + n:]
    return out, buf


def ws_call(s, rest, request_id, method, params=None):
    msg = {"jsonrpc": "2.0", "id": request_id, "method": method}
    if params is not None:
        msg["params"] = params
    ws_send(s, json.dumps(msg).encode())
    buf = rest
    while True:
        frames, buf = ws_frames(buf)
        for op, payload in frames:
            if op == 9:
                ws_send(s, payload, 10)
            elif op == 8:
                raise OSError("closed")
            elif op == 1:
                m = json.loads(payload)
                if m.get("id") == request_id:
                    return m, buf
        d = s.recv(65536)
        if not d:
            raise OSError("closed")
        buf += d


# ---------- the clients that are not attacking (127.0.0.1) ----------

def status_probe(port, password, seconds, out):
    def open_client():
        s = connect(port, timeout=5)
        s.settimeout(5)
        f = s.makefile("rb")
        s.sendall(json.dumps({"jsonrpc": "2.0", "id": 0, "method": "auth.login", "params": {"password": password}}).encode() + b"\n")
        while json.loads(f.readline()).get("id") != 0:
            pass
        return s, f
    times, errors = [], 0
    s = f = None
    end = time.monotonic() + seconds
    i = 0
    while time.monotonic() < end:
        i += 1
        t0 = time.perf_counter_ns()
        try:
            if s is None:
                s, f = open_client()
                t0 = time.perf_counter_ns()
            s.sendall(b'{"jsonrpc":"2.0","id":%d,"method":"player.status"}\n' % i)
            while True:
                line = f.readline()
                if not line:
                    raise OSError("closed")
                if json.loads(line).get("id") == i:
                    break
            times.append((time.perf_counter_ns() - t0) / 1e6)
        except (OSError, ValueError):
            errors += 1
            s = None
            time.sleep(0.05)
        time.sleep(0.02)
    out.put(("status", {"times": times, "errors": errors}))


def page_probe(port, password, seconds, out):
    loads, sockets, failures = [], [], []
    end = time.monotonic() + seconds
    i = 0
    while time.monotonic() < end:
        i += 1
        t0 = time.perf_counter()
        try:
            s = connect(port, timeout=5)
            s.settimeout(5)
            f = s.makefile("rb")

            def get(path):
                s.sendall(("GET %s HTTP/1.1\r\nHost: 127.0.0.1:%d\r\nAccept-Encoding: gzip\r\n\r\n" % (path, port)).encode())
                status = f.readline()
                length = 0
                while True:
                    h = f.readline()
                    if h in (b"\r\n", b""):
                        break
                    if h.lower().startswith(b"content-length:"):
                        length = int(h.split(b":")[1])
                body = f.read(length)
                if not status.startswith(b"HTTP/1.1 200"):
                    raise OSError("%s: %r" % (path, status.strip()))
                return body
            html = get("/")
            if html[:2] == b"\x1f\x8b":
                import gzip
                html = gzip.decompress(html)
            for path in sorted(set(re.findall(rb'(?:src|href)="(/?[A-Za-z0-9_./-]+\.(?:js|css|svg|png|webmanifest|json))"', html))):
                get("/" + path.decode().lstrip("/"))
            loads.append((time.perf_counter() - t0) * 1000)
            s.close()
        except (OSError, ValueError) as e:
            failures.append("page: %s" % e)
        t1 = time.perf_counter()
        try:
            w, rest = ws_open(port)
            m, rest = ws_call(w, rest, 1, "auth.login", {"password": password})
            if "result" not in m:
                raise OSError("login: %s" % m)
            m, rest = ws_call(w, rest, 2, "player.status")
            if "result" not in m:
                raise OSError("status: %s" % m)
            sockets.append((time.perf_counter() - t1) * 1000)
            w.close()
        except (OSError, ValueError) as e:
            failures.append("websocket: %s" % e)
        time.sleep(max(0, 1 - (time.perf_counter() - t0)))
    out.put(("page", {"loads": loads, "sockets": sockets, "failures": failures}))


def late_speaker(args, name, log_path, out):
    """Starts a speaker and times it until the leader logs it as joined."""
    t0 = time.monotonic()
    p = subprocess.Popen([args.tuttid, "follower", "--leader", "127.0.0.1:%d" % args.stream, "--name", name,
                          "--output", "file:%s/%s.raw" % (args.run, name), "--no-realtime"],
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    joined = None
    while time.monotonic() - t0 < 10:
        with open(log_path, errors="replace") as f:
            if ("follower %s joined" % name) in f.read():
                joined = (time.monotonic() - t0) * 1000
                break
        time.sleep(0.02)
    p.terminate()
    p.wait()
    out.put(("join", joined))


# ---------- attackers (127.0.0.2) ----------

def hold_idle(port, n, seconds):
    raise_fd_limit()
    time.sleep(1)  # after the room-command peer and the WebSockets have their places
    socks = []
    for _ in range(n):
        try:
            socks.append(connect(port, ATTACKER))
        except OSError:
            pass
    time.sleep(seconds)
    opened, alive = len(socks), 0
    for s in socks:
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
    time.sleep(1)
    end = time.monotonic() + seconds - 1
    s = None
    while time.monotonic() < end:
        try:
            if s is None:
                s = connect(port, ATTACKER)
            s.send(b"x")
        except OSError:
            s = None
        time.sleep(1)


def flood(port, seconds, kind, stream_port):
    rng = random.Random(port * 7 + (1 if kind == "random" else 0))
    time.sleep(1)
    end = time.monotonic() + seconds - 1
    sent = 0
    big = b"A" * (1 << 20)
    while time.monotonic() < end:
        try:
            s = connect(port, ATTACKER)
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


def silent_websockets(port, n, seconds):
    """WebSockets that never log in and answer every ping (so no ping timeout ends them)."""
    raise_fd_limit()
    socks, bufs = [], {}
    for _ in range(n):
        try:
            s, rest = ws_open(port, ATTACKER, timeout=2)
            s.setblocking(False)
            socks.append(s)
            bufs[s] = rest
        except OSError:
            pass
    opened = len(socks)
    end = time.monotonic() + seconds
    live = set(socks)
    while live and time.monotonic() < end:
        r, _, _ = select.select(list(live), [], [], 0.5)
        for s in r:
            try:
                d = s.recv(65536)
            except OSError:
                d = b""
            if not d:
                live.discard(s)
                continue
            frames, bufs[s] = ws_frames(bufs[s] + d)
            for op, payload in frames:
                if op == 9:
                    try:
                        s.setblocking(True)
                        ws_send(s, payload, 10)
                        s.setblocking(False)
                    except OSError:
                        live.discard(s)
    return opened, len(live)


def room_commands(port, count, seconds):
    """Says hello as a room, then sends `count` roomCommand frames; keeps reading what the leader sends."""
    s = connect(port, ATTACKER, timeout=5)
    s.sendall(hello("intruder"))
    stop = threading.Event()

    def drain():
        s.settimeout(1)
        while not stop.is_set():
            try:
                if not s.recv(65536):
                    return
            except socket.timeout:
                continue
            except OSError:
                return
    t = threading.Thread(target=drain, daemon=True)
    t.start()
    batch = b"".join(room_command(c) for c in ["vol+", "vol-"] * 500)
    sent = 0
    t0 = time.monotonic()
    try:
        while sent < count:
            s.sendall(batch)
            sent += 1000
    except OSError:
        pass
    took = time.monotonic() - t0
    time.sleep(max(0, seconds - took))
    stop.set()
    s.close()
    return sent, round(took, 2)


# ---------- phases ----------

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
    worst, count = 0, 0
    for a, b in zip(inside, inside[1:]):
        if b - a > 50_000_000:
            count += 1
            worst = max(worst, b - a)
    return {"gaps": count, "longestMs": worst / 1e6, "blocks": len(inside)}


def pct(values, x):
    t = sorted(values)
    return t[min(len(t) - 1, int(len(t) * x))] if t else None


def phase(args, ports, attack, index):
    q = multiprocessing.Queue()
    probes = [multiprocessing.Process(target=status_probe, args=(args.control, args.password, args.seconds, q)),
              multiprocessing.Process(target=page_probe, args=(args.web, args.password, args.seconds, q))]
    workers, pool = [], None
    if attack:
        pool = multiprocessing.Pool(processes=len(ports) * (3 + args.slow) + 2)  # every task at once
        workers.append(("stream", "room commands (sent, seconds)", pool.apply_async(room_commands, (args.stream, args.commands, args.seconds))))
        workers.append(("web", "websockets never logged in (opened, open at the end)", pool.apply_async(silent_websockets, (args.web, args.sockets, args.seconds))))
        for name, port in ports.items():
            workers.append((name, "idle", pool.apply_async(hold_idle, (port, args.idle, args.seconds))))
            for _ in range(args.slow):
                pool.apply_async(slowloris, (port, args.seconds))
            workers.append((name, "oversized", pool.apply_async(flood, (port, args.seconds, "oversized", args.stream))))
            workers.append((name, "random", pool.apply_async(flood, (port, args.seconds, "random", args.stream))))
        time.sleep(2)  # the attack is on before the probes start
    t0 = time.clock_gettime_ns(time.CLOCK_MONOTONIC)
    for p in probes:
        p.start()
    joiner = None
    rss, threads = [], []
    start = time.monotonic()
    while any(p.is_alive() for p in probes):
        if joiner is None and time.monotonic() - start > args.seconds / 2:
            joiner = multiprocessing.Process(target=late_speaker, args=(args, "late%d" % index, args.leader_log, q))
            joiner.start()
        r, n = proc_status(args.pid)
        if r is None:
            break
        rss.append(r)
        threads.append(n)
        time.sleep(0.1)
    results = {}
    expected = 3 if joiner else 2
    while len(results) < expected:
        k, v = q.get(timeout=30)
        results[k] = v
    for p in probes + ([joiner] if joiner else []):
        p.join()
    t1 = time.clock_gettime_ns(time.CLOCK_MONOTONIC)
    detail = {}
    if pool:
        for name, kind, w in workers:
            try:
                detail["%s %s" % (name, kind)] = w.get(timeout=args.seconds + 60)
            except Exception as e:  # noqa: BLE001
                detail["%s %s" % (name, kind)] = "failed: %s" % e
        pool.terminate()
    st, pg = results["status"], results["page"]
    return {"status": {"n": len(st["times"]), "errors": st["errors"], "p50": pct(st["times"], 0.5), "p99": pct(st["times"], 0.99),
                       "max": max(st["times"]) if st["times"] else None},
            "page": {"n": len(pg["loads"]), "maxMs": max(pg["loads"]) if pg["loads"] else None, "p50Ms": pct(pg["loads"], 0.5),
                     "sockets": len(pg["sockets"]), "socketMaxMs": max(pg["sockets"]) if pg["sockets"] else None,
                     "failures": pg["failures"][:10], "failureCount": len(pg["failures"])},
            "joinMs": results.get("join"),
            "rssPeakMiB": max(rss) / 1024 if rss else None, "rssMedianMiB": statistics.median(rss) / 1024 if rss else None,
            "threadsPeak": max(threads) if threads else None, "threadsMedian": statistics.median(threads) if threads else None,
            "alive": proc_status(args.pid)[0] is not None, "speaker": gaps(args.timing, t0, t1), "detail": detail}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--pid", type=int, required=True)
    ap.add_argument("--ports", required=True)
    ap.add_argument("--control", type=int, required=True)
    ap.add_argument("--stream", type=int, required=True)
    ap.add_argument("--web", type=int, required=True)
    ap.add_argument("--password", required=True)
    ap.add_argument("--tuttid", required=True)
    ap.add_argument("--leader-log", required=True)
    ap.add_argument("--run", required=True)
    ap.add_argument("--seconds", type=float, default=30)
    ap.add_argument("--idle", type=int, default=300)
    ap.add_argument("--slow", type=int, default=5)
    ap.add_argument("--sockets", type=int, default=100)
    ap.add_argument("--commands", type=int, default=100_000)
    ap.add_argument("--timing", required=True)
    ap.add_argument("--out", required=True)
    args = ap.parse_args()
    raise_fd_limit()
    ports = {k: int(v) for k, v in (p.split("=") for p in args.ports.split(","))}
    quiet = phase(args, ports, False, 0)
    attack = phase(args, ports, True, 1)
    time.sleep(2)
    after_rss, after_threads = proc_status(args.pid)
    json.dump({"quiet": quiet, "attack": attack, "rssAfterMiB": (after_rss or 0) / 1024, "threadsAfter": after_threads,
               "alive": after_rss is not None}, open(args.out, "w"), indent=1)
    for name, r in (("quiet", quiet), ("attack", attack)):
        sp, s, p = r["speaker"] or {}, r["status"], r["page"]
        print("%-7s status p50 %5.1f ms p99 %6.1f ms max %7.1f ms (%d, %d failed) | page max %6.1f ms (%d loads), WebSocket login+status max %6.1f ms (%d), %d failed"
              " | new speaker joined in %s ms | RSS median %5.1f peak %5.1f MiB | threads median %s peak %s | speaker gaps %s (longest %.0f ms)" % (
                  name, s["p50"] or -1, s["p99"] or -1, s["max"] or -1, s["n"], s["errors"], p["maxMs"] or -1, p["n"], p["socketMaxMs"] or -1,
                  p["sockets"], p["failureCount"], "%.0f" % r["joinMs"] if r["joinMs"] else "never", r["rssMedianMiB"] or -1, r["rssPeakMiB"] or -1,
                  r["threadsMedian"], r["threadsPeak"], sp.get("gaps"), sp.get("longestMs", 0)))
        for failure in p["failures"]:
            print("        " + failure)
    q, a = quiet, attack
    print("leader alive after the attack: %s, RSS %.1f MiB, %s threads; peak RSS %.2fx idle, peak threads %.2fx idle" % (
        after_rss is not None, (after_rss or 0) / 1024, after_threads,
        (a["rssPeakMiB"] or 0) / max(q["rssMedianMiB"] or 1, 0.001), (a["threadsPeak"] or 0) / max(q["threadsMedian"] or 1, 1)))
    for k, v in a["detail"].items():
        print("  %s: %s" % (k, v))


if __name__ == "__main__":
    main()
