"""RE2, the syntax Kafka reads the regular expressions clients send in (its RE2/J), matched in
linear time whatever a client sends: a consumer group's SubscribedTopicRegex (KIP-848) and
ListTransactions' transactional-id pattern (KIP-1152).

google-re2 is imported on the first such pattern, not at a broker's start: it brings the C++
runtime with it, about 2.5 MiB of an idle broker's RSS that only these requests need.

A pattern RE2 refuses is named in RE2/J's words, as Kafka's answers name it: google-re2 says
why in the C++ library's words ("missing ): (x"), whose kind maps onto RE2/J's description
("missing closing )"); the pairs were read beside Kafka 4.4 (the differential scenario
kip848_request_checks)."""
from __future__ import annotations

from functools import cache

# RE2's error text (the part before ": ") -> RE2/J's PatternSyntaxException description
RE2J_DESCRIPTIONS = {
    "missing )": "missing closing )",
    "missing ]": "missing closing ]",
    "unexpected )": "regexp/syntax: internal error",     # RE2/J's own words for a stray )
    "invalid perl operator": "invalid or unsupported Perl syntax",
    "invalid character class": "invalid character class",
    "invalid character class range": "invalid character class range",
    "bad repetition operator": "invalid nested repetition operator",
    "no argument for repetition operator": "missing argument to repetition operator",
    "invalid repetition size": "invalid repeat count",
    "trailing \\": "trailing backslash at end of expression",
    "invalid escape sequence": "invalid escape sequence",
    "invalid named capture group": "invalid named capture",
    "invalid UTF-8": "invalid UTF-8",
    "pattern too large - compile failed": "expression too large",
    "pattern too large - reverse compile failed": "expression too large",
}


class InvalidRegex(ValueError):
    """A pattern RE2 refuses; str() is why, in RE2/J's words."""


@cache
def engine():
    """The re2 module (google-re2), imported on the first call."""
    import re2
    return re2


@cache
def _quiet():
    options = engine().Options()
    options.log_errors = False     # a client's bad pattern is its answer, not a line on our stderr
    return options


def compiled(pattern: str):
    """The compiled pattern; InvalidRegex when RE2 refuses it."""
    re2 = engine()
    try:
        return re2.compile(pattern, _quiet())
    except re2.error as exc:
        raise InvalidRegex(_description(exc)) from None


def _description(exc: Exception) -> str:
    reason = exc.args[0] if exc.args else exc
    text = reason.decode(errors="replace") if isinstance(reason, bytes) else str(reason)
    kind = text.partition(": ")[0]
    return RE2J_DESCRIPTIONS.get(kind, text)
