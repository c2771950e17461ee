"""An idempotent producer's retry of a batch already in the log, through the real Produce handler
of a real broker (its files in tmp_path): answered as Kafka answers a duplicate (UnifiedLog.append
with the batch found in the producer's last five BatchMetadata), with the original's base offset
and, as log_append_time, the stored batch's maxTimestamp -- the append time under LogAppendTime,
the batch's largest create time under CreateTime (where the first answer says -1) -- and nothing
written twice; after a restart too, and with acks=-1 only once the original is durable."""
from __future__ import annotations

import asyncio
import datetime
import inspect

import pytest

from roster.broker.broker import Broker
from roster.broker.handlers import produce
from roster.config import BrokerConfig
from roster.protocol.api_keys import ApiKey
from roster.protocol.build import element, make
from roster.protocol.codec import decode_response, encode_request, request_schema
from roster.protocol.errors import ErrorCode
from roster.protocol.framing import read_prefix
from roster.record_codec import DefaultRecordBatchBuilder

VERSION = 9
PRODUCER_ID, EPOCH = 7, 0
CREATED = 1_700_000_000_000   # the records' create times: CREATED, CREATED + 1, ...
NONE = -1                     # log_append_time of a CreateTime answer


def idempotent_batch(sequence: int, count: int = 2) -> bytes:
    builder = DefaultRecordBatchBuilder(2, 0, 0, PRODUCER_ID, EPOCH, sequence, 1 << 20)
    for i in range(count):
        builder.append(i, CREATED + i, b"k", b"v", [])
    return bytes(builder.build())


def _request(topic: str, batch: bytes, acks: int) -> bytes:
    schema = request_schema(ApiKey.PRODUCE, VERSION)
    topic_entry = element(schema, "topic_data")
    partition_entry = element(topic_entry, "partition_data")
    body = make(schema, transactional_id=None, acks=acks,
                timeout=datetime.timedelta(seconds=10), topic_data=(make(
                    topic_entry, name=topic, partition_data=(
                        make(partition_entry, index=0, records=batch),)),))
    return encode_request(ApiKey.PRODUCE, VERSION, 1, "test", body)[4:]


async def serve(broker: Broker, topic: str, batch: bytes, acks: int = 1):
    """The partition's answer to a Produce of `batch`; log_append_time in ms (-1: none)."""
    frame = _request(topic, batch, acks)
    answer = produce.answer(broker, frame, read_prefix(frame), connection=None)
    if inspect.isawaitable(answer):
        answer = await answer
    body = decode_response(ApiKey.PRODUCE, VERSION, answer[4:])[1]
    (partition,) = body.responses[0].partition_responses
    stamp = partition.log_append_time
    return (partition.error_code, partition.base_offset,
            NONE if stamp is None else round(stamp.timestamp() * 1000),
            partition.log_start_offset)


class Running:
    """A broker on tmp_path, started and stopped inside one asyncio.run. Its periodic flush
    waits an hour: what is durable when is up to the requests."""

    def __init__(self, data_dir) -> None:
        self.data_dir = data_dir

    async def __aenter__(self) -> Broker:
        config = BrokerConfig.load(assignments=["log.flush.interval.ms=3600000"], environ={})
        self.broker = Broker(config, self.data_dir)
        self.broker.start()
        return self.broker

    async def __aexit__(self, *exc) -> None:
        await self.broker.stop()


def run(coroutine):
    return asyncio.run(coroutine)


TYPES = {"LogAppendTime": {"message.timestamp.type": "LogAppendTime"}, "CreateTime": {}}


@pytest.mark.parametrize("timestamp_type", TYPES)
def test_a_retry_is_answered_with_the_originals_offset_and_stored_timestamp(tmp_path,
                                                                            timestamp_type):
    async def scenario():
        async with Running(tmp_path) as broker:
            broker.topics.create("t", 1, TYPES[timestamp_type])
            before = produce.now_ms()
            first = await serve(broker, "t", idempotent_batch(0))
            after = produce.now_ms()
            following = await serve(broker, "t", idempotent_batch(2, count=1))
            retried = await serve(broker, "t", idempotent_batch(0))
            log_end = broker.topics.get("t").partitions[0].log_end_offset
            return (before, after), first, following, retried, log_end

    (before, after), first, following, retried, log_end = run(scenario())
    error, base_offset, stamped, log_start = first
    assert (error, base_offset, log_start) == (ErrorCode.none, 0, 0)
    if timestamp_type == "LogAppendTime":
        assert before <= stamped <= after
        assert retried == first
    else:
        assert stamped == NONE
        # Kafka answers the duplicate's BatchMetadata timestamp: its maxTimestamp, a create time
        assert retried == (ErrorCode.none, 0, CREATED + 1, 0)
    assert following[:2] == (ErrorCode.none, 2)
    assert log_end == 3   # the retry was not written again


def test_a_retry_after_a_restart_is_answered_with_the_stored_log_append_time(tmp_path):
    async def before_restart():
        async with Running(tmp_path) as broker:
            broker.topics.create("t", 1, TYPES["LogAppendTime"])
            return await serve(broker, "t", idempotent_batch(0))

    async def after_restart():
        async with Running(tmp_path) as broker:
            return await serve(broker, "t", idempotent_batch(0)), \
                broker.topics.get("t").partitions[0].log_end_offset

    first = run(before_restart())
    retried, log_end = run(after_restart())
    assert first[2] != NONE
    assert retried == first
    assert log_end == 2


def test_an_acks_all_retry_is_answered_once_the_original_is_durable(tmp_path):
    async def scenario():
        async with Running(tmp_path) as broker:
            broker.topics.create("t", 1, TYPES["LogAppendTime"])
            partition = broker.topics.get("t").partitions[0]
            first = await serve(broker, "t", idempotent_batch(0), acks=1)
            unflushed = partition.prepare_flush() is not None
            retried = await serve(broker, "t", idempotent_batch(0), acks=-1)
            return first, unflushed, retried, partition.prepare_flush()

    first, unflushed, retried, left_to_flush = run(scenario())
    assert unflushed   # acks=1 answered before any fsync
    assert retried == first
    assert left_to_flush is None   # Kafka waits for the original's offsets as for any acks=all
