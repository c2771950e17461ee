"""roster.client.Consumer delivers every record once and commits only what poll() returned.

Against one real broker process (loopback) shared by the module: the topics are filled once,
every test reads them with its own group.
"""
from __future__ import annotations

import asyncio
import time
from collections import Counter

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from roster.admin.client import AdminClient
from roster.admin.offsets import describe_lines
from roster.client.consumer import Consumer
from roster.client.producer import Producer
from roster.client.records import OutgoingRecord
from tests.support.process import BrokerProcess

pytestmark = [pytest.mark.interop, pytest.mark.xdist_group("consumer-delivery")]

DOCS_TOPIC, DOCS_PARTITIONS, DOCS_PER_PARTITION = "docs-loop", 3, 2_000
PROP_PER_PARTITION = 120
PROP_TOPICS = {n: f"prop-{n}" for n in (1, 2, 3)}    # partition count -> topic


async def _fill(bootstrap: str, topic: str, partitions: int, per_partition: int) -> None:
    """Records `p:i` in batches of uneven sizes, so fetches end mid-batch and between."""
    producer = Producer(bootstrap)
    sizes = [1, 7, 50, 3, 100, 13]
    for p in range(partitions):
        i, turn = 0, p
        while i < per_partition:
            n = min(sizes[turn % len(sizes)], per_partition - i)
            await producer.send_many(topic, [OutgoingRecord(f"{p}:{i + k}".encode())
                                             for k in range(n)], partition=p)
            i, turn = i + n, turn + 1
    await producer.close()


@pytest.fixture(scope="module")
def filled(tmp_path_factory):
    broker = BrokerProcess(tmp_path_factory.mktemp("consumer-delivery"),
                           {"group.initial.rebalance.delay.ms": "0",
                            "auto.create.topics.enable": "false"}).start()
    from roster.admin.topics import create
    with AdminClient(broker.bootstrap) as admin:
        create(admin, DOCS_TOPIC, DOCS_PARTITIONS, {})
        for n, topic in PROP_TOPICS.items():
            create(admin, topic, n, {})
        create(admin, "backlog", 2, {})

    async def fill_all():
        await _fill(broker.bootstrap, DOCS_TOPIC, DOCS_PARTITIONS, DOCS_PER_PARTITION)
        for n, topic in PROP_TOPICS.items():
            await _fill(broker.bootstrap, topic, n, PROP_PER_PARTITION)
        producer = Producer(broker.bootstrap)   # backlog: 3,000 records in 0, 5 in 1
        for i in range(0, 3_000, 500):
            await producer.send_many("backlog", [OutgoingRecord(b"0") for _ in range(500)],
                                     partition=0)
        await producer.send_many("backlog", [OutgoingRecord(b"1") for _ in range(5)],
                                 partition=1)
        await producer.close()
    asyncio.run(fill_all())
    yield broker
    broker.stop()


def described_lag(bootstrap: str, group: str) -> dict[int, int] | None:
    """LAG per partition as `roster offsets describe` prints it (None: no offsets yet)."""
    with AdminClient(bootstrap) as admin:
        lines = describe_lines(admin, group)
    if len(lines) == 1:
        return None
    return {int(row.split()[1]): int(row.split()[4]) for row in lines[2:]}


def test_the_docs_loop_delivers_every_record_once_and_lag_reaches_zero_only_at_the_end(filled):
    """The loop of docs/client.md over 3 x 2,000 records: poll() returns at most 500, so each
    Fetch brings more than one poll() may return."""
    total = DOCS_PARTITIONS * DOCS_PER_PARTITION

    async def scenario():
        consumer = Consumer(filled.bootstrap, "docs-loop-group",
                            group_instance_id="docs-worker-1", session_timeout_ms=10_000)
        await consumer.subscribe([DOCS_TOPIC])
        seen, lags = [], []
        deadline = time.monotonic() + 120
        try:
            while len(seen) < total and time.monotonic() < deadline:
                records = await consumer.poll(timeout_ms=1000)
                seen.extend(records)
                await consumer.commit()             # the positions of what poll() returned
                if records:
                    lag = await asyncio.to_thread(described_lag, filled.bootstrap,
                                                  "docs-loop-group")
                    lags.append((len(seen), sum(lag.values())))
            extra = await consumer.poll(timeout_ms=300)   # nothing is left behind
            committed = await consumer.member.committed(
                [(DOCS_TOPIC, p) for p in range(DOCS_PARTITIONS)])
        finally:
            await consumer.close()
        return seen, extra, lags, committed

    seen, extra, lags, committed = asyncio.run(scenario())
    assert extra == []
    assert len(seen) == total
    assert max(Counter((r.partition, r.offset) for r in seen).values()) == 1
    for p in range(DOCS_PARTITIONS):
        mine = [r for r in seen if r.partition == p]
        assert [r.offset for r in mine] == list(range(DOCS_PER_PARTITION))
        assert [r.value for r in mine] == [f"{p}:{i}".encode() for i in range(DOCS_PER_PARTITION)]
    assert committed == {(DOCS_TOPIC, p): DOCS_PER_PARTITION for p in range(DOCS_PARTITIONS)}
    # after each commit the lag is exactly what has not been returned yet: 0 only at the end
    assert lags and all(lag == total - returned for returned, lag in lags)
    assert [lag for _, lag in lags].count(0) == 1
    assert described_lag(filled.bootstrap, "docs-loop-group") == \
        {p: 0 for p in range(DOCS_PARTITIONS)}


GROUPS = iter(range(1_000_000))


@settings(max_examples=25, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(partitions=st.sampled_from(sorted(PROP_TOPICS)),
       max_records=st.integers(1, 400),
       fetch_bytes=st.sampled_from([64, 300, 1_000, 5_000, 1 << 20]),
       commit_every=st.integers(1, 5),
       restart_after=st.none() | st.integers(1, 30))
def test_property_returned_records_are_the_log_and_commits_never_run_ahead(
        filled, partitions, max_records, fetch_bytes, commit_every, restart_after):
    """Random Fetch sizes (max_partition_fetch_bytes; the broker still returns one whole batch),
    max_records, partition counts and commit points, and optionally a restart of the (static)
    member right after a commit: per partition, the records returned are exactly the log, and
    every commit equals the position after the last record returned."""
    topic = PROP_TOPICS[partitions]
    group = f"prop-group-{next(GROUPS)}"
    owned = [(topic, p) for p in range(partitions)]
    total = partitions * PROP_PER_PARTITION

    def make():
        return Consumer(filled.bootstrap, group, group_instance_id=f"{group}-member",
                        session_timeout_ms=10_000, max_partition_fetch_bytes=fetch_bytes)

    async def scenario():
        consumer = make()
        await consumer.subscribe([topic])
        returned = {tp: [] for tp in owned}
        last_commit = {tp: -1 for tp in owned}
        polls, restarted = 0, False
        deadline = time.monotonic() + 60
        try:
            while sum(map(len, returned.values())) < total and time.monotonic() < deadline:
                records = await consumer.poll(timeout_ms=200, max_records=max_records)
                assert len(records) <= max_records
                for r in records:
                    returned[(r.topic, r.partition)].append(r.offset)
                polls += 1
                if polls % commit_every:
                    continue
                await consumer.commit()
                committed = await consumer.member.committed(owned)
                for tp in owned:
                    if tp in consumer.positions:   # started: its commit is what was returned
                        done = returned[tp]
                        assert committed[tp] == (done[-1] + 1 if done else 0), (tp, done[-3:])
                    else:                          # not started since the restart: untouched
                        assert committed[tp] == last_commit[tp]
                    last_commit[tp] = committed[tp]
                if restart_after is not None and polls >= restart_after and not restarted:
                    restarted = True
                    await consumer.close()          # static: no rebalance; resumes at commits
                    consumer = make()
                    await consumer.subscribe([topic])
        finally:
            await consumer.close()
        return returned

    returned = asyncio.run(scenario())
    for tp in owned:
        assert returned[tp] == list(range(PROP_PER_PARTITION)), tp



def test_a_rebalance_in_the_middle_loses_nothing_and_repeats_only_what_was_not_committed(
        filled):
    """The docs loop in two members of one group: the second joins once the first is a third of
    the way through, so partitions are revoked (what was fetched for them and not returned is
    dropped) and move. Every record is delivered; a record is delivered twice only if the member
    that returned it first never committed past it; the group's offsets end at the log end."""
    group, total = "rebalance-group", DOCS_PARTITIONS * DOCS_PER_PARTITION
    delivered: list[tuple[str, int, int]] = []       # (member, partition, offset), in order
    committed_by: dict[str, dict[int, int]] = {"a": {}, "b": {}}

    b_assigned = asyncio.Event()

    async def member(name: str, wait_for: asyncio.Event | None, third: asyncio.Event | None,
                     done: asyncio.Event):
        if wait_for is not None:
            await wait_for.wait()
        consumer = Consumer(filled.bootstrap, group, session_timeout_ms=10_000,
                            heartbeat_interval_ms=200)
        await consumer.subscribe([DOCS_TOPIC])
        try:
            while not done.is_set():
                if name == "b" and consumer.assignment:
                    b_assigned.set()
                slow = third is not None and third.is_set() and not b_assigned.is_set()
                if slow:  # the first member must not finish before the second has joined
                    await asyncio.sleep(0.01)
                records = await consumer.poll(timeout_ms=200, max_records=1 if slow else 100)
                delivered.extend((name, r.partition, r.offset) for r in records)
                positions = consumer.positions
                await consumer.commit()
                for (_, p), o in positions.items():
                    committed_by[name][p] = max(o, committed_by[name].get(p, 0))
                if third is not None and len(delivered) >= total // 3:
                    third.set()
                if len({(p, o) for _, p, o in delivered}) >= total:
                    done.set()
        finally:
            await consumer.leave()

    async def scenario():
        third, done = asyncio.Event(), asyncio.Event()
        await asyncio.wait_for(asyncio.gather(member("a", None, third, done),
                                              member("b", third, None, done)), 120)

    asyncio.run(scenario())
    firsts: dict[tuple[int, int], str] = {}
    repeats = []
    for name, p, o in delivered:
        if (p, o) in firsts:
            repeats.append((firsts[(p, o)], p, o))
        else:
            firsts[(p, o)] = name
    assert set(firsts) == {(p, o) for p in range(DOCS_PARTITIONS)
                           for o in range(DOCS_PER_PARTITION)}
    assert {name for name, _, _ in delivered} == {"a", "b"}, "no rebalance happened"
    for first, p, o in repeats:
        assert o >= committed_by[first].get(p, 0), (first, p, o)
    with AdminClient(filled.bootstrap) as admin:
        from roster.admin.offsets import committed
        assert committed(admin, group) == {(DOCS_TOPIC, p): DOCS_PER_PARTITION
                                           for p in range(DOCS_PARTITIONS)}


def test_a_partition_with_a_long_backlog_does_not_starve_the_others(filled):
    """One Fetch of partition 0 brings thousands of records, far more than poll() returns; the
    few records of partition 1 still come within the first polls, not after partition 0's
    backlog."""
    async def scenario():
        consumer = Consumer(filled.bootstrap, "backlog-group", session_timeout_ms=10_000)
        await consumer.subscribe(["backlog"])
        polls, seen = [], 0
        try:
            while seen < 3_005 and len(polls) < 200:
                records = await consumer.poll(timeout_ms=500, max_records=100)
                if records or polls:
                    polls.append([r.partition for r in records])
                seen += len(records)
        finally:
            await consumer.leave()
        return polls

    polls = asyncio.run(scenario())
    assert sum(map(len, polls)) == 3_005
    first_of_1 = next(i for i, p in enumerate(polls) if 1 in p)
    assert first_of_1 <= 1, f"partition 1 first came in poll {first_of_1} of {len(polls)}"


def test_a_commit_inside_on_revoked_covers_the_partitions_being_revoked(filled):
    """The pattern Kafka's consumers document: commit in on_revoked so the next owner starts
    where this one stopped. The commit must include the revoked partitions' positions."""
    group = "commit-on-revoke"
    committed_in_callback: list[dict] = []

    async def scenario():
        consumer: Consumer | None = None

        async def on_revoked(partitions):
            committed_in_callback.append(dict(consumer.positions))
            await consumer.commit()

        consumer = Consumer(filled.bootstrap, group, session_timeout_ms=10_000,
                            heartbeat_interval_ms=200, on_revoked=on_revoked)
        await consumer.subscribe([DOCS_TOPIC])
        returned: dict[int, int] = {}
        while len(returned) < DOCS_PARTITIONS:
            for r in await consumer.poll(timeout_ms=200, max_records=50):
                returned[r.partition] = r.offset + 1
        await consumer.leave()   # revokes everything: on_revoked commits
        return returned

    returned = asyncio.run(asyncio.wait_for(scenario(), 60))
    assert committed_in_callback, "on_revoked never ran"
    assert {p: o for (_, p), o in committed_in_callback[0].items()} == returned
    with AdminClient(filled.bootstrap) as admin:
        from roster.admin.offsets import committed
        assert committed(admin, group) == {(DOCS_TOPIC, p): o for p, o in returned.items()}
