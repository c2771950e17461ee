"""The record-batch codec for every place roster builds or decodes the records of a batch (the
log engine reads only batch headers itself): aiokafka's compiled one (5-20x faster than the
pure-Python codec of kafka-python it was forked from, same interface), or kafka-python's where
no aiokafka wheel exists. The legacy message-set classes (magic 0 and 1) come from the same
place; roster.broker.partitions.message_formats converts with them. `crc32c` is the checksum
of every batch (and of roster's own snapshot files), from the crc32c package.

Both are imported on first use, by this module's __getattr__ (PEP 562): importing aiokafka's
record package runs aiokafka's __init__, which imports its whole client (about a tenth of a
broker's imports), and crc32c's __init__ reads its own version through importlib.metadata
(email, zipfile, csv); a broker with an empty data directory answers its first requests
before it reads or writes a single batch. So the modules on a broker's start path name them
through this module when they run, `record_codec.DefaultRecordBatch(...)`, never with
`from roster.record_codec import ...` at their import (which would load them then)."""
from __future__ import annotations

__all__ = ["DefaultRecordBatch", "DefaultRecordBatchBuilder", "LegacyRecordBatchBuilder",
           "MemoryRecords", "crc32c"]


def _codec() -> dict:
    try:
        from aiokafka.record.default_records import DefaultRecordBatch, DefaultRecordBatchBuilder
        from aiokafka.record.legacy_records import LegacyRecordBatchBuilder
        from aiokafka.record.memory_records import MemoryRecords
    except ImportError:  # pragma: no cover - aiokafka ships wheels for the platforms we run on
        from kafka.record.default_records import DefaultRecordBatch, DefaultRecordBatchBuilder
        from kafka.record.legacy_records import LegacyRecordBatchBuilder
        from kafka.record.memory_records import MemoryRecords
    return {"DefaultRecordBatch": DefaultRecordBatch,
            "DefaultRecordBatchBuilder": DefaultRecordBatchBuilder,
            "LegacyRecordBatchBuilder": LegacyRecordBatchBuilder, "MemoryRecords": MemoryRecords}


def _checksum() -> dict:
    from crc32c import crc32c
    return {"crc32c": crc32c}


_LOADS = {"DefaultRecordBatch": _codec, "DefaultRecordBatchBuilder": _codec,
          "LegacyRecordBatchBuilder": _codec, "MemoryRecords": _codec, "crc32c": _checksum}


def __getattr__(name: str):
    """The first access to a name loads its group into this module's globals; later accesses
    find it there (a plain module attribute: this is not called again). Imports are
    thread-safe, so a thread racing the loop to the first batch gets the same objects."""
    load = _LOADS.get(name)
    if load is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    names = load()
    globals().update(names)
    return names[name]
