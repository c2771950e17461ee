"""Where roster differs from Apache Kafka on purpose, scenario by scenario (docs/compatibility.md
gives each reason). The harness asserts each listed difference shows exactly as listed -- the
Kafka value in Kafka's trace, the roster value in roster's -- and that nothing else differs."""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Listed:
    step: str      # the trace entry, e.g. "m1 JOIN_GROUP#2"
    field: str     # the entry's key that differs
    kafka: object
    roster: object
    reason: str


EXPECTED: dict[str, list[Listed]] = {
}
