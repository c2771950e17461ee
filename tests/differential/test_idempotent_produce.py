"""An idempotent producer's retried batch, Kafka beside roster: raw Produce requests with the
producer id and epoch InitProducerId handed out and fixed sequences, the same batch sent again
after the one that followed it, on a LogAppendTime topic and on a CreateTime topic. Kafka finds
the retry among the producer's last five batches (UnifiedLog.append, analyzeAndValidateProducerState)
and answers it from that BatchMetadata without writing it again."""
from __future__ import annotations

import time

from roster.protocol.api_keys import ApiKey
from roster.protocol.errors import ErrorCode
from roster.record_codec import DefaultRecordBatchBuilder
from tests.differential.harness import scenario

RETRIED = (ErrorCode.coordinator_load_in_progress, ErrorCode.coordinator_not_available,
           ErrorCode.not_coordinator)
TOPICS = {"append-time": {"message.timestamp.type": "LogAppendTime"},
          "create-time": {"message.timestamp.type": "CreateTime"}}


def idempotent_batch(producer: tuple[int, int], sequence: int, created: int, count: int) -> bytes:
    builder = DefaultRecordBatchBuilder(2, 0, 0, producer[0], producer[1], sequence, 1 << 20)
    for i in range(count):
        builder.append(i, created + i, b"k", b"v", [])
    return bytes(builder.build())


def produce(conn, topic: str, batch: bytes):
    """One partition's answer to a Produce v9 (acks=-1) of `batch`, into the trace whole."""
    answer = conn.call(ApiKey.PRODUCE, 9, keep=("responses",), acks=-1, timeout=10_000,
                       topic_data=[{"name": topic, "partition_data": [
                           {"index": 0, "records": batch}]}])
    return answer.responses[0].partition_responses[0]


def which_time(answered, created_max: int, first=None, clock=(0, 0)) -> str:
    """log_append_time as a relation a trace can compare (the clock's values differ): to the
    first answer's, to the batch's create times, to the clock around the request."""
    if answered is None:
        return "none (-1)"
    ms = round(answered.timestamp() * 1000)
    if first is not None and ms == round(first.timestamp() * 1000):
        return "the first answer's log_append_time"
    if ms == created_max:
        return "the batch's largest create time"
    if clock[0] <= ms <= clock[1]:
        return "the clock while the request was served"
    return "another time"


def now_ms() -> int:
    return int(time.time() * 1000)


def log_end(conn, topic: str, keep: tuple[str, ...] = ()):
    """ListOffsets' answer for partition 0's log end offset (timestamp -1: latest)."""
    return conn.call(ApiKey.LIST_OFFSETS, 7, keep=keep, replica_id=-1, isolation_level=0,
                     topics=[{"name": topic, "partitions": [
                         {"partition_index": 0, "timestamp": -1, "current_leader_epoch": -1}]}])


def ready(s, topic: str) -> None:
    """Kafka's partition leader comes up a moment after Metadata lists the topic: ListOffsets
    (untraced) answers once it has."""
    setup = s.conn("setup", traced=False)
    s.wait(lambda: log_end(setup, topic).topics[0].partitions[0].error_code == ErrorCode.none,
           f"{topic}'s leader")


def producer_id(s) -> tuple[int, int]:
    """An idempotent producer's id and epoch (InitProducerId without a transactional id),
    retried (untraced) while Kafka's producer id manager gets its first block."""
    setup = s.conn("setup", traced=False)
    answers = []
    s.wait(lambda: answers.append(setup.call(ApiKey.INIT_PRODUCER_ID, 4, transactional_id=None,
                                             transaction_timeout=60_000, producer_id=-1,
                                             producer_epoch=-1)) or
           answers[-1].error_code not in RETRIED, "InitProducerId")
    assert answers[-1].error_code == ErrorCode.none, answers[-1]
    return answers[-1].producer_id, answers[-1].producer_epoch


@scenario(outcome="""an idempotent producer's batch sent again (after the batch that followed
it) is answered from the original without being written again: its base offset and log start
offset, and as log_append_time the stored batch's maxTimestamp -- on a LogAppendTime topic the
first answer's log_append_time, on a CreateTime topic (whose first answer says -1) the batch's
largest create time; the log end offset counts each batch once""")
def test_idempotent_retry_answers(s):
    producer = producer_id(s)
    client = s.conn("producer")
    for kind, configs in TOPICS.items():
        topic = s.topic(kind, 1, configs)
        ready(s, topic)
        created = now_ms() - 60_000
        original = idempotent_batch(producer, 0, created, count=2)
        before = now_ms()
        first = produce(client, topic, original)
        s.note(f"{kind} first", log_append_time=which_time(
            first.log_append_time, created + 1, clock=(before, now_ms())))
        produce(client, topic, idempotent_batch(producer, 2, created + 2, count=1))
        retried = produce(client, topic, original)
        s.note(f"{kind} retry", base_offset=retried.base_offset,
               log_start_offset=retried.log_start_offset,
               log_append_time=which_time(retried.log_append_time, created + 1,
                                          first=first.log_append_time))
        log_end(client, topic, keep=("topics",))
