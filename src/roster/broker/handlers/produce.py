"""Produce (0), v0-13.

From v3 each partition's records must be exactly one magic-v2 batch (Kafka's rule). v0-2
(dropped by Kafka 4.0, which only advertised them for librdkafka's feature checks, KAFKA-18659;
sarama below 0.11 produces with them) carry message sets of magic 0 or 1: each partition's set
is validated and up-converted into one magic-v2 batch by roster.broker.partitions.message_formats, as
Kafka 3.9's LogValidator did, and answered in v0-2's layout (roster.protocol.classic). acks=1
answers once the batch is in the log; acks=-1 also waits for fsync (roster has no replicas, so
"all in-sync replicas" means "on this disk"); acks=0 sends no answer, and on an error the
connection is closed, which is how Kafka tells an acks=0 producer something went wrong.

Every produced batch arrives in a Produce request, so this is a raw handler (ApiSpec.raw): it
runs without a coroutine unless the answer waits for fsync, and encodes the answer by hand
(roster.protocol.produce_response; v0-2: roster.protocol.classic). From v3 the request is still
decoded by kio, whose native reader (~2.4 us for a 64 KiB request, the records copy included)
beat a hand-written Python decoder that left the records in place (~3.5 us).
"""
from __future__ import annotations

import asyncio
import inspect
import time

from roster.broker.network.admission import admit_topics, admit_transactional_id, may_create_topic
from roster.broker.partitions import appends
from roster.broker.partitions.message_formats import FormatError, magic_of, up_convert
from roster.broker.partitions.record_validation import Refused, rules_for
from roster.broker.partitions.record_validation import validate as validate_records
from roster.broker.partitions.topics import TopicError, check_topic_name
from roster.log import batch as batches
from roster.log.api import CorruptBatch, LogStorageError, RecordTooLarge
from roster.protocol import classic
from roster.protocol.acl import AclOperation
from roster.protocol.api_keys import ApiKey
from roster.protocol.codec import decode_request, encode_response
from roster.protocol.errors import ErrorCode, MalformedRequest
from roster.protocol.framing import RequestPrefix
from roster.protocol.produce_response import NO_TIMESTAMP, PartitionAnswer, encode_produce_response
from roster.protocol.registry import ApiSpec, Topics, TransactionalId

API_KEY = ApiKey.PRODUCE
# what a Produce acts on: admitted here with admission's functions (a raw handler decodes itself)
TOPICS = Topics(AclOperation.WRITE, "topic_data")  # by name; by id from v13
TRANSACTIONAL_ID = TransactionalId(AclOperation.WRITE, versions=(3, 13))
ACKS = (-1, 0, 1)
KIO_FROM = 3  # v0-2: roster.protocol.classic
IMPLICIT_ADD_FROM = 12  # TV2 (KIP-890): the broker adds a transaction's partitions itself


def now_ms() -> int:
    """The broker's clock for LogAppendTime and the timestamp bounds."""
    return time.time_ns() // 1_000_000


class _Outcome:
    __slots__ = ("error", "base_offset", "log_start_offset", "message", "partition", "end_offset",
                 "log_append_time", "record_errors")

    def __init__(self, error=ErrorCode.none, base_offset=-1, log_start_offset=-1, message=None,
                 record_errors=()):
        self.error = error
        self.base_offset = base_offset
        self.log_start_offset = log_start_offset
        self.message = message
        self.partition = None
        self.end_offset = 0
        self.log_append_time = NO_TIMESTAMP
        self.record_errors = record_errors


def _create(broker, connection, name):
    """A topic named by a producer that does not exist: auto-created when allowed."""
    try:
        check_topic_name(name)
    except TopicError:
        return None, ErrorCode.invalid_topic_exception
    if not may_create_topic(broker, connection, name):
        return None, ErrorCode.topic_authorization_failed
    return broker.auto_create(name), ErrorCode.unknown_topic_or_partition


def _append(broker, topic, index: int, records: bytes | None,
            transactional_id: str | None = None) -> _Outcome:
    if topic.internal:
        return _Outcome(ErrorCode.invalid_topic_exception,
                        message=f"cannot append to internal topic {topic.name}")
    if not 0 <= index < len(topic.partitions):
        return _Outcome(ErrorCode.unknown_topic_or_partition)
    partition = topic.partitions[index]
    if not records:
        return _Outcome(log_start_offset=partition.log_start_offset)
    try:
        header = batches.parse_header(records)
    except CorruptBatch as exc:
        return _Outcome(ErrorCode.corrupt_message, message=str(exc))
    if header.size != len(records):
        return _Outcome(ErrorCode.invalid_record,
                        message="a produce request must carry exactly one record batch per partition")
    if header.records_count == 0:
        return _Outcome(ErrorCode.invalid_record, message="a record batch must hold records")
    # LogValidator's part: keys, timestamps, LogAppendTime, recompression (record_validation)
    try:
        stored, log_append_time = validate_records(
            records, header, rules_for(broker.topics, topic), now_ms(), topic.name, index)
    except Refused as exc:
        return _Outcome(exc.error, message=exc.message, record_errors=exc.record_errors)
    if header.is_transactional:   # the coordinator must know this producer's transaction
        error = broker.transactions.check_produce(transactional_id, header.producer_id,
                                                  header.producer_epoch, topic.name, index)
        if error is not ErrorCode.none:
            return _Outcome(error)
    partition_key = (topic.topic_id, index)
    verdict = broker.sequences.check(partition_key, header)
    if verdict.error is not ErrorCode.none:
        return _Outcome(verdict.error)
    if verdict.duplicate_of is not None:
        # a retry of a batch already written, answered as Kafka answers it: the original's
        # offset and stored maxTimestamp as log_append_time (under CreateTime too), once the
        # original is as durable as acks asks
        written = verdict.duplicate_of
        return _written(partition, written, written.max_timestamp)
    try:
        appended = appends.append(broker, topic.name, index, partition, stored,
                                  header.records_count)
    except CorruptBatch as exc:
        return _Outcome(ErrorCode.corrupt_message, message=str(exc))
    except RecordTooLarge:  # Kafka answers it without a message (differential test)
        return _Outcome(ErrorCode.message_too_large)
    except LogStorageError as exc:
        return _Outcome(ErrorCode.kafka_storage_error, message=str(exc))
    broker.sequences.record(partition_key, header, appended)
    return _written(partition, appended, log_append_time)


def _written(partition, written, log_append_time: int) -> _Outcome:
    """The answer for a batch in the log (`written`: its AppendResult); acks=-1 waits until
    its last offset is durable."""
    outcome = _Outcome(base_offset=written.base_offset, log_start_offset=partition.log_start_offset)
    outcome.log_append_time = log_append_time
    outcome.partition = partition
    outcome.end_offset = written.last_offset + 1
    return outcome


async def _make_durable(broker, outcome: _Outcome) -> None:
    try:
        await appends.make_durable(broker, outcome.partition, outcome.end_offset)
    except LogStorageError as exc:
        outcome.error, outcome.message = ErrorCode.kafka_storage_error, str(exc)


def answer(broker, frame: bytes, prefix: RequestPrefix, connection, added: bool = False):
    """Serve a Produce frame: the encoded response; None for acks=0; a coroutine for acks=-1,
    which has to wait for fsync, and for a v12+ transactional produce whose partitions the
    transaction coordinator adds first (`added`: they were)."""
    legacy = prefix.api_version < KIO_FROM
    body = (classic.decode_request if legacy else decode_request)(frame, prefix).body
    append = _legacy_append if legacy else _append
    acks = body.acks
    results = []  # (topic key for the response: name, or id from v13; [(partition, outcome)])
    transactional_id = getattr(body, "transactional_id", None)
    refused = admit_transactional_id(broker, connection, TRANSACTIONAL_ID, transactional_id)
    if not added and refused is None and acks != 0 and prefix.api_version >= IMPLICIT_ADD_FROM:
        adding = broker.transactions.produce_adds(transactional_id, body.topic_data)
        if adding is not None:
            return _answer_once_added(adding, broker, frame, prefix, connection)
    admitted = admit_topics(broker, connection, TOPICS, body.topic_data)
    for topic_data, (topic, missing) in zip(body.topic_data, admitted):
        name = getattr(topic_data, "name", None)
        topic_id = getattr(topic_data, "topic_id", None)
        if missing is ErrorCode.unknown_topic_or_partition:  # by name: perhaps created now
            topic, missing = _create(broker, connection, name)
        outcomes = []
        for partition_data in topic_data.partition_data:
            if acks not in ACKS:
                outcome = _Outcome(ErrorCode.invalid_required_acks)
            elif refused is not None:
                outcome = _Outcome(refused)
            elif topic is None:
                outcome = _Outcome(missing)
            else:
                outcome = append(broker, topic, partition_data.index, partition_data.records,
                                 transactional_id)
            outcomes.append((partition_data.index, outcome))
        results.append((name if name is not None else topic_id, outcomes))

    if acks == -1:
        return _answer_when_durable(broker, prefix, results)
    if acks == 0:
        failed = [o for _, outs in results for _, o in outs if o.error is not ErrorCode.none]
        if failed:
            raise MalformedRequest(f"acks=0 produce failed ({failed[0].error.name}); "
                                   "closing the connection is the only way to tell the producer")
        return None
    return _response(prefix, results)


async def _answer_once_added(adding, broker, frame, prefix, connection) -> bytes:
    await adding   # its refusal, if any, is the batches' (check_produce in _append)
    answered = answer(broker, frame, prefix, connection, added=True)
    return await answered if inspect.isawaitable(answered) else answered


async def _answer_when_durable(broker, prefix: RequestPrefix, results) -> bytes:
    await asyncio.gather(*(_make_durable(broker, o) for _, outs in results for _, o in outs
                           if o.partition is not None))
    return _response(prefix, results)


def _response(prefix: RequestPrefix, results) -> bytes:
    if prefix.api_version < KIO_FROM:
        return _legacy_response(prefix, results)
    body = encode_produce_response(prefix.api_version, [
        (key, [PartitionAnswer(index, o.error, o.base_offset, o.log_start_offset, o.message,
                               o.log_append_time, o.record_errors)
               for index, o in outcomes])
        for key, outcomes in results])
    return encode_response(API_KEY, prefix.api_version, prefix.correlation_id, body)


# -- v0-2: message sets of magic 0 and 1 ----------------------------------------------------------

def _legacy_append(broker, topic, index: int, records: bytes | None,
                   transactional_id: str | None = None) -> _Outcome:
    """A Produce v0-2 partition: its message set up-converted into one magic-2 batch, then
    appended like any other. A magic-2 batch is taken as it is (Kafka 3.9 did not check the
    magic of v0-2's records either)."""
    if records and topic is not None and 0 <= index < len(topic.partitions) \
            and not topic.internal and magic_of(records) != batches.MAGIC:
        try:
            records = up_convert(records)
        except FormatError as exc:
            return _Outcome(exc.error, message=str(exc))
    return _append(broker, topic, index, records, transactional_id)


def _legacy_response(prefix: RequestPrefix, results) -> bytes:
    body = {"throttle_time": 0, "responses": [
        {"name": name, "partition_responses": [
            {"index": index, "error_code": o.error.value, "base_offset": o.base_offset,
             "log_append_time_ms": o.log_append_time} for index, o in outcomes]}
        for name, outcomes in results]}
    return classic.encode_response(API_KEY, prefix.api_version, prefix.correlation_id, body)


SPEC = ApiSpec(API_KEY, "Produce", 0, 13, handler=None, raw=answer,
               resources=(TOPICS, TRANSACTIONAL_ID))
