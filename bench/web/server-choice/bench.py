#!/usr/bin/python3
"""Measure civetweb_server and lws_server (built by run.sh) side by side.

Standard library only. For each library and run: start the server, then
  idle RSS/threads; GET /app.js for 5 s on 4 keep-alive connections (4
  processes); 50 websocket clients: RSS/threads; echo round trip over 2,000
  messages; 100 broadcasts to 50 clients; then 50 fresh clients of which one
  never reads (SO_RCVBUF 4096): broadcasts until the server reports that it
  gave up on that one (a failed write, or a full queue; the kernel takes
  megabytes first), then 100 more; then what became of the stalled one.
The table holds the median of the runs for every figure.
"""
import argparse
import base64
import hashlib
import os
import select
import signal
import socket
import struct
import subprocess
import sys
import time

APP_SIZE = 60 * 1024
APP_BODY = bytes((ord('a') + i % 26) for i in range(APP_SIZE))
GUID = b"258EAFA5-E914-47DA-95CA-C5AB0DC85B11"
NCLIENTS = 50
STALLED = 25           # index of the client that never reads
HTTP_SECONDS = 5.0
HTTP_CONNS = 4
ECHOES = 2000
BROADCASTS = 100
STALLED_BROADCASTS = 100  # after the server has given up on the stalled one
MAX_FILL = 6000           # broadcasts to wait for that, at most
CLOSE_WAIT = 15.0      # s to wait for the server to drop the stalled one (+ 2 x civetweb timeout)


def now():
    return time.perf_counter()


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def vm_size(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmSize:"):
                return int(line.split()[1])         # kB


def proc_status(pid):
    rss = threads = None
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                rss = int(line.split()[1])          # kB
            elif line.startswith("Threads:"):
                threads = int(line.split()[1])
    return rss, threads


def cpu_seconds(pid):
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def pct(values, p):
    """Nearest-rank percentile."""
    v = sorted(values)
    if not v:
        return float("nan")
    k = max(0, min(len(v) - 1, int(round(p / 100.0 * len(v) + 0.5)) - 1))
    return v[k]


def median(values):
    v = sorted(x for x in values if x is not None)
    if not v:
        return None
    n = len(v)
    return v[n // 2] if n % 2 else (v[n // 2 - 1] + v[n // 2]) / 2


class WS:
    """A minimal RFC 6455 client: text frames, ping -> pong, close."""

    def __init__(self, port, rcvbuf=None):
        s = socket.socket()
        if rcvbuf:
            s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, rcvbuf)
        s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        s.settimeout(10)
        s.connect(("127.0.0.1", port))
        key = base64.b64encode(os.urandom(16))
        s.sendall(b"GET /ws HTTP/1.1\r\nHost: 127.0.0.1:%d\r\n"
                  b"Upgrade: websocket\r\nConnection: Upgrade\r\n"
                  b"Sec-WebSocket-Key: %s\r\nSec-WebSocket-Version: 13\r\n\r\n"
                  % (port, key))
        buf = b""
        while b"\r\n\r\n" not in buf:
            d = s.recv(4096)
            if not d:
                raise EOFError("closed during handshake")
            buf += d
        head, _, rest = buf.partition(b"\r\n\r\n")
        accept = base64.b64encode(hashlib.sha1(key + GUID).digest())
        lines = head.split(b"\r\n")
        if b" 101 " not in lines[0] + b" " or not any(
                l.lower().startswith(b"sec-websocket-accept:")
                and l.split(b":", 1)[1].strip() == accept for l in lines):
            raise RuntimeError("bad handshake: %r" % head)
        s.settimeout(None)
        self.sock = s
        self.buf = bytearray(rest)
        self.closed = False

    def fileno(self):
        return self.sock.fileno()

    def send_frame(self, opcode, payload):
        mask = os.urandom(4)
        n = len(payload)
        if n < 126:
            hdr = struct.pack("!BB", 0x80 | opcode, 0x80 | n)
        elif n < 65536:
            hdr = struct.pack("!BBH", 0x80 | opcode, 0x80 | 126, n)
        else:
            hdr = struct.pack("!BBQ", 0x80 | opcode, 0x80 | 127, n)
        key = (mask * (n // 4 + 1))[:n]
        masked = (int.from_bytes(payload, "big")
                  ^ int.from_bytes(key, "big")).to_bytes(n, "big")
        self.sock.sendall(hdr + mask + masked)

    def send_text(self, text):
        self.send_frame(0x1, text.encode())

    def feed(self):
        """One recv; False on EOF or error."""
        try:
            d = self.sock.recv(262144)
        except OSError:
            d = b""
        if not d:
            self.closed = True
            return False
        self.buf += d
        return True

    def messages(self):
        """Complete text messages in the buffer; answers pings."""
        out = []
        b = self.buf
        i = 0
        while len(b) - i >= 2:
            op, n = b[i] & 0x0F, b[i + 1] & 0x7F
            h = 2
            if n == 126:
                if len(b) - i < 4:
                    break
                n, h = struct.unpack_from("!H", b, i + 2)[0], 4
            elif n == 127:
                if len(b) - i < 10:
                    break
                n, h = struct.unpack_from("!Q", b, i + 2)[0], 10
            if len(b) - i < h + n:
                break
            payload = bytes(b[i + h:i + h + n])
            i += h + n
            if op == 0x9:
                self.send_frame(0xA, payload)
            elif op == 0x8:
                self.closed = True
            elif op == 0x1:
                out.append(payload.decode(errors="replace"))
        del b[:i]
        return out

    def recv_message(self, timeout=10.0):
        end = now() + timeout
        while True:
            m = self.messages()
            if m:
                if len(m) > 1:      # keep order for the caller: not needed here
                    raise RuntimeError("unexpected extra messages %r" % m[1:])
                return m[0]
            left = end - now()
            if left <= 0 or not select.select([self], [], [], left)[0]:
                raise TimeoutError("no message")
            if not self.feed():
                raise EOFError("closed")

    def close(self):
        try:
            self.send_frame(0x8, b"\x03\xe8")
        except OSError:
            pass
        self.sock.close()


def service(clients, seconds):
    """Read (and answer pings) on the given clients for a while."""
    end = now() + seconds
    while True:
        left = end - now()
        live = [c for c in clients if not c.closed]
        if left <= 0 or not live:
            return
        for c in select.select(live, [], [], left)[0]:
            if c.feed():
                c.messages()


def stats(ctl, others):
    ctl.send_text("stats")
    end = now() + 10
    while now() < end:
        service(others, 0)
        for line in ctl.messages():
            if line.startswith("stats "):
                return dict(kv.split("=") for kv in line.split()[1:])
        if select.select([ctl], [], [], 0.05)[0] and not ctl.feed():
            raise EOFError("control client closed")
    raise TimeoutError("no stats")


def http_worker(port, start, seconds, wfd):
    req = b"GET /app.js HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"
    count = reconnects = bad = 0
    s = None
    buf = b""
    while now() < start:
        time.sleep(0.001)
    end = start + seconds
    while now() < end:
        if s is None:
            s = socket.create_connection(("127.0.0.1", port))
            s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            buf = b""
            reconnects += 1
        try:
            s.sendall(req)
            while b"\r\n\r\n" not in buf:
                d = s.recv(262144)
                if not d:
                    raise EOFError
                buf += d
            head, _, buf = buf.partition(b"\r\n\r\n")
            length = 0
            for line in head.split(b"\r\n")[1:]:
                k, _, v = line.partition(b":")
                if k.strip().lower() == b"content-length":
                    length = int(v)
            while len(buf) < length:
                d = s.recv(262144)
                if not d:
                    raise EOFError
                buf += d
            body, buf = buf[:length], buf[length:]
            if not head.startswith(b"HTTP/1.1 200") or (count == 0 and body != APP_BODY) \
                    or len(body) != APP_SIZE:
                bad += 1
            count += 1
            if b"connection: close" in head.lower():
                s.close()
                s = None
        except (OSError, EOFError):
            s.close()
            s = None
    os.write(wfd, b"%d %d %d\n" % (count, reconnects, bad))
    os._exit(0)


def http_bench(port, pid):
    start = now() + 0.3
    pipes, kids = [], []
    for _ in range(HTTP_CONNS):
        r, w = os.pipe()
        k = os.fork()
        if k == 0:
            os.close(r)
            http_worker(port, start, HTTP_SECONDS, w)
        os.close(w)
        pipes.append(r)
        kids.append(k)
    cpu0 = cpu_seconds(pid)
    total = reconnects = bad = 0
    for r, k in zip(pipes, kids):
        data = b""
        while True:
            d = os.read(r, 100)
            if not d:
                break
            data += d
        os.close(r)
        os.waitpid(k, 0)
        c, rc, b = map(int, data.split())
        total, reconnects, bad = total + c, reconnects + rc, bad + b
    cpu = cpu_seconds(pid) - cpu0
    return total / HTTP_SECONDS, reconnects - HTTP_CONNS, bad, 100.0 * cpu / (HTTP_SECONDS + 0.3)


def broadcast_round(ctl, receivers, n, timeout):
    """Send "broadcast n" on ctl; seconds until every receiver has it."""
    tag = "bcast %d " % n
    t0 = now()
    ctl.send_text("broadcast %d" % n)
    pending = {id(c): c for c in receivers}
    end = t0 + timeout
    while pending:
        left = end - now()
        if left <= 0:
            return None
        for c in select.select(list(pending.values()), [], [], left)[0]:
            if not c.feed():
                raise EOFError("a receiver closed")
            for m in c.messages():
                if m.startswith(tag):
                    if len(m) != 1024:
                        raise RuntimeError("broadcast of %d bytes" % len(m))
                    pending.pop(id(c), None)
    return now() - t0


def run_server(kind, argv):
    port = int(argv[1])
    p = subprocess.Popen(argv, stdout=subprocess.PIPE,
                         stderr=subprocess.DEVNULL)
    if p.stdout.readline().strip() != b"ready":
        p.kill()
        raise RuntimeError(kind + " did not start")
    for _ in range(100):
        try:
            socket.create_connection(("127.0.0.1", port), 0.1).close()
            break
        except OSError:
            time.sleep(0.02)
    return p


def stop_server(p):
    if p.poll() is None:
        p.send_signal(signal.SIGTERM)
        try:
            p.wait(3)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()


def one_run(kind, binary, args, close_wait):
    r = {}
    port = free_port()
    p = run_server(kind, [binary, str(port)] + args)
    pid = p.pid
    clients = []
    try:
        time.sleep(0.5)
        r["idle_rss"], r["idle_threads"] = proc_status(pid)
        r["idle_vsz"] = vm_size(pid)

        r["http_rps"], r["http_reconnects"], r["http_bad"], r["http_cpu"] = http_bench(port, pid)

        clients = [WS(port) for _ in range(NCLIENTS)]
        service(clients, 0.5)
        r["ws50_rss"], r["ws50_threads"] = proc_status(pid)

        ctl = clients[0]
        rtt = []
        for i in range(ECHOES):
            msg = "echo %d hello from a phone" % i
            t0 = now()
            ctl.send_text(msg)
            if ctl.recv_message() != msg:
                raise RuntimeError("bad echo")
            rtt.append(now() - t0)
        r["echo_p50"], r["echo_p99"] = pct(rtt, 50) * 1e6, pct(rtt, 99) * 1e6

        cpu0 = cpu_seconds(pid)
        lat = [broadcast_round(ctl, clients, n, 10.0) for n in range(BROADCASTS)]
        r["bcast_cpu_ms"] = (cpu_seconds(pid) - cpu0) * 1000 / BROADCASTS
        r["bcast_lost"] = sum(1 for x in lat if x is None)
        lat = [x for x in lat if x is not None]
        r["bcast_p50"], r["bcast_p99"] = pct(lat, 50) * 1e3, pct(lat, 99) * 1e3

        # The stalled phone: fresh 50 clients, one of them never reads.
        for c in clients:
            c.close()
        clients = []
        time.sleep(0.5)
        clients = [WS(port, rcvbuf=4096 if i == STALLED else None)
                   for i in range(NCLIENTS)]
        stalled = clients[STALLED]
        readers = [c for i, c in enumerate(clients) if i != STALLED]
        ctl = clients[0]
        service(readers, 0.3)
        stats(ctl, readers)                       # resets the maxima
        # Until the server gives up on the stalled client (a failed or
        # timed-out write, or a full queue): the kernel takes megabytes
        # first. Then STALLED_BROADCASTS more.
        lat, r["stall_rounds"], n = [], None, 0
        t_phase = now()
        while n < MAX_FILL + STALLED_BROADCASTS:
            lat.append(broadcast_round(ctl, readers, 1000 + n, 40.0))
            n += 1
            if r["stall_rounds"] is None and n % 100 == 0:
                st = stats(ctl, readers)
                r["stall_bcast_max_ms"] = max(r.get("stall_bcast_max_ms", 0),
                                              int(st["bcast_max_us"]) / 1e3)
                r["stall_write_max_ms"] = max(r.get("stall_write_max_ms", 0),
                                              int(st["write_max_us"]) / 1e3)
                if int(st["write_fail"]):
                    r["stall_rounds"] = n
            if r["stall_rounds"] is not None and n >= r["stall_rounds"] + STALLED_BROADCASTS:
                break
        r["stall_phase_s"] = now() - t_phase
        r["stall_lost"] = sum(1 for x in lat if x is None)
        worst = max(range(len(lat)), key=lambda i: lat[i] or 1e9)
        r["stall_max_at"] = worst + 1 - (r["stall_rounds"] or 0)
        lat = [x for x in lat if x is not None]
        r["stall_p50"], r["stall_p99"] = pct(lat, 50) * 1e3, pct(lat, 99) * 1e3
        r["stall_max"] = max(lat) * 1e3 if lat else None
        st = stats(ctl, readers)
        r["stall_bcast_max_ms"] = max(r.get("stall_bcast_max_ms", 0),
                                      int(st["bcast_max_us"]) / 1e3)
        r["stall_write_max_ms"] = max(r.get("stall_write_max_ms", 0),
                                      int(st["write_max_us"]) / 1e3)
        r["stall_failed"] = int(st["write_fail"])
        # How long until the server has dropped the stalled client?
        t0 = now()
        r["stall_dropped_after_s"] = None
        while now() - t0 < close_wait:
            st = stats(ctl, readers)
            if int(st["clients"]) < NCLIENTS:
                r["stall_dropped_after_s"] = now() - t0
                break
            service(readers, 0.25)
        r["stall_close_after_ms"] = int(st["close_after_ms"])
        r["stall_waited_s"] = now() - t0
        r["stall_threads"] = proc_status(pid)[1]
        r["stall_rss"] = proc_status(pid)[0]
        # What did the stalled phone get? Read it now, to the end.
        got, eof = 0, False
        stalled.sock.settimeout(1.0)
        while True:
            try:
                d = stalled.sock.recv(1 << 20)
            except socket.timeout:
                break
            except OSError:
                eof = True
                break
            if not d:
                eof = True
                break
            stalled.buf += d
            got += sum(1 for m in stalled.messages() if m.startswith("bcast "))
        r["stall_phone_got"] = got
        r["stall_phone_eof"] = eof
        r["alive"] = p.poll() is None
    finally:
        for c in clients:
            try:
                c.close()
            except OSError:
                pass
        stop_server(p)
    return r


ROWS = [
    ("idle RSS (MiB)", "idle_rss", lambda v: "%.1f" % (v / 1024)),
    ("idle threads", "idle_threads", "%d"),
    ("  idle VmSize (MiB; address space only)", "idle_vsz",
     lambda v: "%.0f" % (v / 1024)),
    ("RSS, 50 websockets (MiB)", "ws50_rss", lambda v: "%.1f" % (v / 1024)),
    ("threads, 50 websockets", "ws50_threads", "%d"),
    ("GET /app.js 60 KiB, 4 keep-alive conns (req/s)", "http_rps", "%.0f"),
    ("  server CPU meanwhile (% of one core)", "http_cpu", "%.0f"),
    ("  reconnects / bad responses", ("http_reconnects", "http_bad"), "%d / %d"),
    ("echo round trip p50 (us)", "echo_p50", "%.0f"),
    ("echo round trip p99 (us)", "echo_p99", "%.0f"),
    ("broadcast to 50, last arrival p50 (ms)", "bcast_p50", "%.2f"),
    ("broadcast to 50, last arrival p99 (ms)", "bcast_p99", "%.2f"),
    ("  server CPU per broadcast (ms)", "bcast_cpu_ms", "%.2f"),
    ("1 of 50 stalled: broadcasts until the server gives up", "stall_rounds", "%d"),
    ("1 of 50 stalled: other 49, p50 (ms)", "stall_p50", "%.2f"),
    ("1 of 50 stalled: other 49, p99 (ms)", "stall_p99", "%.2f"),
    ("1 of 50 stalled: other 49, max (ms)", "stall_max", "%.1f"),
    ("  longest broadcast call in the server (ms)", "stall_bcast_max_ms", "%.1f"),
    ("  longest single write in the server (ms)", "stall_write_max_ms", "%.1f"),
    ("  stalled one closed after giving up, each run (s)", "stall_close_after_ms",
     "per-run"),
    ("  broadcasts the stalled phone can still read", "stall_phone_got", "%d"),
    ("  threads after", "stall_threads", "%d"),
    ("  lost broadcasts (any phase)", ("bcast_lost", "stall_lost"), "%d + %d"),
]


def fmt(spec, v):
    if v is None:
        return "-"
    if callable(spec):
        return spec(v)
    return spec % v


def table(results, names):
    width = max(len(r[0]) for r in ROWS)
    out = ["%-*s  %s" % (width, "", "  ".join("%10s" % n for n in names))]
    for label, key, spec in ROWS:
        cells = []
        for n in names:
            runs = results[n]
            if isinstance(key, tuple):
                vals = tuple(median([r.get(k) for r in runs]) for k in key)
                cells.append("%10s" % ("-" if None in vals else spec % vals))
            elif spec == "per-run":     # bimodal: show every run
                cells.append("%10s" % ",".join(
                    "%.1f" % (r[key] / 1000) if r[key] >= 0
                    else ">%.0f" % r["stall_waited_s"] for r in runs))
            else:
                cells.append("%10s" % fmt(spec, median([r.get(key) for r in runs])))
        out.append("%-*s  %s" % (width, label, "  ".join(cells)))
    return "\n".join(out)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--civetweb", default="./civetweb_server")
    ap.add_argument("--lws", default="./lws_server")
    ap.add_argument("--civetweb-timeout-ms", type=int, default=2000,
                    help="civetweb request_timeout_ms (its own default: 30000)")
    ap.add_argument("--lws-max-pending", type=int, default=64)
    ap.add_argument("--only", choices=["civetweb", "lws"])
    ap.add_argument("--close-wait", type=float, default=CLOSE_WAIT,
                    help="s to wait for the stalled client to be dropped"
                         " (civetweb: + 2 x its timeout)")
    a = ap.parse_args()
    servers = [("civetweb", a.civetweb, [str(a.civetweb_timeout_ms)],
                a.close_wait + 2 * a.civetweb_timeout_ms / 1000),
               ("lws", a.lws, [str(a.lws_max_pending)], a.close_wait)]
    if a.only:
        servers = [s for s in servers if s[0] == a.only]
    results = {n: [] for n, *_ in servers}
    for i in range(a.runs):
        for name, binary, args, close_wait in servers:
            t0 = now()
            r = one_run(name, binary, args, close_wait)
            results[name].append(r)
            print("run %d %-8s %.0f s, load %s: %s" % (
                i + 1, name, now() - t0, open("/proc/loadavg").read().split()[0],
                " ".join("%s=%s" % (k, ("%.4g" % v) if isinstance(v, float) else v)
                         for k, v in r.items())), file=sys.stderr, flush=True)
    print()
    print("median of %d runs (civetweb request_timeout_ms=%d, lws max_pending=%d)"
          % (a.runs, a.civetweb_timeout_ms, a.lws_max_pending))
    print(table(results, [n for n, *_ in servers]))


if __name__ == "__main__":
    main()
