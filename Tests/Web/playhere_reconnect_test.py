#!/usr/bin/python3
"""Browser test: a page that plays here plays again by itself when its
leader restarts (web/js/rpc.js reconnects, web/js/playhere.js joins again).

Usage (Debian's /usr/bin/python3 with python3-selenium, chromium,
chromium-driver, pulseaudio):

    /usr/bin/python3 Tests/Web/playhere_reconnect_test.py --tuttid .build/debug/tuttid \
        --web-root web [--bound-s 15] [--restarts 1]

It starts `tuttid leader` itself on free loopback ports (a 440 Hz tone,
`--play --loop`, PCM), opens the app in headless Chromium on a private
PulseAudio null sink (playhere_test.py's), switches Play here on and waits
until the page schedules audio. Then, per restart: SIGTERM to the leader,
wait for it to exit, start it again on the same ports, and measure from the
new leader's launch until the page (a) is listed by the new leader's
rooms.list and (b) schedules audio again (its player's chunk count moves
past the count at the stop; nothing arrives while the leader is away, and a
new connection drops what the page held). Also printed: the time from the
old leader's exit, which includes the reconnect back-off while it was away.
Last, a reload on Now playing: Play here was left on, so the page plays
here again without the Rooms screen (app.js fetches playhere.js at start).

One printed line per check; exit status 1 on the first failure (a page that
does not play again within --bound-s of the leader's launch), 2 for a
missing tool. The bound is generous: behaviour, not a benchmark (figures in
bench/web/README.md).
"""

import argparse
import math
import os
import shutil
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from playhere_test import Failure, PulseAudio, rpc, wait_until  # noqa: E402

from selenium import webdriver  # noqa: E402
from selenium.webdriver.chrome.service import Service  # noqa: E402
from selenium.webdriver.common.by import By  # noqa: E402

ROOM = "Garden phone"


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def tone_wav(path, seconds=10):
    n = 48000 * seconds
    data = bytearray(n * 4)
    for i in range(n):
        v = int(8000 * math.sin(2 * math.pi * 440 * i / 48000))
        struct.pack_into("<hh", data, 4 * i, v, v)
    hdr = b"RIFF" + struct.pack("<I", 36 + len(data)) + b"WAVEfmt " + struct.pack("<IHHIIHH", 16, 1, 2, 48000, 192000, 4, 16) + \
        b"data" + struct.pack("<I", len(data))
    with open(path, "wb") as f:
        f.write(hdr + bytes(data))


class Leader:
    """`tuttid leader` on fixed ports, started and stopped as a service manager would."""

    def __init__(self, tuttid, web_root, work):
        self.args = [tuttid, "leader", "--listen", "127.0.0.1:%d" % free_port(), "--control", "127.0.0.1:%d" % free_port(),
                     "--web", "127.0.0.1:%d" % free_port(), "--web-root", web_root, "--mpd", "off",
                     "--snapcast-stream", "off", "--snapcast-control", "off", "--snapcast-http", "off",
                     "--no-announce", "--no-airplay", "--db", work + "/library.db", "--state", work + "/state",
                     "--codec", "pcm", "--play", work + "/tone.wav", "--loop"]
        self.control = int(self.args[self.args.index("--control") + 1].rsplit(":", 1)[1])
        self.web = int(self.args[self.args.index("--web") + 1].rsplit(":", 1)[1])
        self.log = work + "/leader.log"
        self.proc = None

    def start(self):
        with open(self.log, "a") as log:
            self.proc = subprocess.Popen(self.args, stdout=log, stderr=log)
        return time.monotonic()

    def answers(self):
        try:
            return rpc(self.control, "player.status") is not None
        except (OSError, Failure):
            return False

    def stop(self):
        if self.proc and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(15)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
                raise Failure("the leader did not exit within 15 s of SIGTERM")
        return time.monotonic()

    def listed(self):
        try:
            return any(r.get("name") == ROOM and r.get("connected", True) for r in rpc(self.control, "rooms.list")["rooms"])
        except (OSError, Failure):
            return False


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--tuttid", required=True)
    ap.add_argument("--web-root", required=True)
    ap.add_argument("--bound-s", type=float, default=15)
    ap.add_argument("--restarts", type=int, default=1)
    ap.add_argument("--timeout", type=float, default=20)
    a = ap.parse_args()
    for tool in ["/usr/bin/chromium", "/usr/bin/chromedriver", "/usr/bin/pulseaudio", a.tuttid]:
        if not os.path.exists(tool):
            print("FAIL setup: %s is missing: run scripts/setup.sh (and build tuttid)" % tool)
            return 2
    work = tempfile.mkdtemp(prefix="tutti-reconnect-")
    tone_wav(work + "/tone.wav")
    pa = PulseAudio()
    leader = Leader(a.tuttid, os.path.abspath(a.web_root), work)
    try:
        return run(a, pa, leader)
    finally:
        try:
            leader.stop()
        except Failure:
            pass
        pa.stop()
        if os.environ.get("TUTTI_KEEP_LOG"):
            print(open(leader.log).read())
        shutil.rmtree(work, ignore_errors=True)


def run(a, pa, leader):
    leader.start()
    wait_until(leader.answers, a.timeout, "the leader to answer")
    os.environ["PULSE_SERVER"] = pa.server
    o = webdriver.ChromeOptions()
    o.binary_location = "/usr/bin/chromium"
    for arg in ["--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--window-size=390,844",
                "--autoplay-policy=no-user-gesture-required", "--lang=en"]:
        o.add_argument(arg)
    d = webdriver.Chrome(service=Service("/usr/bin/chromedriver"), options=o)
    chunks = "return window.tuttiPlayHere.chunks"
    try:
        d.get("http://127.0.0.1:%d/#/rooms" % leader.web)
        wait_until(lambda: d.execute_script("return !!document.querySelector('[data-test=play-here]') && "
                                            "document.getElementById('banner').hidden"), a.timeout, "the page to connect")
        name = d.find_element(By.CSS_SELECTOR, "[data-test=play-here-name]")
        d.execute_script("arguments[0].value = arguments[1]; arguments[0].dispatchEvent(new Event('change'))", name, ROOM)
        d.find_element(By.CSS_SELECTOR, "[data-test=play-here]").click()
        wait_until(lambda: d.execute_script(chunks) > 10, a.timeout, "the page to schedule audio")
        print("ok playing: the page schedules audio as %r" % ROOM)
        worst = 0.0
        for n in range(1, a.restarts + 1):
            gone = leader.stop()
            # The page saw its connection go (it dropped what it held): what it schedules from now on is the new leader's.
            wait_until(lambda: d.execute_script("return window.tuttiPlayHere.joined === null"), a.timeout, "the page to see the leader go")
            before = d.execute_script(chunks)
            launched = leader.start()
            listed = wait_until(lambda: leader.listed() and time.monotonic(), a.bound_s + 5, "the new leader to list the page's room")
            playing = wait_until(lambda: d.execute_script("return window.tuttiPlayHere.joined !== null && window.tuttiPlayHere.chunks > %d" % before)
                                 and time.monotonic(), a.bound_s + 5,
                                 "the page to schedule audio again")
            state = d.find_element(By.CSS_SELECTOR, "[data-test=play-here-state]").text
            since = playing - launched
            worst = max(worst, since)
            print("ok restart %d: listed again %.2f s and audio scheduled again %.2f s after the leader's launch "
                  "(%.2f s after the old one exited); the switch says %r" % (n, listed - launched, since, playing - gone, state))
            if since > a.bound_s:
                raise Failure("the page played again %.1f s after the leader's launch (at most %.0f)" % (since, a.bound_s))
            if ROOM not in state:
                raise Failure("the switch says %r, not that it plays as %r" % (state, ROOM))
            if not d.execute_script("return window.tuttiPlayHere.on && window.tuttiPlayHere.ctx.state === 'running'"):
                raise Failure("the page's player is off or its audio context is not running")
        print("ok reconnect: %d restart(s), at most %.2f s from a leader's launch to audio scheduled again" % (a.restarts, worst))
        # A reload on Now playing: Play here was left on, so it comes back by itself, though the
        # first screen does not carry it (app.js fetches playhere.js at start only then) and Rooms is never shown.
        d.get("http://127.0.0.1:%d/#/now" % leader.web)  # a change of hash only: the page stays
        reloaded = time.monotonic()
        d.refresh()
        playing = wait_until(lambda: d.execute_script("const p = window.tuttiPlayHere; return !!p && p.joined !== null && p.chunks > 10")
                             and time.monotonic(), a.bound_s + 5, "the reloaded page to play here again")
        rooms = d.execute_script("return !!document.querySelector('[data-test=play-here]')")
        print("ok reload: Play here was left on, and the reloaded page on Now playing schedules audio again %.2f s after the reload; "
              "the Rooms screen drawn: %s" % (playing - reloaded, rooms))
        if playing - reloaded > a.bound_s:
            raise Failure("the reloaded page played here again %.1f s after the reload (at most %.0f)" % (playing - reloaded, a.bound_s))
        if rooms:
            raise Failure("the reloaded page drew the Rooms screen, which it was never sent to")
        if not leader.listed():
            raise Failure("the leader does not list the reloaded page's room %r" % ROOM)
        return 0
    except Failure as e:
        print("FAIL %s" % e)
        return 1
    finally:
        d.quit()


if __name__ == "__main__":
    sys.exit(main())
