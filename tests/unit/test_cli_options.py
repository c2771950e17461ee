"""The roster CLI takes its connection options before or after the action, as Kafka's tools
take theirs in any order."""
import pytest

from roster.cli import build_parser


@pytest.mark.parametrize("argv", [
    ["groups", "--bootstrap-server", "h:1", "--command-config", "f", "remove-members", "g",
     "--instance-ids", "x"],
    ["groups", "remove-members", "g", "--instance-ids", "x", "--bootstrap-server", "h:1",
     "--command-config", "f"],
    ["topics", "list", "--bootstrap-server", "h:1", "--command-config", "f"],
    ["offsets", "describe", "g", "--command-config", "f", "--bootstrap-server", "h:1"],
    ["users", "list", "--bootstrap-server", "h:1", "--command-config", "f"],
])
def test_connection_options_anywhere(argv):
    args = build_parser().parse_args(argv)
    assert (args.bootstrap_server, args.command_config) == ("h:1", "f")


def test_defaults_when_not_given():
    args = build_parser().parse_args(["groups", "describe", "g"])
    assert (args.bootstrap_server, args.command_config) == ("localhost:9092", None)
