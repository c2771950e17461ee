"""The shard decides which type of group holds a group id (classic or consumer, KIP-848), and the
runtime carries its steps out on a real event loop: what happens when the step that hands a
group id from one type to the other cannot be written, or is being written."""
import asyncio

from roster.broker.groups.runtime import GroupRuntime, MemoryRecordSink
from roster.coordinator.config import GroupConfig
from roster.coordinator.consumer.messages import HeartbeatRequest
from roster.coordinator.consumer.model import DictTopicImage
from roster.coordinator.messages import JoinRequest
from roster.protocol import consumer_protocol as cp
from roster.protocol.errors import ErrorCode


class FailingSink(MemoryRecordSink):
    """Writes records, or fails the next write with `fail_next`; while `hold`, writes wait
    for flush() (an fsync under way)."""

    fail_next: ErrorCode | None = None
    hold = False

    def __init__(self) -> None:
        super().__init__()
        self.pending: list = []

    def write(self, records, done, revert=None) -> None:
        if self.hold:
            self.pending.append((records, done))
            return
        error, self.fail_next = self.fail_next, None
        if error is None:
            super().write(records, done)
        else:
            done(error)   # the runtime reverts first, as `revert` was not called

    def flush(self) -> None:
        self.hold = False
        pending, self.pending = self.pending, []
        for records, done in pending:
            self.write(records, done)


IMAGE = DictTopicImage({"t": (b"\x01" * 16, 3)})


def consumer_heartbeat(runtime, request, image):
    return runtime.family_request("consumer", request,
                                  lambda served, now: served.heartbeat(request, image, now))


def consumer_join(runtime, member_id: str):
    return consumer_heartbeat(runtime, HeartbeatRequest(
        "g", member_id, 0, rebalance_timeout_ms=30_000, subscribed_topic_names=("t",),
        owned=(), token=runtime.new_token()), IMAGE)


def classic_join(runtime, instance_id: str):
    subscription = cp.encode_subscription(cp.Subscription(("t",)))
    return runtime.join(JoinRequest(
        "g", "", instance_id, "consumer", (("range", subscription),), 10_000, 30_000,
        token=runtime.new_token()))


def empty_consumer_group(runtime) -> None:
    assert consumer_join(runtime, "m1").error is ErrorCode.none
    left = consumer_heartbeat(runtime, HeartbeatRequest(
        "g", "m1", -1, token=runtime.new_token()), IMAGE)
    assert left.error is ErrorCode.none
    assert "g" in runtime.shard.type_named("consumer").groups and not runtime.shard.type_named("consumer").groups["g"].members


def test_a_classic_join_is_refused_when_the_empty_consumer_group_cannot_be_deleted():
    async def scenario():
        sink = FailingSink()
        runtime = GroupRuntime(GroupConfig(), sink=sink)
        try:
            empty_consumer_group(runtime)
            sink.fail_next = ErrorCode.not_coordinator
            return await classic_join(runtime, "static-a"), runtime
        finally:
            runtime.close()
    reply, runtime = asyncio.run(scenario())
    # the consumer group is still there: no classic group may form beside it
    assert reply.error is ErrorCode.not_coordinator
    assert "g" in runtime.shard.type_named("consumer").groups
    assert not getattr(runtime.shard.type_named("classic").groups.get("g"), "members", None)


def test_a_consumer_member_joining_while_the_empty_consumer_group_is_deleted_gets_the_classic_one():
    """The deletion is written before the classic JoinGroup goes on: a consumer member that
    joins meanwhile makes a consumer group again, and the classic member joins it (as a
    classic-protocol member) instead of forming a classic group of the same id beside it."""
    async def scenario():
        sink = FailingSink()
        runtime = GroupRuntime(GroupConfig(initial_rebalance_delay_ms=0), sink=sink)
        try:
            empty_consumer_group(runtime)
            sink.hold = True
            joining = asyncio.ensure_future(classic_join(runtime, "static-a"))
            await asyncio.sleep(0)            # its deletion is being written
            assert "g" not in runtime.shard.type_named("consumer").groups and sink.pending
            heartbeat = consumer_join(runtime, "m2")
            sink.flush()
            return await asyncio.wait_for(joining, 5), await heartbeat, runtime
        finally:
            runtime.close()
    reply, heartbeat, runtime = asyncio.run(scenario())
    assert heartbeat.error is ErrorCode.none and reply.error is ErrorCode.none
    assert set(runtime.shard.type_named("consumer").groups["g"].members) == {"m2", reply.member_id}
    assert not getattr(runtime.shard.type_named("classic").groups.get("g"), "members", None)


def test_a_member_joining_while_a_deletion_is_written_gets_a_new_group_without_the_offsets():
    """DeleteGroups deletes an empty consumer group and its offsets in one operation (as Kafka
    writes them together): a member joining while that is written makes a new consumer group,
    and the deleted group's offsets do not come back with it."""
    from roster.coordinator.messages import CommitRequest, OffsetToCommit

    async def scenario():
        sink = FailingSink()
        runtime = GroupRuntime(GroupConfig(), sink=sink)
        try:
            empty_consumer_group(runtime)
            await runtime.commit_offsets(CommitRequest(
                "g", offsets=(OffsetToCommit("t", 0, 42),), token=runtime.new_token()))
            sink.hold = True
            deleting = asyncio.ensure_future(runtime.delete_groups(["g"]))
            await asyncio.sleep(0)          # the deletion's records are being written
            sink.flush()
            joined = consumer_join(runtime, "m2")   # before the deletion goes on
            outcome = await deleting
            return outcome, joined, runtime.fetch_offsets("g", [("t", 0)])
        finally:
            runtime.close()
    outcome, joined, fetched = asyncio.run(scenario())
    assert joined.error is ErrorCode.none
    assert outcome == {"g": ErrorCode.none}         # the empty consumer group was deleted
    assert [f.offset for f in fetched] == [-1]      # deleted with the group, not revived
