"""What a streams group asks of the edge beyond its records (Result.effects), handled once the
result is durable by the handler its registration names (broker/groups/streams_group.py)."""
from __future__ import annotations

from typing import TYPE_CHECKING

from roster.frozen import frozen

if TYPE_CHECKING:   # its registration keys on this class: loading it must not load topology
    from roster.coordinator.streams.topology import InternalTopic


@frozen
class InternalTopicsWanted:
    """Create these topics (those still missing): a topology's internal topics."""
    group_id: str
    topics: tuple[InternalTopic, ...]
