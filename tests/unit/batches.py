"""Building record batches for log tests, with kafka-python's producer-side codec."""
from __future__ import annotations

import struct
from collections.abc import Sequence

import crc32c
from kafka.record.default_records import DefaultRecordBatchBuilder

CODECS = {"none": 0, "gzip": 1, "snappy": 2, "lz4": 3, "zstd": 4}


def make_batch(count: int = 1, *, timestamp: int = 1_000, timestamps: Sequence[int] | None = None,
               value_size: int = 10, compression: str = "none", fill: bytes = b"v") -> bytes:
    """A magic-v2 batch of `count` records (base offset 0, as a producer sends it).

    Record i has timestamp `timestamps[i]`, or `timestamp + i` without that list. Values are
    `value_size` repetitions of `fill`, so they compress well when a codec is asked for.
    """
    if timestamps is None:
        timestamps = [timestamp + i for i in range(count)]
    assert len(timestamps) == count >= 1
    builder = DefaultRecordBatchBuilder(magic=2, compression_type=CODECS[compression],
                                        is_transactional=False, producer_id=-1,
                                        producer_epoch=-1, base_sequence=-1, batch_size=1 << 30)
    for i, ts in enumerate(timestamps):
        builder.append(i, timestamp=ts, key=f"k{i}".encode(), value=fill * value_size, headers=[])
    return bytes(builder.build())


def restamp_crc(batch: bytes | bytearray) -> bytes:
    """`batch` with its CRC recomputed, for tests that edit covered fields on purpose."""
    data = bytearray(batch)
    struct.pack_into(">I", data, 17, crc32c.crc32c(bytes(data[21:])))
    return bytes(data)


def with_field(batch: bytes, fmt: str, position: int, value: int, fix_crc: bool = True) -> bytes:
    """`batch` with the big-endian field `fmt` at `position` set to `value`."""
    data = bytearray(batch)
    struct.pack_into(">" + fmt, data, position, value)
    return restamp_crc(data) if fix_crc else bytes(data)
