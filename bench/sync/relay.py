#!/usr/bin/env python3
"""A seeded impairment relay for TCP and UDP, for bench/sync and the tests.

  relay.py [OPTIONS] LISTEN_PORT:TARGET_HOST:TARGET_PORT [...]

For each mapping it listens on 127.0.0.1:LISTEN_PORT for TCP *and* UDP and
joins every TCP connection, and every UDP peer, to TARGET_HOST:TARGET_PORT
(the same port number on both protocols: a Tutti leader answers clock
requests on UDP at its TCP port).

Delay, per direction ("down" = target -> client, "up" = client -> target):
  uniform:MEAN,HALF        MEAN +- HALF ms, uniform (never negative)
  normal:MEAN,SD           normal, clipped at 0
  burst:LO,HI,EVERY,SLO,SHI
                           two-state model of a Wi-Fi link: in the good state
                           LO..HI ms (uniform); stalls start at exponential
                           intervals of mean EVERY ms and last SLO..SHI ms;
                           what is sent during a stall leaves when it ends.
                           A stall holds both directions (the radio is one).
  queue:BASE,MEAN,SD,TAU   a loaded link's queue: BASE ms plus a queueing
                           delay that wanders (Ornstein-Uhlenbeck, reflected
                           at 0) around MEAN ms with a spread of SD ms and a
                           memory of TAU ms: bursts of load fill the queue
                           and it drains; one process per direction, shared
                           by TCP and UDP.
  --impair D,J is uniform:D,J both ways.

Order (--order):
  independent (the default, issue 11's model): every datagram has its own
       delay and may overtake the ones before it; TCP keeps its own order.
  fifo: each direction is one queue, as a Wi-Fi station or access point
       sends from a FIFO per access category: nothing, TCP or UDP, leaves
       before what was sent ahead of it in that direction.

Loss (--loss P, per packet or TCP read, 0..1):
  UDP: the datagram is dropped.
  TCP: the bytes are held one retransmission timeout longer (--rto-ms, 200 ms:
       Linux's minimum RTO), doubled for each loss in a row, as a lost
       segment stalls a TCP stream; the order is kept.
Reordering (--reorder P, UDP only): a datagram is held --reorder-ms longer.
Bandwidth cap (--rate-kbps K): each direction serialises at K kbit/s.
TCP keeps order: bytes are never released before the bytes read ahead of
them (jitter shows up as bunching, as on a real path). TCP_NODELAY.
Everything random comes from --seed: a run repeats.
Python 3 standard library only. Prints "relay ready" once listening; with
--stats FILE, writes per-direction counts there on SIGTERM/SIGINT.
"""
import argparse
import heapq
import json
import os
import random
import signal
import socket
import sys
import threading
import time


class Distribution:
    """One direction's delay model (seconds)."""

    def __init__(self, spec, rng, stalls, queue=None):
        self.kind, _, args = spec.partition(":")
        self.args = [float(x) for x in args.split(",")] if args else []
        self.rng = rng
        self.stalls = stalls
        self.queue = queue
        want = {"uniform": 2, "normal": 2, "burst": 5, "queue": 4, "none": 0}
        if self.kind not in want or len(self.args) != want[self.kind]:
            raise SystemExit(f"relay.py: bad delay '{spec}' (uniform:M,H | normal:M,SD | burst:LO,HI,EVERY,SLO,SHI | queue:BASE,MEAN,SD,TAU | none)")

    def release(self, now):
        """When a packet sent at `now` arrives (before loss/order/rate rules)."""
        a, r = self.args, self.rng
        if self.kind == "none":
            return now
        if self.kind == "uniform":
            return now + max(0.0, a[0] + r.uniform(-a[1], a[1])) / 1000
        if self.kind == "normal":
            return now + max(0.0, r.gauss(a[0], a[1])) / 1000
        if self.kind == "queue":
            return now + (a[0] + self.queue.delay_ms(now, a[1], a[2], a[3])) / 1000
        base = r.uniform(a[0], a[1]) / 1000
        end = self.stalls.end_of_stall(now)
        return (end if end is not None else now) + base


class Stalls:
    """Stall intervals of one link (both directions), drawn lazily from a seed."""

    def __init__(self, spec, rng):
        self.lock = threading.Lock()
        self.enabled = spec is not None
        if self.enabled:
            self.every, self.lo, self.hi = spec
        self.rng = rng
        self.intervals = []
        self.horizon = time.monotonic() + 1.0  # the first second is clean (the join)
        self.count = 0

    def end_of_stall(self, t):
        if not self.enabled:
            return None
        with self.lock:
            while self.horizon < t + 1:
                start = self.horizon + self.rng.expovariate(1000 / self.every)
                end = start + self.rng.uniform(self.lo, self.hi) / 1000
                self.intervals.append((start, end))
                self.horizon = end
            while self.intervals and self.intervals[0][1] < t - 5:
                self.intervals.pop(0)
            for s, e in self.intervals:
                if s <= t < e:
                    return e
        return None


class Direction:
    """One direction of one link: its FIFO (--order fifo) and its queue's state."""

    def __init__(self, rng):
        self.lock = threading.Lock()
        self.last_release = 0.0
        self.rng = rng
        self.q = None
        self.t = 0.0

    def delay_ms(self, now, mean, sd, tau):
        with self.lock:
            if self.q is None:
                self.q, self.t = mean, now
            dt = max(0.0, now - self.t) * 1000
            self.t = max(self.t, now)
            k = pow(2.718281828459045, -dt / tau) if tau > 0 else 0.0
            self.q = mean + (self.q - mean) * k + sd * (max(0.0, 1 - k * k) ** 0.5) * self.rng.gauss(0, 1)
            self.q = abs(self.q)
            return self.q

    def in_order(self, release):
        with self.lock:
            release = max(release, self.last_release)
            self.last_release = release
            return release


class Line:
    """One direction: impairments, then a scheduler thread that delivers."""

    def __init__(self, dist, opts, rng, ordered, deliver, fifo=None):
        self.dist, self.opts, self.rng, self.ordered, self.deliver = dist, opts, rng, ordered, deliver
        self.fifo = fifo
        self.heap, self.n = [], 0
        self.cond = threading.Condition()
        self.last_release = 0.0
        self.wire_free = 0.0
        self.losses_in_row = 0
        self.stats = {"packets": 0, "bytes": 0, "lost": 0, "reordered": 0, "max_hold_ms": 0.0}
        self.closed = False
        threading.Thread(target=self.run, daemon=True).start()

    def offer(self, data, now=None):
        now = time.monotonic() if now is None else now
        o, r = self.opts, self.rng
        self.stats["packets"] += 1
        self.stats["bytes"] += len(data)
        release = self.dist.release(now)
        if self.fifo is not None:
            # The link's queue first: a TCP segment lost end to end waits its
            # RTO in the sender's stack, holding TCP only (its order below).
            release = self.fifo.in_order(release)
        lost = o.loss > 0 and r.random() < o.loss
        if lost:
            self.stats["lost"] += 1
            if not self.ordered:
                return  # a datagram is simply gone
            self.losses_in_row += 1
            release += o.rto_ms / 1000 * (2 ** (self.losses_in_row - 1))
        else:
            self.losses_in_row = 0
        if not self.ordered and o.reorder > 0 and r.random() < o.reorder:
            self.stats["reordered"] += 1
            release += o.reorder_ms / 1000
        if o.rate_kbps > 0:
            # Serialisation on a capped link: one packet after another.
            start = max(now, self.wire_free)
            self.wire_free = start + len(data) * 8 / (o.rate_kbps * 1000)
            release = max(release, self.wire_free)
        if self.ordered:
            release = max(release, self.last_release)
            self.last_release = release
        self.stats["max_hold_ms"] = max(self.stats["max_hold_ms"], (release - now) * 1000)
        with self.cond:
            self.n += 1
            heapq.heappush(self.heap, (release, self.n, data))
            self.cond.notify()

    def close(self):
        with self.cond:
            self.closed = True
            self.cond.notify()

    def run(self):
        while True:
            with self.cond:
                while not self.heap and not self.closed:
                    self.cond.wait()
                if not self.heap:
                    break
                release = self.heap[0][0]
                wait = release - time.monotonic()
                if wait > 0:
                    self.cond.wait(wait)  # woken early by a packet due sooner
                    continue
                _, _, data = heapq.heappop(self.heap)
            try:
                self.deliver(data)
            except OSError:
                pass
        try:
            self.deliver(None)
        except OSError:
            pass


class Mapping:
    def __init__(self, index, listen_port, target, opts):
        self.target, self.opts = target, opts
        self.rng = random.Random(opts.seed * 1000 + index)
        stall_spec = None
        for spec in (opts.down, opts.up):
            if spec.startswith("burst:"):
                a = [float(x) for x in spec.split(":", 1)[1].split(",")]
                stall_spec = (a[2], a[3], a[4])
        self.stalls = Stalls(stall_spec, random.Random(self.rng.random()))
        self.directions = {"down": Direction(random.Random(self.rng.random())), "up": Direction(random.Random(self.rng.random()))}
        self.lines = []
        # Port 0: one the kernel picks whose UDP twin is free too (a port
        # probed and closed by the caller may be taken again before this binds).
        for attempt in range(100):
            tcp = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            tcp.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            tcp.bind(("127.0.0.1", listen_port))
            self.udp = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
            try:
                self.udp.bind(("127.0.0.1", tcp.getsockname()[1]))
                break
            except OSError:
                tcp.close(); self.udp.close()
                if listen_port != 0 or attempt == 99:
                    raise
        self.port = tcp.getsockname()[1]
        tcp.listen(16)
        self.udp_peers = {}
        self.udp_lock = threading.Lock()
        threading.Thread(target=self.accept_loop, args=(tcp,), daemon=True).start()
        threading.Thread(target=self.udp_loop, daemon=True).start()

    def line(self, direction, ordered, deliver):
        spec = self.opts.down if direction == "down" else self.opts.up
        rng = random.Random(self.rng.random())
        d = self.directions[direction]
        ln = Line(Distribution(spec, rng, self.stalls, d), self.opts, random.Random(self.rng.random()), ordered, deliver,
                  d if self.opts.order == "fifo" else None)
        ln.direction, ln.proto = direction, "tcp" if ordered else "udp"
        self.lines.append(ln)
        return ln

    # --- TCP ---
    def accept_loop(self, server):
        while True:
            client, _ = server.accept()
            try:
                upstream = socket.create_connection(self.target)
            except OSError:
                client.close()
                continue
            for s in (client, upstream):
                s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            up = self.line("up", True, self.tcp_writer(upstream))
            down = self.line("down", True, self.tcp_writer(client))
            threading.Thread(target=self.tcp_reader, args=(client, up), daemon=True).start()
            threading.Thread(target=self.tcp_reader, args=(upstream, down), daemon=True).start()

    @staticmethod
    def tcp_writer(sock):
        def deliver(data):
            if data is None:
                try:
                    sock.shutdown(socket.SHUT_WR)
                except OSError:
                    pass
                return
            sock.sendall(data)
        return deliver

    @staticmethod
    def tcp_reader(sock, line):
        try:
            while True:
                data = sock.recv(65536)
                if not data:
                    break
                line.offer(data)
        except OSError:
            pass
        line.close()

    # --- UDP ---
    def udp_loop(self):
        while True:
            data, peer = self.udp.recvfrom(65536)
            with self.udp_lock:
                entry = self.udp_peers.get(peer)
                if entry is None:
                    upstream = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
                    upstream.connect(self.target)
                    up = self.line("up", False, lambda d, s=upstream: d is not None and s.send(d))
                    down = self.line("down", False, lambda d, p=peer: d is not None and self.udp.sendto(d, p))
                    entry = (upstream, up)
                    self.udp_peers[peer] = entry
                    threading.Thread(target=self.udp_back, args=(upstream, down), daemon=True).start()
            entry[1].offer(data)

    @staticmethod
    def udp_back(upstream, line):
        try:
            while True:
                line.offer(upstream.recv(65536))
        except OSError:
            pass


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--impair", help="D,J: uniform D +- J ms both ways")
    p.add_argument("--delay-ms", type=float, help="(old form) with --jitter-ms: uniform both ways")
    p.add_argument("--jitter-ms", type=float, default=0.0)
    p.add_argument("--down", default=None, help="delay target -> client (see above)")
    p.add_argument("--up", default=None, help="delay client -> target")
    p.add_argument("--loss", type=float, default=0.0)
    p.add_argument("--rto-ms", type=float, default=200.0)
    p.add_argument("--reorder", type=float, default=0.0)
    p.add_argument("--reorder-ms", type=float, default=10.0)
    p.add_argument("--rate-kbps", type=float, default=0.0)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--order", choices=["independent", "fifo"], default="independent",
                   help="independent: datagrams overtake; fifo: one queue per direction (see above)")
    p.add_argument("--stats", help="write per-line counts (JSON) here on exit")
    p.add_argument("--ports-file", help="write the ports listened on here, one a line, once all listen (for LISTEN_PORT 0)")
    p.add_argument("mappings", nargs="+", help="LISTEN_PORT:TARGET_HOST:TARGET_PORT (0: a free port, see --ports-file)")
    a = p.parse_args()
    both = None
    if a.impair:
        d, j = a.impair.split(",")
        both = f"uniform:{d},{j}"
    elif a.delay_ms is not None:
        both = f"uniform:{a.delay_ms},{a.jitter_ms}"
    a.down = a.down or both or "none"
    a.up = a.up or both or "none"
    maps = []
    for i, m in enumerate(a.mappings):
        lp, host, tp = m.split(":")
        maps.append(Mapping(i, int(lp), (host, int(tp)), a))

    def finish(*_):
        if a.stats:
            out = [dict(ln.stats, proto=ln.proto, direction=ln.direction, mapping=i)
                   for i, mp in enumerate(maps) for ln in mp.lines]
            stalls = sum(len(mp.stalls.intervals) for mp in maps)
            with open(a.stats, "w") as f:
                json.dump({"lines": out, "stalls_pending": stalls}, f)
        # At once: sys.exit() from a signal handler leaves the process up while
        # its threads sit in accept() and recv().
        os._exit(0)
    signal.signal(signal.SIGTERM, finish)
    signal.signal(signal.SIGINT, finish)
    if a.ports_file:
        with open(a.ports_file + ".tmp", "w") as f:
            f.write("".join("%d\n" % mp.port for mp in maps))
        os.rename(a.ports_file + ".tmp", a.ports_file)
    print("relay ready", flush=True)
    while True:
        time.sleep(3600)


if __name__ == "__main__":
    sys.exit(main())
