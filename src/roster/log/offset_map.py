"""The cleaner's key -> newest offset map, of a fixed size (Kafka's SkimpyOffsetMap).

A compaction pass must remember, for every key of the dirty part of a log, the offset of its
newest record. Holding the keys themselves would make the cleaner's memory grow with the log, so,
as Kafka does, the map stores a 16-byte hash of each key (BLAKE2b here, MD5 in Kafka) and an
8-byte offset in one preallocated table of `log.cleaner.dedupe.buffer.size` bytes: 24 bytes per
slot, open addressing with double hashing. It accepts new entries until `capacity` (slots x
`log.cleaner.io.buffer.load.factor`, 0.9 by default) are in use; the pass then stops mapping
where it got to and cleans only up to there, leaving the rest of the dirty records to the next
pass.

Two keys whose 128-bit hashes collide would be taken for one key (the older record would be
dropped): the same negligible risk Kafka accepts.

The table lives in an anonymous mmap, so its pages cost nothing until touched, it is outside
the Python heap, and `close()` returns it to the system at once.
"""
from __future__ import annotations

import mmap
import struct
from hashlib import blake2b

SLOT_BYTES = 24          # two 64-bit hash halves and the offset + 1 (0 marks an empty slot)
_HALVES = struct.Struct("<QQ")


class OffsetMapFull(Exception):
    pass


class OffsetMap:
    def __init__(self, memory_bytes: int, load_factor: float = 0.9) -> None:
        slots = 1
        while slots * 2 * SLOT_BYTES <= memory_bytes:
            slots *= 2  # a power of two: the probe step (odd) then visits every slot
        self.slots = slots
        self.capacity = max(1, int(slots * load_factor))
        self.memory_bytes = slots * SLOT_BYTES
        self._mem = mmap.mmap(-1, self.memory_bytes)
        self._words = memoryview(self._mem).cast("Q")
        self._mask = slots - 1
        self.size = 0
        self.latest_offset = -1   # the last offset of the last batch the pass mapped

    @property
    def full(self) -> bool:
        return self.size >= self.capacity

    def put(self, key: bytes, offset: int) -> int:
        """Map `key` to `offset`; returns the offset it had, or -1. Raises OffsetMapFull when the
        map holds `capacity` keys already (checked before any put, as Kafka does)."""
        if self.size >= self.capacity:
            raise OffsetMapFull()
        first, second = _HALVES.unpack(blake2b(key, digest_size=16).digest())
        words, mask = self._words, self._mask
        slot, step = first & mask, second | 1
        while True:
            at = slot * 3
            stored = words[at + 2]
            if stored == 0:
                words[at] = first
                words[at + 1] = second
                words[at + 2] = offset + 1
                self.size += 1
                return -1
            if words[at] == first and words[at + 1] == second:
                words[at + 2] = offset + 1
                return stored - 1
            slot = (slot + step) & mask

    def get(self, key: bytes) -> int:
        """The offset mapped to `key`, or -1."""
        first, second = _HALVES.unpack(blake2b(key, digest_size=16).digest())
        words, mask = self._words, self._mask
        slot, step = first & mask, second | 1
        while True:
            at = slot * 3
            stored = words[at + 2]
            if stored == 0:
                return -1
            if words[at] == first and words[at + 1] == second:
                return stored - 1
            slot = (slot + step) & mask

    def close(self) -> None:
        self._words.release()
        self._mem.close()
