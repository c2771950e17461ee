"""RE2, the syntax Kafka reads the regular expressions clients send in (its RE2/J), matched in
linear time whatever a client sends: a consumer group's SubscribedTopicRegex (KIP-848) and
ListTransactions' transactional-id pattern (KIP-1152).

google-re2 is imported on the first such pattern, not at a broker's start: it brings the C++
runtime with it, about 2.5 MiB of an idle broker's RSS that only these requests need."""
from __future__ import annotations

from functools import cache


@cache
def engine():
    """The re2 module (google-re2), imported on the first call."""
    import re2
    return re2
