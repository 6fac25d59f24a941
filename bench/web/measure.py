#!/usr/bin/python3
"""Benchmark of Tutti's phone web app (web/) in headless Chromium, against a
running leader. Called by bench/web/run.sh, which builds tuttid, makes the
music, starts the leader and two speakers and plays something:

    /usr/bin/python3 bench/web/measure.py make-music DIR
    /usr/bin/python3 bench/web/measure.py measure --url http://127.0.0.1:WEB \\
        --control-port N --mpd-port N --leader-pid PID [--runs 3] [--commands 100]
        [--pages 10] [--page-commands 20]

make-music: a small tagged library in DIR (3 artists, 5 albums, 20 tracks of
10 minutes, 8 kHz mono 16 kbps MP3 by lame; 4 albums with a 600x600 JPEG
cover drawn by Chromium's canvas, about the size of a real one).

measure prints, in this order:
  1. load: first-contentful-paint, interactive (the page connected and the
     now-playing title filled, performance.now() in the page),
     domContentLoadedEventEnd and loadEventEnd; median/min/max over --runs
     cold loads (a new browser profile each: empty cache) and --runs warm
     reloads (the same browser reloading: 304 revalidations).
  2. bytes of the first screen: transferSize, encodedBodySize and
     decodedBodySize of the navigation entry plus every resource entry, cold
     and warm, each resource listed; also the WebSocket payload the page
     received until interactive.
  3. mpc command -> page: p50/p99/max over --commands commands, alternating
     `mpc volume N` (the kitchen slider on the Rooms screen) and `mpc pause` /
     `mpc play` (the state on the Now playing screen). One clock: time.time()
     in Python just before mpc starts, Date.now() in the page. Split into
     mpc start -> WebSocket notification in the page (WebSocket wrapped at
     document start) -> DOM shows it (MutationObserver, requestAnimationFrame
     poll for the slider's value property) -> the next animation frame.
  4. the leader's VmRSS: no page, one page, --pages pages (tabs of one
     browser), and --page-commands volume commands seen by every one of the
     --pages pages (the slowest page per command).
"""

import argparse
import json
import os
import random
import shutil
import socket
import statistics
import struct
import subprocess
import sys
import tempfile
import time

try:
    from selenium import webdriver
    from selenium.common.exceptions import WebDriverException
except ImportError as e:  # pragma: no cover
    print("bench/web: selenium is not installed for this python (%s); apt-get install python3-selenium" % e)
    sys.exit(2)

PHONE = (390, 844)
TARGET_MS = 200
TARGET_KB = 150
TIMEOUT_S = 10


def log(msg):
    print(msg, flush=True)


def new_driver(hooks=None):
    """Headless Chromium at phone size, with a fresh profile (chromedriver makes
    a temporary one per session: an empty cache)."""
    opts = webdriver.ChromeOptions()
    for a in ["--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
              "--window-size=%d,%d" % PHONE, "--hide-scrollbars", "--no-first-run", "--disable-extensions",
              "--disable-background-networking", "--disable-component-update", "--disable-sync",
              "--disable-default-apps", "--no-default-browser-check",
              # Background tabs (the 10-page step) keep their timers and frames.
              "--disable-background-timer-throttling", "--disable-renderer-backgrounding",
              "--disable-backgrounding-occluded-windows"]:
        opts.add_argument(a)
    for b in ["/usr/bin/chromium", "/usr/bin/chromium-browser"]:
        if os.path.exists(b):
            opts.binary_location = b
            break
    kwargs = {"options": opts}
    driver_path = shutil.which("chromedriver") or "/usr/bin/chromedriver"
    if os.path.exists(driver_path):
        from selenium.webdriver.chrome.service import Service
        kwargs["service"] = Service(driver_path)
    d = webdriver.Chrome(**kwargs)
    d.set_script_timeout(TIMEOUT_S + 5)
    setup_tab(d, hooks)
    return d


def setup_tab(d, hooks):
    d.execute_cdp_cmd("Emulation.setDeviceMetricsOverride",
                      {"width": PHONE[0], "height": PHONE[1], "deviceScaleFactor": 2, "mobile": True})
    d.execute_cdp_cmd("Emulation.setTouchEmulationEnabled", {"enabled": True, "maxTouchPoints": 1})
    if hooks:
        d.execute_cdp_cmd("Page.addScriptToEvaluateOnNewDocument", {"source": hooks})


# ---------------------------------------------------------------- music

SONGS = [  # artist, album, (titles...), cover
    ("Aurora Lane", "Dawn", ["Morning Light", "Evening Tide", "Paper Boats", "Glasshouse", "Slow Rivers"], True),
    ("Aurora Lane", "Dusk", ["Northern Sky", "Lanterns", "The Long Walk Home"], True),
    ("Beta Crew", "Bee Sides", ["Kitchen Blues", "Hallway Waltz", "Stairwell Stomp", "Attic Echo"], False),
    ("Beta Crew", "Honeycomb", ["Sticky Fingers", "Queen of the Hive", "Wax and Wane"], True),
    ("Cara Moreno", "Salt & Light", ["Harbour", "Tidal", "Lighthouse Keeper", "Gulls", "Low Water"], True),
]

COVER_JS = """
const [seed, title, artist] = arguments;
const c = document.createElement('canvas'); c.width = c.height = 600;
const g = c.getContext('2d');
let x = seed * 9301 + 49297;
const rnd = () => ((x = (x * 9301 + 49297) % 233280) / 233280);
const hue = (seed * 67) % 360;
const bg = g.createLinearGradient(0, 0, 600, 600);
bg.addColorStop(0, `hsl(${hue},70%,35%)`); bg.addColorStop(1, `hsl(${(hue + 80) % 360},60%,15%)`);
g.fillStyle = bg; g.fillRect(0, 0, 600, 600);
for (let i = 0; i < 40; i++) {
  const cx = rnd() * 600, cy = rnd() * 600, r = 20 + rnd() * 160;
  const rg = g.createRadialGradient(cx, cy, 0, cx, cy, r);
  rg.addColorStop(0, `hsla(${(hue + rnd() * 120) % 360},80%,${40 + rnd() * 40}%,0.7)`);
  rg.addColorStop(1, 'hsla(0,0%,0%,0)');
  g.fillStyle = rg; g.beginPath(); g.arc(cx, cy, r, 0, 7); g.fill();
}
// Film grain: a photo's texture, which is what makes real covers weigh.
const im = g.getImageData(0, 0, 600, 600), d = im.data;
for (let i = 0; i < d.length; i += 4) { const n = (rnd() - 0.5) * 12; d[i] += n; d[i + 1] += n; d[i + 2] += n; }
g.putImageData(im, 0, 0);
g.fillStyle = 'rgba(255,255,255,0.92)'; g.font = 'bold 54px serif'; g.fillText(title, 40, 500);
g.font = '32px sans-serif'; g.fillText(artist, 40, 550);
return c.toDataURL('image/jpeg', 0.85).split(',')[1];
"""


def wav_image(samples, rate):
    data = struct.pack("<%dh" % len(samples), *samples)
    return (b"RIFF" + struct.pack("<I", 36 + len(data)) + b"WAVEfmt " +
            struct.pack("<IHHIIHH", 16, 1, 1, rate, rate * 2, 2, 16) + b"data" + struct.pack("<I", len(data)) + data)


def make_music(folder):
    import base64
    os.makedirs(folder, exist_ok=True)
    work = tempfile.mkdtemp(prefix="web-bench-music-")
    try:
        rate, seconds = 8000, 600
        wav = os.path.join(work, "source.wav")
        with open(wav, "wb") as f:
            f.write(wav_image([((i % 40) * 100 - 2000) for i in range(rate * seconds)], rate))
        covers = {}
        d = new_driver()
        try:
            d.get("about:blank")
            for n, (artist, album, _, cover) in enumerate(SONGS):
                if cover:
                    path = os.path.join(work, "cover%d.jpg" % n)
                    with open(path, "wb") as f:
                        f.write(base64.b64decode(d.execute_script(COVER_JS, n + 1, album, artist)))
                    covers[album] = path
        finally:
            d.quit()
        jobs, count = [], 0
        for artist, album, titles, _ in SONGS:
            adir = os.path.join(folder, artist, album)
            os.makedirs(adir, exist_ok=True)
            for i, title in enumerate(titles, 1):
                args = ["/usr/bin/lame", "--quiet", "-b", "16", "--tt", title, "--ta", artist, "--tl", album,
                        "--tn", str(i), "--ty", "2021", "--tg", "Pop"]
                if album in covers:
                    args += ["--ti", covers[album]]
                out = os.path.join(adir, "%02d %s.mp3" % (i, title))
                jobs.append((subprocess.Popen(args + [wav, out], stderr=subprocess.PIPE), out))
                count += 1
                if len(jobs) >= 2:
                    wait_lame(jobs.pop(0))
        for j in jobs:
            wait_lame(j)
        sizes = sorted(os.path.getsize(p) for p in covers.values())
        log("music: %d tracks, %d artists, %d albums (%d with a cover: %s KB JPEG) in %s" %
            (count, len({s[0] for s in SONGS}), len(SONGS), len(covers),
             "/".join("%.0f" % (s / 1024) for s in sizes), folder))
    finally:
        shutil.rmtree(work, ignore_errors=True)


def wait_lame(job):
    p, out = job
    _, err = p.communicate()
    if p.returncode != 0:
        sys.exit("lame failed for %s: %s" % (out, err.decode(errors="replace")))


# ---------------------------------------------------------------- the leader

class Leader:
    """The leader's JSON-RPC over TCP: one request per line."""

    def __init__(self, port):
        self.port = port
        self.next_id = 1

    def call(self, method, params=None):
        req = {"jsonrpc": "2.0", "id": self.next_id, "method": method}
        self.next_id += 1
        if params is not None:
            req["params"] = params
        with socket.create_connection(("127.0.0.1", self.port), timeout=10) as s:
            s.sendall((json.dumps(req) + "\n").encode())
            f = s.makefile("r", encoding="utf-8")
            while True:
                line = f.readline()
                if not line:
                    raise RuntimeError("the leader closed the control connection during %s" % method)
                msg = json.loads(line)
                if msg.get("id") == req["id"]:
                    if "error" in msg:
                        raise RuntimeError("%s: %s" % (method, msg["error"].get("message")))
                    return msg["result"]


def rss_kib(pid):
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


# ---------------------------------------------------------------- in the page

# Installed at document start in every page (Page.addScriptToEvaluateOnNewDocument):
# WebSocket notifications with their arrival time, the WebSocket bytes, and the
# moment the page is interactive (connected, now playing filled).
HOOKS = r"""
(() => {
  const T = window.__bench = { notes: [], wsIn: 0, wsFrames: 0, wsOut: 0, interactive: null, interactiveFrame: null, watch: null, log: [] };
  const Native = window.WebSocket;
  class Hooked extends Native {
    constructor(...a) {
      super(...a);
      if (T.wsStart === undefined) {
        T.wsStart = performance.now();
        this.addEventListener('open', () => { T.wsOpen = performance.now(); }, { once: true });
      }
      // Registered before the page's onmessage: runs first, on the message's arrival.
      this.addEventListener('message', (ev) => {
        const t = Date.now();
        let m = null;
        try { m = JSON.parse(ev.data); } catch (e) { return; }
        if (T.interactive === null) {
          T.wsIn += ev.data.length; T.wsFrames++;
          T.log.push([performance.now(), '<', m.method || ('reply ' + m.id), ev.data.length]);
        }
        if (m && m.method) {
          T.notes.push({ t, method: m.method, params: m.params });
          if (T.notes.length > 400) T.notes.splice(0, 100);
        }
      });
    }
    send(data) {
      if (T.interactive === null) {
        T.wsOut += data.length;
        let m = {}; try { m = JSON.parse(data); } catch (e) { /* not JSON */ }
        T.log.push([performance.now(), '>', (m.method || '?') + ' ' + m.id, data.length]);
      }
      return super.send(data);
    }
  }
  window.WebSocket = Hooked;
  const ready = () => {
    const b = document.getElementById('banner'), st = document.querySelector('[data-test=np-state]'),
          ti = document.querySelector('[data-test=np-title]');
    return b && b.hidden && st && (st.dataset.state === 'playing' || st.dataset.state === 'paused') && ti && ti.textContent !== '';
  };
  // The command watcher: __bench.watch = {cond: 'JS expression', seen, frame}.
  const check = () => {
    const w = T.watch;
    if (w && w.seen === null) {
      let v = false;
      try { v = w.fn(); } catch (e) { v = false; }
      if (v) { w.seen = Date.now(); requestAnimationFrame(() => { w.frame = Date.now(); }); }
    }
  };
  T.arm = (cond) => {
    const w = { fn: new Function('return (' + cond + ');'), seen: null, frame: null, armed: Date.now() };
    T.watch = w;
    const poll = () => { if (T.watch !== w || w.seen !== null) return; check(); requestAnimationFrame(poll); };
    requestAnimationFrame(poll);
    check();
  };
  const mo = new MutationObserver(() => {
    if (T.interactive === null && ready()) {
      T.interactive = performance.now();
      requestAnimationFrame(() => { T.interactiveFrame = performance.now(); });
    }
    check();
  });
  mo.observe(document, { subtree: true, childList: true, attributes: true, characterData: true });
})();
"""

READY_JS = """
const done = arguments[arguments.length - 1], limit = arguments[0];
const t0 = performance.now();
(function poll() {
  const T = window.__bench;
  if (T && T.interactive !== null && T.interactiveFrame !== null) return done(true);
  if (performance.now() - t0 > limit) return done(false);
  setTimeout(poll, 5);
})();
"""

# After interactive: the first screen's images finish, then no new resource for 400 ms.
SETTLE_JS = """
const done = arguments[arguments.length - 1], limit = arguments[0];
const t0 = performance.now();
let n = -1, since = performance.now();
(function poll() {
  const imgs = [...document.querySelectorAll('img')].filter((i) => i.offsetParent !== null);
  const c = performance.getEntriesByType('resource').length;
  if (c !== n) { n = c; since = performance.now(); }
  if ((imgs.every((i) => i.complete) && performance.now() - since > 400) || performance.now() - t0 > limit) return done(true);
  setTimeout(poll, 20);
})();
"""

COLLECT_JS = """
const T = window.__bench, nav = performance.getEntriesByType('navigation')[0];
const paint = {};
for (const p of performance.getEntriesByType('paint')) paint[p.name] = p.startTime;
const res = [nav].concat(performance.getEntriesByType('resource')).map((r) => ({
  name: r.name, type: r.initiatorType, transfer: r.transferSize, encoded: r.encodedBodySize, decoded: r.decodedBodySize,
  status: r.responseStatus || 0, duration: r.duration }));
return { fcp: paint['first-contentful-paint'] || null, fp: paint['first-paint'] || null,
         interactive: T.interactive, interactiveFrame: T.interactiveFrame,
         dcl: nav.domContentLoadedEventEnd, load: nav.loadEventEnd, res: res,
         wsIn: T.wsIn, wsOut: T.wsOut, wsFrames: T.wsFrames, wsStart: T.wsStart, wsOpen: T.wsOpen, log: T.log,
         moduleDone: Math.max(0, ...performance.getEntriesByType('resource').filter((r) => r.initiatorType === 'script').map((r) => r.responseEnd)),
         title: (document.querySelector('[data-test=np-title]') || {}).textContent };
"""


def wait_interactive(d, what):
    if not d.execute_async_script(READY_JS, TIMEOUT_S * 1000):
        raise RuntimeError("%s: the page was not interactive (connected, now playing filled) within %d s" % (what, TIMEOUT_S))


def load_once(d, url, reload=False):
    if reload:
        d.refresh()
    else:
        d.get(url)
    wait_interactive(d, "reload" if reload else "cold load")
    d.execute_async_script(SETTLE_JS, 5000)
    return d.execute_script(COLLECT_JS)


def stats_line(values, unit="ms"):
    v = sorted(x for x in values if x is not None)
    if not v:
        return "n/a"
    return "median %6.1f %s  min %6.1f  max %6.1f  (n=%d)" % (statistics.median(v), unit, v[0], v[-1], len(v))


def pct(values, p):
    v = sorted(values)
    if not v:
        return float("nan")
    k = (len(v) - 1) * p / 100.0
    lo, hi = int(k), min(int(k) + 1, len(v) - 1)
    return v[lo] + (v[hi] - v[lo]) * (k - lo)


def dist_line(values):
    if not values:
        return "n/a"
    return "p50 %6.1f  p99 %6.1f  max %6.1f ms" % (pct(values, 50), pct(values, 99), max(values))


def short(name, base):
    name = name[len(base):] if name.startswith(base) else name
    return name[:16] + "…" if name.startswith("art/") and len(name) > 17 else (name or "/")


def how(x):
    """How Chromium got a resource: its status, a 304 (headers only), or its cache."""
    if x["transfer"] == 0:
        return "from cache"
    # A 200's transferSize is its body plus about 300 bytes of headers; a 304's is the headers alone.
    if x["transfer"] < 1024 and (x["encoded"] == 0 or x["transfer"] < x["encoded"] + 200):
        return "304 (revalidated)"
    return str(x["status"] or "")


def measure_loads(url, runs, leader):
    cold, warm = [], []
    for i in range(runs):
        d = new_driver(HOOKS)
        try:
            cold.append(load_once(d, url))
            time.sleep(0.3)
            warm.append(load_once(d, url, reload=True))
        finally:
            d.quit()
        time.sleep(0.5)
    status = leader.call("player.status")
    for r in cold + warm:
        if r["title"] != status.get("title"):
            log("  note: a page showed the title %r, the leader plays %r" % (r["title"], status.get("title")))
    log("")
    log("1. load (%d cold loads: new profile, empty cache; %d warm reloads: same browser, 304s)" % (runs, runs))
    for r in cold + warm:
        r["lastReply"] = max([e[0] for e in r["log"] if e[1] == "<"] or [None])
    for label, key in [("first-contentful-paint", "fcp"), ("interactive (connected, title filled)", "interactive"),
                       ("  + next animation frame", "interactiveFrame"),
                       ("domContentLoadedEventEnd", "dcl"), ("loadEventEnd", "load"),
                       ("  the last module received", "moduleDone"), ("  WebSocket created", "wsStart"),
                       ("  WebSocket open", "wsOpen"), ("  last reply before interactive", "lastReply")]:
        log("  cold %-38s %s" % (label, stats_line([r[key] for r in cold])))
        log("  warm %-38s %s" % (label, stats_line([r[key] for r in warm])))

    log("  the WebSocket until interactive, first cold load (ms since navigation start; > sent, < received):")
    log("    " + ", ".join("%.0f %s %s" % (e[0], e[1], e[2]) for e in cold[0]["log"]))
    log("  the same, first warm reload:")
    log("    " + ", ".join("%.0f %s %s" % (e[0], e[1], e[2]) for e in warm[0]["log"]))
    log("")
    log("2. bytes of the first screen (navigation + every resource entry; target < %d KB)" % TARGET_KB)
    base = url.rstrip("/") + "/"
    for label, rows in (("cold", cold), ("warm", warm)):
        tot = [(sum(x["transfer"] for x in r["res"]), sum(x["encoded"] for x in r["res"]),
                sum(x["decoded"] for x in r["res"]), len(r["res"])) for r in rows]
        med = [statistics.median(t[k] for t in tot) for k in range(4)]
        log("  %s: transferSize %.1f KB, encodedBodySize %.1f KB, decodedBodySize %.1f KB, %d entries (medians)%s" %
            (label, med[0] / 1024, med[1] / 1024, med[2] / 1024, med[3],
             "   OVER TARGET" if label == "cold" and med[0] > TARGET_KB * 1024 else ""))
        art = [sum(x["transfer"] for x in r["res"] if "/art/" in x["name"]) for r in rows]
        if label == "cold" and statistics.median(art):
            log("        of which album art (library content, not the app): %.1f KB; the app alone %.1f KB" %
                (statistics.median(art) / 1024, (med[0] - statistics.median(art)) / 1024))
        ws_in = statistics.median(r["wsIn"] for r in rows)
        log("        WebSocket until interactive: %.1f KB received in %d frames, %.1f KB sent (text length; not in the sums)" %
            (ws_in / 1024, statistics.median(r["wsFrames"] for r in rows), statistics.median(r["wsOut"] for r in rows) / 1024))
    log("  resources of the first cold load (transfer / encoded / decoded bytes, status):")
    for x in cold[0]["res"]:
        flag = ""
        if x["encoded"] and x["decoded"] and x["encoded"] == x["decoded"] and x["decoded"] > 1024 and \
                not any(x["name"].endswith(e) for e in (".png", ".jpg")) and "/art/" not in x["name"]:
            flag = "   not compressed"
        log("    %-24s %-10s %7d %7d %7d  %s%s" % (short(x["name"], base), x["type"], x["transfer"],
                                                x["encoded"], x["decoded"], how(x), flag))
    log("  resources of the first warm reload:")
    for x in warm[0]["res"]:
        log("    %-24s %-10s %7d %7d %7d  %s" % (short(x["name"], base), x["type"], x["transfer"],
                                             x["encoded"], x["decoded"], how(x)))
    return cold, warm


# ---------------------------------------------------------------- mpc -> page

def js_click_tab(d, name):
    d.execute_script("document.querySelector('[data-test=\"tab-' + arguments[0] + '\"]').click();", name)
    end = time.time() + TIMEOUT_S
    while d.execute_script("return document.body.dataset.tab") != name:
        if time.time() > end:
            raise RuntimeError("the %s screen did not show" % name)
        time.sleep(0.01)


WAIT_WATCH_JS = """
const done = arguments[arguments.length - 1], limit = arguments[0];
const t0 = Date.now();
(function poll() {
  const w = window.__bench.watch;
  if (w.frame !== null || Date.now() - t0 > limit) return done({ seen: w.seen, frame: w.frame });
  setTimeout(poll, 5);
})();
"""

NOTE_JS = """
const [t0, method, key, value, room] = arguments;
for (const n of window.__bench.notes) {
  if (n.t < t0 || n.method !== method) continue;
  if (method === 'rooms.changed') {
    const r = (n.params.rooms || []).find((r) => r.name === room);
    if (r && r.volume === value) return n.t;
  } else if (n.params[key] === value) return n.t;
}
return null;
"""


def volume_cond(room, vol):
    """The room's volume on Rooms (its card's slider), or on Now playing for a page
    that has not opened Rooms (that screen is fetched when first shown)."""
    return ("(function(){ const c = document.querySelector('[data-test=room][data-room=%s] [data-test=room-volume]')"
            " || document.querySelector('[data-test=np-room-volume][data-room=%s]');"
            " return c && +c.value === %d; })()" % (json.dumps(room), json.dumps(room), vol))


def state_cond(state):
    return ("(function(){ const e = document.querySelector('[data-test=np-state]');"
            " return e && e.dataset.state === %s; })()" % json.dumps(state))


def mpc(port, *args):
    t0 = time.time() * 1000
    p = subprocess.run(["mpc", "-q", "-p", str(port)] + list(args), capture_output=True, text=True, timeout=TIMEOUT_S)
    t1 = time.time() * 1000
    if p.returncode != 0:
        raise RuntimeError("mpc %s failed: %s" % (" ".join(args), (p.stderr or p.stdout).strip()))
    return t0, t1


def measure_commands(d, mpd_port, leader, n, room):
    js_click_tab(d, "rooms")
    if not d.execute_script("return !!document.querySelector('[data-test=room][data-room=%s]')" % json.dumps(room)):
        raise RuntimeError("the Rooms screen shows no card for %s" % room)
    state = leader.call("player.status")["state"]
    if state not in ("playing", "paused"):
        raise RuntimeError("the leader is %s; the bench needs something playing" % state)
    rows = {"volume": [], "pause": [], "play": []}
    vol = next(r["volume"] for r in leader.call("rooms.list")["rooms"] if r["name"] == room)
    rng = random.Random(7)
    late = []
    for i in range(n):
        if i % 2 == 0:
            kind = "volume"
            new = vol
            while new == vol:
                new = rng.randint(20, 80)
            vol = new
            screen, cond, args = "rooms", volume_cond(room, vol), ("volume", str(vol))
            note = ("rooms.changed", "volume", vol)
        else:
            kind = "pause" if state == "playing" else "play"
            state = "paused" if kind == "pause" else "playing"
            screen, cond, args = "now", state_cond(state), (kind,)
            note = ("player.changed", "state", state)
        js_click_tab(d, screen)
        time.sleep(0.15 + rng.random() * 0.1)  # the screen settled; commands apart
        d.execute_script("window.__bench.arm(arguments[0])", cond)
        t0, t1 = mpc(mpd_port, *args)
        w = d.execute_async_script(WAIT_WATCH_JS, TIMEOUT_S * 1000)
        if w["seen"] is None:
            raise RuntimeError("mpc %s: the page did not show it within %d s" % (" ".join(args), TIMEOUT_S))
        tn = d.execute_script(NOTE_JS, t0, note[0], note[1], note[2], room)
        r = {"mpc": t1 - t0, "note": (tn - t0) if tn else None, "seen": w["seen"] - t0, "frame": w["frame"] - t0,
             "render": (w["seen"] - tn) if tn else None}
        rows[kind].append(r)
        if r["seen"] > TARGET_MS:
            late.append("mpc %s: %.0f ms" % (" ".join(args), r["seen"]))
    log("")
    log("3. mpc command -> the page shows it (%d commands; ms from just before mpc starts; target %d ms)" % (n, TARGET_MS))
    for label, kinds in (("mpc volume (Rooms slider)", ["volume"]), ("mpc pause/play (state)", ["pause", "play"])):
        rs = [r for k in kinds for r in rows[k]]
        log("  %s, n=%d" % (label, len(rs)))
        log("    mpc itself returned after      %s" % dist_line([r["mpc"] for r in rs]))
        log("    WebSocket notification in page %s" % dist_line([r["note"] for r in rs if r["note"] is not None]))
        log("    notification -> DOM shows it   %s" % dist_line([r["render"] for r in rs if r["render"] is not None]))
        log("    DOM shows it                   %s%s" % (dist_line([r["seen"] for r in rs]),
                                                        "   OVER TARGET" if max(r["seen"] for r in rs) > TARGET_MS else ""))
        log("    next animation frame           %s" % dist_line([r["frame"] for r in rs]))
        missing = sum(1 for r in rs if r["note"] is None)
        if missing:
            log("    (%d without a matching notification)" % missing)
    if late:
        log("  over %d ms: %d of %d: %s" % (TARGET_MS, len(late), n, ", ".join(late[:10]) + (" …" if len(late) > 10 else "")))
    return rows


# ---------------------------------------------------------------- 10 pages

def measure_pages(url, pid, pages, page_commands, mpd_port, leader, room, rss_one):
    d = new_driver(HOOKS)
    handles = []
    try:
        for i in range(pages):
            if i:
                d.switch_to.new_window("tab")
                setup_tab(d, HOOKS)
            d.get(url)
            wait_interactive(d, "page %d of %d" % (i + 1, pages))
            handles.append(d.current_window_handle)
        time.sleep(2)
        rss = rss_kib(pid)
        log("")
        log("4. the leader's memory and %d open pages" % pages)
        log("  VmRSS with 1 page open:   %6.1f MiB" % (rss_one / 1024))
        log("  VmRSS with %d pages open: %6.1f MiB (+%.0f KiB a page)" %
            (pages, rss / 1024, (rss - rss_one) / max(1, pages - 1)))
        worst, arrivals = [], []
        vol = next(r["volume"] for r in leader.call("rooms.list")["rooms"] if r["name"] == room)
        rng = random.Random(11)
        for _ in range(page_commands):
            new = vol
            while new == vol:
                new = rng.randint(20, 80)
            vol = new
            for h in handles:
                d.switch_to.window(h)
                d.execute_script("window.__bench.arm(arguments[0])", volume_cond(room, vol))
            time.sleep(0.1)
            t0, _ = mpc(mpd_port, "volume", str(vol))
            time.sleep(0.5)
            seen = []
            for h in handles:
                d.switch_to.window(h)
                w = d.execute_async_script(WAIT_WATCH_JS, TIMEOUT_S * 1000)
                tn = d.execute_script(NOTE_JS, t0, "rooms.changed", "volume", vol, room)
                if w["seen"] is None:
                    raise RuntimeError("a page of %d did not show volume %d" % (pages, vol))
                seen.append(w["seen"] - t0)
                if tn:
                    arrivals.append(tn - t0)
            worst.append(max(seen))
        log("  mpc volume seen by all %d pages (the pages are tabs of one browser; the slowest page per command, n=%d):" %
            (pages, page_commands))
        log("    WebSocket notification, every page %s" % dist_line(arrivals))
        log("    DOM shows it, slowest page         %s%s" % (dist_line(worst), "   OVER TARGET" if max(worst) > TARGET_MS else ""))
        return rss
    finally:
        d.quit()


def measure(args):
    leader = Leader(args.control_port)
    log("leader pid %d: VmRSS with no page open: %.1f MiB" % (args.leader_pid, rss_kib(args.leader_pid) / 1024))
    measure_loads(args.url, args.runs, leader)
    d = new_driver(HOOKS)
    try:
        d.get(args.url)
        wait_interactive(d, "the command page")
        time.sleep(1)
        rss_one = rss_kib(args.leader_pid)
        measure_commands(d, args.mpd_port, leader, args.commands, args.room)
        rss_one = max(rss_one, rss_kib(args.leader_pid))
    finally:
        d.quit()
    time.sleep(1)
    measure_pages(args.url, args.leader_pid, args.pages, args.page_commands, args.mpd_port, leader, args.room, rss_one)
    log("")
    log("leader pid %d: VmRSS after the pages closed: %.1f MiB" % (args.leader_pid, rss_kib(args.leader_pid) / 1024))


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    m = sub.add_parser("make-music")
    m.add_argument("folder")
    s = sub.add_parser("measure")
    s.add_argument("--url", required=True)
    s.add_argument("--control-port", type=int, required=True)
    s.add_argument("--mpd-port", type=int, required=True)
    s.add_argument("--leader-pid", type=int, required=True)
    s.add_argument("--runs", type=int, default=3)
    s.add_argument("--commands", type=int, default=100)
    s.add_argument("--pages", type=int, default=10)
    s.add_argument("--page-commands", type=int, default=20)
    s.add_argument("--room", default="kitchen")
    args = ap.parse_args()
    if args.cmd == "make-music":
        make_music(args.folder)
    else:
        try:
            measure(args)
        except (RuntimeError, WebDriverException) as e:
            print("bench/web: FAILED: %s" % str(e).splitlines()[0], flush=True)
            sys.exit(1)


if __name__ == "__main__":
    main()
