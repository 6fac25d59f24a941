#!/usr/bin/python3
"""Browser test of pairing in the web app's Rooms view, against a running
leader with `speakers = paired` and two speakers asking to join.

Usage (Debian's /usr/bin/python3 with python3-selenium, chromium, chromium-driver):

    /usr/bin/python3 Tests/Web/pairing_test.py --url http://127.0.0.1:WEBPORT \
        --control-port CONTROLPORT --approve kitchen --code-room den --code 123456 [--screenshot FILE]

Checks, one line each: the Rooms view shows "kitchen wants to join" with
Allow and Deny buttons that have accessible names; Allow pairs it
(speakers.list, read over JSON-RPC); the request disappears from the page;
the code field pairs the speaker waiting for its code. Exit status 1 and a
message on the first failure.
"""

import argparse
import json
import os
import socket
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from webapp_test import Failure, Leader, Page, fail, ok, wait_leader  # noqa: E402
from selenium.common.exceptions import WebDriverException  # noqa: E402
from selenium.webdriver.common.by import By  # noqa: E402


def paired(leader, name):
    r = leader.call("speakers.list")
    names = [s["name"] for s in r.get("paired", [])]
    return (name in names, names)


def run(args):
    leader = Leader(args.control_port)
    page = Page(args.url, args.timeout)
    try:
        page.wait("!!document.querySelector('[data-test=tab-rooms]')", "the page to load")
        page.tab("rooms")
        sel = '[data-test=pair-request][data-name="%s"]' % args.approve
        _, t = page.wait("document.querySelector('%s')" % sel.replace("'", "\\'"), "the request of %s to show" % args.approve)
        card = page.d.find_element(By.CSS_SELECTOR, sel)
        text = card.text
        if "%s wants to join" % args.approve not in text.replace("\n", " "):
            fail("the request reads %r" % text)
        allow = page.one("pair-allow", card)
        deny = page.one("pair-deny", card)
        if allow.get_attribute("aria-label") != "Allow " + args.approve or deny.get_attribute("aria-label") != "Deny " + args.approve:
            fail("the buttons' accessible names are %r and %r" % (allow.get_attribute("aria-label"), deny.get_attribute("aria-label")))
        region = page.d.find_element(By.CSS_SELECTOR, "[data-test=pairing]")
        if region.get_attribute("role") != "region" or region.get_attribute("aria-live") != "polite":
            fail("the pairing box is not a live region")
        ok("request shown", "'%s wants to join' with Allow and Deny" % args.approve)
        if args.screenshot:
            page.d.save_screenshot(args.screenshot)
        page.tap(allow, "Allow")
        names = wait_leader(leader, lambda: paired(leader, args.approve), "%s paired" % args.approve, args.timeout)
        ok("allowed", "paired: %s" % ", ".join(names))
        page.wait("!document.querySelector('%s')" % sel.replace("'", "\\'"), "the request to go once decided")
        ok("request gone", "after Allow")

        page.wait("document.querySelector('[data-test=pair-code]')", "the code field for %s" % args.code_room)
        field = page.one("pair-code")
        field.send_keys(args.code[:3] + " " + args.code[3:])
        page.tap(page.one("pair-submit"), "Pair")
        names = wait_leader(leader, lambda: paired(leader, args.code_room), "%s paired by code" % args.code_room, args.timeout)
        ok("paired by code", "paired: %s" % ", ".join(names))

        if args.sendspin_token:
            # "Pair a Sendspin player": open it, paste the token the player shows, Pair.
            box = page.one("sendspin-pairing")
            page.tap(box.find_element(By.TAG_NAME, "summary"), "Pair a Sendspin player")
            field = page.one("sendspin-token")
            if field.get_attribute("aria-label") != "Pair a Sendspin player":
                fail("the token field's accessible name is %r" % field.get_attribute("aria-label"))
            field.send_keys("  " + args.sendspin_token.lower() + " ")
            page.tap(page.one("sendspin-token-submit"), "Pair (Sendspin)")
            page.wait("document.querySelector('[data-test=sendspin-token]').value === ''", "the token field to clear once kept")
            ok("Sendspin token", "kept by the leader (the field cleared)")
    finally:
        page.quit()


def main():
    ap = argparse.ArgumentParser(description="Browser test of pairing in Tutti's web app.")
    ap.add_argument("--url", required=True)
    ap.add_argument("--control-port", type=int, required=True)
    ap.add_argument("--approve", required=True)
    ap.add_argument("--code-room", required=True)
    ap.add_argument("--code", required=True)
    ap.add_argument("--sendspin-token", help="a Pairing PSK token (SP:0…) to paste into the Sendspin field")
    ap.add_argument("--screenshot")
    ap.add_argument("--timeout", type=float, default=10)
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
