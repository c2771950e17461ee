"""The plumbing of the CLI commands that speak to a test-mode broker's console over HTTP
(`roster clock`, `roster faults`): the --http/--user/--password-file options, HTTP Basic
credentials when the broker's listeners use SASL (the console then asks for a SCRAM user's), and
the broker's refusal or an unreachable console told on stderr.
"""
from __future__ import annotations

import sys


def add_console_options(parser, run) -> None:
    parser.add_argument("--http", required=True, metavar="URL",
                        help="the broker's console, e.g. http://127.0.0.1:8080 "
                             "(roster serve --http-port)")
    parser.add_argument("--user", help="a SCRAM user, when the listeners use SASL")
    parser.add_argument("--password-file", metavar="FILE",
                        help="the user's password is its first line ('-': stdin)")
    parser.set_defaults(run=run)


def ask(args, command: str, path: str, method: str | None = None,
        body: dict | None = None) -> dict | None:
    """The console's JSON answer to `method path` (with `body` as JSON); None once the broker's
    refusal, or why it cannot be reached, has been printed after `command` (`roster clock`)."""
    import json   # here: `roster serve` builds the parsers and should not pay for urllib
    import urllib.error
    import urllib.request
    base = args.http.rstrip("/")
    if body is None:
        request = urllib.request.Request(f"{base}{path}", method=method)
    else:
        request = urllib.request.Request(
            f"{base}{path}", method=method, data=json.dumps(body).encode(),
            headers={"Content-Type": "application/json"})
    if args.user:
        request.add_header("Authorization",
                           basic_authorization(args.user, _password(args.password_file)))
    try:
        with urllib.request.urlopen(request, timeout=60) as answer:
            return json.loads(answer.read())
    except urllib.error.HTTPError as refused:
        text = refused.read().decode(errors="replace").strip()
        try:
            text = json.loads(text)["error"]
        except (ValueError, KeyError, TypeError):
            pass
        print(f"{command}: {text} (HTTP {refused.code})", file=sys.stderr)
        return None
    except (urllib.error.URLError, OSError) as exc:
        print(f"{command}: cannot reach {base}: {getattr(exc, 'reason', exc)}",
              file=sys.stderr)
        return None


def basic_authorization(user: str, password: str) -> str:
    """An Authorization header's value: HTTP Basic credentials of a SCRAM user, which the
    console asks for when the broker's listeners use SASL."""
    import base64
    return "Basic " + base64.b64encode(f"{user}:{password}".encode()).decode()


def _password(path: str | None) -> str:
    if not path:
        return ""
    if path == "-":
        return sys.stdin.readline().rstrip("\n")
    with open(path) as file:
        return file.readline().rstrip("\n")
