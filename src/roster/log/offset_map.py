"""The cleaner's key -> newest offset map, of a fixed size (Kafka's SkimpyOffsetMap).

A compaction pass must remember, for every key of the dirty part of a log, the offset of its
newest record. Holding the keys themselves would make the cleaner's memory grow with the log, so,
as Kafka does, the map stores a hash of each key and an 8-byte offset in one preallocated table
of `log.cleaner.dedupe.buffer.size` bytes: 24 bytes per slot (Kafka: a 16-byte MD5 and the
offset), open addressing with double hashing. The hash is 96 bits: Python's own 64-bit hash of
the key (SipHash, keyed at random per process; the map lives only for one pass) and its CRC32,
both computed in C with no Python-level call in between, four times cheaper here than a digest
from hashlib, which matters because the cleaner hashes every record twice. It accepts new entries until `capacity` (slots x
`log.cleaner.io.buffer.load.factor`, 0.9 by default) are in use; the pass then stops mapping
where it got to and cleans only up to there, leaving the rest of the dirty records to the next
pass.

Two keys whose 96-bit hashes collide would be taken for one key (the older record would be
dropped): for a pass over 10 million keys the odds are about 1 in 10^15, the same negligible kind
of risk Kafka accepts with MD5.

The table lives in an anonymous mmap, so its pages cost nothing until touched, it is outside
the Python heap, and `close()` returns it to the system at once.
"""
from __future__ import annotations

import mmap
from zlib import crc32

SLOT_BYTES = 24          # the 64-bit hash, the CRC32 and the offset + 1 (0 marks an empty slot)
_UNSIGNED = (1 << 64) - 1


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
        # three arrays in the one mapping: hashes, CRCs (in 8-byte words, for alignment) and
        # offsets + 1, so a probe indexes each by the slot number alone
        whole = memoryview(self._mem)
        self._views = [whole[i * slots * 8:(i + 1) * slots * 8].cast("Q") for i in range(3)]
        self._whole = whole
        self._mask = slots - 1
        self.size = 0
        self.latest_offset = -1   # the last offset of the last batch the pass mapped

    @property
    def full(self) -> bool:
        return self.size >= self.capacity

    def put_all(self, keys: list[bytes], offsets: list[int]) -> int:
        """Map each key to its offset, in order, until the map holds `capacity` keys (checked
        before each put, as Kafka does); returns how many were put."""
        hashes, crcs, stored, mask = *self._views, self._mask
        size, capacity = self.size, self.capacity
        done = 0
        for key, offset in zip(keys, offsets):
            if size >= capacity:
                break
            first, second = hash(key) & _UNSIGNED, crc32(key)
            slot, step = first & mask, second | 1
            while True:
                if stored[slot] == 0:
                    hashes[slot] = first
                    crcs[slot] = second
                    stored[slot] = offset + 1
                    size += 1
                    break
                if hashes[slot] == first and crcs[slot] == second:
                    stored[slot] = offset + 1
                    break
                slot = (slot + step) & mask
            done += 1
        self.size = size
        return done

    def put(self, key: bytes, offset: int) -> None:
        if self.put_all([key], [offset]) == 0:
            raise OffsetMapFull()

    def get_all(self, keys: list[bytes]) -> list[int]:
        """The offset mapped to each key, or -1."""
        hashes, crcs, stored, mask = *self._views, self._mask
        out = []
        for key in keys:
            first, second = hash(key) & _UNSIGNED, crc32(key)
            slot, step = first & mask, second | 1
            while True:
                found = stored[slot]
                if found == 0 or (hashes[slot] == first and crcs[slot] == second):
                    out.append(found - 1)
                    break
                slot = (slot + step) & mask
        return out

    def get(self, key: bytes) -> int:
        return self.get_all([key])[0]

    def close(self) -> None:
        for view in self._views:
            view.release()
        self._whole.release()
        self._mem.close()
