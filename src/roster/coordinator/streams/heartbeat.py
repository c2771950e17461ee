"""What a StreamsGroupHeartbeat asks and is answered, as the coordinator reads them (the
handler converts the wire's fields: broker/handlers/streams_group_heartbeat.py)."""
from __future__ import annotations

from typing import Callable, Hashable, Iterable

from roster.coordinator.streams.model import Endpoint, Tasks
from roster.coordinator.streams.topology import Topology
from roster.frozen import frozen
from roster.protocol.errors import ErrorCode


@frozen
class StreamsHeartbeat:
    group_id: str
    member_id: str
    member_epoch: int
    endpoint_information_epoch: int = 0
    instance_id: str | None = None
    rack_id: str | None = None
    rebalance_timeout_ms: int = -1
    topology: Topology | None = None
    # what the member owns; None: unchanged since it last said
    active: Tasks | None = None
    standby: Tasks | None = None
    warmup: Tasks | None = None
    process_id: str | None = None
    user_endpoint: Endpoint | None = None
    client_tags: tuple[tuple[str, str], ...] | None = None
    task_offsets: tuple[tuple[str, int, int], ...] | None = None
    task_end_offsets: tuple[tuple[str, int, int], ...] | None = None
    shutdown_application: bool = False
    client_id: str = ""
    client_host: str = ""
    api_version: int = 0
    token: Hashable = None
    # the edge's ACL check for the internal topics the group would create: those of the names
    # the member may not create (Kafka's CREATE on the cluster or each topic); None: all may be
    create_refused: Callable[[Iterable[str]], Iterable[str]] | None = None


@frozen
class EndpointAnswer:
    """One PartitionsByUserEndpoint entry: (topic, partitions) pairs, sorted."""
    endpoint: Endpoint
    active: tuple[tuple[str, tuple[int, ...]], ...]
    standby: tuple[tuple[str, tuple[int, ...]], ...]


@frozen
class StreamsHeartbeatReply:
    error: ErrorCode = ErrorCode.none
    error_message: str | None = None
    member_id: str = ""
    member_epoch: int = 0
    heartbeat_interval_ms: int = 0
    acceptable_recovery_lag: int = 0
    task_offset_interval_ms: int = 0
    status: tuple[tuple[int, str], ...] | None = ()     # Kafka answers [] when none
    # None: unchanged since the member last heard
    active: Tasks | None = None
    standby: Tasks | None = None
    warmup: Tasks | None = None
    endpoint_information_epoch: int = 0
    partitions_by_user_endpoint: tuple[EndpointAnswer, ...] | None = None
