"""Record batches built with kafka-python's maintained codec, as a producer would send them."""
from __future__ import annotations

from kafka.record.default_records import DefaultRecordBatchBuilder


def build_batch(values: list[bytes], timestamp: int = 1_700_000_000_000,
                compression: int = 0) -> bytes:
    builder = DefaultRecordBatchBuilder(magic=2, compression_type=compression, is_transactional=False,
                                        producer_id=-1, producer_epoch=-1, base_sequence=-1,
                                        batch_size=1 << 30)
    for i, value in enumerate(values):
        builder.append(i, timestamp=timestamp + i, key=None, value=value, headers=[])
    return bytes(builder.build())
