"""A TCP proxy in front of a broker that can stop answering, for request-timeout tests.

`freeze()` stalls every connection open at that moment: nothing more passes either way and
nothing is closed, as with a broker that hangs or a half-open TCP connection after a network
partition. Connections made after it pass as before, so a client that gives up on a stalled
connection and connects again gets through. Point the broker's advertised.listeners at the
proxy so every connection a client makes (bootstrap, coordinator) goes through it.
"""
from __future__ import annotations

import asyncio
import struct


class HangingProxy:
    def __init__(self) -> None:
        self.port: int | None = None
        self.target_port: int | None = None
        self._server: asyncio.Server | None = None
        self._frozen = asyncio.Event()       # set: the connections open now are stalled
        self._stopping = asyncio.Event()
        self._writers: list[asyncio.StreamWriter] = []
        self._tasks: set[asyncio.Task] = set()
        # (api key, whether the connection was opened after the freeze), per request forwarded
        self.requests: list[tuple[int, bool]] = []
        self._forwarded = asyncio.Condition()

    async def start(self) -> HangingProxy:
        self._server = await asyncio.start_server(self._serve, "127.0.0.1", 0)
        self.port = self._server.sockets[0].getsockname()[1]
        return self

    def freeze(self) -> None:
        self._frozen.set()

    async def wait_for_request(self, api_key: int, *, after_freeze: bool,
                               timeout_s: float) -> None:
        """Until a request with this api key has been forwarded (on a connection opened after
        the freeze, when asked)."""
        async with self._forwarded:
            await asyncio.wait_for(self._forwarded.wait_for(
                lambda: (api_key, after_freeze) in self.requests), timeout_s)

    async def _serve(self, client_reader, client_writer) -> None:
        fresh = self._frozen.is_set()
        stall = asyncio.Event() if fresh else self._frozen   # fresh ones are never frozen
        up_reader, up_writer = await asyncio.open_connection("127.0.0.1", self.target_port)
        self._writers += [client_writer, up_writer]
        for task in (self._pump(client_reader, up_writer, stall, fresh),
                     self._pump(up_reader, client_writer, stall, None)):
            spawned = asyncio.ensure_future(task)
            self._tasks.add(spawned)
            spawned.add_done_callback(self._tasks.discard)

    async def _pump(self, reader, writer, stall: asyncio.Event, fresh: bool | None) -> None:
        """Forward whole frames until the connection ends or is stalled; `fresh` is None for
        the answers' direction, else whether requests on it are recorded as after the freeze."""
        try:
            while True:
                head = await reader.readexactly(4)
                frame = await reader.readexactly(struct.unpack(">i", head)[0])
                if stall.is_set():
                    await self._stopping.wait()   # swallowed: never forwarded, never closed
                    return
                writer.write(head + frame)
                await writer.drain()
                if fresh is not None:
                    async with self._forwarded:
                        self.requests.append((struct.unpack(">h", frame[:2])[0], fresh))
                        self._forwarded.notify_all()
        except (ConnectionError, asyncio.IncompleteReadError):
            writer.close()

    async def close(self) -> None:
        self._stopping.set()
        if self._server is not None:
            self._server.close()
        for writer in self._writers:
            writer.close()
        for task in list(self._tasks):
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
