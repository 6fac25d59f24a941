#!/usr/bin/python3
"""Browser test of the web app's languages and accessibility, against a
running leader with a library and the room given by --room connected.

Usage (Debian's /usr/bin/python3 with python3-selenium, chromium and
chromium-driver, and PyPI's axe-selenium-python):

    /usr/bin/python3 Tests/Web/i18n_test.py --url http://127.0.0.1:WEBPORT \
        --control-port CONTROLPORT --room kitchen [--screenshots DIR]

Checks, one line each with its figure; exit status 1 and a message on the
first failure:
  catalogue   every key the scripts use (t('…'), count('…'), the tabs, the
              states and the library's sections) is in the English
              (js/i18n.js) and the Korean (js/lang/ko.js) catalogue, and the
              two have the same keys and the same {placeholders};
  korean      Chromium started with --lang=ko: the page says lang="ko", and on
              Now playing, Queue, Search, Library, Rooms and Sound no text,
              label or placeholder is an English catalogue text (each screen
              shows Hangul);
  server      errors from the leader arrive in Korean: a group named as one
              that exists (New group, through the dialog) and an unknown room;
  focus       a dialog closed with Escape gives focus back to its button; a
              queue entry moved with its Down button keeps focus on that
              button; a tab and a library section move focus to the new
              screen's heading;
  volume      Now playing has a volume slider per room of the group; the
              arrow key moves the room's volume (rooms.list);
  axe         axe-core finds no violation of any impact (wcag2a,
              wcag2aa, wcag21aa) on any screen, in Korean (light and dark)
              and in English;
  setting     the language setting switches the page to English and is kept.
"""

import json
import os
import re
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from webapp_test import Failure, Leader, Page, fail, ok, run_checks, wait_leader  # noqa: E402,F401
from selenium.webdriver.common.by import By  # noqa: E402
from selenium.webdriver.common.keys import Keys  # noqa: E402
from selenium.webdriver.support.ui import Select  # noqa: E402

WEB = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "web", "js")
SCREENS = ["now", "queue", "search", "library", "rooms", "sound", "tune"]
# axe looks at these too: the library's sections with forms and grids.
AXE_SCREENS = SCREENS + ["library/albums", "library/genres", "library/playlists", "library/radio", "library/podcasts"]
STATES = ["playing", "paused", "stopped", "idle", "loading", "buffering", "error"]
SECTIONS = ["artists", "albums", "genres", "playlists", "favourites", "history", "radio", "podcasts"]
HANGUL = re.compile("[\uac00-\ud7a3]")


def catalogues(page):
    return page.d.execute_async_script(
        "const done = arguments[0]; Promise.all([import('./js/i18n.js'), import('./js/lang/ko.js')])"
        ".then(([en, ko]) => done({en: en.EN, ko: ko.default}), (e) => done({error: String(e)}));")


def placeholders(entry):
    texts = entry.values() if isinstance(entry, dict) else [entry]
    return sorted(set(n for text in texts for n in re.findall(r"\{([a-zA-Z]+)\}", text)))


def used_keys():
    """The catalogue keys the scripts name: in t()/count() calls (a ternary's
    two keys too), the tab labels, and the keys built from a list."""
    keys = set()
    for name in os.listdir(WEB):
        if not name.endswith(".js") or name == "i18n.js":
            continue
        src = open(os.path.join(WEB, name), encoding="utf-8").read()
        for m in re.finditer(r"\b(?:t|count)\(\s*([^()]*?)\s*[,)]", src):
            keys.update(re.findall(r"'([a-z]+\.[a-zA-Z.]+)'", m.group(1)))
        keys.update(re.findall(r"label: '(tab\.[a-z]+)'", src))
    keys.update("state." + s for s in STATES)
    keys.update("lib." + s for s in SECTIONS)
    keys.update("now.repeat." + m for m in ["off", "all", "one"])
    keys.update("chan." + c for c in ["stereo", "left", "right", "mono", "swap"])
    return keys


def check_catalogue(page):
    cats = catalogues(page)
    if "error" in cats:
        fail("cannot import js/i18n.js: %s" % cats["error"])
    en, ko = cats["en"], cats["ko"]
    if set(en) != set(ko):
        fail("keys only in English: %s; only in Korean: %s" % (sorted(set(en) - set(ko)), sorted(set(ko) - set(en))))
    for k in en:
        if placeholders(en[k]) != placeholders(ko[k]):
            fail("%s: placeholders %s in English, %s in Korean" % (k, placeholders(en[k]), placeholders(ko[k])))
    # A local named t (or count) hides the catalogue's function: its texts would throw.
    for name in sorted(os.listdir(WEB)):
        if name.endswith(".js") and name not in ("i18n.js", "store.js"):
            src = open(os.path.join(WEB, name), encoding="utf-8").read()
            hidden = re.findall(r"\b(?:const|let|var) (?:t|count)\b|\((?:t|count)\) =>|\bfor \(const (?:t|count) of", src)
            if hidden:
                fail("%s names a local t or count (%s): it hides the catalogue's function" % (name, hidden[:3]))
    used = used_keys()
    missing = sorted(k for k in used if k not in en)
    if missing:
        fail("keys the scripts use that no catalogue has: %s" % missing)
    unused = sorted(k for k in en if k not in used)
    if unused:
        fail("keys no script uses (remove them, or name them where they are built): %s" % unused)
    ok("catalogue", "%d keys in en and ko, same placeholders; %d used by the scripts, all present" % (len(en), len(used)))
    return en, ko


def visible_words(page):
    """Each visible element's own text, and the labels and placeholders of
    visible elements (what a person sees or a screen reader says)."""
    return page.d.execute_script("""
        const out = [];
        const shown = (el) => !!(el.offsetWidth || el.offsetHeight || el.getClientRects().length);
        for (const el of document.querySelectorAll('body *')) {
          if (el.closest('[hidden]') || el.tagName === 'SCRIPT' || el.tagName === 'STYLE' || el.tagName === 'NOSCRIPT') continue;
          const isSr = el.closest('.sr');
          if (!isSr && !shown(el)) continue;
          for (const n of el.childNodes) if (n.nodeType === 3 && n.textContent.trim()) out.push(n.textContent.trim());
          for (const a of ['aria-label', 'placeholder', 'title']) if (el.getAttribute(a)) out.push(el.getAttribute(a).trim());
        }
        return out;""")


def english_leftovers(words, en, ko):
    """English catalogue texts (without placeholders, not the same in Korean) among the words shown."""
    english = {v for k, v in en.items() if isinstance(v, str) and "{" not in v and v != ko.get(k)}
    return sorted(set(w for w in words if w in english))


def show(page, screen):
    page.dismiss_toasts()
    page.d.execute_script("location.hash = arguments[0]", "#/" + screen)
    page.wait("document.body.dataset.tab === %s" % json.dumps(screen.split("/")[0]), "the %s screen" % screen)
    time.sleep(0.3)  # the library draws its page when its data comes


def axe_check(page, label):
    from axe_selenium_python import Axe
    axe = Axe(page.d)
    axe.inject()
    found = {}
    for screen in AXE_SCREENS:
        show(page, screen)
        r = axe.run(options={"runOnly": {"type": "tag", "values": ["wcag2a", "wcag2aa", "wcag21aa"]}})
        for v in r["violations"]:
            found.setdefault("%s (%s)" % (v["id"], v.get("impact")), []).append(
                "%s: %s" % (screen, "; ".join("%s %s (%s)" % (n["target"], n.get("html", "")[:160], (n.get("failureSummary") or "").replace("\n", " ")[:200])
                                               for n in v["nodes"][:3])))
    if found:
        fail("axe in %s: %s" % (label, " | ".join("%s on %s" % (k, ", ".join(v)) for k, v in found.items())))
    ok("axe " + label, "0 violations on %d screens" % len(AXE_SCREENS))


def active(page):
    return page.d.execute_script("""
        const a = document.activeElement;
        const row = a && a.closest ? a.closest('li') : null;
        return { tag: a.tagName, test: a.getAttribute('data-test'), text: (a.textContent || '').trim(),
                 view: a.closest && a.closest('.view') ? a.closest('.view').id : null, row: row ? row.dataset.id : null };""")


def run(args):
    leader = Leader(args.control_port)
    main_name = [g for g in leader.call("groups.list")["groups"] if g["id"] == "main"][0]["name"]
    # Two tracks in the queue, for the move.
    tracks = leader.call("library.search", {"query": args.query or "", "limit": 5}).get("tracks", [])
    if len(tracks) < 2:
        fail("the library must have at least 2 tracks (found %d)" % len(tracks))
    leader.call("queue.clear")
    leader.call("queue.add", {"trackIds": [tracks[0]["id"], tracks[1]["id"]]})
    page = Page(args.url, args.timeout, lang="ko")
    try:
        page.wait("document.getElementById('banner') && document.getElementById('banner').hidden", "the page to connect")
        lang = page.d.execute_script("return [document.documentElement.lang, navigator.languages.join(',')]")
        if lang[0] != "ko":
            fail('the page says lang="%s" with the browser asking for %s' % (lang[0], lang[1]))
        ok("lang", 'html lang="%s"; navigator.languages %s' % tuple(lang))
        en, ko = check_catalogue(page)

        # Korean throughout: no English catalogue text on any screen.
        counts = []
        for screen in SCREENS:
            show(page, screen)
            words = visible_words(page)
            left = english_leftovers(words, en, ko)
            if left:
                fail("the %s screen shows English in Korean: %s" % (screen, left))
            hangul = sum(1 for w in words if HANGUL.search(w))
            if not hangul:
                fail("the %s screen shows no Korean: %s" % (screen, words[:20]))
            counts.append("%s %d/%d" % (screen, hangul, len(words)))
            if args.screenshots:
                page.d.execute_script("document.activeElement && document.activeElement.blur()")  # no focus ring in the pictures
                page.shot(args.screenshots, "ko-" + screen)
        ok("korean", "texts in Hangul per screen: " + ", ".join(counts))

        # An error from the leader, in Korean: a group name that is taken, through the dialog.
        show(page, "rooms")
        opener = page.one("group-new")
        page.d.execute_script("arguments[0].focus()", opener)
        opener.send_keys(Keys.ENTER)
        page.wait("!document.getElementById('modal').hidden && document.activeElement === document.querySelector('[data-test=modal-input]')",
                  "the New group dialog with focus in its field")
        page.one("modal-input").send_keys(main_name + Keys.ENTER)
        shown, _ = page.wait("(function(){ const t = [...document.querySelectorAll('[data-test=toast]')].map((x) => x.textContent);"
                             " return t.find((x) => x.indexOf('이미 있습니다') >= 0) || null; })()", "the leader's refusal in Korean")
        after = active(page)
        if after["test"] != "group-new":
            fail("after the dialog focus is on %s, not on the New group button" % after)
        ok("server error", "%r; focus back on New group after the dialog" % shown)
        refused = page.d.execute_async_script("""
            const done = arguments[0];
            import('./js/rpc.js').then((m) => m.call('groups.separate', { room: 'attic' })).then(() => done('accepted'), (e) => done(e.message));""")
        if "'attic'(이)라는 방이 없습니다" not in refused:
            fail("an unknown room is refused as %r" % refused)
        ok("unknown room", repr(refused))

        # A dialog closed with Escape: focus back on what opened it.
        page.dismiss_toasts()
        page.d.execute_script("arguments[0].focus()", page.one("group-new"))
        page.one("group-new").send_keys(Keys.ENTER)
        page.wait("!document.getElementById('modal').hidden", "the dialog")
        page.d.switch_to.active_element.send_keys(Keys.ESCAPE)
        page.wait("document.getElementById('modal').hidden", "the dialog to close")
        if active(page)["test"] != "group-new":
            fail("after Escape focus is on %s" % active(page))
        ok("focus dialog", "Escape: focus back on the New group button")

        # A route change: focus on the new screen's heading.
        page.d.execute_script("arguments[0].focus()", page.one("tab-queue"))
        page.one("tab-queue").send_keys(Keys.ENTER)
        page.wait("document.body.dataset.tab === 'queue'", "the queue screen")
        a = active(page)
        if a["tag"] != "H1" or a["view"] != "view-queue":
            fail("after the Queue tab focus is on %s, not the Queue heading" % a)
        # A queue move: focus stays on the moved entry's button.
        page.wait("document.querySelectorAll('[data-test=queue-row]').length === 2", "two entries in the queue")
        first = page.all("queue-row")[0]
        moved_id = first.get_attribute("data-id")
        down = page.one("queue-down", first)
        page.d.execute_script("arguments[0].focus()", down)
        down.send_keys(Keys.ENTER)
        wait_leader(leader, lambda: (str(leader.call("queue.list")["entries"][1]["id"]) == moved_id, leader.call("queue.list")["entries"]),
                    "the entry moved down", args.timeout)
        page.wait("document.querySelector('[data-test=queue-row][data-index=\"1\"]').dataset.id === %s" % json.dumps(moved_id), "the page to show the move")
        a = active(page)
        if a["row"] != moved_id or a["test"] != "queue-down":
            fail("after the move focus is on %s, not on entry %s's Down button" % (a, moved_id))
        said = page.one("queue-said").get_attribute("textContent")
        ok("focus queue", "the Queue tab → focus on its heading; the moved entry (id %s) keeps focus on its Down button; announced %r" % (moved_id, said))
        # A library section: its heading once drawn.
        show(page, "library/artists")
        page.d.execute_script("arguments[0].focus()", page.one("lib-albums"))
        page.one("lib-albums").send_keys(Keys.ENTER)
        page.wait("document.activeElement && document.activeElement.tagName === 'H1' && document.activeElement.closest('#view-library')"
                  " && document.activeElement.textContent === %s" % json.dumps(ko["lib.albums"]), "focus on the Albums heading")
        ok("focus route", "a tab and a library section move focus to the new heading (%r)" % ko["lib.albums"])

        # Volume on Now playing: the group's rooms, each a slider.
        show(page, "now")
        page.wait("document.querySelector('[data-test=np-room-volume][data-room=%s]')" % json.dumps(args.room), "the room's slider on Now playing")
        before = [r for r in leader.call("rooms.list")["rooms"] if r["name"] == args.room][0]["volume"]
        slider = page.d.find_element(By.CSS_SELECTOR, '[data-test="np-room-volume"][data-room="%s"]' % args.room)
        page.d.execute_script("arguments[0].focus()", slider)
        key = Keys.ARROW_LEFT if before > 50 else Keys.ARROW_RIGHT
        slider.send_keys(key)
        want = before - 1 if before > 50 else before + 1
        wait_leader(leader, lambda: ([r for r in leader.call("rooms.list")["rooms"] if r["name"] == args.room][0]["volume"] == want, want),
                    "the room's volume from Now playing", args.timeout)
        label = slider.get_attribute("aria-label")
        ok("volume", "%s: %d → %d from Now playing (%r, %r)" % (args.room, before, want, label, slider.get_attribute("aria-valuetext")))

        axe_check(page, "ko")
        page.scheme(True)
        axe_check(page, "ko dark")
        page.scheme(False)

        # The setting: English, kept on this phone.
        show(page, "sound")
        Select(page.one("settings-language")).select_by_value("en")
        page.wait("document.documentElement.lang === 'en' && document.getElementById('banner').hidden", "the page in English")
        kept = page.d.execute_script("return localStorage.getItem('tutti.lang')")
        tab = page.one("tab-queue").get_attribute("aria-label")
        if kept != "en" or tab != en["tab.queue"]:
            fail("after choosing English: kept %r, the Queue tab says %r" % (kept, tab))
        ok("setting", "English chosen and kept (%r); the Queue tab says %r" % (kept, tab))
        axe_check(page, "en")
        page.d.execute_script("localStorage.removeItem('tutti.lang')")
        severe = [l["message"] for l in page.d.get_log("browser") if l.get("level") == "SEVERE" and "favicon" not in l["message"]]
        if severe:
            fail("the browser console has errors: %s" % " | ".join(severe))
        ok("console", "no errors")
    finally:
        page.quit()


def main():
    def options(ap):
        ap.add_argument("--room", default="kitchen")
        ap.add_argument("--query")
    run_checks(run, "Languages and accessibility of Tutti's web app against a running leader.", options)


if __name__ == "__main__":
    main()
