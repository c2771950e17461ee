"""Offsets as Spark stores them, and the pure arithmetic of planning a micro-batch.

Spark moves a source's offsets as JSON; ours are `{"topic": {"partition": offset}}` (partition
numbers as strings, since JSON keys are strings), where the offset is the next one to read.
Nothing here does I/O, so the rules are tested without Spark or a broker.
"""
from __future__ import annotations

from collections.abc import Mapping

TopicPartition = tuple[str, int]
Offsets = dict[TopicPartition, int]


def from_json(data: Mapping | None) -> Offsets:
    if not data:
        return {}
    return {(str(topic), int(partition)): int(offset)
            for topic, partitions in data.items() for partition, offset in partitions.items()}


def to_json(offsets: Mapping[TopicPartition, int]) -> dict:
    data: dict[str, dict[str, int]] = {}
    for (topic, partition), offset in sorted(offsets.items()):
        data.setdefault(topic, {})[str(partition)] = int(offset)
    return data


def split_budget(available: Mapping[TopicPartition, int], limit: int | None) -> Offsets:
    """How many records each partition may contribute to a batch of at most `limit` records.

    Each partition's share is proportional to its backlog (as Spark's Kafka source does), with
    the remainders handed out largest first (ties by partition) so the shares add up to the
    limit exactly and even a limit smaller than the number of partitions makes progress.
    """
    available = {tp: max(0, n) for tp, n in available.items()}
    total = sum(available.values())
    if limit is None or total <= limit:
        return dict(available)
    shares = {tp: n * limit // total for tp, n in available.items()}
    remainders = sorted(available, key=lambda tp: (-(available[tp] * limit % total), tp))
    left = limit - sum(shares.values())
    for tp in remainders:
        if left == 0:
            break
        if shares[tp] < available[tp]:
            shares[tp] += 1
            left -= 1
    return shares


def plan_end(start: Mapping[TopicPartition, int], kept: list[TopicPartition],
             gained: Mapping[TopicPartition, int], latest: Mapping[TopicPartition, int],
             limit: int | None, target: Mapping[TopicPartition, int] | None = None) -> Offsets:
    """The end offsets of the next micro-batch.

    - `kept`: partitions in `start` that this reader still owns: they advance towards `latest`
      (capped by an AvailableNow `target` and the `limit` budget) and never move backwards;
    - `gained`: partitions newly owned, with the offset they start from: they enter the offsets
      at that position and are read from the next batch on, so that a replayed batch plans
      exactly the same ranges without asking the group again;
    - every other partition of `start` (lost to another member) is left out.
    """
    ceiling = {}
    for tp in kept:
        top = latest.get(tp, start[tp])
        if target is not None:
            top = min(top, target.get(tp, start[tp]))
        ceiling[tp] = max(start[tp], top)
    shares = split_budget({tp: ceiling[tp] - start[tp] for tp in kept}, limit)
    end = {tp: start[tp] + shares[tp] for tp in kept}
    for tp, offset in gained.items():
        end[tp] = offset
    return end


def ranges(start: Mapping[TopicPartition, int], end: Mapping[TopicPartition, int]
           ) -> list[tuple[TopicPartition, int, int]]:
    """(partition, from, until) for every partition with records between start and end.
    A partition absent from `start` entered at its end offset: nothing to read yet."""
    out = []
    for tp, until in sorted(end.items()):
        begin = start.get(tp, until)
        if until > begin:
            out.append((tp, begin, until))
    return out
