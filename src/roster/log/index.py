"""Sparse per-segment indexes: in-memory lists for lookups, mirrored to a file for restarts.

Both indexes get at most one entry per index.interval.bytes of log data (plus one when a segment is
sealed), so holding them whole in memory is cheap and a lookup is a bisect. The files exist only so
that a clean restart need not re-read every segment; they are rebuilt from the log whenever they
are missing, malformed or possibly stale.

Offset index `<base>.index`, 8-byte entries: relative offset int32, file position int32 of the
batch whose *first* offset that is. A lookup gives a position at or before the wanted batch.

Time index `<base>.timeindex`, 12-byte entries: timestamp int64, relative offset int32. Each
entry is the largest batch maxTimestamp seen in the segment so far and the first batch that
reached it, written when that running maximum has grown since the previous entry. Timestamps
therefore strictly increase, and every batch before an entry's indexing point has
maxTimestamp <= the entry's timestamp, which is what lets a lookup skip ahead safely. When a
segment is sealed (rolled, or the log closed) a last entry records the segment's maximum, so a
clean load knows it without reading the segment.

Why a time index file rather than a per-segment maximum rebuilt on load: rebuilding means reading
every segment's headers at every start-up (a full pass over the data), and a maximum alone still
leaves offset_for_timestamp walking a whole segment (up to segment.bytes) per lookup. The file
costs one 12-byte write per index interval at most, and lookups start near the answer.
"""
from __future__ import annotations

import bisect
import logging
import os
import struct
from pathlib import Path

from roster.log.files import write_all

log = logging.getLogger("roster.log")

INT32_MAX = (1 << 31) - 1


class SparseIndex:
    """Entries of (key, value) pairs kept in two parallel lists, appended in key order."""

    ENTRY: struct.Struct

    def __init__(self, path: Path) -> None:
        self.path = path
        self.missing = not path.exists()  # a file load() finds missing has to be rebuilt
        self.fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
        self.keys: list[int] = []
        self.values: list[int] = []
        self._persisted = 0           # how many entries the file holds
        self._file_stale = False      # a failed truncate may have left extra entries in the file
        self.malformed = False        # the file could not be parsed as whole entries

    def load(self) -> None:
        """Read the entries from the file (self.malformed tells whether that worked)."""
        size = os.fstat(self.fd).st_size
        data = os.pread(self.fd, size, 0)
        entry = self.ENTRY
        if len(data) != size or size % entry.size:
            self.malformed = True
            return
        for key, value in entry.iter_unpack(data):
            self.keys.append(key)
            self.values.append(value)
        self._persisted = len(self.keys)

    def __len__(self) -> int:
        return len(self.keys)

    def add(self, key: int, value: int) -> None:
        """Add an entry in memory; write_new_entries() puts it in the file."""
        self.keys.append(key)
        self.values.append(value)

    @property
    def unwritten(self) -> bool:
        """Whether the file lacks entries memory has (or may hold entries memory dropped)."""
        return self._file_stale or self._persisted < len(self.keys)

    def write_new_entries(self) -> None:
        """Append the entries the file does not have yet, in one write."""
        if self._file_stale:
            self.rewrite()
            return
        if self._persisted == len(self.keys):
            return
        pack = self.ENTRY.pack
        data = b"".join(pack(k, v) for k, v in zip(self.keys[self._persisted:],
                                                    self.values[self._persisted:]))
        os.lseek(self.fd, self._persisted * self.ENTRY.size, os.SEEK_SET)
        write_all(self.fd, data)
        self._persisted = len(self.keys)

    def truncate(self, count: int) -> None:
        """Forget every entry after the first `count`, in memory and in the file."""
        del self.keys[count:]
        del self.values[count:]
        if self._persisted > count:
            self._persisted = count
            try:
                os.ftruncate(self.fd, count * self.ENTRY.size)
            except OSError as exc:
                # Memory is right; the file is fixed by the next write (see write_new_entries).
                log.error("cannot truncate %s: %s", self.path, exc)
                self._file_stale = True

    def clear(self) -> None:
        """Forget all entries in memory, before rebuilding them; the file is replaced by rewrite()."""
        self.keys.clear()
        self.values.clear()
        self._file_stale = True

    def rewrite(self) -> None:
        """Replace the file's contents with the entries in memory."""
        os.ftruncate(self.fd, 0)
        self._persisted = 0
        self._file_stale = False
        self.malformed = self.missing = False
        self.write_new_entries()

    def close(self) -> None:
        os.close(self.fd)


class OffsetIndex(SparseIndex):
    """key = offset relative to the segment base, value = file position of that batch."""

    ENTRY = struct.Struct(">ii")

    def position_at_or_before(self, relative_offset: int) -> int:
        """File position of the last indexed batch starting at or before `relative_offset`."""
        i = bisect.bisect_right(self.keys, relative_offset) - 1
        return self.values[i] if i >= 0 else 0

    def problem(self, file_size: int, offset_limit: int | None) -> str | None:
        """Why these entries cannot belong to a segment of `file_size` bytes, or None."""
        keys, positions = self.keys, self.values
        if any(b <= a for a, b in zip(keys, keys[1:])):
            return "relative offsets do not increase"
        if any(b <= a for a, b in zip(positions, positions[1:])):
            return "positions do not increase"
        if keys and (keys[0] < 0 or (offset_limit is not None and keys[-1] >= offset_limit)):
            return "relative offsets fall outside the segment"
        if positions and (positions[0] < 0 or positions[-1] >= file_size):
            return "positions fall outside the segment file"
        return None


class TimeIndex(SparseIndex):
    """key = running maximum timestamp, value = relative offset of the batch that first reached it."""

    ENTRY = struct.Struct(">qi")

    @property
    def last_timestamp(self) -> int | None:
        return self.keys[-1] if self.keys else None

    def offset_before(self, timestamp: int) -> int:
        """Relative offset from which to scan for the first batch with maxTimestamp >= `timestamp`.

        That is the batch of the last entry whose timestamp is below `timestamp` (no batch before
        it can qualify), or 0 without one.
        """
        i = bisect.bisect_left(self.keys, timestamp) - 1
        return self.values[i] if i >= 0 else 0

    def problem(self, offset_limit: int | None) -> str | None:
        timestamps, offsets = self.keys, self.values
        if any(b <= a for a, b in zip(timestamps, timestamps[1:])):
            return "timestamps do not increase"
        if any(b < a for a, b in zip(offsets, offsets[1:])):
            return "relative offsets go backwards"
        if offsets and (offsets[0] < 0 or (offset_limit is not None and offsets[-1] >= offset_limit)):
            return "relative offsets fall outside the segment"
        return None
