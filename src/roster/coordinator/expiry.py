"""Offset expiry (offsets.retention.minutes), as Kafka decides it:

- a classic group that is Empty: every offset, counted from when the group became Empty;
- a Stable group of protocol type "consumer": only offsets of topics no member subscribes to any
  more, counted from their commit;
- a simple group (no protocol type, e.g. commits from assign() users or admin tools): every
  offset, counted from its commit;
- any other group: nothing expires;
- an offset committed with an explicit expire timestamp (OffsetCommit v2-4) expires then.

An Empty group left without offsets is deleted too: it is Dead while its tombstone is written
(nothing joins it meanwhile), and Empty again if the write fails. Tombstones are written first;
the offsets go (through replay) once they are durable.
"""
from __future__ import annotations

import logging

from roster.coordinator import records
from roster.coordinator.group import CommittedOffset, Group
from roster.coordinator.results import AfterWrite, Result
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
    for group in list(ctx.groups.values()):
        if group.state is S.DEAD:
            continue
        subscribed = group.subscribed_topics() if group.state is S.STABLE and \
            group.protocol_type == "consumer" else set()
        expired = [key for key, offset in sorted(group.offsets.items())
                   if _expired(group, key, offset, retention, now, subscribed)]
        tombstones = [records.offset_tombstone(group.group_id, t, p) for t, p in expired]
        if group.state is S.EMPTY and not group.members and len(expired) == len(group.offsets):
            tombstones.append(records.group_tombstone(group.group_id))
            # Nothing may join while the tombstone is written: replaying it would take the
            # group, and whoever joined, away.
            group.transition_to(S.DEAD, now)
        if not tombstones:
            continue
        log.info("expiring %d offsets of group %s%s", len(expired), group.group_id,
                 " and the group itself" if len(tombstones) > len(expired) else "")
        result.records.extend(tombstones)
        result.after_write.append(AfterWrite("replay", group.group_id, tombstones))
    return result
