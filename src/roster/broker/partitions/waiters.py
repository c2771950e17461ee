"""Wake-ups for Fetch long polls: a fetch parks until data arrives on one of its partitions."""
from __future__ import annotations

import asyncio
from collections import defaultdict
from collections.abc import Hashable, Iterable


class AppendWaiters:
    def __init__(self) -> None:
        self._waiting: defaultdict[Hashable, set[asyncio.Future]] = defaultdict(set)

    def notify(self, key: Hashable) -> None:
        for future in self._waiting.pop(key, ()):
            if not future.done():
                future.set_result(None)

    async def wait(self, keys: Iterable[Hashable], timeout_s: float) -> None:
        """Return when any key is notified or after timeout_s, whichever comes first."""
        if timeout_s <= 0:
            return
        future = asyncio.get_running_loop().create_future()
        keys = list(keys)
        for key in keys:
            self._waiting[key].add(future)
        try:
            await asyncio.wait_for(future, timeout_s)
        except TimeoutError:
            pass
        finally:
            for key in keys:
                waiters = self._waiting.get(key)
                if waiters is not None:
                    waiters.discard(future)
                    if not waiters:
                        del self._waiting[key]
