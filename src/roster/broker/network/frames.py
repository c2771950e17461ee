"""Where a connection's incoming bytes wait until they form whole frames.

An idle connection holds no buffer: a read lands in one scratch buffer shared by every
connection, the frames completed by it are served straight away, and only what is left over
(the start of a frame, or frames queued behind a request that waits) is copied to a buffer of
the connection's own, which is given back once emptied (to a few spares kept for reuse). With
thousands of connected members that is the difference between a few hundred bytes and a
quarter of a megabyte per connection.

A connection's own buffer grows with the bytes that have actually arrived, never with the size
a frame declares: room for the next read (as large as the last one) and, for a frame on its
way, at most twice what has arrived of it. A few bytes that announce a 100 MiB frame cost
about 16 KiB until the rest comes; a frame that does come in full is copied O(log n) times.

The sharing is safe because the event loop runs one callback at a time: a read into the
scratch buffer is followed at once by `buffer_updated`, which serves and then `settle()`s
before any other connection reads.
"""
from __future__ import annotations

from roster.protocol.framing import REQUEST_PREFIX, SIZE, check_size

SCRATCH_SIZE = 256 * 1024
MIN_READ = 16 * 1024  # never offer the kernel less room than this
_scratch = bytearray(SCRATCH_SIZE)
# Emptied private buffers, reused rather than allocating (and zeroing) new ones: a client that
# pipelines large requests leaves a partial frame after most reads.
_spares: list[bytearray] = []
MAX_SPARES = 8
MAX_SPARE_SIZE = 4 * 1024 * 1024
SPARE_FIT = 4  # a spare is reused for at most this many times the room asked for
# A frame up to this size is copied out by slicing (two copies, but a memoryview costs more
# than copying a small frame twice: most requests are a few dozen bytes); a larger one through
# a memoryview (one copy).
SMALL_FRAME = 16 * 1024


class FrameBuffer:
    __slots__ = ("_max_size", "_buffer", "_start", "_end", "_needed", "_last_read")

    def __init__(self, max_frame_size: int) -> None:
        self._max_size = max_frame_size
        self._buffer = _scratch
        self._start = 0  # first byte not yet served
        self._end = 0  # end of the bytes received
        self._needed = 0  # bytes the frame at _start needs in all (size prefix included)
        self._last_read = 0

    @property
    def max_size(self) -> int:
        """The largest frame accepted (a larger one's size prefix is refused)."""
        return self._max_size

    @max_size.setter
    def max_size(self, size: int) -> None:
        self._max_size = size

    @property
    def unserved(self) -> int:
        return self._end - self._start

    @property
    def committed(self) -> int:
        """Bytes this connection holds or has begun to receive: its unserved bytes, or the
        whole of the frame on its way when that is more (what queued.max.request.bytes counts).
        0 when it holds nothing."""
        held = self._end - self._start
        return self._needed if self._needed > held else held

    @property
    def capacity(self) -> int:
        """Bytes of memory this connection's own buffer takes (0 while it has none)."""
        return 0 if self._buffer is _scratch else len(self._buffer)

    def writable(self) -> memoryview:
        """Room for the next read: at least MIN_READ, and once frames before it are served,
        room for the whole frame at the start where it fits (so one read can finish it)."""
        if self._buffer is not _scratch:
            size = len(self._buffer)
            if size - self._end < MIN_READ or (
                    self._start and size - self._start < self._needed):
                self._make_room()
        return memoryview(self._buffer)[self._end:]

    def received(self, nbytes: int) -> None:
        self._end += nbytes
        self._last_read = nbytes

    def next_frame(self) -> bytes | None:
        """The next whole frame without its size prefix, or None until one is complete.
        MalformedRequest for a size that is negative or above the limit."""
        available = self._end - self._start
        if available < SIZE.size:
            return None
        (size,) = SIZE.unpack_from(self._buffer, self._start)
        if size < REQUEST_PREFIX.size or size > self._max_size:  # the call only when it raises
            check_size(size, self._max_size)
        self._needed = SIZE.size + size
        if available < self._needed:
            return None
        begin = self._start + SIZE.size
        if size <= SMALL_FRAME:
            frame = bytes(self._buffer[begin:begin + size])
        else:
            with memoryview(self._buffer) as view:
                frame = bytes(view[begin:begin + size])
        self._start += self._needed
        self._needed = 0
        return frame

    def settle(self) -> None:
        """After serving: move leftovers off the shared buffer; give back an emptied one."""
        if self._start == self._end:
            if self._buffer is not _scratch:
                _give_back(self._buffer)
                self._buffer = _scratch
            self._start = self._end = self._needed = 0
        elif self._buffer is _scratch:
            self._make_room()

    def discard(self) -> None:
        """The connection is gone: give its buffer back."""
        if self._buffer is not _scratch:
            _give_back(self._buffer)
        self._buffer = _scratch
        self._start = self._end = self._needed = 0

    def _make_room(self) -> None:
        """Move the unserved bytes to the front of a private buffer with room for at least
        MIN_READ more. A frame on its way gets more room as more of it arrives, doubling, but
        never more than it needs: the size it declares is only a promise. A buffer that must
        be (re)allocated also gets room for a read as large as the last one: a sender that
        filled the last read likely has more."""
        held = self._end - self._start
        least = held + MIN_READ
        if self._needed > held:
            least = max(least, min(self._needed + MIN_READ, 2 * held))
        current = self._buffer
        if current is _scratch or len(current) < least:
            fresh = _take(max(least, held + self._last_read))
            with memoryview(current) as view:
                fresh[:held] = view[self._start:self._end]
            if current is not _scratch:
                _give_back(current)
            self._buffer = fresh
        else:
            current[:held] = current[self._start:self._end]  # a copy first: the ranges overlap
        self._start, self._end = 0, held


def _take(size: int) -> bytearray:
    """The smallest spare that holds `size` bytes, unless it is many times that (a few bytes
    of a frame would keep a large spare from the sender of a large one), else a new buffer of
    exactly that size."""
    best = -1
    for i, spare in enumerate(_spares):
        if size <= len(spare) <= SPARE_FIT * size and (
                best < 0 or len(spare) < len(_spares[best])):
            best = i
    return _spares.pop(best) if best >= 0 else bytearray(size)


def _give_back(buffer: bytearray) -> None:
    if len(_spares) < MAX_SPARES and len(buffer) <= MAX_SPARE_SIZE:
        _spares.append(buffer)
