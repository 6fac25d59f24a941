#!/usr/bin/python3
"""Browser test of the web app's screens that issue 32 found missing, against
a running leader with a library (WebAppTests.makeMusic: two genres, 10-minute
tracks), the room kitchen connected, and an MP3 on a local HTTP server.

Usage (Debian's /usr/bin/python3 with python3-selenium, chromium and
chromium-driver, and PyPI's axe-selenium-python):

    /usr/bin/python3 Tests/Web/screens_test.py --url http://127.0.0.1:WEBPORT \
        --control-port CONTROLPORT --stream http://127.0.0.1:PORT/episode.mp3

Checks, one line each with its figure; exit status 1 and a message on the
first failure. Everything below is done with the keyboard alone (focus, then
Enter, Tab, arrow keys), as a person without a pointer would:
  keyboard    a track found by search is played: Tab from the search field to
              its row, Enter (player.status names it);
  mark        while it plays, its row in the search results, on its album's
              page and in the queue says aria-current and shows the mark; no
              other row does;
  skip        +15 s and −15 s on Now playing move the position by 15 s
              (player.status, within 3 s);
  playlist    a track added to an existing playlist from its row's "Add to a
              playlist" dialog (playlists.entries), the playlist's entries
              moved down with focus kept on the moved entry's button, one
              removed;
  genres      Library → Genres lists library.genres; a genre lists its albums
              (library.albums {genre}); an album lists its tracks;
  offline     a network track in the queue saved for offline from its row
              (cache.list has it, the button says it is saved);
  rooms       a room moved into another group and back by the arrow keys on
              its group picker (groups.list follows);
  axe         axe-core finds no violation of any impact (wcag2a, wcag2aa,
              wcag21aa) on these screens, light and dark;
  console     no errors in the browser's console.
"""

import json
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from webapp_test import Leader, Page, fail, ok, run_checks, wait_leader  # noqa: E402
from selenium.webdriver.common.keys import Keys  # noqa: E402
from selenium.webdriver.common.by import By  # noqa: E402
from selenium.webdriver.support.ui import Select  # noqa: E402


def show(page, route):
    page.dismiss_toasts()
    page.d.execute_script("location.hash = arguments[0]", "#/" + route)
    page.wait("document.body.dataset.tab === %s" % json.dumps(route.split("/")[0]), "the %s screen" % route)


def focus(page, el):
    page.d.execute_script("arguments[0].scrollIntoView({block: 'center'}); arguments[0].focus();", el)


def press(page, el, what, key=Keys.ENTER):
    """Focus, then a key: what a keyboard does (no click)."""
    page.dismiss_toasts()
    focus(page, el)
    if page.d.switch_to.active_element != el:
        fail("%s cannot take focus" % what)
    el.send_keys(key)


def active_test(page):
    return page.d.execute_script("const a = document.activeElement; const li = a && a.closest('li');"
                                 " return [a.getAttribute('data-test'), li ? li.dataset.key || li.dataset.index || null : null];")


def axe_all(page, label, routes):
    from axe_selenium_python import Axe
    axe = Axe(page.d)
    axe.inject()
    found = []
    for route, prepare in routes:
        show(page, route)
        if prepare:
            prepare()
        time.sleep(0.3)
        r = axe.run(options={"runOnly": {"type": "tag", "values": ["wcag2a", "wcag2aa", "wcag21aa"]}})
        for v in r["violations"]:
            found.append("%s: %s (%s) on %s" % (route, v["id"], v.get("impact"), "; ".join(str(n["target"]) for n in v["nodes"][:3])))
        page.d.execute_script("const m = document.getElementById('modal'); if (!m.hidden) document.querySelector('[data-test=modal-cancel]').click();")
    if found:
        fail("axe in %s: %s" % (label, " | ".join(found)))
    ok("axe " + label, "0 violations on %d screens" % len(routes))


def run(args):
    leader = Leader(args.control_port)
    T = args.timeout
    shots = args.screenshots
    if shots:
        os.makedirs(shots, exist_ok=True)
    wait_leader(leader, lambda: (leader.call("library.stats")["tracks"] >= 5, leader.call("library.stats")), "the library", T)
    leader.call("queue.clear")
    page = Page(args.url, T)
    try:
        page.wait("document.getElementById('banner').hidden", "the page to connect")

        # keyboard: search, Tab to the first result, Enter.
        want = leader.call("library.search", {"query": "evening", "limit": 10})["tracks"][0]
        show(page, "search")
        box = page.one("search-input")
        focus(page, box)
        box.send_keys("evening")
        page.wait("(function(){ const r = document.querySelector('[data-test=search-results]'); return r && r.dataset.query === 'evening'; })()",
                  "results for 'evening'")
        for _ in range(30):  # Tab until the first result's play button
            page.d.switch_to.active_element.send_keys(Keys.TAB)
            if active_test(page)[0] == "search-result-play":
                break
        else:
            fail("Tab never reached a search result from the search field")
        page.d.switch_to.active_element.send_keys(Keys.ENTER)
        st = wait_leader(leader, lambda: (lambda s: (s.get("state") == "playing" and s.get("trackId") == want["id"], s))(leader.call("player.status")),
                         "the found track to play", T)
        ok("keyboard", "Tab ×%d from the search field, Enter: %r plays" % (_ + 1, st.get("title")))

        # mark: the playing track's rows, and only they.
        page.wait("document.querySelector('[data-test=search-result][aria-current=true]')", "the mark in the search results")
        marked = page.d.execute_script(
            "return Array.from(document.querySelectorAll('li[aria-current=true]')).filter((li) => !li.hidden && li.offsetParent)"
            ".map((li) => [li.dataset.test, +li.dataset.trackId || li.dataset.uri, !!li.querySelector('[data-test=playing-mark]'),"
            " li.querySelector('.main').getAttribute('aria-label')])")
        if len(marked) != 1 or marked[0][1] != want["id"] or not marked[0][2] or "now" not in marked[0][3]:
            fail("search results: marked rows %s, want only track %d with its mark and label" % (marked, want["id"]))
        show(page, "library/album/%s/%s" % (want.get("albumArtist") or want["artist"], want["album"]))
        page.wait("document.querySelectorAll('#view-library [data-test=track-row]').length > 1", "the album's tracks")
        rows = page.d.execute_script("return Array.from(document.querySelectorAll('#view-library [data-test=track-row]'))"
                                     ".map((li) => [+li.dataset.trackId, li.getAttribute('aria-current')])")
        if [r[0] for r in rows if r[1] == "true"] != [want["id"]]:
            fail("album page: rows %s, only %d should be current" % (rows, want["id"]))
        show(page, "queue")
        page.wait("document.querySelector('[data-test=queue-row][aria-current=true] [data-test=playing-mark]')", "the mark in the queue")
        ok("mark", "search, album (%d rows) and queue mark only %r" % (len(rows), want["title"]))

        # skip: ±15 s.
        show(page, "now")
        page.wait("!document.querySelector('[data-test=skip-forward]').disabled", "±15 s to be enabled")
        for test, by in (("skip-forward", 15), ("skip-back", -15)):
            before = leader.call("player.status")["position"]
            press(page, page.one(test), test)
            after = wait_leader(leader, lambda: (lambda p: (abs(p - (before + by)) < 3, p))(leader.call("player.status")["position"]),
                                "%s to move the position by %d s from %.1f" % (test, by, before), T)
            label = page.one(test).get_attribute("aria-label")
            ok("skip", "%s (%r): %.1f s → %.1f s" % (test, label, before, after))
        page.shot(shots, "now-skip")

        # playlist: add the playing track's neighbour to an existing playlist, move, remove.
        tracks = leader.call("library.search", {"query": "aurora", "limit": 10})["tracks"]
        first, second = tracks[0], tracks[1]
        pl = leader.call("playlists.create", {"name": "Road trip"})
        leader.call("playlists.add", {"id": pl["id"], "trackIds": [first["id"]]})
        show(page, "search")
        box = page.one("search-input")
        box.clear()
        focus(page, box)
        box.send_keys("aurora")
        page.wait("(function(){ const r = document.querySelector('[data-test=search-results]'); return r && r.dataset.query === 'aurora'; })()",
                  "results for 'aurora'")
        row = page.d.find_element(By.CSS_SELECTOR, '[data-test=search-result][data-track-id="%d"]' % second["id"])
        press(page, page.one("search-result-playlist", row), "Add to a playlist")
        page.wait("document.activeElement && document.activeElement.dataset.test === 'playlist-pick'", "the dialog's playlist picker to take focus")
        if page.one("playlist-new-name").is_displayed():
            fail("the new playlist's name field shows while an existing playlist is picked")
        if shots:
            page.d.save_screenshot(os.path.join(shots, "add-to-playlist.png"))
        picker = page.d.switch_to.active_element
        Select(picker).select_by_value(str(pl["id"]))
        for _ in range(4):  # Tab to the dialog's Add button (past Cancel; the hidden name field takes no focus)
            page.d.switch_to.active_element.send_keys(Keys.TAB)
            if active_test(page)[0] == "modal-ok":
                break
        else:
            fail("Tab from the playlist picker never reached the dialog's Add button")
        page.d.switch_to.active_element.send_keys(Keys.ENTER)
        entries = wait_leader(leader, lambda: (lambda e: (len(e) == 2, e))(leader.call("playlists.entries", {"id": pl["id"]})["entries"]),
                              "the track to be added to the playlist", T)
        if [e["id"] for e in entries] != [first["id"], second["id"]]:
            fail("playlist entries %s" % [e["title"] for e in entries])
        page.wait("document.activeElement && document.activeElement.dataset.test === 'search-result-playlist'", "focus back on the row's button")
        show(page, "library/playlist/%d" % pl["id"])
        page.wait("document.querySelectorAll('[data-test=playlist-entry]').length === 2", "the playlist's two entries")
        down = page.d.find_element(By.CSS_SELECTOR, '[data-test=playlist-entry][data-key="0"] [data-test=playlist-down]')
        press(page, down, "Move down")
        wait_leader(leader, lambda: (lambda e: ([x["id"] for x in e] == [second["id"], first["id"]], [x["title"] for x in e]))(
            leader.call("playlists.entries", {"id": pl["id"]})["entries"]), "the entries to be swapped", T)
        page.wait("(function(){ const a = document.activeElement, li = a && a.closest('li');"
                  " return a.dataset.test === 'playlist-down' && li && li.dataset.key === '1' && +li.dataset.trackId === %d; })()" % first["id"],
                  "focus to stay on the moved entry's Move down button")
        said = page.one("playlist-said").get_attribute("textContent")
        if shots:
            page.shot(shots, "playlist")
        remove = page.d.find_element(By.CSS_SELECTOR, '[data-test=playlist-entry][data-key="0"] [data-test=playlist-remove]')
        press(page, remove, "Remove")
        wait_leader(leader, lambda: (lambda e: ([x["id"] for x in e] == [first["id"]], [x["title"] for x in e]))(
            leader.call("playlists.entries", {"id": pl["id"]})["entries"]), "the first entry to be removed", T)
        page.wait("document.querySelectorAll('[data-test=playlist-entry]').length === 1", "one entry on the page")
        ok("playlist", "added %r to \"Road trip\" from search, moved it (%r), removed it; focus kept" % (second["title"], said))

        # genres: Library → Genres → a genre → an album.
        genres = leader.call("library.genres")["genres"]
        show(page, "library/genres")
        page.wait("document.querySelectorAll('[data-test=genre-row]').length === %d" % len(genres), "%d genre rows" % len(genres))
        names = page.d.execute_script("return Array.from(document.querySelectorAll('[data-test=genre-row]')).map((r) => r.dataset.genre)")
        if names != [g["name"] for g in genres]:
            fail("genre rows %s, library.genres %s" % (names, [g["name"] for g in genres]))
        genre = genres[-1]["name"]
        row = page.d.find_element(By.CSS_SELECTOR, '[data-test=genre-row][data-genre=%s] button' % json.dumps(genre))
        press(page, row, "the genre %s" % genre)
        albums = leader.call("library.albums", {"genre": genre})["albums"]
        page.wait("decodeURIComponent(location.hash) === %s && document.querySelectorAll('#view-library [data-test=album-tile]').length === %d"
                  % (json.dumps("#/library/genre/" + genre), len(albums)), "the albums of %s" % genre)
        tile = page.d.find_element(By.CSS_SELECTOR, '#view-library [data-test=album-tile]')
        press(page, tile, "an album of the genre")
        page.wait("document.querySelectorAll('#view-library [data-test=track-row]').length === %d" % albums[0]["tracks"], "the album's tracks")
        ok("genres", "%s; %s: %s; its first album %d tracks" % (", ".join("%s (%d)" % (g["name"], g["tracks"]) for g in genres),
                                                               genre, [a["name"] for a in albums], albums[0]["tracks"]))

        # offline: a network track in the queue, saved from its row.
        leader.call("queue.add", {"uris": [args.stream]})
        show(page, "queue")
        page.wait("document.querySelector('[data-test=queue-offline]')", "the stream row's Save for offline button")
        button = page.one("queue-offline")
        press(page, button, "Save for offline")
        cached = wait_leader(leader, lambda: (lambda c: (any(e["url"] == args.stream for e in c["entries"]), c))(leader.call("cache.list")),
                             "the stream to be in the cache", T)
        page.wait("document.querySelector('[data-test=queue-offline]').dataset.saved === 'true'", "the button to say it is saved")
        entry = [e for e in cached["entries"] if e["url"] == args.stream][0]
        ok("offline", "%s saved (%d bytes); the button says %r" % (args.stream, entry["size"], page.one("queue-offline").get_attribute("aria-label")))

        # rooms: a room moved into a group and back with the keyboard alone: focus its group
        # picker, then arrow keys (a closed <select> changes and fires change on each).
        room = "kitchen"
        upstairs = leader.call("groups.create", {"name": "Upstairs"})["id"]
        show(page, "rooms")
        page.wait("(function(){ const s = document.querySelector('[data-test=room][data-room=%s] [data-test=room-group]');"
                  " return s && Array.from(s.options).some((o) => o.value === %s); })()" % (json.dumps(room), json.dumps(upstairs)),
                  "the %s card's group picker offering Upstairs" % room)

        def group_of(room):
            return next((g["id"] for g in leader.call("groups.list")["groups"] if room in g["rooms"]), None)

        def pick_with_arrows(want):
            picker = page.one("room-group", page.room(room))
            options = page.d.execute_script("return Array.from(arguments[0].options).map((o) => o.value)", picker)
            here = options.index(picker.get_attribute("value"))
            key = Keys.ARROW_DOWN if options.index(want) > here else Keys.ARROW_UP
            press(page, picker, "the %s group picker" % room, key)
            for _ in range(abs(options.index(want) - here) - 1):
                page.d.switch_to.active_element.send_keys(key)
            return wait_leader(leader, lambda: (lambda g: (g == want, g))(group_of(room)), "%s in group %s" % (room, want), T)
        pick_with_arrows(upstairs)
        page.wait("(function(){ const c = document.querySelector('[data-test=room][data-room=%s]');"
                  " const s = c && c.closest('[data-test=group]'); return s && s.dataset.group === %s; })()" % (json.dumps(room), json.dumps(upstairs)),
                  "the %s card under Upstairs" % room)
        pick_with_arrows("main")
        ok("rooms", "%s moved into Upstairs (%s) and back to main with the arrow keys on its group picker; groups.list agrees" % (room, upstairs))

        # axe on the screens above, light and dark, the add-to-playlist dialog open on search.
        def open_dialog():
            page.wait("document.querySelector('[data-test=search-result-playlist]')", "a search result")
            page.d.execute_script("document.querySelector('[data-test=search-result-playlist]').click()")
            page.wait("document.querySelector('[data-test=playlist-pick]')", "the dialog")
        routes = [("now", None), ("queue", None), ("search", None), ("search", open_dialog), ("library/genres", None),
                  ("library/genre/" + genre, None), ("library/playlist/%d" % pl["id"], None), ("library/artists", None)]
        axe_all(page, "light", routes)
        page.scheme(True)
        axe_all(page, "dark", routes)
        page.scheme(False)

        severe = [l["message"] for l in page.d.get_log("browser") if l.get("level") == "SEVERE" and "favicon" not in l["message"]]
        if severe:
            fail("the browser console has errors: %s" % " | ".join(severe))
        ok("console", "no errors")
    finally:
        page.quit()


def main():
    run_checks(run, "The screens issue 32 found missing, against a running leader.", lambda ap: ap.add_argument("--stream", required=True))


if __name__ == "__main__":
    main()
