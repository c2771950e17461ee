"""What log compaction does with transactions (Kafka's CleanedTransactionMetadata).

A pass is given the aborted transactions (roster.log.producer_state.AbortedTxn) that overlap the
range it cleans and sees the batches in offset order:
  * a transactional data batch of an aborted transaction is neither mapped (its keys must not
    shadow older committed values) nor kept: aborted data leaves the log;
  * an abort marker may go once no batch of its transaction is left: while a pass still saw
    some, it stays, so read_committed readers of the uncleaned copy keep skipping them;
  * a commit marker may go when the pass saw no batch of its transaction;
  * a marker that may go is first stamped with a delete horizon (cleaning time +
    delete.retention.ms, like a tombstone, KIP-534) and removed by a pass after it, so a reader
    that was part-way through the transaction still finds its marker.
Non-transactional batches pass through untouched.
"""
from __future__ import annotations

from collections.abc import Iterable

from roster.log.batch import BatchHeader
from roster.log.producer_state import ABORT, AbortedTxn, MarkerError, read_marker


class CleanedTransactions:
    def __init__(self, aborted: Iterable[AbortedTxn]) -> None:
        self._pending = sorted(aborted, key=lambda txn: txn.first_offset)
        self._next = 0
        self._aborting: dict[int, bool] = {}   # producer id -> whether a batch of it was seen
        self._committing: set[int] = set()    # producers with data seen in a committed txn

    def _reach(self, offset: int) -> None:
        pending = self._pending
        while self._next < len(pending) and pending[self._next].first_offset <= offset:
            self._aborting[pending[self._next].producer_id] = False
            self._next += 1

    def aborted_data(self, header: BatchHeader) -> bool:
        """Whether this data batch belongs to an aborted transaction (so it goes)."""
        self._reach(header.last_offset)
        if not header.is_transactional:
            return False
        pid = header.producer_id
        if pid in self._aborting:
            self._aborting[pid] = True
            return True
        self._committing.add(pid)
        return False

    def marker_may_go(self, header: BatchHeader, batch) -> bool:
        """Whether this control batch may be removed (once its delete horizon has passed)."""
        self._reach(header.last_offset)
        pid = header.producer_id
        try:
            kind = read_marker(batch).type
        except MarkerError:
            return False  # not a marker roster knows: kept
        if kind == ABORT:
            return not self._aborting.pop(pid, False)
        if pid in self._committing:
            self._committing.discard(pid)
            return False
        return True
