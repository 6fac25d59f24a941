#!/usr/bin/python3
"""Browser test of the web app's Podcasts screen against a running leader.

    /usr/bin/python3 Tests/Web/podcasts_test.py --url http://127.0.0.1:WEBPORT \
        --control-port CONTROLPORT --feed FEEDURL [--screenshots DIR] [--timeout 10]

The feed must have at least two episodes, whose descriptions hold markup
(PodcastTests' feedgen feed: HTML with a <script>). Checks, one line each:
subscribe by URL from the page (podcasts.list agrees); the show's artwork,
author and description; the episodes newest first as podcasts.episodes
lists them; descriptions shown as text only (no element from the feed in
the page, no script run); play an episode from its row (player.status
plays its URL); its progress bar once the leader kept a position; mark
another played from its row (podcasts.episodes agrees); no errors.
"""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from webapp_test import Leader, Page, fail, ok, run_checks, wait_leader  # noqa: E402


def run(args):
    leader = Leader(args.control_port)
    T = args.timeout
    page = Page(args.url + "/#/library/podcasts", T)
    try:
        page.wait("document.querySelector('[data-test=podcast-url]')", "the Podcasts screen")
        page.one("podcast-url").send_keys(args.feed)
        page.tap(page.one("podcast-subscribe"), "Subscribe")
        shows = wait_leader(leader, lambda: (lambda p: (len(p) == 1, p))(leader.call("podcasts.list")["podcasts"]), "podcasts.list to hold the show", T)
        show = shows[0]
        expected = leader.call("podcasts.episodes", {"podcast": show["id"]})["episodes"]
        page.wait("location.hash === '#/library/podcast/%d' && document.querySelectorAll('[data-test=episode-row]').length === %d"
                  % (show["id"], len(expected)), "the show's page with its %d episodes" % len(expected))
        ok("subscribe", "%r from the page: podcasts.list id %d, %d episodes" % (show["title"], show["id"], len(expected)))

        art = page.d.execute_script("const i = document.querySelector('.albumhead [data-test=podcast-art]'); return i && i.getAttribute('src');")
        if art != show.get("image"):
            fail("the show's artwork is %r, the feed's is %r" % (art, show.get("image")))
        author = page.one("podcast-author").text
        if author != show.get("author"):
            fail("author %r, podcasts.list says %r" % (author, show.get("author")))
        ok("show", "artwork %s, author %r" % (art, author))

        titles = page.d.execute_script("return [...document.querySelectorAll('[data-test=episode-row] .t')].map(e => e.textContent);")
        want = [e["title"] for e in expected]
        if titles != want:
            fail("episodes %s, podcasts.episodes (newest first) %s" % (titles, want))
        ok("episodes", "newest first: %s" % " | ".join(titles))

        # Feed text is text: what the description says is there, and none of its markup became elements.
        texts = page.d.execute_script("return [...document.querySelectorAll('[data-test=episode-description]')].map(e => [e.textContent, e.children.length]);")
        if len(texts) != len(expected) or any(t[1] != 0 for t in texts):
            fail("descriptions %s: each one text, with no element in it" % texts)
        for shown, e in zip(texts, expected):
            if shown[0] != e.get("description"):
                fail("description shown %r, the leader's %r" % (shown[0], e.get("description")))
        scripts = page.d.execute_script("return document.querySelectorAll('#view-library script, #view-library p, #view-library b').length;")
        if scripts != 0:
            fail("markup from the feed reached the page: %d elements" % scripts)
        ok("text only", "%d descriptions as text, e.g. %r" % (len(texts), texts[0][0][:40]))

        # Play the oldest episode from its row.
        oldest = expected[-1]
        row = page.d.find_element("css selector", '[data-test=episode-row][data-id="%d"] button.main' % oldest["id"])
        page.tap(row, "the row of %r" % oldest["title"])
        st = wait_leader(leader, lambda: (lambda s: (s["file"] == oldest["url"] and s["state"] == "playing", s))(leader.call("player.status")),
                         "player.status to play %s" % oldest["url"], T)
        ok("play", "%r: player.status %s at %.1f s" % (oldest["title"], st["state"], st["position"]))
        wait_leader(leader, lambda: (lambda e: (e["position"] >= 2, e["position"]))(
            next(x for x in leader.call("podcasts.episodes", {"podcast": show["id"]})["episodes"] if x["id"] == oldest["id"])),
            "the leader to keep a position of 2 s or more", T + 10)
        page.d.get(args.url + "/#/library/podcasts")
        page.wait("document.querySelector('[data-test=podcast-row]')", "the list of shows")
        page.tap(page.one("podcast-row").find_element("css selector", "button.main"), "the show")
        progress, _ = page.wait("(function(){ const p = document.querySelector('[data-test=episode-row][data-id=\"%d\"] [data-test=episode-progress]');"
                                " return p && +p.value >= 1 && +p.value; })()" % oldest["id"], "a progress bar on the playing episode")
        leader.call("player.stop")
        ok("progress", "%r at %s s of %s" % (oldest["title"], progress, oldest.get("duration")))

        # Mark the newest played from its row.
        newest = expected[0]
        button = page.d.find_element("css selector", '[data-test=episode-row][data-id="%d"] [data-test=episode-played]' % newest["id"])
        page.tap(button, "Mark played")
        wait_leader(leader, lambda: (lambda e: (e["played"], e["played"]))(
            next(x for x in leader.call("podcasts.episodes", {"podcast": show["id"]})["episodes"] if x["id"] == newest["id"])),
            "podcasts.episodes to say %r is played" % newest["title"], T)
        page.wait("document.querySelector('[data-test=episode-row][data-id=\"%d\"]').dataset.state === 'played'" % newest["id"],
                  "the row to show it played")
        ok("mark played", "%r played (podcasts.episodes and the row)" % newest["title"])
        if args.screenshots:
            os.makedirs(args.screenshots, exist_ok=True)
            page.shot(args.screenshots, "podcast")

        errors = page.errors_shown()
        if errors:
            fail("the page showed errors: %s" % " | ".join(errors))
        severe = [l["message"] for l in page.d.get_log("browser") if l.get("level") == "SEVERE" and "favicon" not in l["message"]]
        if severe:
            fail("the browser console has errors: %s" % " | ".join(severe))
        ok("console", "no errors")
    finally:
        page.quit()


def main():
    run_checks(run, "Browser test of the web app's Podcasts screen.", lambda ap: ap.add_argument("--feed", required=True))


if __name__ == "__main__":
    main()
