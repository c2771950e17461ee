"""`roster clock advance SECONDS --http URL` and `roster clock show --http URL`: the broker
clock of a test-mode broker (broker/clock.py), over its console's HTTP port (POST
/clock/advance, GET /clock: broker/clock_http.py). `--user`/`--password-file` give HTTP Basic
credentials when the broker's listeners use SASL (the console then asks for a SCRAM user's).

The broker answers; this prints its answer: exit 0 with the new time, 1 with the broker's
reason (not in test mode, a bad number of seconds) or when it cannot be reached.
"""
from __future__ import annotations

import argparse
import sys


def add_clock(commands, run) -> None:
    clock = commands.add_parser(
        "clock", help="the broker clock of a test-mode broker (roster serve --test-mode): "
                      "advance it, show it (docs/testing.md)")
    actions = clock.add_subparsers(dest="action", required=True, metavar="ACTION")
    advance = actions.add_parser("advance", help="move the broker's time forward: every "
                                 "coordinator timer due by then fires at once")
    advance.add_argument("seconds", type=float, help="how far (seconds, >= 0)")
    show = actions.add_parser("show", help="how far the clock has been advanced, and its now")
    for parser in (advance, show):
        parser.add_argument("--http", required=True, metavar="URL",
                            help="the broker's console, e.g. http://127.0.0.1:8080 "
                                 "(roster serve --http-port)")
        parser.add_argument("--user", help="a SCRAM user, when the listeners use SASL")
        parser.add_argument("--password-file", metavar="FILE",
                            help="the user's password is its first line ('-': stdin)")
        parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    import base64   # here: `roster serve` builds this parser and should not pay for urllib
    import json
    import urllib.error
    import urllib.request
    base = args.http.rstrip("/")
    if args.action == "advance":
        request = urllib.request.Request(
            f"{base}/clock/advance", method="POST",
            data=json.dumps({"seconds": args.seconds}).encode(),
            headers={"Content-Type": "application/json"})
    else:
        request = urllib.request.Request(f"{base}/clock")
    if args.user:
        password = _password(args.password_file)
        token = base64.b64encode(f"{args.user}:{password}".encode()).decode()
        request.add_header("Authorization", f"Basic {token}")
    try:
        with urllib.request.urlopen(request, timeout=60) as answer:
            document = json.loads(answer.read())
    except urllib.error.HTTPError as refused:
        text = refused.read().decode(errors="replace").strip()
        try:
            text = json.loads(text)["error"]
        except (ValueError, KeyError, TypeError):
            pass
        print(f"roster clock: {text} (HTTP {refused.code})", file=sys.stderr)
        return 1
    except (urllib.error.URLError, OSError) as exc:
        print(f"roster clock: cannot reach {base}: {getattr(exc, 'reason', exc)}",
              file=sys.stderr)
        return 1
    if args.action == "advance":
        print(f"advanced {document['advanced_s']:g} s ({document['total_advanced_s']:g} s in "
              f"all); broker time now {document['now_ms']} ms")
    else:
        print(f"advanced {document['total_advanced_s']:g} s in all; broker time now "
              f"{document['now_ms']} ms")
    return 0


def _password(path: str | None) -> str:
    if not path:
        return ""
    if path == "-":
        return sys.stdin.readline().rstrip("\n")
    with open(path) as file:
        return file.readline().rstrip("\n")
