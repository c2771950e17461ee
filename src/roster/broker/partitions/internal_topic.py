"""The one writer of the broker's own topics: `__consumer_offsets` (group_log.py),
`__transaction_state` (transaction_log.py) and `__roster_group_events`
(observability/event_log.py), and of any coordinator's topic to come (a share coordinator's
`__share_group_state`).

It does what each of them needs and nothing of what their records mean: create the topic (or
check the existing one), map a key to its partition with Java's hash (Kafka's mapping), build a
batch that holds one operation's records (a batch is one write, and recovery keeps a batch whole
or cuts it by its CRC, so an operation is all or nothing across a crash), append it through the
one append path (appends.py), make it durable, and read a partition back from its start when
the broker starts.
"""
from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping

from roster import record_codec   # loads the codec on first use
from roster.broker.partitions import appends
from roster.log.api import AppendResult, LogStorageError, PartitionLog, RecordTooLarge
from roster.log.reading import batches_from_start
from roster.protocol.partitioning import partition_for

# (key, value, timestamp) of one record
Entry = tuple[bytes | None, bytes | None, int]


class InternalTopic:
    """One of the broker's own topics. `partitions` is the count the broker is configured with;
    an existing topic with another count stops the broker (`setting` names what to change), as
    Kafka refuses to run with one, unless `adopt_existing` (a topic whose count only spreads
    load, read by nobody by partition: the flight recorder's)."""

    def __init__(self, broker, name: str, partitions: int, configs: Mapping[str, str],
                 setting: str = "", adopt_existing: bool = False) -> None:
        self._broker = broker
        self.name = name
        self.partitions = partitions
        self._configs = dict(configs)
        self._setting = setting
        self._adopt = adopt_existing

    def exists(self) -> bool:
        return self._broker.topics.get(self.name) is not None

    def check_existing(self) -> None:
        """At start: an existing topic must have the configured partition count (see ensure).
        A missing one is not created here but on first use (ensure, append), as Kafka creates
        __consumer_offsets on the first FindCoordinator: a broker nobody asks for groups or
        transactions never creates their partitions, and its start does not wait for them."""
        if self.exists():
            self.ensure()

    def ensure(self) -> None:
        """Create the topic if it is missing; check the partition count of an existing one."""
        topics = self._broker.topics
        topic = topics.get(self.name)
        if topic is None:
            topics.create(self.name, self.partitions, dict(self._configs), internal=True)
        elif len(topic.partitions) != self.partitions:
            if self._adopt:
                self.partitions = len(topic.partitions)
                return
            # every key would move partition: Kafka refuses to run with a changed count too
            raise SystemExit(
                f"{self.name} has {len(topic.partitions)} partitions but {self._setting} is "
                f"{self.partitions}; they must agree")

    def partition_for(self, key: str) -> int:
        return partition_for(key, self.partitions)

    def log(self, index: int) -> PartitionLog | None:
        return self._broker.topics.partition(self.name, index)

    def append(self, index: int, batch: bytes, records: int) -> tuple[PartitionLog, AppendResult]:
        """Append one batch to partition `index`: (its log, what the log took). Raises LogError
        (LogStorageError when the partition is gone)."""
        target = self.log(index)
        if target is None and not self.exists():   # its first write creates it
            self.ensure()
            target = self.log(index)
        if target is None:
            raise LogStorageError(f"{self.name}-{index} does not exist")
        return target, appends.append(self._broker, self.name, index, target, batch, records)

    async def make_durable(self, target: PartitionLog, end_offset: int) -> None:
        await appends.make_durable(self._broker, target, end_offset)

    async def write(self, index: int, batch: bytes, records: int) -> None:
        """Append one batch and return once it is durable. Raises LogError."""
        target, appended = self.append(index, batch, records)
        await self.make_durable(target, appended.last_offset + 1)

    def batches(self, index: int, chunk_bytes: int = 1 << 20) -> Iterator:
        """Every batch of partition `index`, from its log start, oldest first."""
        target = self.log(index)
        if target is None:
            return iter(())
        return batches_from_start(target, chunk_bytes)


def records_batch(entries: Iterable[Entry], max_bytes: int, producer_id: int = -1,
                  producer_epoch: int = -1, transactional: bool = False) -> bytes:
    """One magic-v2 batch of `entries`, uncompressed (a transactional one carries the producer's
    id and epoch). Raises RecordTooLarge when they do not fit in `max_bytes`."""
    builder = record_codec.DefaultRecordBatchBuilder(
        magic=2, compression_type=0, is_transactional=transactional, producer_id=producer_id,
        producer_epoch=producer_epoch, base_sequence=0 if transactional else -1,
        batch_size=max_bytes)
    for count, (key, value, timestamp) in enumerate(entries):
        if builder.append(count, timestamp=timestamp, key=key, value=value,
                          headers=[]) is None:
            raise RecordTooLarge(f"records over the batch limit of {max_bytes} bytes")
    return bytes(builder.build())
