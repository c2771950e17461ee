"""The record-batch codec for every place roster builds or decodes the records of a batch (the
log engine reads only batch headers itself): aiokafka's compiled one (5-20x faster than the
pure-Python codec of kafka-python it was forked from, same interface), or kafka-python's where
no aiokafka wheel exists. The legacy message-set classes (magic 0 and 1) come from the same
place; roster.broker.partitions.message_formats converts with them."""
from __future__ import annotations

try:
    from aiokafka.record.default_records import DefaultRecordBatch, DefaultRecordBatchBuilder
    from aiokafka.record.legacy_records import LegacyRecordBatchBuilder
    from aiokafka.record.memory_records import MemoryRecords
except ImportError:  # pragma: no cover - aiokafka ships wheels for the platforms we run on
    from kafka.record.default_records import DefaultRecordBatch, DefaultRecordBatchBuilder
    from kafka.record.legacy_records import LegacyRecordBatchBuilder
    from kafka.record.memory_records import MemoryRecords

__all__ = ["DefaultRecordBatch", "DefaultRecordBatchBuilder", "LegacyRecordBatchBuilder",
           "MemoryRecords"]
