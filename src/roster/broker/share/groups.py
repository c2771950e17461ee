"""What the share-offsets APIs ask of the group shard: whether a group id is a share group's
(another type's is refused GROUP_ID_NOT_FOUND, "Group <id> is not a share group.", as Kafka's
GroupMetadataManager.shareGroup says) and whether it has members (AlterShareGroupOffsets and
DeleteShareGroupOffsets act only on an empty group: NON_EMPTY_GROUP)."""
from __future__ import annotations

from roster.protocol.errors import ErrorCode

SHARE = "share"
NON_EMPTY_MESSAGE = "The group is not empty."


def _holder(broker, group_id: str):
    for group_type in broker.groups.shard.types:
        if group_type.has_group(group_id):
            return group_type
    return None


def not_a_share_group(broker, group_id: str) -> tuple[ErrorCode, str] | None:
    """The refusal of a group id held by another type, else None (a share group, or none)."""
    holder = _holder(broker, group_id)
    if holder is not None and holder.name != SHARE:
        return ErrorCode.group_id_not_found, f"Group {group_id} is not a share group."
    return None


def exists(broker, group_id: str) -> bool:
    holder = _holder(broker, group_id)
    return holder is not None and holder.name == SHARE


def is_empty(broker, group_id: str) -> bool:
    holder = _holder(broker, group_id)
    return holder is None or holder.is_empty(group_id)
