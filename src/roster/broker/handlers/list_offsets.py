"""ListOffsets (2), v1-11: earliest, latest, max-timestamp, or the first offset at a timestamp."""
from __future__ import annotations

from roster.log.api import CorruptBatch
from roster.protocol.build import make, per_partition
from roster.protocol.codec import response_schema
from roster.protocol.errors import ErrorCode
from roster.protocol.registry import ApiSpec

API_KEY = 2
LATEST = -1
EARLIEST = -2
MAX_TIMESTAMP = -3        # v7+
EARLIEST_LOCAL = -4       # v8+: same as earliest, there is no remote tier
LATEST_TIERED = -5        # v9+: nothing is tiered, so there is no such offset
EARLIEST_PENDING_UPLOAD = -6  # v11+: likewise


def _answer(topic, index: int, timestamp: int) -> dict:
    """One partition's answer; `topic` None when unknown."""
    if topic is None or not 0 <= index < len(topic.partitions):
        return {"partition_index": index, "error_code": ErrorCode.unknown_topic_or_partition,
                "timestamp": -1, "offset": -1, "leader_epoch": -1}
    try:
        found, offset = _lookup(topic.partitions[index], timestamp)
        error = ErrorCode.none
    except CorruptBatch:  # a stored batch whose records do not decode
        found, offset, error = -1, -1, ErrorCode.corrupt_message
    return {"partition_index": index, "error_code": error, "timestamp": found, "offset": offset,
            "leader_epoch": 0}


def _lookup(log, timestamp: int) -> tuple[int, int]:
    """(timestamp, offset) for one partition; (-1, -1) when there is no such record."""
    if timestamp == LATEST:
        return -1, log.log_end_offset
    if timestamp in (EARLIEST, EARLIEST_LOCAL):
        return -1, log.log_start_offset
    if timestamp in (LATEST_TIERED, EARLIEST_PENDING_UPLOAD):
        return -1, -1
    found = log.max_timestamp() if timestamp == MAX_TIMESTAMP else log.offset_for_timestamp(timestamp)
    return (found.timestamp, found.offset) if found else (-1, -1)


async def handle(broker, request, connection):
    def answer(name: str, wanted) -> dict:
        return _answer(broker.topics.get(name), wanted.partition_index, wanted.timestamp)

    schema = response_schema(API_KEY, request.api_version)
    return make(schema, topics=per_partition(schema, request.body.topics, answer))


SPEC = ApiSpec(API_KEY, "ListOffsets", 1, 11, handle)
