#!/usr/bin/env python3
"""A TCP relay that delays traffic, for bench/sync --impair.

  relay.py --delay-ms D --jitter-ms J LISTEN_PORT:TARGET_HOST:TARGET_PORT [...]

Listens on 127.0.0.1:LISTEN_PORT for each mapping; every accepted connection
is joined to a new connection to the target. In both directions each chunk of
bytes read is held for D ± J ms (uniform, never negative) and then written,
never before the chunk read ahead of it, so TCP order is kept (jitter shows up
as bunching, as it would on a real path). TCP_NODELAY on every socket.
Python 3 standard library only.
"""
import argparse
import collections
import random
import socket
import sys
import threading
import time


def pump(src, dst, delay, jitter, rng):
    """Copy src -> dst through a delay line: a reader thread and this writer."""
    queue = collections.deque()
    cond = threading.Condition()
    state = {"eof": False, "last": 0.0}

    def reader():
        try:
            while True:
                data = src.recv(65536)
                now = time.monotonic()
                if not data:
                    break
                hold = max(0.0, delay + rng.uniform(-jitter, jitter))
                release = max(now + hold, state["last"])
                state["last"] = release
                with cond:
                    queue.append((release, data))
                    cond.notify()
        except OSError:
            pass
        with cond:
            state["eof"] = True
            cond.notify()

    threading.Thread(target=reader, daemon=True).start()
    try:
        while True:
            with cond:
                while not queue and not state["eof"]:
                    cond.wait()
                if not queue:
                    break
                release, data = queue[0]
            wait = release - time.monotonic()
            if wait > 0:
                time.sleep(wait)
            with cond:
                queue.popleft()
            dst.sendall(data)
        dst.shutdown(socket.SHUT_WR)
    except OSError:
        pass


def listener(port):
    server = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    server.bind(("127.0.0.1", port))
    server.listen(16)
    return server


def serve(server, target, delay, jitter, seed):
    rng = random.Random(seed)
    while True:
        client, _ = server.accept()
        try:
            upstream = socket.create_connection(target)
        except OSError:
            client.close()
            continue
        for s in (client, upstream):
            s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

        def run(a=client, b=upstream):
            t = threading.Thread(target=pump, args=(b, a, delay, jitter, random.Random(rng.random())), daemon=True)
            t.start()
            pump(a, b, delay, jitter, random.Random(rng.random()))
            t.join()
            a.close()
            b.close()
        threading.Thread(target=run, daemon=True).start()


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--delay-ms", type=float, required=True)
    p.add_argument("--jitter-ms", type=float, default=0.0)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("mappings", nargs="+", help="LISTEN_PORT:TARGET_HOST:TARGET_PORT")
    a = p.parse_args()
    threads = []
    for i, m in enumerate(a.mappings):
        lp, host, tp = m.split(":")
        t = threading.Thread(target=serve, args=(listener(int(lp)), (host, int(tp)), a.delay_ms / 1000, a.jitter_ms / 1000,
                                                  a.seed + i), daemon=True)
        t.start()
        threads.append(t)
    print("relay ready", flush=True)
    try:
        while True:
            time.sleep(3600)
    except KeyboardInterrupt:
        pass
    return 0


if __name__ == "__main__":
    sys.exit(main())
