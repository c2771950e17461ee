"""confluent-kafka 2.16 (librdkafka 2.16) with `group.protocol=consumer` against roster: the
KIP-848 consumer group protocol end to end (ConsumerGroupHeartbeat, server-side assignment)."""
from __future__ import annotations

from collections import Counter

import pytest

from tests.support import groups
from tests.support.groups import ConfluentMember, Watch

pytestmark = [pytest.mark.interop, pytest.mark.xdist_group("consumer-protocol")]

PARTITIONS = 6
COUNT = 60
SETTINGS = {"group.consumer.heartbeat.interval.ms": "500",
            "group.consumer.min.heartbeat.interval.ms": "100",
            "group.consumer.min.session.timeout.ms": "1000"}


class ConsumerProtocolMember(ConfluentMember):
    """A confluent-kafka member speaking the consumer group protocol. Its callbacks name only
    the partitions that move (incremental), and the broker owns session and heartbeat
    timing (the client refuses session.timeout.ms / heartbeat.interval.ms with it)."""

    @property
    def incremental(self) -> bool:
        return True

    def conf(self) -> dict:
        conf = {"bootstrap.servers": self.bootstrap, "group.id": self.group,
                "group.protocol": "consumer", "auto.offset.reset": "earliest",
                "enable.auto.commit": False, "enable.partition.eof": False,
                "client.id": self.name}
        if self.instance_id is not None:
            conf["group.instance.id"] = self.instance_id
        conf.update(self.config)
        return conf


@pytest.fixture(scope="module")
def broker(tmp_path_factory):
    from tests.support.process import BrokerProcess
    broker = BrokerProcess(tmp_path_factory.mktemp("consumer-protocol"), SETTINGS).start()
    yield broker
    broker.stop()


def members_of(broker, watch, group, topic, n, **kw):
    return [ConsumerProtocolMember(watch, broker.bootstrap, group, topic, f"{group}-m{i}", **kw)
            for i in range(n)]


def test_three_members_split_six_partitions_and_consume_everything(broker):
    watch = Watch()
    groups.create_topic(broker.bootstrap, "cp-split", PARTITIONS)
    members = members_of(broker, watch, "cp-split-g", "cp-split", 3)
    with groups.running(broker, members):
        groups.wait_split(watch, members, PARTITIONS)
        owner = {p: m for m in members for p in m.assigned}
        produced = groups.produce_known(broker.bootstrap, "cp-split", PARTITIONS, COUNT, "cp")
        watch.wait_for(lambda: sum(len(m.records) for m in members) >= COUNT, groups.DEADLINE_S,
                       lambda: f"{COUNT} records consumed; got "
                       f"{[len(m.records) for m in members]}" + groups.describe_assignment(members))
        counts = Counter(r.value for m in members for r in m.records)
        assert sorted(counts) == sorted(produced.values)
        assert [v for v, n in counts.items() if n > 1] == []
        for m in members:
            assert all(owner[r.partition] is m for r in m.records)


def wait_stable(watch, members, partitions):
    groups.wait_split(watch, members, partitions)


def test_commits_carry_the_member_epoch_and_read_back(broker):
    watch = Watch()
    groups.create_topic(broker.bootstrap, "cp-commit", 2)
    members = members_of(broker, watch, "cp-commit-g", "cp-commit", 1)
    with groups.running(broker, members):
        wait_stable(watch, members, 2)
        produced = groups.produce_known(broker.bootstrap, "cp-commit", 2, 10, "cc")
        watch.wait_for(lambda: len(members[0].records) >= 10, groups.DEADLINE_S, "10 records")
        members[0].commit()
        want = {p: produced.per_partition.get(p, 0) for p in range(2)}
        assert groups.committed_offsets_confluent(broker.bootstrap, "cp-commit-g",
                                                  "cp-commit") == want
        from confluent_kafka import ConsumerGroupType
        from confluent_kafka.admin import AdminClient
        admin = AdminClient({"bootstrap.servers": broker.bootstrap})
        listed = admin.list_consumer_groups(types={ConsumerGroupType.CONSUMER}).result(10)
        assert ("cp-commit-g", ConsumerGroupType.CONSUMER) \
            in [(g.group_id, g.type) for g in listed.valid]
        classic = admin.list_consumer_groups(types={ConsumerGroupType.CLASSIC}).result(10)
        assert "cp-commit-g" not in [g.group_id for g in classic.valid]
        described = admin.describe_consumer_groups(["cp-commit-g"])["cp-commit-g"].result(10)
        assert described.type == ConsumerGroupType.CONSUMER
        # the offsets of a topic the members subscribe to are kept (OffsetDelete)
        from roster.admin.client import AdminClient as RosterAdmin
        from roster.admin.offsets import delete as delete_offsets
        with RosterAdmin(broker.bootstrap) as roster_admin:
            assert delete_offsets(roster_admin, "cp-commit-g", "cp-commit") \
                == {0: "GROUP_SUBSCRIBED_TO_TOPIC", 1: "GROUP_SUBSCRIBED_TO_TOPIC"}


def test_static_rolling_bounce_moves_no_partition_of_the_others(broker):
    watch = Watch()
    groups.create_topic(broker.bootstrap, "cp-static", PARTITIONS)
    members = members_of(broker, watch, "cp-static-g", "cp-static", 3,
                         instance_id=None)
    for i, m in enumerate(members):
        m.instance_id = f"static-{i}"
    with groups.running(broker, members):
        wait_stable(watch, members, PARTITIONS)
        for i in range(3):
            old = members[i]
            held = old.assigned
            others = [m for m in members if m is not old]
            calls = {m.name: m.callbacks() for m in others}
            old.stop()            # close(): a static member leaves with epoch -2
            new = ConsumerProtocolMember(watch, broker.bootstrap, "cp-static-g", "cp-static",
                                         f"cp-static-g-m{i}-again", instance_id=old.instance_id)
            members[i] = new
            new.start()
            watch.wait_for(lambda: new.assigned == held or new.failure, groups.DEADLINE_S,
                           lambda: f"{new.name} gets {sorted(held)} back"
                           + groups.describe_assignment(members))
            assert new.failure is None
            for m in others:
                assert m.callbacks() == calls[m.name], \
                    f"{m.name} saw a rebalance" + groups.describe_assignment(members)
        assert groups.split_evenly(members, PARTITIONS)


def test_a_duplicate_instance_id_is_refused_while_the_first_keeps_consuming(broker):
    from confluent_kafka import KafkaError
    watch = Watch()
    groups.create_topic(broker.bootstrap, "cp-dup", 2)
    first = ConsumerProtocolMember(watch, broker.bootstrap, "cp-dup-g", "cp-dup", "first",
                                   instance_id="dup")
    second = ConsumerProtocolMember(watch, broker.bootstrap, "cp-dup-g", "cp-dup", "second",
                                    instance_id="dup")
    try:
        with groups.broker_output_on_failure(broker):
            first.start()
            wait_stable(watch, [first], 2)
            second.start()
            watch.wait_for(lambda: second.errors or second.failure, groups.DEADLINE_S,
                           "the second member is refused")
            # librdkafka makes UNRELEASED_INSTANCE_ID fatal for the newcomer; its message is the
            # broker's error text for code 111
            assert any(e.code() == KafkaError._FATAL
                       and "instance ID is still used by another member" in e.str()
                       for e in second.errors), (second.errors, second.failure)
            assert second.assigned == frozenset()
            produced = groups.produce_known(broker.bootstrap, "cp-dup", 2, 10, "dup")
            watch.wait_for(lambda: len(first.records) >= 10, groups.DEADLINE_S,
                           "the first member keeps consuming")
            assert sorted(r.value for r in first.records) == sorted(produced.values)
            assert first.assigned == frozenset({0, 1})
    finally:
        second.stop()
        first.stop()


def test_create_partitions_reaches_the_members_without_any_client_acting(broker):
    from confluent_kafka.admin import AdminClient, NewPartitions
    watch = Watch()
    groups.create_topic(broker.bootstrap, "cp-grow", 2)
    members = members_of(broker, watch, "cp-grow-g", "cp-grow", 2)
    with groups.running(broker, members):
        wait_stable(watch, members, 2)
        admin = AdminClient({"bootstrap.servers": broker.bootstrap})
        admin.create_partitions([NewPartitions("cp-grow", 6)])["cp-grow"].result(10)
        wait_stable(watch, members, 6)
        produced = groups.produce_known(broker.bootstrap, "cp-grow", 6, 30, "grow")
        watch.wait_for(lambda: sum(len(m.records) for m in members) >= 30, groups.DEADLINE_S,
                       "every record consumed" + groups.describe_assignment(members))
        assert sorted(r.value for m in members for r in m.records) == sorted(produced.values)


def assigned_topics(bootstrap: str, group: str) -> dict[str, set[tuple[str, int]]]:
    from confluent_kafka.admin import AdminClient
    admin = AdminClient({"bootstrap.servers": bootstrap})
    described = admin.describe_consumer_groups([group])[group].result(10)
    return {m.member_id: {(tp.topic, tp.partition) for tp in m.assignment.topic_partitions}
            for m in described.members}


def test_a_regex_subscription_follows_created_topics(broker):
    watch = Watch()
    groups.create_topic(broker.bootstrap, "cp-re-a", 2)
    member = ConsumerProtocolMember(watch, broker.bootstrap, "cp-re-g", "^cp-re-.*", "re")
    with groups.running(broker, [member]):
        watch.wait_for(lambda: member.assigned == {0, 1} or member.failure, groups.DEADLINE_S,
                       lambda: "cp-re-a assigned" + groups.describe_assignment([member]))
        groups.create_topic(broker.bootstrap, "cp-re-b", 2)
        groups.create_topic(broker.bootstrap, "cp-other", 2)
        want = {("cp-re-a", 0), ("cp-re-a", 1), ("cp-re-b", 0), ("cp-re-b", 1)}
        watch.wait_for(lambda: list(assigned_topics(broker.bootstrap, "cp-re-g").values())
                       == [want], groups.DEADLINE_S,
                       lambda: f"{want}; got {assigned_topics(broker.bootstrap, 'cp-re-g')}")
        from confluent_kafka.admin import AdminClient
        admin = AdminClient({"bootstrap.servers": broker.bootstrap})
        described = admin.describe_consumer_groups(["cp-re-g"])["cp-re-g"].result(10)
        del described


def test_delete_an_empty_consumer_group_and_its_offsets(broker):
    from confluent_kafka.admin import AdminClient
    watch = Watch()
    groups.create_topic(broker.bootstrap, "cp-del", 1)
    member = ConsumerProtocolMember(watch, broker.bootstrap, "cp-del-g", "cp-del", "del")
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    try:
        member.start()
        groups.wait_split(watch, [member], 1)
        groups.produce_known(broker.bootstrap, "cp-del", 1, 3, "del")
        watch.wait_for(lambda: len(member.records) >= 3, groups.DEADLINE_S, "3 records")
        member.commit()
        with pytest.raises(Exception, match="NON_EMPTY_GROUP"):
            admin.delete_consumer_groups(["cp-del-g"])["cp-del-g"].result(10)
    finally:
        member.stop()
    admin.delete_consumer_groups(["cp-del-g"])["cp-del-g"].result(10)
    listed = admin.list_consumer_groups().result(10)
    assert "cp-del-g" not in [g.group_id for g in listed.valid]
    assert groups.committed_offsets_confluent(broker.bootstrap, "cp-del-g", "cp-del") \
        in ({}, {0: -1001})


def test_protocol_switch_with_the_group_stopped_keeps_the_committed_offsets(broker):
    """classic -> consumer -> classic, each time once the members are gone: the new members
    resume from the offsets the old ones committed. Before that, a consumer-protocol member
    joins the live classic group: the group becomes a consumer group at once (Kafka's default
    group.consumer.migration.policy, bidirectional) and the classic member, served inside it,
    gives it one of its two partitions through an ordinary classic rebalance."""
    watch = Watch()
    groups.create_topic(broker.bootstrap, "cp-switch", 2)
    produced = groups.produce_known(broker.bootstrap, "cp-switch", 2, 20, "sw1")
    classic = ConfluentMember(watch, broker.bootstrap, "cp-switch-g", "cp-switch", "classic")
    joined = ConsumerProtocolMember(watch, broker.bootstrap, "cp-switch-g", "cp-switch",
                                    "joined")
    try:
        classic.start()
        groups.wait_split(watch, [classic], 2)
        watch.wait_for(lambda: len(classic.records) >= 20, groups.DEADLINE_S, "20 records")
        classic.commit()
        joined.start()
        groups.wait_split(watch, [classic, joined], 2)
        assert not joined.errors and not classic.errors
    finally:
        joined.stop()
        classic.stop()
    more = groups.produce_known(broker.bootstrap, "cp-switch", 2, 10, "sw2")
    upgraded = ConsumerProtocolMember(watch, broker.bootstrap, "cp-switch-g", "cp-switch", "up")
    try:
        upgraded.start()
        watch.wait_for(lambda: len(upgraded.records) >= 10, groups.DEADLINE_S, "10 new records")
        assert sorted(r.value for r in upgraded.records) == sorted(more.values)
        upgraded.commit()
    finally:
        upgraded.stop()
    last = groups.produce_known(broker.bootstrap, "cp-switch", 2, 6, "sw3")
    downgraded = ConfluentMember(watch, broker.bootstrap, "cp-switch-g", "cp-switch", "down")
    try:
        downgraded.start()
        watch.wait_for(lambda: len(downgraded.records) >= 6, groups.DEADLINE_S, "6 new records")
        assert sorted(r.value for r in downgraded.records) == sorted(last.values)
    finally:
        downgraded.stop()
    del produced


def test_roster_groups_describe_and_list_show_a_consumer_group(broker):
    import subprocess
    import sys
    watch = Watch()
    groups.create_topic(broker.bootstrap, "cp-cli", 2)
    member = ConsumerProtocolMember(watch, broker.bootstrap, "cp-cli-g", "cp-cli", "cli",
                                    instance_id="cli-1")
    try:
        member.start()
        groups.wait_split(watch, [member], 2)

        def roster(*args):
            done = subprocess.run([sys.executable, "-m", "roster", args[0],
                                   "--bootstrap-server", broker.bootstrap, *args[1:]],
                                  capture_output=True, text=True, timeout=60)
            assert done.returncode == 0, done.stderr
            return done.stdout
        out = roster("groups", "describe", "cp-cli-g")
        assert "Type: consumer (KIP-848)" in out and "State: Stable" in out, out
        assert "cli-1" in out and "cp-cli:0,1" in out, out
        assert "cp-cli-g\tStable\tconsumer" in roster("groups", "list")
    finally:
        member.stop()


def test_a_group_config_sets_the_session_timeout_of_one_group(broker):
    from confluent_kafka.admin import (
        AdminClient,
        AlterConfigOpType,
        ConfigEntry,
        ConfigResource,
        ResourceType,
    )
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})

    def alter(value):
        resource = ConfigResource(ResourceType.GROUP, "cp-cfg-g", incremental_configs=[
            ConfigEntry("consumer.session.timeout.ms", value,
                        incremental_operation=AlterConfigOpType.SET)])
        return admin.incremental_alter_configs([resource])[resource].result(10)

    with pytest.raises(Exception, match="INVALID_CONFIG|must be"):
        alter("10")
    alter("3000")
    resource = ConfigResource(ResourceType.GROUP, "cp-cfg-g")
    configs = admin.describe_configs([resource])[resource].result(10)
    assert configs["consumer.session.timeout.ms"].value == "3000"
    assert configs["consumer.heartbeat.interval.ms"].value == "500"

    watch = Watch()
    groups.create_topic(broker.bootstrap, "cp-cfg", 1)
    member = ConsumerProtocolMember(watch, broker.bootstrap, "cp-cfg-g", "cp-cfg", "cfg")
    member.start()
    groups.wait_split(watch, [member], 1)
    member.stop(close=False)          # gone without a word: only the session timeout removes it
    started = __import__("time").monotonic()
    watch.wait_for(lambda: assigned_topics(broker.bootstrap, "cp-cfg-g") == {}, 20,
                   "the member removed by its 3 s session timeout")
    assert __import__("time").monotonic() - started < 15    # not the broker's 45 s


def test_roster_client_shares_a_consumer_group_with_confluent(broker):
    """roster.client's Consumer with group_protocol="consumer" (KIP-848 member) and a
    confluent-kafka consumer-protocol member split a topic and read every record once."""
    import asyncio
    import time

    from roster.client.consumer import Consumer
    watch = Watch()
    groups.create_topic(broker.bootstrap, "cp-mixed", 4)
    confluent = ConsumerProtocolMember(watch, broker.bootstrap, "cp-mixed-g", "cp-mixed", "cf")
    with groups.running(broker, [confluent]):
        async def scenario():
            consumer = Consumer(broker.bootstrap, "cp-mixed-g", group_protocol="consumer",
                                group_instance_id="roster-1")
            await consumer.subscribe(["cp-mixed"])
            deadline = time.monotonic() + groups.DEADLINE_S
            while time.monotonic() < deadline and not (
                    len(consumer.assignment) == 2 and len(confluent.assigned) == 2):
                await consumer.poll(timeout_ms=100)
            mine = {p for _, p in consumer.assignment}
            assert len(mine) == 2 and mine.isdisjoint(confluent.assigned), \
                (mine, confluent.assigned)
            produced = await asyncio.to_thread(groups.produce_known, broker.bootstrap,
                                               "cp-mixed", 4, 40, "mixed")
            seen = []
            while time.monotonic() < deadline and \
                    len(seen) + len(confluent.records) < 40:
                seen.extend(await consumer.poll(timeout_ms=200))
            await consumer.commit()
            committed = await consumer.member.committed([("cp-mixed", p) for p in mine])
            epoch = consumer.member.machine.epoch
            await consumer.close()
            return produced, seen, mine, committed, epoch
        produced, seen, mine, committed, epoch = asyncio.run(scenario())
        assert epoch > 0
        assert {r.partition for r in seen} <= mine
        values = sorted([r.value for r in seen] + [r.value for r in confluent.records])
        assert values == sorted(produced.values)
        assert committed == {("cp-mixed", p): produced.per_partition.get(p, 0) for p in mine}
