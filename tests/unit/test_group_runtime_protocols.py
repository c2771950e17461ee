"""GroupRuntime decides which coordinator owns a group id (classic or consumer, KIP-848):
what it does when the step that hands a group id from one to the other cannot be written."""
import asyncio

from roster.broker.groups import GroupRuntime, MemoryRecordSink
from roster.coordinator.config import GroupConfig
from roster.coordinator.consumer.messages import HeartbeatRequest
from roster.coordinator.consumer.model import DictTopicImage
from roster.coordinator.messages import JoinRequest
from roster.protocol import consumer_protocol as cp
from roster.protocol.errors import ErrorCode


class FailingSink(MemoryRecordSink):
    """Writes records, or fails the next write with `fail_next`."""

    fail_next: ErrorCode | None = None

    def write(self, records, done) -> None:
        error, self.fail_next = self.fail_next, None
        if error is None:
            super().write(records, done)
        else:
            done(error)


def test_a_classic_join_is_refused_when_the_empty_consumer_group_cannot_be_deleted():
    async def scenario():
        sink = FailingSink()
        runtime = GroupRuntime(GroupConfig(), sink=sink)
        image = DictTopicImage({"t": (b"\x01" * 16, 3)})
        try:
            joined = runtime.consumer_heartbeat(HeartbeatRequest(
                "g", "m1", 0, rebalance_timeout_ms=30_000, subscribed_topic_names=("t",),
                owned=(), token=runtime.new_token()), image)
            assert joined.error is ErrorCode.none
            left = runtime.consumer_heartbeat(HeartbeatRequest(
                "g", "m1", -1, token=runtime.new_token()), image)
            assert left.error is ErrorCode.none
            assert "g" in runtime.consumer.groups and not runtime.consumer.groups["g"].members
            sink.fail_next = ErrorCode.not_coordinator
            subscription = cp.encode_subscription(cp.Subscription(("t",)))
            reply = await runtime.join(JoinRequest(
                "g", "", "static-a", "consumer", (("range", subscription),), 10_000, 30_000,
                token=runtime.new_token()))
            return reply, runtime
        finally:
            runtime.close()
    reply, runtime = asyncio.run(scenario())
    # the consumer group is still there: no classic group may form beside it
    assert reply.error is ErrorCode.not_coordinator
    assert "g" in runtime.consumer.groups
    assert not getattr(runtime.coordinator.groups.get("g"), "members", None)
