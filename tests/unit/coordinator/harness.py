"""Drive the pure coordinator like the broker edge does, with a manual clock.

Timers only fire when the test advances time; writes complete at once (or fail, when asked to, or
wait until released, when held); every reply is kept by its token. Tests assert the three things
a coordinator does: records written, replies released, timers scheduled (with exact deadlines).

Member sessions are watched by one timer per group, armed for the earliest member deadline
(coordinator/classic/sessions.py). Tests read a member's own deadline with session_deadline(), and after
every operation the harness checks that each such deadline is covered: the group's timer is armed
at or before it, so when the clock reaches a deadline the member's expiry runs at that very time.
"""
from __future__ import annotations

import dataclasses

from roster.coordinator.classic import rebalance
from roster.coordinator.config import GroupConfig
from roster.coordinator.classic.group import Member
from roster.coordinator.messages import JoinRequest, LeaveIdentity, LeaveRequest, SyncRequest
from roster.coordinator.results import Result
from roster.coordinator.classic.timers import heartbeat_key
from roster.protocol.errors import ErrorCode
from tests.unit.coordinator.shard_harness import ShardDriver

PROTOCOLS = (("range", b"range-meta"), ("roundrobin", b"rr-meta"))


class Harness(ShardDriver):
    def __init__(self, consumer_config=None, topics=None, **config) -> None:
        config.setdefault("initial_rebalance_delay_ms", 0)
        super().__init__(GroupConfig(**config), consumer_config, topics)
        self.coordinator = self.shard.type_named("classic")   # white-box steps reach the classic groups

    def applied(self) -> None:
        self.check_sessions_watched()

    def session_deadline(self, member_id: str, group: str = "g") -> int | None:
        """When this member's (or pending member id's) session ends unless it is heard from;
        None when it is not watched (gone, or kept alive while parked)."""
        target = self.group(group)
        if target is None:
            return None
        if member_id in target.pending_members:
            return target.pending_members[member_id]
        member = target.members.get(member_id)
        return member.session_deadline_ms if member is not None else None

    def check_sessions_watched(self) -> None:
        """Every session deadline has the group's timer armed at or before it, and the group's
        record of its armed timer is the timer actually armed."""
        for group_id, group in self.coordinator.groups.items():
            armed = self.timers.get(heartbeat_key(group_id))
            if group.session_timer_ms is not None:
                assert armed is not None and armed[0] == group.session_timer_ms, \
                    (group_id, group.session_timer_ms, armed)
            deadlines = [m.session_deadline_ms for m in group.members.values()]
            deadlines += list(group.pending_members.values())
            for deadline in deadlines:
                if deadline is not None:
                    assert armed is not None and armed[0] <= deadline, (group_id, deadline, armed)

    def group(self, group_id: str = "g"):
        return self.coordinator.groups.get(group_id)

    def restarted(self, **config) -> Harness:
        """A new harness whose shard replayed every record written so far, as after a
        coordinator failover. Nothing else carries over: no timers (coordinator.groups_loaded
        arms what Kafka's onLoaded does), no parked requests. Member ids keep counting."""
        fresh = Harness(**{**dataclasses.asdict(self.config), **config})
        self.replay_into(fresh)
        return fresh

    # -- white-box steps, as Kafka's own tests take them ---------------------------------------

    def add_member(self, member_id: str, instance: str | None = None, group: str = "g",
                   protocols=PROTOCOLS, session_ms: int = 10_000,
                   rebalance_ms: int = 30_000) -> Member:
        """Put a member straight into a group (Kafka's tests call group.add), creating it."""
        target = self.group(group) or self.coordinator.create_group(group, self.now)
        member = Member(member_id, instance, "client", "/127.0.0.1", rebalance_ms, session_ms,
                        protocols)
        target.add(member, "consumer")
        return member

    def force_rebalance(self, group: str = "g") -> None:
        """Start a rebalance the way Kafka's tests do, by calling prepareRebalance directly."""
        result = Result()
        rebalance.prepare_rebalance(self.coordinator, self.group(group), self.now, result, "test")
        self.apply(result)

    # -- requests (return the token; the reply, if released, is in self.replies) ------------

    def join(self, member_id: str = "", instance: str | None = None, group: str = "g",
             protocols=PROTOCOLS, session_ms: int = 10_000, rebalance_ms: int = 30_000,
             version: int = 9, client_id: str = "client", protocol_type: str = "consumer"):
        token = self.token()
        self.apply(self.shard.join(JoinRequest(
            group_id=group, member_id=member_id, group_instance_id=instance,
            protocol_type=protocol_type, protocols=protocols, session_timeout_ms=session_ms,
            rebalance_timeout_ms=rebalance_ms, client_id=client_id, client_host="/127.0.0.1",
            api_version=version, token=token), self.now))
        return token

    def sync(self, member_id: str, generation: int, assignments=(), instance=None,
             group: str = "g", version: int = 5, protocol_type=None, protocol_name=None):
        token = self.token()
        self.apply(self.shard.sync(SyncRequest(
            group_id=group, generation=generation, member_id=member_id,
            group_instance_id=instance, protocol_type=protocol_type, protocol_name=protocol_name,
            assignments=tuple(assignments), api_version=version, token=token), self.now))
        return token

    def heartbeat(self, member_id: str, generation: int, instance=None, group: str = "g"):
        """As the edge does (GroupRuntime.heartbeat): the answer comes back at once, and only
        the timers the check-in set are carried out."""
        result = Result()
        error = self.shard.heartbeat(group, generation, member_id, instance, self.now,
                                     result)
        assert not (result.records or result.replies or result.after_write), result
        self.apply(result)
        return error

    def leave(self, *identities: tuple[str, str | None], group: str = "g"):
        token = self.token()
        self.apply(self.shard.leave(LeaveRequest(
            group, tuple(LeaveIdentity(m, i) for m, i in identities), token), self.now))
        return self.replies[token]

    # -- compound steps ------------------------------------------------------------------

    def join_dynamic(self, group: str = "g", **kwargs) -> str:
        """A dynamic member's two-step join (KIP-394); returns its parked JoinGroup's token."""
        first = self.join(group=group, **kwargs)
        reply = self.replies[first]
        assert reply.error is ErrorCode.member_id_required, reply
        return self.join(member_id=reply.member_id, group=group, **kwargs)

    def group_with_pending_member(self):
        """Kafka's setupGroupWithPendingMember: two dynamic members (session 10 s, rebalance
        10 s) in a Stable group, both rejoined (PreparingRebalance), plus a third that holds only
        a pending id (session 6 s). Returns (leader, follower, pending id, leader's join token,
        follower's join token)."""
        leader, follower = self.stable_group(None, None, rebalance_ms=10_000)
        leader_join = self.join(member_id=leader, rebalance_ms=10_000)
        pending = self.replies[self.join(session_ms=6000, rebalance_ms=10_000)]
        assert pending.error is ErrorCode.member_id_required, pending
        follower_join = self.join(member_id=follower, rebalance_ms=10_000)
        return leader, follower, pending.member_id, leader_join, follower_join

    def stable_group(self, *instances: str | None, group: str = "g", version: int = 9,
                     **join_kwargs):
        """Members (static where an instance id is given) joined and synced: returns their
        member ids in join order; the first is the leader. Each member's assignment is
        b"assignment-of-<member id>"."""
        tokens = []
        for instance in instances:
            if instance is None:
                tokens.append(self.join_dynamic(group=group, version=version, **join_kwargs))
            else:
                tokens.append(self.join(instance=instance, group=group, version=version,
                                        **join_kwargs))
        self.advance(0)
        replies = [self.replies[t] for t in tokens]
        for reply in replies:
            assert reply.error is ErrorCode.none, reply
        leader = replies[0].leader
        generation = replies[0].generation
        ids = [r.member_id for r in replies]
        assignments = [(m, f"assignment-of-{m}".encode()) for m in ids]
        for member_id in ids:
            token = self.sync(member_id, generation,
                              assignments if member_id == leader else (), group=group)
            assert self.replies[token].error is ErrorCode.none
        return ids
