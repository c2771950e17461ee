"""Offset expiry (offsets.retention.minutes), as Kafka decides it:

- a classic group that is Empty: every offset, counted from when the group became Empty;
- a Stable group of protocol type "consumer": only offsets of topics no member subscribes to any
  more, counted from their commit;
- a simple group (no protocol type, e.g. commits from assign() users or admin tools): every
  offset, counted from its commit;
- any other group: nothing expires;
- an offset committed with an explicit expire timestamp (OffsetCommit v2-4) expires then;
- the offsets of a consumer group (KIP-848, kept here in a group without members): those of
  topics its members subscribe to never, the others counted from their commit.

An Empty group left without offsets is deleted too. The deletion itself (Dead while the
tombstones are written, Empty again if that fails, replay once durable) is tombstones.py's.
"""
from __future__ import annotations

import logging

from roster.coordinator import tombstones
from roster.coordinator.continuations import OffsetsExpired
from roster.coordinator.group import CommittedOffset, Group
from roster.coordinator.results import Result
from roster.coordinator.states import GroupState

log = logging.getLogger("roster.coordinator")
S = GroupState


def _expired(group: Group, key: tuple[str, int], offset: CommittedOffset, retention_ms: int,
             now: int, subscribed: set[str] | None) -> bool:
    if offset.expire_timestamp >= 0:
        return offset.expire_timestamp <= now
    if group.protocol_type is None:  # simple group
        base = offset.commit_timestamp
    elif group.state is S.EMPTY:
        base = group.state_timestamp if group.state_timestamp >= 0 else offset.commit_timestamp
    elif group.state is S.STABLE and group.protocol_type == "consumer":
        if subscribed is None or key[0] in subscribed:
            return False
        base = offset.commit_timestamp
    else:
        return False
    return base + retention_ms <= now


def expire_offsets(ctx, now: int) -> Result:
    result = Result()
    retention = ctx.config.offsets_retention_ms
    # topics the members of a consumer group (KIP-848) of that id subscribe to, or None when
    # there is no such group: its offsets live here, in a group without members
    consumer_topics = getattr(ctx, "consumer_topics", None)
    for group in list(ctx.groups.values()):
        if group.state is S.DEAD:
            continue
        subscribed = group.subscribed_topics() if group.state is S.STABLE and \
            group.protocol_type == "consumer" else set()
        held = consumer_topics(group.group_id) if consumer_topics is not None else None
        if held is not None:   # as a Stable consumer group: what members read is kept
            expired = [key for key, offset in sorted(group.offsets.items())
                       if (offset.expire_timestamp >= 0 and offset.expire_timestamp <= now)
                       or (offset.expire_timestamp < 0 and key[0] not in held
                           and offset.commit_timestamp + retention <= now)]
        else:
            expired = [key for key, offset in sorted(group.offsets.items())
                       if _expired(group, key, offset, retention, now, subscribed)]
        whole_group = group.state is S.EMPTY and not group.members and \
            len(expired) == len(group.offsets)
        if not expired and not whole_group:
            continue
        log.info("expiring %d offsets of group %s%s", len(expired), group.group_id,
                 " and the group itself" if whole_group else "")
        buried = tombstones.bury(group, expired, whole_group, now, result)
        result.after_write.append(OffsetsExpired(buried))
    return result
