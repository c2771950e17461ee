"""Which `__consumer_offsets` partition holds a group: abs(Java String.hashCode(id)) % N.

Java hashes UTF-16 code units with 32-bit wrap-around, and Kafka's Utils.abs maps
Integer.MIN_VALUE to 0. Matching it exactly keeps a group in the same partition as on Kafka,
so tools that read `__consumer_offsets` find it where they expect.
"""
from __future__ import annotations

INT_MIN = -2**31


def java_string_hash(text: str) -> int:
    h = 0
    units = text.encode("utf-16-be")
    for i in range(0, len(units), 2):
        h = (31 * h + ((units[i] << 8) | units[i + 1])) & 0xFFFFFFFF
    return h - 2**32 if h >= 2**31 else h


def partition_for(group_id: str, partitions: int) -> int:
    h = java_string_hash(group_id)
    return (0 if h == INT_MIN else abs(h)) % partitions
