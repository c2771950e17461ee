"""The record-batch codec for every place roster builds or reads record batches outside the log
engine: aiokafka's compiled one (5-20x faster than the pure-Python codec of kafka-python it was
forked from, same interface), or kafka-python's where no aiokafka wheel exists."""
from __future__ import annotations

try:
    from aiokafka.record.default_records import DefaultRecordBatchBuilder
    from aiokafka.record.memory_records import MemoryRecords
except ImportError:  # pragma: no cover - aiokafka ships wheels for the platforms we run on
    from kafka.record.default_records import DefaultRecordBatchBuilder
    from kafka.record.memory_records import MemoryRecords

__all__ = ["DefaultRecordBatchBuilder", "MemoryRecords"]
