"""What the broker acknowledged survives kill -9; a torn tail is cut, never served."""
from __future__ import annotations

import threading

import pytest

from tests.interop.test_bad_input import _create
from tests.support import clients
from tests.support.wire import Wire

pytestmark = pytest.mark.interop


def _produce_until_killed(broker, topic: str, acked: list, enough_acks: threading.Event):
    """Produce acks=-1 in a loop; record every acknowledged (offset, value)."""
    from confluent_kafka import Producer
    producer = Producer({"bootstrap.servers": broker.bootstrap, "acks": "all", "linger.ms": 1,
                         "message.timeout.ms": 3000, "retries": 0})

    def delivered(err, msg):
        if err is None:
            acked.append((msg.offset(), msg.value()))
            if len(acked) >= 300:
                enough_acks.set()

    i = 0
    while broker.alive() and i < 100_000:
        producer.produce(topic, value=f"v{i}".encode(), partition=0, on_delivery=delivered)
        producer.poll(0)
        i += 1
        if i % 50 == 0:
            producer.flush(0.5)
    producer.flush(5)


def test_acknowledged_records_survive_kill_9(broker):
    with Wire(broker.bootstrap) as wire:
        assert _create(wire, "durable", 1).error_code == 0
    acked: list = []
    enough = threading.Event()
    producer = threading.Thread(target=_produce_until_killed, args=(broker, "durable", acked, enough))
    producer.start()
    assert enough.wait(60), "the producer never got 300 acknowledgements"
    broker.kill9()
    producer.join(30)
    broker.start()
    survivors = {r.offset: r.value for r in
                 clients.consume_kafka_python(broker.bootstrap, "durable", 1, len(acked))}
    missing = [(offset, value) for offset, value in acked if survivors.get(offset) != value]
    assert not missing, f"{len(missing)} acknowledged records lost, e.g. {missing[:3]}"


def test_torn_tail_is_truncated_not_served(broker):
    with Wire(broker.bootstrap) as wire:
        assert _create(wire, "torn", 1).error_code == 0
    records = clients.sample_records(20, 1, "torn")
    clients.produce_confluent(broker.bootstrap, "torn", records, "none")
    broker.kill9()
    segments = sorted((broker.data_dir / "torn-0").glob("*.log"))
    last = segments[-1]
    whole = last.read_bytes()
    # a batch header that promises more bytes than follow: what a crash mid-write leaves behind
    last.write_bytes(whole + whole[:40])
    broker.start()
    assert any("truncat" in line.lower() for line in broker.output), "\n".join(broker.output)
    seen = clients.consume_kafka_python(broker.bootstrap, "torn", 1, 20)
    assert [r.content() for r in seen] == [r.content() for r in records]
    offsets = clients.produce_confluent(broker.bootstrap, "torn", records[:1], "none")
    assert offsets == [20]


def _idempotent_batch(producer_id: int, epoch: int, sequence: int, values: list[bytes]) -> bytes:
    from kafka.record.default_records import DefaultRecordBatchBuilder
    builder = DefaultRecordBatchBuilder(magic=2, compression_type=0, is_transactional=False,
                                        producer_id=producer_id, producer_epoch=epoch,
                                        base_sequence=sequence, batch_size=1 << 20)
    for i, value in enumerate(values):
        builder.append(i, timestamp=1_000 + i, key=None, value=value, headers=[])
    return bytes(builder.build())


def test_an_idempotent_retry_after_kill_9_is_not_written_twice(broker):
    """A producer whose acknowledgement was lost in the crash retries the same batch after the
    restart: it is answered with the offset it already has, not appended again, and the next
    sequence after it is still checked."""
    import datetime

    from roster.protocol.errors import ErrorCode
    from tests.interop.test_bad_input import _produce
    with Wire(broker.bootstrap) as wire:
        assert _create(wire, "idem", 1).error_code == 0
        ids = wire.call(22, 4, transactional_id=None,
                        transaction_timeout=datetime.timedelta(seconds=60),
                        producer_id=-1, producer_epoch=-1)
        producer, epoch = ids.producer_id, ids.producer_epoch
        first = _idempotent_batch(producer, epoch, 0, [b"a", b"b"])
        second = _idempotent_batch(producer, epoch, 2, [b"c"])
        assert _produce(wire, "idem", 0, first).base_offset == 0
        assert _produce(wire, "idem", 0, second).base_offset == 2
    broker.kill9()
    broker.start()
    with Wire(broker.bootstrap) as wire:
        retried = _produce(wire, "idem", 0, second)
        assert (retried.error_code, retried.base_offset) == (ErrorCode.none, 2)
        gap = _produce(wire, "idem", 0, _idempotent_batch(producer, epoch, 9, [b"x"]))
        assert gap.error_code == ErrorCode.out_of_order_sequence_number
        following = _produce(wire, "idem", 0, _idempotent_batch(producer, epoch, 3, [b"d"]))
        assert (following.error_code, following.base_offset) == (ErrorCode.none, 3)
    values = [r.value for r in clients.consume_kafka_python(broker.bootstrap, "idem", 1, 4)]
    assert values == [b"a", b"b", b"c", b"d"]
