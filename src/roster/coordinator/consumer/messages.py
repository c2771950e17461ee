"""ConsumerGroupHeartbeat and ConsumerGroupDescribe as the core sees them (version-free)."""
from __future__ import annotations

from dataclasses import field
from typing import Hashable

from roster.frozen import frozen
from roster.protocol.errors import ErrorCode

TopicPartitions = tuple[tuple[bytes, tuple[int, ...]], ...]


@frozen
class HeartbeatRequest:
    group_id: str
    member_id: str
    member_epoch: int
    instance_id: str | None = None
    rack_id: str | None = None
    rebalance_timeout_ms: int = -1
    subscribed_topic_names: tuple[str, ...] | None = None
    subscribed_topic_regex: str | None = None
    server_assignor: str | None = None
    owned: TopicPartitions | None = None      # TopicPartitions; None: unchanged/unknown
    client_id: str = ""
    client_host: str = ""
    api_version: int = 1
    token: Hashable = None


@frozen
class HeartbeatReply:
    error: ErrorCode = ErrorCode.none
    error_message: str | None = None
    member_id: str | None = None
    member_epoch: int = 0
    heartbeat_interval_ms: int = 0
    assignment: TopicPartitions | None = None


@frozen
class DescribedMember:
    member_id: str
    instance_id: str | None
    rack_id: str | None
    member_epoch: int
    client_id: str
    client_host: str
    subscribed_topic_names: tuple[str, ...]
    subscribed_topic_regex: str | None
    assignment: TopicPartitions
    target_assignment: TopicPartitions
    member_type: int = 1       # v1: 1 = consumer protocol (0 classic, -1 unknown)


@frozen
class DescribedGroup:
    group_id: str
    error: ErrorCode = ErrorCode.none
    error_message: str | None = None
    state: str = ""
    group_epoch: int = 0
    assignment_epoch: int = 0
    assignor_name: str = ""
    members: tuple[DescribedMember, ...] = field(default_factory=tuple)
