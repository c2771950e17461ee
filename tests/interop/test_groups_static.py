"""Static membership (KIP-345) with real clients: a rolling restart moves no partition, a second
consumer with the same group.instance.id fences the first, a crashed static member is evicted at
its session timeout (not before), an admin removes one at once, and DescribeGroups shows the
instance ids."""
from __future__ import annotations

import time

import pytest

from tests.support import groups
from tests.support.groups import ConfluentMember, Watch

pytestmark = [pytest.mark.interop, pytest.mark.xdist_group("groups-static")]

SETTINGS = {"group.initial.rebalance.delay.ms": "0"}
HEARTBEAT_MS = 500
# A rebalance reaches every other member with its next heartbeat (REBALANCE_IN_PROGRESS), so a
# window of three heartbeat intervals without a callback means there was none.
QUIET_S = 3 * HEARTBEAT_MS / 1000


@pytest.fixture(scope="module")
def group_broker(tmp_path_factory):
    from tests.support.process import BrokerProcess
    broker = BrokerProcess(tmp_path_factory.mktemp("groups-static"), SETTINGS).start()
    yield broker
    broker.stop()


@pytest.fixture
def running(group_broker):
    """Members started by a test; all stopped at its end. Prints the broker's log on failure."""
    members: list = []
    mark = len(group_broker.output)
    try:
        yield members
    finally:
        for member in members:
            try:
                member.stop()
            except Exception:   # a member that already failed must not hide the test's error
                pass
    # the broker's view of this test, for the report (shown by pytest on failure only)
    print("broker output:\n" + "\n".join(group_broker.output[mark:]))


def confluent(watch, broker, group, topic, name, instance_id=None, **config):
    return ConfluentMember(watch, broker.bootstrap, group, topic, name, instance_id,
                           {"heartbeat.interval.ms": HEARTBEAT_MS, **config})


def topic_for(broker, name, partitions):
    groups.create_topic(broker.bootstrap, name, partitions)
    return name


# -- rolling restart ---------------------------------------------------------------------------

def test_rolling_restart_of_static_members_moves_no_partition(group_broker, running):
    partitions, session_ms = 8, 10000
    topic = group = topic_for(group_broker, "static-rolling", partitions)
    watch = Watch()
    slots = [confluent(watch, group_broker, group, topic, f"roll-{i}", f"roll-instance-{i}",
                       **{"session.timeout.ms": session_ms}) for i in range(4)]
    running.extend(slots)
    for member in slots:
        member.start()
    groups.wait_split(watch, slots, partitions)
    baseline = {id(m): m.callbacks() for m in slots}

    def changed(members):
        return [m for m in members if m.callbacks() != baseline[id(m)]]

    first_close = None
    for i in range(len(slots)):
        old = slots[i]
        previous = old.assigned
        others = slots[:i] + slots[i + 1:]
        old.stop()    # close(): a static member sends no LeaveGroup
        first_close = first_close or time.monotonic()
        closed_at = time.monotonic()
        new = confluent(watch, group_broker, group, topic, f"roll-{i}-again",
                        f"roll-instance-{i}", **{"session.timeout.ms": session_ms})
        running.append(new)
        slots[i] = new
        baseline[id(new)] = 1      # exactly its own first assignment
        new.start()
        watch.wait_for(lambda: new.count("assign") >= 1 or changed(others), groups.DEADLINE_S,
                       lambda: f"restarted roll-instance-{i} assigned"
                       + groups.describe_assignment(slots))
        assert changed(others) == [], (f"restarting roll-instance-{i} rebalanced the others"
                                       + groups.describe_assignment(slots))
        assert new.assigned == previous, (
            f"roll-instance-{i} came back with {sorted(new.assigned)}, had {sorted(previous)}")
        assert time.monotonic() - closed_at < session_ms / 1000
        broken = watch.quiet(lambda: changed(slots), QUIET_S)
        assert not broken, (f"callbacks after roll-instance-{i} rejoined"
                            + groups.describe_assignment(slots))

    # The replaced member ids' session timers must fire harmlessly: stay quiet until the first
    # closed member's session timeout (plus slack) has passed.
    remaining = first_close + session_ms / 1000 + 2 - time.monotonic()
    broken = watch.quiet(lambda: changed(slots), max(remaining, QUIET_S))
    assert not broken, "rebalance after the old member ids' session timeouts" + \
        groups.describe_assignment(slots)
    for member in slots:
        assert [e.kind for e in member.events] == ["assign"], member
    assert groups.split_evenly(slots, partitions)


def test_rolling_restart_of_dynamic_members_rebalances(group_broker, running):
    partitions = 8
    topic = group = topic_for(group_broker, "dynamic-rolling", partitions)
    watch = Watch()
    slots = [confluent(watch, group_broker, group, topic, f"dyn-{i}") for i in range(4)]
    running.extend(slots)
    for member in slots:
        member.start()
    groups.wait_split(watch, slots, partitions)

    for i in range(len(slots)):
        others = slots[:i] + slots[i + 1:]
        revokes = {id(m): m.count("revoke") for m in others}
        assigns = {id(m): m.count("assign") for m in others}
        slots[i].stop()   # close(): a dynamic member sends LeaveGroup, so the group rebalances

        def rebalanced():
            return (all(m.count("revoke") > revokes[id(m)] and m.count("assign") > assigns[id(m)]
                        for m in others) and groups.split_evenly(others, partitions))
        watch.wait_for(rebalanced, groups.DEADLINE_S,
                       lambda: f"the others to rebalance after dyn-{i} left"
                       + groups.describe_assignment(others))
        new = confluent(watch, group_broker, group, topic, f"dyn-{i}-again")
        running.append(new)
        slots[i] = new
        new.start()
        groups.wait_split(watch, slots, partitions)


@pytest.mark.parametrize("client", ["kafka-python", "aiokafka"])
def test_static_restart_without_rebalance_in_other_clients(group_broker, running, client):
    """The same bounce with the Python clients. kafka-python skips LeaveGroup only when it infers
    a broker >= 2.3 from ApiVersions (its consumer coordinator checks the inferred version);
    aiokafka's Heartbeat v1 and OffsetCommit v3 carry no instance id, so the broker must know
    the member by its id alone."""
    partitions = 4
    topic = group = topic_for(group_broker, f"static-restart-{client}", partitions)
    watch = Watch()
    cls = groups.MEMBERS[client]
    config = {"heartbeat_interval_ms": HEARTBEAT_MS, "session_timeout_ms": 10000}

    def member(name, instance):
        return cls(watch, group_broker.bootstrap, group, topic, name, instance, config)

    members = [member(f"{client}-{i}", f"{client}-instance-{i}") for i in range(2)]
    running.extend(members)
    for m in members:
        m.start()
    groups.wait_split(watch, members, partitions)
    stays, bounced = members
    callbacks = stays.callbacks()
    previous = bounced.assigned

    bounced.stop()
    again = member(f"{client}-1-again", f"{client}-instance-1")
    running.append(again)
    again.start()
    watch.wait_for(lambda: again.assigned or stays.callbacks() != callbacks, groups.DEADLINE_S,
                   lambda: "the restarted member assigned"
                   + groups.describe_assignment([stays, again]))
    assert stays.callbacks() == callbacks, "the restart rebalanced the group" + \
        groups.describe_assignment([stays, again])
    assert again.assigned == previous
    assert not watch.quiet(lambda: stays.callbacks() != callbacks, QUIET_S), \
        "a rebalance followed the restart" + groups.describe_assignment([stays, again])


# -- fencing -----------------------------------------------------------------------------------

def test_second_consumer_with_the_same_instance_id_fences_the_first(group_broker, running):
    from confluent_kafka import KafkaError, KafkaException
    partitions = 4
    topic = group = topic_for(group_broker, "static-fence", partitions)
    watch = Watch()
    first = confluent(watch, group_broker, group, topic, "fence-first", "fence-instance")
    running.append(first)
    first.start()
    groups.wait_split(watch, [first], partitions)

    second = confluent(watch, group_broker, group, topic, "fence-second", "fence-instance")
    running.append(second)
    second.start()
    watch.wait_for(lambda: first.errors and second.assigned, groups.DEADLINE_S,
                   lambda: "the first fenced and the second assigned"
                   + groups.describe_assignment([first, second]))
    # librdkafka 2.16 turns FENCED_INSTANCE_ID (82) into a fatal consumer error: poll() returns
    # a message whose error is _FATAL with the broker's message. (The KafkaError attached to a
    # message does not carry the fatal flag in confluent-kafka 2.16.1: fatal() is False there.)
    error = first.errors[0]
    assert error.code() == KafkaError._FATAL, error
    assert "Static consumer fenced by other consumer with same group.instance.id" in error.str()
    assert error.fatal() is False
    assert second.assigned == frozenset(range(partitions))
    # the fenced consumer is dead for good: a commit fails with the fatal state
    with pytest.raises(KafkaException) as raised:
        first.commit()
    assert raised.value.args[0].code() == KafkaError._FATAL


# -- crash and eviction --------------------------------------------------------------------------

def test_killed_static_member_is_evicted_at_its_session_timeout(group_broker, running):
    partitions, session_ms = 6, 6000   # the broker's group.min.session.timeout.ms
    topic = group = topic_for(group_broker, "static-kill9", partitions)
    watch = Watch()
    victim = groups.ConfluentProcessMember(
        watch, group_broker.bootstrap, group, topic, "kill-victim", "kill-victim-instance",
        {"heartbeat.interval.ms": HEARTBEAT_MS, "session.timeout.ms": session_ms})
    survivor = confluent(watch, group_broker, group, topic, "kill-survivor",
                         "kill-survivor-instance", **{"session.timeout.ms": session_ms})
    running.extend([victim, survivor])
    victim.start()
    survivor.start()
    groups.wait_split(watch, [victim, survivor], partitions)
    assigns = survivor.count("assign")

    killed_at = time.monotonic()
    victim.kill9()
    watch.wait_for(lambda: survivor.count("assign") > assigns and survivor.assigned,
                   session_ms / 1000 + 15,
                   lambda: "the survivor to take over" + groups.describe_assignment([survivor]))
    taken_at = survivor.events[-1].at - killed_at
    assert survivor.assigned == frozenset(range(partitions))
    # Kafka does not evict on a closed connection, only when the session runs out; the victim's
    # last heartbeat was at most one interval before the kill.
    assert taken_at >= (session_ms - HEARTBEAT_MS) / 1000 - 0.25, taken_at
    assert taken_at <= session_ms / 1000 + 5, taken_at


def test_admin_removes_a_static_member_at_once(group_broker, running):
    from kafka import KafkaAdminClient
    from kafka.admin import MemberToRemove
    from kafka.errors import NoError
    partitions, session_ms = 6, 45000
    topic = group = topic_for(group_broker, "static-remove", partitions)
    watch = Watch()
    gone = confluent(watch, group_broker, group, topic, "remove-gone", "remove-gone-instance",
                     **{"session.timeout.ms": session_ms})
    survivor = confluent(watch, group_broker, group, topic, "remove-survivor",
                         "remove-survivor-instance", **{"session.timeout.ms": session_ms})
    running.extend([gone, survivor])
    gone.start()
    survivor.start()
    groups.wait_split(watch, [gone, survivor], partitions)
    callbacks = survivor.callbacks()

    gone.stop()   # a static member's close sends no LeaveGroup: the group keeps its slot
    assert not watch.quiet(lambda: survivor.callbacks() != callbacks, QUIET_S), \
        "the group rebalanced when a static member closed" + groups.describe_assignment([survivor])

    admin = KafkaAdminClient(bootstrap_servers=group_broker.bootstrap)
    try:
        removed_at = time.monotonic()
        result = admin.remove_group_members(
            group, [MemberToRemove(group_instance_id="remove-gone-instance")])
    finally:
        admin.close()
    assert result == {"remove-gone-instance": NoError}, result
    watch.wait_for(lambda: survivor.assigned == frozenset(range(partitions)), 10,
                   lambda: "the survivor to get every partition"
                   + groups.describe_assignment([survivor]))
    assert time.monotonic() - removed_at < 10 < session_ms / 1000


# -- DescribeGroups ------------------------------------------------------------------------------

def test_describe_groups_shows_instance_ids_state_and_assignments(group_broker, running):
    from confluent_kafka import ConsumerGroupState
    from confluent_kafka.admin import AdminClient
    from kafka import KafkaAdminClient
    from kafka.coordinator.assignors.range import RangePartitionAssignor
    partitions = 6
    topic = group = topic_for(group_broker, "static-describe", partitions)
    watch = Watch()
    members = [
        confluent(watch, group_broker, group, topic, "describe-ck-0", "describe-ck-0-instance",
                  **{"partition.assignment.strategy": "range"}),
        confluent(watch, group_broker, group, topic, "describe-ck-1", "describe-ck-1-instance",
                  **{"partition.assignment.strategy": "range"}),
        groups.KafkaPythonMember(watch, group_broker.bootstrap, group, topic, "describe-kp",
                                 "describe-kp-instance",
                                 {"partition_assignment_strategy": [RangePartitionAssignor],
                                  "heartbeat_interval_ms": HEARTBEAT_MS}),
    ]
    running.extend(members)
    for member in members:
        member.start()
    groups.wait_split(watch, members, partitions)
    want = {m.instance_id: sorted(m.assigned) for m in members}
    client_ids = {m.instance_id: m.name for m in members}

    # confluent-kafka: DescribeGroups v5
    admin = AdminClient({"bootstrap.servers": group_broker.bootstrap})
    description = admin.describe_consumer_groups([group])[group].result(groups.DEADLINE_S)
    assert description.state == ConsumerGroupState.STABLE
    assert description.partition_assignor == "range"
    assert description.is_simple_consumer_group is False
    assert {m.group_instance_id: sorted(tp.partition for tp in m.assignment.topic_partitions
                                        if tp.topic == topic)
            for m in description.members} == want
    assert {m.group_instance_id: m.client_id for m in description.members} == client_ids
    for m in description.members:
        assert m.member_id.startswith(m.group_instance_id + "-"), m.member_id

    # kafka-python: DescribeGroups v6, with the subscription and assignment decoded
    kp_admin = KafkaAdminClient(bootstrap_servers=group_broker.bootstrap)
    try:
        described = kp_admin.describe_groups([group])[group]
    finally:
        kp_admin.close()
    assert described["error"] is None, described
    assert described["group_state"] == "Stable"
    assert described["protocol_type"] == "consumer"
    assert described["protocol_data"] == "range"
    got = {}
    for m in described["members"]:
        got[m["group_instance_id"]] = sorted(
            p for entry in m["member_assignment"]["assigned_partitions"]
            if entry["topic"] == topic for p in entry["partitions"])
        assert m["client_id"] == client_ids[m["group_instance_id"]]
        assert m["client_host"] == "/127.0.0.1"   # Java's InetAddress.toString()
        assert m["member_metadata"]["topics"] == [topic]
    assert got == want
