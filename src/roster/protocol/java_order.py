"""The orders in which Kafka's Java collections hand things back, where Kafka's answers show
them and a client or a tool comparing answers could see the difference.

- A share group member's subscribed topic names: Kafka writes the member record with the names
  sorted and rebuilds the member from it as `new HashSet<>(names)`, so ShareGroupDescribe lists
  them in that set's iteration order (hash_set_order), neither sorted nor as sent.
- The server assignor a consumer group uses when its members ask for different ones: the one
  most of them ask for, a tie going to the first in the order Kafka's count of them (a
  TimelineHashMap, kafka.timeline's own hash table) iterates (timeline_hash_order).
- The groups of a multi-group answer (DescribeGroups, DeleteGroups, ConsumerGroupDescribe,
  ShareGroupDescribe, StreamsGroupDescribe): Kafka's GroupCoordinatorService answers the ids
  an empty-id check turned away first (for the APIs that make one), then the others by their
  __consumer_offsets partition, the partitions in the order a `HashMap<TopicPartition, _>` of
  them iterates, each partition's ids as asked (coordinator_order).

The first and the last follow from facts of the JDK's HashMap: a table of a power of two buckets, at least 16 and
never more than three quarters full (a set built from a list of n names is sized for the n
names, a repeated name counting each time; a map filled one key at a time doubles as it
fills); a key's bucket is its hashCode() spread (h ^ h >>> 16) and masked to the table;
iteration goes bucket by bucket, and within a bucket in the order the keys were first added."""
from __future__ import annotations

from collections.abc import Callable, Sequence

from roster.protocol.partitioning import java_string_hash, partition_for

_INT = 1 << 32


def _bucket_order(keys: list, hash_of: Callable[[object], int], table: int) -> list:
    """Distinct keys, first-added first, in the order a table of `table` buckets iterates."""
    def bucket(key) -> int:
        h = hash_of(key) % _INT            # as an unsigned 32-bit value
        return (h ^ (h >> 16)) & (table - 1)
    return sorted(keys, key=bucket)       # sorted is stable: first added first in a bucket


def hash_set_order(names: Sequence[str]) -> tuple[str, ...]:
    """`new ArrayList<>(new HashSet<>(names))`: each name once, in the set's iteration order."""
    wanted = max(int(len(names) / 0.75) + 1, 16)   # new HashSet<>(collection)'s capacity
    table = 1 << (wanted - 1).bit_length()         # HashMap.tableSizeFor
    return tuple(_bucket_order(list(dict.fromkeys(names)), java_string_hash, table))


_OFFSETS_TOPIC_HASH = java_string_hash("__consumer_offsets")


def _offsets_partition_hash(partition: int) -> int:
    """TopicPartition("__consumer_offsets", partition).hashCode()."""
    return 31 * (31 + partition) + _OFFSETS_TOPIC_HASH


def coordinator_order(group_ids: Sequence[str], offsets_partitions: int,
                      empty_first: bool) -> list[str]:
    """The group ids (repeats kept) in the order Kafka 4.4's GroupCoordinatorService answers
    them; `empty_first`: the API answers an empty id INVALID_GROUP_ID before the rest (the
    newer describe APIs), else an empty id is a group of partition 0 like any other."""
    first = [g for g in group_ids if empty_first and not g]
    by_partition: dict[int, list[str]] = {}
    for group_id in group_ids:
        if group_id or not empty_first:
            by_partition.setdefault(partition_for(group_id, offsets_partitions),
                                    []).append(group_id)
    table = 16                                     # new HashMap<>(), filled key by key
    while len(by_partition) > table * 3 // 4:
        table *= 2
    partitions = _bucket_order(list(by_partition), _offsets_partition_hash, table)
    return first + [g for partition in partitions for g in by_partition[partition]]


_FIBONACCI = -7046029254386353131 % (1 << 64)    # Knuth's multiplier, as Kafka's BaseHashTable


def timeline_hash_order(keys: Sequence[str]) -> list[str]:
    """The order a TimelineHashMap (org.apache.kafka.timeline) made empty and given these
    distinct string keys in this order iterates them: its table starts at 2 slots and doubles
    before an add would fill it past three quarters; a key's slot is the top bits of its
    hashCode() times Knuth's multiplier, as many as the table needs; slots are visited in
    order, a slot's keys last-added first."""
    table = 2
    for size in range(len(keys)):
        if (size + 1) * 0.75 > table:
            table *= 2
    shift = 65 - table.bit_length()

    def slot(key: str) -> int:
        return ((java_string_hash(key) * _FIBONACCI) % (1 << 64)) >> shift
    added = list(reversed(keys))                  # within a slot: the last added first
    return sorted(added, key=slot)
