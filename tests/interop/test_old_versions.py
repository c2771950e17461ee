"""The versions Kafka 4.0 dropped and roster still serves (as Kafka 3.9 did), over a raw socket:
ListOffsets v0, OffsetCommit v0-1, OffsetFetch v0, CreateTopics v0-1, DeleteTopics v0. Fetch v0-3
and Produce v0-2, which carry the old message formats: test_old_message_formats.py."""
from __future__ import annotations

import itertools
import os
import time

import pytest

from roster.protocol import classic
from roster.protocol.build import element
from roster.protocol.codec import request_schema
from roster.protocol.errors import ErrorCode
from tests.interop.test_bad_input import _create
from tests.support import clients
from tests.support.wire import Wire

pytestmark = [pytest.mark.interop, pytest.mark.xdist_group("old-versions")]

LIST_OFFSETS, OFFSET_COMMIT, OFFSET_FETCH, API_VERSIONS = 2, 8, 9, 18
CREATE_TOPICS, DELETE_TOPICS = 19, 20
DAY_MS = 86_400_000
_ids = itertools.count(1000)


def call(wire: Wire, api_key: int, version: int, **body):
    """One request at a version kio has no schema for, encoded and decoded by roster's own
    classic codec."""
    correlation_id = next(_ids)
    wire.send_raw(classic.encode_request(api_key, version, correlation_id, "old-client", body))
    got, answer = classic.decode_response(api_key, version, wire.read_frame())
    assert got == correlation_id
    return answer


def test_api_versions_advertises_the_old_floors(broker):
    with Wire(broker.bootstrap) as wire:
        answer = wire.call(API_VERSIONS, 0)
    ranges = {k.api_key: (k.min_version, k.max_version) for k in answer.api_keys}
    for key in (0, 1, LIST_OFFSETS, OFFSET_COMMIT, OFFSET_FETCH, CREATE_TOPICS, DELETE_TOPICS,
                10, 11, 12, 13, 14, 15, 16):  # 0 Produce, 1 Fetch
        assert ranges[key][0] == 0, (key, ranges[key])


def _topic(name, partitions=1, replication=-1, configs=()):
    return {"name": name, "num_partitions": partitions, "replication_factor": replication,
            "assignments": [], "configs": [{"name": k, "value": v} for k, v in configs]}


def test_create_and_delete_topics_at_their_lowest_versions(broker):
    with Wire(broker.bootstrap) as wire:
        v0 = call(wire, CREATE_TOPICS, 0, topics=[_topic("old-a", 3), _topic("old-b", 1, 3)],
                  timeout_ms=5000)
        assert [(t.name, t.error_code) for t in v0.topics] == [
            ("old-a", 0), ("old-b", ErrorCode.invalid_replication_factor.value)]
        again = call(wire, CREATE_TOPICS, 0, topics=[_topic("old-a", 3)], timeout_ms=5000)
        assert again.topics[0].error_code == ErrorCode.topic_already_exists.value

        # v1: validate_only creates nothing; errors carry a message
        checked = call(wire, CREATE_TOPICS, 1, topics=[_topic("old-c", 2)], timeout_ms=5000,
                       validate_only=True)
        assert [(t.name, t.error_code, t.error_message) for t in checked.topics] == \
            [("old-c", 0, None)]
        refused = call(wire, CREATE_TOPICS, 1, topics=[_topic("old-a", 1)], timeout_ms=5000,
                       validate_only=False)
        assert refused.topics[0].error_code == ErrorCode.topic_already_exists.value
        assert "old-a" in refused.topics[0].error_message
        metadata = wire.call(3, 1, topics=None)
        partitions = {t.name: len(t.partitions) for t in metadata.topics}
        assert partitions.get("old-a") == 3 and "old-c" not in partitions

        gone = call(wire, DELETE_TOPICS, 0, topic_names=["old-a", "no-such-topic"],
                    timeout_ms=5000)
        assert [(r.name, r.error_code) for r in gone.responses] == [
            ("old-a", 0), ("no-such-topic", ErrorCode.unknown_topic_or_partition.value)]
        metadata = wire.call(3, 1, topics=None)
        assert "old-a" not in {t.name for t in metadata.topics}


def _old_offsets(wire, topic, timestamp, max_num_offsets, partition=0):
    answer = call(wire, LIST_OFFSETS, 0, replica_id=-1, topics=[{"name": topic, "partitions": [
        {"partition_index": partition, "timestamp": timestamp,
         "max_num_offsets": max_num_offsets}]}])
    (part,) = answer.topics[0].partitions
    return part.error_code, list(part.old_style_offsets)


def test_list_offsets_v0_answers_segment_boundaries_up_to_max_num_offsets(broker):
    now = int(time.time() * 1000)
    with Wire(broker.bootstrap) as wire:
        # below segment.bytes' 1 MiB minimum: Kafka's internal.segment.bytes
        assert _create(wire, "segs", 1, configs=[("internal.segment.bytes", "2048")]) \
            .error_code == 0
        assert _old_offsets(wire, "segs", -1, 5) == (0, [0])  # one empty segment: its base
        assert _old_offsets(wire, "segs", -2, 5) == (0, [0])
        for i in range(7):  # one ~970-byte batch each: segments roll every two batches
            clients.produce_confluent(broker.bootstrap, "segs",
                                      [clients.Rec(0, None, b"x" * 900, (), now + i)], "none")
    files = sorted((broker.data_dir / "segs-0").glob("*.log"), key=lambda p: int(p.stem))
    bases = [int(p.stem) for p in files]
    assert bases == [0, 2, 4, 6], bases
    # Kafka answers by each segment file's modification time: give them known ones, a day apart
    for n, path in enumerate(files):
        stamp_ns = (now - (10 - n) * DAY_MS) * 1_000_000
        os.utime(path, ns=(stamp_ns, stamp_ns))

    with Wire(broker.bootstrap) as wire:
        # latest: the log end first, then segment bases back towards the start
        assert _old_offsets(wire, "segs", -1, 1) == (0, [7])
        assert _old_offsets(wire, "segs", -1, 3) == (0, [7, 6, 4])
        assert _old_offsets(wire, "segs", -1, 100) == (0, [7, 6, 4, 2, 0])
        # earliest: only ever the log start
        assert _old_offsets(wire, "segs", -2, 100) == (0, [0])
        # a timestamp: from the last segment modified at or before it
        assert _old_offsets(wire, "segs", now - 9 * DAY_MS, 100) == (0, [2, 0])
        assert _old_offsets(wire, "segs", now - 9 * DAY_MS, 1) == (0, [2])
        assert _old_offsets(wire, "segs", now - 7 * DAY_MS - 1, 100) == (0, [4, 2, 0])
        assert _old_offsets(wire, "segs", now - 20 * DAY_MS, 100) == (0, [])
        assert _old_offsets(wire, "segs", now + DAY_MS, 2) == (0, [7, 6])
        assert _old_offsets(wire, "segs", -1, 0) == (0, [])
        assert _old_offsets(wire, "no-such", -1, 1) == \
            (ErrorCode.unknown_topic_or_partition.value, [])
        assert _old_offsets(wire, "segs", -1, 1, partition=3)[0] == \
            ErrorCode.unknown_topic_or_partition.value

        # v1 and later are unchanged beside it
        entry = element(request_schema(LIST_OFFSETS, 1), "topics")
        part = element(entry, "partitions")
        latest = wire.call(LIST_OFFSETS, 1, replica_id=-1, topics=(entry(
            name="segs", partitions=(part(partition_index=0, timestamp=-1),)),))
        assert latest.topics[0].partitions[0].offset == 7


def _commit(wire, version, group, offsets, **extra):
    topics = {}
    for (topic, partition), fields in offsets.items():
        topics.setdefault(topic, []).append({"partition_index": partition, **fields})
    answer = call(wire, OFFSET_COMMIT, version, group_id=group, **extra, topics=[
        {"name": name, "partitions": parts} for name, parts in topics.items()])
    return {(t.name, p.partition_index): p.error_code
            for t in answer.topics for p in t.partitions}


def _fetch_v0(wire, group, topic, partitions):
    answer = call(wire, OFFSET_FETCH, 0, group_id=group,
                  topics=[{"name": topic, "partition_indexes": partitions}])
    return {p.partition_index: (p.committed_offset, p.metadata, p.error_code)
            for t in answer.topics for p in t.partitions}


def _fetch_v1(wire, group, topic, partitions):
    entry = element(request_schema(OFFSET_FETCH, 1), "topics")
    answer = wire.call(OFFSET_FETCH, 1, group_id=group,
                       topics=(entry(name=topic, partition_indexes=tuple(partitions)),))
    return {p.partition_index: (p.committed_offset, p.metadata, p.error_code)
            for t in answer.topics for p in t.partitions}


def test_offset_commit_v0_v1_read_back_by_offset_fetch_v0_and_v1(broker):
    with Wire(broker.bootstrap) as wire:
        assert _create(wire, "commits", 2).error_code == 0
        errors = _commit(wire, 0, "old-group", {
            ("commits", 0): {"committed_offset": 5, "committed_metadata": "v0"},
            ("commits", 1): {"committed_offset": 9, "committed_metadata": None},
            ("commits", 7): {"committed_offset": 1, "committed_metadata": ""},
            ("nope", 0): {"committed_offset": 1, "committed_metadata": ""}})
        assert errors == {("commits", 0): 0, ("commits", 1): 0,
                          ("commits", 7): ErrorCode.unknown_topic_or_partition.value,
                          ("nope", 0): ErrorCode.unknown_topic_or_partition.value}
        expected = {0: (5, "v0", 0), 1: (9, "", 0), 2: (-1, "", 0)}
        assert _fetch_v0(wire, "old-group", "commits", [0, 1, 2]) == expected
        assert _fetch_v1(wire, "old-group", "commits", [0, 1, 2]) == expected

        # v1 without a generation (-1) commits as a simple group does; with the generation of a
        # group that does not exist it is refused, as Kafka refused it
        errors = _commit(wire, 1, "old-group", {
            ("commits", 0): {"committed_offset": 6, "commit_timestamp": -1,
                             "committed_metadata": "v1"}},
            generation_id_or_member_epoch=-1, member_id="")
        assert errors == {("commits", 0): 0}
        assert _fetch_v0(wire, "old-group", "commits", [0])[0] == (6, "v1", 0)
        errors = _commit(wire, 1, "nobody", {
            ("commits", 0): {"committed_offset": 1, "commit_timestamp": -1,
                             "committed_metadata": ""}},
            generation_id_or_member_epoch=3, member_id="m-1")
        assert errors == {("commits", 0): ErrorCode.illegal_generation.value}

    # and it is durable: a restart replays it from __consumer_offsets
    broker.restart()
    with Wire(broker.bootstrap) as wire:
        assert _fetch_v0(wire, "old-group", "commits", [0, 1]) == {0: (6, "v1", 0),
                                                                  1: (9, "", 0)}


def test_offset_commit_v1_commit_timestamp_counts_towards_expiry(broker_factory):
    """Kafka 3.9 stored v1's per-partition commit timestamp as the commit time (-1: now), and
    offsets.retention.ms counts from it: an offset committed with a timestamp older than the
    retention expires at the next expiry pass, one committed with -1 stays."""
    broker = broker_factory({"offsets.retention.minutes": str(DAY_MS // 60_000),
                             "offsets.retention.check.interval.ms": "100"})
    old = int(time.time() * 1000) - 2 * DAY_MS
    with Wire(broker.bootstrap) as wire:
        assert _create(wire, "stamped", 2).error_code == 0
        errors = _commit(wire, 1, "stamped-group", {
            ("stamped", 0): {"committed_offset": 3, "commit_timestamp": old,
                             "committed_metadata": ""},
            ("stamped", 1): {"committed_offset": 4, "commit_timestamp": -1,
                             "committed_metadata": ""}},
            generation_id_or_member_epoch=-1, member_id="")
        assert errors == {("stamped", 0): 0, ("stamped", 1): 0}
        deadline = time.monotonic() + 30
        while _fetch_v1(wire, "stamped-group", "stamped", [0])[0][0] != -1:
            assert time.monotonic() < deadline, "the back-dated offset never expired"
            time.sleep(0.05)  # polling the broker's answer
        assert _fetch_v1(wire, "stamped-group", "stamped", [1])[1] == (4, "", 0)


def test_a_truncated_old_version_request_closes_only_that_connection(broker):
    frame = classic.encode_request(OFFSET_COMMIT, 1, 1, "old-client", {
        "group_id": "g", "generation_id_or_member_epoch": -1, "member_id": "",
        "topics": [{"name": "t", "partitions": [
            {"partition_index": 0, "committed_offset": 1, "commit_timestamp": -1,
             "committed_metadata": ""}]}]})
    body = frame[4:-6]
    with Wire(broker.bootstrap) as bad, Wire(broker.bootstrap) as good:
        bad.send_raw(len(body).to_bytes(4, "big") + body)
        assert bad.closed_by_peer()
        assert good.call(API_VERSIONS, 0).error_code == ErrorCode.none


def test_offset_commit_v0_cannot_overwrite_a_live_groups_offsets(broker_factory):
    """Kafka 3.9 wrote v0 commits to ZooKeeper, beside the group; roster keeps them in the
    group's own offsets, so a v0 commit is checked like any commit without a generation: refused
    while the group has members, accepted once it is Empty."""
    from tests.interop.test_group_durability import StaticConsumer, wait_until
    broker = broker_factory({"group.initial.rebalance.delay.ms": "0"})
    with Wire(broker.bootstrap) as wire:
        assert _create(wire, "live", 1).error_code == 0
    member = StaticConsumer(broker.bootstrap, "live-group", "live-1", "live")
    try:
        wait_until(lambda: member.assigned == [0], 60, "the member's assignment")
        with Wire(broker.bootstrap) as wire:
            errors = _commit(wire, 0, "live-group", {
                ("live", 0): {"committed_offset": 42, "committed_metadata": ""}})
        assert errors == {("live", 0): ErrorCode.unknown_member_id.value}
    finally:
        member.close()
    with Wire(broker.bootstrap) as wire:
        answer = wire.call(13, 3, group_id="live-group", members=(element(
            request_schema(13, 3), "members")(member_id="", group_instance_id="live-1"),))
        assert answer.error_code == ErrorCode.none
        errors = _commit(wire, 0, "live-group", {
            ("live", 0): {"committed_offset": 42, "committed_metadata": ""}})
        assert errors == {("live", 0): 0}
        assert _fetch_v0(wire, "live-group", "live", [0]) == {0: (42, "", 0)}
