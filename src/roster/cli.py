"""The `roster` command: `serve` runs a broker; the other commands talk to a running one."""
from __future__ import annotations

import argparse
import logging
import sys
import time
from pathlib import Path

from roster.admin import groups as group_commands
from roster.admin import offsets as offset_commands
from roster.admin import topics as topic_commands
from roster.admin.client import AdminClient, AdminError
from roster.config import BrokerConfig, ConfigError, parse_assignments
from roster.security.client import SecurityConfigError

DEFAULT_BOOTSTRAP = "localhost:9092"


def _admin(args) -> AdminClient:
    """The admin client for a command: --bootstrap-server, and --command-config FILE (a Java
    properties file as Kafka's tools take: security.protocol, ssl.truststore.location, ...,
    sasl.jaas.config; librdkafka's names work too)."""
    security = None
    if getattr(args, "command_config", None):
        from roster.security.client import ClientSecurity, read_properties
        security = ClientSecurity.from_config(read_properties(args.command_config))
        if security.tls:
            security.ssl_context()  # unreadable certificate files: a configuration error too
    return AdminClient(args.bootstrap_server, security=security)


def _also_after_the_action(actions) -> None:
    """Kafka's tools take their options in any order: every action of a command accepts the
    connection options after it too (the command's own defaults stay when they are not)."""
    for parser in actions.choices.values():
        parser.add_argument("--bootstrap-server", default=argparse.SUPPRESS,
                            metavar="HOST:PORT")
        parser.add_argument("--command-config", default=argparse.SUPPRESS, metavar="FILE")


def _connection_options(parser) -> None:
    parser.add_argument("--bootstrap-server", default=DEFAULT_BOOTSTRAP, metavar="HOST:PORT")
    parser.add_argument("--command-config", metavar="FILE",
                        help="client properties for a secured broker (security.protocol, "
                             "ssl.truststore.location, sasl.mechanism, sasl.jaas.config, ...; "
                             "docs/security.md)")


def _serve(args) -> int:
    from roster.broker.server import run
    if args.http_port is not None:
        args.set.append(f"http.port={args.http_port}")
    try:
        config = BrokerConfig.load(args.config, args.set)
    except ConfigError as exc:
        print(f"roster: invalid configuration: {exc}", file=sys.stderr)
        return 2
    try:
        run(config, Path(args.data_dir), args.host, args.port)
    except OSError as exc:
        print(f"roster: cannot serve on {args.host}:{args.port}: {exc.strerror or exc}",
              file=sys.stderr)
        return 1
    return 0


def _topics(args) -> int:
    with _admin(args) as client:
        if args.action == "create":
            topic_commands.create(client, args.name, args.partitions,
                                  parse_assignments(args.config))
            print(f"Created topic {args.name}.")
        elif args.action == "list":
            for name in topic_commands.list_names(client, args.internal):
                print(name)
        elif args.action == "describe":
            print("\n".join(topic_commands.describe(client, args.names)))
        elif args.action == "alter":
            if not args.config and not args.delete_config:
                raise AdminError("nothing to alter: give --config KEY=VALUE or --delete-config KEY")
            topic_commands.alter(client, args.name, parse_assignments(args.config),
                                 args.delete_config)
            print(f"Altered topic {args.name}.")
        elif args.action == "add-partitions":
            topic_commands.add_partitions(client, args.name, args.partitions)
            print(f"{args.name} now has {args.partitions} partitions.")
        elif args.action == "delete":
            topic_commands.delete(client, args.names)
            print(f"Deleted {', '.join(args.names)}.")
    return 0


def _groups(args) -> int:
    with _admin(args) as client:
        if args.action == "list":
            rows = group_commands.list_groups(client)
            for group_id, protocol_type, state in rows:
                print(f"{group_id}\t{state}\t{protocol_type or '-'}")
        elif args.action == "describe":
            for group_id in args.groups:
                print("\n".join(group_commands.describe_lines(
                    group_commands.describe(client, group_id),
                    group_commands.last_written(client, group_id))))
        elif args.action == "delete":
            group_commands.delete(client, args.groups)
            print(f"Deleted {', '.join(args.groups)}.")
        elif args.action == "history":
            from roster.observability import history
            since_ms = history.parse_since(args.since, int(time.time() * 1000))
            if args.follow:
                try:
                    for event in history.events(client, args.group, since_ms, follow=True):
                        print("\n".join(history.format_event(event)), flush=True)
                except KeyboardInterrupt:   # the way to stop following
                    return 0
            else:
                print("\n".join(history.history_lines(client, args.group, since_ms)))
        elif args.action == "remove-members":
            ids = [i for i in args.instance_ids.split(",") if i]
            group_commands.remove_members(client, args.group, ids)
            print(f"Removed {', '.join(ids)} from {args.group}.")
        elif args.action == "expect":
            _expect(client, args)
    return 0


def _expect(client, args) -> None:
    """roster groups expect GROUP [--instance-ids A,B | --size N | --clear]
    [--refuse-unexpected | --admit-unexpected]; with no option, show what is expected."""
    ids, size = group_commands.EXPECTED_IDS, group_commands.EXPECTED_SIZE
    refuse = group_commands.REFUSE_UNEXPECTED
    sets: dict[str, str] = {}
    deletes: list[str] = []
    if args.instance_ids is not None:
        sets[ids] = args.instance_ids
        deletes.append(size)
    elif args.size is not None:
        sets[size] = str(args.size)
        deletes.append(ids)
    elif args.clear:
        deletes += [ids, size, refuse]
    if args.unexpected is not None:
        sets[refuse] = "true" if args.unexpected == "refuse" else "false"
    if sets or deletes:
        group_commands.expect(client, args.group, sets, deletes)
    own = group_commands.expectations(client, args.group)
    if not own.get(ids) and not own.get(size):
        print(f"{args.group}: no expected members")
        return
    what = (f"instance ids {own[ids]}" if own.get(ids) else f"{own[size]} static members")
    policy = "admitted" if own.get(refuse) == "false" else "refused"
    print(f"{args.group}: expects {what}; unexpected members are {policy}")


def _offsets(args) -> int:
    with _admin(args) as client:
        if args.action == "describe":
            print("\n".join(offset_commands.describe_lines(client, args.group)))
        elif args.action == "reset":
            to = "earliest" if args.to_earliest else "latest" if args.to_latest else "offset"
            targets = offset_commands.reset(client, args.group, args.topic, to, args.to_offset)
            for partition, offset in sorted(targets.items()):
                print(f"{args.topic}\t{partition}\t{offset}")
        elif args.action == "delete":
            partitions = [int(p) for p in args.partitions.split(",")] if args.partitions else None
            outcome = offset_commands.delete(client, args.group, args.topic, partitions)
            for partition, status in sorted(outcome.items()):
                print(f"{args.topic}\t{partition}\t{status}")
            return 0 if all(status == "ok" for status in outcome.values()) else 1
    return 0


def _users(args) -> int:
    """SCRAM users: offline with --data-dir (before the broker's first start, or while it is
    stopped), else over the wire (DescribeUserScramCredentials, AlterUserScramCredentials)."""
    from roster.security import users
    try:
        if args.data_dir:
            data_dir = Path(args.data_dir)
            if args.action == "add":
                users.add_offline(data_dir, args.name, args.mechanism,
                                  users.read_password(args.password_file), args.iterations)
            elif args.action == "delete":
                users.delete_offline(data_dir, args.name, args.mechanism)
            else:
                print("\n".join(users.format_users(users.list_offline(data_dir))) or
                      "(no users)")
        else:
            with _admin(args) as client:
                if args.action == "add":
                    users.add_wire(client, args.name, args.mechanism,
                                   users.read_password(args.password_file), args.iterations)
                elif args.action == "delete":
                    users.delete_wire(client, args.name, args.mechanism)
                else:
                    print("\n".join(users.format_users(users.list_wire(client))) or
                          "(no users)")
    except users.UsersError as exc:
        print(f"roster: {exc}", file=sys.stderr)
        return 1
    if args.action == "add":
        print(f"Set {args.mechanism} credential of user {args.name}.")
    elif args.action == "delete":
        print(f"Deleted the {args.mechanism or 'SCRAM'} credentials of user {args.name}.")
    return 0


def _acls(args) -> int:
    """ACLs over the wire, in kafka-acls' vocabulary (admin/acls.py)."""
    from roster.admin import acls
    options = acls.AclOptions(
        args.allow_principal, args.deny_principal, args.allow_host, args.deny_host,
        args.operation, args.topic, args.group, args.cluster, args.transactional_id,
        args.resource_pattern_type, args.principal, args.producer, args.consumer,
        args.idempotent)
    try:
        if args.action == "add":
            bindings = acls.bindings_to_add(options)
        elif args.action == "remove":
            filters = acls.filters_to_remove(options)
        else:
            filters = acls.filters_to_list(options)
    except ValueError as exc:  # AclsError, an unknown --operation
        print(f"roster: {exc}", file=sys.stderr)
        return 2
    try:
        with _admin(args) as client:
            if args.action == "add":
                acls.add(client, bindings)
                print(f"Added {len(bindings)} ACL(s):")
                print("\n".join(acls.format_acls(bindings)))
            elif args.action == "remove":
                removed = acls.remove(client, filters)
                print(f"Removed {len(removed)} ACL(s)" + (":" if removed else "."))
                if removed:
                    print("\n".join(acls.format_acls(removed)))
            else:
                found = {b: None for f in filters for b in acls.describe(client, f)}
                print("\n".join(acls.format_acls(list(found))) or "(no ACLs)")
    except acls.AclsError as exc:
        print(f"roster: {exc}", file=sys.stderr)
        return 1
    return 0


def _report(args) -> int:
    """The Spark rebalance report (roster.observability.report; needs the spark extra)."""
    from roster.observability.report import main as report_main
    argv = ["--bootstrap-server", args.bootstrap_server, "--out", str(args.out),
            "--master", args.master]
    return report_main(argv + (["--group", args.group] if args.group else []))


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="roster", description=__doc__)
    parser.add_argument("--log-level", default="INFO", help="DEBUG, INFO, WARNING, ERROR")
    commands = parser.add_subparsers(dest="command", required=True)

    serve = commands.add_parser("serve", help="run a broker in the foreground")
    serve.add_argument("--host", default="127.0.0.1", help="address to listen on")
    serve.add_argument("--port", type=int, default=9092, help="port (0 picks a free one)")
    serve.add_argument("--data-dir", default="./data", help="where logs and state live")
    serve.add_argument("--config", type=Path, help="a server.properties-style file")
    serve.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                       help="override one setting (Kafka's property names); repeatable")
    serve.add_argument("--http-port", type=int, metavar="PORT",
                       help="serve /metrics and the group console on PORT (http.port; "
                            "loopback unless http.host says otherwise)")
    serve.set_defaults(run=_serve)

    topics = commands.add_parser("topics", help="create, list, describe and delete topics")
    _connection_options(topics)
    actions = topics.add_subparsers(dest="action", required=True)
    create = actions.add_parser("create")
    create.add_argument("name")
    create.add_argument("--partitions", type=int, default=-1, help="default: num.partitions")
    create.add_argument("--config", action="append", default=[], metavar="KEY=VALUE")
    listing = actions.add_parser("list")
    listing.add_argument("--internal", action="store_true", help="include internal topics")
    describe = actions.add_parser("describe")
    describe.add_argument("names", nargs="*")
    change = actions.add_parser("alter", help="set or delete a topic's own settings")
    change.add_argument("name")
    change.add_argument("--config", action="append", default=[], metavar="KEY=VALUE")
    change.add_argument("--delete-config", action="append", default=[], metavar="KEY",
                        help="back to the broker's value")
    grow = actions.add_parser("add-partitions", help="grow a topic to --partitions in total")
    grow.add_argument("name")
    grow.add_argument("--partitions", type=int, required=True, help="the new total")
    delete = actions.add_parser("delete")
    delete.add_argument("names", nargs="+")
    _also_after_the_action(actions)
    topics.set_defaults(run=_topics)

    groups = commands.add_parser("groups", help="list, describe and delete consumer groups")
    _connection_options(groups)
    group_actions = groups.add_subparsers(dest="action", required=True)
    group_actions.add_parser("list")
    describe_groups = group_actions.add_parser("describe")
    describe_groups.add_argument("groups", nargs="+")
    delete_groups = group_actions.add_parser("delete", help="delete Empty groups and their offsets")
    delete_groups.add_argument("groups", nargs="+")
    history = group_actions.add_parser(
        "history", help="a group's rebalances, one per generation, and those static "
        "membership saved (the flight recorder: docs/observability.md)")
    history.add_argument("group")
    history.add_argument(
        "--since", default="7d", metavar="WHEN",
        help="from when: a span back from now (30m, 2h, 7d), a time (2026-11-01T08:30, UTC "
        "unless a zone is given) or 'all' for every event kept (default: 7d)")
    history.add_argument("--follow", action="store_true", help="keep printing new events")
    remove = group_actions.add_parser("remove-members",
                                      help="remove static members by group.instance.id (KIP-345)")
    remove.add_argument("group")
    remove.add_argument("--instance-ids", required=True, metavar="ID[,ID...]")
    expect = group_actions.add_parser(
        "expect", help="pre-register a group's static members: it forms once they have all "
        "joined and refuses others (group configs; docs/groups.md)")
    expect.add_argument("group")
    expected = expect.add_mutually_exclusive_group()
    expected.add_argument("--instance-ids", metavar="ID[,ID...]",
                          help="exactly these group.instance.ids")
    expected.add_argument("--size", type=int, metavar="N", help="this many static members")
    expected.add_argument("--clear", action="store_true", help="expect nothing (Kafka's way)")
    policy = expect.add_mutually_exclusive_group()
    policy.add_argument("--refuse-unexpected", dest="unexpected", action="store_const",
                        const="refuse", help="refuse members not expected (the default)")
    policy.add_argument("--admit-unexpected", dest="unexpected", action="store_const",
                        const="admit", help="let them in (and log them)")
    _also_after_the_action(group_actions)
    groups.set_defaults(run=_groups)

    offsets = commands.add_parser("offsets",
                                  help="a group's committed offsets and lag; reset; delete")
    _connection_options(offsets)
    offset_actions = offsets.add_subparsers(dest="action", required=True)
    describe_offsets = offset_actions.add_parser("describe")
    describe_offsets.add_argument("group")
    reset = offset_actions.add_parser("reset", help="only while the group has no members")
    reset.add_argument("group")
    reset.add_argument("--topic", required=True)
    target = reset.add_mutually_exclusive_group(required=True)
    target.add_argument("--to-earliest", action="store_true")
    target.add_argument("--to-latest", action="store_true")
    target.add_argument("--to-offset", type=int, metavar="N")
    forget = offset_actions.add_parser(
        "delete", help="delete committed offsets (refused for topics the members consume)")
    forget.add_argument("group")
    forget.add_argument("--topic", required=True)
    forget.add_argument("--partitions", metavar="P[,P...]", help="default: every partition")
    _also_after_the_action(offset_actions)
    offsets.set_defaults(run=_offsets)

    report = commands.add_parser(
        "report", help="a Spark job over __roster_group_events: an HTML rebalance report "
        "(docs/observability.md)")
    report.add_argument("--bootstrap-server", default=DEFAULT_BOOTSTRAP, metavar="HOST:PORT")
    report.add_argument("--group", help="one group (default: every group)")
    report.add_argument("--out", type=Path, default=Path("rebalance-report.html"))
    report.add_argument("--master", default="local[2]", help="Spark master (default local[2])")
    report.set_defaults(run=_report)

    users = commands.add_parser("users", help="SCRAM users: add, list, delete (docs/security.md)")
    _connection_options(users)
    users.add_argument("--data-dir", metavar="DIR",
                       help="change a stopped broker's data directory instead of going over the "
                            "wire (as kafka-storage format --add-scram)")
    where = argparse.ArgumentParser(add_help=False)  # also accepted after the action
    where.add_argument("--bootstrap-server", default=argparse.SUPPRESS, metavar="HOST:PORT")
    where.add_argument("--data-dir", default=argparse.SUPPRESS, metavar="DIR")
    where.add_argument("--command-config", default=argparse.SUPPRESS, metavar="FILE")
    user_actions = users.add_subparsers(dest="action", required=True)
    add_user = user_actions.add_parser("add", parents=[where],
                                       help="add a user, or replace its credential")
    add_user.add_argument("name")
    add_user.add_argument("--mechanism", default="SCRAM-SHA-256",
                          choices=["SCRAM-SHA-256", "SCRAM-SHA-512"])
    add_user.add_argument("--password-file", required=True, metavar="FILE",
                          help="the password is its first line ('-': stdin)")
    add_user.add_argument("--iterations", type=int, default=4096)
    user_actions.add_parser("list", parents=[where])
    delete_user = user_actions.add_parser("delete", parents=[where])
    delete_user.add_argument("name")
    delete_user.add_argument("--mechanism", choices=["SCRAM-SHA-256", "SCRAM-SHA-512"],
                             help="default: every mechanism")
    users.set_defaults(run=_users)
    acl_command = commands.add_parser(
        "acls", help="ACLs: add, list, remove, in kafka-acls' vocabulary (docs/security.md)")
    acl_actions = acl_command.add_subparsers(dest="action", required=True)
    acl_options = argparse.ArgumentParser(add_help=False)
    _connection_options(acl_options)
    acl_options.add_argument("--allow-principal", action="append", default=[], metavar="TYPE:NAME")
    acl_options.add_argument("--deny-principal", action="append", default=[], metavar="TYPE:NAME")
    acl_options.add_argument("--allow-host", action="append", default=[], metavar="HOST",
                             help="default: * (every host)")
    acl_options.add_argument("--deny-host", action="append", default=[], metavar="HOST")
    acl_options.add_argument("--operation", action="append", default=[],
                             help="Read, Write, Create, Delete, Alter, Describe, ClusterAction, "
                                  "DescribeConfigs, AlterConfigs, IdempotentWrite, All "
                                  "(default: All); repeatable")
    acl_options.add_argument("--topic", action="append", default=[])
    acl_options.add_argument("--group", action="append", default=[])
    acl_options.add_argument("--cluster", action="store_true")
    acl_options.add_argument("--transactional-id", action="append", default=[])
    acl_options.add_argument("--resource-pattern-type", metavar="TYPE",
                             help="literal (default), prefixed; for list and remove also "
                                  "match, any")
    acl_options.add_argument("--principal", action="append", default=[],
                             help="list: only this principal's ACLs")
    acl_options.add_argument("--producer", action="store_true",
                             help="add: WRITE, DESCRIBE, CREATE on --topic (and WRITE, "
                                  "DESCRIBE on --transactional-id)")
    acl_options.add_argument("--idempotent", action="store_true",
                             help="with --producer: IDEMPOTENT_WRITE on the cluster")
    acl_options.add_argument("--consumer", action="store_true",
                             help="add: READ, DESCRIBE on --topic, READ on --group")
    acl_options.add_argument("--force", action="store_true", help="accepted (never asks)")
    acl_actions.add_parser("add", parents=[acl_options])
    acl_actions.add_parser("list", parents=[acl_options])
    acl_actions.add_parser("remove", parents=[acl_options])
    acl_command.set_defaults(run=_acls)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    logging.basicConfig(level=args.log_level.upper(),
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    try:
        return args.run(args)
    except (AdminError, ConfigError) as exc:
        print(f"roster: {exc}", file=sys.stderr)
        return 1
    except SecurityConfigError as exc:
        print(f"roster: invalid --command-config: {exc}", file=sys.stderr)
        return 2
