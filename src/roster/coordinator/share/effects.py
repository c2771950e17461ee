"""What a share group asks of the edge beyond its records (Result.effects), handled once the
result is durable by the handlers its registration names (broker/groups/share_group.py), which
call the broker's share-partition state (broker.share_state)."""
from __future__ import annotations

from roster.frozen import frozen



@frozen
class ShareStateWanted:
    """Initialise the share state of these partitions (those not yet initialised): they are in
    the group's target assignment. ((topic id: 16 bytes, partition), ...)."""
    group_id: str
    partitions: tuple[tuple[bytes, int], ...]


@frozen
class ShareGroupGone:
    """DeleteGroups took the group: its share state goes too."""
    group_id: str
