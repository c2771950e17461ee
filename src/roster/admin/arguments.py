"""Argument types and Kafka spellings for the `roster` command line.

Every type names its option in its error ("argument --port: 70000 is not a port (0-65535)"),
so a typo never reads "invalid literal for int() with base 10". The Kafka spellings let a
kafka-topics / kafka-consumer-groups / kafka-acls command line carry over: the action as a
flag (`--describe`), `--bootstrap-servers`, `--group` instead of the positional group, `--topic`
instead of the positional topic, and `--replication-factor 1`.
"""
from __future__ import annotations

import argparse
import datetime
import os
import re
from pathlib import Path

DEFAULT_BOOTSTRAP = "localhost:9092"
HIGHEST_PORT = 65535
PORTS = f"0-{HIGHEST_PORT}; 0 picks a free one"


def port(text: str) -> int:
    """A TCP port: 0 (the system picks a free one) to 65535. Anything else would wrap modulo
    65536 inside the socket layer and listen somewhere the user never asked for."""
    value = _integer(text, f"a port ({PORTS})")
    if not 0 <= value <= HIGHEST_PORT:
        raise argparse.ArgumentTypeError(f"{text} is not a port ({PORTS})")
    return value


def positive(text: str) -> int:
    value = _integer(text, "a number")
    if value < 1:
        raise argparse.ArgumentTypeError(f"{text} must be at least 1")
    return value


def offset(text: str) -> int:
    value = _integer(text, "an offset")
    if value < 0:
        raise argparse.ArgumentTypeError(f"{text} is not an offset (0 or more)")
    return value


def shift(text: str) -> int:
    return _integer(text, "a number of records (negative: back)")


def partition_list(text: str) -> list[int]:
    """P[,P...]: partition numbers."""
    values = [_integer(part, "a partition number") for part in text.split(",") if part.strip()]
    if not values or any(v < 0 for v in values):
        raise argparse.ArgumentTypeError(f"{text!r} is not a list of partitions (e.g. 0,1,2)")
    return values


def replication_factor(text: str) -> int:
    """Accepted for kafka-topics' sake; one broker holds one copy, so only 1 is possible."""
    value = _integer(text, "a replication factor")
    if value != 1:
        raise argparse.ArgumentTypeError(
            f"{value}: roster is a single broker, so every partition has exactly one replica "
            "(give 1, or leave it out)")
    return value


def datetime_ms(text: str) -> int:
    """kafka-consumer-groups' --to-datetime: YYYY-MM-DDTHH:mm:SS.sss, in the local time zone
    unless a zone is given (Z, +01:00), as Kafka reads it. Returns epoch milliseconds."""
    try:
        when = datetime.datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"{text!r} is not a date and time (YYYY-MM-DDTHH:mm:SS.sss, local time unless a "
            "zone such as Z or +01:00 follows)") from None
    if when.tzinfo is None:
        when = when.astimezone()   # local time, as Kafka's tool takes a zone-less time
    return int(when.timestamp() * 1000)


_DURATION = re.compile(r"P(?:(\d+)D)?(?:T(?:(\d+)H)?(?:(\d+)M)?(?:(\d+(?:\.\d+)?)S)?)?",
                       re.IGNORECASE)


def duration_ms(text: str) -> int:
    """kafka-consumer-groups' --by-duration: an ISO 8601 duration, PnDTnHnMnS (P1D, PT30M,
    P2DT3H). Returns milliseconds."""
    found = _DURATION.fullmatch(text.strip())
    if not found or not any(found.groups()) or text.strip().upper().endswith("T"):
        raise argparse.ArgumentTypeError(
            f"{text!r} is not a duration (PnDTnHnMnS: P1D, PT30M, P2DT3H)")
    days, hours, minutes, seconds = (float(g or 0) for g in found.groups())
    return int((((days * 24 + hours) * 60 + minutes) * 60 + seconds) * 1000)


def topic_partitions(text: str) -> tuple[str, list[int] | None]:
    """kafka-consumer-groups' --topic: TOPIC (every partition) or TOPIC:P[,P...]."""
    name, sep, partitions = text.partition(":")
    if not name:
        raise argparse.ArgumentTypeError(f"{text!r}: give TOPIC or TOPIC:P[,P...]")
    return name, partition_list(partitions) if sep else None


def _integer(text: str, what: str) -> int:
    try:
        return int(text.strip())
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not {what}") from None


def report_path(out: Path, group: str | None) -> Path:
    """Where `roster report --out` writes: into a directory as GROUP.html (or
    rebalance-report.html for every group), else the file named, with .html added when it has
    no .html/.htm suffix (a browser shows an extension-less file as text)."""
    if out.is_dir() or str(out).endswith(("/", os.sep)):
        name = re.sub(r"[^A-Za-z0-9._-]", "_", group) if group else "rebalance-report"
        return out / f"{name}.html"
    if out.suffix.lower() in (".html", ".htm"):
        return out
    return out.with_name(out.name + ".html")


# -- options a Kafka user types anywhere ---------------------------------------------------------

def connection_options(parser, *, defaults: bool = False) -> None:
    """--bootstrap-server (also Kafka's plural) and --command-config. Given on several levels
    (before the command, before or after the action), so every level leaves them unset unless
    typed (`defaults` is for parsers that stand alone); settle() fills in the defaults."""
    unset = {} if defaults else {"default": argparse.SUPPRESS}
    parser.add_argument("--bootstrap-server", "--bootstrap-servers", dest="bootstrap_server",
                        metavar="HOST:PORT", **({"default": DEFAULT_BOOTSTRAP} if defaults
                                                else unset),
                        help=f"the broker to talk to (default: {DEFAULT_BOOTSTRAP})")
    parser.add_argument("--command-config", metavar="FILE", **unset,
                        help="client properties for a secured broker (security.protocol, "
                             "ssl.truststore.location, sasl.mechanism, sasl.jaas.config, ...; "
                             "docs/security.md)")


def group_option(parser, *, many: bool = False) -> None:
    """kafka-consumer-groups' --group, beside the positional group (repeatable where the
    command takes several groups)."""
    parser.add_argument("--group", dest="group_options", action="append",
                        default=argparse.SUPPRESS, metavar="GROUP",
                        help="the group (Kafka's spelling of the positional argument)"
                             + ("; repeatable" if many else ""))


def topic_option(parser) -> None:
    """kafka-topics' --topic, beside the positional topic name."""
    parser.add_argument("--topic", dest="topic_options", action="append",
                        default=argparse.SUPPRESS, metavar="TOPIC",
                        help="the topic (Kafka's spelling of the positional argument)")


# kafka-topics, kafka-consumer-groups and kafka-acls name the action with a flag: the action
# roster's command takes instead (group commands: (command, action, extra arguments)).
_ACTION_FLAGS = {
    "topics": {"--create": ("topics", "create"), "--list": ("topics", "list"),
               "--describe": ("topics", "describe"), "--delete": ("topics", "delete"),
               "--alter": ("topics", "alter")},
    "groups": {"--list": ("groups", "list"), "--describe": ("groups", "describe"),
               "--delete": ("groups", "delete"), "--reset-offsets": ("offsets", "reset"),
               "--delete-offsets": ("offsets", "delete")},
    "acls": {"--add": ("acls", "add"), "--list": ("acls", "list"),
             "--remove": ("acls", "remove")},
}
_ACTION_FLAGS["offsets"] = _ACTION_FLAGS["groups"]
_VALUED = {"--log-level", "--bootstrap-server", "--bootstrap-servers", "--command-config",
           "--group"}


def kafka_actions(argv: list[str]) -> list[str]:
    """`roster groups --describe --group G` as `roster groups describe --group G`: a Kafka
    tool's action flag becomes roster's action word, right after the command (where the
    action's parser then takes every option that follows, whatever their order). Kafka's
    --describe prints the offsets view; `topics --alter --partitions N` grows the topic."""
    start = _command_index(argv)
    if start >= len(argv) or argv[start] not in _ACTION_FLAGS:
        return argv
    flags = _ACTION_FLAGS[argv[start]]
    given = [a for a in argv[start + 1:] if a in flags]
    if len(given) != 1:
        return argv
    rest = [a for a in argv[start + 1:] if a != given[0]]
    command, action = flags[given[0]]
    if action == "alter" and "--partitions" in rest:
        action = "add-partitions"
    if command == "groups" and action == "describe" and \
            not {"--members", "--state", "--offsets"} & set(rest):
        rest.append("--offsets")   # Kafka's default view
    return argv[:start] + [command, action] + rest


def command_of(argv: list[str]) -> str | None:
    """The command word of a command line, or None when it has none or asks for help before
    it (the help lists every command)."""
    start = _command_index(argv)
    if start >= len(argv) or {"-h", "--help"} & set(argv[:start]):
        return None
    return argv[start]


def _command_index(argv: list[str]) -> int:
    """Where the command word is: after the options that may come before it."""
    start = 0
    while start < len(argv) and argv[start].startswith("-"):
        start += 2 if argv[start] in _VALUED else 1
    return start


def settle(args) -> str | None:
    """Fill in the connection options' defaults and merge a Kafka spelling (--group, --topic)
    into the positional argument it stands for (`args.spelled`: positional, option, many,
    required); returns a usage error, or None."""
    if not hasattr(args, "bootstrap_server"):
        args.bootstrap_server = DEFAULT_BOOTSTRAP
    if not hasattr(args, "command_config"):
        args.command_config = None
    if not getattr(args, "spelled", None):
        return None
    positional, option, many, required = args.spelled
    given = getattr(args, positional)
    given = list(given) if many else [] if given is None else [given]
    merged = list(dict.fromkeys(given + (getattr(args, option, None) or [])))
    what = positional.rstrip("s").replace("name", "topic")
    if not many and len(merged) > 1:
        return f"one {what} please, got {', '.join(merged)}"
    if not merged and required and not getattr(args, "all_groups", False):
        flag = "--group" if option == "group_options" else "--topic"
        return f"which {what}? give it as an argument or with {flag}"
    setattr(args, positional, merged if many else (merged[0] if merged else None))
    return None
