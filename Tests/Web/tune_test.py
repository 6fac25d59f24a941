#!/usr/bin/python3
"""Browser test of the web app's Tune rooms screen (#/tune), with a recording
fed to getUserMedia by Chromium's fake capture device.

Usage (Debian's /usr/bin/python3 with python3-selenium, chromium,
chromium-driver, and PyPI's axe-selenium-python):

    /usr/bin/python3 Tests/Web/tune_test.py --url http://127.0.0.1:WEBPORT \
        --control-port CONTROLPORT --recording phone.wav --rooms a,b --truth-ms 10.2 \
        [--screenshots DIR] [--timeout 60]

  --recording  a WAV file of the rooms' sweeps as a phone at the listening
               spot hears them (Chromium plays it once, from when the page
               opens the microphone: `%noloop`)
  --rooms      the connected rooms the recording holds, in the order played
               (a stereo pair by its name: its two sides are measured apart)
  --truth-ms   how much later the second speaker arrives than the first (ms;
               a pair's left and right are two speakers)
  --pair-only  only record, check the pair's card (one room, two sides), axe
               in English, and apply (the rest is the two-room run's)

Checks, one printed line each with its figure; exit status 1 and a message on
the first failure (2 for a missing tool):
  keyboard   every control of the screen is reached with Tab, and Enter on
             "Listen and tune" starts it
  record     the page records (no echo cancellation, noise suppression or
             AGC), the leader analyses, every room has a delay, and the
             second room's delay less the first's is within 0.1 ms of the truth
  axe        axe-core finds no violation at all on the screen, in English
             and in Korean, with the results and a response table shown
  apply      Apply (with the EQ box ticked) sets rooms.list's latencyMs to the
             trims shown and a "Tuned …" EQ preset in every room
  file       the same recording chosen in the file input gives the same delays
  refusals   the leader's refusals come in the page's language: a silent
             recording is "too quiet" (422) in Korean, one over 60 s is "too
             long", a body over 12 MiB is 413
"""

import argparse
import json
import os
import socket
import struct
import sys
import time
import urllib.error
import urllib.parse
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from webapp_test import Failure, Leader, fail, ok  # noqa: E402

from selenium import webdriver  # noqa: E402
from selenium.common.exceptions import WebDriverException  # noqa: E402
from selenium.webdriver.common.by import By  # noqa: E402
from selenium.webdriver.common.keys import Keys  # noqa: E402

PHONE = (390, 844)
LIMIT_MS = 0.1


def browser(recording, lang=None):
    opts = webdriver.ChromeOptions()
    for a in ["--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
              "--window-size=%d,%d" % PHONE, "--no-first-run", "--disable-extensions",
              "--use-fake-ui-for-media-stream", "--use-fake-device-for-media-stream",
              "--use-file-for-fake-audio-capture=%s%%noloop" % recording]:
        opts.add_argument(a)
    if lang:
        opts.add_argument("--lang=%s" % lang)
        opts.add_experimental_option("prefs", {"intl.accept_languages": lang})
    opts.binary_location = "/usr/bin/chromium"
    from selenium.webdriver.chrome.service import Service
    d = webdriver.Chrome(options=opts, service=Service("/usr/bin/chromedriver"))
    d.set_script_timeout(120)  # axe-core on a loaded machine
    d.execute_cdp_cmd("Emulation.setDeviceMetricsOverride",
                      {"width": PHONE[0], "height": PHONE[1], "deviceScaleFactor": 2, "mobile": True})
    return d


def wait(d, js, what, timeout):
    end = time.time() + timeout
    while time.time() < end:
        try:
            v = d.execute_script("return (" + js + ");")
        except WebDriverException:
            v = None
        if v:
            return v
        time.sleep(0.05)
    fail("timed out after %.0f s waiting for %s (status: %r, error: %r)" % (
        timeout, what, d.execute_script("const s = document.querySelector('[data-test=tune-status]'); return s && s.textContent;"),
        d.execute_script("const s = document.querySelector('[data-test=tune-error]'); return s && s.textContent;")))


def one(d, test):
    els = d.find_elements(By.CSS_SELECTOR, '[data-test="%s"]' % test)
    if not els:
        fail('the page has no element data-test="%s"' % test)
    return els[0]


def open_screen(d, url, rooms, timeout):
    d.get(url + "/#/tune")
    wait(d, "document.body.dataset.tab === 'tune' && document.querySelectorAll('[data-test=tune-room]').length >= %d" % len(rooms),
         "the Tune rooms screen with %d rooms" % len(rooms), timeout)


def results(d, rooms, timeout, what, retry_skipped=False):
    """Each speaker's (delay, trim, problem): a room's card, or each side of a
    pair's card; None when `retry_skipped` and the page says the recorder
    skipped (record again)."""
    wait(d, "document.querySelectorAll('[data-test=tune-result]').length === %d || document.querySelector('[data-test=tune-view-error]')" % len(rooms)
         + " || (document.querySelector('[data-test=tune-error]').textContent !== '' && document.getElementById('view-tune').dataset.busy !== '1')",
         "the analysis of %s" % what, timeout)
    err = d.execute_script("return document.querySelector('[data-test=tune-error]').textContent")
    if err and retry_skipped and "record again" in err and "between the sweeps" in err:
        return None
    if err:
        fail("%s: the page says %r" % (what, err))
    found = {}
    for el in d.find_elements(By.CSS_SELECTOR, '[data-test="tune-result"]'):
        sides = el.find_elements(By.CSS_SELECTOR, '[data-test="tune-side"]')
        measured = [(s.get_attribute("data-speaker"), s) for s in sides] or [(el.get_attribute("data-room"), el)]
        if sides and [s.get_attribute("data-side") for s in sides] != ["left", "right"]:
            fail("%s: the pair %s shows sides %s" % (what, el.get_attribute("data-room"), [s.get_attribute("data-side") for s in sides]))
        for name, m in measured:
            delay = m.get_attribute("data-delay-ms")
            if not delay:
                fail("%s: %s has no delay (%s)" % (what, name, el.text.replace("\n", " / ")))
            found[name] = (float(delay), m.get_attribute("data-trim-ms"), el.get_attribute("data-problem"))
    return found


def check_delays(found, rooms, truth, what):
    rooms = list(found)  # the speakers, in the order shown: a pair's left then right
    measured = found[rooms[1]][0] - found[rooms[0]][0]
    err = measured - truth
    if abs(err) > LIMIT_MS:
        fail("%s: %s after %s by %.3f ms measured, %.3f ms true (error %.3f ms)" % (what, rooms[1], rooms[0], measured, truth, err))
    ok(what, "%s after %s: %.3f ms measured, %.3f ms true (error %+.3f ms); delays %s" % (
        rooms[1], rooms[0], measured, truth, err, ", ".join("%s %.3f" % (r, found[r][0]) for r in rooms)))
    return measured


def keyboard(d):
    """Tab from the heading through the screen: every control is reached; returns the order."""
    d.execute_script("document.querySelector('#view-tune h1').setAttribute('tabindex', '-1'); document.querySelector('#view-tune h1').focus();")
    wanted = {"tune-back", "tune-room", "tune-start", "tune-play", "tune-file"}
    seen = []
    for _ in range(30):
        d.switch_to.active_element.send_keys(Keys.TAB)
        test = d.execute_script("return document.activeElement && document.activeElement.getAttribute('data-test')")
        seen.append(test)
        if test == "tune-file":
            break
    missing = wanted - set(seen)
    if missing:
        fail("keyboard: Tab never reached %s (order %s)" % (sorted(missing), seen))
    return seen


def axe_check(d, label):
    from axe_selenium_python import Axe
    axe = Axe(d)
    axe.inject()
    r = d.execute_async_script("""
        const done = arguments[arguments.length - 1];
        axe.run('#view-tune', { runOnly: { type: 'tag', values: ['wcag2a', 'wcag2aa', 'wcag21aa', 'best-practice'] } })
          .then((r) => done(r), (e) => done({ error: String(e) }));""")
    if "error" in r:
        fail("axe %s could not run: %s" % (label, r["error"]))
    if r["violations"]:
        fail("axe %s: %s" % (label, " | ".join("%s (%s): %s" % (v["id"], v.get("impact"), "; ".join(
            "%s %s" % (n["target"], (n.get("failureSummary") or "").replace("\n", " ")[:160]) for n in v["nodes"][:3])) for v in r["violations"])))
    ok("axe " + label, "0 violations on Tune rooms (%d rules passed)" % len(r["passes"]))


def post(url, body, plan, lang):
    q = urllib.parse.urlencode({"plan": json.dumps(plan), "lang": lang})
    req = urllib.request.Request(url + "/calibrate?" + q, data=body, method="POST", headers={"Content-Type": "audio/wav"})
    try:
        with urllib.request.urlopen(req, timeout=60) as r:
            return r.status, r.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode()


def wav_header(rate, frames, bits=16, fmt=1):
    data = frames * bits // 8
    return (b"RIFF" + struct.pack("<I", 36 + data) + b"WAVEfmt " + struct.pack("<IHHIIHH", 16, fmt, 1, rate, rate * bits // 8, bits // 8, bits)
            + b"data" + struct.pack("<I", data))


def refusals(url, rooms):
    plan = {"rooms": rooms, "slotMs": 2000}
    status, text = post(url, wav_header(48000, 48000 * 8) + bytes(2 * 48000 * 8), plan, "ko")
    if status != 422 or "녹음이 너무 작습니다" not in text or "calibration.tooQuiet" not in text:
        fail("refusals: a silent recording gave %d %s" % (status, text[:200]))
    quiet = json.loads(text)["error"]["message"]
    frames = 61 * 48000
    status, text = post(url, wav_header(48000, frames) + bytes(2 * frames), plan, "en")
    if status != 422 or "calibration.tooLong" not in text:
        fail("refusals: a 61 s recording gave %d %s" % (status, text[:200]))
    long_msg = json.loads(text)["error"]["message"]
    # Refused from its Content-Length, before the body is read: only the head is sent.
    big = 12 * 1024 * 1024 + 1
    host, port = urllib.parse.urlparse(url).hostname, urllib.parse.urlparse(url).port
    with socket.create_connection((host, port), timeout=30) as s:
        s.sendall(("POST /calibrate?plan=x HTTP/1.1\r\nHost: %s:%d\r\nContent-Type: audio/wav\r\nContent-Length: %d\r\n\r\n" % (host, port, big)).encode())
        reply = s.recv(4096).decode(errors="replace")
    status = int(reply.split(" ")[1]) if reply.startswith("HTTP/1.1 ") else 0
    text = reply
    if status != 413:
        fail("refusals: %d bytes gave %d %s" % (big, status, text[:200]))
    status, text = post(url, wav_header(48000, 48000 * 8) + bytes(2 * 48000 * 8), {"rooms": []}, "en")
    if status != 422 or "calibration.badPlan" not in text:
        fail("refusals: no plan gave %d %s" % (status, text[:200]))
    ok("refusals", "silent: 422 %r; 61 s: 422 %r; %d bytes: 413; no plan: 422" % (quiet, long_msg, big))


def run(args):
    rooms = args.rooms.split(",")
    leader = Leader(args.control_port)
    d = browser(args.recording)
    try:
        open_screen(d, args.url, rooms, args.timeout)
        if not d.execute_script("return window.isSecureContext && !!navigator.mediaDevices"):
            fail("the page at %s is not a secure context: no microphone" % args.url)
        if not args.pair_only:
            order = keyboard(d)
            ok("keyboard", "Tab reaches %s" % " → ".join(x or "?" for x in order))
        start = one(d, "tune-start")
        d.execute_script("arguments[0].focus()", start)
        t0 = time.time()
        d.switch_to.active_element.send_keys(Keys.ENTER)
        found = results(d, rooms, args.timeout, "the microphone's recording", retry_skipped=True)
        if found is None:
            # The recorder lost audio between the sweeps (Chromium's capture
            # on a loaded machine can); the page said to record again: so do we, once.
            err = d.execute_script("return document.querySelector('[data-test=tune-error]').textContent")
            print("note: %s; recording again" % err, flush=True)
            start = one(d, "tune-start")
            d.execute_script("arguments[0].focus()", start)
            t0 = time.time()
            d.switch_to.active_element.send_keys(Keys.ENTER)
            found = results(d, rooms, args.timeout, "the microphone's second recording")
        seconds = float(d.execute_script("return document.getElementById('view-tune').dataset.recordedSeconds") or 0)
        ok("record", "recorded %.1f s, analysed in %.1f s from Enter" % (seconds, time.time() - t0))
        gaps = d.execute_script("const g = document.querySelector('[data-test=tune-gaps]'); return g ? g.textContent : ''")
        if gaps:
            print("note: %s" % gaps, flush=True)
        measured = check_delays(found, rooms, args.truth_ms, "delays")
        # The response table open, for axe and the screenshot.
        summary = d.find_elements(By.CSS_SELECTOR, ".tune-response summary")[0]
        d.execute_script("arguments[0].scrollIntoView({block: 'center'}); arguments[0].focus()", summary)
        d.switch_to.active_element.send_keys(Keys.ENTER)
        if not d.execute_script("return document.querySelector('.tune-response').open"):
            fail("keyboard: Enter on \"Response and EQ\" did not open it")
        axe_check(d, "en")
        if args.screenshots:
            os.makedirs(args.screenshots, exist_ok=True)
            d.save_screenshot(os.path.join(args.screenshots, "tune-results.png"))

        eq = one(d, "tune-eq")
        d.execute_script("arguments[0].focus()", eq)
        d.switch_to.active_element.send_keys(Keys.SPACE)
        if not eq.is_selected():
            fail("apply: the EQ box did not tick from the keyboard")
        apply = one(d, "tune-apply")
        d.execute_script("arguments[0].focus()", apply)
        d.switch_to.active_element.send_keys(Keys.ENTER)
        wait(d, "document.getElementById('view-tune').dataset.applied === '1'", "Apply", args.timeout)
        listed = {r["name"]: r for r in leader.call("rooms.list")["rooms"]}
        # A pair's speakers are listed inside it, each with its own trim.
        trims = {r["name"]: r.get("latencyMs") for r in listed.values()}
        for r in listed.values():
            for sp in r.get("speakers") or []:
                trims[sp["name"]] = sp.get("latencyMs")
        for speaker, (_, want, _) in found.items():
            got = trims.get(speaker)
            if got is None or abs(got - float(want)) > 0.001:
                fail("apply: %s latencyMs %r, the page showed %s" % (speaker, got, want))
        for room in rooms:
            preset = (listed[room].get("eq") or {}).get("preset") or ""
            if not preset.startswith("Tuned "):
                fail("apply: %s has EQ preset %r, not a Tuned one" % (room, preset))
        ok("apply", "trims %s; presets %s" % (", ".join("%s %.3f ms" % (s, trims[s]) for s in found),
                                              ", ".join(repr(listed[r]["eq"]["preset"]) for r in rooms)))
        if args.pair_only:
            return

        one(d, "tune-file").send_keys(os.path.abspath(args.recording))
        again = results(d, rooms, args.timeout, "the chosen file")
        by_file = check_delays(again, rooms, args.truth_ms, "file")
        if abs(by_file - measured) > LIMIT_MS:
            fail("file: %.3f ms from the file, %.3f ms from the microphone" % (by_file, measured))
    finally:
        d.quit()
    if args.pair_only:
        return  # (returned above, after apply)

    d = browser(args.recording, lang="ko")
    try:
        open_screen(d, args.url, rooms, args.timeout)
        title = d.execute_script("return document.querySelector('#view-tune h1').textContent")
        if title != "방 맞추기":
            fail("ko: the screen's title is %r" % title)
        axe_check(d, "ko")
        if args.screenshots:
            d.save_screenshot(os.path.join(args.screenshots, "tune-ko.png"))
    finally:
        d.quit()
    refusals(args.url, rooms)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--url", required=True)
    ap.add_argument("--control-port", type=int, required=True)
    ap.add_argument("--recording", required=True)
    ap.add_argument("--rooms", required=True)
    ap.add_argument("--truth-ms", type=float, required=True)
    ap.add_argument("--screenshots")
    ap.add_argument("--timeout", type=float, default=60)
    ap.add_argument("--pair-only", action="store_true")
    args = ap.parse_args()
    try:
        run(args)
    except Failure as e:
        print("FAIL " + str(e), flush=True)
        sys.exit(1)
    except WebDriverException as e:
        print("FAIL the browser: " + str(e).splitlines()[0], flush=True)
        sys.exit(1)
    print("all checks passed", flush=True)


if __name__ == "__main__":
    main()
