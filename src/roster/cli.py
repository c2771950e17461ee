"""The `roster` command: `serve` runs a broker; the other commands talk to a running one.

Each command imports the admin module it uses when it runs, so that `roster serve` (whose start
is timed against Kafka's, bench/versus_kafka.py) loads none of them."""
from __future__ import annotations

import argparse
import logging
import os
import sys
import time
from pathlib import Path

from roster.admin import arguments as kinds
from roster.admin import command_line
from roster.admin.client import AdminClient, AdminError
from roster.config import BrokerConfig, ConfigError, parse_assignments
from roster.security.client import SecurityConfigError


def _admin(args) -> AdminClient:
    """The admin client for a command: --bootstrap-server, and --command-config FILE (a Java
    properties file as Kafka's tools take: security.protocol, ssl.truststore.location, ...,
    sasl.jaas.config; librdkafka's names work too)."""
    return AdminClient(args.bootstrap_server, security=_security(args.command_config))


def _console_authorization(args) -> str | None:
    """The HTTP Basic credentials for a broker's console: the SCRAM user and password of
    --command-config (the console asks for them when the listeners use SASL), else None."""
    security = _security(args.command_config)
    if security is None or not security.username:
        return None
    from roster.admin.console_http import basic_authorization
    return basic_authorization(security.username, security.password or "")


def _security(path: str | None, **defaults: str):
    """The ClientSecurity of a --command-config file (None without one); `defaults` fill
    settings the file does not give."""
    if not path:
        return None
    from roster.security.client import ClientSecurity, read_properties
    security = ClientSecurity.from_config({**defaults, **read_properties(path)})
    if security.tls:
        security.ssl_context()  # unreadable certificate files: a configuration error too
    return security


def _serve(args) -> int:
    from roster.broker.network.server import run
    if args.http_port is not None:
        args.set.append(f"http.port={args.http_port}")
    if args.test_mode:
        args.set.append("roster.test.mode=true")
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
    from roster.admin import topics as topic_commands
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
    from roster.admin import groups as group_commands
    with _admin(args) as client:
        if args.action == "list":
            rows = group_commands.list_groups(client)
            for group_id, protocol_type, state in rows:
                print(f"{group_id}\t{state}\t{protocol_type or '-'}")
        elif args.action == "describe":
            if args.view:
                return _kafka_views(client, args, args.view)
            console = getattr(args, "http", None)
            authorization = _console_authorization(args) if console else None
            for group_id in _chosen_groups(client, args):
                described = group_commands.describe(client, group_id)
                if console and hasattr(described, "in_flight"):
                    import dataclasses

                    from roster.admin import share_in_flight   # a share group: roster's counts
                    described = dataclasses.replace(described, in_flight=share_in_flight.read(
                        console, group_id, authorization))
                print("\n".join(group_commands.describe_lines(
                    described, group_commands.last_written(client, group_id))))
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
    from roster.admin import groups as group_commands
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


def _chosen_groups(client, args) -> list[str]:
    from roster.admin import groups as group_commands
    if args.all_groups:
        return [group_id for group_id, _, _ in group_commands.list_groups(client)]
    return args.groups


def _kafka_views(client, args, view: str) -> int:
    """kafka-consumer-groups --describe [--offsets | --members | --state]: a table per group
    on stdout, what is worth knowing about the group's state on stderr."""
    from roster.admin import group_views
    show = {"offsets": group_views.offsets_view, "members": group_views.members_view,
            "state": group_views.state_view}[view]
    printed = False
    for group_id in _chosen_groups(client, args):
        lines, notes = show(client, group_id)
        for note in notes:
            print(note, file=sys.stderr)
        if lines:
            print(("\n" if printed else "") + "\n".join(lines))
            printed = True
    return 0


def _reset(client, args) -> int:
    """Kafka's --reset-offsets: a dry run unless --execute."""
    from roster.admin import reset as offset_reset
    scenario, *value = args.to
    if scenario == "by-duration":   # Kafka's --by-duration: a time that far back from now
        scenario, value = "datetime", [int(time.time() * 1000) - value[0]]
    planned = offset_reset.plan(client, args.group,
                                None if args.all_topics else args.reset_topics,
                                offset_reset.Target(scenario, *value))
    for warning in planned.warnings:
        print(f"WARN: {warning}", file=sys.stderr)
    if args.execute:
        offset_reset.execute(client, planned)
    elif not args.dry_run:
        print("WARN: nothing was changed: without --execute this only shows the new offsets "
              "(a dry run, as in Kafka). Add --execute to commit them, or --dry-run to say "
              "this is what you want.", file=sys.stderr)
    print("\n".join(offset_reset.plan_lines(planned)))
    return 0


def _offsets(args) -> int:
    from roster.admin import offsets as offset_commands
    with _admin(args) as client:
        if args.action == "describe":
            return _kafka_views(client, args, "offsets")
        elif args.action == "reset":
            return _reset(client, args)
        elif args.action == "delete":
            if args.partitions is not None and len(args.delete_topics) > 1:
                args.usage.error("--partitions goes with one --topic (or give TOPIC:P,P)")
            failed = False
            for topic, partitions in args.delete_topics:
                outcome = offset_commands.delete(client, args.group, topic,
                                                 partitions or args.partitions)
                for partition, status in sorted(outcome.items()):
                    print(f"{topic}\t{partition}\t{status}")
                failed |= any(status != "ok" for status in outcome.values())
            return 1 if failed else 0
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


def _transactions(args) -> int:
    """kafka-transactions' list, describe and abort (admin/transactions.py)."""
    from roster.admin import table
    from roster.admin import transactions as txns
    if args.action == "describe":
        args.transactional_id = args.transactional_id or args.transactional_id_option
        if not args.transactional_id:
            args.usage.error("which transactional id? give it as an argument or with "
                             "--transactional-id")
    if args.action == "abort" and args.start_offset is None and (
            args.producer_id is None or args.producer_epoch is None):
        args.usage.error("name the transaction with --start-offset, or with --producer-id "
                         "and --producer-epoch")
    try:
        with _admin(args) as client:
            if args.action == "list":
                rows, unknown = txns.list_transactions(
                    client, args.state, args.producer_id, args.duration_filter,
                    args.transactional_id_pattern)
                node = txns.node_id(client)

                def coordinator(tid: str) -> str:   # each id's own, on a cluster
                    found = txns.coordinator_of(client, tid)
                    return str(found if found >= 0 else node)
                print("\n".join(table.columns([txns.LIST_HEADER] + [
                    (tid, coordinator(tid), str(pid), state) for tid, pid, state in rows])))
                if unknown:
                    print(f"unknown states: {', '.join(unknown)}", file=sys.stderr)
            elif args.action == "describe":
                state = txns.describe(client, args.transactional_id)
                print("\n".join(table.columns([txns.DESCRIBE_HEADER, txns.describe_row(
                    state, txns.node_id(client), int(time.time() * 1000))])))
            else:
                spec = txns.find_open_transaction(
                    client, args.topic, args.partition, args.start_offset) \
                    if args.start_offset is not None else txns.AbortSpec(
                        args.topic, args.partition, args.producer_id, args.producer_epoch,
                        args.coordinator_epoch)
                txns.abort(client, spec)
                print(f"Aborted the transaction of producer {spec.producer_id} (epoch "
                      f"{spec.producer_epoch}) on {spec.topic}-{spec.partition}.")
    except txns.TransactionsError as exc:
        print(f"roster: {exc}", file=sys.stderr)
        return 1
    return 0


def _migrate(args) -> int:
    """roster migrate --to BOOTSTRAP: a plan, or with --execute its carrying out
    (admin/migrate.py)."""
    from roster.admin import migrate, users_file
    from roster.admin.cluster import Cluster
    passwords = None
    if args.users_file:
        try:
            passwords = users_file.read(args.users_file)
        except users_file.UsersFileError as exc:
            print(f"roster: {exc}", file=sys.stderr)
            return 2
        if users_file.world_readable(args.users_file):
            print(f"WARN: the users file {args.users_file} is readable by every user of this "
                  "machine: chmod 600 it", file=sys.stderr)

    source_security = _security(args.command_config)
    target_security = _security(args.to_command_config or args.command_config)
    try:
        source = Cluster(args.bootstrap_server, source_security)
    except AdminError as exc:
        print(f"roster: the source: {exc}", file=sys.stderr)
        return 1
    with source:
        try:
            target = Cluster(args.to, target_security)
        except AdminError as exc:
            print(f"roster: the target: {exc}", file=sys.stderr)
            return 1
        with target:
            try:
                migrate.check_target(source, target)
                planned = migrate.plan(source, target, passwords, target_security)
            except migrate.MigrateError as exc:
                print(f"roster: {exc}", file=sys.stderr)
                return 1
            print("\n".join(migrate.plan_lines(planned, executing=args.execute)))
            if not args.execute or not planned.steps:
                return 0
            outcome = migrate.execute(planned, target, lambda: migrate.plan(
                source, target, passwords, target_security))
            print("\n".join(migrate.outcome_lines(outcome)))
            return 1 if outcome.failed or outcome.left else 0


def _report(args) -> int:
    """The Spark rebalance report (roster.observability.report; needs the spark extra). On a
    cluster that is not roster it writes the groups' tables alone, without Spark."""
    from roster.observability.report import main as report_main
    out = kinds.report_path(args.out, args.group)
    if not out.parent.is_dir():
        args.usage.error(f"--out {args.out}: the directory {out.parent} does not exist")
    argv = ["--bootstrap-server", args.bootstrap_server, "--out", str(out),
            "--master", args.master]
    argv += ["--group", args.group] if args.group else []
    return report_main(argv + (["--command-config", args.command_config]
                               if args.command_config else []))


def _console(args) -> int:
    """The group console over a Kafka cluster (roster.observability.kafka_console), in the
    foreground until Ctrl-C or SIGTERM."""
    import asyncio
    import signal

    from roster.admin.not_roster import is_roster
    from roster.observability.kafka_console import KafkaConsole
    # each viewer logs in as themselves: a SASL file's own credentials, if any, are not used
    security = _security(args.command_config, **{"sasl.username": "-", "sasl.password": "-"})
    if security is None or not security.sasl:
        with AdminClient(args.bootstrap_server, security=security) as client:
            if is_roster(client):
                print("roster console: this is a roster broker; its own console "
                      "(roster serve --http-port) also draws the rebalance history",
                      file=sys.stderr)

    async def run() -> int:
        console = KafkaConsole(args.bootstrap_server, args.http_host, args.http_port, security)
        try:
            await console.start()
        except OSError as exc:   # the port is taken, or the address is not this machine's
            print(f"roster console: cannot listen on {args.http_host}:{args.http_port}: "
                  f"{exc.strerror or exc}", file=sys.stderr)
            return 1
        asks = " (HTTP Basic: a SASL user of the cluster)" if console.asks_credentials else ""
        print(f"roster console on {console.url}{asks}, reading {args.bootstrap_server}",
              flush=True)
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for signum in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(signum, stop.set)
        await stop.wait()
        await console.stop()
        return 0
    return asyncio.run(run())


def build_parser(only: str | None = None) -> argparse.ArgumentParser:
    """The command line's parser. `only="serve"`: with the serve command's parser alone, which
    is all a broker's command line needs: building the admin commands' parsers too (some
    fifty, each of argparse's messages looked up through gettext) took 10-30 ms of a broker's
    start on a shared 2-core machine, serve's alone 0.5 ms."""
    parser = argparse.ArgumentParser(prog="roster", description=__doc__)
    parser.add_argument("--log-level", default="INFO", help="DEBUG, INFO, WARNING, ERROR")
    kinds.connection_options(parser)   # Kafka's tools take them anywhere: before the command too
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    serve = commands.add_parser("serve", help="run a broker in the foreground")
    serve.add_argument("--host", default="127.0.0.1", help="address to listen on")
    serve.add_argument("--port", type=kinds.port, default=9092,
                       help="port (0 picks a free one)")
    serve.add_argument("--data-dir", default="./data", help="where logs and state live")
    serve.add_argument("--config", type=Path, help="a server.properties-style file")
    serve.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                       help="override one setting (Kafka's property names); repeatable")
    serve.add_argument("--http-port", type=kinds.port, metavar="PORT",
                       help="serve /metrics and the group console on PORT (http.port; "
                            "loopback unless http.host says otherwise)")
    serve.add_argument("--test-mode", action="store_true",
                       help="serve the fault-injection control plane and the test clock "
                            "(roster.test.mode; refused on a non-loopback listener that does "
                            "not authenticate)")
    serve.set_defaults(run=_serve)
    if only == "serve":
        return parser

    for add, run in ((command_line.add_topics, _topics), (command_line.add_groups, _groups),
                     (command_line.add_offsets, _offsets), (command_line.add_report, _report),
                     (command_line.add_users, _users), (command_line.add_acls, _acls),
                     (command_line.add_transactions, _transactions),
                     (command_line.add_migrate, _migrate),
                     (command_line.add_console, _console)):
        add(commands, run)
    from roster.admin import clock_command   # test mode's broker clock (docs/testing.md)
    clock_command.add_clock(commands, clock_command.run)
    from roster.admin import faults_command   # test mode's faults (docs/testing-faults.md)
    faults_command.add_faults(commands, faults_command.run)
    return parser


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    """The command line, with the Kafka spellings merged and the defaults of options that
    may come anywhere filled in (a usage error exits 2 with the action's usage)."""
    argv = kinds.kafka_actions(sys.argv[1:] if argv is None else argv)
    parser = build_parser(only="serve" if kinds.command_of(argv) == "serve" else None)
    args = parser.parse_args(argv)
    problem = kinds.settle(args)
    if problem:
        getattr(args, "usage", parser).error(problem)
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    logging.basicConfig(level=args.log_level.upper(),
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    try:
        code = args.run(args)
        sys.stdout.flush()   # here, so that a closed pipe is noticed below
        return code
    except BrokenPipeError:
        # `roster ... | head -1`: the reader has gone, which is no error of ours. Point stdout
        # at /dev/null so that the interpreter's last flush does not fail again.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 141   # what a shell reports for a process stopped by SIGPIPE (128 + 13)
    except (AdminError, ConfigError) as exc:
        print(f"roster: {exc}", file=sys.stderr)
        return 1
    except SecurityConfigError as exc:
        print(f"roster: invalid --command-config: {exc}", file=sys.stderr)
        return 2
