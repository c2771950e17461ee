"""A child process that drives one broker's share partitions for the kill -9 test
(tests/interop/test_share_state_durability.py), on the broker's real log, __share_group_state
and fsync path, without the fetch path's handlers:

  python -m tests.support.share_state_driver drive DATA_DIR SEED
      creates topic `work` (RECORDS records, one partition), initialises group `g`'s share
      partition at 0, then acquires and acknowledges forever; before each acknowledgement it
      prints {"sending": batches}, once answered {"answered": batches, "error": code}
      (flushed), so the parent knows what was acknowledged when it kills the process.
  python -m tests.support.share_state_driver inspect DATA_DIR
      loads the share state as a starting broker does and prints the partition:
      {"start", "end", "records": {offset: [state, delivery count]}, "topic_id"}.
"""
from __future__ import annotations

import asyncio
import json
import random
import sys
from pathlib import Path

from roster.broker.broker import Broker
from roster.broker.partitions import appends
from roster.broker.partitions.internal_topic import records_batch
from roster.config import BrokerConfig

TOPIC = "work"
GROUP = "g"
RECORDS = 400
MEMBER = "member-1"
SETTINGS = ["share.coordinator.state.topic.num.partitions=3",
            "share.coordinator.snapshot.update.records.per.snapshot=7",
            "offsets.topic.num.partitions=5"]
ACCEPT, RELEASE, REJECT = 1, 2, 3


def _broker(data_dir: Path) -> Broker:
    config = BrokerConfig.load(assignments=SETTINGS, environ={})
    broker = Broker(config, data_dir)
    broker.topics.load()
    return broker


def _emit(line: dict) -> None:
    sys.stdout.write(json.dumps(line) + "\n")
    sys.stdout.flush()


async def drive(data_dir: Path, seed: int) -> None:
    broker = _broker(data_dir)
    state = broker.share_state
    state.load()
    topic = broker.topics.get(TOPIC) or broker.topics.create(TOPIC, 1)
    log = topic.partitions[0]
    for i in range(RECORDS - log.log_end_offset):
        appends.append(broker, TOPIC, 0, log,
                       records_batch([(None, b"v%d" % i, broker.now_ms())], 1 << 16), 1)
    await appends.make_durable(broker, log, log.log_end_offset)
    key = (GROUP, topic.topic_id, 0)
    state.runtime.apply(state.coordinator.initialize(key, 0, state.runtime.now_ms()))
    _emit({"topic_id": str(topic.topic_id)})
    rng = random.Random(seed)
    while True:
        start = state.next_fetch_offset(key)
        end = min(start + rng.randint(1, 12), RECORDS)
        acquired = state.acquire(key, MEMBER, [(o, o) for o in range(start, end)], 50, False)
        offsets = [o for a in acquired for o in range(a.first_offset, a.last_offset + 1)]
        if acquired:
            _emit({"acquired": [[a.first_offset, a.last_offset, a.delivery_count]
                                for a in acquired]})
        if not offsets:
            await asyncio.sleep(0.01)
            continue
        kept = set(rng.sample(offsets, k=len(offsets) // 5))   # left acquired, never acked
        batches = []
        for offset in offsets:
            if offset in kept:
                continue
            kind = rng.choices([ACCEPT, RELEASE, REJECT], weights=[6, 3, 1])[0]
            batches.append([offset, offset, [kind]])
        if not batches:
            continue
        _emit({"sending": batches})
        error = await state.acknowledge(key, MEMBER, [tuple(b) for b in batches])
        _emit({"answered": batches, "error": None if error is None else int(error)})
        # what was kept acquired is released later by the member "leaving", now and then
        if rng.random() < 0.2:
            state.release_member_records(GROUP, MEMBER)


def inspect(data_dir: Path) -> None:
    broker = _broker(data_dir)
    state = broker.share_state

    async def load():
        state.load()
        await state.stop()
    asyncio.run(load())
    topic = broker.topics.get(TOPIC)
    partition = state.coordinator.get((GROUP, topic.topic_id, 0))
    _emit({"topic_id": str(topic.topic_id), "start": partition.start, "end": partition.end,
           "records": {str(o): [int(e.state), e.delivery_count]
                       for o, e in sorted(partition.records.items())}})
    broker.topics.close()


if __name__ == "__main__":
    if sys.argv[1] == "drive":
        asyncio.run(drive(Path(sys.argv[2]), int(sys.argv[3])))
    else:
        inspect(Path(sys.argv[2]))
