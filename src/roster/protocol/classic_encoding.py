"""Kafka's classic (non-flexible) field encoding, for the byte layouts roster reads and writes by
hand: the consumer protocol's subscriptions and assignments, and __consumer_offsets records.

Strings are int16-length (-1 = null), bytes int32-length (-1 = null), arrays int32-count.
A reader raises the error type its caller names, so each format keeps its own exception.
"""
from __future__ import annotations

import struct

_INT8 = struct.Struct(">b")
_INT16 = struct.Struct(">h")
_INT32 = struct.Struct(">i")
_INT64 = struct.Struct(">q")


class ClassicWriter:
    __slots__ = ("out",)

    def __init__(self) -> None:
        self.out = bytearray()

    def int8(self, value: int) -> ClassicWriter:
        self.out += _INT8.pack(value)
        return self

    def int16(self, value: int) -> ClassicWriter:
        self.out += _INT16.pack(value)
        return self

    def int32(self, value: int) -> ClassicWriter:
        self.out += _INT32.pack(value)
        return self

    def int64(self, value: int) -> ClassicWriter:
        self.out += _INT64.pack(value)
        return self

    def string(self, value: str | None) -> ClassicWriter:
        if value is None:
            return self.int16(-1)
        encoded = value.encode()
        self.int16(len(encoded))
        self.out += encoded
        return self

    def bytes_(self, value: bytes | None) -> ClassicWriter:
        if value is None:
            return self.int32(-1)
        self.int32(len(value))
        self.out += value
        return self


class ClassicReader:
    __slots__ = ("_data", "_pos", "_error", "_text_errors")

    def __init__(self, data: bytes, error: type[ValueError], *, lenient_text: bool = False) -> None:
        self._data = data
        self._pos = 0
        self._error = error
        # Bytes a client made up (a subscription) are shown as best we can; our own records
        # must decode exactly.
        self._text_errors = "replace" if lenient_text else "strict"

    def _unpack(self, layout: struct.Struct) -> int:
        try:
            (value,) = layout.unpack_from(self._data, self._pos)
        except struct.error:
            raise self._error("ends early") from None
        self._pos += layout.size
        return value

    def at_end(self) -> bool:
        return self._pos >= len(self._data)

    def int8(self) -> int:
        return self._unpack(_INT8)

    def int16(self) -> int:
        return self._unpack(_INT16)

    def int32(self) -> int:
        return self._unpack(_INT32)

    def int64(self) -> int:
        return self._unpack(_INT64)

    def _take(self, size: int) -> bytes:
        if size < 0 or self._pos + size > len(self._data):
            raise self._error("ends early")
        chunk = bytes(self._data[self._pos:self._pos + size])
        self._pos += size
        return chunk

    def string(self) -> str | None:
        size = self.int16()
        if size < 0:
            return None
        try:
            return self._take(size).decode("utf-8", self._text_errors)
        except UnicodeDecodeError as exc:
            raise self._error(f"a string is not UTF-8: {exc}") from None

    def bytes_(self) -> bytes | None:
        size = self.int32()
        return None if size < 0 else self._take(size)

    def count(self) -> int:
        """An array's count, held to what the data could hold (an element is at least a byte)."""
        size = self.int32()
        if size < 0 or size > len(self._data) - self._pos:
            raise self._error(f"implausible array size {size}")
        return size
