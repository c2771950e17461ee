"""What Kafka's LogValidator does to a produced batch before the log takes it, for the topic
configs that change it: keys on compacted topics, timestamps, LogAppendTime, and broker-side
recompression.

- A topic whose cleanup.policy includes compact refuses a record without a key: INVALID_RECORD,
  "Compacted topic cannot accept message without key in topic partition t-p".
- Under CreateTime, a record whose timestamp is more than message.timestamp.before.max.ms
  before the broker's clock, or more than message.timestamp.after.max.ms after it, is refused:
  INVALID_TIMESTAMP. The whole batch is refused, and each refused record is named in the
  answer's record_errors (batch index and message), as Kafka answers.
- Under LogAppendTime, the batch is stamped: its timestamp type becomes LogAppendTime and its
  maxTimestamp the broker's time (which every record then reads as its timestamp), and the
  produce answer carries that time. A batch that already claims LogAppendTime is refused.
- compression.type other than producer: a batch in another codec is decoded and rebuilt in the
  topic's codec (uncompressed included) with offset deltas 0..n-1 and each record's timestamp,
  key, value and headers kept, as LogValidator's buildRecordsAndAssignOffsets does; an
  uncompressed control batch stays as it is. A batch already in the topic's codec is kept as
  sent.

Cost: the records are decoded only when a rule needs them (a compacted topic, a finite
before.max.ms, recompression), or when the batch's maxTimestamp is past the after bound (then the
records are read to name the late ones). With Kafka's defaults a batch is checked from its header
alone. The rules are derived once per version of a topic's configs (TopicManager.cached).
"""
from __future__ import annotations

import struct
from typing import NamedTuple

from roster import record_codec   # loads the codec and crc32c on first use
from roster.log.batch import TIMESTAMP_TYPE_BIT, BatchHeader
from roster.protocol.errors import ErrorCode
from roster.topic_config_table import LONG_MAX

CODECS = {"uncompressed": 0, "gzip": 1, "snappy": 2, "lz4": 3, "zstd": 4}
_ATTRIBUTES_AT, _MAX_TIMESTAMP_AT, _CRC_AT, _CRC_FROM = 21, 35, 17, 21
_INT16, _INT64, _UINT32 = struct.Struct(">h"), struct.Struct(">q"), struct.Struct(">I")
_UNBOUNDED = 1 << 62   # a batch size limit the builder never reaches (the log checks the size)


class AppendRules(NamedTuple):
    """A topic's configs as the produce path needs them."""

    compacted: bool          # cleanup.policy includes compact: keys required
    log_append_time: bool    # message.timestamp.type=LogAppendTime
    before_max_ms: int
    after_max_ms: int
    codec: int | None        # compression.type's codec; None: the producer's
    plain: bool              # none of the above: a batch is checked by its header alone

    @classmethod
    def of(cls, settings) -> AppendRules:
        """From a topic's typed effective configs (TopicManager.settings)."""
        compression = settings["compression.type"]
        compacted = "compact" in settings["cleanup.policy"]
        log_append_time = settings["message.timestamp.type"] == "LogAppendTime"
        before = settings["message.timestamp.before.max.ms"]
        codec = None if compression == "producer" else CODECS[compression]
        plain = not compacted and not log_append_time and before >= LONG_MAX and codec is None
        return cls(compacted, log_append_time, before,
                   settings["message.timestamp.after.max.ms"], codec, plain)


RULES = "append rules"   # their key in TopicManager.cached


def rules_for(topics, topic) -> AppendRules:
    """The topic's AppendRules, derived once per version of its configs: on the hot path a
    check of the topic's derived values, without a call into the topic manager."""
    derived = topic.derived
    if derived is not None and derived[0] is topic.configs:
        rules = derived[1].get(RULES)
        if rules is not None:
            return rules
    return topics.cached(topic, RULES, lambda: AppendRules.of(topics.settings(topic)))


class Refused(Exception):
    """The batch is refused as Kafka refuses it: error code, message and record_errors."""

    def __init__(self, error: ErrorCode, message: str | None, record_errors=()) -> None:
        super().__init__(message)
        self.error = error
        self.message = message
        self.record_errors = tuple(record_errors)


def validate(batch, header: BatchHeader, rules: AppendRules, now_ms: int, topic: str,
             partition: int) -> tuple:
    """(`batch` as the log should store it, the log append time to answer with: -1 under
    CreateTime); raises Refused (records that cannot be decoded: CORRUPT_MESSAGE)."""
    _check_client_batch(header, topic, partition)
    if rules.plain and header.max_timestamp - now_ms <= rules.after_max_ms:
        return batch, -1   # Kafka's defaults: nothing to read, nothing to change
    source = header.compression
    target = source if rules.codec is None else rules.codec
    recompress = target != source and not (header.is_control and source == 0)
    if rules.log_append_time and header.attributes & TIMESTAMP_TYPE_BIT:
        raise Refused(ErrorCode.invalid_timestamp, "One or more records have been rejected due "
                      "to invalid timestamp", [(0, "Invalid timestamp type in message. Producer "
                                                   "should not set timestamp type to "
                                                   "LogAppendTime.")])
    check_keys = rules.compacted and not header.is_control
    check_times = not rules.log_append_time and (
        rules.before_max_ms < LONG_MAX or header.max_timestamp - now_ms > rules.after_max_ms)
    if recompress or check_keys or check_times:
        records = _records(batch)
        _check_records(records, rules, check_keys, check_times, now_ms, f"{topic}-{partition}")
        if recompress:
            batch = _rebuilt(records, header, target)
    if not rules.log_append_time:
        return batch, -1
    return _stamped(batch, now_ms), now_ms


def _check_client_batch(header: BatchHeader, topic: str, partition: int) -> None:
    """What Kafka's LogValidator refuses in any batch a client produces, from the header alone
    (INVALID_RECORD, answered without a message as Kafka answers it)."""
    if header.last_offset_delta + 1 != header.records_count:
        raise Refused(ErrorCode.invalid_record, None)
    if header.is_control:  # commit and abort markers are the broker's to write
        raise Refused(ErrorCode.invalid_record, None)
    if header.producer_id >= 0 and header.base_sequence < 0:
        raise Refused(ErrorCode.invalid_record, None)


def _records(batch) -> list:
    try:
        return list(record_codec.DefaultRecordBatch(bytes(batch)))
    # the codecs underneath raise their own exception types on damaged input
    except Exception as exc:  # noqa: BLE001
        raise Refused(ErrorCode.corrupt_message,
                      f"cannot decode the records of the batch: {exc}") from None


def _check_records(records, rules: AppendRules, check_keys: bool, check_times: bool,
                   now_ms: int, partition_name: str) -> None:
    errors = []
    late = False
    earliest, latest = now_ms - rules.before_max_ms, now_ms + rules.after_max_ms
    for index, record in enumerate(records):
        if check_keys and record.key is None:
            errors.append((index, "Compacted topic cannot accept message without key in topic "
                                  f"partition {partition_name}"))
            continue
        timestamp = record.timestamp
        if check_times and timestamp != -1 and not earliest <= timestamp <= latest:
            late = True
            errors.append((index, f"Timestamp {timestamp} of message with offset "
                                  f"{record.offset} is out of range. The timestamp should be "
                                  f"within [{earliest}, {latest}]"))
    if not errors:
        return
    if late:
        raise Refused(ErrorCode.invalid_timestamp,
                      "One or more records have been rejected due to invalid timestamp", errors)
    shown = ", ".join(f"RecordError(batchIndex={i}, message='{m}')" for i, m in errors[:3])
    raise Refused(ErrorCode.invalid_record,
                  f"One or more records have been rejected due to {len(errors)} record errors "
                  f"in total, and only showing the first three errors at most: [{shown}]", errors)


def _rebuilt(records, header: BatchHeader, codec: int) -> bytearray:
    builder = record_codec.DefaultRecordBatchBuilder(2, codec, int(header.is_transactional),
                                                     header.producer_id, header.producer_epoch,
                                                     header.base_sequence, _UNBOUNDED)
    for delta, record in enumerate(records):
        builder.append(delta, record.timestamp, record.key, record.value,
                       list(record.headers))
    return builder.build()


def _stamped(batch, now_ms: int) -> bytearray:
    """The batch with timestamp type LogAppendTime and maxTimestamp `now_ms`, its CRC made
    again (both fields are covered by it), as Kafka's setMaxTimestamp does."""
    stamped = bytearray(batch)
    (attributes,) = _INT16.unpack_from(stamped, _ATTRIBUTES_AT)
    _INT16.pack_into(stamped, _ATTRIBUTES_AT, attributes | TIMESTAMP_TYPE_BIT)
    _INT64.pack_into(stamped, _MAX_TIMESTAMP_AT, now_ms)
    _UINT32.pack_into(stamped, _CRC_AT, record_codec.crc32c(memoryview(stamped)[_CRC_FROM:]))
    return stamped
