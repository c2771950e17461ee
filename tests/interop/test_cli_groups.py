"""The group and offsets commands as a user runs them, against a live group."""
from __future__ import annotations

import subprocess
import sys

import pytest

from tests.interop.test_bad_input import _create
from tests.interop.test_group_durability import StaticConsumer, wait_until
from tests.support.wire import Wire

pytestmark = [pytest.mark.interop, pytest.mark.xdist_group("cli-groups")]


def roster(bootstrap: str, *args: str) -> str:
    result = subprocess.run([sys.executable, "-m", "roster", *args[:1], "--bootstrap-server",
                             bootstrap, *args[1:]], capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    return result.stdout


def test_groups_describe_shows_state_generation_leader_members_and_assignments(broker_factory):
    broker = broker_factory({"group.initial.rebalance.delay.ms": "0"})
    with Wire(broker.bootstrap) as wire:
        assert _create(wire, "cli", 2).error_code == 0
    members = [StaticConsumer(broker.bootstrap, "cli-group", f"cli-{i}", "cli") for i in (0, 1)]
    try:
        wait_until(lambda: all(len(m.assigned) == 1 for m in members), 60, "two members")
        out = roster(broker.bootstrap, "groups", "describe", "cli-group")
        listed = roster(broker.bootstrap, "groups", "list")
        offsets = roster(broker.bootstrap, "offsets", "describe", "cli-group")
    finally:
        for member in members:
            member.close()
    assert "State: Stable" in out and "Protocol: range" in out and "Members: 2" in out
    generation_line = next(line for line in out.splitlines() if line.startswith("Generation:"))
    leader = generation_line.split("Leader: ")[1].split()[0]
    assert leader.startswith("cli-") and leader in out.split(generation_line)[1]
    assert "cli-0" in out and "cli-1" in out and "cli:0" in out and "cli:1" in out
    assert "cli-group\tStable\tconsumer" in listed
    assert "LAG" in offsets or "no committed offsets" in offsets


def test_offset_delete_spares_consumed_topics_then_empties_the_group(broker_factory):
    """OffsetDelete through kafka-python's admin client while a member consumes one topic:
    that topic's offsets stay (GROUP_SUBSCRIBED_TO_TOPIC), the other's go. Once the member
    has left, `roster offsets delete` removes the rest, and the group goes with its last
    offsets, as in Kafka."""
    from confluent_kafka import Consumer, TopicPartition
    from kafka import KafkaAdminClient
    from kafka import TopicPartition as KpPartition
    from kafka.errors import GroupSubscribedToTopicError, NoError

    broker = broker_factory({"group.initial.rebalance.delay.ms": "0"})
    with Wire(broker.bootstrap) as wire:
        assert _create(wire, "od-consumed", 1).error_code == 0
        assert _create(wire, "od-other", 2).error_code == 0
    committer = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": "od-group"})
    committer.commit(offsets=[TopicPartition("od-consumed", 0, 0), TopicPartition("od-other", 0, 6),
                              TopicPartition("od-other", 1, 7)], asynchronous=False)
    committer.close()
    member = StaticConsumer(broker.bootstrap, "od-group", "od-0", "od-consumed")
    admin = KafkaAdminClient(bootstrap_servers=broker.bootstrap)
    try:
        wait_until(lambda: member.assigned == [0], 60, "the member to own od-consumed")
        errors = admin.delete_group_offsets("od-group", [KpPartition("od-consumed", 0),
                                                         KpPartition("od-other", 0)])
        assert errors == {KpPartition("od-consumed", 0): GroupSubscribedToTopicError,
                          KpPartition("od-other", 0): NoError}
        offsets = roster(broker.bootstrap, "offsets", "describe", "od-group")
        assert "od-consumed  0" in offsets and "od-other     1" in offsets
        assert "od-other     0" not in offsets
    finally:
        admin.close()
        member.close()
    # a static member does not leave when it closes: remove it, as an operator would
    roster(broker.bootstrap, "groups", "remove-members", "od-group", "--instance-ids", "od-0")
    assert "State: Empty" in roster(broker.bootstrap, "groups", "describe", "od-group")
    out = roster(broker.bootstrap, "offsets", "delete", "od-group", "--topic", "od-consumed")
    assert out.split() == ["od-consumed", "0", "ok"]
    roster(broker.bootstrap, "offsets", "delete", "od-group", "--topic", "od-other")
    listed = roster(broker.bootstrap, "groups", "list")
    assert "od-group" not in listed
