"""Finish, as an awaitable, a coroutine that was already stepped once by hand.

The connection runs a request's handler directly (`coroutine.send(None)`) because most handlers
never wait; a handler that does wait has already yielded the future it waits on. `resume()`
wraps the coroutine and that future so a Task can drive it on from exactly where it stopped:
values and exceptions (cancellation included) are passed through unchanged. A raw handler
whose answer waits hands back AnswerWhenDone instead, which the connection parks on without a
Task.
"""
from __future__ import annotations

from collections.abc import Awaitable, Callable, Coroutine, Generator
from typing import Any


class _Resumed:
    __slots__ = ("_coroutine", "_waiting_on")

    def __init__(self, coroutine: Coroutine, waiting_on: Any) -> None:
        self._coroutine = coroutine
        self._waiting_on = waiting_on

    def __await__(self) -> Generator[Any, Any, Any]:
        coroutine, yielded = self._coroutine, self._waiting_on
        while True:
            try:
                sent = yield yielded
            except BaseException as exc:  # noqa: BLE001 - handed to the coroutine to handle
                step = coroutine.throw
                value = exc
            else:
                step = coroutine.send
                value = sent
            try:
                yielded = step(value)
            except StopIteration as done:
                return done.value


def resume(coroutine: Coroutine, waiting_on: Any) -> Awaitable:
    """An awaitable (for asyncio.ensure_future) that continues `coroutine`, which is suspended
    on `waiting_on`."""
    return _Resumed(coroutine, waiting_on)


class AnswerWhenDone:
    """What a raw handler returns when its answer waits on a future (a parked JoinGroup or
    SyncGroup): the connection parks on `future` itself and writes encode(its result) once it
    is done. A coroutine would cost a Task, its creation and two steps (~7 µs here, more than
    the rest of the wait's cost: a 1,000-member rebalance parks 2,000 requests). Cancelling the
    future (the connection closed) drops the answer, as cancelling a Task would. Awaiting it
    gives the encoded answer, for callers that take any awaitable (broker/faults)."""

    __slots__ = ("future", "encode")

    def __init__(self, future: Awaitable, encode: Callable[[Any], bytes]) -> None:
        self.future = future
        self.encode = encode

    def __await__(self) -> Generator[Any, Any, bytes]:
        return self.encode((yield from self.future.__await__()))
