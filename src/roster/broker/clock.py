"""The broker's clock: the one source of "now" for its coordinators' timers.

Every coordinator runtime (the group shard's, the transaction coordinator's, share state's:
broker/coordinator_runtime.py) asks the clock for `now`, arms its timers in that time and
follows it (`CoordinatorRuntime.follow`). The clock is also the broker's `now_ms()`: record
timestamps of its own topics, retention and a share partition's acquisition locks agree with
the timers.

Two clocks:
- `WallClock`, always outside test mode: `time.time()`. Wall time, not the loop's monotonic
  clock, because `now` is written into records (commit timestamps, a transaction's start) that
  a restart reads back and offset expiry compares with.
- `TestClock`, in test mode only (`roster.test.mode`): wall time plus an offset that only
  `advance(seconds)` moves. Time keeps flowing between jumps, so clients that do nothing about
  the clock behave as against any broker; a jump fires at once every timer it made due (a
  member's session, a rebalance or join timeout, a transaction's timeout, an offset's
  retention, a share record's acquisition lock), then the periodic passes that compare against
  `now` (offset expiry, transaction timeouts and expiry) run once. So "the member's session
  expires" takes milliseconds instead of 45 s.

Outside test mode the broker's `clock` refuses (ClockRefused): moving time on a production
broker would expire every member at once. The clock never goes backwards: advance takes a
non-negative finite number of seconds.

`advance` may be called from any thread (a test's, while the broker serves on its own loop
thread): it then runs on the broker's loop and waits for it, so when it returns every timer it
made due has fired and its effects (a rebalance begun, a transaction aborted) are decided.
"""
from __future__ import annotations

import asyncio
import concurrent.futures
import logging
import math
import threading
import time
from collections.abc import Callable

log = logging.getLogger("roster.clock")

# far enough for any test (offsets' 7 days, transactional ids' 7 days), near enough that
# deadlines stay well inside a signed 64-bit count of milliseconds
MAX_ADVANCE_S = 10 * 365 * 24 * 3600.0
# how long a call from another thread waits for the broker's loop to carry the jump out
ADVANCE_WAIT_S = 60.0

TEST_MODE_HINT = ("start the broker in test mode: roster serve --test-mode, or the setting "
                  "roster.test.mode=true (the pytest plugin's brokers are)")


class ClockRefused(RuntimeError):
    """The broker clock was reached outside test mode, or its loop did not carry a jump out."""


class WallClock:
    """Outside test mode: wall time, which nobody can move."""

    manual = False
    # wall time itself rather than a method calling it: every heartbeat reads this clock
    time = staticmethod(time.time)

    def now_ms(self) -> int:
        return int(time.time() * 1000)

    def on_advance(self, callback: Callable[[float], None]) -> None:
        """Nothing to follow: the wall clock never jumps."""

    def bind(self, loop: asyncio.AbstractEventLoop) -> None:
        """Nothing to bind."""


def seconds_of(value) -> float:
    """A jump's length as advance takes it: a finite, non-negative number of seconds (a bool or
    a string is refused, so `advance("45")` fails loudly instead of doing something odd)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ValueError(f"advance takes a number of seconds, not {value!r}")
    seconds = float(value)
    if math.isnan(seconds) or math.isinf(seconds):
        raise ValueError(f"advance takes a finite number of seconds, not {value!r}")
    if seconds < 0:
        raise ValueError(f"the broker clock never goes back: advance({value!r}) "
                         "takes seconds >= 0")
    if seconds > MAX_ADVANCE_S:
        raise ValueError(f"advance({value!r}): at most {MAX_ADVANCE_S:.0f} s (ten years) a jump")
    return seconds


class TestClock:
    """Test mode: wall time plus what `advance` added. Thread-safe to advance."""

    __test__ = False    # not a test class, for pytest's collection of modules importing it
    manual = True

    def __init__(self, base: Callable[[], float] = time.time) -> None:
        self._base = base
        self._offset = 0.0
        self._listeners: list[Callable[[float], None]] = []
        self._loop: asyncio.AbstractEventLoop | None = None
        self._lock = threading.Lock()

    def time(self) -> float:
        return self._base() + self._offset

    def now_ms(self) -> int:
        return int((self._base() + self._offset) * 1000)

    @property
    def advanced(self) -> float:
        """Seconds added by advance() so far."""
        return self._offset

    def on_advance(self, callback: Callable[[float], None]) -> None:
        """`callback(seconds)` after every jump, on the broker's loop thread: the runtimes fire
        their due timers, the periodic passes run."""
        self._listeners.append(callback)

    def bind(self, loop: asyncio.AbstractEventLoop) -> None:
        """The loop the broker serves on: a jump asked from another thread runs there."""
        self._loop = loop

    def advance(self, seconds: float) -> float:
        """Move the broker's time forward by `seconds` and fire every timer that came due; the
        new time (seconds since the epoch, as time.time) once they have fired. 0 fires what is
        due without moving."""
        seconds = seconds_of(seconds)
        loop = self._loop
        if loop is None or loop.is_closed() or not loop.is_running() or _on_loop(loop):
            return self._advance_here(seconds)
        done: concurrent.futures.Future = concurrent.futures.Future()

        def jump() -> None:
            try:
                done.set_result(self._advance_here(seconds))
            except BaseException as exc:   # handed to the caller's thread
                done.set_exception(exc)
        loop.call_soon_threadsafe(jump)
        try:
            return done.result(ADVANCE_WAIT_S)
        except concurrent.futures.TimeoutError:
            raise ClockRefused(f"the broker's loop did not carry out advance({seconds:g}) "
                               f"within {ADVANCE_WAIT_S:g} s") from None

    def _advance_here(self, seconds: float) -> float:
        with self._lock:
            self._offset += seconds
        log.info("clock advanced by %g s (%g s in all)", seconds, self._offset)
        for callback in list(self._listeners):
            try:
                callback(seconds)
            except Exception:   # one runtime's bug must not keep the others' timers from firing
                log.exception("a timer pass after advance(%g) failed", seconds)
        return self.time()


def _on_loop(loop: asyncio.AbstractEventLoop) -> bool:
    try:
        return asyncio.get_running_loop() is loop
    except RuntimeError:
        return False


def refuse_outside_test_mode(what: str) -> ClockRefused:
    return ClockRefused(f"{what} exists only in test mode: {TEST_MODE_HINT}")
