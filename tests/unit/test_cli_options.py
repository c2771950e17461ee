"""The roster CLI takes its options where Kafka's tools take them: the connection options
before the command, before the action or after it; Kafka's spellings (--bootstrap-servers,
--group, --topic, --replication-factor 1) beside roster's."""
import pytest

from roster.admin.arguments import kafka_actions
from roster.cli import parse_args


@pytest.mark.parametrize("argv", [
    ["groups", "--bootstrap-server", "h:1", "--command-config", "f", "remove-members", "g",
     "--instance-ids", "x"],
    ["groups", "remove-members", "g", "--instance-ids", "x", "--bootstrap-server", "h:1",
     "--command-config", "f"],
    ["topics", "list", "--bootstrap-server", "h:1", "--command-config", "f"],
    ["offsets", "describe", "g", "--command-config", "f", "--bootstrap-server", "h:1"],
    ["users", "list", "--bootstrap-server", "h:1", "--command-config", "f"],
    ["--bootstrap-server", "h:1", "--command-config", "f", "topics", "list"],
    ["acls", "list", "--bootstrap-servers", "h:1", "--command-config", "f"],
    ["--bootstrap-servers", "h:1", "report", "--command-config", "f"],
])
def test_connection_options_anywhere(argv):
    args = parse_args(argv)
    assert (args.bootstrap_server, args.command_config) == ("h:1", "f")


def test_defaults_when_not_given():
    args = parse_args(["groups", "describe", "g"])
    assert (args.bootstrap_server, args.command_config) == ("localhost:9092", None)


@pytest.mark.parametrize("argv, attribute, value", [
    (["offsets", "describe", "--group", "g"], "groups", ["g"]),
    (["offsets", "--group", "g", "describe"], "groups", ["g"]),
    (["groups", "describe", "a", "--group", "b"], "groups", ["a", "b"]),
    (["offsets", "reset", "--group", "g", "--all-topics", "--to-earliest"], "group", "g"),
    (["groups", "history", "--group", "g"], "group", "g"),
    (["topics", "create", "--topic", "t", "--replication-factor", "1"], "name", "t"),
    (["topics", "delete", "--topic", "t", "--topic", "u"], "names", ["t", "u"]),
    (["topics", "describe"], "names", []),
])
def test_kafka_spellings_stand_for_the_positional_arguments(argv, attribute, value):
    assert getattr(parse_args(argv), attribute) == value


@pytest.mark.parametrize("kafka, roster", [
    (["groups", "--bootstrap-server", "b:1", "--describe", "--group", "g"],
     ["groups", "describe", "--bootstrap-server", "b:1", "--group", "g", "--offsets"]),
    (["--bootstrap-server", "b:1", "groups", "--describe", "--group", "g", "--members"],
     ["--bootstrap-server", "b:1", "groups", "describe", "--group", "g", "--members"]),
    (["groups", "--reset-offsets", "--group", "g", "--all-topics", "--to-earliest"],
     ["offsets", "reset", "--group", "g", "--all-topics", "--to-earliest"]),
    (["topics", "--alter", "--topic", "t", "--partitions", "6"],
     ["topics", "add-partitions", "--topic", "t", "--partitions", "6"]),
    (["topics", "--create", "--topic", "t", "--replication-factor", "1"],
     ["topics", "create", "--topic", "t", "--replication-factor", "1"]),
    (["acls", "--add", "--allow-principal", "User:a", "--topic", "t"],
     ["acls", "add", "--allow-principal", "User:a", "--topic", "t"]),
    (["groups", "--delete-offsets", "--group", "g", "--topic", "t:0,1", "--topic", "u"],
     ["offsets", "delete", "--group", "g", "--topic", "t:0,1", "--topic", "u"]),
    (["topics", "list"], ["topics", "list"]),
    (["serve", "--port", "0"], ["serve", "--port", "0"]),
])
def test_kafka_action_flags_become_actions(kafka, roster):
    assert kafka_actions(kafka) == roster
    parse_args(kafka)   # and parse
