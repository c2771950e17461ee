"""Requests and replies as the coordinator sees them: version-independent.

The edge turns kio entities of any version into these and back; the core only sees the version
where behaviour depends on it (MEMBER_ID_REQUIRED from JoinGroup v4, SkipAssignment from v9).
"""
from __future__ import annotations

from dataclasses import field
from typing import Callable, Hashable

from roster.frozen import frozen
from roster.protocol.errors import ErrorCode

Protocols = tuple[tuple[str, bytes], ...]
NO_GENERATION = -1


@frozen
class JoinRequest:
    group_id: str
    member_id: str
    group_instance_id: str | None
    protocol_type: str
    protocols: Protocols
    session_timeout_ms: int
    rebalance_timeout_ms: int
    client_id: str = ""
    client_host: str = ""
    reason: str | None = None
    api_version: int = 9
    token: Hashable = None
    # the joining principal's DESCRIBE on a topic name; None: it may describe every topic. A
    # classic member joining a consumer group resolves the group's regexes with it, as a
    # ConsumerGroupHeartbeat does (Kafka 4.4, KAFKA-18813)
    may_describe: Callable[[str], bool] | None = None


@frozen
class JoinMember:
    member_id: str
    group_instance_id: str | None
    metadata: bytes


@frozen
class JoinReply:
    error: ErrorCode = ErrorCode.none
    generation: int = NO_GENERATION
    protocol_type: str | None = None
    protocol_name: str | None = None
    leader: str = ""
    skip_assignment: bool = False
    member_id: str = ""
    members: tuple[JoinMember, ...] = ()


@frozen
class SyncRequest:
    group_id: str
    generation: int
    member_id: str
    group_instance_id: str | None = None
    protocol_type: str | None = None
    protocol_name: str | None = None
    assignments: tuple[tuple[str, bytes], ...] = ()
    api_version: int = 5
    token: Hashable = None


@frozen
class SyncReply:
    error: ErrorCode = ErrorCode.none
    protocol_type: str | None = None
    protocol_name: str | None = None
    assignment: bytes = b""


@frozen
class LeaveIdentity:
    member_id: str
    group_instance_id: str | None = None
    reason: str | None = None


@frozen
class LeaveRequest:
    group_id: str
    members: tuple[LeaveIdentity, ...]
    token: Hashable = None


@frozen
class LeaveMemberResult:
    member_id: str
    group_instance_id: str | None
    error: ErrorCode


@frozen
class LeaveReply:
    error: ErrorCode = ErrorCode.none
    members: tuple[LeaveMemberResult, ...] = ()


@frozen
class OffsetToCommit:
    topic: str
    partition: int
    offset: int
    leader_epoch: int = -1
    metadata: str | None = ""
    commit_timestamp: int = -1  # OffsetCommit v1 only; -1: the time of the commit


OFFSET_COMMIT_MEMBER_EPOCH_FROM = 9


@frozen
class CommitRequest:
    group_id: str
    generation: int = NO_GENERATION
    member_id: str = ""
    group_instance_id: str | None = None
    offsets: tuple[OffsetToCommit, ...] = ()
    retention_ms: int = -1      # v2-4 only; -1 lets the broker decide
    api_version: int = 9        # of the OffsetCommit, or of the TxnOffsetCommit when transactional
    transactional: bool = False  # a TxnOffsetCommit: the groups' checks differ a little (Kafka's)
    token: Hashable = None

    @property
    def predates_member_epochs(self) -> bool:
        """An OffsetCommit before v9, whose generation field is not a member epoch: Kafka
        refuses it from a member of a consumer or streams group (UNSUPPORTED_VERSION). A
        TxnOffsetCommit's field carries either, at any version."""
        return not self.transactional and self.api_version < OFFSET_COMMIT_MEMBER_EPOCH_FROM


@frozen
class CommitReply:
    # (topic, partition) -> error, in request order
    errors: tuple[tuple[str, int, ErrorCode], ...] = field(default_factory=tuple)


@frozen
class OffsetDeleteReply:
    error: ErrorCode = ErrorCode.none   # for the whole group: then no partition is answered
    # (topic, partition, error) for each partition asked about, in request order
    partitions: tuple[tuple[str, int, ErrorCode], ...] = ()


@frozen
class FetchedOffset:
    topic: str
    partition: int
    offset: int = -1
    leader_epoch: int = -1
    metadata: str = ""
    error: ErrorCode = ErrorCode.none


@frozen
class MemberDescription:
    member_id: str
    group_instance_id: str | None
    client_id: str
    client_host: str
    metadata: bytes
    assignment: bytes


@frozen
class GroupOverview:
    """One live group as every type shows it: ListGroups' row (id, protocol type, state, group
    type) and what the console and /metrics count (members; the classic generation or the
    consumer group epoch)."""
    group_id: str
    group_type: str        # GroupType.name: "classic", "consumer"
    protocol_type: str     # "" for a simple group (commits only)
    state: str
    members: int
    generation: int
    # what its members hold, by kind, for the types whose work is not partitions (a streams
    # group: ("active", n), ("standby", n), ("warmup", n) tasks); () for the others
    work: tuple[tuple[str, int], ...] = ()


@frozen
class MemberView:
    """One member as the console's group page shows it, whatever the group's type."""
    member_id: str
    instance_id: str | None
    client_id: str
    client_host: str
    # its partitions as (topic, partitions); None when its assignment cannot be read as
    # partitions (then `assignment_bytes` says how large it is)
    partitions: tuple[tuple[str, tuple[int, ...]], ...] | None
    assignment_bytes: int = 0
    note: str = ""          # "leader", "epoch 3, stable", ...


@frozen
class GroupView:
    """One group as the console's group page shows it (GroupType.console_view)."""
    state: str
    protocol: str          # the protocol its members speak: "classic", "consumer", ...
    generation: int        # the classic generation, the consumer group epoch, ...
    members: tuple[MemberView, ...]
    work: tuple[tuple[str, int], ...] = ()   # as GroupOverview.work


@frozen
class GroupDescription:
    """DescribeGroups' answer for one group (the classic API; any group type answers it)."""
    group_id: str
    error: ErrorCode
    state: str
    protocol_type: str
    protocol_data: str
    members: tuple[MemberDescription, ...]
    generation: int = -1
    leader: str | None = None
    error_message: str | None = None   # with an error, from DescribeGroups v6 (KIP-1043)
