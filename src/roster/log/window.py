"""Read-ahead over a segment file, so walking many small batch headers costs one pread per window
rather than one per batch."""
from __future__ import annotations

import os

# Reads size their window from the read budget, within these bounds; recovery streams through a
# segment in windows of the larger size.
MIN_WINDOW = 64 * 1024
MAX_WINDOW = 8 * 1024 * 1024


class ReadWindow:
    """A span of a file read with one pread, re-read from a new position when a request leaves it."""

    __slots__ = ("_fd", "_end", "_size", "_buf", "_start")

    def __init__(self, fd: int, end: int, size: int) -> None:
        self._fd = fd
        self._end = end            # the file is treated as ending here
        self._size = size          # bytes to read ahead each time
        self._buf = b""
        self._start = 0            # file position of self._buf[0]

    def view(self, position: int, length: int) -> memoryview | None:
        """`length` bytes at `position`, or None if the file ends before them."""
        if position + length > self._end:
            return None
        offset = position - self._start
        if offset < 0 or offset + length > len(self._buf):
            want = max(length, min(self._size, self._end - position))
            self._buf = os.pread(self._fd, want, position)
            self._start = position
            offset = 0
            if len(self._buf) < length:
                return None
        return memoryview(self._buf)[offset:offset + length]
