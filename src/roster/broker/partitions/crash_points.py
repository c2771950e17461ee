"""A test-only fault hook: kill this process with SIGKILL after its Nth write to a log.

Crash tests need a kill -9 at an exact place between two writes, which no signal sent from
outside can hit. When the environment variable named below holds N, the broker kills itself
right after its Nth `__consumer_offsets` append (each batch is one write): what is on disk is
then exactly what a crash at that write boundary leaves. Unset (always, outside tests), the
hook costs one attribute test per append.
"""
from __future__ import annotations

import os
import signal

KILL_AFTER_GROUP_WRITES = "ROSTER_TEST_KILL_AFTER_GROUP_WRITES"
# the same after the Nth __transaction_state append (one record each): N = the write of a
# PrepareCommit kills the broker before any marker is written
KILL_AFTER_TXN_WRITES = "ROSTER_TEST_KILL_AFTER_TXN_WRITES"
# ... and after the Nth transaction marker appended to a partition (N=1 of a transaction over two
# partitions: one has its marker, the other not yet)
KILL_AFTER_TXN_MARKERS = "ROSTER_TEST_KILL_AFTER_TXN_MARKERS"


class CrashPoint:
    def __init__(self, variable: str) -> None:
        value = os.environ.get(variable, "").strip()
        self._left = int(value) if value else None

    def passed(self) -> None:
        """One more write done: die here if it was the Nth."""
        if self._left is None:
            return
        self._left -= 1
        if self._left <= 0:
            os.kill(os.getpid(), signal.SIGKILL)
