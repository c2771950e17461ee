"""What a scenario's outcome -- the Kafka column of docs/compatibility.md -- says, checked against
Kafka's own trace of the same run, so the prose cannot drift from what Kafka does: every error
code it names (an upper-case name of kio's ErrorCode, NONE included) was in an answer Kafka
gave, and every generation it names (a number after "generation", which only a broker hands
out) was in a generation field of an answer. Epochs are not checked by number: the KIP-848
ones are renumbered in the trace, and the -2, -1 and 0 the prose names are what clients send."""
from __future__ import annotations

import re

from kio.schema.errors import ErrorCode

_NAME = re.compile(r"\b[A-Z][A-Z0-9]*(?:_[A-Z0-9]+)*\b")
_GENERATION = re.compile(r"\bgenerations? (\d+)\b")


def stated_errors(outcome: str) -> list[str]:
    """The error codes the outcome names, in order, once each, as the trace spells them."""
    found = [word.lower() for word in _NAME.findall(outcome)]
    return list(dict.fromkeys(name for name in found if name in ErrorCode.__members__))


def stated_generations(outcome: str) -> list[int]:
    return list(dict.fromkeys(int(n) for n in _GENERATION.findall(outcome)))


def _walk(value, key: str, errors: set, generations: set) -> None:
    if isinstance(value, dict):
        for k, v in value.items():
            _walk(v, k, errors, generations)
    elif isinstance(value, list):
        for v in value:
            _walk(v, key, errors, generations)
    elif isinstance(value, str) and "error" in key:   # "errors", "error", "error_code"
        errors.add(value)
    elif isinstance(value, int) and not isinstance(value, bool) and "generation" in key:
        generations.add(value)


def unsupported(outcome: str, entries: list[dict]) -> list[str]:
    """What the outcome states that Kafka's trace does not show (empty: all of it shows)."""
    errors: set[str] = set()
    generations: set[int] = set()
    _walk(entries, "", errors, generations)
    missing = [f"error {name.upper()}" for name in stated_errors(outcome) if name not in errors]
    missing += [f"generation {n}" for n in stated_generations(outcome) if n not in generations]
    return missing
