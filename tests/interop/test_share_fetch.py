"""The share fetch path (KIP-932) on a real roster broker over a real socket: ShareFetch and
ShareAcknowledge requests acquire records for a member, carry them with their AcquiredRecords,
apply acknowledgements (piggy-backed and on their own) durably, park on a long poll that
appends and released records end, and give a closed connection's records back at once.

The broker runs in this process (a real listener on an event-loop thread) so that a test can
initialise share partitions itself, as the membership side does when it assigns them; the
requests are the ones a share consumer sends. Share session rules are compared with Kafka 4.4
in test_share_fetch_kafka.py."""
from __future__ import annotations

import asyncio
import threading
import time

import pytest

from roster.broker.broker import Broker
from roster.broker.network.connection import Connection
from roster.broker.network.server import ConnectionTable
from roster.config import BrokerConfig
from roster.protocol.errors import ErrorCode
from roster.security.listen import ListenerPlan
from tests.interop.share_fetch_wire import (
    acquired,
    partitions_of,
    produce,
    share_acknowledge,
    share_fetch,
    topic_id,
    values,
)
from tests.support.transactions import create_topics
from tests.support.wire import Wire

pytestmark = pytest.mark.interop

ACCEPT, RELEASE, REJECT = 1, 2, 3
OTHER = "o" * 22


class ServedBroker:
    """A roster Broker serving a real PLAINTEXT listener on an event-loop thread."""

    def __init__(self, data_dir, settings=()) -> None:
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self.thread.start()
        config = BrokerConfig.load(assignments=["offsets.topic.num.partitions=1", *settings],
                                   environ={})
        self.broker, port = self.run(self._start(config, data_dir))
        self.bootstrap = f"127.0.0.1:{port}"

    async def _start(self, config, data_dir):
        broker = Broker(config, data_dir)
        broker.start()
        listeners = ListenerPlan(config, data_dir, "127.0.0.1", 0, Connection)
        listening = await listeners.open(broker, ConnectionTable(config))
        broker.serve_on(listeners, listening)
        self.servers = [item.server for item in listening]
        deadline = time.monotonic() + 20
        while not (broker.groups.loaded and broker.share_state.loaded):
            assert time.monotonic() < deadline
            await asyncio.sleep(0.01)
        return broker, listening[0].port

    def run(self, coroutine, timeout_s: float = 20):
        return asyncio.run_coroutine_threadsafe(coroutine, self.loop).result(timeout_s)

    def initialize(self, group: str, tid, partitions=(0,)) -> None:
        """What the membership side does when the group is assigned the partitions."""
        async def initialize():
            self.broker.share_state.initialize(group, [(tid, p) for p in partitions])
            return [self.broker.share_state.start_offset((group, tid, p)) for p in partitions]
        assert None not in self.run(initialize())

    def close(self) -> None:
        async def stop():
            for server in self.servers:
                server.close()
            await self.broker.stop()
        self.run(stop())
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(10)


@pytest.fixture
def served(tmp_path):
    server = ServedBroker(tmp_path)
    yield server
    server.close()


def scenario(served, name: str, partitions: int = 1):
    """A topic, its id, and a group whose share partitions start at the topic's end."""
    create_topics(served.bootstrap, name, partitions=partitions)
    with Wire(served.bootstrap) as wire:
        tid = topic_id(wire, name)
    group = "g-" + name
    served.initialize(group, tid, range(partitions))
    return tid, group


def test_records_are_acquired_handed_out_and_accepted(served):
    tid, group = scenario(served, "accepted")
    produce(served.bootstrap, "accepted", [b"a", b"b", b"c"])
    with Wire(served.bootstrap) as wire:
        first = share_fetch(wire, group=group, parts=[(tid, [(0, [])])])
        assert first.error_code == ErrorCode.none
        assert first.acquisition_lock_timeout.total_seconds() == 30
        assert acquired(first) == {(tid, 0): [(0, 2, 1)]}
        assert values(first) == [b"a", b"b", b"c"]
        # the acknowledgement rides on the next fetch; nothing is left to hand out
        second = share_fetch(wire, group=group, epoch=1, max_wait_ms=100,
                             parts=[(tid, [(0, [(0, 2, [ACCEPT])])])])
        part = partitions_of(second)[(tid, 0)]
        assert part.acknowledge_error_code == 0 and not part.acquired_records
        # a later fetch with nothing new answers no partition at all
        third = share_fetch(wire, group=group, epoch=2, max_wait_ms=100)
        assert third.error_code == ErrorCode.none and third.responses == ()
        # accepted records are never handed out again, even to another member
        with Wire(served.bootstrap) as other:
            again = share_fetch(other, group=group, member=OTHER, max_wait_ms=100,
                                parts=[(tid, [(0, [])])])
            assert acquired(again) == {}


def test_released_records_come_back_with_their_delivery_count_raised(served):
    tid, group = scenario(served, "released")
    produce(served.bootstrap, "released", [b"a", b"b"])
    with Wire(served.bootstrap) as wire:
        assert acquired(share_fetch(wire, group=group, parts=[(tid, [(0, [])])])) == \
            {(tid, 0): [(0, 1, 1)]}
        answer = share_acknowledge(wire, group=group, epoch=1,
                                   parts=[(tid, [(0, [(0, 1, [RELEASE, ACCEPT])])])])
        assert [p.error_code for p in partitions_of(answer).values()] == [ErrorCode.none]
        again = share_fetch(wire, group=group, epoch=2)
        assert acquired(again) == {(tid, 0): [(0, 0, 2)]}
        assert values(again) == [b"a"]


def test_max_records_across_modes(served):
    """batch_optimized hands out whole batches (past MaxRecords); record_limit (KIP-1206)
    exactly MaxRecords."""
    tid, group = scenario(served, "limits")
    from confluent_kafka import Producer
    producer = Producer({"bootstrap.servers": served.bootstrap, "linger.ms": 200})
    for value in (b"0", b"1", b"2", b"3", b"4"):
        producer.produce("limits", value=value, partition=0)
    producer.flush(10)   # one batch of five
    with Wire(served.bootstrap) as wire:
        strict = share_fetch(wire, group=group, member="a" * 22, max_records=2, mode=1,
                             parts=[(tid, [(0, [])])])
        assert acquired(strict) == {(tid, 0): [(0, 1, 1)]}
        assert values(strict) == [b"0", b"1"]
        whole = share_fetch(wire, group=group, member="b" * 22, max_records=1, mode=0,
                            parts=[(tid, [(0, [])])])
        assert acquired(whole) == {(tid, 0): [(2, 4, 1)]}
        assert values(whole) == [b"2", b"3", b"4"]


def test_a_parked_fetch_answers_as_soon_as_records_are_appended(served):
    tid, group = scenario(served, "parked")
    with Wire(served.bootstrap) as wire:
        started = time.monotonic()
        answered = {}
        fetching = threading.Thread(target=lambda: answered.setdefault("answer", share_fetch(
            wire, group=group, max_wait_ms=15000, parts=[(tid, [(0, [])])])))
        fetching.start()
        time.sleep(0.5)
        produce(served.bootstrap, "parked", [b"late"])
        fetching.join(20)
        assert time.monotonic() - started < 10
        assert values(answered["answer"]) == [b"late"]


def test_the_long_poll_ends_at_max_wait_with_nothing_to_hand_out(served):
    tid, group = scenario(served, "idle")
    with Wire(served.bootstrap) as wire:
        started = time.monotonic()
        answer = share_fetch(wire, group=group, max_wait_ms=700, parts=[(tid, [(0, [])])])
        waited = time.monotonic() - started
        assert 0.6 < waited < 5
        # nothing handed out: a full fetch lists the partition it read, empty
        assert acquired(answer) == {} and list(partitions_of(answer)) == [(tid, 0)]


def test_a_parked_fetch_gets_the_records_another_member_releases(served):
    tid, group = scenario(served, "handover")
    produce(served.bootstrap, "handover", [b"x"])
    with Wire(served.bootstrap) as holder, Wire(served.bootstrap) as waiter:
        assert acquired(share_fetch(holder, group=group, parts=[(tid, [(0, [])])])) == \
            {(tid, 0): [(0, 0, 1)]}
        answered = {}
        fetching = threading.Thread(target=lambda: answered.setdefault("answer", share_fetch(
            waiter, group=group, member=OTHER, max_wait_ms=15000, parts=[(tid, [(0, [])])])))
        fetching.start()
        time.sleep(0.5)
        started = time.monotonic()
        share_acknowledge(holder, group=group, epoch=1, parts=[(tid, [(0, [(0, 0, [RELEASE])])])])
        fetching.join(20)
        assert time.monotonic() - started < 5
        assert acquired(answered["answer"]) == {(tid, 0): [(0, 0, 2)]}


def test_a_closed_connection_gives_its_records_back_long_before_the_lock_expires(served):
    tid, group = scenario(served, "killed")
    produce(served.bootstrap, "killed", [b"k1", b"k2"])
    holder = Wire(served.bootstrap)
    assert acquired(share_fetch(holder, group=group, parts=[(tid, [(0, [])])])) == \
        {(tid, 0): [(0, 1, 1)]}
    with Wire(served.bootstrap) as other:
        # held by the first member: nothing for the other
        assert acquired(share_fetch(other, group=group, member=OTHER, max_wait_ms=100,
                                    parts=[(tid, [(0, [])])])) == {}
        holder.close()   # the consumer is killed: no ShareAcknowledge, no epoch -1
        started = time.monotonic()
        answer = share_fetch(other, group=group, member=OTHER, epoch=1, max_wait_ms=10000)
        assert time.monotonic() - started < 5   # the lock is 30 s
        assert acquired(answer) == {(tid, 0): [(0, 1, 2)]}
        assert values(answer) == [b"k1", b"k2"]


def test_closing_the_session_releases_what_is_left_after_its_acknowledgements(served):
    tid, group = scenario(served, "closing")
    produce(served.bootstrap, "closing", [b"a", b"b", b"c"])
    with Wire(served.bootstrap) as wire, Wire(served.bootstrap) as other:
        share_fetch(wire, group=group, parts=[(tid, [(0, [])])])
        closed = share_fetch(wire, group=group, epoch=-1,
                             parts=[(tid, [(0, [(0, 0, [ACCEPT])])])])
        assert closed.error_code == ErrorCode.none
        assert partitions_of(closed)[(tid, 0)].acknowledge_error_code == 0
        assert acquired(closed) == {}
        assert share_fetch(wire, group=group, epoch=2).error_code == \
            ErrorCode.share_session_not_found
        answer = share_fetch(other, group=group, member=OTHER, parts=[(tid, [(0, [])])])
        assert acquired(answer) == {(tid, 0): [(1, 2, 2)]}


def test_a_member_cannot_acknowledge_records_it_does_not_hold(served):
    tid, group = scenario(served, "foreign")
    produce(served.bootstrap, "foreign", [b"a"])
    with Wire(served.bootstrap) as wire, Wire(served.bootstrap) as other:
        share_fetch(wire, group=group, parts=[(tid, [(0, [])])])
        share_fetch(other, group=group, member=OTHER, max_wait_ms=50, parts=[(tid, [(0, [])])])
        answer = share_acknowledge(other, group=group, member=OTHER, epoch=1,
                                   parts=[(tid, [(0, [(0, 0, [ACCEPT])])])])
        assert partitions_of(answer)[(tid, 0)].error_code == ErrorCode.invalid_record_state
        # still the holder's to acknowledge
        mine = share_acknowledge(wire, group=group, epoch=1,
                                 parts=[(tid, [(0, [(0, 0, [ACCEPT])])])])
        assert partitions_of(mine)[(tid, 0)].error_code == ErrorCode.none


def test_renew_acknowledgements_keep_the_records_without_a_fetch(served):
    """v2 IsRenewAck (KIP-1222): RENEW extends the lock; the request fetches nothing."""
    tid, group = scenario(served, "renewed")
    produce(served.bootstrap, "renewed", [b"r"])
    with Wire(served.bootstrap) as wire, Wire(served.bootstrap) as other:
        share_fetch(wire, group=group, parts=[(tid, [(0, [])])])
        renewed = share_fetch(wire, group=group, epoch=1, renew=True, max_wait_ms=0,
                              min_bytes=0, max_bytes=0, max_records=0,
                              parts=[(tid, [(0, [(0, 0, [4])])])])
        assert renewed.error_code == ErrorCode.none
        assert partitions_of(renewed)[(tid, 0)].acknowledge_error_code == 0
        assert acquired(renewed) == {}
        # still held
        assert acquired(share_fetch(other, group=group, member=OTHER, max_wait_ms=50,
                                    parts=[(tid, [(0, [])])])) == {}
        done = share_acknowledge(wire, group=group, epoch=2, parts=[(tid, [(0, [(0, 0, [1])])])])
        assert partitions_of(done)[(tid, 0)].error_code == ErrorCode.none


def test_partitions_across_topics_share_max_records(served):
    tid_a, group = scenario(served, "across-a")
    create_topics(served.bootstrap, "across-b")
    with Wire(served.bootstrap) as wire:
        tid_b = topic_id(wire, "across-b")
    served.initialize(group, tid_b)
    produce(served.bootstrap, "across-a", [b"a1", b"a2"])
    produce(served.bootstrap, "across-b", [b"b1", b"b2"])
    with Wire(served.bootstrap) as wire:
        answer = share_fetch(wire, group=group, max_records=3, mode=1,
                             parts=[(tid_a, [(0, [])]), (tid_b, [(0, [])])])
        got = acquired(answer)
        assert sum(last - first + 1 for ranges in got.values() for first, last, _ in ranges) == 3
        # the rest on the next fetch
        rest = share_fetch(wire, group=group, epoch=1, max_records=3, mode=1)
        assert sum(last - first + 1 for ranges in acquired(rest).values()
                   for first, last, _ in ranges) == 1


def test_a_partition_not_initialised_is_unknown_server_error_after_the_wait(served):
    """A fetch by someone no share group assigned the partition: its share state does not
    exist, and Kafka 4.4 answers UNKNOWN_SERVER_ERROR for it once MaxWaitMs has passed (its
    share coordinator refuses to read an uninitialised share partition), fetch after fetch."""
    create_topics(served.bootstrap, "uninitialised")
    produce(served.bootstrap, "uninitialised", [b"u"])
    with Wire(served.bootstrap) as wire:
        tid = topic_id(wire, "uninitialised")
        for epoch in (0, 1):
            started = time.monotonic()
            answer = share_fetch(wire, group="nobody", epoch=epoch, max_wait_ms=300,
                                 parts=[(tid, [(0, [])])] if epoch == 0 else ())
            assert time.monotonic() - started >= 0.25
            assert answer.error_code == ErrorCode.none
            [(key, partition)] = partitions_of(answer).items()
            assert key == (tid, 0) and partition.error_code == ErrorCode.unknown_server_error
            assert acquired(answer) == {}


def test_read_committed_groups_get_committed_records_only(served):
    """share.isolation.level=read_committed reads up to the last stable offset and never hands
    out an aborted transaction's records; read_uncommitted hands out everything; transaction
    markers are acquired with the records around them, as Kafka 4.4 acquires them."""
    from confluent_kafka import Producer

    from tests.interop.share_fetch_wire import set_group_configs
    tid, committed = scenario(served, "txn")
    uncommitted = "plain-txn"
    served.initialize(uncommitted, tid)
    set_group_configs(served.bootstrap, committed, {"share.isolation.level": "read_committed"})
    producer = Producer({"bootstrap.servers": served.bootstrap, "transactional.id": "share-txn"})
    producer.init_transactions(30)
    for batch, commit in ([b"a", b"b"], True), ([b"c"], False), ([b"d"], True), ([b"e"], None):
        producer.begin_transaction()
        for value in batch:
            producer.produce("txn", value=value, partition=0)
        producer.flush(10)
        if commit is True:
            producer.commit_transaction(30)
        elif commit is False:
            producer.abort_transaction(30)
    # offsets: a 0, b 1, commit 2, c 3, abort 4, d 5, commit 6, e 7 (open)
    with Wire(served.bootstrap) as wire, Wire(served.bootstrap) as plain:
        first = share_fetch(wire, group=committed, parts=[(tid, [(0, [])])])
        assert values(first) == [b"a", b"b", b"d"]
        assert acquired(first) == {(tid, 0): [(0, 2, 1), (4, 6, 1)]}
        everything = share_fetch(plain, group=uncommitted, parts=[(tid, [(0, [])])])
        assert values(everything) == [b"a", b"b", b"c", b"d", b"e"]
        assert acquired(everything) == {(tid, 0): [(0, 7, 1)]}
        # the open transaction commits: the parked read_committed fetch gets its record
        answered = {}
        fetching = threading.Thread(target=lambda: answered.setdefault("answer", share_fetch(
            wire, group=committed, epoch=1, max_wait_ms=15000)))
        fetching.start()
        time.sleep(0.3)
        producer.commit_transaction(30)
        fetching.join(20)
        assert values(answered["answer"]) == [b"e"]
        assert acquired(answered["answer"]) == {(tid, 0): [(7, 8, 1)]}


def test_past_the_session_limit_a_new_session_is_refused_after_max_wait(tmp_path):
    """group.share.max.share.sessions (Kafka 4.4's, 2000 by default): a session past it is
    SHARE_SESSION_LIMIT_REACHED, answered once MaxWaitMs has passed (as Kafka holds it, so the
    consumer does not spin); a session that ends frees its place."""
    served = ServedBroker(tmp_path, ["group.share.max.share.sessions=1"])
    try:
        tid, group = scenario(served, "limited")
        with Wire(served.bootstrap) as first, Wire(served.bootstrap) as second:
            assert share_fetch(first, group=group, max_wait_ms=50,
                               parts=[(tid, [(0, [])])]).error_code == ErrorCode.none
            started = time.monotonic()
            refused = share_fetch(second, group=group, member=OTHER, max_wait_ms=600,
                                  parts=[(tid, [(0, [])])])
            assert time.monotonic() - started >= 0.55
            assert (refused.error_code, refused.responses) == \
                (ErrorCode.share_session_limit_reached, ())
            # the first member opening again replaces its own session: not over the limit
            assert share_fetch(first, group=group, max_wait_ms=50,
                               parts=[(tid, [(0, [])])]).error_code == ErrorCode.none
        # both connections closed: their sessions are gone
        with Wire(served.bootstrap) as third:
            deadline = time.monotonic() + 5
            while share_fetch(third, group=group, member=OTHER, max_wait_ms=50,
                              parts=[(tid, [(0, [])])]).error_code != ErrorCode.none:
                assert time.monotonic() < deadline
    finally:
        served.close()


class Refusing:
    """An authorizer allowing everything but READ on the resources named."""

    def __init__(self) -> None:
        self.refused: set[tuple] = set()

    def authorize(self, principal, host, operation, resource_type, name) -> bool:
        return (int(operation), int(resource_type), name) not in self.refused


def test_read_on_the_group_and_on_each_topic_is_checked(served):
    """As Kafka 4.4's KafkaApis: READ on the group refuses the request as a whole
    (GROUP_AUTHORIZATION_FAILED); READ on a topic refuses its partitions one by one
    (TOPIC_AUTHORIZATION_FAILED), for fetching and acknowledging, and again on every fetch of
    the session."""
    from roster.protocol.acl import AclOperation, ResourceType
    tid, group = scenario(served, "guarded")
    produce(served.bootstrap, "guarded", [b"g"])
    authorizer = Refusing()
    served.broker.authorizer = authorizer
    read, topic, grp = int(AclOperation.READ), int(ResourceType.TOPIC), int(ResourceType.GROUP)
    try:
        with Wire(served.bootstrap) as wire:
            authorizer.refused = {(read, grp, group)}
            refused = share_fetch(wire, group=group, parts=[(tid, [(0, [])])])
            assert (refused.error_code, refused.responses) == \
                (ErrorCode.group_authorization_failed, ())
            assert share_acknowledge(wire, group=group, epoch=1).error_code == \
                ErrorCode.group_authorization_failed
            authorizer.refused = {(read, topic, "guarded")}
            answer = share_fetch(wire, group=group, max_wait_ms=100, parts=[(tid, [(0, [])])])
            assert {k: p.error_code for k, p in partitions_of(answer).items()} == \
                {(tid, 0): ErrorCode.topic_authorization_failed}
            acked = share_acknowledge(wire, group=group, epoch=1,
                                      parts=[(tid, [(0, [(0, 0, [ACCEPT])])])])
            assert {k: p.error_code for k, p in partitions_of(acked).items()} == \
                {(tid, 0): ErrorCode.topic_authorization_failed}
            # allowed again: the session's partition is read on the next fetch
            authorizer.refused = set()
            allowed = share_fetch(wire, group=group, epoch=2)
            assert values(allowed) == [b"g"]
            # refused again: the session's partition is checked on every fetch
            authorizer.refused = {(read, topic, "guarded")}
            again = share_fetch(wire, group=group, epoch=3, max_wait_ms=50)
            assert {k: p.error_code for k, p in partitions_of(again).items()} == \
                {(tid, 0): ErrorCode.topic_authorization_failed}
    finally:
        del served.broker.authorizer


def test_a_parked_fetch_gets_records_whose_lock_expired(tmp_path):
    """A member that neither acknowledges nor goes away loses its records when their
    acquisition lock expires; the fetch parked on the partition gets them then."""
    served = ServedBroker(tmp_path, ["group.share.record.lock.duration.ms=1000",
                                     "group.share.min.record.lock.duration.ms=1000"])
    try:
        tid, group = scenario(served, "expiring")
        produce(served.bootstrap, "expiring", [b"e"])
        with Wire(served.bootstrap) as holder, Wire(served.bootstrap) as waiter:
            held = share_fetch(holder, group=group, parts=[(tid, [(0, [])])])
            assert held.acquisition_lock_timeout.total_seconds() == 1
            assert acquired(held) == {(tid, 0): [(0, 0, 1)]}
            started = time.monotonic()
            answer = share_fetch(waiter, group=group, member=OTHER, max_wait_ms=15000,
                                 parts=[(tid, [(0, [])])])
            assert 0.5 < time.monotonic() - started < 5
            assert acquired(answer) == {(tid, 0): [(0, 0, 2)]}
            # the first member's acknowledgement comes too late
            late = share_acknowledge(holder, group=group, epoch=1,
                                     parts=[(tid, [(0, [(0, 0, [ACCEPT])])])])
            refused = partitions_of(late)[(tid, 0)]
            assert refused.error_code == ErrorCode.invalid_record_state
            assert refused.error_message == "Member is not the owner of offset"
            # once the other member accepted it, it is behind the start offset: a late
            # acknowledgement of it is skipped, no error, as Kafka answers it
            share_acknowledge(waiter, group=group, member=OTHER, epoch=1,
                              parts=[(tid, [(0, [(0, 0, [ACCEPT])])])])
            later = share_acknowledge(holder, group=group, epoch=2,
                                      parts=[(tid, [(0, [(0, 0, [ACCEPT])])])])
            assert partitions_of(later)[(tid, 0)].error_code == ErrorCode.none
    finally:
        served.close()


def test_a_topic_deleted_during_the_long_poll_is_answered_unknown_topic_id(served):
    """Its closed log is never read: the partition is looked up again when the wait ends."""
    from roster.admin.client import AdminClient
    from roster.admin.topics import delete
    tid, group = scenario(served, "vanishing")
    with Wire(served.bootstrap) as wire:
        answered = {}
        fetching = threading.Thread(target=lambda: answered.setdefault("answer", share_fetch(
            wire, group=group, max_wait_ms=2000, parts=[(tid, [(0, [])])])))
        fetching.start()
        time.sleep(0.5)
        with AdminClient(served.bootstrap) as admin:
            delete(admin, ["vanishing"])
        fetching.join(20)
        assert {k: p.error_code for k, p in partitions_of(answered["answer"]).items()} == \
            {(tid, 0): ErrorCode.unknown_topic_id}
