"""__transaction_state records and transaction markers in Kafka's byte layouts."""
from __future__ import annotations

import struct

import pytest

from roster.log import batch as batches
from roster.log.control import marker_batch, read_marker
from roster.record_codec import DefaultRecordBatchBuilder
from roster.transactions.log_records import (
    TxnRecord,
    TxnRecordError,
    decode,
    encode_key,
    encode_value,
)
from roster.transactions.state import TxnMetadata, TxnState


def test_value_round_trips_in_the_flexible_layout():
    m = TxnMetadata("tx-1", 4000, 7, 60_000, TxnState.ONGOING,
                    frozenset({("a", 0), ("a", 3), ("b", 1)}), 111, 222,
                    previous_producer_id=3999, client_transaction_version=1)
    key, value = TxnRecord("tx-1", m).encode()
    assert key == b"\x00\x00\x00\x04tx-1"
    assert value[:2] == b"\x00\x01"                         # version 1
    assert decode(key, value).metadata == m


def test_a_version_0_value_written_by_an_older_kafka_is_read():
    topic = b"orders"
    value = (struct.pack(">hqhib", 0, 12, 3, 30_000, TxnState.PREPARE_ABORT)
             + struct.pack(">i", 1) + struct.pack(">h", len(topic)) + topic
             + struct.pack(">ii", 1, 5) + struct.pack(">qq", 99, 42))
    m = decode(encode_key("old"), value).metadata
    assert (m.producer_id, m.producer_epoch, m.timeout_ms, m.state) == \
        (12, 3, 30_000, TxnState.PREPARE_ABORT)
    assert (m.partitions, m.last_update_ms, m.start_ms) == (frozenset({("orders", 5)}), 99, 42)


def test_tombstones_and_garbage():
    assert decode(encode_key("gone"), None).metadata is None
    with pytest.raises(TxnRecordError):
        decode(b"\x00\x05\x00\x01x", b"")
    with pytest.raises(TxnRecordError):
        decode(encode_key("t"), b"\x00\x01\x00")
    assert encode_value(TxnMetadata("t", 1, 0, 1000))[:2] == b"\x00\x01"


def test_a_marker_is_a_control_batch_of_the_producer():
    raw = marker_batch(producer_id=9, producer_epoch=4, commit=False, coordinator_epoch=2,
                       timestamp_ms=1_700_000_000_000)
    header = batches.validate(raw)
    assert (header.is_control, header.is_transactional, header.producer_id,
            header.producer_epoch, header.base_sequence, header.records_count) == \
        (True, True, 9, 4, -1, 1)
    assert batches.computed_crc(raw, 0, header) == header.crc
    marker = read_marker(raw)
    assert (marker.commit, marker.coordinator_epoch, marker.producer_id) == (False, 2, 9)
    assert read_marker(marker_batch(9, 4, True, 0, 0)).commit


def test_a_data_batch_is_no_marker():
    builder = DefaultRecordBatchBuilder(magic=2, compression_type=0, is_transactional=True,
                                        producer_id=1, producer_epoch=0, base_sequence=0,
                                        batch_size=1024)
    builder.append(0, timestamp=0, key=b"\x00\x00\x00\x01", value=b"x", headers=[])
    assert read_marker(bytes(builder.build())) is None
