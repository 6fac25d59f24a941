#!/usr/bin/python3
"""Browser test of Tutti's phone web app (web/), served by a running leader.

Usage (Debian's /usr/bin/python3 with python3-selenium, chromium and
chromium-driver installed, and mpc for the MPD checks):

    /usr/bin/python3 Tests/Web/webapp_test.py \
        --url http://127.0.0.1:WEBPORT \
        --control-port CONTROLPORT \
        --mpd-port MPDPORT \
        [--screenshots DIR] [--query TEXT] [--room kitchen] [--timeout 10]

  --url           the leader's web app (tuttid leader --web 127.0.0.1:WEBPORT)
  --control-port  the leader's JSON-RPC TCP port on 127.0.0.1 (--control), used
                  to read the leader's real state independently of the page
  --mpd-port      the leader's MPD port on 127.0.0.1 (--mpd), driven with mpc
  --screenshots   optional folder: phone-size PNGs of the main screens
                  (now playing, queue, search, library, rooms) in light mode,
                  and now playing and rooms in dark mode
  --query         the search to type (default: the first artist that
                  library.artists lists with at least 2 tracks)
  --room          the room moved between groups (default kitchen)
  --timeout       seconds to wait for any one change (default 10)

What the leader must have: a library of at least 2 tracks (the search must
find 2 or more), and the room given by --room connected (other rooms may be
connected too; every one of the main group is checked by the MPD volume step).
The test changes the main group's queue, its play state, party mode, groups
and room volumes; it puts party mode off and the room back in the main group
at the end, and deletes the group it made.

Checks, one printed line each with its figure, exit status 1 and a message
on the first failure (2 for bad arguments or a missing tool):
  page loads and connects; the search shows exactly the tracks that
  library.search returns, in order; two tracks added from the results are
  the queue, reordered with the move buttons as queue.list says; play from
  the queue; pause and play with the button (player.status and the page);
  mpc pause / play / volume seen by the page within 200 ms (the time
  printed); a room's volume slider changes rooms.list; the room moved into
  a new group by its group picker and back (groups.list); party on and off
  (party.status); the room's channels from its card (rooms.list), two rooms
  made one stereo pair with "Stereo pair" (one entry in rooms.list), swapped
  and unpaired from the pair's card; an announcement to the room from
  Rooms → Announce (the leader answers with the room: `announce`); on the Sound screen a preset picked for the room, a band
  raised from the keyboard (rooms.list), the group's speed and pitch from
  their sliders (player.status), and Normal puts both back; the room's
  reverb: Large hall from its picker, the mix raised from the keyboard, then
  Off (rooms.list).
"""

import argparse
import json
import os
import shutil
import socket
import subprocess
import sys
import time

try:
    from selenium import webdriver
    from selenium.common.exceptions import WebDriverException
    from selenium.webdriver.common.action_chains import ActionChains
    from selenium.webdriver.common.by import By
    from selenium.webdriver.common.keys import Keys
    from selenium.webdriver.support.ui import Select
except ImportError as e:  # pragma: no cover
    print("FAIL setup: selenium is not installed for this python (%s); apt-get install python3-selenium" % e)
    sys.exit(2)

PHONE = (390, 844)
# A page that polled would show an mpc change up to a polling interval late;
# pushed, it shows it as mpc returns (pause/play: once heard, ~100 ms). The
# 200 ms target is measured by bench/web over 100 commands; this bound only
# has to tell push from polling, and survive a loaded CI machine.
MPD_LIMIT_MS = 1000


class Failure(Exception):
    pass


def fail(msg):
    raise Failure(msg)


def ok(name, figure):
    print("ok   %-22s %s" % (name, figure), flush=True)


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
        try:
            with socket.create_connection(("127.0.0.1", self.port), timeout=10) as s:
                s.sendall((json.dumps(req) + "\n").encode())
                f = s.makefile("r", encoding="utf-8")
                while True:
                    line = f.readline()
                    if not line:
                        fail("the leader closed the control connection during %s" % method)
                    msg = json.loads(line)
                    if msg.get("id") == req["id"]:
                        if "error" in msg:
                            fail("%s %s: leader error %s" % (method, json.dumps(params), msg["error"].get("message")))
                        return msg["result"]
        except OSError as e:
            fail("cannot reach the leader's JSON-RPC port 127.0.0.1:%d (%s: %s)" % (self.port, method, e))


class Page:
    def __init__(self, url, timeout, dark=False, lang=None):
        self.timeout = timeout
        opts = webdriver.ChromeOptions()
        if lang:  # the browser's language, as a person's phone set to it sends it
            opts.add_argument("--lang=%s" % lang)
            opts.add_experimental_option("prefs", {"intl.accept_languages": lang})
        for a in ["--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                  "--window-size=%d,%d" % PHONE, "--hide-scrollbars", "--no-first-run", "--disable-extensions"]:
            opts.add_argument(a)
        for b in ["/usr/bin/chromium", "/usr/bin/chromium-browser"]:
            if os.path.exists(b):
                opts.binary_location = b
                break
        opts.set_capability("goog:loggingPrefs", {"browser": "ALL"})
        kwargs = {"options": opts}
        driver_path = shutil.which("chromedriver") or "/usr/bin/chromedriver"
        if os.path.exists(driver_path):
            from selenium.webdriver.chrome.service import Service
            kwargs["service"] = Service(driver_path)
        self.d = webdriver.Chrome(**kwargs)
        self.d.set_script_timeout(timeout + 5)
        # A phone's viewport (Chromium's windows are at least 500 px wide).
        self.d.execute_cdp_cmd("Emulation.setDeviceMetricsOverride",
                               {"width": PHONE[0], "height": PHONE[1], "deviceScaleFactor": 2, "mobile": True})
        self.d.execute_cdp_cmd("Emulation.setTouchEmulationEnabled", {"enabled": True, "maxTouchPoints": 1})
        self.scheme(dark)
        self.d.get(url)

    def scheme(self, dark):
        self.d.execute_cdp_cmd("Emulation.setEmulatedMedia",
                               {"features": [{"name": "prefers-color-scheme", "value": "dark" if dark else "light"}]})

    def quit(self):
        try:
            self.d.quit()
        except WebDriverException:
            pass

    def one(self, test, root=None):
        els = (root or self.d).find_elements(By.CSS_SELECTOR, '[data-test="%s"]' % test)
        if not els:
            fail('the page has no element data-test="%s"' % test)
        return els[0]

    def all(self, test, root=None):
        return (root or self.d).find_elements(By.CSS_SELECTOR, '[data-test="%s"]' % test)

    def room(self, name):
        els = self.d.find_elements(By.CSS_SELECTOR, '[data-test="room"][data-room="%s"]' % name)
        if not els:
            fail('the Rooms screen shows no card for room "%s"' % name)
        return els[0]

    def dismiss_toasts(self):
        self.d.execute_script("for (const t of document.querySelectorAll('[data-test=toast]')) t.remove();")

    def errors_shown(self):
        return [t.text for t in self.all("toast") if t.get_attribute("data-kind") == "error"]

    def tap(self, el, what):
        self.dismiss_toasts()
        try:
            self.d.execute_script("arguments[0].scrollIntoView({block: 'center'});", el)
            el.click()
        except WebDriverException as e:
            fail("could not tap %s: %s" % (what, str(e).splitlines()[0]))

    def tab(self, name):
        self.tap(self.one("tab-" + name), "the %s tab" % name)
        self.wait("document.body.dataset.tab === %s" % json.dumps(name), "the %s screen to show" % name)

    def now(self):
        return self.d.execute_script("return performance.now()")

    def wait(self, cond_js, what, timeout=None):
        """Waits in the page until the JS expression is truthy; returns (value, performance.now())."""
        r = self.d.execute_async_script("""
            const cond = new Function('return (' + arguments[0] + ');'), limit = arguments[1], done = arguments[2];
            const t0 = performance.now();
            (function poll() {
              let v = null;
              try { v = cond(); } catch (e) { v = null; }
              if (v) return done({v: v, t: performance.now()});
              if (performance.now() - t0 > limit) return done(null);
              setTimeout(poll, 2);
            })();""", cond_js, (timeout or self.timeout) * 1000)
        if r is None:
            errors = self.errors_shown()
            fail("timed out after %s s waiting for %s%s" % (timeout or self.timeout, what,
                 ("; the page says: " + " | ".join(errors)) if errors else ""))
        return r["v"], r["t"]

    def shot(self, folder, name):
        if not folder:
            return
        self.dismiss_toasts()
        self.d.execute_script("window.scrollTo(0, 0)")
        time.sleep(0.35)  # images and layout settle
        path = os.path.join(folder, name + ".png")
        self.d.save_screenshot(path)


def wait_leader(leader, fn, what, timeout):
    end = time.monotonic() + timeout
    last = None
    while time.monotonic() < end:
        last = fn()
        if last[0]:
            return last[1]
        time.sleep(0.02)
    fail("timed out after %s s waiting for the leader: %s (last seen: %s)" % (timeout, what, last[1]))


def state_is(js_state_list):
    return ("(function(){ const e = document.querySelector('[data-test=np-state]');"
            " return e && %s.indexOf(e.dataset.state) >= 0 && e.dataset.state; })()" % json.dumps(js_state_list))


def run(args):
    leader = Leader(args.control_port)
    T = args.timeout
    shots = args.screenshots
    if shots:
        os.makedirs(shots, exist_ok=True)
    if not shutil.which("mpc"):
        print("FAIL setup: mpc is not installed (apt-get install mpc)")
        sys.exit(2)

    # What the page must show, from the leader itself (the room may still be joining).
    wait_leader(leader, lambda: (lambda rs: (any(r["name"] == args.room and r.get("connected", True) for r in rs),
                                             ", ".join(r["name"] for r in rs) or "no rooms"))(leader.call("rooms.list")["rooms"]),
                "room %r to be connected" % args.room, T)
    query = args.query
    if not query:
        artists = wait_leader(leader, lambda: (lambda a: (len(a) > 0, a))(leader.call("library.artists")["artists"]),
                              "library.artists to list an artist (the scan)", T)
        for a in artists:
            if a["tracks"] >= 2:
                query = a["name"]
                break
    if not query:
        fail("no artist in the library has 2 tracks: give --query")
    expected = leader.call("library.search", {"query": query, "limit": 100, "record": False})["tracks"]
    if len(expected) < 2:
        fail("library.search %r finds %d track(s); the test needs 2 or more" % (query, len(expected)))
    leader.call("party.off")
    leader.call("groups.add", {"group": "main", "rooms": [args.room]})
    leader.call("queue.clear")

    page = Page(args.url, T)
    try:
        t0 = time.monotonic()
        page.wait("document.getElementById('banner') && document.getElementById('banner').hidden && document.querySelector('[data-test=np-state]').dataset.state",
                  "the page to connect to the leader (banner hidden)")
        ok("connect", "page connected in %d ms" % ((time.monotonic() - t0) * 1000))

        # Search: exactly the leader's tracks, in its order.
        page.tab("search")
        box = page.one("search-input")
        page.tap(box, "the search field")
        box.send_keys(query)
        want_ids = [t["id"] for t in expected]
        t_type = page.now()
        _, t_seen = page.wait("(function(){ const r = document.querySelector('[data-test=search-results]');"
                              " return r && r.dataset.query === %s; })()" % json.dumps(query), "results for %r" % query)
        rows = page.all("search-result")
        got_ids = [int(r.get_attribute("data-track-id")) for r in rows]
        if got_ids != want_ids:
            fail("search %r: page rows are track ids %s, library.search gives %s" % (query, got_ids, want_ids))
        ok("search", "%r: %d rows = library.search, in order (shown %d ms after the last key)" % (query, len(rows), t_seen - t_type))
        page.shot(shots, "search")

        # Queue: add the first two results, then reorder them with the buttons.
        a, b = expected[0], expected[1]
        for i, t in enumerate((a, b)):
            page.tap(page.one("search-result-add", rows[i]), "add %r to the queue" % t["title"])
            wait_leader(leader, lambda: (len(leader.call("queue.list")["entries"]) == i + 1, leader.call("queue.list")["entries"]),
                        "queue to hold %d entries" % (i + 1), T)
        uris = [e["uri"] for e in leader.call("queue.list")["entries"]]
        if uris != [a["path"], b["path"]]:
            fail("after adding two tracks the queue is %s, expected %s" % (uris, [a["path"], b["path"]]))
        page.tab("queue")
        page.wait("document.querySelectorAll('[data-test=queue-row]').length === 2", "two queue rows")
        first = page.all("queue-row")[0]
        page.tap(page.one("queue-down", first), "move-down on the first queue row")
        got = wait_leader(leader, lambda: (lambda q: (q == [b["path"], a["path"]], q))([e["uri"] for e in leader.call("queue.list")["entries"]]),
                          "the queue to read B, A after move-down", T)
        page.wait("(function(){ const r = document.querySelectorAll('[data-test=queue-row]');"
                  " return r.length === 2 && r[0].dataset.uri === %s && r[1].dataset.uri === %s; })()" % (json.dumps(b["path"]), json.dumps(a["path"])),
                  "the queue rows to read B, A")
        second = page.all("queue-row")[1]
        page.tap(page.one("queue-up", second), "move-up on the second queue row")
        got = wait_leader(leader, lambda: (lambda q: (q == [a["path"], b["path"]], q))([e["uri"] for e in leader.call("queue.list")["entries"]]),
                          "the queue to read A, B after move-up", T)
        page.wait("(function(){ const r = document.querySelectorAll('[data-test=queue-row]');"
                  " return r.length === 2 && r[0].dataset.uri === %s; })()" % json.dumps(a["path"]), "the queue rows to read A, B")
        ok("queue reorder", "down then up: queue.list = %s, page rows match" % [os.path.basename(u) for u in got])

        page.tap(page.one("queue-play", page.all("queue-row")[1]), "play on the second queue row")
        st = wait_leader(leader, lambda: (lambda s: (s["state"] == "playing" and s["track"] == 1, s))(leader.call("player.status")),
                         "player.status playing track 1", T)
        page.wait("document.querySelector('[data-test=queue-row][aria-current=true]') && document.querySelector('[data-test=queue-row][aria-current=true]').dataset.index === '1'",
                  "the second queue row marked as playing")
        ok("queue play", "leader plays track %d %r" % (st["track"], st.get("title")))
        page.shot(shots, "queue")

        # Pause and play with the button.
        page.tab("now")
        page.wait(state_is(["playing"]), "Now playing to show playing")
        page.wait("document.querySelector('[data-test=np-title]').textContent === %s" % json.dumps(b["title"]), "the title %r" % b["title"])
        page.shot(shots, "now-playing")
        t0 = time.monotonic()
        page.tap(page.one("play-pause"), "pause")
        st = wait_leader(leader, lambda: (lambda s: (s["state"] == "paused", s))(leader.call("player.status")), "player.status paused", T)
        t_leader = (time.monotonic() - t0) * 1000
        page.wait(state_is(["paused"]), "the page to show paused")
        label = page.one("play-pause").get_attribute("aria-label")
        if label != "Play":
            fail("paused, yet the play/pause button says %r" % label)
        ok("pause button", "leader paused at %.3f s after %d ms; page shows %r, button %r" % (st["position"], t_leader, page.one("np-state").text, label))
        page.tap(page.one("play-pause"), "play")
        wait_leader(leader, lambda: (lambda s: (s["state"] == "playing", s))(leader.call("player.status")), "player.status playing", T)
        page.wait(state_is(["playing"]), "the page to show playing")
        ok("play button", "leader playing; page shows %r" % page.one("np-state").text)

        # MPD changes reach the page within 200 ms.
        def mpc(*a):
            start = page.now()
            p = subprocess.run(["mpc", "-q", "-p", str(args.mpd_port)] + list(a), capture_output=True, text=True, timeout=T)
            if p.returncode != 0:
                fail("mpc %s failed: %s" % (" ".join(a), (p.stderr or p.stdout).strip()))
            return start, page.now()

        worst = 0
        for cmd, want in (("pause", "paused"), ("play", "playing")):
            start, back = mpc(cmd)
            _, seen = page.wait(state_is([want]), "the page to show %s after mpc %s" % (want, cmd))
            ms = seen - start
            worst = max(worst, ms)
            if ms > MPD_LIMIT_MS:
                fail("mpc %s: the page showed %s %.0f ms after mpc started (limit %d ms; mpc itself took %.0f ms)" % (cmd, want, ms, MPD_LIMIT_MS, back - start))
            ok("mpc " + cmd, "page shows %s %.0f ms after mpc started (mpc took %.0f ms)" % (want, ms, back - start))

        page.tab("rooms")
        page.room(args.room)
        main_rooms = [r["name"] for r in leader.call("rooms.list")["rooms"] if r.get("group") == "main" and r.get("connected", True)]
        current = [r["volume"] for r in leader.call("rooms.list")["rooms"] if r["name"] in main_rooms]
        vol = 37 if 37 not in current else 63
        start, back = mpc("volume", str(vol))
        cond = " && ".join("(function(){ const c = document.querySelector('[data-test=room][data-room=%s] [data-test=room-volume]'); return c && +c.value === %d; })()"
                           % (json.dumps(n), vol) for n in main_rooms)
        _, seen = page.wait(cond, "every main-group room's slider to read %d after mpc volume" % vol)
        ms = seen - start
        got = {r["name"]: r["volume"] for r in leader.call("rooms.list")["rooms"] if r["name"] in main_rooms}
        if any(v != vol for v in got.values()):
            fail("after mpc volume %d rooms.list says %s" % (vol, got))
        if ms > MPD_LIMIT_MS:
            fail("mpc volume %d: the page showed it %.0f ms after mpc started (limit %d ms)" % (vol, ms, MPD_LIMIT_MS))
        ok("mpc volume", "%s at %d on the page %.0f ms after mpc started" % (", ".join(main_rooms), vol, ms))

        # A room's volume slider: tap at 80 % of its width.
        card = page.room(args.room)
        slider = page.one("room-volume", card)
        page.dismiss_toasts()
        page.d.execute_script("arguments[0].scrollIntoView({block: 'center'});", slider)
        width = slider.rect["width"]
        ActionChains(page.d).move_to_element_with_offset(slider, int(width * 0.3), 0).click().perform()
        shown = int(slider.get_attribute("value"))
        if shown == vol:
            fail("tapping the %s volume slider at 80 %% left it at %d" % (args.room, shown))
        got = wait_leader(leader, lambda: (lambda v: (v == shown, v))(next(r["volume"] for r in leader.call("rooms.list")["rooms"] if r["name"] == args.room)),
                          "rooms.list volume of %s = %d (the slider)" % (args.room, shown), T)
        ok("volume slider", "%s slider %d -> %d, rooms.list volume %d" % (args.room, vol, shown, got))

        # Move the room into a new group with its picker, and back.
        name = "Web test %d" % (int(time.time()) % 100000)
        picker = page.one("room-group", page.room(args.room))
        page.dismiss_toasts()
        page.d.execute_script("arguments[0].scrollIntoView({block: 'center'});", picker)
        Select(picker).select_by_visible_text("New group…")
        page.wait("document.querySelector('[data-test=modal-input]')", "the new group dialog")
        page.one("modal-input").send_keys(name)
        page.tap(page.one("modal-ok"), "Create")

        def where():
            for g in leader.call("groups.list")["groups"]:
                if args.room in g["rooms"]:
                    return g
            return {"id": None, "name": None}
        g = wait_leader(leader, lambda: (lambda g: (g["name"] == name, g["name"]))(where()), "%s in the group %r" % (args.room, name), T)
        gid = where()["id"]
        page.wait("(function(){ const c = document.querySelector('[data-test=room][data-room=%s]');"
                  " const s = c && c.closest('[data-test=group]'); return s && s.dataset.group === %s; })()" % (json.dumps(args.room), json.dumps(gid)),
                  "the %s card under the group %r" % (args.room, name))
        ok("group: new", "%s tapped into new group %r (%s); groups.list agrees" % (args.room, name, gid))
        page.shot(shots, "rooms")
        picker = page.one("room-group", page.room(args.room))
        page.dismiss_toasts()
        page.d.execute_script("arguments[0].scrollIntoView({block: 'center'});", picker)
        Select(picker).select_by_value("main")
        wait_leader(leader, lambda: (lambda g: (g["id"] == "main", g["name"]))(where()), "%s back in the main group" % args.room, T)
        page.wait("(function(){ const c = document.querySelector('[data-test=room][data-room=%s]');"
                  " const s = c && c.closest('[data-test=group]'); return s && s.dataset.group === 'main'; })()" % json.dumps(args.room),
                  "the %s card back under the main group" % args.room)
        ok("group: back", "%s back in %r" % (args.room, where()["name"]))
        leader.call("groups.delete", {"group": gid})

        # Party on and off.
        party = page.one("party")
        page.tap(party, "the Party button")
        wait_leader(leader, lambda: (lambda p: (p["party"] is True, p))(leader.call("party.status")), "party.status on", T)
        page.wait("document.querySelector('[data-test=party]').getAttribute('aria-pressed') === 'true'", "the Party button pressed")
        everyone = sorted(next(g for g in leader.call("groups.list")["groups"] if g["id"] == "main")["rooms"])
        ok("party on", "party.status true; main group has %s" % ", ".join(everyone))
        page.tap(page.one("party"), "the Party button again")
        wait_leader(leader, lambda: (lambda p: (p["party"] is False, p))(leader.call("party.status")), "party.status off", T)
        page.wait("document.querySelector('[data-test=party]').getAttribute('aria-pressed') === 'false'", "the Party button released")
        ok("party off", "party.status false")

        # Channels: the room's map from its card; then two rooms made one stereo pair, swapped, and unpaired.
        def room_named(n):
            return next((r for r in leader.call("rooms.list")["rooms"] if r["name"] == n), None)
        chan = page.one("room-channels", page.room(args.room))
        page.dismiss_toasts()
        page.d.execute_script("arguments[0].scrollIntoView({block: 'center'});", chan)
        Select(chan).select_by_value("mono")
        wait_leader(leader, lambda: (lambda r: (r["channels"] == "mono", r["channels"]))(room_named(args.room)), "%s to play mono" % args.room, T)
        ok("channels", "%s set to mono from its card; rooms.list agrees" % args.room)
        Select(page.one("room-channels", page.room(args.room))).select_by_value("stereo")
        wait_leader(leader, lambda: (lambda r: (r["channels"] == "stereo", r["channels"]))(room_named(args.room)), "%s back to stereo" % args.room, T)
        other = next(r["name"] for r in leader.call("rooms.list")["rooms"] if r["name"] != args.room and r.get("connected") and not r.get("pair"))
        page.tap(page.one("pair-new"), "Stereo pair")
        page.wait("document.querySelector('[data-test=pair-left]')", "the stereo pair dialog")
        Select(page.one("pair-left")).select_by_value(args.room)
        Select(page.one("pair-right")).select_by_value(other)
        page.one("pair-name").send_keys("Web pair")
        page.tap(page.one("modal-ok"), "Pair")
        pair = wait_leader(leader, lambda: (lambda r: (r is not None and r.get("pair", {}).get("left") == args.room, r))(room_named("Web pair")),
                           "rooms.list to have the pair 'Web pair'", T)
        names = [r["name"] for r in leader.call("rooms.list")["rooms"]]
        if args.room in names or other in names:
            fail("rooms.list still lists the paired rooms apart: %s" % names)
        page.wait("(function(){ const c = document.querySelector('[data-test=room][data-room=\"Web pair\"]');"
                  " return c && c.querySelectorAll('[data-test=pair-speaker]').length === 2; })()", "the pair's card with its two speakers")
        ok("pair: made", "%s left, %s right as 'Web pair': one entry in rooms.list (%s)" % (args.room, other, ", ".join(names)))
        page.shot(shots, "rooms-pair")
        page.tap(page.one("pair-swap", page.room("Web pair")), "Swap L/R")
        wait_leader(leader, lambda: (lambda r: (r["pair"]["left"] == other, r["pair"]))(room_named("Web pair")), "the pair swapped", T)
        page.wait("document.querySelector('[data-test=room][data-room=\"Web pair\"] [data-test=pair-speaker][data-side=left]').dataset.speaker === %s" % json.dumps(other),
                  "the card to show %s on the left" % other)
        ok("pair: swapped", "%s now plays left" % other)
        page.tap(page.one("pair-unpair", page.room("Web pair")), "Unpair")
        page.tap(page.one("modal-ok"), "Unpair (confirm)")
        wait_leader(leader, lambda: (lambda r: (r is None, r))(room_named("Web pair")), "the pair gone from rooms.list", T)
        page.wait("document.querySelector('[data-test=room][data-room=%s]') && document.querySelector('[data-test=room][data-room=%s]')"
                  % (json.dumps(args.room), json.dumps(other)), "both rooms' cards back")
        ok("pair: unpaired", "%s and %s are rooms of their own again" % (args.room, other))
        # Announce: text to this room alone; the toast names the speaker the leader sent it to.
        page.dismiss_toasts()
        page.tap(page.one("announce"), "Announce")
        page.wait("document.querySelector('[data-test=announce-text]')", "the announce dialog")
        page.one("announce-text").send_keys("Dinner is ready")
        for box in page.all("announce-room"):
            if (box.get_attribute("value") == args.room) != box.is_selected():
                box.click()
        page.tap(page.one("modal-ok"), "Announce (send)")
        page.wait("[...document.querySelectorAll('[data-test=toast]')].some(t => t.textContent === %s)" % json.dumps("Announcing in " + args.room),
                  "the toast 'Announcing in %s'" % args.room)
        ok("announce", "'Dinner is ready' spoken in %s" % args.room)

        # Sound: the room's preset from the picker, one band from the keyboard, then the group's speed and pitch.
        page.tab("sound")
        page.wait("(function(){ const s = document.querySelector('[data-test=sound-room]'); return s && [...s.options].some(o => o.value === %s)"
                  " && document.querySelectorAll('[data-test=sound-preset] option').length >= 10; })()" % json.dumps(args.room),
                  "the Sound screen to list the room and the presets")
        Select(page.one("sound-room")).select_by_value(args.room)
        Select(page.one("sound-preset")).select_by_value("Bass")

        def room_eq():
            return next(r for r in leader.call("rooms.list")["rooms"] if r["name"] == args.room)["eq"]
        eq = wait_leader(leader, lambda: (lambda e: (e.get("preset") == "Bass", e))(room_eq()), "%s to have the Bass preset" % args.room, T)
        if eq["gains"] != [6, 5, 4, 2, 0, 0, 0, 0, 0, 0]:
            fail("Bass preset from the page: rooms.list gains %s" % eq["gains"])
        page.wait("(function(){ const b = document.querySelector('[data-test=sound-band][data-band=\"0\"]'); return b && +b.value === 6; })()",
                  "the 32 Hz slider to show +6")
        ok("sound: preset", "%s: Bass from the picker; rooms.list gains %s" % (args.room, eq["gains"]))
        band = page.one("sound-band")
        page.d.execute_script("arguments[0].scrollIntoView({block: 'center'}); arguments[0].focus();", band)
        band.send_keys(Keys.ARROW_UP, Keys.ARROW_UP)
        eq = wait_leader(leader, lambda: (lambda e: (e["gains"][0] == 7 and not e.get("preset"), e))(room_eq()),
                         "the 32 Hz band to read +7 and the preset custom", T)
        ok("sound: band", "32 Hz raised twice from the keyboard: gains %s, preset %r" % (eq["gains"], eq.get("preset")))
        leader.call("rooms.setEq", {"room": args.room, "preset": "Flat"})
        # Set elsewhere just after the finger left: the sliders follow once it has.
        page.wait("[...document.querySelectorAll('[data-test=sound-band]')].every(b => +b.value === 0)", "the sliders to show Flat")

        speed = page.one("sound-speed")
        page.d.execute_script("arguments[0].scrollIntoView({block: 'center'}); arguments[0].focus();", speed)
        speed.send_keys(*([Keys.ARROW_RIGHT] * 10))
        st = wait_leader(leader, lambda: (lambda s: (abs(s["speed"] - 1.5) < 1e-9, s))(leader.call("player.status")), "player.status speed 1.5", T)
        page.wait("document.getElementById('view-sound').dataset.speed === '1.5'", "the page to show speed 1.5")
        pitch = page.one("sound-pitch")
        page.d.execute_script("arguments[0].scrollIntoView({block: 'center'}); arguments[0].focus();", pitch)
        pitch.send_keys(Keys.ARROW_LEFT, Keys.ARROW_LEFT)
        st = wait_leader(leader, lambda: (lambda s: (s["pitch"] == -2, s))(leader.call("player.status")), "player.status pitch -2", T)
        ok("sound: speed and pitch", "speed %.2f×, pitch %+.0f from the sliders; remaining %s s of %s s" % (st["speed"], st["pitch"], st.get("remaining"), st.get("duration")))
        page.shot(shots, "sound")
        page.tap(page.one("sound-tempo-reset"), "the Normal button")
        wait_leader(leader, lambda: (lambda s: (s["speed"] == 1 and s["pitch"] == 0, s))(leader.call("player.status")), "speed 1 and pitch 0 again", T)
        ok("sound: normal", "speed 1, pitch 0 after Normal")

        # Reverb: a preset from its picker (the mix at the default 25 % while it was off), the mix from
        # the keyboard, then Off (the preset kept at 0 %).
        def room_reverb():
            return next(r for r in leader.call("rooms.list")["rooms"] if r["name"] == args.room)["reverb"]
        Select(page.one("sound-reverb")).select_by_value("Large hall")
        wait_leader(leader, lambda: (lambda r: (r.get("preset") == "Large hall" and r["mix"] == 25, r))(room_reverb()),
                    "%s to have a Large hall at 25 %%" % args.room, T)
        page.wait("document.getElementById('view-sound').dataset.reverb === 'Large hall'", "the reverb picker to show Large hall")
        mix = page.one("sound-reverb-mix")
        page.d.execute_script("arguments[0].scrollIntoView({block: 'center'}); arguments[0].focus();", mix)
        mix.send_keys(*([Keys.ARROW_RIGHT] * 5))
        rv = wait_leader(leader, lambda: (lambda r: (r["mix"] == 30 and r.get("preset") == "Large hall", r))(room_reverb()),
                         "the reverb mix to read 30 %", T)
        page.wait("document.getElementById('view-sound').dataset.reverbMix === '30'", "the page to show a mix of 30 %")
        ok("sound: reverb", "%s: Large hall from the picker, mix raised to %s %% from the keyboard; RT60 %s s" % (args.room, rv["mix"], rv.get("decaySeconds")))
        Select(page.one("sound-reverb")).select_by_value("off")
        rv = wait_leader(leader, lambda: (lambda r: (r["off"] and r["mix"] == 0, r))(room_reverb()), "the reverb to be off", T)
        page.wait("document.getElementById('view-sound').dataset.reverb === 'off'", "the reverb picker to show Off")
        ok("sound: reverb off", "Off from the picker: mix %s %%, preset %r kept for the next mix" % (rv["mix"], rv.get("preset")))
        # A change made elsewhere shows in the picker, though it keeps the focus the person's choice left on it.
        leader.call("rooms.setReverb", {"room": args.room, "preset": "Plate", "mix": 40})
        page.wait("document.querySelector('[data-test=sound-reverb]').value === 'Plate' && document.querySelector('[data-test=sound-reverb-mix-value]').textContent === '40 %'",
                  "the picker (focused: %s) to show Plate at 40 %% set from elsewhere" % page.d.execute_script("return document.activeElement && document.activeElement.dataset.test"))
        ok("sound: reverb from elsewhere", "Plate at 40 % set over JSON-RPC shows in the picker")

        if shots:
            page.tab("library")
            page.wait("document.querySelector('[data-test=artist-row], [data-test=album-tile], .empty')", "the library to load")
            page.shot(shots, "library")
            page.scheme(True)
            page.tab("rooms")
            page.shot(shots, "rooms-dark")
            page.tab("now")
            page.shot(shots, "now-playing-dark")
            page.scheme(False)
            ok("screenshots", "%d PNGs in %s" % (len([f for f in os.listdir(shots) if f.endswith(".png")]), shots))

        errors = page.errors_shown()
        if errors:
            fail("the page showed errors: %s" % " | ".join(errors))
        severe = [l["message"] for l in page.d.get_log("browser") if l.get("level") == "SEVERE"]
        if severe:
            fail("the browser console has errors: %s" % " | ".join(severe))
        ok("console", "no errors")
    finally:
        page.quit()
        try:
            leader.call("party.off")
            leader.call("groups.add", {"group": "main", "rooms": [args.room]})
        except Exception:
            pass


def main():
    def options(ap):
        ap.add_argument("--mpd-port", type=int, required=True)
        ap.add_argument("--query")
        ap.add_argument("--room", default="kitchen")
    run_checks(run, "Browser test of Tutti's web app against a running leader.", options)


def run_checks(run, description, options):
    """Parses --url, --control-port, --screenshots, --timeout and what `options`
    adds, runs `run(args)`, and exits as the module docstring says."""
    ap = argparse.ArgumentParser(description=description)
    ap.add_argument("--url", required=True)
    ap.add_argument("--control-port", type=int, required=True)
    ap.add_argument("--screenshots")
    ap.add_argument("--timeout", type=float, default=10)
    options(ap)
    args = ap.parse_args()
    t0 = time.monotonic()
    try:
        run(args)
    except Failure as e:
        print("FAIL %s" % e, flush=True)
        sys.exit(1)
    except WebDriverException as e:
        print("FAIL browser: %s" % str(e).splitlines()[0], flush=True)
        sys.exit(1)
    print("all checks passed in %.1f s" % (time.monotonic() - t0), flush=True)


if __name__ == "__main__":
    main()
