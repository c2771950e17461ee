"""Group members driven by raw requests, as a Java consumer would send them, for the scenarios.

`ClassicMember` speaks JoinGroup/SyncGroup/Heartbeat/LeaveGroup on its own connection (a join
that waits for the rest of the group is `send_join` now, `finish_join` later). `Kip848Member`
speaks ConsumerGroupHeartbeat. Each answer lands in the session's trace with the fields a member
observes: generation or epoch, leader, member list, assignment.
"""
from __future__ import annotations

import base64
import uuid

from roster.protocol.api_keys import ApiKey
from roster.protocol.consumer_protocol import (
    Assignment,
    Subscription,
    decode_assignment,
    encode_assignment,
    encode_subscription,
)

JOIN_FIELDS = ("generation_id", "protocol_name", "leader", "skip_assignment", "member_id", "members")


class ClassicMember:
    def __init__(self, session, who: str, group: str, topics: tuple[str, ...],
                 instance_id: str | None = None, session_ms: int = 10000,
                 rebalance_ms: int = 10000, protocols: tuple[str, ...] = ("range",),
                 protocol_type: str = "consumer") -> None:
        self.s, self.who, self.group, self.topics = session, who, group, topics
        self.instance_id = instance_id
        self.session_ms, self.rebalance_ms = session_ms, rebalance_ms
        self.protocols, self.protocol_type = protocols, protocol_type
        self.conn = session.conn(who)
        self.member_id = ""
        self.generation = -1
        self.owned: tuple[tuple[str, tuple[int, ...]], ...] = ()
        self.leader = False
        self.members: list = []

    def subscription(self) -> bytes:
        return encode_subscription(Subscription(self.topics, owned_partitions=self.owned,
                                                generation_id=self.generation))

    def send_join(self, reason: str | None = None) -> None:
        self.conn.send(ApiKey.JOIN_GROUP, group_id=self.group, session_timeout=self.session_ms,
                       rebalance_timeout=self.rebalance_ms, member_id=self.member_id,
                       group_instance_id=self.instance_id, protocol_type=self.protocol_type,
                       protocols=[{"name": name, "metadata": self.subscription()}
                                  for name in self.protocols], reason=reason)

    def finish_join(self):
        answer = self.conn.recv(keep=JOIN_FIELDS)
        code = int(answer.error_code)
        if answer.member_id:
            self.member_id = answer.member_id
        if code == 0:
            self.generation = answer.generation_id
            self.leader = answer.leader == answer.member_id
            self.members = list(answer.members)
        return code

    def join(self) -> int:
        """Join, answering MEMBER_ID_REQUIRED (79) with the id it hands out, as clients do."""
        self.send_join()
        code = self.finish_join()
        if code == 79:
            self.send_join()
            code = self.finish_join()
        return code

    def join_until_parked(self, session) -> None:
        """A newcomer to a stable group: MEMBER_ID_REQUIRED, then a join that parks the group
        in PreparingRebalance until the others rejoin (finish it with finish_join)."""
        self.send_join()
        if self.instance_id is None:
            self.finish_join()
            self.send_join()
        session.wait_state(self.group, "PreparingRebalance")

    def sync(self, plan: dict[ClassicMember, dict[str, tuple[int, ...]]] | None = None) -> int:
        self.send_sync(plan)
        return self.finish_sync()

    def send_sync(self, plan=None) -> None:
        assignments = [{"member_id": m.member_id, "assignment": encode_assignment(
            Assignment(tuple(sorted(parts.items()))))} for m, parts in (plan or {}).items()]
        self.conn.send(ApiKey.SYNC_GROUP, group_id=self.group, generation_id=self.generation,
                       member_id=self.member_id, group_instance_id=self.instance_id,
                       protocol_type=self.protocol_type, protocol_name=self.protocols[0],
                       assignments=assignments)

    def finish_sync(self) -> int:
        answer = self.conn.recv(keep=("assignment",))
        if int(answer.error_code) == 0 and answer.assignment:
            self.owned = decode_assignment(answer.assignment).partitions
        return int(answer.error_code)

    def heartbeat(self) -> int:
        answer = self.conn.call(ApiKey.HEARTBEAT, group_id=self.group,
                                generation_id=self.generation, member_id=self.member_id,
                                group_instance_id=self.instance_id)
        return int(answer.error_code)

    def leave(self, reason: str | None = None) -> int:
        answer = self.conn.call(ApiKey.LEAVE_GROUP, keep=("members",), group_id=self.group,
                                members=[{"member_id": self.member_id,
                                          "group_instance_id": self.instance_id,
                                          "reason": reason}])
        return int(answer.error_code)

    def commit(self, topic: str, offsets: dict[int, int], generation: int | None = None) -> None:
        self.conn.call(ApiKey.OFFSET_COMMIT, keep=("topics",), group_id=self.group,
                       generation_id_or_member_epoch=self.generation if generation is None
                       else generation,
                       member_id=self.member_id, group_instance_id=self.instance_id,
                       topics=[{"name": topic, "partitions": [
                           {"partition_index": p, "committed_offset": o,
                            "committed_leader_epoch": -1, "committed_metadata": ""}
                           for p, o in sorted(offsets.items())]}])

    def reconnect(self) -> None:
        """A restarted process: a new connection, the member id forgotten (as a static member
        restarting keeps only its group.instance.id)."""
        self.conn.close()
        self.conn = self.s.conn(self.who)
        self.member_id = ""


def form_alone(member: ClassicMember, topic: str, partitions: int) -> None:
    """The first member joins (MEMBER_ID_REQUIRED, then generation 1 as leader) and syncs."""
    member.join()
    member.sync(split([member], topic, partitions))


def form_pair(a: ClassicMember, b: ClassicMember, topic: str, partitions: int,
              heartbeat_first: bool = False) -> None:
    """a forms the group alone; b joins and parks it; a (after a heartbeat that sees
    REBALANCE_IN_PROGRESS, when asked) rejoins; both sync a range-like plan."""
    form_alone(a, topic, partitions)
    b.join_until_parked(a.s)
    if heartbeat_first:
        a.heartbeat()
    a.send_join()
    a.finish_join()
    b.finish_join()
    b.send_sync()
    a.sync(split([a, b], topic, partitions))
    b.finish_sync()


def split(members: list[ClassicMember], topic: str, partitions: int):
    """A range-like plan: partitions dealt out in member order."""
    plan: dict[ClassicMember, dict[str, tuple[int, ...]]] = {}
    for index, member in enumerate(members):
        mine = tuple(p for p in range(partitions) if p % len(members) == index)
        plan[member] = {topic: mine}
    return plan


HEARTBEAT_FIELDS = ("member_id", "member_epoch", "heartbeat_interval", "assignment")


class Kip848Member:
    """A KIP-848 consumer: ConsumerGroupHeartbeat v1, with the member id it makes itself
    (KIP-1082) and its owned partitions acknowledged on each full heartbeat."""

    def __init__(self, session, who: str, group: str, topics: tuple[str, ...] | None = None,
                 regex: str | None = None, instance_id: str | None = None,
                 rebalance_ms: int = 30000) -> None:
        self.s, self.who, self.group = session, who, group
        self.topics, self.regex, self.instance_id = topics, regex, instance_id
        self.rebalance_ms = rebalance_ms
        self.conn = session.conn(who)
        self.quiet = session.conn(who, traced=False)
        self.member_id = base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")
        self.epoch = 0
        self.owned: list[dict] = []

    def heartbeat(self, epoch: int | None = None, traced: bool = True):
        conn = self.conn if traced else self.quiet
        first = self.epoch == 0
        answer = conn.call(
            ApiKey.CONSUMER_GROUP_HEARTBEAT, keep=HEARTBEAT_FIELDS, group_id=self.group,
            member_id=self.member_id, member_epoch=self.epoch if epoch is None else epoch,
            instance_id=self.instance_id, rebalance_timeout=self.rebalance_ms if first else -1,
            subscribed_topic_names=list(self.topics) if first and self.topics else None,
            subscribed_topic_regex=self.regex if first else None,
            server_assignor=None, topic_partitions=self.owned if first or epoch is None else None)
        if int(answer.error_code) == 0 and epoch is None:
            self.epoch = answer.member_epoch
            if answer.assignment is not None:
                self.owned = [{"topic_id": tp.topic_id, "partitions": list(tp.partitions)}
                              for tp in answer.assignment.topic_partitions]
        return answer

    def owned_count(self) -> int:
        return sum(len(tp["partitions"]) for tp in self.owned)

    def converge(self, want_partitions: int, timeout_s: float = 30.0) -> None:
        """Heartbeat (out of the trace) until the member owns want_partitions, then once in
        the trace: Kafka resolves regexes and metadata changes asynchronously, so only the
        converged state is compared, not how many heartbeats it took."""
        self.s.wait(lambda: self.heartbeat(traced=False) is not None
                    and self.owned_count() == want_partitions,
                    f"{self.who} owns {want_partitions} partitions", timeout_s)
        self.heartbeat()

    def leave(self, static: bool = False):
        """Leave (epoch -1), or a static member's temporary leave (epoch -2)."""
        answer = self.conn.call(ApiKey.CONSUMER_GROUP_HEARTBEAT, keep=HEARTBEAT_FIELDS,
                                group_id=self.group, member_id=self.member_id,
                                member_epoch=-2 if static else -1,
                                instance_id=self.instance_id, rebalance_timeout=-1)
        return answer
