#!/usr/bin/env python3
"""Instructions a leader spends per ranked search (JSON-RPC `library.search`,
limit 50), counted by callgrind only while the queries run: the same
database, the same 200 queries, for each leader binary given, twice in turn.
Unlike compare.py's CPU time per query (10 ms ticks, and a loaded machine's
cache misses), the count repeats to 0.1 %, so a change to the reply path
shows up even when it is a few percent of the answer:

    bench/library/instructions.py OLD/tuttid NEW/tuttid     # release builds

The corpus is the generated one (corpus.py; made if missing), its database
scanned once by the first binary and copied for every run. Needs valgrind
(Debian 12's 3.19 cannot read a Swift binary's DWARF 5: the copies it runs
are stripped of debug information, which keeps the symbols)."""
import argparse
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from compare import RPCClient, cpu_seconds, free_port, wait_port  # noqa: E402


def leader_args(tuttid, music, work, rpc):
    open(os.path.join(work, "none.conf"), "w").close()
    return [tuttid, "leader", "--music", music, "--db", os.path.join(work, "library.db"), "--mpd", f"127.0.0.1:{free_port()}",
            "--control", f"127.0.0.1:{rpc}", "--listen", f"127.0.0.1:{free_port()}", "--web", "off", "--snapcast-stream", "off",
            "--snapcast-control", "off", "--snapcast-http", "off", "--no-announce", "--log-level", "warning",
            "--config", os.path.join(work, "none.conf")]


def env(work):
    return dict(os.environ, XDG_DATA_HOME=work, XDG_STATE_HOME=work)


def settle(pid, quiet, every):
    """Waits until the process spends less than `quiet` s of CPU in `every` s: its start-up scan is done."""
    last = cpu_seconds(pid)
    while True:
        time.sleep(every)
        now = cpu_seconds(pid)
        if now - last < quiet:
            return
        last = now


def make_db(tuttid, music, files, scratch):
    work = os.path.join(scratch, "scan")
    os.makedirs(work)
    rpc = free_port()
    p = subprocess.Popen(leader_args(tuttid, music, work, rpc), env=env(work), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    wait_port(rpc, 120)
    client = RPCClient(rpc)
    while client.call("library.stats")["tracks"] < files:
        time.sleep(1)
    settle(p.pid, 0.05, 2.0)
    client.close()
    p.terminate()
    p.wait(30)
    return os.path.join(work, "library.db")


def queries(corpus):
    """Words of titles, two-letter prefixes and artists, drawn from the corpus' own tags."""
    tracks = json.load(open(os.path.join(corpus, "tracks.json")))
    rng = random.Random(5)
    words = sorted({w for t in tracks[:20000] for w in t["title"].split() if len(w) >= 3 and w.isalpha()})
    artists = sorted({t["artist"] for t in tracks})
    return rng.sample(words, 120) + [w[:2] for w in rng.sample(words, 40)] + rng.sample(artists, 40)


def count(tuttid, music, db, qs, work):
    os.makedirs(work)
    shutil.copy(db, os.path.join(work, "library.db"))
    rpc = free_port()
    out = os.path.join(work, "callgrind.out")
    p = subprocess.Popen(["valgrind", "--tool=callgrind", "--instr-atstart=no", f"--callgrind-out-file={out}"]
                         + leader_args(tuttid, music, work, rpc),
                         env=env(work), stdout=subprocess.DEVNULL, stderr=open(os.path.join(work, "valgrind.log"), "w"))
    wait_port(rpc, 600)
    settle(p.pid, 0.2, 3.0)
    client = RPCClient(rpc)
    client.call("library.search", {"query": qs[0], "limit": 50})
    subprocess.run(["callgrind_control", "-i", "on", str(p.pid)], check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    for q in qs:
        client.call("library.search", {"query": q, "limit": 50})
    subprocess.run(["callgrind_control", "-i", "off", str(p.pid)], check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    client.close()
    p.terminate()
    p.wait(120)
    with open(out) as f:
        totals = [int(line.split()[1]) for line in f if line.startswith(("totals:", "summary:"))]
    return max(totals) / len(qs)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("tuttid", nargs="+")
    ap.add_argument("--files", type=int, default=100000)
    ap.add_argument("--corpus", help="default /var/tmp/tutti-bench-corpus-N")
    args = ap.parse_args()
    corpus = args.corpus or f"/var/tmp/tutti-bench-corpus-{args.files}"
    subprocess.run([sys.executable, os.path.join(HERE, "corpus.py"), "--files", str(args.files), "--out", corpus], check=True)
    music = os.path.join(corpus, "music")
    with tempfile.TemporaryDirectory(prefix="tutti-bench-instructions-") as scratch:
        stripped = []
        for i, b in enumerate(args.tuttid):
            s = os.path.join(scratch, f"tuttid-{i}")
            subprocess.run(["strip", "--strip-debug", "-o", s, b], check=True)
            stripped.append(s)
        db = make_db(stripped[0], music, args.files, scratch)
        qs = queries(corpus)
        for round in range(2):
            for i, b in enumerate(stripped):
                ir = count(b, music, db, qs, os.path.join(scratch, f"run-{round}-{i}"))
                print(f"{args.tuttid[i]} (run {round + 1}): {ir:,.0f} instructions per ranked search ({len(qs)} queries, limit 50)", flush=True)


if __name__ == "__main__":
    main()
