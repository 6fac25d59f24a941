#!/usr/bin/python3
"""Browser test of a Sendspin player's pairing-code card in the web app's
Rooms view, against a running leader (`speakers = paired`) with a Sendspin
player waiting for the six digits it shows.

Usage (Debian's /usr/bin/python3 with python3-selenium, chromium, chromium-driver):

    /usr/bin/python3 Tests/Web/sendspin_code_test.py --url http://127.0.0.1:WEBPORT \
        --control-port CONTROLPORT --name Study --codes PLAYER.jsonl [--screenshots DIR]

PLAYER.jsonl is what Tests/Sendspin/sendspin_code_pairing_client.py writes:
its last {"kind": "code"} record is the code the player shows, read as a
person reads its screen.

Checks, one line each: the card reads "Study wants to join" and says to type
the six digits it shows, with a field whose accessible name is "Pairing code
of Study" and a Deny button; five digits are refused on the page (nothing
sent); a wrong code shows the leader's refusal with the tries left; the right
one, typed grouped, pairs the player (speakers.pending, read over JSON-RPC,
no longer lists it) and the card goes. Exit status 1 and a message on the
first failure.
"""

import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from webapp_test import Leader, Page, fail, ok, run_checks, wait_leader  # noqa: E402
from selenium.webdriver.common.by import By  # noqa: E402


def shown_code(path):
    codes = []
    with open(path, encoding="utf-8") as f:
        for line in f:
            r = json.loads(line)
            if r.get("kind") == "code":
                codes.append(r["code"])
    if not codes:
        fail("the player shows no code (%s)" % path)
    return codes[-1]


def toasts(page):
    return "(function(){ return [...document.querySelectorAll('[data-test=toast]')].map((t) => t.textContent).join(' | '); })()"


def run(args):
    leader = Leader(args.control_port)
    page = Page(args.url, args.timeout)
    name = args.name
    try:
        page.wait("!!document.querySelector('[data-test=tab-rooms]')", "the page to load")
        page.tab("rooms")
        sel = '[data-test=sendspin-code-request][data-name="%s"]' % name
        page.wait("document.querySelector('%s')" % sel.replace("'", "\\'"), "the code card of %s" % name)
        card = page.d.find_element(By.CSS_SELECTOR, sel)
        text = card.text.replace("\n", " ")
        if "%s wants to join" % name not in text or "type the six digits it shows" not in text:
            fail("the card reads %r" % text)
        field = page.one("sendspin-code", card)
        if field.get_attribute("aria-label") != "Pairing code of " + name or field.get_attribute("placeholder") != "123-456":
            fail("the field's accessible name is %r, its placeholder %r" % (field.get_attribute("aria-label"), field.get_attribute("placeholder")))
        if page.one("pair-deny", card).get_attribute("aria-label") != "Deny " + name:
            fail("the Deny button's accessible name is %r" % page.one("pair-deny", card).get_attribute("aria-label"))
        ok("card shown", "'%s wants to join · type the six digits it shows', field and Deny named" % name)
        if args.screenshots:
            page.d.save_screenshot(os.path.join(args.screenshots, "sendspin-code.png"))

        code = shown_code(args.codes)
        field.send_keys(code[:5])
        page.tap(page.one("sendspin-code-submit", card), "Pair")
        shown, _ = page.wait(toasts(page), "the page to refuse five digits")
        if "six digits" not in shown:
            fail("five digits: the page says %r" % shown)
        ok("five digits", "refused on the page: %r" % shown)

        wrong = "%06d" % ((int(code) + 1) % 1_000_000)
        field.clear()
        field.send_keys(wrong[:3] + "-" + wrong[3:])
        page.tap(page.one("sendspin-code-submit", card), "Pair")
        # Toasts start with a capital letter.
        refusal = "That is not %s's code (4 more tries on this connection)" % name
        shown, _ = page.wait("(%s).includes(%s)" % (toasts(page), json.dumps(refusal)), "the leader's refusal of a wrong code")
        ok("wrong code", "the leader says %r" % refusal)

        field = page.one("sendspin-code", page.d.find_element(By.CSS_SELECTOR, sel))
        field.clear()
        field.send_keys(code[:3] + "-" + code[3:])
        page.tap(page.one("sendspin-code-submit", page.d.find_element(By.CSS_SELECTOR, sel)), "Pair")

        def pending():
            names = [p["name"] for p in leader.call("speakers.pending").get("pending", [])]
            return (name not in names, names)
        wait_leader(leader, pending, "%s paired, no longer pending" % name, args.timeout)
        page.wait("!document.querySelector('%s')" % sel.replace("'", "\\'"), "the card to go once paired")
        ok("paired", "%s typed as %s-%s: no longer pending, the card gone" % (name, code[:3], code[3:]))
    finally:
        page.quit()


def main():
    def options(ap):
        ap.add_argument("--name", required=True)
        ap.add_argument("--codes", required=True)
    run_checks(run, "Browser test of a Sendspin player's pairing-code card.", options)


if __name__ == "__main__":
    main()
