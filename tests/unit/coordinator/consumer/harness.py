"""Drive the consumer group coordinator like the edge does, with a manual clock: timers fire
only when the test advances time, writes complete at once (or fail when asked), every reply is
kept by its token, every written record is kept (and can be replayed into a fresh core)."""
from __future__ import annotations

import itertools

from roster.coordinator.consumer.coordinator import ConsumerConfig, ConsumerCoordinator
from roster.coordinator.consumer.messages import HeartbeatReply, HeartbeatRequest
from roster.coordinator.consumer.model import DictTopicImage
from roster.coordinator.results import Cancel, Result, Schedule


def topic_id(name: str) -> bytes:
    return name.encode().ljust(16, b"\0")[:16]


class ConsumerHarness:
    def __init__(self, topics: dict[str, int] | None = None, **config) -> None:
        self.image = DictTopicImage({n: (topic_id(n), p) for n, p in (topics or {}).items()})
        self.ids = itertools.count(1)
        self.coordinator = ConsumerCoordinator(ConsumerConfig(**config),
                                               lambda: f"gen-{next(self.ids)}")
        self.now = 0
        self.timers: dict[str, tuple[int, object]] = {}
        self.records: list = []
        self.replies: dict = {}
        self.fail_next_write = None
        self._tokens = itertools.count(1)

    def set_topic(self, name: str, partitions: int) -> None:
        self.image.topics[name] = (topic_id(name), partitions)

    def apply(self, result: Result) -> None:
        for op in result.timers:
            if isinstance(op, Schedule):
                self.timers[op.key] = (op.deadline_ms, op.event)
            elif isinstance(op, Cancel):
                self.timers.pop(op.key, None)
        error = None
        if result.records:
            error, self.fail_next_write = self.fail_next_write, None
            if error is None:
                self.records.extend(result.records)
        for reply in result.replies:
            self.replies[reply.token] = reply.body
        for step in result.after_write:
            self.apply(self.coordinator.write_completed(step, error, self.now))

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

    def advance(self, ms: int) -> None:
        """Move the clock, firing due timers in deadline order."""
        end = self.now + ms
        while True:
            due = sorted((d, k) for k, (d, _) in self.timers.items() if d <= end)
            if not due:
                break
            deadline, key = due[0]
            self.now = deadline
            _, event = self.timers.pop(key)
            self.apply(self.coordinator.expire(event, self.now))
        self.now = end

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
