"""`roster clock advance SECONDS --http URL` and `roster clock show --http URL`: the broker
clock of a test-mode broker (broker/clock.py), over its console's HTTP port (POST
/clock/advance, GET /clock: broker/clock_http.py). `--user`/`--password-file` give HTTP Basic
credentials when the broker's listeners use SASL (the console then asks for a SCRAM user's).

The broker answers; this prints its answer: exit 0 with the new time, 1 with the broker's
reason (not in test mode, a bad number of seconds) or when it cannot be reached.
"""
from __future__ import annotations

import argparse

from roster.admin.console_http import add_console_options, ask


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
        add_console_options(parser, run)


def run(args: argparse.Namespace) -> int:
    if args.action == "advance":
        document = ask(args, "roster clock", "/clock/advance", "POST",
                       {"seconds": args.seconds})
    else:
        document = ask(args, "roster clock", "/clock")
    if document is None:
        return 1
    if args.action == "advance":
        print(f"advanced {document['advanced_s']:g} s ({document['total_advanced_s']:g} s in "
              f"all); broker time now {document['now_ms']} ms")
    else:
        print(f"advanced {document['total_advanced_s']:g} s in all; broker time now "
              f"{document['now_ms']} ms")
    return 0

