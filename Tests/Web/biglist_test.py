#!/usr/bin/python3
"""Browser test of a long list: a one-letter prefix search in a library of
100,000 tracks (WebAppTests.makeBigLibrary), scrolled from its first result to
its last in headless Chromium at phone size.

Usage (Debian's /usr/bin/python3 with python3-selenium, chromium and chromium-driver):

    /usr/bin/python3 Tests/Web/biglist_test.py --url http://127.0.0.1:WEBPORT \
        --control-port CONTROLPORT --query q [--step 800] [--frames-json FILE]

Checks, one line each with its figure; exit status 1 and a message on the
first failure:
  total      library.search pages (500 a call) give the query's every result:
             the total the page must reach;
  first      the page shows the first page of results, in the leader's order;
  keyboard   Tab from the first result walks on past the rows first drawn;
  scroll     scrolled --step px an animation frame (a fast fling) until the
             list is complete: the page loaded every result (its count is the
             total, its last row is the leader's last result) while it never
             held more than 120 rows in the page at once.
Printed, not checked (timing belongs to bench/): the animation frame
intervals while scrolling (requestAnimationFrame deltas: median, p99, max,
and how many frames took over 50 ms), and the same with the page still (the
machine's floor).
"""

import json
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from webapp_test import Leader, Page, fail, ok, run_checks  # noqa: E402
from selenium.webdriver.common.keys import Keys  # noqa: E402

MAX_ROWS = 120

SCROLL = """
const step = arguments[0], limit = arguments[1], done = arguments[arguments.length - 1];
const out = document.querySelector('[data-test=search-results]');
const deltas = [];
let last = performance.now(), maxRows = 0, stalls = 0;
const t0 = last;
function frame(now) {
  deltas.push(now - last);
  last = now;
  const rows = document.querySelectorAll('[data-test=search-result]').length;
  if (rows > maxRows) maxRows = rows;
  const complete = out.dataset.complete === 'true';
  const bottom = window.scrollY + window.innerHeight >= document.documentElement.scrollHeight - 2;
  if (complete && bottom) {
    const list = Array.from(document.querySelectorAll('[data-test=search-result]'));
    const lastRow = list[list.length - 1];
    return done({ deltas, maxRows, count: +out.dataset.count, lastId: lastRow ? +lastRow.dataset.trackId : null,
                  lastPos: lastRow ? +lastRow.getAttribute('aria-posinset') : null, setsize: lastRow ? +lastRow.getAttribute('aria-setsize') : null,
                  ms: now - t0, rows: list.length });
  }
  if (now - t0 > limit) return done({ timeout: true, count: +out.dataset.count, complete, maxRows });
  window.scrollBy(0, step);
  requestAnimationFrame(frame);
}
requestAnimationFrame(frame);
"""


def pct(xs, p):
    s = sorted(xs)
    return s[min(len(s) - 1, int(round(p / 100 * (len(s) - 1))))]


def run(args):
    leader = Leader(args.control_port)
    q = args.query
    ids, offset, calls, t0 = [], 0, 0, time.monotonic()
    while True:
        r = leader.call("library.search", {"query": q, "limit": 500, "offset": offset})
        calls += 1
        ids += [t["id"] for t in r["tracks"]]
        offset += len(r["tracks"])
        if not r["hasMore"] or not r["tracks"]:
            break
    total = len(ids)
    if total < 1000:
        fail("%r finds %d tracks: the test needs a long list (1,000 or more)" % (q, total))
    if len(set(ids)) != total:
        fail("library.search's pages repeat tracks (%d ids, %d distinct)" % (total, len(set(ids))))
    stats = leader.call("library.stats")
    ok("total", "%r in %d tracks: %d results (%d calls of 500, %.1f s)" % (q, stats["tracks"], total, calls, time.monotonic() - t0))

    page = Page(args.url, args.timeout)
    try:
        page.wait("document.getElementById('banner').hidden", "the page to connect")
        page.d.execute_script("location.hash = '#/search'")
        page.wait("document.querySelector('[data-test=search-input]')", "the search screen")
        box = page.one("search-input")
        box.send_keys(q)
        page.wait("(function(){ const r = document.querySelector('[data-test=search-results]'); return r && r.dataset.query === %s; })()" % json.dumps(q),
                  "results for %r" % q)
        shown = page.d.execute_script("return Array.from(document.querySelectorAll('[data-test=search-result]')).map((r) => +r.dataset.trackId)")
        if not shown or shown != ids[:len(shown)]:
            fail("the first rows %s are not the leader's first results %s" % (shown[:5], ids[:5]))
        if len(shown) > MAX_ROWS:
            fail("%d rows in the page before scrolling (at most %d: only what is on screen)" % (len(shown), MAX_ROWS))
        ok("first", "%d rows in the page, the leader's first %d results in order" % (len(shown), len(shown)))

        # Tab walks on past the rows drawn: focus brings its neighbours in, in order.
        page.d.execute_script("const b = document.querySelector('[data-test=search-result-play]'); b.focus();")
        # As many Tabs as the first row has focusable controls, times the rows: well past the rows first drawn.
        stops = page.d.execute_script("return document.querySelector('[data-test=search-result]')"
                                      ".querySelectorAll('button, a[href], input, [tabindex]:not([tabindex=\"-1\"])').length")
        presses = max(1, stops) * (len(shown) + 10)
        for _ in range(presses):
            page.d.switch_to.active_element.send_keys(Keys.TAB)
        pos = page.d.execute_script("const li = document.activeElement.closest('[data-test=search-result]');"
                                    " return li ? +li.getAttribute('aria-posinset') : null;")
        if not pos or pos < len(shown) + 10:
            fail("after %d Tabs from the first result focus is on result %s (want past %d)" % (presses, pos, len(shown) + 10))
        ok("keyboard", "%d Tabs from the first result: focus on result %d of the list (%d were drawn at first)" % (presses, pos, len(shown)))
        page.d.execute_script("document.activeElement.blur(); window.scrollTo(0, 0)")

        # The machine's own frame interval, the page still: what scrolling is compared with.
        idle = page.d.execute_async_script("""
            const done = arguments[arguments.length - 1], d = [];
            let last = performance.now();
            function f(now) { d.push(now - last); last = now; if (d.length > 120) done(d.slice(1)); else requestAnimationFrame(f); }
            requestAnimationFrame(f);""")
        page.d.set_script_timeout(args.limit + 30)
        r = page.d.execute_async_script(SCROLL, args.step, args.limit * 1000)
        if r.get("timeout"):
            fail("after %d s of scrolling the list holds %d of %d results (complete: %s)" % (args.limit, r["count"], total, r["complete"]))
        if r["count"] != total or r["lastId"] != ids[-1] or r["lastPos"] != total or r["setsize"] != total:
            fail("at the end: count %d, last row track %s at %s of %s; the leader: %d results, the last %d"
                 % (r["count"], r["lastId"], r["lastPos"], r["setsize"], total, ids[-1]))
        if r["maxRows"] > MAX_ROWS:
            fail("the page held %d rows at once while scrolling (at most %d)" % (r["maxRows"], MAX_ROWS))
        d = r["deltas"][1:]
        ok("scroll", "reached result %d of %d (track %d) in %.1f s, %d frames at %d px; at most %d rows in the page"
           % (r["count"], total, r["lastId"], r["ms"] / 1000, len(d), args.step, r["maxRows"]))
        fetches = page.d.execute_script("return performance.getEntriesByType('resource').length")
        print("frames      requestAnimationFrame intervals while scrolling: median %.1f ms, p99 %.1f ms, max %.1f ms, %d of %d over 50 ms"
              % (pct(d, 50), pct(d, 99), max(d), sum(1 for x in d if x > 50), len(d)), flush=True)
        print("idle        requestAnimationFrame intervals, the page still: median %.1f ms, p99 %.1f ms (the machine's floor)"
              % (pct(idle, 50), pct(idle, 99)), flush=True)
        if args.frames_json:
            with open(args.frames_json, "w") as f:
                json.dump({"query": q, "total": total, "step": args.step, "deltas": d, "idle": idle, "ms": r["ms"], "maxRows": r["maxRows"],
                           "resources": fetches}, f)
        severe = [l["message"] for l in page.d.get_log("browser") if l.get("level") == "SEVERE" and "favicon" not in l["message"]]
        if severe:
            fail("the browser console has errors: %s" % " | ".join(severe))
    finally:
        page.quit()


def main():
    def options(ap):
        ap.add_argument("--query", default="q")
        ap.add_argument("--step", type=int, default=800)
        ap.add_argument("--limit", type=float, default=300, help="seconds of scrolling at most")
        ap.add_argument("--frames-json")
    run_checks(run, "A one-letter search in a 100,000-track library, scrolled to its end.", options)


if __name__ == "__main__":
    main()
