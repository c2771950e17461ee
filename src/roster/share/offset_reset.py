"""share.auto.offset.reset: where a share partition starts when it is initialised (KIP-932):
`latest` (Kafka's default: the partition's end offset then), `earliest` (its log start), or
`by_duration:<ISO-8601 duration>` (the first offset whose timestamp is at or after now minus the
duration, the end offset when there is none; Kafka's ShareGroupAutoOffsetResetStrategy, the
duration in Java's Duration.parse form: PnDTnHnMn.nS, days at most)."""
from __future__ import annotations

import re

from roster.frozen import frozen

_DURATION = re.compile(
    r"([-+]?)P(?:([-+]?[0-9]+)D)?"
    r"(T(?:([-+]?[0-9]+)H)?(?:([-+]?[0-9]+)M)?(?:([-+]?[0-9]+)(?:[.,]([0-9]{0,9}))?S)?)?",
    re.IGNORECASE)


@frozen
class OffsetReset:
    strategy: str               # "earliest" | "latest" | "by_duration"
    duration_ms: int = 0


LATEST = OffsetReset("latest")


def parse_duration_ms(text: str) -> int:
    """Java's Duration.parse, in ms; ValueError when it is not one, or negative."""
    match = _DURATION.fullmatch(text.strip())
    if match is None or match.group(3) == "T" or not any(
            match.group(i) for i in (2, 4, 5, 6)):
        raise ValueError(f"Unable to parse duration string: {text}")
    sign = -1 if match.group(1) == "-" else 1
    days, hours, minutes, seconds = (int(match.group(i) or 0) for i in (2, 4, 5, 6))
    fraction = (match.group(7) or "").ljust(9, "0")
    nanos = int(fraction) if match.group(7) else 0
    if seconds < 0 or (match.group(6) or "").startswith("-"):
        nanos = -nanos
    ms = sign * (((days * 24 + hours) * 60 + minutes) * 60_000 + seconds * 1000 + nanos // 1_000_000)
    if ms < 0:
        raise ValueError(f"Duration must be non-negative: {text}")
    return ms


def parse(value: str | None) -> OffsetReset:
    """A share.auto.offset.reset value; ValueError for anything else."""
    if value is None:
        return LATEST
    text = str(value).strip()
    lowered = text.lower()
    if lowered in ("earliest", "latest"):
        return OffsetReset(lowered)
    if lowered.startswith("by_duration:"):
        return OffsetReset("by_duration", parse_duration_ms(text[len("by_duration:"):]))
    raise ValueError(f"Invalid value {value} for configuration share.auto.offset.reset")
