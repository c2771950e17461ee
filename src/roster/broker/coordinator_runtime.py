"""The one runtime every coordinator of the broker runs on: the group shard
(broker/groups/runtime.py) and the transaction coordinator (broker/transactions/runtime.py); a
share coordinator would be a third core on it, not a third runtime.

A core is pure: each of its operations takes `now` and hands back a Result
(coordinator/results.py): records to write, replies addressed to request tokens, timers, the
continuations to run once the records are durable, the changes to put back if they are not,
and effects the edge carries out. This carries a Result out, always in the same order:

  timers -> (records: the sink writes them; a failed write's changes are reverted first) ->
  replies released -> effects (only once durable) -> each continuation handed back to
  core.write_completed(step, error, now), whose Result is carried out the same way.

What a core offers (duck-typed, as the two cores differ in everything else):
  write_completed(step, error, now) -> Result   a continuation's turn, once written (or not)
  revert(changes, now)                          put a failed write's changes back (only if
                                                its results note changes)
  expire(event, now) -> Result                  a timer came due (only if it schedules any)

A sink offers write(records, done, revert=None): append, make durable, then done(error or None);
`revert`, when given, it may call for every operation failing together, newest first, before
calling any `done` (broker/groups/group_log.py). Everything runs on the event loop thread, and
each core call runs to completion without awaiting, so cores need no locks.
"""
from __future__ import annotations

import asyncio
import itertools
import logging
from collections.abc import Callable

from roster.broker.groups.timer_queue import TimerQueue
from roster.coordinator.results import Result
from roster.observability.after_write import EventsAfterWrites
from roster.protocol.errors import ErrorCode

log = logging.getLogger("roster.coordinators")

_NO_REPLY = object()


class _Reverted:
    """A written result's two callbacks for the sink: `revert` puts its changes back (the sink
    calls it for every operation failing together, newest first, before answering any of
    them), `released` answers and continues it. A sink that fails one write at a time may skip
    `revert`: `released` reverts first if it was not called."""

    __slots__ = ("_runtime", "_result", "_done")

    def __init__(self, runtime: CoordinatorRuntime, result: Result) -> None:
        self._runtime = runtime
        self._result = result
        self._done = False

    def revert(self) -> None:
        if not self._done:
            self._done = True
            if self._result.changes:
                self._runtime.core.revert(self._result.changes, self._runtime.now_ms())

    def released(self, error: ErrorCode | None) -> None:
        if error is not None:
            self.revert()
        self._runtime._release(self._result, error)


class CoordinatorRuntime:
    def __init__(self, core, sink, clock: Callable[[], float],
                 derive_events: Callable[[list], list] | None = None) -> None:
        """`derive_events(facts) -> events`: what the flight recorder makes of a result's facts
        (published through `on_events` once the records they describe are durable); None: a
        core whose results carry no facts."""
        self.core = core
        self.sink = sink
        self._clock = clock
        # effect class -> handler(effect), run once the result asking for it is durable
        self.effects: dict[type, Callable[[object], None]] = {}
        self._timers = TimerQueue(self.now_ms, self._fire)
        self._waiting: dict[int, asyncio.Future] = {}
        self._running: int | None = None  # the token of the operation being applied right now
        self._running_reply: object = _NO_REPLY  # its reply, when released while it is applied
        self._tokens = itertools.count(1)
        self._derive_events = derive_events
        # where the flight recorder's events go (observability/event_log.py); None: dropped
        self.on_events: Callable[[list], None] | None = None
        self._events = EventsAfterWrites(self._publish_events)  # once their records are durable

    def now_ms(self) -> int:
        return int(self._clock() * 1000)

    def follow(self, clock) -> None:
        """Take `now` from the broker's clock (broker/clock.py) and fire the timers a jump of
        it makes due (test mode's advance)."""
        self._clock = clock.time
        clock.on_advance(self.clock_moved)

    def clock_moved(self, seconds: float) -> None:
        """The clock jumped forward by `seconds`: every timer now due fires at once. A runtime
        with periodic passes over `now` (offset expiry, transaction timeouts) runs them too."""
        self._timers.fire_due()

    def new_token(self) -> int:
        """The token a request's reply will be addressed to: every request handed to the core
        carries one."""
        return next(self._tokens)

    async def run(self, step: Callable[[int], Result], token: int) -> object:
        """step(now) -> Result; wait for the reply addressed to `token`."""
        reply = self.start(step, token)
        return await reply if isinstance(reply, asyncio.Future) else reply

    def start(self, step: Callable[[int], Result], token: int) -> object:
        """Apply step(now) -> Result. Returns the reply addressed to `token` when the result
        already holds it (a heartbeat, any rejection: no future, no wait), otherwise a future
        for it (a parked long poll, or a reply waiting for its records' fsync). The write goes
        on if the requester goes away; its reply is then dropped."""
        self._running, self._running_reply = token, _NO_REPLY
        try:
            self.apply(step(self.now_ms()))
        finally:
            self._running = None
        reply, self._running_reply = self._running_reply, _NO_REPLY
        if reply is not _NO_REPLY:
            return reply
        future = asyncio.get_running_loop().create_future()
        self._waiting[token] = future
        future.add_done_callback(lambda _: self._waiting.pop(token, None))
        return future

    def apply(self, result: Result) -> None:
        if result.timers:  # most results (every heartbeat) set none
            self._timers.apply(result.timers)
        if result.facts and self._derive_events is not None:
            # the recorders read them in the order the operations ran
            result.events += self._derive_events(result.facts)
        if result.records:
            if result.events:   # they wait for the records they describe (after_write.py)
                self._events.hold(result.events)
            reverted = _Reverted(self, result)
            self.sink.write(result.records, reverted.released, reverted.revert)
        else:
            self._release(result, None)

    def _release(self, result: Result, error: ErrorCode | None) -> None:
        """The result's records are written (or failed to be, and its changes are put back):
        answer, then continue."""
        if result.events:
            self._events.release(result.events, error is None)
        for reply in result.replies:
            if reply.token == self._running:
                self._running_reply = reply.body
                continue
            future = self._waiting.get(reply.token)
            if future is not None and not future.done():
                future.set_result(reply.body)
            # else: the requester is gone (connection closed); the reply is dropped
        if result.effects and error is None:
            for effect in result.effects:
                self.effects[type(effect)](effect)
        for step in result.after_write:
            self.apply(self.core.write_completed(step, error, self.now_ms()))

    def _publish_events(self, events: list) -> None:
        if self.on_events is not None:
            self.on_events(events)

    def _fire(self, key: str, event, now: int) -> None:
        try:
            self.apply(self.core.expire(event, now))
        except Exception:  # a bug must not stop the timer service for everything else
            log.exception("timer %s failed", key)

    def close(self) -> None:
        self._timers.close()
