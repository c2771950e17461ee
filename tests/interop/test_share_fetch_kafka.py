"""The share fetch path beside Apache Kafka 4.4: the same ShareFetch and ShareAcknowledge requests
(and the ShareGroupHeartbeat that gets a member its partitions) against roster and against the
Kafka peer, with the same assertions: the share session's epochs and errors, the request
checks, per-partition errors, acquisition, piggy-backed and separate acknowledgements, a
released record's second delivery, renew acknowledgements, and which partitions a full and a
later answer list."""
from __future__ import annotations

import time
import uuid

import pytest

from roster.protocol.errors import ErrorCode
from tests.interop.share_fetch_wire import (
    acquired,
    join_share_group,
    partitions_of,
    produce,
    set_group_configs,
    share_acknowledge,
    share_fetch,
    topic_id,
    values,
)
from tests.support.judges import KAFKA, ROSTER, roster_broker, target  # noqa: F401 (fixtures)
from tests.support.kafka_peer import unique_name
from tests.support.transactions import create_topics
from tests.support.wire import Wire

BOTH = pytest.mark.parametrize("target", [ROSTER, KAFKA], indirect=True)
ACCEPT, RELEASE, RENEW = 1, 2, 4


def codes(answer) -> dict:
    return {key: (p.error_code, p.acknowledge_error_code)
            for key, p in partitions_of(answer).items()}


@BOTH
def test_share_session_rules_and_request_checks(target):
    name = unique_name("share-rules")
    create_topics(target.bootstrap, name, partitions=2)
    group = unique_name("g")
    with Wire(target.bootstrap) as wire:
        tid = topic_id(wire, name)
        unknown = uuid.uuid4()
        # a share partition no member of the group was assigned has no share state: Kafka's
        # share coordinator refuses to read it, and the fetch answers UNKNOWN_SERVER_ERROR for
        # it. Kafka gets there in steps: while a fresh peer creates __share_group_state, nothing
        # for it; while it sets the share partition up, NOT_LEADER_OR_FOLLOWER. So the opening
        # fetch is asked again, a new session each time, until it has (bounded)
        deadline = time.monotonic() + 90
        while True:
            opened = share_fetch(wire, group=group, max_wait_ms=500,
                                 parts=[(tid, [(0, []), (1, []), (7, [])]), (unknown, [(0, [])])])
            settled = [codes(opened).get((tid, p), (None,))[0] for p in (0, 1)]
            if ErrorCode.not_leader_or_follower not in settled and None not in settled \
                    or time.monotonic() > deadline:
                break
        assert opened.error_code == ErrorCode.none
        failed = {(tid, 0): (ErrorCode.unknown_server_error, 0),
                  (tid, 1): (ErrorCode.unknown_server_error, 0),
                  (tid, 7): (ErrorCode.unknown_topic_or_partition, 0),
                  (unknown, 0): (ErrorCode.unknown_topic_id, 0)}
        assert codes(opened) == failed
        assert opened.acquisition_lock_timeout.total_seconds() == 30
        # a later fetch reports the failed partitions once more
        later = share_fetch(wire, group=group, epoch=1, max_wait_ms=100)
        assert codes(later) == failed
        for epoch, member, expected in [
                (5, None, ErrorCode.invalid_share_session_epoch),
                (3, "z" * 22, ErrorCode.share_session_not_found),
                (-1, "z" * 22, ErrorCode.share_session_not_found),
                (2, "", ErrorCode.invalid_request),
                (2, "x" * 37, ErrorCode.invalid_request)]:
            answer = share_fetch(wire, group=group, epoch=epoch, max_wait_ms=50,
                                 **({} if member is None else {"member": member}))
            assert (answer.error_code, answer.responses) == (expected, ()), (epoch, member)
            assert answer.acquisition_lock_timeout.total_seconds() == 0
        # IsRenewAck fetches nothing: its limits must be zero
        assert share_fetch(wire, group=group, epoch=2, renew=True).error_code == \
            ErrorCode.invalid_request
        # acknowledgements cannot open a session
        assert share_fetch(wire, group=group, epoch=0,
                           parts=[(tid, [(0, [(0, 0, [ACCEPT])])])]).error_code == \
            ErrorCode.invalid_request
        # ShareAcknowledge never opens a session either
        assert share_acknowledge(wire, group=group, epoch=0).error_code == \
            ErrorCode.invalid_share_session_epoch
        assert share_acknowledge(wire, group=group, member="q" * 22, epoch=1).error_code == \
            ErrorCode.share_session_not_found
        # the session survived the refused requests: it still expects epoch 2
        checked = share_acknowledge(wire, group=group, epoch=2, parts=[
            (tid, [(0, [(3, 2, [ACCEPT])]), (1, [(0, 1, [ACCEPT, ACCEPT, ACCEPT])])]),
            (unknown, [(0, [(0, 0, [ACCEPT])])])])
        assert checked.error_code == ErrorCode.none
        assert {k: p.error_code for k, p in partitions_of(checked).items()} == {
            (tid, 0): ErrorCode.invalid_request, (tid, 1): ErrorCode.invalid_request,
            (unknown, 0): ErrorCode.unknown_topic_id}
        more = share_acknowledge(wire, group=group, epoch=3, parts=[
            (tid, [(0, [(0, 0, [RENEW])]), (1, [(0, 0, [9])])])])
        assert {k: p.error_code for k, p in partitions_of(more).items()} == {
            (tid, 0): ErrorCode.invalid_request, (tid, 1): ErrorCode.invalid_request}
        # v1 knows no RENEW
        v1 = share_acknowledge(wire, group=group, epoch=4, version=1,
                               parts=[(tid, [(0, [(0, 0, [RENEW])])])])
        assert [p.error_code for p in partitions_of(v1).values()] == [ErrorCode.invalid_request]
        closed = share_fetch(wire, group=group, epoch=-1, parts=[(tid, [(0, [])])])
        assert (closed.error_code, closed.responses) == (ErrorCode.none, ())
        assert share_fetch(wire, group=group, epoch=6).error_code == \
            ErrorCode.share_session_not_found


@BOTH
def test_acquire_acknowledge_release_and_redeliver(target):
    name = unique_name("share-path")
    group = unique_name("g")
    create_topics(target.bootstrap, name, partitions=2)
    produce(target.bootstrap, name, [b"v0", b"v1", b"v2"])
    set_group_configs(target.bootstrap, group, {"share.auto.offset.reset": "earliest"})
    with Wire(target.bootstrap) as wire:
        tid = topic_id(wire, name)
        member, _ = join_share_group(wire, group, [name], 2)
        first = share_fetch(wire, group=group, member=member, max_records=2,
                            parts=[(tid, [(0, []), (1, [])])])
        # one-record batches: batch_optimized stops at MaxRecords; the empty partition is
        # not listed beside one that handed records out
        assert acquired(first) == {(tid, 0): [(0, 1, 1)]}
        assert list(partitions_of(first)) == [(tid, 0)]
        assert values(first) == [b"v0", b"v1"]
        second = share_fetch(wire, group=group, member=member, epoch=1, max_records=2)
        assert acquired(second) == {(tid, 0): [(2, 2, 1)]}
        assert values(second) == [b"v2"]
        acked = share_fetch(wire, group=group, member=member, epoch=2, max_wait_ms=300,
                            parts=[(tid, [(0, [(0, 1, [ACCEPT])])])])
        assert codes(acked) == {(tid, 0): (ErrorCode.none, 0)}
        assert acquired(acked) == {}
        renewed = share_fetch(wire, group=group, member=member, epoch=3, renew=True,
                              max_wait_ms=0, min_bytes=0, max_bytes=0, max_records=0,
                              parts=[(tid, [(0, [(2, 2, [RENEW])])])])
        assert codes(renewed) == {(tid, 0): (ErrorCode.none, 0)}
        released = share_acknowledge(wire, group=group, member=member, epoch=4,
                                     parts=[(tid, [(0, [(2, 2, [RELEASE])])])])
        assert {k: p.error_code for k, p in partitions_of(released).items()} == \
            {(tid, 0): ErrorCode.none}
        again = share_fetch(wire, group=group, member=member, epoch=5, max_wait_ms=300)
        assert acquired(again) == {(tid, 0): [(2, 2, 2)]}
        assert values(again) == [b"v2"]
        # nothing more: a later answer lists no partition
        idle = share_fetch(wire, group=group, member=member, epoch=6, max_wait_ms=300)
        assert (idle.error_code, idle.responses) == (ErrorCode.none, ())
        # a full fetch again, nothing to hand out: every partition it read, empty
        full = share_fetch(wire, group=group, member=member, epoch=0, max_wait_ms=300,
                           parts=[(tid, [(0, []), (1, [])])])
        assert sorted(partitions_of(full)) == [(tid, 0), (tid, 1)]
        assert acquired(full) == {}
        # someone else's records cannot be acknowledged
        foreign = share_acknowledge(wire, group=group, member="f" * 22, epoch=1)
        assert foreign.error_code == ErrorCode.share_session_not_found


@BOTH
def test_a_share_session_outlives_its_member_leaving_the_group(target):
    """Leaving with ShareGroupHeartbeat (epoch -1) does not end the share session: the next
    epoch is still served and the consumer closes the session with NONE afterwards (it sends
    ShareAcknowledge -1 after its leave heartbeat)."""
    from roster.protocol.api_keys import ApiKey
    name, group = unique_name("share-leave"), unique_name("g")
    create_topics(target.bootstrap, name)
    with Wire(target.bootstrap) as wire:
        tid = topic_id(wire, name)
        member, epoch = join_share_group(wire, group, [name], 1)
        assert share_fetch(wire, group=group, member=member, max_wait_ms=50,
                           parts=[(tid, [(0, [])])]).error_code == ErrorCode.none
        left = wire.call(ApiKey.SHARE_GROUP_HEARTBEAT, 1, group_id=group, member_id=member,
                         member_epoch=-1, rack_id=None, subscribed_topic_names=None)
        assert left.error_code == ErrorCode.none
        after = share_fetch(wire, group=group, member=member, epoch=1, max_wait_ms=50)
        assert after.error_code == ErrorCode.none
        closed = share_acknowledge(wire, group=group, member=member, epoch=-1)
        assert (closed.error_code, closed.responses) == (ErrorCode.none, ())
        assert share_fetch(wire, group=group, member=member, epoch=2).error_code == \
            ErrorCode.share_session_not_found


@BOTH
def test_acquired_records_are_cut_at_batch_size_and_unknown_modes_fail(target):
    """New records' AcquiredRecords are cut once BatchSize records are reached, at the end of
    the stored batch that reached it; a ShareAcquireMode Kafka does not know fails the fetch
    with UNKNOWN_SERVER_ERROR."""
    from confluent_kafka import Producer
    name, group = unique_name("share-cut"), unique_name("g")
    create_topics(target.bootstrap, name)
    produce(target.bootstrap, name, [b"s%d" % i for i in range(10)])   # ten one-record batches
    producer = Producer({"bootstrap.servers": target.bootstrap, "linger.ms": 200})
    for i in range(10):
        producer.produce(name, value=b"b%d" % i, partition=0)
    producer.flush(10)   # one batch of ten
    set_group_configs(target.bootstrap, group, {"share.auto.offset.reset": "earliest"})
    with Wire(target.bootstrap) as wire, Wire(target.bootstrap) as other:
        tid = topic_id(wire, name)
        member, _ = join_share_group(wire, group, [name], 1)
        answer = share_fetch(wire, group=group, member=member, batch_size=3, max_records=100,
                             parts=[(tid, [(0, [])])])
        assert acquired(answer) == {(tid, 0): [(0, 2, 1), (3, 5, 1), (6, 8, 1), (9, 19, 1)]}
        assert len(values(answer)) == 20
        unknown = share_fetch(other, group=group, member="k" * 22, mode=-1, max_wait_ms=100,
                              parts=[(tid, [(0, [])])])
        assert (unknown.error_code, unknown.responses) == (ErrorCode.unknown_server_error, ())


@BOTH
def test_read_committed_and_read_uncommitted_share_groups(target):
    """share.isolation.level: read_committed acquires up to the last stable offset and leaves
    an aborted transaction's records out (its markers are acquired, as records are);
    read_uncommitted acquires everything; a transaction committing wakes the parked fetch."""
    import threading
    import time

    from confluent_kafka import Producer
    name = unique_name("share-txn")
    committed, plain = unique_name("g"), unique_name("g")
    create_topics(target.bootstrap, name)
    set_group_configs(target.bootstrap, committed, {"share.auto.offset.reset": "earliest",
                                                    "share.isolation.level": "read_committed"})
    set_group_configs(target.bootstrap, plain, {"share.auto.offset.reset": "earliest"})
    producer = Producer({"bootstrap.servers": target.bootstrap,
                         "transactional.id": unique_name("tx")})
    producer.init_transactions(30)
    for batch, commit in ([b"a", b"b"], True), ([b"c"], False), ([b"d"], True), ([b"e"], None):
        producer.begin_transaction()
        for value in batch:
            producer.produce(name, value=value, partition=0)
        producer.flush(10)
        if commit is True:
            producer.commit_transaction(30)
        elif commit is False:
            producer.abort_transaction(30)
    # offsets: a 0, b 1, commit 2, c 3, abort 4, d 5, commit 6, e 7 (open)
    with Wire(target.bootstrap) as wire, Wire(target.bootstrap) as other:
        tid = topic_id(wire, name)
        reader, _ = join_share_group(wire, committed, [name], 1)
        everyone, _ = join_share_group(other, plain, [name], 1)
        first = share_fetch(wire, group=committed, member=reader, max_wait_ms=500,
                            parts=[(tid, [(0, [])])])
        assert acquired(first) == {(tid, 0): [(0, 2, 1), (4, 6, 1)]}
        assert values(first) == [b"a", b"b", b"d"]
        everything = share_fetch(other, group=plain, member=everyone, max_wait_ms=500,
                                 parts=[(tid, [(0, [])])])
        assert acquired(everything) == {(tid, 0): [(0, 7, 1)]}
        assert values(everything) == [b"a", b"b", b"c", b"d", b"e"]
        answered = {}
        fetching = threading.Thread(target=lambda: answered.setdefault("answer", share_fetch(
            wire, group=committed, member=reader, epoch=1, max_wait_ms=8000)))
        fetching.start()
        time.sleep(0.3)
        producer.commit_transaction(30)
        fetching.join(20)
        assert acquired(answered["answer"]) == {(tid, 0): [(7, 8, 1)]}
        assert values(answered["answer"]) == [b"e"]


@BOTH
def test_which_partitions_a_later_fetch_lists(target):
    """A partition added by a later fetch is listed once even without records, unless another
    partition hands records out, in which case it is listed in the next answer instead."""
    name, group = unique_name("share-listing"), unique_name("g")
    create_topics(target.bootstrap, name, partitions=3)
    set_group_configs(target.bootstrap, group, {"share.auto.offset.reset": "earliest"})
    with Wire(target.bootstrap) as wire:
        tid = topic_id(wire, name)
        member, _ = join_share_group(wire, group, [name], 3)

        def listed(answer):
            return sorted(index for _, index in partitions_of(answer))

        assert listed(share_fetch(wire, group=group, member=member, max_wait_ms=200,
                                  parts=[(tid, [(0, [])])])) == [0]
        assert listed(share_fetch(wire, group=group, member=member, epoch=1, max_wait_ms=200,
                                  parts=[(tid, [(1, [])])])) == [1]
        assert listed(share_fetch(wire, group=group, member=member, epoch=2,
                                  max_wait_ms=200)) == []
        produce(target.bootstrap, name, [b"x", b"y"])
        assert listed(share_fetch(wire, group=group, member=member, epoch=3, max_wait_ms=200,
                                  parts=[(tid, [(2, [])])])) == [0]
        assert listed(share_fetch(wire, group=group, member=member, epoch=4,
                                  max_wait_ms=200)) == [2]
        assert listed(share_fetch(wire, group=group, member=member, epoch=5,
                                  max_wait_ms=200)) == []


@BOTH
def test_min_bytes_waits_for_max_wait_and_max_bytes_still_gives_a_batch(target):
    import time
    name, group = unique_name("share-limits"), unique_name("g")
    create_topics(target.bootstrap, name)
    produce(target.bootstrap, name, [b"a", b"b", b"c"])
    set_group_configs(target.bootstrap, group, {"share.auto.offset.reset": "earliest"})
    with Wire(target.bootstrap) as wire:
        tid = topic_id(wire, name)
        member, _ = join_share_group(wire, group, [name], 1)
        started = time.monotonic()
        short = share_fetch(wire, group=group, member=member, max_wait_ms=1000,
                            min_bytes=1 << 20, parts=[(tid, [(0, [])])])
        assert time.monotonic() - started >= 0.9   # MinBytes never reached: MaxWaitMs
        assert acquired(short) == {(tid, 0): [(0, 2, 1)]}
        produce(target.bootstrap, name, [b"d", b"e"])
        small = share_fetch(wire, group=group, member=member, epoch=1, max_bytes=10)
        # the first batch is whole even past MaxBytes, and nothing after it
        assert acquired(small) == {(tid, 0): [(3, 3, 1)]}
        assert values(small) == [b"d"]
