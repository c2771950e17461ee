"""Group members driven by raw requests, as a Java consumer would send them, for the scenarios.

`ClassicMember` speaks JoinGroup/SyncGroup/Heartbeat/LeaveGroup on its own connection (a join
that waits for the rest of the group is `send_join` now, `finish_join` later). `Kip848Member`
speaks ConsumerGroupHeartbeat. Each answer lands in the session's trace with the fields a member
observes: generation or epoch, leader, member list, assignment.
"""
from __future__ import annotations

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


def split(members: list[ClassicMember], topic: str, partitions: int):
    """A range-like plan: partitions dealt out in member order."""
    plan: dict[ClassicMember, dict[str, tuple[int, ...]]] = {}
    for index, member in enumerate(members):
        mine = tuple(p for p in range(partitions) if p % len(members) == index)
        plan[member] = {topic: mine}
    return plan
