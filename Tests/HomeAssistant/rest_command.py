#!/usr/bin/python3
"""Home Assistant's rest_command, as docs/sound.md configures it, sent the way
Home Assistant sends it: the YAML blocks are read from the document itself
(so the test and the page cannot drift apart), the payload and the URL are
rendered with Jinja2's sandbox (Home Assistant's template engine) from the
automation's `data`, `!secret` is resolved from the given secrets, and the
request goes out with the configured method, headers and content type.

Usage (Debian's /usr/bin/python3 with python3-jinja2 and python3-yaml):

    /usr/bin/python3 Tests/HomeAssistant/rest_command.py --doc docs/sound.md \
        --host 127.0.0.1:PORT --secret tutti_bearer="Bearer TOKEN" [--message TEXT] [--lang ko]

  --host     where `tutti.local:8080` is (Home Assistant resolves it by mDNS)
  --message  the automation's message instead of the document's example
  --lang     adds `lang` to the automation's data

Prints one JSON line: {"payload": the rendered body, "status": HTTP status,
"response": the body parsed}. Exit status 2 when the document has no such
configuration.
"""

import argparse
import json
import re
import sys
import urllib.request

import yaml
from jinja2.sandbox import ImmutableSandboxedEnvironment


def blocks(text):
    return re.findall(r"```yaml\n(.*?)```", text, re.S)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--doc", required=True)
    ap.add_argument("--host", required=True)
    ap.add_argument("--secret", action="append", default=[])
    ap.add_argument("--message")
    ap.add_argument("--lang")
    args = ap.parse_args()
    secrets = dict(s.split("=", 1) for s in args.secret)

    class Loader(yaml.SafeLoader):
        pass

    Loader.add_constructor("!secret", lambda loader, node: secrets[loader.construct_scalar(node)])
    text = open(args.doc, encoding="utf-8").read()
    config = action = None
    for b in blocks(text):
        doc = yaml.load(b, Loader=Loader)
        if isinstance(doc, dict) and "rest_command" in doc:
            config = doc["rest_command"]
        elif isinstance(doc, dict) and "action" in doc:
            action = doc["action"]
    if not config or not action:
        print("no rest_command configuration and automation in %s" % args.doc, file=sys.stderr)
        return 2
    step = next(a for a in action if str(a.get("service", "")).startswith("rest_command."))
    name = step["service"].split(".", 1)[1]
    command = config[name]
    data = dict(step.get("data", {}))
    if args.message is not None:
        data["message"] = args.message
    if args.lang is not None:
        data["lang"] = args.lang

    env = ImmutableSandboxedEnvironment()
    url = env.from_string(command["url"]).render(**data).replace("tutti.local:8080", args.host)
    payload = env.from_string(command["payload"]).render(**data)
    headers = {k: env.from_string(str(v)).render(**data) for k, v in command.get("headers", {}).items()}
    if "content_type" in command:
        headers["Content-Type"] = command["content_type"]
    request = urllib.request.Request(url, data=payload.encode("utf-8"), headers=headers,
                                     method=command.get("method", "get").upper())
    try:
        with urllib.request.urlopen(request, timeout=10) as r:  # Home Assistant's default timeout
            status, body = r.status, r.read()
    except urllib.error.HTTPError as e:
        status, body = e.code, e.read()
    print(json.dumps({"payload": payload, "status": status, "response": json.loads(body or b"null")}, ensure_ascii=False))
    return 0


if __name__ == "__main__":
    sys.exit(main())
