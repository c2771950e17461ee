"""What a group member's state machine tells its driver, and how it is configured: the values
membership.py (classic) and consumer_membership.py (KIP-848) return from their methods. The
driver sends each `Send`, runs the application's callback for `Assigned`/`Revoked`/`Lost`, and
carries out the rest as each names."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from roster.client.assignors.api import TopicPartition
from roster.frozen import frozen
from roster.protocol.errors import ErrorCode


@frozen
class Send:
    """A request for the driver to send; `api` is the Kafka API name, `fields` its body in
    newest-version field names. The response comes back through the matching on_* method."""

    api: str
    fields: dict[str, Any]
    to_coordinator: bool = True


def find_coordinator(group_id: str) -> Send:
    """FindCoordinator for a group, to the cluster (not to a coordinator it does not know)."""
    return Send("FindCoordinator", {"key": group_id, "key_type": 0}, to_coordinator=False)


@frozen
class NeedTopicIds:
    """Resolve these topic ids to names (Metadata), then call on_topic_names() (the KIP-848
    machines: consumer and share groups, whose assignments name topics by id)."""

    topic_ids: tuple


def assignment_target(assignment, names: dict) -> tuple[frozenset, tuple]:
    """A heartbeat's assignment ((topic id, (partitions...)), ...) as (topic id, partition)
    pairs, and the topic ids among them `names` does not name yet (sorted)."""
    target = frozenset((t, p) for t, ps in assignment for p in ps)
    return target, tuple(sorted({t for t, _ in target if t not in names}, key=str))


@frozen
class NeedMetadata:
    topics: tuple[str, ...]


@frozen
class Assigned:
    partitions: tuple[TopicPartition, ...]


@frozen
class Revoked:
    partitions: tuple[TopicPartition, ...]


@frozen
class RejoinWhenRevoked:
    """Comes after a Revoked: the driver reaches it once the application's callback for those
    partitions has returned, and then calls `Membership.revoked`, which sends the JoinGroup."""


@frozen
class LeaveWhenRevoked:
    """Comes after the Revoked (or Lost) of closing: the driver reaches it once the application's
    callback has returned, and then calls `finish_leaving`, which sends the LeaveGroup."""


@frozen
class Lost:
    """Partitions this member no longer owns and could not revoke cleanly (its generation or
    member id is no longer valid): their offsets must not be committed."""

    partitions: tuple[TopicPartition, ...]


@frozen
class Fatal:
    error: ErrorCode
    message: str
    operation: str = ""  # for an authorization refusal: the operation refused (READ, ...)


class FencedError(RuntimeError):
    """This member's group.instance.id was taken over by another process (FENCED_INSTANCE_ID).
    The member is finished: create a new one (after fixing the duplicate configuration)."""


@dataclass(slots=True)
class MemberConfig:
    group_id: str
    group_instance_id: str | None = None
    session_timeout_ms: int = 45_000
    rebalance_timeout_ms: int = 300_000
    heartbeat_interval_ms: int = 3_000
    retry_backoff_ms: int = 100
    assignors: tuple[str, ...] = ("range",)   # preference order
    rack_id: str | None = None
