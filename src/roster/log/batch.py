"""Magic-v2 record-batch headers: parse, check and re-stamp them without touching the records.

The broker never needs the records themselves to store or serve a batch, so everything here works
on the fixed 61-byte header with `struct` and does no per-record work. The one exception,
`first_record_at_or_after`, decodes records because timestamp lookups must name an exact record;
it leans on a maintained codec (roster.record_codec) for decompression and varint decoding.

Header layout (big-endian), offsets in bytes:
    0 baseOffset int64        8 batchLength int32 (bytes after this field)
   12 partitionLeaderEpoch int32                   16 magic int8 (= 2)
   17 crc uint32 (CRC32C of bytes 21..end)         21 attributes int16
   23 lastOffsetDelta int32  27 baseTimestamp int64  35 maxTimestamp int64
   43 producerId int64       51 producerEpoch int16  53 baseSequence int32  57 recordsCount int32
"""
from __future__ import annotations

import struct
from collections.abc import Iterator
from dataclasses import dataclass

from roster import record_codec   # loads the codec and crc32c on first use
from roster.log.api import CorruptBatch

BATCH_HEADER_SIZE = 61
MAGIC = 2
NO_TIMESTAMP = -1

# batchLength counts the bytes after itself, so a batch is this much longer than batchLength says.
LENGTH_FIELD_END = 12
# The CRC starts at the attributes, which is why the broker may rewrite baseOffset and
# partitionLeaderEpoch (bytes 0-8 and 12-16) without recomputing it.
CRC_COVERAGE_START = 21

COMPRESSION_MASK = 0x07
TIMESTAMP_TYPE_BIT = 0x08
TRANSACTIONAL_BIT = 0x10
CONTROL_BIT = 0x20

_HEADER = struct.Struct(">qiibIhiqqqhii")
_INT64 = struct.Struct(">q")
_INT32 = struct.Struct(">i")
_OFFSET_AND_LENGTH = struct.Struct(">qi")
_LAST_OFFSET_DELTA_AT = 23
assert _HEADER.size == BATCH_HEADER_SIZE


@dataclass(slots=True)
class BatchHeader:
    base_offset: int
    batch_length: int
    partition_leader_epoch: int
    magic: int
    crc: int
    attributes: int
    last_offset_delta: int
    base_timestamp: int
    max_timestamp: int
    producer_id: int
    producer_epoch: int
    base_sequence: int
    records_count: int

    @property
    def size(self) -> int:
        """Bytes the whole batch occupies, header included."""
        return LENGTH_FIELD_END + self.batch_length

    @property
    def last_offset(self) -> int:
        return self.base_offset + self.last_offset_delta

    @property
    def next_offset(self) -> int:
        return self.base_offset + self.last_offset_delta + 1

    @property
    def compression(self) -> int:
        """0 none, 1 gzip, 2 snappy, 3 lz4, 4 zstd."""
        return self.attributes & COMPRESSION_MASK

    @property
    def is_transactional(self) -> bool:
        return bool(self.attributes & TRANSACTIONAL_BIT)

    @property
    def is_control(self) -> bool:
        return bool(self.attributes & CONTROL_BIT)


def parse_header(buf, pos: int = 0) -> BatchHeader:
    """The header of the batch starting at `pos` in `buf` (bytes, bytearray or memoryview)."""
    if len(buf) - pos < BATCH_HEADER_SIZE:
        raise CorruptBatch(f"a batch header needs {BATCH_HEADER_SIZE} bytes, "
                           f"only {max(len(buf) - pos, 0)} are left")
    return BatchHeader(*_HEADER.unpack_from(buf, pos))


def batch_extent(buf, pos: int = 0) -> tuple[int, int]:
    """(size, next offset) of the batch at `pos`: all a walk over stored batches needs, read
    without building a BatchHeader. `buf` must hold at least BATCH_HEADER_SIZE bytes from `pos`."""
    base_offset, batch_length = _OFFSET_AND_LENGTH.unpack_from(buf, pos)
    (last_offset_delta,) = _INT32.unpack_from(buf, pos + _LAST_OFFSET_DELTA_AT)
    return LENGTH_FIELD_END + batch_length, base_offset + last_offset_delta + 1


def header_problem(header: BatchHeader) -> str | None:
    """Why this header cannot start a valid batch, or None. Checks the fields, not the CRC."""
    if header.magic != MAGIC:
        return f"magic is {header.magic}, only magic {MAGIC} batches are supported"
    if header.size < BATCH_HEADER_SIZE:
        return f"batchLength {header.batch_length} is shorter than the batch header"
    if header.records_count < 0:
        return f"recordsCount is negative ({header.records_count})"
    # lastOffsetDelta may exceed recordsCount - 1 once compaction has removed records, so only
    # its sign is checked: a negative delta would make offsets run backwards.
    if header.last_offset_delta < 0:
        return f"lastOffsetDelta is negative ({header.last_offset_delta})"
    return None


def computed_crc(batch, pos: int, header: BatchHeader) -> int:
    """CRC32C of the bytes the header's crc field covers, for the batch at `pos` in `batch`."""
    start = pos + CRC_COVERAGE_START
    return record_codec.crc32c(memoryview(batch)[start:pos + header.size])


def validate(batch) -> BatchHeader:
    """Check that `batch` is exactly one well-formed magic-v2 batch; return its header.

    Raises CorruptBatch naming the first problem found.
    """
    header = parse_header(batch)
    problem = header_problem(header)
    if problem is not None:
        raise CorruptBatch(problem)
    if header.size != len(batch):
        raise CorruptBatch(f"batchLength {header.batch_length} means a {header.size}-byte batch, "
                           f"but {len(batch)} bytes were given")
    actual = computed_crc(batch, 0, header)
    if actual != header.crc:
        raise CorruptBatch(f"CRC32C mismatch: the header says {header.crc:#010x}, "
                           f"the data gives {actual:#010x}")
    return header


def iter_batches(buf) -> Iterator[tuple[int, BatchHeader]]:
    """(position, header) of each complete batch in `buf`, back to back from position 0.

    Stops silently at a partial batch at the end, and at a batchLength too small to step over.
    Headers are not otherwise checked; use `validate` or `header_problem` for that.
    """
    pos = 0
    end = len(buf)
    while end - pos >= BATCH_HEADER_SIZE:
        header = BatchHeader(*_HEADER.unpack_from(buf, pos))
        size = header.size
        if size < BATCH_HEADER_SIZE or pos + size > end:
            return
        yield pos, header
        pos += size


def restamped(batch, base: int, leader_epoch: int = 0) -> tuple:
    """`batch` with baseOffset and partitionLeaderEpoch replaced, as four buffers to write back to
    back (the records are not copied); the CRC stays valid."""
    view = memoryview(batch)
    return _INT64.pack(base), view[8:12], _INT32.pack(leader_epoch), view[16:]


def set_base_offset(batch, base: int, leader_epoch: int = 0) -> bytes:
    """A copy of `batch` with baseOffset and partitionLeaderEpoch replaced; the CRC stays valid."""
    return b"".join(restamped(batch, base, leader_epoch))


def first_record_at_or_after(batch, timestamp: int) -> tuple[int, int] | None:
    """(offset, timestamp) of the first record in `batch` whose timestamp >= `timestamp`, or None.

    Offsets are absolute (baseOffset + offsetDelta). Decompresses the batch if needed.
    Raises CorruptBatch if the records cannot be decoded.
    """
    try:
        for record in record_codec.DefaultRecordBatch(batch):
            if record.timestamp >= timestamp:
                return record.offset, record.timestamp
    # The codecs underneath (zlib, lz4, zstandard, snappy) each raise their own exception types on
    # damaged input, so anything raised while decoding means "this batch cannot be read".
    except Exception as exc:  # noqa: BLE001
        raise CorruptBatch(f"cannot decode the records of the batch: {exc}") from exc
    return None
