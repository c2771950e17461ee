"""Finish, as an awaitable, a coroutine that was already stepped once by hand.

The connection runs a request's handler directly (`coroutine.send(None)`) because most handlers
never wait; a handler that does wait has already yielded the future it waits on. `resume()`
wraps the coroutine and that future so a Task can drive it on from exactly where it stopped:
values and exceptions (cancellation included) are passed through unchanged.
"""
from __future__ import annotations

from collections.abc import Awaitable, Coroutine, Generator
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
