"""A rate limit on the cleaner's I/O (Kafka's log.cleaner.io.max.bytes.per.second, its
kafka.utils.Throttler): the cleaner reports the bytes it reads and writes, and sleeps whenever
it has gone faster than the rate over the last check interval. In roster this also hands the
interpreter lock to the event loop while it sleeps, so it is the lever that bounds what a pass
costs producers and consumers."""
from __future__ import annotations

import time
from collections.abc import Callable

CHECK_INTERVAL_S = 0.1


class Throttler:
    def __init__(self, bytes_per_second: float,
                 clock: Callable[[], float] = time.monotonic,
                 sleep: Callable[[float], None] = time.sleep) -> None:
        self._rate = bytes_per_second
        self._clock = clock
        self._sleep = sleep
        self._since = clock()
        self._observed = 0

    @property
    def unlimited(self) -> bool:
        return self._rate == float("inf") or self._rate >= 1.7976931348623157e308

    def observe(self, count: int) -> None:
        if self.unlimited:
            return
        self._observed += count
        now = self._clock()
        elapsed = now - self._since
        if elapsed < CHECK_INTERVAL_S:
            return
        needed = self._observed / self._rate
        if needed > elapsed:
            self._sleep(needed - elapsed)
            now = self._clock()
        self._since, self._observed = now, 0
