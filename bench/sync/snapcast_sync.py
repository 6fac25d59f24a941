#!/usr/bin/env python3
"""Snapcast 0.26 (Debian's snapserver + snapclient) on bench/sync's cases:
how closely 3 snapclients play together when each reaches snapserver
through its own port of relay.py, and how soon a late one falls in step.

  snapcast_sync.py --case NAME [--seed N] [--seconds 60] [--warmup 5] [--late-join 20]
                   [--priority rt|normal] [--keep] [-- RELAY OPTIONS ...]

RELAY OPTIONS go to relay.py as they are (--impair 20,15, --down SPEC, ...);
none: the clients connect straight to snapserver. Prints the details on
stderr and one line on stdout:

  case NAME: median=… p99=… max=… µs join_s=… gaps=N (longest … ms, K on every client at once) fit_p99_us=… seed=N

Reuses bench/snapcast/measure.py (the feeder, the size poll, snapclient's
block-schedule fit, click detection, process handling) and bench/sync's
gen_signal.py (the tracks), relay.py (run as its own process, as run.sh
does, so that its timing does not share this interpreter) and analyze.py
(pairing and statistics). See README.md ("Snapcast through the same relay").
"""
import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "snapcast"))
sys.path.insert(0, HERE)
import measure as M                      # noqa: E402  bench/snapcast/measure.py
from analyze import pair_clicks, stats, percentile, median, fmt, JOIN_TOLERANCE_NS, JOIN_RUN   # noqa: E402

NS = M.NS
GAP_FRAMES = int(0.010 * M.RATE)          # a gap: at least 10 ms silent (both channels below -42 dBFS)
GAP_RE = re.compile(b"\x00{%d,}" % GAP_FRAMES)
# A block off its fitted schedule whose poll interval (last poll that saw the
# old size .. first that saw the new one) is this wide was seen late by the
# poll thread, not written late by snapclient: its midpoint is no measurement.
LATE_POLL_NS = 2_000_000


def log(msg):
    M.log(msg)


def start_relay(d, relay_args, seed, ports, target):
    maps = [f"{p}:127.0.0.1:{target}" for p in ports]
    # SYNC_RELAY: a built relay.c (snapcast.sh builds it, as run.sh does); else relay.py.
    program = [os.environ["SYNC_RELAY"]] if os.environ.get("SYNC_RELAY") else [sys.executable, os.path.join(HERE, "relay.py")]
    argv = [*program, *relay_args, "--seed", str(seed),
            "--stats", os.path.join(d, "relay.json"), *maps]
    path = os.path.join(d, "relay.log")
    p = M.start(argv, path)
    end = time.monotonic() + 10
    while time.monotonic() < end:
        if p.poll() is not None:
            raise RuntimeError(f"the relay exited with status {p.returncode}: {open(path).read()[-500:]}")
        if "relay ready" in open(path).read():
            return p, argv
        time.sleep(0.05)
    raise RuntimeError("the relay did not start")


def run(a, d, tracks):
    """Processes: snapserver (pipe source, Opus, default 1000 ms buffer), the
    feeder, the relay, 3 snapclients at once and a 4th at +late_join s."""
    fifo = os.path.join(d, "fifo")
    os.mkfifo(fifo)
    conf = os.path.join(d, "snapserver.conf")
    open(conf, "w").close()              # nothing from /etc/snapserver.conf
    sport, tport, hport, *relay_ports = M.free_ports(3 + a.clients + (1 if a.late_join else 0))
    source = (f"pipe://{fifo}?name=default&mode=read&sampleformat=48000:16:2"
              f"&codec=opus:BITRATE:160000,COMPLEXITY:10")
    cmds = []
    server_argv = ["snapserver", "-c", conf, f"--server.datadir={d}", "--logging.sink=stdout",
                   "--http.enabled=false", "--http.bind_to_address=127.0.0.1", f"--http.port={hport}",
                   "--tcp.bind_to_address=127.0.0.1", f"--tcp.port={tport}",
                   "--stream.bind_to_address=127.0.0.1", f"--stream.port={sport}", f"--stream.source={source}"]
    server = M.start(M.RT + server_argv, os.path.join(d, "snapserver.log"))
    cmds.append(M.RT + server_argv)
    feeder_argv = [sys.executable, M.__file__, "--feeder", tracks[0], tracks[1], fifo]
    feeder = M.start(M.RT + feeder_argv, os.path.join(d, "feeder.log"), stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    cmds.append(M.RT + feeder_argv)
    M.wait_port(sport, server, "snapserver")
    alive = [server, feeder]
    if a.relay_args:
        relay, rargv = start_relay(d, a.relay_args, a.seed, relay_ports, sport)
        alive.append(relay)
        cmds.append(rargv)
    else:
        relay, relay_ports = None, [sport] * len(relay_ports)
    names = [f"s{i}" for i in range(1, a.clients + 1)] + (["late"] if a.late_join else [])
    pollers, clients, launched = {}, {}, {}

    def launch(i, name):
        out = os.path.join(d, name + ".raw")
        pollers[name] = M.Poller(out)
        pollers[name].start()
        argv = M.snapclient_argv(relay_ports[i], f"sync-{name}", i + 1, out)
        cmds.append(M.RT + argv)
        launched[name] = M.mono()
        clients[name] = M.start(M.RT + argv, os.path.join(d, name + ".log"))
        alive.append(clients[name])

    try:
        for i in range(a.clients):
            launch(i, names[i])
        t0 = launched["s1"]
        log(f"  snapserver + {a.clients} snapclients{' through ' + os.path.basename(rargv[0]) + ' ' + ' '.join(a.relay_args) if relay else ''}"
            f" (seed {a.seed}), {a.seconds} s{f', late joiner at +{a.late_join:g} s' if a.late_join else ''}")
        if a.late_join:
            M.sleep_until(t0 + int(a.late_join * NS), alive)
            launch(a.clients, "late")
        M.sleep_until(t0 + a.seconds * NS, alive)
        t_end = M.mono()
    finally:
        M.stop(list(clients.values()))
        for p in pollers.values():
            p.stop()
        M.stop([x for x in (relay, feeder, server) if x is not None])
    for name, p in pollers.items():
        p.save(os.path.join(d, name + ".poll"))
    with open(os.path.join(d, "run.json"), "w") as f:
        json.dump({"t0": t0, "end": t_end, "launched": launched, "names": names, "late": bool(a.late_join),
                   "warmup": a.warmup, "case": a.case, "seed": a.seed}, f)
    with open(os.path.join(d, "commands.txt"), "w") as f:
        f.write("\n".join(" ".join(c) for c in cmds) + "\n")
    return d


def gaps(h, lo, hi):
    """Silences of >= 10 ms (both channels below -42 dBFS) heard in [lo, hi],
    and holes in time between two player instances of >= 10 ms: [(t ns, ms)]."""
    out = h.out
    found = []
    for m in GAP_RE.finditer(h.audible):
        t = out.time_of_frame(m.start())
        if lo <= t <= hi:
            found.append((t, (m.end() - m.start()) * 1e3 / M.RATE))
    for prev, nxt in zip(out.segments, out.segments[1:]):
        t_a = out.write_time(prev[-1]) + M.SNAP_DAC_NS + M.SNAP_PERIOD_NS   # the end of the old instance's last block
        t_b = out.write_time(nxt[0]) + M.SNAP_DAC_NS
        if t_b - t_a >= 10_000_000 and lo <= t_a <= hi:
            found.append((t_a, (t_b - t_a) / 1e6))
    return sorted(found)


def analyze(d):
    run_ = json.load(open(os.path.join(d, "run.json")))
    t0, t_end = run_["t0"], run_["end"]
    lo, hi = t0 + int(run_["warmup"] * NS), t_end - NS
    heard, mains, fit_p99 = {}, [n for n in run_["names"] if n != "late"], 0.0
    for name in run_["names"]:
        out = M.load_snap(d, name)
        late_polls = [k for k in out.observed if out.width[k] > LATE_POLL_NS]
        for k in late_polls:      # back on the fitted schedule
            del out.observed[k]
        h = M.Heard(out)
        heard[name] = h
        r = out.residual_stats()
        fit_p99 = max(fit_p99, r["p99"])
        n = sum(1 for c in h.clicks if lo <= c <= hi)
        log(f"  {name}: {out.note} ({len(late_polls)} of them seen late by the poll: fitted time used); fit |residual| µs median={fmt(r['median'])} p99={fmt(r['p99'])} "
            f"max={fmt(r['max'])} (poll interval {fmt(r['poll_width'])} µs); {len(h.clicks)} clicks ({n} in the window)")
    pair_stats = []
    for i in range(len(mains)):
        for j in range(i + 1, len(mains)):
            a, b = heard[mains[i]], heard[mains[j]]
            ca = [c for c in a.clicks if lo <= c <= hi]
            cb = [c for c in b.clicks if lo - 500_000_000 <= c <= hi + 500_000_000]
            pairs = pair_clicks(ca, cb)
            if not pairs:
                log(f"pair {mains[i]}~{mains[j]}: no clicks paired")
                continue
            s = stats([tb - ta for ta, tb in pairs])
            pair_stats.append(s)
            worst = max(pairs, key=lambda p: abs(p[1] - p[0]))
            log(f"pair {mains[i]}~{mains[j]}: clicks={s['n']} unpaired={len(ca) - len(pairs)} median={fmt(s['median'])} "
                f"p95={fmt(s['p95'])} p99={fmt(s['p99'])} max={fmt(s['max'])} µs; signed mean={s['mean']:+.1f} µs; "
                f"max at +{(worst[0] - t0) / 1e9:.1f} s")
    join_s = None
    if run_["late"] and "late" in heard:
        late, ref = heard["late"], heard[mains[0]]
        launch = run_["launched"]["late"]
        pairs = pair_clicks([c for c in late.clicks if c <= hi], [c for c in ref.clicks if c <= hi + 500_000_000])
        diffs = [(tl, tl - tr) for tl, tr in pairs]
        for k in range(len(diffs)):
            if all(abs(x) <= JOIN_TOLERANCE_NS for _, x in diffs[k:k + JOIN_RUN]) and len(diffs[k:k + JOIN_RUN]) == JOIN_RUN:
                join_s = (diffs[k][0] - launch) / 1e9
                s = stats([x for _, x in diffs[k:]])
                log(f"late join: launched at +{(launch - t0) / 1e9:.1f} s; first click heard after "
                    f"{fmt((late.clicks[0] - launch) / 1e9 if late.clicks else None, 2)} s; within "
                    f"{JOIN_TOLERANCE_NS // 1000} µs of {mains[0]} ({JOIN_RUN} clicks in a row) after join_s={join_s:.2f}; "
                    f"from then: median={fmt(s['median'])} p99={fmt(s['p99'])} max={fmt(s['max'])} µs")
                break
        else:
            first = stats([x for _, x in diffs]) if diffs else None
            log(f"late join: never within {JOIN_TOLERANCE_NS // 1000} µs of {mains[0]} for {JOIN_RUN} clicks in a row "
                f"({len(diffs)} clicks compared{'; median ' + fmt(first['median']) + ' µs' if first else ''})")
    gap_total, gap_longest, parts, found = 0, 0.0, [], {}
    for name, h in heard.items():
        start = lo
        if name == "late":
            first = h.audible.find(1)
            if first < 0:
                continue
            start = max(lo, h.out.time_of_frame(first) + NS // 2)
        g = found[name] = gaps(h, start, hi)
        gap_total += len(g)
        gap_longest = max([gap_longest] + [x for _, x in g])
        parts.append(f"{name}={len(g)}")
        for t, x in g[:3]:
            log(f"gap {name}: {x:.1f} ms silent at +{(t - t0) / 1e9:.2f} s")
    # A gap every client hears at once (within 50 ms) came from upstream of the
    # relays: snapserver or its feeder (which keeps only 40 ms in the FIFO) fell behind.
    def overlaps(t, ms, others):
        return any(u - 50e6 <= t + ms * 1e6 and t - 50e6 <= u + v * 1e6 for u, v in others)
    common = sum(1 for t, ms in found.get(mains[0], [])
                 if all(overlaps(t, ms, found.get(n, [])) for n in found if n != mains[0]))
    log(f"gaps (>= 10 ms silent): {' '.join(parts)}; {common} heard by every client at once")
    for name in run_["names"]:
        text = open(os.path.join(d, name + ".log"), errors="replace").read()
        log(f"log {name}: connections={text.count('Connected to')}")
    if pair_stats:
        med = median([s["median"] for s in pair_stats])
        p99 = max(s["p99"] for s in pair_stats)
        mx = max(s["max"] for s in pair_stats)
    else:
        med = p99 = mx = float("nan")
    print(f"case {run_['case']}: median={fmt(med)} p99={fmt(p99)} max={fmt(mx)} µs join_s={fmt(join_s, 2)} "
          f"gaps={gap_total} (longest {gap_longest:.0f} ms, {common} on every client at once) "
          f"fit_p99_us={fmt(fit_p99, 0)} seed={run_['seed']}", flush=True)
    return 0 if pair_stats else 1


def main():
    argv = sys.argv[1:]
    relay_args = []
    if "--" in argv:
        i = argv.index("--")
        argv, relay_args = argv[:i], argv[i + 1:]
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--case", default="run")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--seconds", type=int, default=60)
    ap.add_argument("--warmup", type=float, default=5.0, help="clicks counted from this long after the first client started")
    ap.add_argument("--clients", type=int, default=3)
    ap.add_argument("--late-join", type=float, default=20.0, help="start a 4th client this many s in (0: none)")
    ap.add_argument("--priority", choices=("rt", "normal"), default="rt")
    ap.add_argument("--keep", action="store_true")
    ap.add_argument("--analyze", metavar="RUN_DIR")
    a = ap.parse_args(argv)
    a.relay_args = relay_args
    if a.analyze:
        return analyze(a.analyze)
    if a.seconds < 10 or a.clients < 2 or not 0 <= a.late_join < a.seconds - 5:
        ap.error("--seconds at least 10, --clients at least 2, --late-join below --seconds - 5")
    for tool in ("snapserver", "snapclient"):
        if not shutil.which(tool):
            raise RuntimeError(f"needs {tool} (apt-get install -y snapserver snapclient)")
    if a.priority == "rt":
        if shutil.which("chrt") and subprocess.run(["chrt", "-f", "10", "true"]).returncode == 0:
            M.RT[:] = ["chrt", "-f", "10"]
        else:
            log("note: cannot run SCHED_FIFO here (chrt -f 10 failed): everything at normal priority")
    d = tempfile.mkdtemp(prefix="tutti-sync-snapcast.")
    try:
        subprocess.run([sys.executable, os.path.join(HERE, "gen_signal.py"), d, "--seconds", str(a.seconds + 60)], check=True)
        tracks = [os.path.join(d, "A.wav"), os.path.join(d, "B.wav")]
        run(a, d, tracks)
        os.nice(5)        # every process is stopped: the analysis yields to the machine's other work
        return analyze(d)
    finally:
        M.stop_all()
        if a.keep:
            log(f"run directory kept: {d}")
        else:
            shutil.rmtree(d, ignore_errors=True)


if __name__ == "__main__":
    sys.path.insert(0, os.path.join(HERE, ".."))
    import benchmain                     # bench/benchmain.py: signals and exit codes
    benchmain.run(main, "interrupted: stopped every process started")
