"""A share partition's record states and the acknowledgement types, with Kafka's numbers.

RecordState is Kafka's (kafka.server.share / org.apache.kafka.server.share.fetch.RecordState):
AVAILABLE 0, ACQUIRED 1, ACKNOWLEDGED 2, ARCHIVED 4. Only 0, 2 and 4 are ever persisted (the
DeliveryState of ShareSnapshotValue/ShareUpdateValue's state batches): an acquisition lives in
memory only, and a restarted broker finds the record as it was last written.

AcknowledgeType is the wire's (ShareFetch/ShareAcknowledge AcknowledgeTypes): 0 GAP, 1 ACCEPT,
2 RELEASE, 3 REJECT, 4 RENEW (KIP-1222).
"""
from __future__ import annotations

import enum


class RecordState(enum.IntEnum):
    AVAILABLE = 0
    ACQUIRED = 1
    ACKNOWLEDGED = 2
    ARCHIVED = 4

    @property
    def terminal(self) -> bool:
        """Delivery is complete: the record will never be handed out again."""
        return self in (RecordState.ACKNOWLEDGED, RecordState.ARCHIVED)


class AckType(enum.IntEnum):
    GAP = 0
    ACCEPT = 1
    RELEASE = 2
    REJECT = 3
    RENEW = 4


class AcquireMode(enum.IntEnum):
    """ShareFetch v2's ShareAcquireMode (KIP-1206)."""
    BATCH_OPTIMIZED = 0
    RECORD_LIMIT = 1
