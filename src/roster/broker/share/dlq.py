"""A share group's dead-letter queue (KIP-1191, share.version=2): a record a consumer rejected,
and one archived at share.delivery.count.limit (released, or its lock expired), is written to
the group's `errors.deadletterqueue.topic.name` once its archival is durable. The record is
ARCHIVED whatever becomes of that write, as in Kafka ("Failed to write to DLQ, proceeding to
ARCHIVED regardless").

What Kafka 4.4 does, read off kafka-server 4.4.0's ShareGroupDLQStateManager and
SharePartition:
- the topic name must not be empty, must not start with "__" and must start with the broker's
  errors.deadletterqueue.topic.name.prefix ("dlq." by default; "" allows any);
- a missing topic is created only with errors.deadletterqueue.auto.create.topics.enable, else
  the write is refused; an existing topic must have errors.deadletterqueue.group.enable=true;
- the DLQ partition is the source partition modulo the DLQ topic's partition count;
- each record carries the headers __dlq.errors.topic (the source topic's name),
  __dlq.errors.partition, __dlq.errors.offset, __dlq.errors.group,
  __dlq.errors.delivery.count and __dlq.errors.message ("Offset rejected by client.", or
  "Offset delivery count exceeded the threshold." once the count reached the limit), each as
  UTF-8 text; the source record's key and value only with
  errors.deadletterqueue.copy.record.enable (else both null); its timestamp is the time of the
  write.
"""
from __future__ import annotations

import logging

from roster import record_codec   # loads the codec on first use
from roster.broker.partitions import appends
from roster.log.api import LogError

log = logging.getLogger("roster.share")

TOPIC_NAME = "errors.deadletterqueue.topic.name"
COPY_RECORD = "errors.deadletterqueue.copy.record.enable"
GROUP_ENABLE = "errors.deadletterqueue.group.enable"
REJECTED = "Offset rejected by client."
EXCEEDED = "Offset delivery count exceeded the threshold."
MAX_BATCH = 8 << 20


class DeadLetterQueue:
    def __init__(self, broker, state) -> None:
        self._broker = broker
        self._state = state

    def target(self, group_id: str):
        """The group's DLQ topic (created if allowed), or None with the reason logged."""
        name = self._state.group_value(group_id, TOPIC_NAME, None, "") or ""
        if not name:
            return None
        prefix = self._broker.config["errors.deadletterqueue.topic.name.prefix"]
        if name.startswith("__"):
            why = f"Configured DLQ topic name in share group: {group_id} cannot start with " \
                  f"__, topic: {name}."
        elif prefix and not name.startswith(prefix):
            why = f"Configured DLQ topic name does not comply with the DLQ topic prefix in " \
                  f"share group: {group_id}, topic: {name}, prefix: {prefix}."
        else:
            topic = self._broker.topics.get(name)
            if topic is None:
                if not self._broker.config["errors.deadletterqueue.auto.create.topics.enable"]:
                    why = f"DLQ topic does not exist and auto create is disabled on cluster " \
                          f"for share group: {group_id}, topic: {name}."
                else:
                    try:
                        return self._broker.topics.create(
                            name, self._broker.config["num.partitions"], {GROUP_ENABLE: "true"})
                    except Exception as exc:        # TopicError, LogError
                        why = f"Unable to create DLQ topic {name}: {exc}"
            elif str(topic.configs.get(GROUP_ENABLE, "false")).lower() != "true":
                why = f"DLQ is not enabled on configured DLQ topic for share group: " \
                      f"{group_id}, topic: {name}."
            else:
                return topic
        log.warning("dead letters not written: %s", why)
        return None

    def __call__(self, key, entries) -> None:
        """Write the dead letters of share partition `key`: entries (offset, delivery count)."""
        group_id, topic_id, partition = key
        target = self.target(group_id)
        if target is None:
            return
        source = self._broker.topics.by_id(topic_id)
        if source is None:
            return
        copy = bool(self._state.group_value(group_id, COPY_RECORD, None, False))
        limit = self._state.limits(group_id).delivery_count_limit
        originals = self._originals(source.partitions[partition],
                                    [o for o, _ in entries]) if copy else {}
        now = self._broker.now_ms()
        builder = record_codec.DefaultRecordBatchBuilder(
            magic=2, compression_type=0, is_transactional=False, producer_id=-1,
            producer_epoch=-1, base_sequence=-1, batch_size=MAX_BATCH)
        for delta, (offset, delivered) in enumerate(sorted(entries)):
            headers = [("__dlq.errors.topic", source.name.encode()),
                       ("__dlq.errors.partition", str(partition).encode()),
                       ("__dlq.errors.offset", str(offset).encode()),
                       ("__dlq.errors.group", group_id.encode()),
                       ("__dlq.errors.delivery.count", str(delivered).encode()),
                       ("__dlq.errors.message",
                        (EXCEEDED if delivered >= limit else REJECTED).encode())]
            record_key, value = originals.get(offset, (None, None))
            builder.append(delta, timestamp=now, key=record_key, value=value, headers=headers)
        index = partition % len(target.partitions)
        try:
            appends.append(self._broker, target.name, index, target.partitions[index],
                           bytes(builder.build()), len(entries))
        except LogError as exc:
            log.warning("cannot write dead letters to %s-%d: %s", target.name, index, exc)
            return
        noted = getattr(self._state, "dead_lettered", None)
        if noted is not None:       # counted for /metrics, and a flight recorder event
            noted(key, entries, target.name, index)

    @staticmethod
    def _originals(source_log, offsets: list[int]) -> dict[int, tuple]:
        """(key, value) of the source records at `offsets`, as the log holds them."""
        wanted, found = set(offsets), {}
        position = min(offsets)
        while wanted and position <= max(offsets):
            try:
                chunk = source_log.read(position, 1 << 20)
            except LogError:
                break
            if not chunk:
                break
            batches = record_codec.MemoryRecords(chunk)
            moved = False
            while (batch := batches.next_batch()) is not None:
                for record in batch:
                    if record.offset in wanted:
                        found[record.offset] = (record.key, record.value)
                        wanted.discard(record.offset)
                next_position = batch.base_offset + batch.last_offset_delta + 1
                if next_position > position:
                    position, moved = next_position, True
            if not moved:
                break
        return found
