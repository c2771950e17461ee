"""Structure-aware mutations of an encoded request, driven by the spans fuzz.schema recorded.

Each mutation returns (new frame without its size prefix, a short description). One structural
mutation is applied per frame (after it the spans no longer describe the bytes), sometimes
followed by a blind one (bit flips, random bytes).
"""
from __future__ import annotations

import random
import struct

from fuzz.schema import Span, read_uvarint, uvarint

# Integer fields whose extremes reach an open finding that costs about a minute per hit:
# campaigns skip them unless asked not to (--heavy). None today: a huge partition count, the
# last one, is refused at once since roster measures new partitions against its open files.
KNOWN_HEAVY: tuple[str, ...] = ()

# Values that have broken decoders before: counts that allocate, lengths that overflow.
HUGE_LEGACY = (0x7FFFFFFF, 0x7FFFFFFE, 0x10000000, 0x00FFFFFF, 65536)
HUGE_UVARINT = (0xFFFFFFFF, 0x80000000, 0x7FFFFFFF, 0x10000001, 2**35, 2**63)
OVERLONG_UVARINTS = (b"\xff\xff\xff\xff\x0f", b"\xff\xff\xff\xff\xff\x01",
                     b"\x80\x80\x80\x80\x80\x80\x80\x80\x80\x01", b"\x81\x80\x80\x80\x00")


def _replace(frame: bytes, start: int, end: int, new: bytes) -> bytes:
    return frame[:start] + new + frame[end:]


def _encode_length(span: Span, value: int, rng: random.Random) -> bytes:
    """`value` as the span's own encoding (value is the logical length, -1 = null)."""
    if span.flexible:
        if value < -1:
            return rng.choice(OVERLONG_UVARINTS)
        return uvarint(value + 1)
    fmt = span.fmt or ">i"
    bits = 8 * struct.calcsize(fmt)
    lo, hi = -(1 << (bits - 1)), (1 << (bits - 1)) - 1
    return struct.pack(fmt, max(lo, min(hi, value)))


def _current_length(frame: bytes, span: Span) -> int:
    if span.flexible:
        value, _ = read_uvarint(frame, span.start)
        return value - 1
    return struct.unpack_from(span.fmt or ">i", frame, span.start)[0]


class Mutator:
    def __init__(self, rng: random.Random, avoid: tuple[str, ...] = ()) -> None:
        self.rng = rng
        # fields whose integers are not pushed to extremes (a known, open, expensive finding:
        # see KNOWN_HEAVY)
        self.avoid = avoid
        # set by the last mutate(): the result is still a request Kafka must answer (an unknown
        # tagged field, well formed, after the known ones: Kafka skips it)
        self.well_formed = False

    def mutate(self, frame: bytes, spans: list[Span], advertised: dict[int, tuple[int, int]]
               ) -> tuple[bytes, str]:
        rng = self.rng
        self.well_formed = False
        choices = [
            (self.huge_count, 4), (self.null_where_not_nullable, 3), (self.bad_length, 4),
            (self.unknown_tag, 4), (self.truncate, 3), (self.header, 2), (self.int_extreme, 3),
            (self.uuid_value, 1), (self.marker, 1), (self.trailing, 1), (self.blind, 2),
        ]
        funcs, weights = zip(*choices)
        for _ in range(8):
            func = rng.choices(funcs, weights)[0]
            out = func(frame, spans, advertised) if func == self.header \
                else func(frame, spans)
            if out is not None:
                mutated, what = out
                if rng.random() < 0.15 and func != self.blind:
                    mutated, extra = self.blind(mutated, spans)
                    what += " + " + extra
                    self.well_formed = False
                return mutated, what
        return self.blind(frame, spans)

    def _pick(self, spans: list[Span], *kinds: str) -> Span | None:
        candidates = [s for s in spans if s.kind in kinds]
        return self.rng.choice(candidates) if candidates else None

    # -- structural ---------------------------------------------------------------------------

    def huge_count(self, frame: bytes, spans: list[Span]):
        span = self._pick(spans, "count", "tags")
        if span is None:
            return None
        rng = self.rng
        if span.flexible:
            new = rng.choice((uvarint(rng.choice(HUGE_UVARINT)), rng.choice(OVERLONG_UVARINTS)))
        else:
            new = struct.pack(">i", rng.choice(HUGE_LEGACY))
        return _replace(frame, span.start, span.end, new), f"huge {span.kind} {span.path}={new.hex()}"

    def null_where_not_nullable(self, frame: bytes, spans: list[Span]):
        candidates = [s for s in spans if s.kind in ("count", "strlen", "byteslen")
                      and (not s.nullable or self.rng.random() < 0.2)]
        if not candidates:
            return None
        span = self.rng.choice(candidates)
        value = self.rng.choice((-1, -1, -1, -2))
        new = _encode_length(span, value, self.rng)
        # drop what the null replaced, so the rest of the frame stays well formed
        tail = span.data_end if self.rng.random() < 0.7 else span.end
        return (frame[:span.start] + new + frame[tail:],
                f"null {span.kind} {span.path} (nullable={span.nullable})")

    def bad_length(self, frame: bytes, spans: list[Span]):
        span = self._pick(spans, "strlen", "byteslen", "count")
        if span is None:
            return None
        rng = self.rng
        current = _current_length(frame, span)
        remaining = len(frame) - span.end
        value = rng.choice((remaining + 1, remaining + rng.randrange(1, 64), current + 1,
                            max(current - 1, 0), -rng.randrange(2, 40000), 0x7FFF, 0x7FFFFFFF))
        new = _encode_length(span, value, rng)
        return _replace(frame, span.start, span.end, new), f"length {span.kind} {span.path}={value}"

    def unknown_tag(self, frame: bytes, spans: list[Span]):
        span = self._pick(spans, "tags")
        if span is None:
            return None
        rng = self.rng
        count, after_count = read_uvarint(frame, span.start)
        highest = max(span.tags, default=-1)
        tag = rng.choice((highest + 1, highest + 2, highest + 50, 1000, 0x7FFFFFFF,
                          rng.randrange(64)))
        payload = rng.randbytes(rng.choice((0, 1, 3, 8, 40)))
        size = len(payload)
        variant = rng.choice(("plain", "plain", "plain", "size-past-end", "huge-size",
                              "duplicate", "count-only"))
        if variant == "size-past-end":
            size = len(payload) + len(frame) + rng.randrange(1, 10)
        elif variant == "huge-size":
            size = rng.choice(HUGE_UVARINT)
        elif variant == "duplicate" and span.tags:
            tag = rng.choice(span.tags)
        entry = uvarint(tag) + uvarint(size) + payload
        if variant == "count-only":
            entry = b""
        new_count = uvarint(count + 1)
        at_end = rng.random() < 0.7
        # well formed only where no enclosing size has to grow with it (not inside a tagged
        # field's value)
        if at_end and variant == "plain" and tag > highest and not span.in_tagged:
            self.well_formed = True
        if at_end:
            mutated = (frame[:span.start] + new_count + frame[after_count:span.data_end] + entry
                       + frame[span.data_end:])
        else:
            mutated = frame[:span.start] + new_count + entry + frame[after_count:]
        return mutated, f"unknown tag {tag} ({variant}) in {span.path}"

    def truncate(self, frame: bytes, spans: list[Span]):
        boundaries = sorted({b for s in spans for b in (s.start, s.end, s.data_end)
                             if 0 < b < len(frame)})
        if not boundaries:
            return None
        cut = self.rng.choice(boundaries)
        if self.rng.random() < 0.3:
            cut = min(len(frame) - 1, cut + self.rng.choice((1, 2)))  # inside a field
        return frame[:cut], f"truncated at {cut}/{len(frame)}"

    def header(self, frame: bytes, spans: list[Span], advertised: dict[int, tuple[int, int]]):
        rng = self.rng
        key, version = struct.unpack_from(">hh", frame, 0)
        variant = rng.choice(("version", "version", "key", "client-id", "unsupported"))
        if variant == "version":
            lo, hi = advertised.get(key, (0, 0))
            other = rng.choice([v for v in range(lo, hi + 1) if v != version] or [version + 1])
            return frame[:2] + struct.pack(">h", other) + frame[4:], f"header version {other}"
        if variant == "key":
            other = rng.choice(sorted(advertised))
            lo, hi = advertised[other]
            v = rng.randint(lo, hi)
            return struct.pack(">hh", other, v) + frame[4:], f"header api {other} v{v}"
        if variant == "unsupported":
            v = rng.choice((-1, -32768, 32767, advertised.get(key, (0, 0))[1] + 1))
            return frame[:2] + struct.pack(">h", v) + frame[4:], f"header version {v}"
        value = rng.choice((-1, -2, 0x7FFF, len(frame)))
        return (frame[:8] + struct.pack(">h", value) + frame[10:],
                f"header client_id length {value}")

    def int_extreme(self, frame: bytes, spans: list[Span]):
        span = self._pick(spans, "int")
        if span is None or span.path.startswith("header.request_api") \
                or span.path.rsplit(".", 1)[-1] in self.avoid:
            return None
        bits = 8 * struct.calcsize(span.fmt)
        signed = span.fmt[-1].islower()
        lo, hi = (-(1 << (bits - 1)), (1 << (bits - 1)) - 1) if signed else (0, (1 << bits) - 1)
        value = self.rng.choice((lo, hi, hi - 1, -1 if signed else 0, 0, 1, lo + 1))
        return (_replace(frame, span.start, span.end, struct.pack(span.fmt, value)),
                f"int {span.path}={value}")

    def uuid_value(self, frame: bytes, spans: list[Span]):
        span = self._pick(spans, "uuid")
        if span is None:
            return None
        new = self.rng.choice((bytes(16), b"\xff" * 16, self.rng.randbytes(16)))
        return _replace(frame, span.start, span.end, new), f"uuid {span.path}={new.hex()}"

    def marker(self, frame: bytes, spans: list[Span]):
        span = self._pick(spans, "marker")
        if span is None:
            return None
        value = self.rng.choice((-1, 0, 2, 127, -128))
        return _replace(frame, span.start, span.end, struct.pack(">b", value)), \
            f"marker {span.path}={value}"

    def trailing(self, frame: bytes, spans: list[Span]):
        return frame + self.rng.randbytes(self.rng.randrange(1, 20)), "trailing bytes"

    # -- blind ----------------------------------------------------------------------------------

    def blind(self, frame: bytes, spans: list[Span]):
        rng = self.rng
        data = bytearray(frame)
        variant = rng.choice(("flip", "flip", "bytes", "insert", "delete", "random"))
        if variant == "random" or not data:
            return rng.randbytes(rng.randrange(8, 200)), "random bytes"
        if variant == "flip":
            for _ in range(rng.randrange(1, 8)):
                i = rng.randrange(8, len(data)) if len(data) > 8 else rng.randrange(len(data))
                data[i] ^= 1 << rng.randrange(8)
            return bytes(data), "bit flips"
        i = rng.randrange(len(data))
        if variant == "bytes":
            n = rng.randrange(1, 8)
            data[i:i + n] = rng.randbytes(n)
        elif variant == "insert":
            data[i:i] = rng.randbytes(rng.randrange(1, 16))
        else:
            del data[i:i + rng.randrange(1, 16)]
        return bytes(data), f"blind {variant} at {i}"
