"""Control batches: the transaction markers (Kafka's EndTransactionMarker) as stored bytes.

A marker is a magic-v2 batch whose attributes carry the transactional and control bits, of the
producer whose transaction it ends (its id and epoch, base sequence -1), holding one record:
    key   = version int16 (0), type int16 (0 abort, 1 commit)
    value = version int16 (0), coordinator epoch int32
Consumers skip control batches; the read side (last stable offset, aborted transactions) reads
them with `read_marker`. The broker appends them in one place,
broker/transactions/transaction_markers.py.
"""
from __future__ import annotations

import struct

from roster import record_codec   # loads the codec and crc32c on first use
from roster.frozen import frozen
from roster.log.batch import CONTROL_BIT, CRC_COVERAGE_START, parse_header

ABORT, COMMIT = 0, 1
_KEY = struct.Struct(">hh")
_VALUE = struct.Struct(">hi")
_ATTRIBUTES_AT = 21
_CRC_AT = 17


@frozen
class Marker:
    producer_id: int
    producer_epoch: int
    commit: bool
    coordinator_epoch: int


def marker_batch(producer_id: int, producer_epoch: int, commit: bool, coordinator_epoch: int,
                 timestamp_ms: int) -> bytes:
    """The bytes of one marker batch (base offset 0: the log assigns it)."""
    builder = record_codec.DefaultRecordBatchBuilder(
        magic=2, compression_type=0, is_transactional=True, producer_id=producer_id,
        producer_epoch=producer_epoch, base_sequence=-1, batch_size=1 << 10)
    builder.append(0, timestamp=timestamp_ms, key=_KEY.pack(0, COMMIT if commit else ABORT),
                   value=_VALUE.pack(0, coordinator_epoch), headers=[])
    batch = bytearray(builder.build())
    attributes = struct.unpack_from(">h", batch, _ATTRIBUTES_AT)[0] | CONTROL_BIT
    struct.pack_into(">h", batch, _ATTRIBUTES_AT, attributes)
    struct.pack_into(">I", batch, _CRC_AT, record_codec.crc32c(bytes(batch[CRC_COVERAGE_START:])))
    return bytes(batch)


def marker_commit(key: bytes | None) -> bool | None:
    """A control record's key: True for a commit marker, False for an abort, None for any other
    control record (e.g. KRaft's)."""
    if key is None or len(key) < _KEY.size:
        return None
    _, kind = _KEY.unpack_from(key)
    return {COMMIT: True, ABORT: False}.get(kind)


def read_marker(batch: bytes) -> Marker | None:
    """The marker a stored batch carries, or None when it is not a transaction marker."""
    header = parse_header(batch)
    if not header.is_control:
        return None
    records = record_codec.MemoryRecords(batch).next_batch()
    for record in records:
        commit = marker_commit(record.key)
        if commit is None:
            return None
        _, coordinator_epoch = _VALUE.unpack_from(record.value or b"\0" * _VALUE.size)
        return Marker(header.producer_id, header.producer_epoch, commit, coordinator_epoch)
    return None
