"""ListOffsets (2), v0-11: earliest, latest, max-timestamp, or the first offset at a timestamp.

v0 (dropped by Kafka 4.0, still sent by Burrow 1.2 and sarama clients configured below 0.10.1)
answers as Kafka 3.9 did (UnifiedLog.legacyFetchOffsetsBefore): not the offset of a record but
segment boundaries. Each segment stands for (max(base offset, log start), its file's modification
time), and a non-empty active segment adds (log end, now). Latest starts from the last entry,
earliest from the first, a timestamp from the last entry modified at or before it; the answer is
up to max_num_offsets offsets from there back towards the log start, newest first.

isolation_level (v2+): LATEST under READ_COMMITTED is the last stable offset, as Kafka's
(the first offset of the earliest open transaction); READ_UNCOMMITTED's is the high watermark.
A timestamp lookup under READ_COMMITTED finds nothing at or past the last stable offset.
"""
from __future__ import annotations

from types import SimpleNamespace

from roster.broker.network.admission import partition_error
from roster.broker.network.classic_versions import serving
from roster.log.api import CorruptBatch
from roster.protocol.acl import AclOperation
from roster.protocol.api_keys import ApiKey
from roster.protocol.build import make, per_partition
from roster.protocol.codec import response_schema
from roster.protocol.errors import ErrorCode
from roster.protocol.registry import ApiSpec, Topics

API_KEY = ApiKey.LIST_OFFSETS
LATEST = -1
EARLIEST = -2
MAX_TIMESTAMP = -3        # v7+
EARLIEST_LOCAL = -4       # v8+: same as earliest, there is no remote tier
LATEST_TIERED = -5        # v9+: nothing is tiered, so there is no such offset
EARLIEST_PENDING_UPLOAD = -6  # v11+: likewise
READ_COMMITTED = 1


def _answer(admitted, index: int, timestamp: int, committed: bool = False) -> dict:
    """One partition's answer, of a topic entry as admission resolved it."""
    error = partition_error(admitted, index)
    if error is not ErrorCode.none:
        return {"partition_index": index, "error_code": error,
                "timestamp": -1, "offset": -1, "leader_epoch": -1}
    topic = admitted[0]
    try:
        found, offset = _lookup(topic.partitions[index], timestamp, committed)
        error = ErrorCode.none
    except CorruptBatch:  # a stored batch whose records do not decode
        found, offset, error = -1, -1, ErrorCode.corrupt_message
    return {"partition_index": index, "error_code": error, "timestamp": found, "offset": offset,
            "leader_epoch": 0}


def _lookup(log, timestamp: int, committed: bool) -> tuple[int, int]:
    """(timestamp, offset) for one partition; (-1, -1) when there is no such record."""
    if timestamp == LATEST:
        return -1, log.last_stable_offset if committed else log.log_end_offset
    if timestamp in (EARLIEST, EARLIEST_LOCAL):
        return -1, log.log_start_offset
    if timestamp in (LATEST_TIERED, EARLIEST_PENDING_UPLOAD):
        return -1, -1
    found = log.max_timestamp() if timestamp == MAX_TIMESTAMP \
        else log.offset_for_timestamp(timestamp)
    # Kafka's Partition.fetchOffsetForTimestamp: a record at or past what the isolation level
    # may read is not found
    if found is None or (committed and found.offset >= log.last_stable_offset):
        return -1, -1
    return found.timestamp, found.offset


def _old_style_offsets(log, timestamp: int, max_num_offsets: int, now_ms: int) -> list[int]:
    """v0's answer for one partition (see the module docstring)."""
    start = log.log_start_offset
    segments = log.segment_times()
    entries = [(max(base, start), modified) for base, modified, _ in segments]
    if segments[-1][2] > 0:
        entries.append((log.log_end_offset, now_ms))
    if timestamp == LATEST:
        index = len(entries) - 1
    elif timestamp == EARLIEST:
        index = 0
    else:
        index = len(entries) - 1
        while index >= 0 and entries[index][1] > timestamp:
            index -= 1
    count = max(0, min(max_num_offsets, index + 1))
    offsets = [entries[index - j][0] for j in range(count)]
    return sorted(offsets, reverse=True)


def _v0(broker, request) -> SimpleNamespace:
    now_ms = broker.now_ms()
    topics = []
    for t, wanted in enumerate(request.body.topics):
        admitted = request.admission.topic(t)
        topic = admitted[0]
        partitions = []
        for p in wanted.partitions:
            error = partition_error(admitted, p.partition_index)
            offsets = ()
            if error is ErrorCode.none:
                offsets = _old_style_offsets(topic.partitions[p.partition_index], p.timestamp,
                                             p.max_num_offsets, now_ms)
            partitions.append(SimpleNamespace(partition_index=p.partition_index,
                                              error_code=error, old_style_offsets=offsets))
        topics.append(SimpleNamespace(name=wanted.name, partitions=partitions))
    return SimpleNamespace(topics=topics)


async def handle(broker, request, connection):
    if request.api_version == 0:
        return _v0(broker, request)
    admission = request.admission
    committed = getattr(request.body, "isolation_level", 0) == READ_COMMITTED

    def answer(t: int, _, wanted) -> dict:
        return _answer(admission.topic(t), wanted.partition_index, wanted.timestamp, committed)

    schema = response_schema(API_KEY, request.api_version)
    return make(schema, topics=per_partition(schema, request.body.topics, answer))


SPEC = ApiSpec(API_KEY, "ListOffsets", 0, 11, handle, raw=serving(API_KEY, 1, handle),
               resources=(Topics(AclOperation.DESCRIBE),))
