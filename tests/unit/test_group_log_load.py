"""Loading `__consumer_offsets` at start. Plain offset commits take a fast path (decoded to
plain values and applied a run at a time: GroupLog._replay_plain, GroupShard.
replay_offset_commits); whatever else the log holds (group records and their tombstones, offset
tombstones, older value versions, records the fast path leaves to the general reader,
unreadable ones, transactional offsets and their markers), the state a load rebuilds is the one
the general path builds, every record decoded to a Record and replayed one by one."""
from __future__ import annotations

import asyncio
import struct
import tempfile
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from roster.broker.broker import Broker
from roster.broker.groups import group_log
from roster.broker.groups.group_log import OFFSETS_TOPIC
from roster.broker.groups.runtime import GroupRuntime
from roster.broker.partitions.internal_topic import records_batch
from roster.config import BrokerConfig
from roster.coordinator.config import GroupConfig
from roster.log.control import marker_batch
from roster.protocol.group_records import (
    GroupKey,
    GroupValue,
    OffsetKey,
    OffsetValue,
    Record,
    encode_key,
    encode_value,
)

GROUPS, TOPICS = ("g0", "g1", "g2"), ("t0", "t1")
NOW_S = 1_700_000_000.0


def string(text: str | None) -> bytes:
    if text is None:
        return struct.pack(">h", -1)
    return struct.pack(">h", len(text.encode())) + text.encode()


def offset_key(group: str, topic: str, partition: int, version: int = 1) -> bytes:
    return struct.pack(">h", version) + string(group) + string(topic) + struct.pack(">i", partition)


def record(kind: str, group: str, topic: str, partition: int, n: int):
    """(key, value) of one record of `kind`, the n-th of the log."""
    key = offset_key(group, topic, partition)
    if kind == "commit":      # value v3, what roster and Kafka write
        return key, encode_value(OffsetValue(n, 7, f"m{n}", 1000 + n))
    if kind == "expiring":    # value v1
        return key, encode_value(OffsetValue(n, -1, "", 1000 + n, 5000 + n))
    if kind == "v0":          # an old Kafka's, under key v0
        return offset_key(group, topic, partition, 0), \
            struct.pack(">hq", 0, n) + string("old") + struct.pack(">q", 1000 + n)
    if kind == "null-metadata":   # left to the general reader, which reads it as ""
        return key, struct.pack(">hqi", 3, n, 1) + string(None) + struct.pack(">q", 1000 + n)
    if kind == "tombstone":
        return key, None
    if kind == "group":
        return encode_key(GroupKey(group)), encode_value(
            GroupValue("consumer", n, "range", None, 2000 + n, ()))
    if kind == "group-tombstone":
        return encode_key(GroupKey(group)), None
    if kind == "unreadable":  # a key cut short: skipped with a warning by either path
        return key[:-2], None
    if kind == "null-key":
        return None, b"x"
    raise AssertionError(kind)


KINDS = ("commit", "commit", "commit", "expiring", "v0", "null-metadata", "tombstone", "group",
         "group-tombstone", "unreadable", "null-key")
one_record = st.tuples(st.sampled_from(KINDS), st.sampled_from(GROUPS), st.sampled_from(TOPICS),
                       st.integers(0, 1))
batch = st.one_of(
    st.tuples(st.just("plain"), st.lists(one_record, min_size=1, max_size=8)),
    st.tuples(st.just("transactional"), st.integers(1, 2),
              st.lists(st.tuples(st.just("commit"), st.sampled_from(GROUPS),
                                 st.sampled_from(TOPICS), st.integers(0, 1)),
                       min_size=1, max_size=3)),
    st.tuples(st.just("marker"), st.integers(1, 2), st.booleans()),
)


def batch_bytes(spec, first: int) -> tuple[bytes, int]:
    if spec[0] == "marker":
        return marker_batch(spec[1], 0, spec[2], 0, 0), 1
    records = spec[-1]
    entries = [(*record(*r, first + i), 0) for i, r in enumerate(records)]
    if spec[0] == "transactional":
        return records_batch(entries, 1 << 20, spec[1], 0, transactional=True), len(entries)
    return records_batch(entries, 1 << 20), len(entries)


def state(runtime: GroupRuntime) -> dict:
    shard = runtime.shard
    classic = shard.type_named("classic")
    return {
        "offsets": {group: dict(offsets) for group, offsets in shard.offsets.committed.items()},
        "pending": {producer: dict(pending)
                    for producer, pending in shard.offsets.pending._by_producer.items()},
        "open": dict(shard.offsets.pending._groups),
        "groups": [(t.name, t.group_ids()) for t in shard.types],   # in their order
        "classic": {g: (group.state, group.generation, group.protocol_type, group.protocol_name,
                        group.state_timestamp, sorted(group.members))
                    for g, group in classic.groups.items()},
    }


def load_both_ways(batches, watch=lambda runtime: None) -> tuple[dict, dict, int, int]:
    async def main(data_dir: Path):
        config = BrokerConfig.load(assignments=["offsets.topic.num.partitions=1"], environ={})
        broker = Broker(config, data_dir)
        broker.topics.load()
        broker.group_log.ensure_topic()
        offset = 0
        for spec in batches:
            data, count = batch_bytes(spec, offset)
            broker.group_log.topic.append(0, data, count)
            offset += count
        runtimes = [GroupRuntime(GroupConfig(), broker.group_log, clock=lambda: NOW_S)
                    for _ in range(3)]
        wired, fast, general = runtimes
        watch(wired)
        try:
            await wired.load()   # the broker's own load, which takes the fast path
            fast_count = await broker.group_log.load(
                0, fast._replay, fast._replay_transactional, fast.end_transaction,
                fast._replay_offset_commits)
            general_count = await broker.group_log.load(
                0, general._replay, general._replay_transactional, general.end_transaction)
            assert state(wired) == state(fast)
            return state(fast), state(general), fast_count, general_count
        finally:
            for runtime in runtimes:
                runtime.close()
            broker.topics.close()

    with tempfile.TemporaryDirectory() as directory:
        return asyncio.run(main(Path(directory)))


@settings(max_examples=60, deadline=None, suppress_health_check=list(HealthCheck))
@given(batches=st.lists(batch, min_size=1, max_size=10))
def test_a_load_rebuilds_what_replaying_every_record_one_by_one_rebuilds(batches):
    fast, general, fast_count, general_count = load_both_ways(batches)
    assert fast == general
    assert fast_count == general_count


def test_the_fast_path_counts_and_orders_records_like_the_general_one():
    # a commit, its group's record (which takes over the simple group the commit made), a
    # tombstone, the commit again, a record the fast path leaves to the general reader between
    # two commits of the same partition, and an unreadable one: in log order, each counted
    plain = ("plain", [("commit", "g0", "t0", 0), ("group", "g0", "t0", 0),
                       ("tombstone", "g0", "t0", 0), ("commit", "g0", "t0", 0),
                       ("commit", "g1", "t1", 1), ("null-metadata", "g1", "t1", 1),
                       ("commit", "g2", "t0", 0), ("unreadable", "g2", "t0", 0),
                       ("group-tombstone", "g2", "t0", 0)])
    fast, general, fast_count, general_count = load_both_ways([plain])
    assert fast == general
    assert fast_count == general_count == 8
    assert fast["offsets"]["g1"][("t1", 1)].offset == 5 and fast["offsets"]["g1"][("t1", 1)] \
        .metadata == ""
    assert fast["classic"]["g0"][1:3] == (1, "consumer")


def test_a_run_is_applied_before_the_loader_yields(monkeypatch):
    # runs span batches and end where the loader lets requests in: with a yield every two
    # records, what each yield finds applied is what the general path has applied by then
    monkeypatch.setattr(group_log, "LOAD_YIELD_RECORDS", 2)
    seen: list[int] = []
    real_sleep = asyncio.sleep

    async def watching_sleep(delay, *args):
        seen.append(sum(len(offsets) for offsets in watched.shard.offsets.committed.values()))
        return await real_sleep(delay, *args)

    batches = [("plain", [("commit", "g0", "t0", 0)]), ("plain", [("commit", "g0", "t0", 1)]),
               ("plain", [("commit", "g1", "t1", 0), ("commit", "g1", "t1", 1)]),
               ("plain", [("commit", "g2", "t0", 0)])]
    watched = None

    def watch(runtime):
        nonlocal watched
        watched = runtime

    monkeypatch.setattr(group_log.asyncio, "sleep", watching_sleep)
    fast, general, _, _ = load_both_ways(batches, watch)
    assert fast == general
    assert seen[:2] == [2, 4]   # the wired load's yields: every record read so far applied
