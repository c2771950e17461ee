"""Real clients form consumer groups on roster: the partitions are split so that each is owned by
exactly one member, every record is consumed exactly once across the group, and the offsets the
members commit are what an admin client reads back."""
from __future__ import annotations

from collections import Counter

import pytest

from tests.support import groups
from tests.support.groups import Watch

pytestmark = [pytest.mark.interop, pytest.mark.xdist_group("groups-form")]

PARTITIONS = 6
COUNT = 60
SETTINGS = {"group.initial.rebalance.delay.ms": "0"}


@pytest.fixture(scope="module")
def group_broker(tmp_path_factory):
    from tests.support.process import BrokerProcess
    broker = BrokerProcess(tmp_path_factory.mktemp("groups-form"), SETTINGS).start()
    yield broker
    broker.stop()


def consume_as_group(broker, watch, members, topic, group, tag):
    """Form the group, then produce a known set of records and check that each is consumed once,
    by the member that owns its partition. Returns the produced set."""
    try:
        for member in members:
            member.start()
        groups.wait_split(watch, members, PARTITIONS)
        owner = {p: m for m in members for p in m.assigned}

        produced = groups.produce_known(broker.bootstrap, topic, PARTITIONS, COUNT, tag)
        watch.wait_for(lambda: sum(len(m.records) for m in members) >= COUNT, groups.DEADLINE_S,
                       lambda: f"{COUNT} records consumed; got "
                       f"{[len(m.records) for m in members]}" + groups.describe_assignment(members))

        consumed = [r for m in members for r in m.records]
        counts = Counter(r.value for r in consumed)
        assert sorted(counts) == sorted(produced.values), "consumed a different set of records"
        assert [v for v, n in counts.items() if n > 1] == [], "records consumed more than once"
        for member in members:
            # each member read only its own partitions, and nobody was rebalanced meanwhile
            assert {r.partition for r in member.records} <= member.assigned, member
            assert all(owner[r.partition] is member for r in member.records)
        assert groups.split_evenly(members, PARTITIONS), groups.describe_assignment(members)
        return produced
    except BaseException:
        print("broker output:\n" + "\n".join(broker.output[-60:]))
        raise


def assert_committed(broker, group, topic, produced):
    want = {p: produced.per_partition.get(p, 0) for p in range(PARTITIONS)}
    assert groups.committed_offsets(broker.bootstrap, group, topic) == want


@pytest.mark.parametrize("client", ["confluent-kafka", "kafka-python", "aiokafka"])
def test_three_members_split_partitions_and_commit(group_broker, client):
    topic = group = f"form-{client}"
    groups.create_topic(group_broker.bootstrap, topic, PARTITIONS)
    watch = Watch()
    cls = groups.MEMBERS[client]
    members = [cls(watch, group_broker.bootstrap, group, topic, f"{client}-{i}") for i in range(3)]
    try:
        produced = consume_as_group(group_broker, watch, members, topic, group, client)
        for member in members:
            member.commit()
        assert_committed(group_broker, group, topic, produced)
        if client == "confluent-kafka":
            # the second admin client reads the same offsets (OffsetFetch v9 vs kafka-python's v8)
            want = {p: produced.per_partition.get(p, 0) for p in range(PARTITIONS)}
            assert groups.committed_offsets_confluent(group_broker.bootstrap, group, topic) == want
    finally:
        for member in members:
            member.stop()


def test_kcat_balanced_consumers_split_partitions_and_commit(group_broker):
    topic = group = "form-kcat"
    groups.create_topic(group_broker.bootstrap, topic, PARTITIONS)
    watch = Watch()
    members = [groups.KcatMember(watch, group_broker.bootstrap, group, topic, f"kcat-{i}")
               for i in range(3)]
    try:
        produced = consume_as_group(group_broker, watch, members, topic, group, "kcat")
    finally:
        for member in members:
            member.stop()   # SIGINT: kcat commits what it consumed and leaves the group
    for member in members:
        assert member.proc.returncode == 0, "\n".join(member.stderr[-20:])
    assert_committed(group_broker, group, topic, produced)


def test_mixed_group_with_the_range_assignor(group_broker):
    """A confluent-kafka and a kafka-python consumer in one group agree on `range`, the only
    assignor they both offer here, and split 6 partitions into two contiguous ranges."""
    from kafka.coordinator.assignors.range import RangePartitionAssignor
    topic = group = "form-mixed"
    groups.create_topic(group_broker.bootstrap, topic, PARTITIONS)
    watch = Watch()
    members = [
        groups.ConfluentMember(watch, group_broker.bootstrap, group, topic, "mixed-ck",
                               config={"partition.assignment.strategy": "range"}),
        groups.KafkaPythonMember(watch, group_broker.bootstrap, group, topic, "mixed-kp",
                                 config={"partition_assignment_strategy":
                                         [RangePartitionAssignor]}),
    ]
    try:
        produced = consume_as_group(group_broker, watch, members, topic, group, "mixed")
        assert sorted(sorted(m.assigned) for m in members) == [[0, 1, 2], [3, 4, 5]]
        for member in members:
            member.commit()
        assert_committed(group_broker, group, topic, produced)
    finally:
        for member in members:
            member.stop()


def test_cooperative_sticky_members_join_without_stopping_the_others(group_broker):
    """librdkafka's cooperative-sticky assignor (KIP-429, over the classic protocol): as members
    join one by one, the members already there give up only the partitions that move and keep
    consuming the rest; the group ends split evenly and reads every record once."""
    topic = group = "form-cooperative"
    groups.create_topic(group_broker.bootstrap, topic, PARTITIONS)
    watch = Watch()
    members = [groups.ConfluentMember(watch, group_broker.bootstrap, group, topic, f"coop-{i}",
                                      config={"partition.assignment.strategy":
                                              "cooperative-sticky"})
               for i in range(3)]
    try:
        for joined in range(1, 4):
            members[joined - 1].start()
            groups.wait_split(watch, members[:joined], PARTITIONS)
        first = members[0]
        revoked = [e.partitions for e in first.events if e.kind == "revoke"]
        # 6 -> 3 -> 2 partitions: two revocations naming only what moved, never everything
        assert [len(r) for r in revoked] == [3, 1], groups.describe_assignment(members)
        assert not any(e.kind == "lost" for m in members for e in m.events)
        produced = groups.produce_known(group_broker.bootstrap, topic, PARTITIONS, COUNT,
                                        "coop")
        watch.wait_for(lambda: sum(len(m.records) for m in members) >= COUNT,
                       groups.DEADLINE_S, lambda: groups.describe_assignment(members))
        consumed = Counter(r.value for m in members for r in m.records)
        assert sorted(consumed) == sorted(produced.values) and max(consumed.values()) == 1
    finally:
        for member in members:
            member.stop()
