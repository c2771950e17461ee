"""Testing an aiokafka consumer against roster (an asyncio test): copy this file next to your
code.

`OrderCounter` stands for your application: it reads a topic in a consumer group, counts what
it read, commits after every batch, retries a commit the coordinator refused, and commits in
its revoke callback. The tests:

- a commit refused by the coordinator (an injected fault: the group's next OffsetCommit is
  answered REBALANCE_IN_PROGRESS, which aiokafka raises as CommitFailedError) is retried and
  the offsets end up committed;
- the member's session expires (a clock jump of 46 s instead of a 45 s wait): the listener's
  on_partitions_revoked runs (aiokafka has no separate "lost"), the consumer joins again,
  nothing is skipped.

The broker runs on its own thread and loop, so an asyncio test awaits its clients as usual;
`roster_broker.clock.advance` blocks for the milliseconds the broker takes to fire the timers
(`await asyncio.to_thread(...)` if the test's loop must keep running meanwhile).

Needs `pip install roster aiokafka pytest-asyncio`; fixtures from roster's pytest plugin.
"""
from __future__ import annotations

import asyncio
import time

import pytest
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, ConsumerRebalanceListener, TopicPartition
from aiokafka.errors import CommitFailedError

SESSION_TIMEOUT_MS = 45_000


class OrderCounter(ConsumerRebalanceListener):
    def __init__(self, bootstrap, group_id: str, topic: str) -> None:
        self.consumer = AIOKafkaConsumer(bootstrap_servers=bootstrap, group_id=group_id,
                                         enable_auto_commit=False,
                                         auto_offset_reset="earliest",
                                         session_timeout_ms=SESSION_TIMEOUT_MS,
                                         heartbeat_interval_ms=500)
        self.consumer.subscribe([topic], listener=self)
        self.seen: list[bytes] = []
        self.events: list[str] = []
        self.commit_retries = 0

    async def on_partitions_assigned(self, assigned) -> None:
        self.events.append("assigned")

    async def on_partitions_revoked(self, revoked) -> None:
        self.events.append("revoked")
        if revoked and self.seen:
            try:
                await self.consumer.commit()   # still ours, unless the session expired
            except CommitFailedError:
                pass                           # then they come back: we read them again

    async def step(self) -> None:
        batches = await self.consumer.getmany(timeout_ms=200)
        records = [r for batch in batches.values() for r in batch]
        if records:
            self.seen += [r.value for r in records]
            await self.commit()

    async def commit(self) -> None:
        for attempt in range(5):
            try:
                await self.consumer.commit()
                return
            except CommitFailedError:
                self.commit_retries += 1
                await asyncio.sleep(0.1 * (attempt + 1))
        raise RuntimeError("commit kept failing")


async def produce(bootstrap, topic: str, values: list[bytes]) -> None:
    producer = AIOKafkaProducer(bootstrap_servers=bootstrap)
    await producer.start()
    try:
        for value in values:
            await producer.send_and_wait(topic, value)
    finally:
        await producer.stop()


async def run_until(app: OrderCounter, done, timeout_s: float = 30) -> None:
    deadline = time.monotonic() + timeout_s
    while not done():
        assert time.monotonic() < deadline, f"gave up; events {app.events}, seen {app.seen}"
        await app.step()


async def committed(bootstrap, group_id: str, topic: str) -> int | None:
    probe = AIOKafkaConsumer(bootstrap_servers=bootstrap, group_id=group_id)
    await probe.start()
    try:
        return await probe.committed(TopicPartition(topic, 0))
    finally:
        await probe.stop()


@pytest.mark.asyncio
async def test_a_refused_commit_is_retried(roster_broker, roster_bootstrap, roster_topic,
                                           roster_group_id):
    await produce(roster_bootstrap, roster_topic, [b"order-%d" % i for i in range(10)])
    roster_broker.faults.fail_next_commit(roster_group_id, error="REBALANCE_IN_PROGRESS")
    app = OrderCounter(roster_bootstrap, roster_group_id, roster_topic)
    await app.consumer.start()
    try:
        await run_until(app, lambda: len(app.seen) == 10)
    finally:
        await app.consumer.stop()
    assert app.commit_retries >= 1
    assert await committed(roster_bootstrap, roster_group_id, roster_topic) == 10


@pytest.mark.asyncio
async def test_the_session_expires_and_nothing_is_skipped(roster_broker, roster_bootstrap,
                                                          roster_topic, roster_group_id):
    await produce(roster_bootstrap, roster_topic, [b"before-%d" % i for i in range(5)])
    app = OrderCounter(roster_bootstrap, roster_group_id, roster_topic)
    await app.consumer.start()
    try:
        await run_until(app, lambda: len(app.seen) == 5)
        assigned = app.events.count("assigned")
        await asyncio.to_thread(roster_broker.clock.advance, SESSION_TIMEOUT_MS / 1000 + 1)
        await run_until(app, lambda: app.events.count("assigned") > assigned)
        await produce(roster_bootstrap, roster_topic, [b"after-%d" % i for i in range(5)])
        await run_until(app, lambda: len(set(app.seen)) == 10)
    finally:
        await app.consumer.stop()
    assert app.events[-2:] == ["revoked", "assigned"]
    assert await committed(roster_bootstrap, roster_group_id, roster_topic) == 10
