"""The answer of the KIP-848 style heartbeats whose response carries a member's partitions
(ConsumerGroupHeartbeat, ShareGroupHeartbeat): the two responses share their fields, so one
builder serves both. `reply` is the group type's reply (error, error_message, member_id,
member_epoch, heartbeat_interval_ms, assignment: ((topic id bytes, partitions), ...) or None).
"""
from __future__ import annotations

import datetime
import uuid

from roster.protocol.build import element, make
from roster.protocol.codec import response_schema


def heartbeat_answer(api_key, version: int, reply):
    schema = response_schema(api_key, version)
    assignment = None
    if reply.assignment is not None:
        entry = element(schema, "assignment")
        topic = element(entry, "topic_partitions")
        assignment = make(entry, topic_partitions=tuple(
            make(topic, topic_id=uuid.UUID(bytes=tid), partitions=tuple(ps))
            for tid, ps in reply.assignment))
    return make(schema, error_code=reply.error, error_message=reply.error_message,
                member_id=reply.member_id, member_epoch=reply.member_epoch,
                heartbeat_interval=datetime.timedelta(milliseconds=reply.heartbeat_interval_ms),
                assignment=assignment)
