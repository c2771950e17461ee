"""ConsumerGroupHeartbeat requests over the shard driver (shard_harness.py): a manual clock,
writes that complete at once (or fail when asked), every reply kept by its token, every written
record kept (and replayable into a fresh shard)."""
from __future__ import annotations

from roster.coordinator.consumer.coordinator import ConsumerConfig
from roster.coordinator.consumer.messages import HeartbeatReply, HeartbeatRequest
from roster.coordinator.consumer.model import DictTopicImage
from tests.unit.coordinator.shard_harness import ShardDriver


def topic_id(name: str) -> bytes:
    return name.encode().ljust(16, b"\0")[:16]


class ConsumerHarness(ShardDriver):
    def __init__(self, topics: dict[str, int] | None = None, **config) -> None:
        self.image = DictTopicImage({n: (topic_id(n), p) for n, p in (topics or {}).items()})
        super().__init__(consumer_config=ConsumerConfig(**config), topics=self.image)
        self.coordinator = self.shard.type_named("consumer")   # white-box steps reach the consumer groups

    def set_topic(self, name: str, partitions: int) -> None:
        self.image.topics[name] = (topic_id(name), partitions)

    def heartbeat(self, member_id: str, epoch: int, *, topics=None, regex=None, owned=None,
                  instance_id=None, rebalance_timeout_ms=-1, assignor=None, group="g",
                  version=1) -> HeartbeatReply:
        token = next(self._tokens)
        request = HeartbeatRequest(
            group_id=group, member_id=member_id, member_epoch=epoch, instance_id=instance_id,
            rebalance_timeout_ms=rebalance_timeout_ms, subscribed_topic_names=topics,
            subscribed_topic_regex=regex, server_assignor=assignor, owned=owned,
            client_id="c", client_host="/127.0.0.1", api_version=version, token=token)
        self.apply(self.coordinator.heartbeat(request, self.image, self.now))
        return self.replies.pop(token)

    def join(self, member_id: str, topics=("t",), **kw) -> HeartbeatReply:
        kw.setdefault("rebalance_timeout_ms", 60_000)
        return self.heartbeat(member_id, 0, topics=tuple(topics) if topics else None,
                              owned=(), **kw)

    def group(self, group="g"):
        return self.coordinator.groups[group]

    def member(self, member_id, group="g"):
        return self.group(group).members[member_id]


def owned(reply: HeartbeatReply):
    """The owned partitions a client reports once it took the reply's assignment."""
    return reply.assignment


def partitions(reply_or_member) -> set[tuple[bytes, int]]:
    assignment = getattr(reply_or_member, "assignment", None)
    if assignment is None:
        assignment = tuple(reply_or_member.assigned.items())
    return {(t, p) for t, ps in assignment for p in ps}
