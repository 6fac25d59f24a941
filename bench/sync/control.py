#!/usr/bin/env python3
"""Drive the leader's JSON-RPC control port during a bench/sync run.

  control.py --addr 127.0.0.1:PORT --t0-file FILE --seconds S --warmup W --reps R --out commands.jsonl

Newline-delimited JSON-RPC 2.0 over TCP. At R evenly spaced points after the
warm-up it sends, relative to the start of each repetition:

  +0.0 s player.pause      +1.5 s player.play       +4.0 s player.next
  +7.5 s player.seek {"position": 0}                 +11.0 s player.previous

and rooms.list every 5 s and once near the end. Every request is appended to
--out as one JSON line: method, params, sent_ns and received_ns
(CLOCK_MONOTONIC), and the result or the error. t0 (ns, CLOCK_MONOTONIC) is
read from --t0-file, which the run script writes when the first follower
starts. Python 3 standard library only.
"""
import argparse
import json
import os
import socket
import sys
import time

REPETITION = [(0.0, "player.pause", None), (1.5, "player.play", None), (4.0, "player.next", None),
              (7.5, "player.seek", {"position": 0}), (11.0, "player.previous", None)]
REPETITION_SECONDS = 14.5


def mono():
    return time.clock_gettime_ns(time.CLOCK_MONOTONIC)


class Client:
    def __init__(self, host, port, timeout=5.0):
        self.address = (host, port)
        self.timeout = timeout
        self.sock = None
        self.buffer = b""
        self.next_id = 0

    def connect(self, deadline_s=3.0):
        end = time.monotonic() + deadline_s
        while True:
            try:
                self.sock = socket.create_connection(self.address, timeout=self.timeout)
                self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
                self.buffer = b""
                return
            except OSError:
                if time.monotonic() > end:
                    raise
                time.sleep(0.1)

    def _line(self):
        while b"\n" not in self.buffer:
            data = self.sock.recv(65536)
            if not data:
                raise ConnectionError("control connection closed by the leader")
            self.buffer += data
        line, self.buffer = self.buffer.split(b"\n", 1)
        return line

    def call(self, method, params=None):
        if self.sock is None:
            self.connect(1.0)
        self.next_id += 1
        request = {"jsonrpc": "2.0", "id": self.next_id, "method": method}
        if params is not None:
            request["params"] = params
        sent = mono()
        self.sock.sendall(json.dumps(request).encode() + b"\n")
        while True:
            line = self._line().strip()
            if not line:
                continue
            message = json.loads(line)
            if message.get("id") == self.next_id:
                return sent, mono(), message
            # anything else (a notification) is not ours


def schedule(seconds, warmup, reps):
    events = []
    first, last = warmup + 5.0, seconds - 2.0
    if reps > 0 and last - first >= REPETITION_SECONDS:
        reps = min(reps, int((last - first) // REPETITION_SECONDS))
        spacing = (last - first) / reps
        for r in range(reps):
            base = first + r * spacing
            events += [(base + dt, m, p) for dt, m, p in REPETITION]
    t = warmup + 2.0
    while t < seconds - 1.5:
        events.append((t, "rooms.list", None))
        t += 5.0
    events.append((max(0.0, seconds - 1.2), "rooms.list", None))
    return sorted(events, key=lambda e: e[0])


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--addr", required=True)
    p.add_argument("--t0-file", required=True)
    p.add_argument("--seconds", type=float, required=True)
    p.add_argument("--warmup", type=float, default=3.0)
    p.add_argument("--reps", type=int, default=3)
    p.add_argument("--out", required=True)
    a = p.parse_args()
    host, port = a.addr.rsplit(":", 1)

    out = open(a.out, "a", buffering=1)

    def record(**fields):
        out.write(json.dumps(fields) + "\n")

    while not os.path.exists(a.t0_file) or os.path.getsize(a.t0_file) == 0:
        time.sleep(0.02)
    with open(a.t0_file) as f:
        t0 = int(f.read().split()[0])

    client = Client(host, int(port))
    try:
        client.connect()
    except OSError as e:
        record(method="connect", error=f"cannot connect to {a.addr}: {e}")
        return 0
    for offset, method, params in schedule(a.seconds, a.warmup, a.reps):
        wait = (t0 + offset * 1e9 - mono()) / 1e9
        if wait > 0:
            time.sleep(wait)
        try:
            sent, received, message = client.call(method, params)
        except (OSError, ValueError, ConnectionError) as e:
            record(method=method, params=params, error=f"{type(e).__name__}: {e}")
            client.sock = None
            continue
        record(method=method, params=params, sent_ns=sent, received_ns=received,
               result=message.get("result"), error=message.get("error"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
