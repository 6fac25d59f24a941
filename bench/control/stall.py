#!/usr/bin/python3
"""Clients that stop reading must not stall anyone else (bench/control/stall.sh).

    stall.py phases --control PORT --web PORT --leader-log PATH [--seconds 20] [--stalled 0,1,10,50] [--linger 60] --out RESULTS.json
    stall.py report RESULTS.json --timing ROOM.raw.timing --raw ROOM.raw

`phases`, for each count S of stalled clients, in turn:
  * opens S stalled clients, alternately JSON-RPC over TCP and the web app's
    WebSocket (handshake by hand), each with SO_RCVBUF 4096 set before
    connecting: one `player.status`, then never read again;
  * starts the hammer (its own process): `rooms.set {"room":"bench","volume":v}`
    one after the other on one TCP connection, as fast as replies come
    (v cycles 50…100, so the speaker never goes silent);
  * 0.5 s later runs the probe (its own process) for N seconds: `rooms.set`
    on the room "probe" and `player.status`, alternately, one at a time,
    timing each round trip (time.perf_counter_ns, send to reply;
    notifications that arrive meanwhile are skipped);
  * watches the leader's end of each stalled connection in /proc/net/tcp
    (it leaves ESTABLISHED when the leader closes it; the client, never
    reading, cannot see the FIN behind the data it has not read) and the
    bytes the kernel queues for them, every 0.25 s; after the window the
    hammer goes on (at most --linger s) until every stalled client is ended;
  * then reads what waits on the stalled sockets, to see the end of stream,
    and the leader's log lines "client … disconnected: REASON" for their ports.
`report` checks the speaker's file DAC over each probe window
(CLOCK_MONOTONIC, shared with the follower): a jump between consecutive
blocks' times over 3x the median interval (an underrun), or a run of exact
zeros over 10 ms in the tone, is a gap; then prints the summary table.

Standard library only, for /usr/bin/python3.
"""
import argparse
import base64
import datetime
import json
import multiprocessing
import os
import re
import select
import socket
import statistics
import sys
import time

RATE = 48000


# MARK: JSON-RPC over TCP, one request at a time


class RPC:
    def __init__(self, port):
        self.s = socket.create_connection(("127.0.0.1", port))
        self.s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.buf = b""
        self.next_id = 0

    def call(self, method, params=None):
        """Sends one request and returns its reply line (bytes); notifications in between are skipped."""
        self.next_id += 1
        rid = self.next_id
        request = {"jsonrpc": "2.0", "id": rid, "method": method}
        if params is not None:
            request["params"] = params
        self.s.sendall(json.dumps(request, separators=(",", ":")).encode() + b"\n")
        # Replies are serialised with sorted keys, so they start with {"id":N, and notifications with {"jsonrpc".
        prefix = b'{"id":%d,' % rid
        while True:
            start = 0
            while True:
                end = self.buf.find(b"\n", start)
                if end < 0:
                    break
                if self.buf.startswith(prefix, start):
                    line = self.buf[start:end]
                    self.buf = self.buf[end + 1:]
                    return line
                start = end + 1
            self.buf = self.buf[start:]
            chunk = self.s.recv(262144)
            if not chunk:
                raise ConnectionError("the leader closed the connection")
            self.buf += chunk


def hammer(port, stop, counter, out):
    """rooms.set on the speaker's room, as fast as replies come, until `stop`; `counter` counts replies."""
    rpc = RPC(port)
    n, v, first, last, errors = 0, 50, None, None, 0
    while not stop.is_set():
        v = 50 if v >= 100 else v + 1  # never 0: the speaker must keep sounding
        line = rpc.call("rooms.set", {"room": "bench", "volume": v})
        if b'"result"' not in line:
            errors += 1
        else:
            last = line
            if first is None:
                first = line
        n += 1
        counter.value = n
    health = lambda l: json.loads(l)["result"].get("health", {}) if l else {}
    out.put({"requests": n, "errors": errors, "health_start": health(first), "health_end": health(last)})


def probe(port, seconds, out):
    rpc = RPC(port)
    for _ in range(20):  # warm up
        rpc.call("player.status")
    samples = {"rooms.set": [], "player.status": []}
    errors = 0
    end = time.monotonic() + seconds
    i = 0
    while time.monotonic() < end:
        i += 1
        if i % 2:
            method, params = "rooms.set", {"room": "probe", "volume": 10 + i % 80}
        else:
            method, params = "player.status", None
        wall = time.time()
        t0 = time.perf_counter_ns()
        line = rpc.call(method, params)
        t1 = time.perf_counter_ns()
        if b'"result"' not in line:
            errors += 1
        samples[method].append((wall, (t1 - t0) / 1e6))
    out.put({"samples": samples, "errors": errors})


# MARK: Stalled clients


def stalled_jsonrpc(port, source):
    s = socket.socket()
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)  # before connect: it sets the window
    s.bind((source, 0))
    s.connect(("127.0.0.1", port))
    s.sendall(b'{"jsonrpc":"2.0","id":1,"method":"player.status"}\n')
    return s


def stalled_websocket(port, source):
    s = socket.socket()
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    s.bind((source, 0))
    s.connect(("127.0.0.1", port))
    key = base64.b64encode(os.urandom(16)).decode()
    s.sendall(("GET /ws HTTP/1.1\r\nHost: 127.0.0.1:%d\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
               "Sec-WebSocket-Key: %s\r\nSec-WebSocket-Version: 13\r\n\r\n" % (port, key)).encode())
    head = b""
    while b"\r\n\r\n" not in head:  # the handshake's answer is read; nothing after it ever is
        chunk = s.recv(1)
        if not chunk:
            raise ConnectionError("the web server closed the WebSocket handshake")
        head += chunk
    if not head.startswith(b"HTTP/1.1 101"):
        raise ConnectionError("WebSocket refused: %r" % head[:200])
    payload = b'{"jsonrpc":"2.0","id":1,"method":"player.status"}'
    mask = os.urandom(4)
    s.sendall(bytes([0x81, 0x80 | len(payload)]) + mask + bytes(b ^ mask[i % 4] for i, b in enumerate(payload)))
    return s


def ended_by_peer(socks, deadline_s=2.0):
    """Which sockets the leader ended. A hang-up shows at once only when the
    socket's buffer has room for the FIN; so read what waits (this unblocks
    the leader's side too) until the end of the stream, a reset, or the
    deadline passes with the connection still open."""
    ended = [False] * len(socks)
    flags = select.POLLRDHUP | select.POLLHUP | select.POLLERR
    p = select.poll()
    for i, s in enumerate(socks):
        p.register(s, flags)
    for fd, ev in p.poll(0):
        for i, s in enumerate(socks):
            if s.fileno() == fd and ev & flags:
                ended[i] = True
    for s in socks:
        s.setblocking(False)
    by_fd = {s.fileno(): i for i, s in enumerate(socks)}
    p = select.poll()
    for i, s in enumerate(socks):
        if not ended[i]:
            p.register(s, select.POLLIN | flags)
    end = time.monotonic() + deadline_s
    while not all(ended) and time.monotonic() < end:
        for fd, ev in p.poll(100):
            i = by_fd[fd]
            try:
                data = socks[i].recv(1 << 20)
            except (BlockingIOError, InterruptedError):
                continue
            except OSError:  # reset
                data = b""
            if not data:
                ended[i] = True
                p.unregister(fd)
    return ended


LOG_LINE = re.compile(r"^(\S+) \w+ [^:]*: client (JSON-RPC|web page) ([\d.]+):(\d+) disconnected: (.*)$")


def log_time(stamp):
    return datetime.datetime.strptime(stamp, "%Y-%m-%dT%H:%M:%S.%fZ").replace(tzinfo=datetime.timezone.utc).timestamp()


def pct(values, q):
    v = sorted(values)
    return v[min(len(v) - 1, int(q * len(v)))] if v else float("nan")


def summary(values):
    return {"n": len(values), "p50": pct(values, 0.50), "p99": pct(values, 0.99), "max": max(values) if values else float("nan")}


TCP_ESTABLISHED = 1


def leader_side(server_ports):
    """The leader's end of every connection to `server_ports`, from
    /proc/net/tcp: {client port: (state, bytes queued in the kernel)}.
    It shows the leader closing a stalled client (FIN_WAIT1, or gone) even
    though that client, never reading, cannot see the FIN yet."""
    rows = {}
    with open("/proc/net/tcp") as f:
        next(f)
        for line in f:
            parts = line.split()
            local, remote = parts[1].split(":"), parts[2].split(":")
            if int(local[1], 16) in server_ports and int(remote[1], 16) != 0:
                rows[int(remote[1], 16)] = (int(parts[3], 16), int(parts[4].split(":")[0], 16))
    return rows


def run_phase(a, count):
    log_offset = os.path.getsize(a.leader_log)
    socks, kinds = [], []
    for i in range(count):
        kind = "jsonrpc" if i % 2 == 0 else "websocket"
        # Each stalled client a host of its own (127.0.0.10, .11, …): the leader serves a host only its share.
        source = "127.0.0.%d" % (10 + i)
        socks.append(stalled_jsonrpc(a.control, source) if kind == "jsonrpc" else stalled_websocket(a.web, source))
        kinds.append(kind)
    ports = [s.getsockname()[1] for s in socks]
    index = {p: i for i, p in enumerate(ports)}
    closed_at = [None] * count  # seconds after the hammer started, when the leader's end left ESTABLISHED
    queued_max = 0  # most bytes the kernel held for all stalled clients at once (the leader's send queues)

    def sample(now):
        nonlocal queued_max
        rows = leader_side({a.control, a.web})
        queued = 0
        for i, p in enumerate(ports):
            state, tx = rows.get(p, (0, 0))
            queued += tx
            if closed_at[i] is None and state != TCP_ESTABLISHED:
                closed_at[i] = now
        queued_max = max(queued_max, queued)

    ctx = multiprocessing.get_context("fork")
    stop, hq, pq = ctx.Event(), ctx.Queue(), ctx.Queue()
    counter = ctx.Value("q", 0, lock=False)
    wall0, t0 = time.time(), time.monotonic()
    h = ctx.Process(target=hammer, args=(a.control, stop, counter, hq))
    h.start()
    time.sleep(0.5)
    window0 = time.monotonic_ns()
    hammered0 = counter.value
    pr = ctx.Process(target=probe, args=(a.control, a.seconds, pq))
    pr.start()
    probed = None
    while probed is None:
        try:
            probed = pq.get(timeout=0.25)
        except Exception:  # queue.Empty
            sample(time.monotonic() - t0)
    window1 = time.monotonic_ns()
    hammered1 = counter.value
    pr.join()
    sample(time.monotonic() - t0)
    closed_in_window = sum(c is not None for c in closed_at)
    # Linger: the hammer goes on until the leader has ended every stalled client, or the limit.
    linger_end = time.monotonic() + a.linger
    while any(c is None for c in closed_at) and time.monotonic() < linger_end:
        time.sleep(0.25)
        sample(time.monotonic() - t0)
    stop.set()
    hammered = hq.get()
    h.join()
    ended = ended_by_peer(socks)
    time.sleep(0.3)  # let the log catch up
    with open(a.leader_log, "rb") as f:
        f.seek(log_offset)
        lines = f.read().decode(errors="replace").splitlines()
    logged, reasons = {}, {}
    for line in lines:
        m = LOG_LINE.match(line)
        if not m or int(m.group(4)) not in index:
            continue
        i = index[int(m.group(4))]
        if i in logged:
            continue
        reason = re.sub(r"127\.0\.0\.1:\d+", "PEER", m.group(5))
        logged[i] = log_time(m.group(1)) - wall0
        key = "%s: %s" % (kinds[i], reason)
        reasons[key] = reasons.get(key, 0) + 1
    for s in socks:
        s.close()
    unlogged = [kinds[i] for i in range(count) if closed_at[i] is not None and i not in logged]
    first_close = min([c for c in closed_at if c is not None], default=float("inf"))
    result = {"stalled": count, "kinds": {k: kinds.count(k) for k in sorted(set(kinds))},
              "window_ns": [window0, window1], "hammer": hammered,
              "hammer_in_window": hammered1 - hammered0, "probe_errors": probed["errors"]}
    for method, samples in probed["samples"].items():
        result[method] = summary([ms for _, ms in samples])
        # While every stalled client was still connected: the case that used to hurt.
        result[method + " before first close"] = summary([ms for w, ms in samples if w - wall0 < first_close])
    result["closed_in_window"] = closed_in_window
    result["closed_by_end"] = sum(c is not None for c in closed_at)
    result["closed_at_s"] = {k: sorted(round(closed_at[i], 1) for i in range(count) if kinds[i] == k and closed_at[i] is not None)
                             for k in sorted(set(kinds))}
    result["eof_seen"] = sum(ended)
    result["logged_disconnects"] = len(logged)
    result["reasons"] = reasons
    result["closed_without_reason"] = {k: unlogged.count(k) for k in sorted(set(unlogged))}
    result["kernel_queued_max_bytes"] = queued_max
    result["window_s"] = a.seconds
    return result


def span(values):
    return ("%.1f–%.1f s" % (min(values), max(values))) if values else "-"


def phases(a):
    results = []
    for count in [int(x) for x in a.stalled.split(",")]:
        r = run_phase(a, count)
        results.append(r)
        rs, st = r["rooms.set"], r["player.status"]
        kinds = ", ".join("%d %s" % (n, k) for k, n in r["kinds"].items())
        print("S=%d%s: probe rooms.set p50/p99/max %.2f/%.2f/%.2f ms (%d), player.status %.2f/%.2f/%.2f ms (%d); hammer %d requests (%.0f/s)" % (
            count, " (%s)" % kinds if kinds else "", rs["p50"], rs["p99"], rs["max"], rs["n"],
            st["p50"], st["p99"], st["max"], st["n"], r["hammer_in_window"], r["hammer_in_window"] / a.seconds), flush=True)
        if count:
            b1, b2 = r["rooms.set before first close"], r["player.status before first close"]
            print("    while all %d were connected: rooms.set p99 %.2f ms (%d), player.status p99 %.2f ms (%d)" % (
                count, b1["p99"], b1["n"], b2["p99"], b2["n"]))
            print("    ended by the leader: %d/%d within the %g s window, %d/%d by the end (hammer kept on, up to %g s more); "
                  "kernel held up to %.1f MB for them" % (
                      r["closed_in_window"], count, a.seconds, r["closed_by_end"], count, a.linger, r["kernel_queued_max_bytes"] / 1e6))
            for k, times in r["closed_at_s"].items():
                print("    %s closed %s after the hammer started" % (k, span(times)))
            for reason, n in sorted(r["reasons"].items()):
                print("    %2d× disconnected: %s" % (n, reason))
            for k, n in r["closed_without_reason"].items():
                print("    %2d× %s closed with no \"disconnected:\" line in the log" % (n, k))
            print("    end of stream seen by the stalled clients once they read: %d/%d" % (r["eof_seen"], count), flush=True)
        time.sleep(2)  # let the leader finish closing them before the next count
    with open(a.out, "w") as f:
        json.dump(results, f, indent=1)


# MARK: The speaker


def audio_check(timing, raw, window):
    """Gaps in one window: jumps in the DAC's block times, and runs of exact zeros over 10 ms."""
    t0, t1 = window
    blocks = [(f, t) for f, t in timing if t0 <= t <= t1]
    if len(blocks) < 3:
        return {"blocks": len(blocks), "jumps": [], "zero_runs": [], "gaps": 1, "note": "no blocks in the window"}
    intervals = [b[1] - a[1] for a, b in zip(blocks, blocks[1:])]
    median = statistics.median(intervals)
    jumps = [round(d / 1e6, 1) for d in intervals if d > 3 * median]
    first, last = blocks[0][0], blocks[-1][0]
    raw.seek(first * 4)
    data = raw.read((last - first) * 4)
    runs, limit = [], RATE // 100  # 10 ms of frames
    needle = b"\0" * (4 * (limit + 1))
    pos = data.find(needle)
    while pos >= 0:
        end = pos + len(needle)
        while end < len(data) and data[end] == 0:
            end += 1
        start = (pos + 3) // 4 * 4
        frames = (end - start) // 4
        if frames > limit:
            runs.append(round(frames / RATE * 1000, 1))
        pos = data.find(needle, end)
    return {"blocks": len(blocks), "median_interval_ms": median / 1e6, "max_interval_ms": max(intervals) / 1e6,
            "jumps": jumps, "zero_runs": runs, "gaps": len(jumps) + len(runs)}


def report(a):
    results = json.load(open(a.results))
    timing = []
    with open(a.timing) as f:
        for line in f:
            parts = line.split()
            if len(parts) == 2:
                timing.append((int(parts[0]), int(parts[1])))
    with open(a.raw, "rb") as raw:
        for r in results:
            r["audio"] = audio_check(timing, raw, r["window_ns"])
    json.dump(results, open(a.results, "w"), indent=1)
    base = next((r for r in results if r["stalled"] == 0), None)
    print("speaker (file DAC) over each probe window:")
    for r in results:
        au = r["audio"]
        print("  S=%d: %d blocks, interval median %.1f ms max %.1f ms; jumps over 3x median: %s; zero runs over 10 ms: %s; gaps: %d" % (
            r["stalled"], au["blocks"], au.get("median_interval_ms", 0), au.get("max_interval_ms", 0),
            au["jumps"] or "none", au["zero_runs"] or "none", au["gaps"]))
    print()
    head = ("stalled", "rooms.set ms", "player.status ms", "p99 / S=0 p99", "gaps", "hammer", "ended in window", "ended by end")
    sub = ("", "p50/p99/max", "p50/p99/max", "set / status", "", "requests", "", "(reason logged)")
    fmt = "%-7s | %-18s | %-18s | %-13s | %-4s | %-8s | %-15s | %s"
    print(fmt % head)
    print(fmt % sub)
    for r in results:
        rs, st = r["rooms.set"], r["player.status"]
        ratio = ("%.2f / %.2f" % (rs["p99"] / base["rooms.set"]["p99"], st["p99"] / base["player.status"]["p99"])) if base else "-"
        n = r["stalled"]
        print(fmt % (n, "%.2f/%.2f/%.1f" % (rs["p50"], rs["p99"], rs["max"]), "%.2f/%.2f/%.1f" % (st["p50"], st["p99"], st["max"]),
                     ratio, r["audio"]["gaps"], r["hammer_in_window"], "%d/%d" % (r["closed_in_window"], n),
                     "%d/%d (%d)" % (r["closed_by_end"], n, r["logged_disconnects"])))
    print("stall_ms " + " ".join("S%d_set_p99=%.2f S%d_status_p99=%.2f S%d_gaps=%d S%d_ended=%d/%d" % (
        r["stalled"], r["rooms.set"]["p99"], r["stalled"], r["player.status"]["p99"], r["stalled"], r["audio"]["gaps"],
        r["stalled"], r["closed_by_end"], r["stalled"]) for r in results))


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="command", required=True)
    p = sub.add_parser("phases")
    p.add_argument("--control", type=int, required=True)
    p.add_argument("--web", type=int, required=True)
    p.add_argument("--leader-log", required=True)
    p.add_argument("--seconds", type=float, default=20)
    p.add_argument("--stalled", default="0,1,10,50")
    p.add_argument("--linger", type=float, default=60, help="after the window, seconds the hammer may go on until every stalled client is ended")
    p.add_argument("--out", required=True)
    r = sub.add_parser("report")
    r.add_argument("results")
    r.add_argument("--timing", required=True)
    r.add_argument("--raw", required=True)
    a = ap.parse_args()
    phases(a) if a.command == "phases" else report(a)


if __name__ == "__main__":
    main()
