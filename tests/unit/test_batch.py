import struct

import pytest
from kafka.record.default_records import DefaultRecordBatch

from roster.log.api import CorruptBatch
from roster.log.batch import (
    BATCH_HEADER_SIZE,
    batch_extent,
    computed_crc,
    first_record_at_or_after,
    iter_batches,
    parse_header,
    set_base_offset,
    validate,
)
from tests.unit.batches import CODECS, make_batch, restamp_crc, with_field


def test_header_fields_round_trip_through_struct():
    fields = (123456789012, 200, 7, 2, 0xDEADBEEF, 0x0013, 4, 1_700_000_000_000,
              1_700_000_000_050, 99, 3, 17, 5)
    buf = b"\x00" * 5 + struct.pack(">qiibIhiqqqhii", *fields) + b"\x00" * 3
    header = parse_header(buf, 5)
    assert (header.base_offset, header.batch_length, header.partition_leader_epoch, header.magic,
            header.crc, header.attributes, header.last_offset_delta, header.base_timestamp,
            header.max_timestamp, header.producer_id, header.producer_epoch,
            header.base_sequence, header.records_count) == fields
    assert header.size == 212
    assert header.last_offset == 123456789016 and header.next_offset == 123456789017
    assert header.compression == 3 and header.is_transactional and not header.is_control


def test_batch_extent_reads_size_and_next_offset_only():
    batch = set_base_offset(make_batch(4, value_size=30), 500)
    assert batch_extent(b"xx" + batch, 2) == (len(batch), 504)


def test_header_agrees_with_kafka_python():
    batch = make_batch(4, timestamps=[10, 40, 20, 30], compression="gzip")
    header = validate(batch)
    theirs = DefaultRecordBatch(batch)
    assert header.size == len(batch) == theirs.size_in_bytes
    assert header.records_count == theirs.records_count == 4
    assert header.last_offset_delta == theirs.last_offset_delta == 3
    assert header.base_timestamp == 10 and header.max_timestamp == 40
    assert header.crc == theirs.crc == computed_crc(batch, 0, header)
    assert header.compression == CODECS["gzip"]


def test_validate_rejects_a_crc_mismatch():
    batch = bytearray(make_batch(3))
    batch[-1] ^= 0xFF
    with pytest.raises(CorruptBatch, match="CRC32C mismatch"):
        validate(bytes(batch))


def test_validate_rejects_other_magic():
    with pytest.raises(CorruptBatch, match="magic is 1"):
        validate(with_field(make_batch(), "b", 16, 1, fix_crc=False))


@pytest.mark.parametrize("cut", [1, 10, 100])
def test_validate_rejects_a_truncated_batch(cut):
    batch = make_batch(3, value_size=50)
    with pytest.raises(CorruptBatch, match="batchLength"):
        validate(batch[:-cut])


def test_validate_rejects_trailing_bytes_and_a_short_header():
    batch = make_batch()
    with pytest.raises(CorruptBatch, match="bytes were given"):
        validate(batch + b"\x00")
    with pytest.raises(CorruptBatch, match="header needs 61 bytes"):
        validate(batch[:30])


def test_validate_rejects_negative_counts():
    with pytest.raises(CorruptBatch, match="recordsCount is negative"):
        validate(with_field(make_batch(), "i", 57, -1))
    with pytest.raises(CorruptBatch, match="lastOffsetDelta is negative"):
        validate(with_field(make_batch(), "i", 23, -2))


def test_validate_accepts_a_compacted_offset_range():
    # After compaction a batch keeps its offset range but holds fewer records.
    batch = with_field(make_batch(2), "i", 23, 9)
    assert validate(batch).last_offset_delta == 9


def test_set_base_offset_rewrites_only_offset_and_epoch():
    batch = make_batch(3)
    stamped = set_base_offset(batch, 1_000_000, leader_epoch=5)
    header = validate(stamped)  # the CRC does not cover the rewritten fields
    assert header.base_offset == 1_000_000 and header.partition_leader_epoch == 5
    assert stamped[8:12] == batch[8:12] and stamped[16:] == batch[16:]
    assert isinstance(stamped, bytes)


def test_iter_batches_stops_at_a_partial_tail():
    batches = [make_batch(n, value_size=20 * n) for n in (1, 3, 2)]
    buf = b"".join(batches)
    positions = [0, len(batches[0]), len(batches[0]) + len(batches[1])]
    assert [(p, h.records_count) for p, h in iter_batches(buf)] == list(zip(positions, (1, 3, 2)))
    assert [p for p, _ in iter_batches(buf[:-1])] == positions[:2]
    assert [p for p, _ in iter_batches(buf + buf[:BATCH_HEADER_SIZE])] == positions
    assert list(iter_batches(b"")) == []
    assert list(iter_batches(buf[:BATCH_HEADER_SIZE - 1])) == []


def test_iter_batches_cannot_step_over_a_too_small_length():
    broken = with_field(make_batch(), "i", 8, 3)  # batchLength 3: the batch would be 15 bytes
    assert len(list(iter_batches(make_batch() + broken + make_batch()))) == 1


@pytest.mark.parametrize("codec", list(CODECS))
def test_first_record_at_or_after_decodes_every_codec(codec):
    timestamps = [100, 300, 200, 400, 250]
    batch = set_base_offset(make_batch(5, timestamps=timestamps, compression=codec, value_size=200),
                            1000)
    assert parse_header(batch).compression == CODECS[codec]  # really compressed
    assert first_record_at_or_after(batch, 0) == (1000, 100)
    assert first_record_at_or_after(batch, 250) == (1001, 300)  # the first, not the closest
    assert first_record_at_or_after(batch, 301) == (1003, 400)
    assert first_record_at_or_after(batch, 400) == (1003, 400)
    assert first_record_at_or_after(batch, 401) is None


def test_first_record_at_or_after_reports_undecodable_records():
    batch = bytearray(make_batch(3, compression="gzip", value_size=200))
    batch[BATCH_HEADER_SIZE + 5:] = b"\x00" * (len(batch) - BATCH_HEADER_SIZE - 5)
    with pytest.raises(CorruptBatch, match="cannot decode"):
        first_record_at_or_after(restamp_crc(batch), 0)
