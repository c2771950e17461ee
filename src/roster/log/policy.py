"""Decisions both log implementations make identically: what append accepts, when a segment rolls,
and which segments retention deletes. Sharing them is what keeps MemoryLog a faithful model of
FileLog in tests."""
from __future__ import annotations

from collections.abc import Sequence

from roster.frozen import frozen
from roster.log.api import LogConfig, RecordTooLarge
from roster.log.batch import BatchHeader, validate

INT32_MAX = (1 << 31) - 1


def check_batch(batch, config: LogConfig) -> BatchHeader:
    """The header of a batch fit to append. Raises RecordTooLarge or CorruptBatch."""
    if len(batch) > config.max_message_bytes:
        raise RecordTooLarge(f"the batch is {len(batch)} bytes, "
                             f"larger than max.message.bytes={config.max_message_bytes}")
    return validate(batch)


def should_roll(segment_size: int, segment_base: int, batch_size: int, last_offset: int,
                config: LogConfig, aged: bool = False) -> bool:
    """Whether a batch must start a new segment instead of joining the active one: it would
    not fit in segment.bytes, or the segment is `aged` (see aged_out).

    An empty segment takes any batch, however large, so an oversized batch cannot wedge the log.
    Index entries hold positions and relative offsets as int32, which bounds a segment too.
    """
    if segment_size == 0:
        return False
    limit = min(config.segment_bytes, INT32_MAX)
    return aged or segment_size + batch_size > limit or last_offset - segment_base > INT32_MAX


def aged_out(first_timestamp: int, batch_timestamp: int, created_ms: int, now_ms: int,
             config: LogConfig) -> bool:
    """Kafka's time-based roll (LogSegment.shouldRoll): the time the active segment has waited
    is the incoming batch's maxTimestamp minus the segment's first batch's, or, when the
    segment's first batch has no timestamp, the time since the segment was made; past
    segment.ms the batch starts a new segment."""
    if first_timestamp >= 0:
        waited = batch_timestamp - first_timestamp
    else:
        waited = now_ms - created_ms
    return waited > config.segment_ms


@frozen
class RetentionPlan:
    delete: int         # how many of the oldest segments to delete
    roll_first: bool    # the active segment is among them: roll before deleting


def plan_retention(segments: Sequence[tuple[int, int | None]], now_ms: int,
                   config: LogConfig) -> RetentionPlan:
    """Which segments retention deletes, oldest first.

    `segments` lists (size in bytes, retention timestamp or None when empty) from oldest to the
    active one. By time, the oldest segments whose timestamp is older than retention.ms go,
    stopping at the first one that is not; the active segment may be among them. By size, more of
    the oldest go while the rest would still hold at least retention.bytes; the active segment is
    never deleted for size.
    """
    count = 0
    if config.retention_ms >= 0:
        cutoff = now_ms - config.retention_ms
        while count < len(segments):
            timestamp = segments[count][1]
            if timestamp is None or timestamp >= cutoff:
                break
            count += 1
    roll_first = count > 0 and count == len(segments)
    if config.retention_bytes >= 0 and not roll_first:
        remaining = sum(size for size, _ in segments[count:])
        while count < len(segments) - 1 and remaining - segments[count][0] >= config.retention_bytes:
            remaining -= segments[count][0]
            count += 1
    return RetentionPlan(count, roll_first)
