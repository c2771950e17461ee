"""The one manual-clock driver of the pure core: a GroupShard (coordinator/shard.py) driven the
way the edge (broker/groups/runtime.py) drives it. Timers fire only when the test advances time; writes
complete at once (or fail, when asked to, or wait until released, when held); every reply is
kept by its token and every written record is kept (and can be replayed into a fresh shard).

The classic harness (harness.py) and the consumer harness (consumer/harness.py) add their
requests on top of this; tests spanning both group types use either's.
"""
from __future__ import annotations

import itertools

from roster.broker.groups.group_log import CLIENT_WRITE_ERRORS
from roster.coordinator.config import GroupConfig
from roster.coordinator.consumer.coordinator import ConsumerConfig
from roster.coordinator.group_type import GroupTypeRegistration
from roster.coordinator.messages import CommitRequest, OffsetToCommit
from roster.coordinator.results import Cancel, Result, Schedule
from roster.coordinator.shard import GroupShard
from roster.group_types import with_built_in
from roster.observability.flight_recorder import FlightRecorder
from roster.protocol.errors import ErrorCode


class ShardDriver:
    consumer_id_prefix = "gen-"   # consumer member ids: <prefix><n>
    answered_once = True          # check that no token is answered twice

    def __init__(self, config: GroupConfig | None = None,
                 consumer_config: ConsumerConfig | None = None, topics=None,
                 more_types=()) -> None:
        self.config = config or GroupConfig()
        self.consumer_config = consumer_config or ConsumerConfig()
        self.ids = itertools.count(1)
        # `more_types`: group types already built, registered as any type is (asked first)
        types = with_built_in(tuple(GroupTypeRegistration(t.name, make=lambda _, t=t: t)
                                    for t in more_types))
        self.shard = GroupShard(self.config, lambda prefix: f"{prefix}-{next(self.ids)}",
                                types, lambda: f"{self.consumer_id_prefix}{next(self.ids)}",
                                {"consumer": self.consumer_config}, topics=topics)
        self.now = 0
        self.timers: dict[str, tuple[int, object]] = {}
        self.records: list = []
        self.replies: dict[object, object] = {}
        self.fail_next_write: ErrorCode | None = None
        self.hold_next_write = False      # keep the next write in flight until release_writes()
        self.held: list[Result] = []
        self._tokens = itertools.count(1)
        # as the edge's: each result's facts, as applied, by the registered types' recorders
        self.flight = FlightRecorder(tuple(t.recorder() for t in types if t.recorder))

    # -- the edge's job ------------------------------------------------------------------

    def apply(self, result: Result) -> None:
        if result.facts:
            events = self.flight.derive(result.facts)
            result.events += events
            self.recorded(events)
        for op in result.timers:
            if isinstance(op, Schedule):
                self.timers[op.key] = (op.deadline_ms, op.event)
            elif isinstance(op, Cancel):
                self.timers.pop(op.key, None)
        self.applied()
        if result.records and self.hold_next_write:
            self.hold_next_write = False
            self.held.append(result)  # its replies wait for the write, as at the edge
            return
        error = None
        if result.records:
            error, self.fail_next_write = self.fail_next_write, None
        self._written(result, error)

    def recorded(self, events: list) -> None:
        """The flight recorder's events of a result being applied (derived as the edge does)."""

    def applied(self) -> None:
        """Called after every result's timers are carried out: a place for invariants."""

    def release_writes(self, error: ErrorCode | None = None) -> None:
        """Complete the held writes with `error` (None: they succeeded). Failing, they fail
        together as at the edge (broker/groups/group_log.py): every one reverted, newest first, before
        any is answered or continued; then they are answered in order."""
        held, self.held = self.held, []
        if error is not None:
            for result in reversed(held):
                if result.changes:
                    self.shard.revert(result.changes, self.now)
        for result in held:
            self._written(result, error, reverted=True)

    def _written(self, result: Result, error: ErrorCode | None, reverted: bool = False) -> None:
        assert error is None or error in CLIENT_WRITE_ERRORS, \
            f"the edge never reports {error!r} for a write (broker/groups/group_log.py)"
        if result.records and error is None:
            self.records.extend(result.records)
        for reply in result.replies:
            assert not self.answered_once or reply.token not in self.replies, \
                f"token {reply.token} answered twice"
            self.replies[reply.token] = reply.body
        if error is not None and result.changes and not reverted:
            self.shard.revert(result.changes, self.now)
        for step in result.after_write:
            self.apply(self.shard.write_completed(step, error, self.now))

    def advance(self, ms: int) -> None:
        """Move the clock, firing due timers in deadline order (as the edge's timer service)."""
        target = self.now + ms
        while True:
            due = sorted((d, k) for k, (d, _) in self.timers.items() if d <= target)
            if not due:
                break
            deadline, key = due[0]
            _, event = self.timers.pop(key)
            self.now = deadline
            self.apply(self.shard.expire(event, self.now))
        self.now = target

    def deadline(self, key: str) -> int | None:
        entry = self.timers.get(key)
        return entry[0] if entry else None

    def token(self) -> int:
        return next(self._tokens)

    def reply(self, token):
        return self.replies.get(token)

    def answered(self, *tokens) -> bool:
        return all(t in self.replies for t in tokens)

    def replay_into(self, fresh: ShardDriver) -> None:
        """`fresh` replays every record written so far, as after a coordinator failover."""
        fresh.ids = self.ids
        fresh.now = self.now
        fresh.records = list(self.records)
        for record in self.records:
            fresh.shard.replay(record, self.now)

    # -- offsets, whatever the group's type ----------------------------------------------------

    def offsets(self, group: str = "g") -> dict:
        """The group's committed offsets: (topic, partition) -> CommittedOffset."""
        return dict(self.shard.offsets.of(group))

    def commit(self, offsets: dict[tuple[str, int], int], member_id: str = "",
               generation: int = -1, instance=None, group: str = "g", version: int = 9,
               metadata: str = "", retention_ms: int = -1):
        token = self.token()
        self.apply(self.shard.commit_offsets(CommitRequest(
            group_id=group, generation=generation, member_id=member_id,
            group_instance_id=instance, api_version=version, token=token,
            retention_ms=retention_ms,
            offsets=tuple(OffsetToCommit(t, p, o, metadata=metadata)
                          for (t, p), o in offsets.items())), self.now))
        return self.replies.get(token)

    def txn_commit(self, offsets: dict[tuple[str, int], int], member_id: str = "",
                   generation: int = -1, instance=None, group: str = "g",
                   version: int = 3) -> dict[tuple[str, int], ErrorCode]:
        """TxnOffsetCommit's checks: each partition's answer. (The records it would write in
        the producer's batch are left unwritten.)"""
        result = Result()
        answers, _ = self.shard.txn_commit_offsets(CommitRequest(
            group_id=group, generation=generation, member_id=member_id,
            group_instance_id=instance, api_version=version, transactional=True,
            offsets=tuple(OffsetToCommit(t, p, o) for (t, p), o in offsets.items())),
            self.now, result)
        self.apply(result)
        return {(t, p): error for t, p, error in answers}

    def fetch(self, wanted=None, group: str = "g"):
        return self.shard.fetch_offsets(group, wanted)

    def delete(self, *group_ids: str):
        """DeleteGroups: {group id: error}, or None while the tombstones' write is held."""
        token = self.token()
        self.apply(self.shard.delete_groups(list(group_ids), self.now, token))
        return self.replies.get(token)

    def delete_offsets(self, partitions: list[tuple[str, int]], group: str = "g"):
        """OffsetDelete: its OffsetDeleteReply, or None while the tombstones' write is held."""
        token = self.token()
        self.apply(self.shard.delete_offsets(group, partitions, self.now, token))
        return self.replies.get(token)

    def expire_offsets(self) -> None:
        self.apply(self.shard.expire_offsets(self.now))
