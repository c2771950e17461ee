"""Testing a roster.client consumer (an asyncio group member) against roster: copy this file
next to your code.

`OrderCounter` stands for your application: it reads a topic in a consumer group, counts what
it read, commits after every batch, retries a commit the coordinator refused, and hears its
rebalance callbacks. The tests:

- a commit refused by the coordinator (an injected fault: the group's next OffsetCommit is
  answered REBALANCE_IN_PROGRESS) is retried and the offsets end up committed;
- the member's session expires (a clock jump of 46 s instead of a 45 s wait): on_lost runs,
  the member joins again, nothing is skipped.

Fixtures from roster's pytest plugin (docs/testing.md); needs pytest-asyncio.
"""
from __future__ import annotations

import asyncio
import time

import pytest

from roster.client.consumer import Consumer
from roster.client.member_driver import CommitFailed
from roster.client.producer import Producer

SESSION_TIMEOUT_MS = 45_000


class OrderCounter:
    def __init__(self, bootstrap, group_id: str) -> None:
        self.consumer = Consumer(bootstrap, group_id, session_timeout_ms=SESSION_TIMEOUT_MS,
                                 heartbeat_interval_ms=500,
                                 on_assigned=lambda ps: self.events.append("assigned"),
                                 on_revoked=lambda ps: self.events.append("revoked"),
                                 on_lost=lambda ps: self.events.append("lost"))
        self.seen: list[bytes] = []
        self.events: list[str] = []
        self.commit_retries = 0

    async def step(self) -> None:
        records = await self.consumer.poll(timeout_ms=200)
        if records:
            self.seen += [r.value for r in records]
            # what was processed, taken now: a commit retried after a rebalance began (the
            # fault below) must still cover it, whatever the positions are by then
            await self.commit(dict(self.consumer.positions))

    async def commit(self, processed: dict) -> None:
        for attempt in range(5):
            try:
                await self.consumer.commit(processed)
                return
            except CommitFailed:
                self.commit_retries += 1
                await asyncio.sleep(0.1 * (attempt + 1))
        raise RuntimeError("commit kept failing")


async def produce(bootstrap, topic: str, values: list[bytes]) -> None:
    producer = Producer(bootstrap)
    try:
        for value in values:
            await producer.send(topic, value, partition=0)
    finally:
        await producer.close()


async def run_until(app: OrderCounter, done, timeout_s: float = 30) -> None:
    deadline = time.monotonic() + timeout_s
    while not done():
        assert time.monotonic() < deadline, f"gave up; events {app.events}, seen {app.seen}"
        await app.step()


def committed(roster_broker, group_id: str, topic: str) -> int | None:
    """The group's committed offset as the broker holds it: roster_broker.call runs a function
    on the broker's loop (here the group runtime's OffsetFetch answer)."""
    fetched = roster_broker.call(roster_broker.broker.groups.fetch_offsets, group_id,
                                 [(topic, 0)])
    return fetched[0].offset


@pytest.mark.asyncio
async def test_a_refused_commit_is_retried(roster_broker, roster_bootstrap, roster_topic,
                                           roster_group_id):
    await produce(roster_bootstrap, roster_topic, [b"order-%d" % i for i in range(10)])
    roster_broker.faults.fail_next_commit(roster_group_id, error="REBALANCE_IN_PROGRESS")
    app = OrderCounter(roster_bootstrap, roster_group_id)
    await app.consumer.subscribe([roster_topic])
    try:
        await run_until(app, lambda: len(app.seen) == 10)
    finally:
        await app.consumer.close()
    assert app.commit_retries >= 1
    assert committed(roster_broker, roster_group_id, roster_topic) == 10


@pytest.mark.asyncio
async def test_the_session_expires_and_nothing_is_skipped(roster_broker, roster_bootstrap,
                                                          roster_topic, roster_group_id):
    await produce(roster_bootstrap, roster_topic, [b"before-%d" % i for i in range(5)])
    app = OrderCounter(roster_bootstrap, roster_group_id)
    await app.consumer.subscribe([roster_topic])
    try:
        await run_until(app, lambda: len(app.seen) == 5)
        await asyncio.to_thread(roster_broker.clock.advance, SESSION_TIMEOUT_MS / 1000 + 1)
        await run_until(app, lambda: "lost" in app.events and app.events[-1] == "assigned")
        await produce(roster_bootstrap, roster_topic, [b"after-%d" % i for i in range(5)])
        await run_until(app, lambda: len(set(app.seen)) == 10)
    finally:
        await app.consumer.close()
    assert "lost" in app.events
    assert committed(roster_broker, roster_group_id, roster_topic) == 10
