"""The streaming reader with group.protocol=consumer (KIP-848): its options, its group session
against a real broker (incremental handovers, static restarts) and one real Spark query."""
from __future__ import annotations

import pytest

from roster.admin.client import AdminClient
from roster.admin.groups import describe
from roster.spark.group import GroupSession
from roster.spark.options import OptionError, read_settings
from tests.spark.helpers import Collected, start, wait_until
from tests.support.process import BrokerProcess

pytestmark = [pytest.mark.spark, pytest.mark.xdist_group("spark")]
BOOT = {"kafka.bootstrap.servers": "h:1", "subscribe": "t"}


@pytest.fixture(scope="module")
def roster_broker(tmp_path_factory):
    """This module's broker (in place of conftest's): consumer-group heartbeats every 500 ms,
    so a partition freed by a revocation reaches its next owner quickly."""
    broker = BrokerProcess(tmp_path_factory.mktemp("spark-consumer-broker"), {
        "group.initial.rebalance.delay.ms": "0",
        "group.consumer.heartbeat.interval.ms": "500",
        "group.consumer.min.heartbeat.interval.ms": "500"})
    broker.start()
    yield broker
    broker.stop()


def options(**more) -> dict[str, str]:
    """As Spark hands them over: lower-cased keys."""
    return {k.lower(): str(v) for k, v in {**BOOT, **more}.items()}


# -- options ------------------------------------------------------------------------------------

def test_group_protocol_is_classic_unless_consumer_is_asked_for_in_any_case():
    assert read_settings(options(), streaming=True).group_protocol == "classic"
    s = read_settings(options(**{"kafka.group.protocol": "CONSUMER",
                                 "group.remote.assignor": "Range"}), streaming=True)
    assert (s.group_protocol, s.group_remote_assignor) == ("consumer", "range")
    s = read_settings(options(**{"group.protocol": "consumer"}), streaming=True)
    assert s.group_remote_assignor is None          # the broker's default assignor


@pytest.mark.parametrize("more, message", [
    ({"group.protocol": "next"}, "group.protocol must be classic or consumer, got 'next'"),
    ({"group.remote.assignor": "uniform"}, "group.remote.assignor applies only with "
                                           "group.protocol=consumer"),
    ({"group.protocol": "consumer", "group.remote.assignor": "sticky"},
     "group.remote.assignor must be uniform or range"),
    ({"group.protocol": "consumer", "kafka.session.timeout.ms": "10000"},
     "session.timeout.ms is not supported with group.protocol=consumer"),
    ({"group.protocol": "consumer", "heartbeat.interval.ms": "1000"},
     "heartbeat.interval.ms is not supported"),
    ({"group.protocol": "consumer", "partition.assignment.strategy": "range"},
     "use group.remote.assignor"),
])
def test_bad_group_protocol_options_are_refused_clearly(more, message):
    with pytest.raises(OptionError, match=message):
        read_settings(options(**more), streaming=True)


# -- the group session against a real broker ---------------------------------------------------

def session(kafka, topic: str, group: str, instance: str | None = None,
            revoked: list | None = None) -> GroupSession:
    """A joined consumer-protocol session; `revoked` collects what its on_revoked is given."""
    more = {"group.instance.id": instance} if instance else {}
    settings = read_settings({"kafka.bootstrap.servers": kafka.bootstrap, "subscribe": topic,
                              "group.id": group, "group.protocol": "consumer", **more},
                             streaming=True)
    s = GroupSession(settings)
    if revoked is not None:
        handover = s._on_revoked

        async def recording(partitions):
            revoked.append(tuple(partitions))
            await handover(partitions)
        s._on_revoked = recording                  # what join() hands the member
    s.join([topic])
    return s


def owned(s: GroupSession) -> set[tuple[str, int]]:
    return set(s.member.machine.owned)


def wait_owned(s: GroupSession, count: int, timeout_s: float = 30) -> set[tuple[str, int]]:
    """Wait (on the member's own change notifications) until it owns `count` partitions."""
    s.run(s.member.wait_for(lambda: len(s.member.machine.owned) == count
                            and s.member.machine.pending is None, timeout_s), timeout_s + 5)
    return owned(s)


def test_sessions_split_hand_over_incrementally_and_commit_what_was_completed(kafka):
    """A holds all 4 partitions with a batch in flight when B joins: A gives up only two, and
    only once that batch completed, committing its ends; B gets them then. When B closes,
    A gets them back with B's completed offsets committed."""
    kafka.create("cp-split", 4)
    all4 = {("cp-split", p) for p in range(4)}
    revoked_from_a: list = []
    a = session(kafka, "cp-split", "cp-split-g", revoked=revoked_from_a)
    b = None
    try:
        assert wait_owned(a, 4) == all4
        a.started_at({tp: 0 for tp in all4})
        ends = {tp: 10 + tp[1] for tp in all4}
        a.planning({tp: 0 for tp in all4}, ends)        # a batch reads all four

        b = session(kafka, "cp-split", "cp-split-g")
        # A's revocation waits for the batch; its heartbeats keep the partitions its own
        a.run(a.member.wait_for(lambda: bool(a.member.machine.revoking), 30), 35)
        b.run(b.member.wait_for(lambda: b.member.machine.epoch > 0, 30), 35)
        assert owned(b) == set()
        a.completed(ends)                                # the batch is over
        given = wait_owned(b, 2)
        assert wait_owned(a, 2) == all4 - given
        assert revoked_from_a == [tuple(sorted(given))]  # only what B took
        assert kafka.committed("cp-split-g", "cp-split", 4) == {
            p: (ends[("cp-split", p)] if ("cp-split", p) in given else -1) for p in range(4)}

        b.started_at({tp: ends[tp] for tp in given})
        b.completed({tp: 100 + tp[1] for tp in given})   # B read on, then stops
        b.close()
        assert wait_owned(a, 4) == all4
        committed = kafka.committed("cp-split-g", "cp-split", 4)
        assert {p: committed[p] for _, p in given} == {p: 100 + p for _, p in given}
    finally:
        a.close()
        if b is not None:
            b.close()


def test_static_session_restarting_within_the_session_timeout_keeps_its_partitions(kafka):
    """B closes (a static leave, epoch -2) and a new session with B's instance id comes back:
    it gets B's partitions, and A, which got its two after B joined, gives up nothing. A
    second live session with A's instance id is refused and fails."""
    kafka.create("cp-static", 4)
    b = session(kafka, "cp-static", "cp-static-g", instance="reader-b")
    wait_owned(b, 4)
    revoked_from_a: list = []
    a = session(kafka, "cp-static", "cp-static-g", instance="reader-a", revoked=revoked_from_a)
    again = None
    try:
        a_parts, b_parts = wait_owned(a, 2), wait_owned(b, 2)
        b.close()                                       # static: stays in the group
        again = session(kafka, "cp-static", "cp-static-g", instance="reader-b")
        assert wait_owned(again, 2) == b_parts
        assert owned(a) == a_parts and revoked_from_a == []

        dup = session(kafka, "cp-static", "cp-static-g", instance="reader-a")
        try:     # a second live reader-a is refused; the first one keeps its partitions
            with pytest.raises(Exception, match="(?i)unreleased_instance_id"):
                dup.stable_snapshot(10)
            assert "UNRELEASED_INSTANCE_ID" in dup.fatal.upper()
        finally:
            dup.close()
        assert owned(a) == a_parts and revoked_from_a == []
    finally:
        a.close()
        if again is not None:
            again.close()


# -- one real Spark query ------------------------------------------------------------------------

def test_a_streaming_query_reads_everything_as_a_consumer_protocol_member(spark, kafka,
                                                                         tmp_path):
    kafka.create("cp-stream", 2)
    placed = kafka.produce("cp-stream", [(None, f"v{i}".encode()) for i in range(40)])
    ends = {p: max(o for q, o in placed if q == p) + 1 for p in (0, 1)}
    sink = Collected()
    query = start(spark, kafka.bootstrap, sink, tmp_path / "cp", subscribe="cp-stream",
                  startingOffsets="earliest", maxOffsetsPerTrigger=15,
                  **{"group.id": "cp-stream-g", "kafka.group.protocol": "consumer",
                     "group.remote.assignor": "uniform"})
    try:
        wait_until(lambda: sink.places() == sorted(placed), 90, "every record", queries=[query])
        wait_until(lambda: kafka.committed("cp-stream-g", "cp-stream", 2) == ends, 60,
                   "the group's offsets at the end", queries=[query])
        with AdminClient(kafka.bootstrap) as admin:
            group = describe(admin, "cp-stream-g")
        assert group.assignor_name == "uniform"          # a ConsumerGroupDescribe answer
        [member] = group.members
        assert member.client_id == "roster-spark"
        assert sorted((tp.topic_name, p) for tp in member.assignment.topic_partitions
                      for p in tp.partitions) == [("cp-stream", 0), ("cp-stream", 1)]
    finally:
        query.stop()
