"""A producer that keeps writing and a reader that keeps reading while a test kills brokers
under them: what was acknowledged, what was read, and waits on progress (never sleeps)."""
from __future__ import annotations

import asyncio
import time

from roster.client.member_driver import CommitFailed
from roster.client.producer import Producer

PATIENCE_S = 90.0   # a leader election and a coordinator move on a loaded two-core machine


class KeepProducing:
    """Writes numbered records to `topic` until stop(); `acked` holds (partition, offset,
    value) of every record the cluster acknowledged (acks=all)."""

    def __init__(self, bootstrap: str, topic: str, pace_s: float = 0.01) -> None:
        self.producer = Producer(bootstrap, client_id="cluster-flow")
        self.topic = topic
        self.pace_s = pace_s
        self.acked: list[tuple[int, int, bytes]] = []
        self._stop = asyncio.Event()
        self._task: asyncio.Task | None = None

    def start(self) -> KeepProducing:
        self._task = asyncio.ensure_future(self._run())
        return self

    async def _run(self) -> None:
        n = 0
        while not self._stop.is_set():
            value = f"r{n}".encode()
            partition, offset = await self.producer.send(self.topic, value)
            self.acked.append((partition, offset, value))
            n += 1
            try:   # pacing, and a prompt end once stopped
                await asyncio.wait_for(self._stop.wait(), self.pace_s)
            except asyncio.TimeoutError:
                pass

    async def stop(self) -> list[tuple[int, int, bytes]]:
        self._stop.set()
        await self._task
        await self.producer.close()
        return self.acked


async def until(condition, what: str, timeout_s: float = PATIENCE_S, step_s: float = 0.05):
    """Until condition() holds, checked as the other tasks make progress."""
    started = time.monotonic()
    while not condition():
        if time.monotonic() - started > timeout_s:
            raise AssertionError(f"timed out after {timeout_s}s waiting for {what}")
        await asyncio.sleep(step_s)   # lets the producing and reading tasks run
    print(f"  {time.monotonic() - started:5.1f}s  {what}")


class KeepReading:
    """Polls a roster Consumer and commits after every poll that returned records (a commit
    refused while the coordinator moves is retried with the next one)."""

    def __init__(self, consumer) -> None:
        self.consumer = consumer
        self.seen: dict[tuple[int, int], bytes] = {}
        self.commits = 0
        self.failed_commits = 0
        self._stop = asyncio.Event()
        self._task: asyncio.Task | None = None

    def start(self) -> KeepReading:
        self._task = asyncio.ensure_future(self._run())
        return self

    async def _run(self) -> None:
        pending = False
        while not self._stop.is_set():
            records = await self.consumer.poll(timeout_ms=200)
            for r in records:
                self.seen[(r.partition, r.offset)] = r.value
            pending = pending or bool(records)
            if pending:
                try:
                    await self.consumer.commit()
                    self.commits += 1
                    pending = False
                except CommitFailed:
                    self.failed_commits += 1

    def has_read(self, acked) -> bool:
        return all((p, o) in self.seen for p, o, _ in acked)

    async def stop(self) -> None:
        self._stop.set()
        await self._task


async def commit_all(consumer, timeout_s: float = PATIENCE_S) -> None:
    """Commit every position, again while the commit fails as retriable (a coordinator
    moving), as Kafka's commitSync retries."""
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            await consumer.commit()
            return
        except CommitFailed:
            if time.monotonic() > deadline:
                raise
            await asyncio.sleep(0.1)
