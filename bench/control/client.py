#!/usr/bin/env python3
"""Round-trip latency of one request on one TCP connection, N times in a row.

    client.py jsonrpc HOST PORT N    # {"jsonrpc":"2.0","id":1,"method":"player.status"}
    client.py mpd HOST PORT N        # MPD "status", answered up to "OK"

Prints "p50_us p99_us" (microseconds, time.perf_counter_ns per round trip;
the first 50 requests warm up and are not counted).
"""
import socket
import sys
import time

kind, host, port, n = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
s = socket.create_connection((host, port))
s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
buf = b""


def read_until(predicate):
    global buf
    while True:
        end = predicate(buf)
        if end is not None:
            reply, buf = buf[:end], buf[end:]
            return reply
        chunk = s.recv(65536)
        if not chunk:
            raise SystemExit("connection closed")
        buf += chunk


def line_end(b):
    i = b.find(b"\n")
    return None if i < 0 else i + 1


def mpd_end(b):
    for marker in (b"OK\n", b"ACK "):
        if b.startswith(marker):
            return line_end(b)
        i = b.find(b"\n" + marker)
        if i >= 0:
            j = b.find(b"\n", i + 1)
            return None if j < 0 else j + 1
    return None


if kind == "mpd":
    read_until(line_end)  # greeting "OK MPD x.y.z"
    request, until = b"status\n", mpd_end
else:
    request, until = b'{"jsonrpc":"2.0","id":1,"method":"player.status"}\n', line_end

samples = []
for i in range(n + 50):
    t0 = time.perf_counter_ns()
    s.sendall(request)
    reply = read_until(until)
    t1 = time.perf_counter_ns()
    if kind == "mpd" and b"state:" not in reply:
        raise SystemExit("unexpected reply: %r" % reply)
    if kind == "jsonrpc" and b'"result"' not in reply:
        raise SystemExit("unexpected reply: %r" % reply)
    if i >= 50:
        samples.append((t1 - t0) / 1000)
samples.sort()
p = lambda q: samples[min(len(samples) - 1, int(q * len(samples)))]
print("%.1f %.1f" % (p(0.50), p(0.99)))
