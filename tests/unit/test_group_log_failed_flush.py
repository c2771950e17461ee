"""A failed write of `__consumer_offsets` fails every operation that built on it, together.

Operations change the groups at once and build on each other before their records are durable
(m1 creates a consumer group, m2 joins it, a commit makes a simple group, a deletion removes one
a join just made). When a write fails, each of them is reverted, newest first, before any is
answered; those decided while the failed write was in flight fail too. Afterwards memory must
hold exactly what a fresh replay of the log rebuilds.

A real broker on a temporary directory (FileLog segments, the real GroupLog and GroupRuntime):
the appends to __consumer_offsets fail from a chosen batch on, or the fsync of the first flush
is held while more operations queue behind it and then fails.
"""
from __future__ import annotations

import asyncio
import tempfile
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from roster.broker.broker import Broker
from roster.broker.groups.group_log import OFFSETS_TOPIC
from roster.broker.groups.runtime import GroupRuntime
from roster.config import BrokerConfig
from roster.coordinator.classic.states import GroupState
from roster.coordinator.config import GroupConfig
from roster.coordinator.consumer.messages import HeartbeatRequest
from roster.coordinator.consumer.model import DictTopicImage
from roster.coordinator.messages import CommitRequest, JoinRequest, OffsetToCommit
from roster.log.api import LogStorageError
from roster.log.reading import batches_from_start
from roster.protocol import consumer_protocol as cp
from roster.protocol.group_records import decode

IMAGE = DictTopicImage({"t": (b"\x01" * 16, 3)})


def consumer_heartbeat(runtime, request, image):
    return runtime.family_request("consumer", request,
                                  lambda served, now: served.heartbeat(request, image, now))
GROUPS = ("g", "h")
MEMBERS = ("m1", "m2", "m3")

step = st.one_of(
    st.tuples(st.just("consumer_join"), st.sampled_from(GROUPS), st.sampled_from(MEMBERS)),
    st.tuples(st.just("consumer_leave"), st.sampled_from(GROUPS), st.sampled_from(MEMBERS)),
    st.tuples(st.just("classic_join"), st.sampled_from(GROUPS + ("c",)),
              st.sampled_from(("s1", "s2"))),
    st.tuples(st.just("commit"), st.sampled_from(GROUPS + ("c", "simple")),
              st.integers(0, 2)),
    st.tuples(st.just("delete"), st.sampled_from(GROUPS + ("c", "simple"))),
)


REBALANCE_MS = 2_000   # a classic member's rebalance timeout; settle() waits 10 s


def start(runtime: GroupRuntime, s) -> object:
    """Start one operation without awaiting it: a reply, or a future for it."""
    kind, group = s[0], s[1]
    if kind == "consumer_join":
        return consumer_heartbeat(runtime, HeartbeatRequest(
            group, s[2], 0, rebalance_timeout_ms=30_000, subscribed_topic_names=("t",),
            owned=(), token=runtime.new_token()), IMAGE)
    if kind == "consumer_leave":
        return consumer_heartbeat(runtime, HeartbeatRequest(
            group, s[2], -1, token=runtime.new_token()), IMAGE)
    if kind == "classic_join":
        subscription = cp.encode_subscription(cp.Subscription(("t",)))
        # a JoinGroup may rightly wait out the rebalance timeout (a rejoin that starts a
        # rebalance the other members never join): short, so settle() sees every answer
        return asyncio.ensure_future(runtime.join(JoinRequest(
            group, "", s[2], "consumer", (("range", subscription),), 10_000, REBALANCE_MS,
            token=runtime.new_token())))
    if kind == "commit":
        return asyncio.ensure_future(runtime.commit_offsets(CommitRequest(
            group, offsets=(OffsetToCommit("t", s[2], 10 + s[2]),),
            token=runtime.new_token())))
    return asyncio.ensure_future(runtime.delete_groups([group]))


def soft(shard) -> set[str]:
    """Classic groups in the middle of a rebalance: soft state, lost on a restart as in Kafka
    (the log holds the generation before, e.g. the snapshot a downgrade wrote). And Empty
    ones: a join phase that ends with nobody writes the empty generation, and a failure of
    that write changes nothing in memory, as in Kafka (its coordinator only warns: a restart
    brings back the generation before, whose members then time out)."""
    return {group_id for group_id, group in shard.type_named("classic").groups.items()
            if group.state is not GroupState.STABLE}


def durable_view(shard, skip: set[str] = frozenset()) -> dict:
    """What the log must rebuild: offsets, consumer groups, and classic groups at rest but
    those in `skip`."""
    view = {"offsets": {g: dict(shard.offsets.of(g)) for g in shard.offsets.groups()
                        if dict(shard.offsets.of(g))}}
    for group_id, group in shard.type_named("consumer").groups.items():
        view[("consumer", group_id)] = {
            name: getattr(group, name) for name in (
                "group_epoch", "assignment_epoch", "members", "static_members", "target",
                "owners", "subscription_metadata")}
    for group_id, group in shard.type_named("classic").groups.items():
        if group.state in (GroupState.STABLE, GroupState.EMPTY) and group.members \
                and group_id not in skip:
            view[("classic", group_id)] = {
                "generation": group.generation, "leader": group.leader_id,
                "static": dict(group.static_members),
                "members": {m.member_id: (m.group_instance_id, m.assignment)
                            for m in group.members.values()}}
    return view


def replayed(log, skip_from: int, skip_to: int, now: int, skip: set[str]) -> dict:
    """A fresh shard rebuilt from the log's records (but those of a failed fsync, at offsets
    skip_from to skip_to), through the real layouts, as a restart reads them."""
    fresh = GroupRuntime(GroupConfig())
    try:
        for batch in batches_from_start(log):
            for entry in batch:
                if entry.key is not None and not skip_from <= entry.offset < skip_to \
                        and not batch.is_control_batch:
                    fresh.shard.replay(decode(entry.key, entry.value), now)
        return durable_view(fresh.shard, skip)
    finally:
        fresh.close()


class FailingAppends:
    """The partition log's appends succeed until `fail_at` more have been made, then fail."""

    def __init__(self, log) -> None:
        self.log = log
        self.append = log.append
        self.fail_at: int | None = None
        log.append = self

    def __call__(self, batch: bytes):
        if self.fail_at is not None:
            if self.fail_at == 0:
                raise LogStorageError("injected: no space left on device")
            self.fail_at -= 1
        return self.append(batch)


class HeldFsync:
    """make_durable waits until released, then succeeds or raises LogStorageError."""

    def __init__(self, durability) -> None:
        self.make_durable = durability.make_durable
        self.hold = False
        self.failing = False
        self.released = asyncio.Event()
        self.waiting = asyncio.Event()
        durability.make_durable = self

    async def __call__(self, log, end):
        if self.hold:
            self.waiting.set()
            await self.released.wait()
            if self.failing:
                raise LogStorageError("injected: fsync failed")
        return await self.make_durable(log, end)


async def settle(pending: list) -> None:
    futures = [p for p in pending if isinstance(p, asyncio.Future)]
    await asyncio.wait_for(asyncio.gather(*futures), 10)


def scenario(before, first, behind, mode: str, fail_at: int, batch_bytes: int) -> None:
    async def main(data_dir: Path):
        config = BrokerConfig.load(assignments=[
            "offsets.topic.num.partitions=1", "log.flush.interval.ms=3600000"], environ={})
        broker = Broker(config, data_dir)
        broker.topics.load()
        broker.group_log.ensure_topic()
        runtime = GroupRuntime(GroupConfig(initial_rebalance_delay_ms=0), broker.group_log)
        log = broker.topics.partition(OFFSETS_TOPIC, 0)
        appends, fsync = FailingAppends(log), HeldFsync(broker.durability)
        try:
            await settle([start(runtime, s) for s in before])
            failed_from = failed_to = log.log_end_offset   # a failed fsync's records
            # `first` is appended and its fsync held; `behind` is decided meanwhile, queued
            fsync.hold = bool(behind) or mode == "fsync"
            pending = [start(runtime, s) for s in first]
            for _ in range(20):   # let the flush append and reach its fsync, if it writes
                if fsync.waiting.is_set() or not fsync.hold:
                    break
                await asyncio.sleep(0)
            held = fsync.waiting.is_set()
            if held and mode == "fsync":
                failed_to = log.log_end_offset
            broker.group_log.batch_target_bytes = batch_bytes
            if mode == "append":
                appends.fail_at = fail_at
            pending += [start(runtime, s) for s in behind]
            fsync.failing = mode == "fsync"
            fsync.hold = False
            fsync.released.set()
            await settle(pending)   # every operation is answered
            # and every write is done: a timer's (a classic member removed after its
            # rebalance timeout) may still be in flight when the last request is answered
            await broker.group_log.drained()
            appends.fail_at = None
            mid_rebalance = soft(runtime.shard)
            assert durable_view(runtime.shard, mid_rebalance) == replayed(
                log, failed_from, failed_to, runtime.now_ms(), mid_rebalance)
        finally:
            runtime.close()
            broker.topics.close()

    with tempfile.TemporaryDirectory() as directory:
        asyncio.run(main(Path(directory)))


@settings(max_examples=60, deadline=None, suppress_health_check=list(HealthCheck))
@given(before=st.lists(step, max_size=6), first=st.lists(step, min_size=1, max_size=8),
       behind=st.lists(step, max_size=6), mode=st.sampled_from(["append", "fsync"]),
       fail_at=st.integers(0, 3), batch_bytes=st.sampled_from([1, 300, 1 << 20]))
def test_memory_after_a_failed_flush_is_what_the_log_replays(before, first, behind, mode,
                                                              fail_at, batch_bytes):
    scenario(before, first, behind, mode, fail_at, batch_bytes)


def test_a_member_joining_a_group_whose_creation_fails_leaves_nothing_behind():
    """m1 creates consumer group g and m2 joins it, in one failed flush: reverting m1 before m2
    would remove the group and then put it back with m1 inside."""
    scenario([], [("consumer_join", "g", "m1"), ("consumer_join", "g", "m2")], [], "append", 0,
             1 << 20)


def test_operations_queued_behind_a_failed_fsync_fail_with_it():
    """m1's group creation is being made durable when m2 joins and commits; the fsync fails."""
    scenario([("commit", "simple", 0)], [("consumer_join", "g", "m1")],
             [("consumer_join", "g", "m2"), ("commit", "g", 1), ("delete", "simple")],
             "fsync", 0, 1 << 20)


def test_a_join_parked_in_a_downgrade_that_fails_is_answered():
    """m1, the last consumer-protocol member of h, leaves while a write is failing: h becomes
    a classic group and s2's JoinGroup is parked in it; the write fails, h is a consumer group
    again, and s2 is answered the error instead of waiting for a group that is gone."""
    scenario([("consumer_join", "h", "m1"), ("classic_join", "h", "s1"), ("delete", "g")],
             [("consumer_join", "g", "m1")],
             [("classic_join", "h", "s2"), ("consumer_leave", "h", "m1")], "append", 0, 1)
