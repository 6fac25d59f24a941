#!/usr/bin/python3
"""Browser test of the web app's login, against a leader with a password
that clients on this machine must give too (tuttid leader --password-file F
--password-on-loopback --web 127.0.0.1:PORT).

    /usr/bin/python3 Tests/Web/login_test.py --url http://127.0.0.1:PORT --password SECRET

Checks, one line each: the page asks for the password (a hidden field)
before it shows anything (the leader plays; the page stays idle); a wrong one is refused with a message and asked
again; the right one connects the page (the leader's state shows); after a
reload the page connects without asking (it kept the token, 64 random hex
digits); once every token is revoked (auth.revokeAll) a reload asks again and
a login connects; the console has no errors. Exit 1 on the first failure.
"""

import argparse
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from webapp_test import Page, Failure, fail, ok, WebDriverException  # noqa: E402


def modal_shown(page, what):
    page.wait("(function(){ const m = document.getElementById('modal'); const i = document.querySelector('[data-test=modal-input]');"
              " return m && !m.hidden && i && i.type === 'password'; })()", what)
    return page.one("modal-input")


def api(url, request, token):
    """One JSON-RPC request to POST /api with a bearer token, as a script sends it."""
    import json
    import urllib.request
    r = urllib.request.Request(url + "/api", data=json.dumps(request).encode(), method="POST",
                               headers={"Content-Type": "application/json", "Authorization": "Bearer " + token})
    with urllib.request.urlopen(r, timeout=10) as answer:
        return json.loads(answer.read())


def run(args):
    page = Page(args.url, args.timeout)
    try:
        t0 = time.monotonic()
        field = modal_shown(page, "the password dialog")
        if page.d.execute_script("return document.querySelector('[data-test=np-state]').dataset.state || 'idle'") != "idle":
            fail("the page shows the player's state before logging in")
        ok("asks", "password dialog (hidden field) after %d ms, nothing shown behind it" % ((time.monotonic() - t0) * 1000))
        field.send_keys("not the password")
        page.one("modal-ok").click()
        page.wait("[...document.querySelectorAll('[data-test=toast]')].some(t => /wrong password/i.test(t.textContent))", "'wrong password' shown")
        field = modal_shown(page, "the dialog again")
        ok("wrong password", "refused with 'wrong password', asked again")
        field.send_keys(args.password)
        page.one("modal-ok").click()
        page.wait("document.getElementById('banner').hidden && document.querySelector('[data-test=np-state]').dataset.state === 'playing'",
                  "the page to connect after the login and show the leader playing")
        ok("login", "connected; the page shows %r" % page.one("np-state").text)
        page.d.refresh()
        page.wait("document.getElementById('banner') && document.getElementById('banner').hidden"
                  " && document.querySelector('[data-test=np-state]').dataset.state === 'playing'", "the page to connect again after a reload")
        if page.d.execute_script("return !document.getElementById('modal').hidden"):
            fail("the page asked for the password again after a reload")
        ok("kept", "after a reload the page connected with its kept token, without asking")
        token = page.d.execute_script("return localStorage.getItem('tutti.token')") or ""
        if len(token) != 64 or any(c not in "0123456789abcdef" for c in token) or args.password in token:
            fail("the kept token is not a random 64-digit hex token: %r" % token)
        # Revoke every token (as `auth.revokeAll` from a script with its own token would): the page must ask again, not hang.
        reply = api(args.url, {"jsonrpc": "2.0", "id": 1, "method": "auth.revokeAll"}, token)
        if not isinstance(reply.get("result", {}).get("revoked"), int):
            fail("auth.revokeAll with the page's token as a bearer: %r" % reply)
        page.d.refresh()
        field = modal_shown(page, "the password dialog after every token was revoked")
        field.send_keys(args.password)
        page.one("modal-ok").click()
        page.wait("document.getElementById('banner').hidden && document.querySelector('[data-test=np-state]').dataset.state === 'playing'",
                  "the page to connect after logging in again")
        if page.d.execute_script("return localStorage.getItem('tutti.token')") == token:
            fail("the page kept the revoked token")
        ok("revoked", "after auth.revokeAll the page asked for the password again and kept a new token")
        severe = [l["message"] for l in page.d.get_log("browser") if l.get("level") == "SEVERE"]
        if severe:
            fail("the browser console has errors: %s" % " | ".join(severe))
        ok("console", "no errors")
    finally:
        page.quit()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--url", required=True)
    ap.add_argument("--password", required=True)
    ap.add_argument("--timeout", type=float, default=10)
    args = ap.parse_args()
    try:
        run(args)
    except Failure as e:
        print("FAIL %s" % e, flush=True)
        sys.exit(1)
    except WebDriverException as e:
        print("FAIL browser: %s" % str(e).splitlines()[0], flush=True)
        sys.exit(1)
    print("all checks passed", flush=True)


if __name__ == "__main__":
    main()
