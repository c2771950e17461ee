"""The order in which Kafka's Java collections hand names back, where Kafka's answers show it
and a client could see the difference.

Kafka keeps a share group member's subscribed topic names in a `java.util.HashSet`: it writes
the member record with the names sorted and rebuilds the member from that record, as
`new HashSet<>(names)`, so ShareGroupDescribe lists them in that set's iteration order, which
is neither sorted nor the order the member sent. The order follows from facts of the JDK's
HashSet (its HashMap): a set built from a list of n names has a table of the least power of
two ≥ max(int(n / 0.75) + 1, 16) buckets (n counts a repeated name each time); a name's bucket
is its String.hashCode() spread (h ^ h >>> 16) and masked to the table; iteration goes bucket
by bucket, and within a bucket in the order the names were first added."""
from __future__ import annotations

from collections.abc import Sequence

_INT = 1 << 32


def java_string_hash(text: str) -> int:
    """String.hashCode(): s[0]*31^(n-1) + ... + s[n-1] over the UTF-16 code units, as an
    unsigned 32-bit value."""
    h = 0
    units = text.encode("utf-16-be")
    for i in range(0, len(units), 2):
        h = (31 * h + (units[i] << 8 | units[i + 1])) % _INT
    return h


def _table_size(count: int) -> int:
    wanted = max(int(count / 0.75) + 1, 16)   # new HashSet<>(collection)'s initial capacity
    return 1 << (wanted - 1).bit_length()    # HashMap.tableSizeFor


def java_hash_set_order(names: Sequence[str]) -> tuple[str, ...]:
    """`new ArrayList<>(new HashSet<>(names))`: each name once, in the set's iteration order.
    The table is sized by the list's length, repeated names included."""
    first_seen = list(dict.fromkeys(names))
    mask = _table_size(len(names)) - 1

    def bucket(name: str) -> int:
        h = java_string_hash(name)
        return (h ^ (h >> 16)) & mask

    return tuple(sorted(first_seen, key=bucket))   # sorted is stable: first seen first
