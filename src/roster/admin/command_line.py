"""The argument parsers of the commands that talk to a running broker: topics, groups, offsets,
report, users, acls (roster/cli.py runs them).

As Kafka's tools, they take their options anywhere: the connection options before the command,
before the action or after it; kafka-consumer-groups' `--group` and kafka-topics' `--topic`
where roster takes a positional argument; `--bootstrap-servers` as well as `--bootstrap-server`.
arguments.settle() merges what was given after parsing.
"""
from __future__ import annotations

import argparse
from pathlib import Path

from roster.admin import arguments as kinds


def _actions(command):
    return command.add_subparsers(dest="action", required=True, metavar="ACTION")


def _action(actions, name: str, help: str, *, group: str | None = None,
            topic: str | None = None, required: bool = True):
    """One action, taking the connection options too; `group`/`topic`: the name of its
    positional group(s)/topic(s), also given as --group/--topic."""
    parser = actions.add_parser(name, help=help, description=help[:1].upper() + help[1:] + ".")
    kinds.connection_options(parser)
    many = group == "groups" or topic == "names"
    if group:
        parser.add_argument(group, nargs="*" if many else "?", metavar="GROUP",
                            help="the group" + ("s" if many else "") + " (or --group)")
        kinds.group_option(parser, many=many)
    if topic:
        parser.add_argument(topic, nargs="*" if many else "?", metavar="TOPIC",
                            help="the topic" + ("s" if many else "") + " (or --topic)")
        kinds.topic_option(parser)
    spelled = None
    if group or topic:
        spelled = (group or topic, "group_options" if group else "topic_options", many,
                   required)
    parser.set_defaults(usage=parser, spelled=spelled)
    return parser


def _command(commands, name: str, help: str, run, *, groups: bool = False):
    command = commands.add_parser(name, help=help, description=help[:1].upper() + help[1:] + ".")
    kinds.connection_options(command)
    if groups:
        kinds.group_option(command)
    command.set_defaults(run=run, usage=command)
    return command


def add_topics(commands, run) -> None:
    actions = _actions(_command(commands, "topics", "create, list, describe, alter and delete "
                                "topics (kafka-topics)", run))
    create = _action(actions, "create", "create a topic", topic="name")
    create.add_argument("--partitions", type=kinds.positive, default=-1,
                        help="how many (default: the broker's num.partitions)")
    create.add_argument("--replication-factor", type=kinds.replication_factor, metavar="1",
                        help="accepted as kafka-topics takes it; roster is one broker, so 1")
    create.add_argument("--config", action="append", default=[], metavar="KEY=VALUE",
                        help="a topic setting (retention.ms=..., cleanup.policy=...); repeatable")
    listing = _action(actions, "list", "list the topics' names")
    listing.add_argument("--internal", action="store_true", help="include internal topics")
    _action(actions, "describe", "partitions, offsets and own settings of topics (default: "
            "every topic)", topic="names", required=False)
    change = _action(actions, "alter", "set or delete a topic's own settings", topic="name")
    change.add_argument("--config", action="append", default=[], metavar="KEY=VALUE")
    change.add_argument("--delete-config", action="append", default=[], metavar="KEY",
                        help="back to the broker's value")
    grow = _action(actions, "add-partitions", "grow a topic to --partitions in total",
                   topic="name")
    grow.add_argument("--partitions", type=kinds.positive, required=True, help="the new total")
    _action(actions, "delete", "delete topics and their records", topic="names")


def add_groups(commands, run) -> None:
    actions = _actions(_command(commands, "groups", "list, describe and delete consumer groups "
                                "(kafka-consumer-groups)", run, groups=True))
    _action(actions, "list", "every group: its id, state and protocol type")
    describe = _action(actions, "describe", "a group's state, generation, leader, members and "
                       "their assignments; --offsets, --members, --state: Kafka's views",
                       group="groups")
    describe.add_argument("--all-groups", action="store_true", help="every group")
    view = describe.add_mutually_exclusive_group()
    view.add_argument("--offsets", dest="view", action="store_const", const="offsets",
                      help="kafka-consumer-groups --describe: per partition the committed "
                           "offset, log end, lag and the member that owns it")
    view.add_argument("--members", dest="view", action="store_const", const="members",
                      help="one row per member: id, instance id, host, client id, #partitions")
    view.add_argument("--state", dest="view", action="store_const", const="state",
                      help="coordinator, assignment strategy, state, #members")
    describe.add_argument("--http", metavar="URL",
                          help="a roster broker's console (roster serve --http-port): a share "
                               "group's in-flight records per partition, by state, from its "
                               "/metrics (not on Kafka's wire); with SASL listeners it is sent "
                               "--command-config's SCRAM user")
    _action(actions, "delete", "delete Empty groups and their committed offsets",
            group="groups")
    history = _action(actions, "history", "a group's rebalances, one per generation, and "
                      "those static membership saved (the flight recorder: "
                      "docs/observability.md)", group="group")
    history.add_argument(
        "--since", default="7d", metavar="WHEN",
        help="from when: a span back from now (30m, 2h, 7d), a time (2026-11-01T08:30, UTC "
        "unless a zone is given) or 'all' for every event kept (default: 7d)")
    history.add_argument("--follow", action="store_true", help="keep printing new events")
    remove = _action(actions, "remove-members", "remove static members by group.instance.id "
                     "(KIP-345)", group="group")
    remove.add_argument("--instance-ids", required=True, metavar="ID[,ID...]")
    expect = _action(actions, "expect", "pre-register a group's static members: it forms once "
                     "they have all joined and refuses others (group configs; docs/groups.md)",
                     group="group")
    expected = expect.add_mutually_exclusive_group()
    expected.add_argument("--instance-ids", metavar="ID[,ID...]",
                          help="exactly these group.instance.ids")
    expected.add_argument("--size", type=kinds.positive, metavar="N",
                          help="this many static members")
    expected.add_argument("--clear", action="store_true", help="expect nothing (Kafka's way)")
    policy = expect.add_mutually_exclusive_group()
    policy.add_argument("--refuse-unexpected", dest="unexpected", action="store_const",
                        const="refuse", help="refuse members not expected (the default)")
    policy.add_argument("--admit-unexpected", dest="unexpected", action="store_const",
                        const="admit", help="let them in (and log them)")


def add_offsets(commands, run) -> None:
    actions = _actions(_command(commands, "offsets", "a group's committed offsets and lag; "
                                "reset; delete (kafka-consumer-groups)", run, groups=True))
    describe = _action(actions, "describe", "per partition: committed offset, log end offset, "
                       "lag, and the member that owns it (kafka-consumer-groups --describe)",
                       group="groups")
    describe.add_argument("--all-groups", action="store_true", help="every group")
    reset = _action(actions, "reset", "show, or with --execute commit, new offsets for a group "
                    "without members (kafka-consumer-groups --reset-offsets)", group="group")
    scope = reset.add_mutually_exclusive_group(required=True)
    scope.add_argument("--topic", dest="reset_topics", action="append",
                       type=kinds.topic_partitions, metavar="TOPIC[:P,P]",
                       help="every partition of TOPIC, or the ones listed; repeatable")
    scope.add_argument("--all-topics", action="store_true",
                       help="every partition the group has committed offsets for")
    target = reset.add_mutually_exclusive_group(required=True)
    target.add_argument("--to-earliest", dest="to", action="store_const", const=("earliest",),
                        help="the log start offset")
    target.add_argument("--to-latest", dest="to", action="store_const", const=("latest",),
                        help="the log end offset")
    target.add_argument("--to-offset", dest="to", type=lambda t: ("offset", kinds.offset(t)),
                        metavar="N", help="offset N (moved into the log when outside it)")
    target.add_argument("--shift-by", dest="to", type=lambda t: ("shift-by", kinds.shift(t)),
                        metavar="N", help="the committed offset plus N (negative: back)")
    target.add_argument("--to-datetime", dest="to",
                        type=lambda t: ("datetime", kinds.datetime_ms(t)),
                        metavar="YYYY-MM-DDTHH:mm:SS.sss",
                        help="the first record at or after this time (local time unless a zone "
                             "is given)")
    target.add_argument("--by-duration", dest="to",
                        type=lambda t: ("by-duration", kinds.duration_ms(t)),
                        metavar="PnDTnHnMnS", help="the first record at or after now minus this")
    target.add_argument("--to-current", dest="to", action="store_const", const=("current",),
                        help="the committed offset (the log end where there is none)")
    mode = reset.add_mutually_exclusive_group()
    mode.add_argument("--dry-run", action="store_true",
                      help="only show the new offsets (the default)")
    mode.add_argument("--execute", action="store_true", help="commit the new offsets")
    forget = _action(actions, "delete", "delete committed offsets (refused for topics the "
                     "members consume)", group="group")
    forget.add_argument("--topic", dest="delete_topics", action="append", required=True,
                        type=kinds.topic_partitions, metavar="TOPIC[:P,P]",
                        help="every partition of TOPIC, or the ones listed; repeatable")
    forget.add_argument("--partitions", type=kinds.partition_list, metavar="P[,P...]",
                        help="with one --topic: these partitions (default: every one)")


def add_report(commands, run) -> None:
    report = _command(commands, "report", "a Spark job over __roster_group_events: an HTML "
                      "rebalance report (docs/observability.md); on Kafka, the groups' "
                      "offsets and lag only (docs/on-kafka.md)", run)
    report.add_argument("--group", help="one group (default: every group)")
    report.add_argument("--out", type=Path, default=Path("rebalance-report.html"),
                        help="the HTML file, or a directory to write GROUP.html into; .html is "
                             "added when missing (default: rebalance-report.html)")
    report.add_argument("--master", default="local[2]", help="Spark master (default local[2])")


def add_console(commands, run) -> None:
    console = _command(commands, "console", "the group console over a Kafka cluster: its groups, "
                       "members and lag, read afresh for every page (docs/on-kafka.md); a "
                       "roster broker serves its own with `roster serve --http-port`", run)
    console.add_argument("--http-port", type=kinds.port, required=True, metavar="PORT",
                         help="serve the console on PORT (0 picks a free one)")
    console.add_argument("--http-host", default="127.0.0.1", metavar="HOST",
                         help="address to listen on (default: loopback only)")


def add_users(commands, run) -> None:
    users = _command(commands, "users", "SCRAM users: add, list, delete (docs/security.md)", run)
    users.add_argument("--data-dir", metavar="DIR",
                       help="change a stopped broker's data directory instead of going over the "
                            "wire (as kafka-storage format --add-scram)")
    actions = _actions(users)

    def action(name, help):
        parser = _action(actions, name, help)
        parser.add_argument("--data-dir", default=argparse.SUPPRESS, metavar="DIR",
                            help=argparse.SUPPRESS)
        return parser

    add_user = action("add", "add a user, or replace its credential")
    add_user.add_argument("name")
    add_user.add_argument("--mechanism", default="SCRAM-SHA-256",
                          choices=["SCRAM-SHA-256", "SCRAM-SHA-512"])
    add_user.add_argument("--password-file", required=True, metavar="FILE",
                          help="the password is its first line ('-': stdin)")
    add_user.add_argument("--iterations", type=kinds.positive, default=4096)
    action("list", "the users and their mechanisms")
    delete_user = action("delete", "delete a user's credentials")
    delete_user.add_argument("name")
    delete_user.add_argument("--mechanism", choices=["SCRAM-SHA-256", "SCRAM-SHA-512"],
                             help="default: every mechanism")


def add_acls(commands, run) -> None:
    acl_command = commands.add_parser(
        "acls", help="ACLs: add, list, remove, in kafka-acls' vocabulary (docs/security.md)")
    kinds.connection_options(acl_command)
    acl_command.set_defaults(run=run)
    acl_actions = _actions(acl_command)
    options = argparse.ArgumentParser(add_help=False)
    kinds.connection_options(options)
    options.add_argument("--allow-principal", action="append", default=[], metavar="TYPE:NAME")
    options.add_argument("--deny-principal", action="append", default=[], metavar="TYPE:NAME")
    options.add_argument("--allow-host", action="append", default=[], metavar="HOST",
                         help="default: * (every host)")
    options.add_argument("--deny-host", action="append", default=[], metavar="HOST")
    options.add_argument("--operation", action="append", default=[],
                         help="Read, Write, Create, Delete, Alter, Describe, ClusterAction, "
                              "DescribeConfigs, AlterConfigs, IdempotentWrite, All "
                              "(default: All); repeatable")
    options.add_argument("--topic", action="append", default=[])
    options.add_argument("--group", action="append", default=[])
    options.add_argument("--cluster", action="store_true")
    options.add_argument("--transactional-id", action="append", default=[])
    options.add_argument("--resource-pattern-type", metavar="TYPE",
                         help="literal (default), prefixed; for list and remove also match, any")
    options.add_argument("--principal", action="append", default=[],
                         help="list: only this principal's ACLs")
    options.add_argument("--producer", action="store_true",
                         help="add: WRITE, DESCRIBE, CREATE on --topic (and WRITE, DESCRIBE on "
                              "--transactional-id)")
    options.add_argument("--idempotent", action="store_true",
                         help="with --producer: IDEMPOTENT_WRITE on the cluster")
    options.add_argument("--consumer", action="store_true",
                         help="add: READ, DESCRIBE on --topic, READ on --group")
    options.add_argument("--force", action="store_true", help="accepted (never asks)")
    for name, help in (("add", "add ACLs"), ("list", "list ACLs (all, or those matching)"),
                       ("remove", "remove the ACLs matching")):
        parser = acl_actions.add_parser(name, parents=[options], help=help)
        parser.set_defaults(usage=parser)


def add_migrate(commands, run) -> None:
    command = _command(commands, "migrate", "plan, or with --execute carry out, what "
                       "MirrorMaker 2 does not move from roster to a Kafka cluster: topic "
                       "configs and partitions, every ACL, SCRAM users, group configs and "
                       "untranslated offsets (docs/migrate.md)", run)
    command.add_argument("--to", required=True, metavar="HOST:PORT",
                         help="a bootstrap broker of the Kafka cluster to move to")
    command.add_argument("--to-command-config", metavar="FILE",
                         help="client properties for the target (default: --command-config's, "
                              "for the same admin on both sides)")
    command.add_argument("--users-file", metavar="FILE",
                         help="user=password lines (or a JSON object): the passwords SCRAM "
                              "users are carried with; never printed")
    mode = command.add_mutually_exclusive_group()
    mode.add_argument("--dry-run", action="store_true", help="only print the plan (the default)")
    mode.add_argument("--execute", action="store_true", help="carry the plan out")


def add_transactions(commands, run) -> None:
    command = _command(commands, "transactions", "list, describe and abort transactions "
                       "(kafka-transactions; docs/transactions.md)", run)
    actions = _actions(command)
    listing = _action(actions, "list", "list the transactional ids the coordinator knows")
    listing.add_argument("--state", action="append", default=[], metavar="STATE",
                         help="only these states (Ongoing, PrepareCommit, CompleteAbort, ...); "
                              "repeatable")
    listing.add_argument("--producer-id", action="append", default=[], type=int,
                         metavar="ID", help="only these producer ids; repeatable")
    listing.add_argument("--duration-filter", type=int, default=-1, metavar="MS",
                         help="only transactions open longer than this")
    listing.add_argument("--transactional-id-pattern", metavar="REGEX",
                         help="only the ids the whole of which match")
    describe = _action(actions, "describe", "describe a transactional id's transaction")
    describe.add_argument("transactional_id", nargs="?", metavar="TRANSACTIONAL_ID")
    describe.add_argument("--transactional-id", dest="transactional_id_option",
                          metavar="TRANSACTIONAL_ID", help="Kafka's spelling of the argument")
    abort = _action(actions, "abort", "abort a hanging transaction on one partition (an abort "
                    "marker; needs ClusterAction or Alter on the cluster)")
    abort.add_argument("--topic", required=True)
    abort.add_argument("--partition", type=int, required=True)
    abort.add_argument("--start-offset", type=int, metavar="OFFSET",
                       help="the first offset of the open transaction (describe-producers)")
    abort.add_argument("--producer-id", type=int, metavar="ID", help="instead of --start-offset")
    abort.add_argument("--producer-epoch", type=int, metavar="EPOCH")
    abort.add_argument("--coordinator-epoch", type=int, default=0, metavar="EPOCH")
