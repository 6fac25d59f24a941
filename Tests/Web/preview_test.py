#!/usr/bin/python3
"""Browser test of previews (issue 34; web/js/playhere.js, GET /preview/ID):
a search result's preview button plays 30 s from the middle of the track on
this page only.

Usage (Debian's /usr/bin/python3 with python3-selenium, chromium,
chromium-driver, pulseaudio and parec):

    /usr/bin/python3 Tests/Web/preview_test.py --url http://127.0.0.1:WEBPORT \
        --control-port CONTROLPORT [--screenshot PNG]

What the leader must have: a library with "Middle Tone" (1 kHz in its middle
30 s, another tone around it) and "Low Tone" (500 Hz throughout), and
nothing else titled "tone".

Checks, one printed line each with its figures; exit status 1 on the first
failure, 2 for a missing tool:
  the preview of "Middle Tone", pressed with the mouse, is heard (the page's
  AnalyserNode peaks at 1 kHz, and PulseAudio's null sink records 1 kHz; the
  time from the press to the first sound recorded is printed) and its button
  says aria-pressed=true; "Low Tone"'s, pressed with the keyboard, stops the
  first and plays 500 Hz; pressing it again stops it; a preview stops when
  the screen changes; queue.list, player.status and history.list are what
  they were before, and rooms.list lists no new room.
"""

import argparse
import json
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from playhere_test import PulseAudio, Capture, Failure, rpc, wait_until, RATE  # noqa: E402

try:
    from selenium import webdriver
    from selenium.webdriver.common.by import By
    from selenium.webdriver.common.keys import Keys
except ImportError as e:  # pragma: no cover
    print("FAIL setup: selenium is not installed for this python (%s); apt-get install python3-selenium" % e)
    sys.exit(2)


def state(port):
    """What a preview must not change."""
    return {"queue": rpc(port, "queue.list"), "status": rpc(port, "player.status"), "history": rpc(port, "history.list"),
            "rooms": sorted(r.get("name") for r in rpc(port, "rooms.list")["rooms"])}


def page_peak_hz(d):
    """The loudest frequency the preview's AnalyserNode sees now (0: silence or none)."""
    return d.execute_script("""
        const pv = window.tuttiPreview;
        if (!pv.src || !pv.analyser) return 0;
        const a = pv.analyser, bins = new Float32Array(a.frequencyBinCount);
        a.getFloatFrequencyData(bins);
        let best = 0;
        for (let i = 1; i < bins.length; i++) if (bins[i] > bins[best]) best = i;
        if (bins[best] < -60) return 0;
        // Parabolic interpolation between the neighbours (dB).
        const l = bins[best - 1], c = bins[best], r = bins[best + 1];
        const shift = 0.5 * (l - r) / (l - 2 * c + r);
        return (best + shift) * a.context.sampleRate / a.fftSize;""")


def capture_hz(samples, start, seconds=0.5):
    """Frequency from rising zero crossings of the capture from frame `start`."""
    end = min(len(samples), start + int(seconds * RATE))
    xs = [i for i in range(start + 1, end) if samples[i - 1] < 0 <= samples[i]]
    if len(xs) < 3:
        return 0.0
    return (len(xs) - 1) * RATE / (xs[-1] - xs[0])


def first_sound(cap, after_ns, level=1000):
    """(monotonic ns, frame) of the first recorded sample above `level` rendered after `after_ns`."""
    samples = cap.samples()
    at = cap.frame_time()
    start = 0
    while start < len(samples) and at(start) < after_ns:
        start += 480
    for i in range(start, len(samples)):
        if abs(samples[i]) > level:
            return at(i), i
    return None, None


def button(d, title):
    return d.find_element(By.CSS_SELECTOR, "[data-test=search-result][data-title='%s'] [data-test=search-result-preview]" % title)


def pressed(d, title):
    return button(d, title).get_attribute("aria-pressed") == "true"


def run(a, pa):
    os.environ["PULSE_SERVER"] = pa.server  # chromedriver starts Chromium with this environment
    o = webdriver.ChromeOptions()
    o.binary_location = "/usr/bin/chromium"
    for arg in ["--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--window-size=390,844", "--lang=en"]:
        o.add_argument(arg)
    from selenium.webdriver.chrome.service import Service
    d = webdriver.Chrome(service=Service("/usr/bin/chromedriver"), options=o)
    cap = None
    try:
        rpc(a.control_port, "queue.clear")
        rpc(a.control_port, "queue.add", {"search": "tone"})
        before = state(a.control_port)
        d.get(a.url + "/#/search")
        wait_until(lambda: d.execute_script("return document.getElementById('banner').hidden && !!document.querySelector('[data-test=search-input]')"),
                   a.timeout, "the page to connect")
        box = d.find_element(By.CSS_SELECTOR, "[data-test=search-input]")
        box.send_keys("tone")
        wait_until(lambda: len(d.find_elements(By.CSS_SELECTOR, "[data-test=search-result-preview]")) == 2, a.timeout, "two results with a preview button")
        b = button(d, "Middle Tone")
        label = b.get_attribute("aria-label")
        if label != "Preview Middle Tone on this phone" or b.get_attribute("aria-pressed") != "false":
            raise Failure("the preview button is named %r, aria-pressed %r" % (label, b.get_attribute("aria-pressed")))
        print("ok button: %r, aria-pressed false" % label)

        # 1. Pressed with the mouse: heard at 1 kHz.
        cap = Capture(pa.env)
        wait_until(lambda: len(cap.reads) > 50, a.timeout, "the capture to run")
        t0 = time.monotonic_ns()
        b.click()
        if not pressed(d, "Middle Tone"):
            raise Failure("aria-pressed is not true right after the press")
        wait_until(lambda: d.execute_script("return !!window.tuttiPreview.src"), a.timeout, "the preview to start")
        pv = d.execute_script("const p = window.tuttiPreview; return {bytes: p.bytes, fetchMs: p.fetchMs, decodeMs: p.decodeMs, "
                              "encodeMs: p.encodeMs, cache: p.cache, duration: p.duration, startMs: p.startAt - p.pressedAt}")
        if abs(pv["duration"] - 30) > 0.05:
            raise Failure("the preview lasts %.3f s, not 30" % pv["duration"])
        hz = wait_until(lambda: page_peak_hz(d), a.timeout, "the analyser to hear the preview")
        time.sleep(0.3)  # let the analyser's window fill with the tone alone
        hz = page_peak_hz(d)
        if abs(hz - 1000) > 5:
            raise Failure("the page plays %.1f Hz, not 1 kHz" % hz)
        heard_ns, frame = wait_until(lambda: (lambda r: r if r[0] else None)(first_sound(cap, t0)), a.timeout, "the preview in the recording")
        wait_until(lambda: len(cap.samples()) > frame + RATE, a.timeout, "a second of the preview recorded")
        rec_hz = capture_hz(cap.samples(), frame + RATE // 4)
        if abs(rec_hz - 1000) > 5:
            raise Failure("PulseAudio recorded %.1f Hz, not 1 kHz" % rec_hz)
        print("ok middle tone: analyser %.1f Hz, recorded %.1f Hz; press to sound %.0f ms (fetch %.0f ms incl. encode %s ms on the leader, "
              "decode %.0f ms), %d bytes for %.2f s (cache %s)"
              % (hz, rec_hz, (heard_ns - t0) / 1e6, pv["fetchMs"], pv["encodeMs"], pv["decodeMs"], pv["bytes"], pv["duration"], pv["cache"]))
        if a.screenshot:
            d.save_screenshot(a.screenshot)

        # 2. The other preview, by keyboard: the first stops.
        low = button(d, "Low Tone")
        d.execute_script("arguments[0].focus()", low)
        low.send_keys(Keys.ENTER)
        wait_until(lambda: d.execute_script("return window.tuttiPreview.id") is not None and pressed(d, "Low Tone"), a.timeout, "Low Tone's preview")
        if pressed(d, "Middle Tone"):
            raise Failure("Middle Tone's button still says it plays")
        wait_until(lambda: d.execute_script("return !!window.tuttiPreview.src"), a.timeout, "Low Tone to start")
        wait_until(lambda: abs(page_peak_hz(d) - 500) < 5, a.timeout, "the analyser to hear 500 Hz")
        print("ok second preview (keyboard): Low Tone at %.1f Hz, Middle Tone stopped" % page_peak_hz(d))

        # 3. The same button again: it stops.
        low.send_keys(Keys.SPACE)
        wait_until(lambda: d.execute_script("return window.tuttiPreview.id === null && !window.tuttiPreview.src") and not pressed(d, "Low Tone"),
                   a.timeout, "the preview to stop when pressed again")
        print("ok pressed again: stopped")

        # 4. Another screen: it stops.
        button(d, "Middle Tone").click()
        wait_until(lambda: d.execute_script("return !!window.tuttiPreview.src"), a.timeout, "the preview to start again (from the cache)")
        cache = d.execute_script("return window.tuttiPreview.cache")
        d.execute_script("location.hash = '#/library'")
        wait_until(lambda: d.execute_script("return window.tuttiPreview.id === null && !window.tuttiPreview.src"), a.timeout,
                   "the preview to stop on another screen")
        print("ok screen change: stopped (Middle Tone again came from a cache, the browser's or the leader's: its answer said %s)" % cache)

        # 5. Nothing in the house changed.
        after = state(a.control_port)
        for k in before:
            if before[k] != after[k]:
                raise Failure("%s changed: %s -> %s" % (k, json.dumps(before[k])[:300], json.dumps(after[k])[:300]))
        print("ok unchanged: queue.list (%d entries), player.status (%s), history.list (%d), rooms.list %s"
              % (len(after["queue"].get("entries", after["queue"].get("tracks", []))), after["status"].get("state"),
                 len(after["history"].get("entries", after["history"].get("tracks", []))), after["rooms"]))
        print("all checks passed")
        return 0
    except Failure as e:
        print("FAIL %s" % e)
        try:
            print("page: %s" % json.dumps(d.execute_script("const p = window.tuttiPreview; return {id: p.id, error: p.error, bytes: p.bytes}")))
        except Exception:  # noqa: BLE001
            pass
        return 1
    finally:
        if cap:
            cap.stop()
        d.quit()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--url", required=True)
    ap.add_argument("--control-port", type=int, required=True)
    ap.add_argument("--screenshot", help="a PNG of the search screen while a preview plays")
    ap.add_argument("--timeout", type=float, default=20)
    a = ap.parse_args()
    for tool in ["/usr/bin/chromium", "/usr/bin/chromedriver", "/usr/bin/pulseaudio", "/usr/bin/parec"]:
        if not os.path.exists(tool):
            print("FAIL setup: %s is missing: run scripts/setup.sh" % tool)
            return 2
    pa = PulseAudio()
    try:
        return run(a, pa)
    finally:
        pa.stop()


if __name__ == "__main__":
    sys.exit(main())
