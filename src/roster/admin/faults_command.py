"""`roster faults ACTION ... --http URL`: the fault plane of a test-mode broker
(broker/faults), over its console's HTTP port (POST/GET/DELETE /faults:
broker/faults/http.py). `--user`/`--password-file` give HTTP Basic credentials when the
broker's listeners use SASL (the console then asks for a SCRAM user's).

    roster faults fail-next API ERROR [--count N|--always] [--client-id C] [--group G]
                                      [--member-id M]
    roster faults delay API MS [--count N] [--client-id C] [--group G] [--member-id M]
    roster faults drop-connection API [--count N] [--client-id C] [--group G] [--member-id M]
    roster faults refuse-coordinator SECONDS [--error NOT_COORDINATOR] [--group G]
    roster faults fail-next-commit GROUP [--count N] [--error NOT_COORDINATOR]
    roster faults fail-appends [--count N] [--topic T]
    roster faults remove-member GROUP (--member-id M | --instance-id I)
    roster faults fence-instance GROUP INSTANCE_ID
    roster faults force-rebalance GROUP
    roster faults list
    roster faults clear [--id N]

The broker answers; this prints its answer as JSON: exit 0, or 1 with the broker's reason
(not in test mode, an unknown API or error, a bad argument) or when it cannot be reached.
"""
from __future__ import annotations

import argparse

from roster.admin.console_http import add_console_options, ask


def _scoped(parser) -> None:
    parser.add_argument("--client-id", help="only requests from this client id")
    parser.add_argument("--group", dest="group_id", help="only requests naming this group")
    parser.add_argument("--member-id", help="only requests carrying this member id")


def add_faults(commands, run) -> None:
    faults = commands.add_parser(
        "faults", help="inject faults into a test-mode broker (roster serve --test-mode): "
                       "errors, delays, dropped connections, coordinator refusals, a full disk "
                       "(docs/testing-faults.md)")
    actions = faults.add_subparsers(dest="action", required=True, metavar="ACTION")
    made = []

    def action(name: str, help: str):
        parser = actions.add_parser(name, help=help)
        made.append(parser)
        return parser

    fail = action("fail-next", "answer the next requests of an API with an error")
    fail.add_argument("api", help="Kafka's API name (OffsetCommit) or key (8)")
    fail.add_argument("error", help="Kafka's error name (NOT_COORDINATOR) or code (16)")
    fail.add_argument("--count", type=int, default=1, help="how many requests (default 1)")
    fail.add_argument("--always", action="store_true", help="every such request until cleared")
    _scoped(fail)
    delay = action("delay", "answer requests of an API late")
    delay.add_argument("api")
    delay.add_argument("ms", type=float, help="milliseconds")
    delay.add_argument("--count", type=int, help="how many requests (default: until cleared)")
    _scoped(delay)
    drop = action("drop-connection", "close the connection a request of an API arrives on")
    drop.add_argument("api")
    drop.add_argument("--count", type=int, default=1)
    _scoped(drop)
    refuse = action("refuse-coordinator", "refuse group coordinator requests for a while")
    refuse.add_argument("seconds", type=float)
    refuse.add_argument("--error", default="NOT_COORDINATOR",
                        help="NOT_COORDINATOR, COORDINATOR_LOAD_IN_PROGRESS or "
                             "COORDINATOR_NOT_AVAILABLE")
    refuse.add_argument("--group", dest="group_id", help="only this group's requests")
    commit = action("fail-next-commit", "fail a group's next offset commits")
    commit.add_argument("group")
    commit.add_argument("--count", type=int, default=1)
    commit.add_argument("--error", default="NOT_COORDINATOR")
    appends = action("fail-appends", "fail the next appends as on a full disk")
    appends.add_argument("--count", type=int, default=1)
    appends.add_argument("--topic")
    remove = action("remove-member", "remove a member from its group")
    remove.add_argument("group")
    remove.add_argument("--member-id")
    remove.add_argument("--instance-id")
    fence = action("fence-instance", "fence a static member: another process takes its id")
    fence.add_argument("group")
    fence.add_argument("instance_id")
    rebalance = action("force-rebalance", "start a classic group's rebalance now")
    rebalance.add_argument("group")
    action("list", "the faults in force")
    clear = action("clear", "remove every fault (or one: --id)")
    clear.add_argument("--id", type=int, dest="rule_id")
    for parser in made:
        add_console_options(parser, run)


ARGUMENTS = {"fail-next": ("api", "error", "count", "client_id", "group_id", "member_id"),
             "delay": ("api", "ms", "count", "client_id", "group_id", "member_id"),
             "drop-connection": ("api", "count", "client_id", "group_id", "member_id"),
             "refuse-coordinator": ("seconds", "error", "group_id"),
             "fail-next-commit": ("group", "count", "error"),
             "fail-appends": ("count", "topic"),
             "remove-member": ("group", "member_id", "instance_id"),
             "fence-instance": ("group", "instance_id"),
             "force-rebalance": ("group",)}
OPTIONAL = {"client_id", "group_id", "member_id", "topic", "instance_id"}


def document_of(args: argparse.Namespace) -> dict:
    """The POST /faults body of an action's arguments."""
    document = {"action": args.action.replace("-", "_")}
    for name in ARGUMENTS[args.action]:
        value = getattr(args, name)
        if value is None and name in OPTIONAL:
            continue
        if name == "count" and getattr(args, "always", False):
            value = None
        if name == "ms" and float(value).is_integer():
            value = int(value)
        document[name] = value
    return document


def run(args: argparse.Namespace) -> int:
    import json
    if args.action == "list":
        document = ask(args, "roster faults", "/faults")
    elif args.action == "clear":
        query = "" if args.rule_id is None else f"?id={args.rule_id}"
        document = ask(args, "roster faults", f"/faults{query}", "DELETE")
    else:
        document = ask(args, "roster faults", "/faults", "POST", document_of(args))
    if document is None:
        return 1
    print(json.dumps(document, indent=2))
    return 0
