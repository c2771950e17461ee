"""broker.share_state on a real broker object (its log, __share_group_state, the coordinator
runtime's timers on a real event loop): an acknowledgement answered once written, an expired
acquisition lock firing and waking the fetch path's waiter, a failed write answered with the
error and put back, share.auto.offset.reset at initialisation, and pruning the state topic
without losing what replay needs."""
from __future__ import annotations

import asyncio
import tempfile
from pathlib import Path

from roster.broker.broker import Broker
from roster.broker.partitions import appends
from roster.broker.partitions.internal_topic import records_batch
from roster.broker.share.state_log import STATE_TOPIC
from roster.config import BrokerConfig
from roster.log.api import LogStorageError
from roster.protocol.errors import ErrorCode
from roster.share.states import RecordState

WAIT_S = 30
ACCEPT, RELEASE = 1, 2


def run(scenario, settings=()) -> None:
    async def main(data_dir: Path):
        config = BrokerConfig.load(assignments=["share.coordinator.state.topic.num.partitions=2",
                                                *settings], environ={})
        broker = Broker(config, data_dir)
        broker.topics.load()
        broker.share_state.load()
        topic = broker.topics.create("work", 1)
        log = topic.partitions[0]
        for i in range(20):
            appends.append(broker, "work", 0, log,
                           records_batch([(None, b"v%d" % i, 1000 * i)], 1 << 16), 1)
        try:
            await scenario(broker, broker.share_state, ("g", topic.topic_id, 0))
        finally:
            await broker.share_state.stop()
            broker.topics.close()

    with tempfile.TemporaryDirectory() as directory:
        asyncio.run(main(Path(directory)))


def test_an_acknowledgement_is_answered_once_written_and_replays():
    async def scenario(broker, state, key):
        state.runtime.apply(state.coordinator.initialize(key, 0, 0))
        assert state.start_offset(key) == 0
        state.acquire(key, "m", [(0, 9)], 100, False)
        assert await state.acknowledge(key, "m", [(0, 4, [ACCEPT])]) is None
        assert state.start_offset(key) == 5
        outcome = await state.acknowledge_outcome(key, "other", [(5, 5, [ACCEPT])])
        assert outcome.error is ErrorCode.invalid_record_state
        replayed = Broker(broker.config, broker.data_dir)   # what a restart would read
        replayed.topics = broker.topics
        for record in replayed.share_state.log.load():
            replayed.share_state.coordinator.replay(record)
        replayed.share_state.coordinator.loaded()
        assert replayed.share_state.coordinator.get(key).start == 5
    run(scenario)


def test_an_expired_lock_releases_and_wakes_the_waiter():
    async def scenario(broker, state, key):
        state.runtime.apply(state.coordinator.initialize(key, 0, 0))
        woken, waiter = [], asyncio.Event()
        state.on_available.append(lambda k: (woken.append(k), waiter.set()))
        # acquired "in the past": its 30 s lock is due 50 ms from now
        now = state.runtime.now_ms()
        acquired = state.acquire(key, "m", [(0, 2)], 100, False,
                                 now - state.lock_duration_ms("g") + 50)
        assert [(a.first_offset, a.last_offset) for a in acquired] == [(0, 2)]
        await asyncio.wait_for(waiter.wait(), WAIT_S)
        assert woken == [key]
        partition = state.coordinator.get(key)
        assert all(partition.records[o].state is RecordState.AVAILABLE for o in range(3))
        assert state.next_fetch_offset(key) == 0
        again = state.acquire(key, "n", [(0, 2)], 100, False)
        assert [a.delivery_count for a in again] == [2]
    run(scenario)


def test_a_failed_write_is_answered_with_the_error_and_put_back():
    async def scenario(broker, state, key):
        state.runtime.apply(state.coordinator.initialize(key, 0, 0))
        await asyncio.sleep(0)
        state.acquire(key, "m", [(0, 4)], 100, False)
        topic = state.log.topic

        def failing_append(*args, **kwargs):
            raise LogStorageError("injected")
        original, topic.append = topic.append, failing_append
        try:
            error = await state.acknowledge(key, "m", [(0, 4, [ACCEPT])])
        finally:
            topic.append = original
        assert error is ErrorCode.coordinator_not_available
        partition = state.coordinator.get(key)
        assert partition.start == 0
        assert all(partition.records[o].state is RecordState.ACQUIRED for o in range(5))
        assert await state.acknowledge(key, "m", [(0, 4, [ACCEPT])]) is None
        assert partition.start == 5
    run(scenario)


def test_initialisation_follows_share_auto_offset_reset():
    async def scenario(broker, state, key):
        group, topic_id, _ = key
        written = state.initialize(group, [(topic_id, 0)])        # latest: the end
        assert state.start_offset(key) == 20                      # at once
        assert [o.error for o in await written] == [None]         # then durable
        broker.group_configs.values["early"] = {"share.auto.offset.reset": "earliest"}
        state.initialize("early", [(topic_id, 0)])
        assert state.start_offset(("early", topic_id, 0)) == 0
        # records stamped 0, 1000, ... 19000 ms: the first at or after now - duration
        now = broker.now_ms()
        broker.group_configs.values["recent"] = {
            "share.auto.offset.reset": f"by_duration:PT{(now - 12_500) / 1000:.3f}S"}
        state.initialize("recent", [(topic_id, 0)])
        assert state.start_offset(("recent", topic_id, 0)) == 13
        assert state.initialize(group, [(topic_id, 0)]) is None   # idempotent
        assert state.start_offset(key) == 20
    run(scenario)


def test_pruning_keeps_what_replay_needs():
    async def scenario(broker, state, key):
        state.runtime.apply(state.coordinator.initialize(key, 0, 0))
        for round_ in range(15):
            read_from = state.next_fetch_offset(key)
            [got] = state.acquire(key, "m", [(o, o) for o in range(read_from, 20)], 1, True)
            kind = ACCEPT if round_ % 3 else RELEASE
            offset = got.first_offset
            assert await state.acknowledge(key, "m", [(offset, offset, [kind])]) is None
        index = state.log.index_of(state.coordinator._snapshot(key, state.coordinator.get(key),
                                                               0))
        target = broker.topics.partition(STATE_TOPIC, index)
        written = target.log_end_offset
        assert await state.snapshot_and_prune() > 0
        assert target.log_start_offset == written        # only the fresh snapshot is left
        before = {o: (e.state, e.delivery_count)
                  for o, e in state.coordinator.get(key).records.items()}
        replayed = Broker(broker.config, broker.data_dir)
        replayed.topics = broker.topics
        for record in replayed.share_state.log.load():
            replayed.share_state.coordinator.replay(record)
        replayed.share_state.coordinator.loaded()
        partition = replayed.share_state.coordinator.get(key)
        assert partition.start == state.start_offset(key)
        assert {o: (e.state, e.delivery_count) for o, e in partition.records.items()} == before
    run(scenario, ["share.coordinator.snapshot.update.records.per.snapshot=4"])


def _dead_letters(broker, name: str) -> list:
    from roster.record_codec import MemoryRecords
    topic = broker.topics.get(name)
    out = []
    for index, log in enumerate(topic.partitions):
        data = log.read(log.log_start_offset, 1 << 20) if log.log_end_offset else b""
        batches = MemoryRecords(data)
        while (batch := batches.next_batch()) is not None:
            for record in batch:
                out.append((index, record.key, record.value,
                            {k: v.decode() for k, v in record.headers}))
    return out


def test_rejected_and_exhausted_records_go_to_the_dead_letter_queue():
    async def scenario(broker, state, key):
        broker.group_configs.values["g"] = {
            "errors.deadletterqueue.topic.name": "dlq.g",
            "errors.deadletterqueue.copy.record.enable": True,
            "share.delivery.count.limit": 2}
        state.runtime.apply(state.coordinator.initialize(key, 0, 0))
        state.acquire(key, "m", [(0, 3)], 100, False)
        assert await state.acknowledge(key, "m", [(0, 0, [3]), (1, 3, [RELEASE])]) is None
        state.acquire(key, "m", [(1, 3)], 100, False)       # the 2nd delivery: the limit
        assert await state.acknowledge(key, "m", [(1, 1, [RELEASE]), (2, 3, [ACCEPT])]) is None
        letters = _dead_letters(broker, "dlq.g")
        assert [(k, v) for _, k, v, _ in letters] == [(None, b"v0"), (None, b"v1")]
        assert letters[0][3] == {
            "__dlq.errors.topic": "work", "__dlq.errors.partition": "0",
            "__dlq.errors.offset": "0", "__dlq.errors.group": "g",
            "__dlq.errors.delivery.count": "1",
            "__dlq.errors.message": "Offset rejected by client."}
        assert letters[1][3]["__dlq.errors.message"] == \
            "Offset delivery count exceeded the threshold."
        assert letters[1][3]["__dlq.errors.delivery.count"] == "2"
        assert state.start_offset(key) == 4
    run(scenario, ["errors.deadletterqueue.auto.create.topics.enable=true"])


def test_the_dead_letter_queue_topic_must_be_allowed():
    async def scenario(broker, state, key):
        state.runtime.apply(state.coordinator.initialize(key, 0, 0))
        broker.topics.create("dlq.closed", 1)                   # group.enable false
        broker.topics.create("dlq.open", 3, {"errors.deadletterqueue.group.enable": "true"})
        for name in ("other.name", "dlq.missing", "dlq.closed", "dlq.open"):
            broker.group_configs.values["g"] = {"errors.deadletterqueue.topic.name": name}
            state.acquire(key, "m", [(o, o) for o in range(state.next_fetch_offset(key), 20)],
                          1, True)
            offset = state.next_fetch_offset(key) - 1
            assert await state.acknowledge(key, "m", [(offset, offset, [3])]) is None
        assert broker.topics.get("dlq.missing") is None          # no auto-create
        assert _dead_letters(broker, "dlq.closed") == []
        [(index, k, v, headers)] = _dead_letters(broker, "dlq.open")
        assert (index, k, v) == (0, None, None)                  # partition 0 % 3, no copy
        assert headers["__dlq.errors.offset"] == "3"
    run(scenario)


def test_a_deleted_topics_share_state_goes():
    """(Broker.delete_topic calls topic_deleted; here it is called directly, to wait for the
    tombstones.)"""
    async def scenario(broker, state, key):
        state.runtime.apply(state.coordinator.initialize(key, 0, 0))
        other = broker.topics.create("kept", 1)
        kept = ("g", other.topic_id, 0)
        state.runtime.apply(state.coordinator.initialize(kept, 0, 0))
        topic_id = broker.topics.get("work").topic_id
        broker.topics.delete("work")
        written = state.topic_deleted(topic_id)
        assert state.start_offset(key) is None and state.start_offset(kept) == 0
        assert (await written).error is None        # the tombstones are durable
        replayed = Broker(broker.config, broker.data_dir)
        replayed.topics = broker.topics
        for record in replayed.share_state.log.load():
            replayed.share_state.coordinator.replay(record)
        assert set(replayed.share_state.coordinator.partitions) == {kept}
    run(scenario)
