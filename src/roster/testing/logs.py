"""What an in-process test broker logged, kept so a failing test's report can show it.

The broker logs through the `roster` loggers on its own thread; a handler keeps the lines of
that thread only (the test's own roster.client lines go wherever the test's logging sends
them), at INFO, in a bounded buffer. `mark()` notes where a test began; `since(mark)` is what
the broker said during it: the plugin attaches that to a failing test's report.
"""
from __future__ import annotations

import logging
import threading
from collections import deque

KEPT_LINES = 20_000
# the brokers' logs attached now, and the roster logger's level before the first was
_ATTACHED: set = set()
_SAVED_LEVEL: list[int] = []
_LEVEL_GUARD = threading.Lock()
FORMAT = "%(asctime)s.%(msecs)03d %(levelname)s %(name)s: %(message)s"


class BrokerLog(logging.Handler):
    def __init__(self, kept: int = KEPT_LINES) -> None:
        super().__init__(logging.INFO)
        self.setFormatter(logging.Formatter(FORMAT, "%H:%M:%S"))
        self._lines: deque[str] = deque(maxlen=kept)
        self._count = 0          # lines ever kept: marks count from here
        self._thread: int | None = None
        self._guard = threading.Lock()

    def attach(self, thread_id: int) -> None:
        """Keep what `thread_id` (the broker's loop thread) logs from now on."""
        self._thread = thread_id
        logger = logging.getLogger("roster")
        with _LEVEL_GUARD:
            if not _ATTACHED and logger.getEffectiveLevel() > logging.INFO:
                # INFO lines (rebalances, expiries) are the story; the level is put back
                # when the last broker's log is closed
                _SAVED_LEVEL.append(logger.level)
                logger.setLevel(logging.INFO)
            _ATTACHED.add(self)
        logger.addHandler(self)

    def close(self) -> None:
        logger = logging.getLogger("roster")
        logger.removeHandler(self)
        with _LEVEL_GUARD:
            _ATTACHED.discard(self)
            if not _ATTACHED and _SAVED_LEVEL:
                logger.setLevel(_SAVED_LEVEL.pop())
        super().close()

    def emit(self, record: logging.LogRecord) -> None:
        if record.thread != self._thread:
            return
        try:
            line = self.format(record)
        except Exception:
            self.handleError(record)
            return
        with self._guard:
            self._lines.append(line)
            self._count += 1

    def mark(self) -> int:
        with self._guard:
            return self._count

    def since(self, mark: int) -> list[str]:
        """The lines kept since `mark` (those the bound has already dropped are gone)."""
        with self._guard:
            wanted = self._count - mark
            if wanted <= 0:
                return []
            return list(self._lines)[-min(wanted, len(self._lines)):]

    def lines(self) -> list[str]:
        with self._guard:
            return list(self._lines)
