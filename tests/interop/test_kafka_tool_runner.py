"""The warm JVM that runs Kafka's tools in-process (tests/support/kafka_tools.py) answers as the
tool's own JVM does: the same stdout, stderr and exit code, call after call, including a usage
error that prints a stack trace (no frame of the runner in it), an exit through Kafka's Exit and
a main that returns. None of these calls needs a broker (a call that reaches for one prints
warnings whose number depends on timing, in either JVM); ConsoleProducer reading its stdin
through the runner is in test_kafka_tools.py."""
from __future__ import annotations

import subprocess

import pytest

from tests.support.kafka_peer import java_command
from tests.support.kafka_tools import kafka_tool

pytestmark = pytest.mark.interop

TOOLS = "org.apache.kafka.tools."
NOWHERE = ("--bootstrap-server", "127.0.0.1:1")
CALLS = [
    (TOOLS + "TopicCommand", (*NOWHERE, "--list", "--no-such-option"), None),
    (TOOLS + "TopicCommand", ("--version",), None),
    (TOOLS + "consumer.group.ConsumerGroupCommand", NOWHERE, None),
    (TOOLS + "GroupsCommand", ("--help",), None),
    (TOOLS + "TransactionsCommand", (*NOWHERE, "list", "--no-such-option"), None),
    (TOOLS + "ConfigCommand", (*NOWHERE, "--describe"), None),
    (TOOLS + "ConsoleProducer", NOWHERE, "k\tv\n"),
]


def test_the_runner_prints_and_exits_as_the_tools_own_jvm():
    fresh = [subprocess.run(java_command(main_class, *args), input=stdin, capture_output=True,
                            text=True, timeout=60) for main_class, args, stdin in CALLS]
    for _ in range(2):   # twice: nothing a call leaves behind changes the next
        for (main_class, args, stdin), own in zip(CALLS, fresh):
            warm = kafka_tool(main_class, *args, stdin=stdin, timeout_s=60)
            assert (warm.returncode, warm.stdout, warm.stderr) == \
                (own.returncode, own.stdout, own.stderr), (main_class, args)
    unrecognized = kafka_tool(CALLS[0][0], *CALLS[0][1])
    assert unrecognized.returncode == 1
    assert "joptsimple.UnrecognizedOptionException" in unrecognized.stderr
    last_frame = unrecognized.stderr.rstrip().splitlines()[-1]
    assert "at org.apache.kafka.tools.TopicCommand.main(" in last_frame, unrecognized.stderr
