"""The flexible-version field encoding of the group coordinator's record values in
`__consumer_offsets` (the share and streams group records): an int16 value version, then compact
strings and arrays (length + 1 as an unsigned varint, 0 = null), uuids as 16 bytes, and a
tagged-field section after each struct. Each group type's records module adds its own
structs on top of these and names the error a bad value raises.
"""
from __future__ import annotations

import struct

from roster.protocol.varint import encode_unsigned, read_unsigned


class FlexibleWriter:
    __slots__ = ("out",)

    def __init__(self, version: int | None = 0) -> None:
        # None: a nested struct (no version of its own)
        self.out = bytearray() if version is None else bytearray(struct.pack(">h", version))

    def raw(self, fmt: str, v: int):
        self.out += struct.pack(fmt, v)
        return self

    def string(self, v: str | None):
        if v is None:
            self.out += b"\x00"
        else:
            data = v.encode()
            self.out += encode_unsigned(len(data) + 1) + data
        return self

    def count(self, n: int | None):
        """An array's count; None: a null array."""
        self.out += encode_unsigned(0 if n is None else n + 1)
        return self

    def no_tags(self):
        self.out += b"\x00"
        return self

    def tags(self, fields: list[tuple[int, bytes]]):
        self.out += encode_unsigned(len(fields))     # a plain count, not count + 1
        for tag, payload in sorted(fields):
            self.out += encode_unsigned(tag) + encode_unsigned(len(payload)) + payload
        return self


class FlexibleReader:
    """Raises `error` (the records module's own ValueError) for bytes that are not a value."""

    __slots__ = ("data", "at", "error")

    def __init__(self, data: bytes, error: type[ValueError], at: int = 0) -> None:
        self.data = data
        self.at = at
        self.error = error

    def raw(self, fmt: str) -> int:
        layout = struct.Struct(fmt)
        if self.at + layout.size > len(self.data):
            raise self.error("value ends inside a field")
        (v,) = layout.unpack_from(self.data, self.at)
        self.at += layout.size
        return v

    def unsigned(self) -> int:
        try:
            v, self.at = read_unsigned(self.data, self.at)
        except (IndexError, ValueError) as e:
            raise self.error(f"bad varint: {e}") from None
        return v

    def nullable_string(self) -> str | None:
        n = self.unsigned()
        if n == 0:
            return None
        end = self.at + n - 1
        if end > len(self.data):
            raise self.error("string runs past the end of the value")
        try:
            v = self.data[self.at:end].decode()
        except UnicodeDecodeError:
            raise self.error("string is not UTF-8") from None
        self.at = end
        return v

    def string(self) -> str:
        v = self.nullable_string()
        if v is None:
            raise self.error("null where a string is required")
        return v

    def count(self) -> int | None:
        """An array's count; None: a null array."""
        n = self.unsigned()
        if n - 1 > len(self.data) - self.at:
            raise self.error("array count past the end of the value")
        return None if n == 0 else n - 1

    def array(self) -> int:
        n = self.count()
        if n is None:
            raise self.error("null where an array is required")
        return n

    def uuid(self) -> bytes:
        if self.at + 16 > len(self.data):
            raise self.error("value ends inside a uuid")
        v = bytes(self.data[self.at:self.at + 16])
        self.at += 16
        return v

    def tags(self) -> dict[int, bytes]:
        fields = {}
        for _ in range(self.unsigned()):
            tag = self.unsigned()
            n = self.unsigned()
            if self.at + n > len(self.data):
                raise self.error("tagged field runs past the end of the value")
            fields[tag] = self.data[self.at:self.at + n]
            self.at += n
        return fields

    def ended(self, value):
        """`value`, once the whole of the bytes has been read."""
        if self.at != len(self.data):
            raise self.error(f"{len(self.data) - self.at} bytes after the value")
        return value
