"""What a ShareGroupHeartbeat (76, v1) asks and is answered, as the share coordinator reads
them (broker/handlers/share_group_heartbeat.py converts the wire's fields), Kafka 4.4.0's words
for what it refuses, and the share group settings (ShareConfig: the broker's group.share.*
membership settings with each group's own share.* configs read live).

ShareGroupHeartbeat v1 request: GroupId, MemberId (made by the client, v1), MemberEpoch (0
joins, -1 leaves), RackId? (null: unchanged), SubscribedTopicNames? (null: unchanged; required
at join). Response: ThrottleTimeMs, ErrorCode, ErrorMessage?, MemberId?, MemberEpoch,
HeartbeatIntervalMs, Assignment? {TopicPartitions [TopicId, Partitions[]]} (null: unchanged).
"""
from __future__ import annotations

from dataclasses import field
from typing import Hashable

from roster.coordinator.config import PerGroupConfig
from roster.frozen import frozen
from roster.protocol.errors import ErrorCode

HEARTBEAT_API_KEY = 76
DESCRIBE_API_KEY = 77
JOIN_EPOCH = 0
LEAVE_EPOCH = -1
ASSIGNOR = "simple"   # Kafka 4.4.0's one share assignor (SimpleAssignor.name())

# Kafka 4.4.0's messages (its GroupCoordinatorService and GroupMetadataManager, ShareGroup)
MEMBER_ID_EMPTY = "MemberId can't be empty."
GROUP_ID_EMPTY = "GroupId can't be empty."
RACK_ID_EMPTY = "RackId can't be empty."
TOPICS_AT_JOIN = "SubscribedTopicNames must be set in first request."
EPOCH_INVALID = "MemberEpoch is invalid."
SHARE_GROUP_NOT_FOUND = "Share group {} not found."        # a heartbeat on no group
GROUP_NOT_FOUND = "Group {} not found."                     # a leave or describe of no group
NOT_A_SHARE_GROUP = "Group {} is not a share group."
UNKNOWN_MEMBER = "Member {} is not a member of group {}."
MAX_SIZE_REACHED = "The share group has reached its maximum capacity of {} members."
GREATER_EPOCH = ("The share group member has a greater member epoch ({}) than the one known by "
                 "the group coordinator ({}). The member must abandon all its partitions and "
                 "rejoin.")
SMALLER_EPOCH = ("The share group member has a smaller member epoch ({}) than the one known by "
                 "the group coordinator ({}), and it does not match the previous member epoch "
                 "({}). The member must abandon all its partitions and rejoin.")
# what OffsetCommit, OffsetFetch and OffsetDelete of a share group are refused with
# (GROUP_ID_NOT_FOUND, ShareGroup.validateOffset*)
NOT_A_CONSUMER_GROUP = "Group {} is not a consumer group."


@frozen
class ShareHeartbeat:
    group_id: str
    member_id: str
    member_epoch: int
    rack_id: str | None = None
    subscribed_topic_names: tuple[str, ...] | None = None
    client_id: str = ""
    client_host: str = ""
    token: Hashable = None


@frozen
class ShareHeartbeatReply:
    error: ErrorCode = ErrorCode.none
    error_message: str | None = None
    member_id: str | None = None
    member_epoch: int = 0
    heartbeat_interval_ms: int = 0
    # ((topic id: 16 bytes, (partitions...)), ...); None: unchanged since the member last heard
    assignment: tuple[tuple[bytes, tuple[int, ...]], ...] | None = None


# a group config (share.* on the GROUP resource) -> the ShareConfig field it overrides for that
# group; the broker setting behind each is group.<config>
GROUP_CONFIG_FIELDS = {
    "share.session.timeout.ms": "session_timeout_ms",
    "share.heartbeat.interval.ms": "heartbeat_interval_ms",
}


@frozen
class ShareConfig(PerGroupConfig):
    """Broker settings (group.share.*) with Kafka 4.4.0's defaults, and per-group overrides
    (share.* on a GROUP resource) read at each use, so a config altered while the group runs
    applies from its next heartbeat, as in Kafka."""

    config_fields = GROUP_CONFIG_FIELDS
    max_size_setting = "group.share.max.size"

    session_timeout_ms: int = 45_000          # group.share.session.timeout.ms
    heartbeat_interval_ms: int = 5_000        # group.share.heartbeat.interval.ms
    max_size: int = 200                       # group.share.max.size (1-1000)
    # group id -> {group config name: value} (broker/groups/group_configs.py keeps it, shared)
    group_overrides: dict = field(default_factory=dict)

    def session_ms(self, group_id: str) -> int:
        return self.of(group_id, "share.session.timeout.ms")

    def heartbeat_ms(self, group_id: str) -> int:
        return self.of(group_id, "share.heartbeat.interval.ms")


def validate(q: ShareHeartbeat) -> tuple[ErrorCode, str] | None:
    """ShareGroupHeartbeat's request checks, in Kafka 4.4.0's order and words (its
    GroupCoordinatorService, before the group is looked at); None: well formed."""
    for value, message in ((q.member_id, MEMBER_ID_EMPTY), (q.group_id, GROUP_ID_EMPTY),
                           (q.rack_id, RACK_ID_EMPTY)):
        if value is not None and not value.strip():
            return ErrorCode.invalid_request, message
    if q.member_epoch == JOIN_EPOCH:
        if not q.subscribed_topic_names:
            return ErrorCode.invalid_request, TOPICS_AT_JOIN
    elif q.member_epoch < LEAVE_EPOCH:
        return ErrorCode.invalid_request, EPOCH_INVALID
    return None
