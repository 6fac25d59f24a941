#!/usr/bin/env python3
"""Tutti's library against MPD 0.23 on the same files and the same queries.

Runs MPD, then Tutti's leader, each on its own fresh database over one music
folder, one after the other (never both at once), and measures:

* scan: a cold scan (empty database: from the daemon's start until its
  database holds every file) and an unchanged rescan (`update`), files/s;
  while Tutti's cold scan runs, how long `status` and a ranked search take;
* MPD-protocol `search any`, `search any … window 0:50`, `search title`,
  `find artist`, `find album`, over one persistent connection, for every
  query of the set, with the hit count of each compared between the two;
* Tutti's ranked search (JSON-RPC `library.search`, limit 50: the web app,
  `tutti search`), which MPD has no equivalent of;
* browsing: `list artist`, `list album artist "X"`, `lsinfo` of the root and
  of the biggest folder; the web app's artist and album lists (JSON-RPC);
* resident memory after the scan, after every query, and at its peak, and
  how much the largest answer grew it.

The queries come from the library itself (titles, artists, albums as MPD
lists them), so the benchmark runs on any folder of music:

    bench/library/compare.py --music ~/Music            # someone else's corpus
    bench/library/compare.py --files 100000             # the generated one (corpus.py)

Prints one table and writes it to bench/library/last-run.txt (--out).
"""
import argparse
import json
import os
import random
import re
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))


# ---------------------------------------------------------------- clients

class MPDClient:
    """A persistent MPD-protocol connection; `command` returns the raw answer."""

    def __init__(self, port, timeout=120):
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=timeout)
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4 << 20)
        self.pending = b""
        self._read_answer(greeting=True)

    def _read_answer(self, greeting=False):
        """Reads up to the answer's last line (OK, or ACK after partial output); chunks kept in a list."""
        chunks = [self.pending] if self.pending else []
        tail = self.pending
        while True:
            if tail.endswith(b"\n"):
                last = tail[tail.rfind(b"\n", 0, len(tail) - 1) + 1:]
                if greeting and last.startswith(b"OK MPD"):
                    break
                if last == b"OK\n" or last.startswith(b"ACK ["):
                    break
            chunk = self.sock.recv(1 << 20)
            if not chunk:
                raise ConnectionError("MPD connection closed")
            chunks.append(chunk)
            tail = (tail + chunk)[-4096:]
        self.pending = b""
        return b"".join(chunks)

    @staticmethod
    def quote(s):
        return '"' + s.replace("\\", "\\\\").replace('"', '\\"') + '"'

    def command(self, line):
        self.sock.sendall(line.encode() + b"\n")
        answer = self._read_answer()
        last = answer[answer.rfind(b"\n", 0, len(answer) - 1) + 1:]
        if last.startswith(b"ACK ["):
            raise RuntimeError(f"{line!r}: {last!r}")
        return answer

    def pairs(self, line):
        out = []
        for row in self.command(line).decode("utf-8", "replace").split("\n"):
            if ": " in row:
                k, v = row.split(": ", 1)
                out.append((k, v))
        return out

    def close(self):
        self.sock.close()


class RPCClient:
    """Tutti's newline-delimited JSON-RPC, one connection."""

    def __init__(self, port):
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=120)
        self.file = self.sock.makefile("rb")
        self.next_id = 1

    def call(self, method, params=None):
        return self.timed_call(method, params)[1]

    def timed_call(self, method, params=None):
        """(seconds until the whole reply was read, result): the reply is parsed after
        the clock stops, as MPD's answers are timed read, not parsed (Python's json.loads
        of the 370 KB album list took longer than the leader's answer)."""
        t = time.perf_counter()
        request_id = self.next_id
        self.next_id += 1
        msg = {"jsonrpc": "2.0", "id": request_id, "method": method}
        if params is not None:
            msg["params"] = params
        self.sock.sendall(json.dumps(msg).encode() + b"\n")
        while True:
            line = self.file.readline()
            dt = time.perf_counter() - t
            if not line:
                raise ConnectionError("JSON-RPC connection closed")
            reply = json.loads(line)
            if reply.get("id") == request_id:
                if "error" in reply:
                    raise RuntimeError(f"{method}: {reply['error']}")
                return dt, reply["result"]

    def close(self):
        self.sock.close()


def wait_port(port, seconds=30):
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return
        except OSError:
            time.sleep(0.01)
    raise TimeoutError(f"nothing answers on port {port}")


def rss_kib(pid):
    fields = {}
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            k, _, v = line.partition(":")
            if k in ("VmRSS", "VmHWM"):
                fields[k] = int(v.split()[0])
    fields["parts"] = rss_parts_kib(pid)
    return fields


def rss_parts_kib(pid):
    """Resident KiB by kind of mapping (/proc/PID/smaps): the main malloc heap, other anonymous
    memory (malloc's other arenas, thread stacks), and files (the binary, shared libraries)."""
    parts = {"heap": 0, "anonymous": 0, "files": 0}
    kind = None
    try:
        with open(f"/proc/{pid}/smaps") as f:
            for line in f:
                head = line.split()
                if "-" in head[0] and not head[0].endswith(":"):
                    name = head[5] if len(head) > 5 else ""
                    kind = "heap" if name == "[heap]" else "anonymous" if name in ("", "[stack]") else \
                        None if name.startswith("[") else "files"
                elif head[0] == "Rss:" and kind:
                    parts[kind] += int(head[1])
    except OSError:
        pass
    return parts


def cpu_seconds(pid):
    """User and system CPU time of a process so far (/proc/PID/stat)."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


# ---------------------------------------------------------------- daemons

class Daemon:
    name = "?"

    def wait_scanned(self, client, expected, started, probe=None, poll=0.05):
        """Polls status every `poll` s until no scan runs and `expected` songs are in; returns seconds since `started`."""
        stable = 0
        last_probe = 0.0
        while True:
            st = dict(client.pairs("status"))
            if "updating_db" not in st:
                songs = int(dict(client.pairs("stats")).get("songs", 0))
                if songs >= expected:
                    return time.monotonic() - started
                stable = stable + 1 if songs > 0 else 0
                if stable > 100:  # some files were refused: stop waiting for them
                    return time.monotonic() - started
            if probe and time.monotonic() - last_probe >= 0.25:
                # A few commands a second: enough to see them held up, too few to slow the scan.
                last_probe = time.monotonic()
                probe()
            time.sleep(poll)


class MPD(Daemon):
    name = "MPD 0.23"

    def __init__(self, music, work):
        self.work = work
        self.port = free_port()
        with open(os.path.join(work, "mpd.conf"), "w") as f:
            f.write(f'''music_directory "{music}"
db_file "{work}/mpd.db"
state_file "{work}/mpd.state"
pid_file "{work}/mpd.pid"
bind_to_address "127.0.0.1"
port "{self.port}"
zeroconf_enabled "no"
auto_update "no"
log_file "{work}/mpd.log"
# MPD's default (8 MiB) closes the connection on the largest answers; Tutti has no such limit.
max_output_buffer_size "131072"
audio_output {{
  type "null"
  name "null"
}}
''')

    def start(self):
        self.proc = subprocess.Popen(["mpd", "--no-daemon", os.path.join(self.work, "mpd.conf")],
                                     stdout=subprocess.DEVNULL, stderr=open(os.path.join(self.work, "mpd.stderr"), "w"))
        wait_port(self.port)

    def stop(self):
        self.proc.terminate()
        self.proc.wait(30)


class Tutti(Daemon):
    name = "Tutti"

    def __init__(self, music, work, tuttid):
        self.work = work
        self.music = music
        self.tuttid = tuttid
        self.port = free_port()
        self.rpc_port = free_port()

    def start(self):
        args = [self.tuttid, "leader", "--music", self.music, "--db", os.path.join(self.work, "library.db"),
                "--mpd", f"127.0.0.1:{self.port}", "--control", f"127.0.0.1:{self.rpc_port}",
                "--listen", f"127.0.0.1:{free_port()}", "--web", "off", "--snapcast-stream", "off",
                "--snapcast-control", "off", "--snapcast-http", "off", "--no-announce", "--log-level", "warning",
                "--config", os.path.join(self.work, "none.conf")]
        open(os.path.join(self.work, "none.conf"), "w").close()
        self.proc = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=open(os.path.join(self.work, "tuttid.stderr"), "w"),
                                     env=dict(os.environ, XDG_DATA_HOME=self.work, XDG_STATE_HOME=self.work))
        wait_port(self.port)
        wait_port(self.rpc_port)

    def stop(self):
        self.proc.terminate()
        self.proc.wait(30)


# ---------------------------------------------------------------- queries

HANGUL = re.compile(r"[\uac00-\ud7af]")
KANA_KANJI = re.compile(r"[\u3040-\u30ff\u4e00-\u9fff]")
LATIN_ACCENT = re.compile(r"[\u00c0-\u024f]")


def make_queries(client, count=200, seed=5):
    """A query set of several kinds, drawn from the library's own tags."""
    rng = random.Random(seed)
    titles = [v for k, v in client.pairs("list title")]
    artists = [v for k, v in client.pairs("list artist")]
    albums = [v for k, v in client.pairs("list album")]
    words = sorted({w for t in titles for w in t.split() if len(w) >= 3 and w.isalpha()})
    pairs = sorted({" ".join(t.split()[i:i + 2]) for t in titles[:20000] for i in range(len(t.split()) - 1)})
    cjk_ko = sorted({w for t in titles + artists + albums for w in t.split() if HANGUL.search(w)})
    cjk_ja = sorted({w for t in titles + artists + albums for w in re.split(r"[\sの]", t) if KANA_KANJI.search(w)})
    accented = sorted({w for t in titles + artists + albums for w in t.split() if LATIN_ACCENT.search(w)})

    def pick(pool, n):
        pool = [p for p in pool if p]
        return rng.sample(pool, min(n, len(pool))) if pool else []

    def case(w):
        return rng.choice([w, w.lower(), w.upper(), w[:1].upper() + w[1:]])

    kinds = {
        "word": [case(w) for w in pick(words, 30)],
        "prefix 1-2": [w[:1] for w in pick(words, 8)] + [w[:2] for w in pick(words, 12)],
        "prefix 3-4": [w[:rng.choice([3, 4])] for w in pick(words, 20)],
        "artist": pick(artists, 25),
        "album": pick(albums, 20),
        "two words": pick(pairs, 25),
        "korean": [w if rng.random() < 0.6 else w[:1] for w in pick(cjk_ko, 15)],
        "japanese": [w if rng.random() < 0.5 else w[:rng.choice([1, 2])] for w in pick(cjk_ja, 15)],
        "accented": [case(w) for w in pick(accented, 15)],
        "no hit": ["zqxv", "xylophonique", "qqqq", "bzzzt", "jjjjx", "wxyzw", "pfffq", "grzlq", "vvvq", "xqzx",
                   "kjqx", "qwqw", "zzyzx", "fjqk", "ptqx"],
    }
    out = [(k, q) for k, qs in kinds.items() for q in qs]
    return out[:count] if len(out) > count else out, artists


# ---------------------------------------------------------------- measuring

def timed(fn):
    t = time.perf_counter()
    result = fn()
    return time.perf_counter() - t, result


def count_songs(answer):
    return answer.count(b"\nfile: ") + (1 if answer.startswith(b"file: ") else 0)


def percentiles(samples):
    s = sorted(samples)
    if not s:
        return {}

    def p(q):
        return s[min(len(s) - 1, max(0, int(round(q * len(s) + 0.5)) - 1))]
    return {"p50": statistics.median(s), "p95": p(0.95), "p99": p(0.99), "max": s[-1], "n": len(s)}


def corpus_files(music):
    return [os.path.join(root, n) for root, _, names in os.walk(music) for n in sorted(names)]


def resident_share(paths, sample=2000):
    """How much of the corpus is in the page cache (fincore over an even sample of files), 0-1."""
    picked = paths[::max(1, len(paths) // sample)]
    resident = size = 0
    for i in range(0, len(picked), 200):
        out = subprocess.run(["fincore", "--bytes", "--noheadings", "--output", "RES,SIZE"] + picked[i:i + 200],
                             capture_output=True, text=True).stdout
        for line in out.split("\n"):
            parts = line.split()
            if len(parts) == 2:
                resident += int(parts[0]); size += int(parts[1])
    return min(1.0, resident / size) if size else 0.0


def warm_corpus(music):
    """Reads every file, so each daemon's cold scan starts with the corpus in the page cache (a scan of
    files the other daemon's turn left cached is not comparable with one that waits on the disk).
    Returns the share resident just after, and the seconds the read took."""
    started = time.monotonic()
    paths = corpus_files(music)
    for path in paths:
        with open(path, "rb") as f:
            while f.read(1 << 20):
                pass
    return resident_share(paths), time.monotonic() - started


def run_daemon(daemon, expected, queries, artists, big_folders, is_tutti, rounds, music):
    """Everything measured on one daemon; returns a dict of figures."""
    share, seconds = warm_corpus(music)
    fig = {"timings": {}, "counts": {}, "load_start": os.getloadavg()[0], "corpus_cached": share, "warm_s": seconds}
    started = time.monotonic()
    daemon.start()
    client = MPDClient(daemon.port)
    rpc = RPCClient(daemon.rpc_port) if is_tutti else None

    # Commands during the cold scan.
    during = {"status": [], "search": []}

    def probe():
        during["status"].append(timed(lambda: client.command("status"))[0])
        if rpc:
            during["search"].append(rpc.timed_call("library.search", {"query": "lo", "limit": 50})[0])
        else:
            during["search"].append(timed(lambda: client.command('search any "lo" window 0:50'))[0])
    cold = daemon.wait_scanned(client, expected, started, probe)
    fig["cold_s"] = cold
    fig["during_scan"] = {k: percentiles(v) for k, v in during.items()}
    time.sleep(0.5)
    fig["rss_after_scan"] = rss_kib(daemon.proc.pid)

    t = time.monotonic()
    client.command("update")
    # Polled every 10 ms: a rescan takes a few tenths of a second, which 50 ms steps would blur by up to 12 %.
    fig["rescan_s"] = daemon.wait_scanned(client, expected, t, poll=0.01)
    fig["songs"] = int(dict(client.pairs("stats")).get("songs", 0))
    fig["rss_after_rescan"] = rss_kib(daemon.proc.pid)

    def measure(label, line, count_key=None):
        for _ in range(rounds):
            dt, answer = timed(lambda: client.command(line))
            fig["timings"].setdefault(label, []).append(dt)
        if count_key is not None:
            fig["counts"][count_key] = count_songs(answer)
        return answer

    q = MPDClient.quote
    # Warm-up pass (page cache, SQLite cache), not counted.
    for _, text in queries[:20]:
        client.command(f"search any {q(text)} window 0:50")

    largest = (0, None)
    for kind, text in queries:
        answer = measure("search any", f"search any {q(text)}", ("any", text))
        if len(answer) > largest[0]:
            largest = (len(answer), text)
        measure("search any, window 0:50", f"search any {q(text)} window 0:50")
        measure("search title", f"search title {q(text)}", ("title", text))
        if kind == "artist":
            measure("find artist", f"find artist {q(text)}", ("find artist", text))
        if kind == "album":
            measure("find album", f"find album {q(text)}", ("find album", text))
        if rpc:
            for _ in range(rounds):
                dt, result = rpc.timed_call("library.search", {"query": text, "limit": 50})
                fig["timings"].setdefault("ranked search, limit 50", []).append(dt)
                fig["timings"].setdefault(f"ranked: {kind}", []).append(dt)

    # Browsing.
    for a in artists[:: max(1, len(artists) // 20)][:20]:
        measure('list album artist "X"', f"list album artist {q(a)}", ("list album", a))
        if rpc:
            fig["timings"].setdefault("web: albums of an artist", []).append(
                rpc.timed_call("library.albums", {"artist": a})[0])
    for _ in range(5):
        measure("list artist", "list artist", ("list artist", ""))
        measure("list albumartist", "list albumartist", ("list albumartist", ""))
        for label, folder in big_folders:
            measure(f"lsinfo {label}", f"lsinfo {q(folder)}", (f"lsinfo {label}", folder))
        if rpc:
            fig["timings"].setdefault("web: artists", []).append(rpc.timed_call("library.artists")[0])
            fig["timings"].setdefault("web: albums", []).append(rpc.timed_call("library.albums")[0])
    if rpc:
        # The leader's own CPU per ranked search (utime + stime over three more passes of the
        # query set), apart from how long the machine's load made each answer wait.
        before = cpu_seconds(daemon.proc.pid)
        for _ in range(3):
            for _, text in queries:
                rpc.timed_call("library.search", {"query": text, "limit": 50})
        fig["ranked_cpu_ms"] = (cpu_seconds(daemon.proc.pid) - before) / (3 * len(queries)) * 1000
    fig["rss_after_queries"] = rss_kib(daemon.proc.pid)

    # The largest answer, alone: how much does it grow the process?
    before = rss_kib(daemon.proc.pid)["VmRSS"]
    answer = client.command(f"search any {q(largest[1])}")
    time.sleep(0.2)
    fig["load_end"] = os.getloadavg()[0]
    fig["largest"] = {"query": largest[1], "bytes": len(answer), "songs": count_songs(answer),
                      "rss_growth_kib": rss_kib(daemon.proc.pid)["VmRSS"] - before}
    fig["rss_end"] = rss_kib(daemon.proc.pid)
    client.close()
    if rpc:
        rpc.close()
    daemon.stop()
    return fig


def biggest_folders(client):
    """The root and the folder holding the most songs directly."""
    counts = {}
    for k, v in client.pairs("listall"):
        if k == "file":
            d = v.rsplit("/", 1)[0] if "/" in v else ""
            counts[d] = counts.get(d, 0) + 1
    big = max(counts, key=counts.get)
    return [("root", ""), (f"of the biggest folder ({counts[big]} songs)", big)]


# ---------------------------------------------------------------- report

def fmt_ms(x):
    return "—" if x is None else f"{x * 1000:.1f}" if x < 0.1 else f"{x * 1000:.0f}"


def ratio(mpd, tutti, higher_is_better=False):
    if not mpd or not tutti:
        return ""
    r = (tutti / mpd) if higher_is_better else (mpd / tutti)
    return f"{r:.1f}× better" if r >= 1 else f"{1 / r:.1f}× worse"


def report(files, music, queries, m, t, lines):
    out = []
    w = out.append
    w(f"== bench/library: {files} files in {music}, {len(queries)} queries "
      f"({', '.join(sorted({k for k, _ in queries}))}) ==")
    w("")
    w("| measure (ms) | Tutti p50 / p95 / p99 / max | MPD 0.23 p50 / p95 / p99 / max | p50, p99 Tutti vs MPD |")
    w("|---|---|---|---|")
    labels = list(dict.fromkeys(list(m["timings"]) + list(t["timings"])))
    for label in labels:
        a = percentiles(t["timings"].get(label, []))
        b = percentiles(m["timings"].get(label, []))

        def cell(p):
            return " / ".join(fmt_ms(p.get(k)) for k in ("p50", "p95", "p99", "max")) if p else "—"
        rr = f"{ratio(b.get('p50'), a.get('p50'))}, {ratio(b.get('p99'), a.get('p99'))}" if a and b else ""
        w(f"| {label} | {cell(a)} | {cell(b)} | {rr} |")
    w("")
    w("| measure | Tutti | MPD 0.23 | Tutti vs MPD |")
    w("|---|---|---|---|")
    w(f"| cold scan, files/s | {files / t['cold_s']:.0f} ({t['cold_s']:.1f} s) | {files / m['cold_s']:.0f} ({m['cold_s']:.1f} s) "
      f"| {ratio(files / m['cold_s'], files / t['cold_s'], True)} |")
    w(f"| unchanged rescan, files/s | {files / t['rescan_s']:.0f} ({t['rescan_s']:.2f} s) | {files / m['rescan_s']:.0f} ({m['rescan_s']:.2f} s) "
      f"| {ratio(files / m['rescan_s'], files / t['rescan_s'], True)} |")
    for key, label in (("rss_after_scan", "RSS after the cold scan"), ("rss_after_rescan", "RSS after the rescan"),
                       ("rss_after_queries", "RSS after every query"), ("rss_end", "RSS at the end")):
        w(f"| {label}, MiB | {t[key]['VmRSS'] / 1024:.1f} | {m[key]['VmRSS'] / 1024:.1f} | {ratio(m[key]['VmRSS'], t[key]['VmRSS'])} |")
    for key, label in (("rss_after_rescan", "after the rescan"), ("rss_after_queries", "after every query")):
        parts = lambda d: " / ".join(f"{d[key]['parts'][k] / 1024:.1f}" for k in ("heap", "anonymous", "files"))
        w(f"| RSS {label}: malloc heap / other anonymous (arenas, stacks) / files, MiB | {parts(t)} | {parts(m)} | |")
    if "ranked_cpu_ms" in t:
        w(f"| ranked search, the leader's CPU per query (3 × {len(queries)} queries, /proc/PID/stat), ms | {t['ranked_cpu_ms']:.2f} | — | |")
    w(f"| load average at the start / end of the daemon's turn | {t['load_start']:.1f} / {t['load_end']:.1f} "
      f"| {m['load_start']:.1f} / {m['load_end']:.1f} | |")
    w(f"| corpus in the page cache at the start of the cold scan (read just before, in s) | {t['corpus_cached'] * 100:.0f} % ({t['warm_s']:.0f} s) "
      f"| {m['corpus_cached'] * 100:.0f} % ({m['warm_s']:.0f} s) | |")
    w(f"| peak RSS (VmHWM), MiB | {t['rss_end']['VmHWM'] / 1024:.1f} | {m['rss_end']['VmHWM'] / 1024:.1f} "
      f"| {ratio(m['rss_end']['VmHWM'], t['rss_end']['VmHWM'])} |")
    for d, name in ((t, "Tutti"), (m, "MPD")):
        L = d["largest"]
        w(f"| largest answer ({name}: search any {L['query']!r}) | {L['bytes'] / 1e6:.1f} MB, {L['songs']} songs, "
          f"RSS {L['rss_growth_kib'] / 1024:+.1f} MiB | | |")
    for key in ("status", "search"):
        a, b = t["during_scan"].get(key, {}), m["during_scan"].get(key, {})
        what = "status" if key == "status" else "a search ('lo': ranked for Tutti, search any window 0:50 for MPD)"
        w(f"| {what} during the cold scan, p50 / max ms (n) | {fmt_ms(a.get('p50'))} / {fmt_ms(a.get('max'))} ({a.get('n', 0)}) "
          f"| {fmt_ms(b.get('p50'))} / {fmt_ms(b.get('max'))} ({b.get('n', 0)}) | |")
    w("")
    same = [k for k in m["counts"] if m["counts"][k] == t["counts"].get(k)]
    diff = [k for k in m["counts"] if m["counts"][k] != t["counts"].get(k)]
    w(f"songs in the database: Tutti {t['songs']}, MPD {m['songs']}")
    w(f"hit counts equal: {len(same)} of {len(m['counts'])} (search any, search title, find, list, lsinfo)")
    for k in diff[:20]:
        w(f"  differs: {k[0]} {k[1]!r}: Tutti {t['counts'].get(k)}, MPD {m['counts'][k]}")
    w("")
    w("Timed from a client on loopback: the whole answer read. Both daemons run alone, one after the other, on the same files")
    w("(each daemon's turn starts by reading the corpus into the page cache; the table says how much of it stayed). Ranked search")
    w("and the web lists are JSON-RPC, Tutti only.")
    text = "\n".join(out)
    print(text)
    return text


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--files", type=int, default=100_000, help="size of the generated corpus (default 100000)")
    ap.add_argument("--corpus", help="where the generated corpus is kept (default /var/tmp/tutti-bench-corpus-N)")
    ap.add_argument("--music", help="a folder of music to use instead of the generated corpus")
    ap.add_argument("--tuttid", default=os.path.join(ROOT, ".build/release/tuttid"))
    ap.add_argument("--rounds", type=int, default=1, help="times each query is asked (default 1)")
    ap.add_argument("--only", choices=["tutti", "mpd"], help="run one side only (for profiling)")
    ap.add_argument("--out", default=os.path.join(HERE, "last-run.txt"))
    args = ap.parse_args()

    if args.music:
        music = os.path.realpath(args.music)
    else:
        corpus = args.corpus or f"/var/tmp/tutti-bench-corpus-{args.files}"
        subprocess.run([sys.executable, os.path.join(HERE, "corpus.py"), "--files", str(args.files), "--out", corpus], check=True)
        music = os.path.join(corpus, "music")
    files = sum(1 for _, _, names in os.walk(music) for n in names
                if n.lower().endswith((".mp3", ".flac", ".wav")) and not n.startswith("."))
    work = tempfile.mkdtemp(prefix="tutti-bench-library-")
    try:
        mpd = MPD(music, work)
        lines = []
        # MPD first: its database gives the query set and the big folders for both.
        m = run_once = None
        mpd.start()
        c = MPDClient(mpd.port)
        mpd.wait_scanned(c, files, time.monotonic())
        queries, artists = make_queries(c)
        folders = biggest_folders(c)
        c.close()
        mpd.stop()
        os.remove(os.path.join(work, "mpd.db"))
        if args.only != "tutti":
            m = run_daemon(mpd, files, queries, artists, folders, False, args.rounds, music)
        if args.only != "mpd":
            t = run_daemon(Tutti(music, work, args.tuttid), files, queries, artists, folders, True, args.rounds, music)
        if args.only:
            print(json.dumps({k: v for k, v in (m or t).items() if k not in ("timings", "counts")}, indent=1, default=str))
            for label, v in (m or t)["timings"].items():
                print(label, {k: fmt_ms(x) if k != "n" else x for k, x in percentiles(v).items()})
            return
        text = report(files, music, queries, m, t, lines)
        with open(args.out, "w") as f:
            f.write(text + "\n")
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
