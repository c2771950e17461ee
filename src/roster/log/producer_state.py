"""Per-partition producer state: open transactions, the last stable offset, aborted transactions.

The read side of transactions, as Kafka's ProducerStateManager and TransactionIndex keep it.
Everything here is derived from the batches of one partition log, in offset order, so a log can
rebuild it by replaying its batches (recovery) and a test can check it against a plain model.

  * A transactional data batch (attribute bit 0x10, not a control batch) opens its producer's
    transaction at its base offset unless one is already open.
  * A control batch (0x20) is a transaction marker: its single record's key is (version int16,
    type int16: 0 abort, 1 commit), its value (version int16, coordinator epoch int32). It
    closes the producer's transaction; a marker for a producer with no open transaction here
    closes an empty one that starts at the marker (Kafka's appendEndTxnMarker).
  * An aborted transaction becomes an entry (producer id, first offset, last offset = the
    marker's, last stable offset = the first offset of the earliest transaction still open,
    else the marker's offset + 1), as Kafka's .txnindex stores it.
  * The last stable offset (LSO) is the first offset of the earliest open transaction (never
    below the log start), else the high watermark. read_committed readers stop there.

Pure: no files, no clock. roster.log.txn_files keeps this durable for a FileLog.
"""
from __future__ import annotations

import bisect
import struct
from array import array
from collections.abc import Iterable, Iterator
from dataclasses import dataclass

from roster.frozen import frozen
from roster.log.batch import BATCH_HEADER_SIZE, BatchHeader
from roster.protocol.varint import read_zigzag

NO_PRODUCER = -1
# producer.id.expiration.ms's default: a producer idle this long (and with no open transaction)
# is forgotten at the next roll
PRODUCER_EXPIRATION_MS = 86_400_000
ABORT = 0
COMMIT = 1
_I16 = struct.Struct(">h")
_MARKER_KEY = struct.Struct(">hh")
_MARKER_VALUE = struct.Struct(">hi")


class MarkerError(ValueError):
    """A control batch whose record is not a transaction marker roster can read."""


@frozen
class Marker:
    type: int                 # ABORT or COMMIT
    coordinator_epoch: int


def read_marker(batch, position: int = 0) -> Marker:
    """The transaction marker in the control batch at `position` of `batch`.

    Control batches are never compressed and hold one record: length, attributes, timestamp
    delta, offset delta, key length, key, value length, value (varints are zig-zag)."""
    at = position + BATCH_HEADER_SIZE
    try:
        _, at = read_zigzag(batch, at)        # record length
        at += 1                                # attributes
        _, at = read_zigzag(batch, at)        # timestamp delta
        _, at = read_zigzag(batch, at)        # offset delta
        key_length, at = read_zigzag(batch, at)
        if key_length < _MARKER_KEY.size:
            raise MarkerError(f"a control record key of {key_length} bytes")
        version, kind = _MARKER_KEY.unpack_from(batch, at)
        at += key_length
        value_length, at = read_zigzag(batch, at)
        epoch = _MARKER_VALUE.unpack_from(batch, at)[1] if value_length >= _MARKER_VALUE.size \
            else -1
    except (IndexError, struct.error) as exc:
        raise MarkerError(f"a control batch too short for a transaction marker: {exc}") from exc
    if version < 0 or kind not in (ABORT, COMMIT):
        raise MarkerError(f"control record type {kind} (version {version}) is no marker")
    return Marker(kind, epoch)


@frozen
class AbortedTxn:
    producer_id: int
    first_offset: int
    last_offset: int          # the abort marker's offset
    last_stable_offset: int   # the LSO once this transaction was aborted


@dataclass(slots=True)
class ProducerEntry:
    """What DescribeProducers reports of one producer on one partition."""

    producer_id: int
    epoch: int
    last_sequence: int = -1
    last_timestamp: int = -1
    coordinator_epoch: int = -1
    txn_first_offset: int = -1     # -1: no open transaction
    last_offset: int = -1          # offset of its last batch (data or marker)

    def as_list(self) -> list[int]:
        return [self.producer_id, self.epoch, self.last_sequence, self.last_timestamp,
                self.coordinator_epoch, self.txn_first_offset, self.last_offset]


class ProducerState:
    """The producers of one partition and their open transactions, fed batch by batch."""

    def __init__(self) -> None:
        self.producers: dict[int, ProducerEntry] = {}
        self._open: dict[int, int] = {}   # producer id -> first offset of its open transaction

    def apply(self, header: BatchHeader, batch=None, position: int = 0) -> AbortedTxn | None:
        """Account for one stored batch (base offset assigned). `batch` (with the batch at
        `position`) is only read for a control batch. Returns the entry an abort marker makes."""
        pid = header.producer_id
        if pid == NO_PRODUCER:
            return None
        entry = self.producers.get(pid)
        if entry is None:
            entry = self.producers[pid] = ProducerEntry(pid, header.producer_epoch)
        entry.epoch = header.producer_epoch
        entry.last_offset = header.last_offset
        entry.last_timestamp = header.max_timestamp
        if not header.is_control:
            if header.base_sequence >= 0:
                entry.last_sequence = header.base_sequence + header.last_offset_delta
            if header.is_transactional and pid not in self._open:
                self._open[pid] = entry.txn_first_offset = header.base_offset
            return None
        marker = read_marker(batch, position)
        entry.coordinator_epoch = marker.coordinator_epoch
        first = self._open.pop(pid, header.base_offset)
        entry.txn_first_offset = -1
        if marker.type == COMMIT:
            return None
        stable = min(self._open.values(), default=header.last_offset + 1)
        return AbortedTxn(pid, first, header.last_offset, stable)

    def first_unstable_offset(self) -> int | None:
        return min(self._open.values(), default=None)

    def last_stable_offset(self, log_start: int, high_watermark: int) -> int:
        first = min(self._open.values(), default=None)
        return high_watermark if first is None else min(max(first, log_start), high_watermark)

    def open_transactions(self) -> dict[int, int]:
        return dict(self._open)

    def expire(self, now_ms: int, expiration_ms: int, log_start: int) -> None:
        """Forget producers with no open transaction that wrote nothing within expiration_ms
        (producer.id.expiration.ms) or whose last batch is below the log start: the partition's
        producer table is bounded by its recent producers, as in Kafka."""
        doomed = [pid for pid, e in self.producers.items() if pid not in self._open and
                  (e.last_timestamp < now_ms - expiration_ms or e.last_offset < log_start)]
        for pid in doomed:
            del self.producers[pid]

    # -- snapshots ---------------------------------------------------------------------------

    def to_rows(self) -> list[list[int]]:
        return [entry.as_list() for entry in self.producers.values()]

    @classmethod
    def from_rows(cls, rows: Iterable[Iterable[int]]) -> ProducerState:
        state = cls()
        for row in rows:
            entry = ProducerEntry(*row)
            state.producers[entry.producer_id] = entry
            if entry.txn_first_offset >= 0:
                state._open[entry.producer_id] = entry.txn_first_offset
        return state


class AbortedIndex:
    """Every aborted transaction of a partition, in marker order (so sorted by last offset), in
    four flat arrays: 32 bytes an entry, searched by bisection."""

    def __init__(self) -> None:
        self._pid = array("q")
        self._first = array("q")
        self._last = array("q")
        self._stable = array("q")

    def __len__(self) -> int:
        return len(self._last)

    def add(self, txn: AbortedTxn) -> None:
        self._pid.append(txn.producer_id)
        self._first.append(txn.first_offset)
        self._last.append(txn.last_offset)
        self._stable.append(txn.last_stable_offset)

    def _entry(self, i: int) -> AbortedTxn:
        return AbortedTxn(self._pid[i], self._first[i], self._last[i], self._stable[i])

    def __iter__(self) -> Iterator[AbortedTxn]:
        return (self._entry(i) for i in range(len(self._last)))

    def between(self, low: int, high: int) -> list[AbortedTxn]:
        """Entries whose marker lies in [low, high)."""
        start = bisect.bisect_left(self._last, low)
        stop = bisect.bisect_left(self._last, high)
        return [self._entry(i) for i in range(start, stop)]

    def last_marker(self) -> int:
        return self._last[-1] if self._last else -1

    def overlapping(self, fetch_offset: int, upper_bound: int) -> list[AbortedTxn]:
        """The aborted transactions a read of [fetch_offset, upper_bound) must report: each
        whose marker is at or after fetch_offset and whose first offset is below upper_bound
        (Kafka's TransactionIndex.collectAbortedTxns). The search stops at the first entry whose
        last stable offset reaches upper_bound: every later transaction began at or after it."""
        found = []
        first, stable = self._first, self._stable
        for i in range(bisect.bisect_left(self._last, fetch_offset), len(self._last)):
            if first[i] < upper_bound:
                found.append(self._entry(i))
            if stable[i] >= upper_bound:
                break
        return found

    def remove(self, markers) -> None:
        """Forget the entries of these (producer id, marker offset) pairs (compaction removed
        the markers)."""
        doomed = set(markers)
        if not doomed:
            return
        kept = [txn for txn in self if (txn.producer_id, txn.last_offset) not in doomed]
        for column in (self._pid, self._first, self._last, self._stable):
            del column[:]
        for txn in kept:
            self.add(txn)

    def drop_before(self, offset: int) -> None:
        """Forget the entries whose marker is below `offset` (their segment was deleted)."""
        cut = bisect.bisect_left(self._last, offset)
        if cut:
            for column in (self._pid, self._first, self._last, self._stable):
                del column[:cut]

    def truncate_from(self, offset: int) -> None:
        """Forget the entries whose marker is at or after `offset` (recovery replays them)."""
        cut = bisect.bisect_left(self._last, offset)
        for column in (self._pid, self._first, self._last, self._stable):
            del column[cut:]
