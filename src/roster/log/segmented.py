"""What FileLog and MemoryLog share: a log kept as a list of segments ordered by base offset
(each with base_offset, next_offset, size, max_timestamp and offset_of_max_timestamp) above a
log start offset. The two differ in where a segment's bytes live, not in how the list is read."""
from __future__ import annotations

import bisect

import time

from roster.log.api import LogConfig, OffsetOutOfRange
from roster.log.policy import aged_out

NEVER = 2**63 - 1   # segment.ms that never rolls by time


def wall_clock_ms() -> int:
    return time.time_ns() // 1_000_000


class SegmentedLog:
    _segments: list
    _log_start: int
    _config: LogConfig

    def advance_log_start(self, offset: int) -> int:
        """DeleteRecords: readers lose every record below `offset` (the log start never moves
        back, so a lower offset changes nothing). The new start is durable before this returns;
        the segments wholly below it are deleted at once, the one holding it stays. Returns the
        log start offset. OffsetOutOfRange past the log end."""
        self._require_open()
        end = self.log_end_offset
        if offset > end:
            raise OffsetOutOfRange(f"offset {offset} is past the log end {end}")
        if offset > self._log_start:
            self._persist_log_start(offset)
            self._log_start = offset
            self._drop_oldest(bisect.bisect_right(self._segments, offset, key=_base_offset) - 1)
        return self._log_start

    def _persist_log_start(self, offset: int) -> None:
        raise NotImplementedError

    def _drop_oldest(self, count: int) -> None:
        raise NotImplementedError

    def _require_open(self) -> None:
        raise NotImplementedError

    def _aged(self, active, batch_timestamp: int) -> bool:
        """Whether segment.ms makes this batch roll the active segment (policy.aged_out). The
        active segment's first timestamp is read once per segment (`_first_timestamp`); its
        creation time is when this log first looked at it, as Kafka's LogSegment.created."""
        if self._config.segment_ms >= NEVER or active.size == 0:
            return False
        now = wall_clock_ms()
        known = getattr(self, "_rolling_base", None)
        if known is None or known[0] != active.base_offset:
            known = self._rolling_base = (active.base_offset, self._first_timestamp(active), now)
        return aged_out(known[1], batch_timestamp, known[2], now, self._config)

    def _first_timestamp(self, segment) -> int:
        raise NotImplementedError

    def reconfigure(self, config: LogConfig) -> None:
        """Use new settings from now on: appends, rolls and retention passes read them, and
        the segments already written stay as they are."""
        self._config = config

    @property
    def log_start_offset(self) -> int:
        return self._log_start

    @property
    def log_end_offset(self) -> int:
        return self._segments[-1].next_offset

    @property
    def size_bytes(self) -> int:
        return sum(segment.size for segment in self._segments)

    def segment_times(self) -> list[tuple[int, int, int]]:
        """(base offset, last modified ms, size in bytes) of each segment, oldest first: what
        ListOffsets v0 answers from (Kafka's legacyFetchOffsetsBefore)."""
        return [(s.base_offset, s.modified_ms(), s.size) for s in self._segments]

    def _segments_from(self, offset: int) -> list:
        """The segments from the one holding `offset` on (a read skips any that end at or
        before where it has got to). OffsetOutOfRange outside [log start, log end]."""
        end = self.log_end_offset
        if not self._log_start <= offset <= end:
            raise OffsetOutOfRange(f"offset {offset} is outside the log [{self._log_start}, {end}]")
        first = bisect.bisect_right(self._segments, offset, key=_base_offset) - 1
        return self._segments[first:]

    def _segment_with_max_timestamp(self):
        """The segment holding the log's largest timestamp (the first one on a tie, as the
        first record wins), or None when no batch carries a timestamp."""
        best = None
        for segment in self._segments:
            if segment.offset_of_max_timestamp >= 0 and \
                    (best is None or segment.max_timestamp > best.max_timestamp):
                best = segment
        return best


def _base_offset(segment) -> int:
    return segment.base_offset
