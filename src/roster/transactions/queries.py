"""What the admin APIs read of the transaction coordinator (DescribeTransactions, ListTransactions),
as Kafka's TransactionStateManager answers them; pure, over the coordinator's public reading
interface (`TransactionCoordinator.get` and iteration), so no admin code reads its private state.

- `describe(m)`: one transactional id's state, producer, timeout, start and partitions;
- `select(transactions, filters, now_ms)`: ListTransactions' filters, all of which must hold:
  states by Kafka's names (unknown names are reported back, not refused), producer ids,
  KIP-994's duration (only transactions running longer than it; the start time of an id with
  no open transaction is -1, so it always passes, as in Kafka) and the transactional-id pattern
  (KIP-1152, ListTransactions v2: RE2 syntax, as Kafka's re2j, and so matched in linear time
  whatever a client sends; the whole id must match, as re2j's matches() does).

`Dead` is never shown: it is an id being expired (Kafka hides it too).
"""
from __future__ import annotations

from collections.abc import Iterable

from roster.frozen import frozen
from roster.protocol import client_regex   # RE2, imported on the first pattern
from roster.transactions.state import TxnMetadata, TxnState

STATE_NAMES = {state.kafka_name: state for state in TxnState}


class InvalidPattern(ValueError):
    """The transactional-id pattern is no regular expression (INVALID_REGULAR_EXPRESSION)."""


@frozen
class ListFilters:
    states: frozenset[str] = frozenset()        # Kafka's state names; empty: any
    producer_ids: frozenset[int] = frozenset()  # empty: any
    duration_ms: int = -1                       # < 0: any
    pattern: str | None = None                  # None or empty: any


@frozen
class Selection:
    transactions: list[TxnMetadata]
    unknown_states: list[str]


@frozen
class Description:
    transactional_id: str
    state: str
    producer_id: int
    producer_epoch: int
    timeout_ms: int
    start_ms: int
    partitions: dict[str, list[int]]   # topic -> sorted partitions


def visible(m: TxnMetadata | None) -> bool:
    return m is not None and m.state is not TxnState.DEAD


def describe(m: TxnMetadata) -> Description:
    """`m` as DescribeTransactions shows it: the partitions of the open transaction (while
    Prepare*, those still waiting for their marker: roster keeps them all until Complete*)."""
    partitions: dict[str, list[int]] = {}
    for topic, partition in sorted(m.partitions):
        partitions.setdefault(topic, []).append(partition)
    return Description(m.transactional_id, m.state.kafka_name, m.producer_id, m.producer_epoch,
                       m.timeout_ms, m.start_ms, partitions)


def _compiled(pattern: str | None):
    if not pattern:
        return None
    try:
        return client_regex.compiled(pattern)
    except client_regex.InvalidRegex as why:
        raise InvalidPattern(f"Transaction ID pattern `{pattern}` is not a valid regular "
                             f"expression: {why}.") from None


def select(transactions: Iterable[TxnMetadata], filters: ListFilters, now_ms: int) -> Selection:
    """The transactions ListTransactions lists (before authorization). Raises InvalidPattern."""
    pattern = _compiled(filters.pattern)
    unknown = sorted(name for name in filters.states if name not in STATE_NAMES)
    states = {STATE_NAMES[name] for name in filters.states if name in STATE_NAMES}

    def wanted(m: TxnMetadata) -> bool:
        return (visible(m)
                and (not filters.producer_ids or m.producer_id in filters.producer_ids)
                and (not filters.states or m.state in states)
                and (filters.duration_ms < 0 or now_ms - m.start_ms > filters.duration_ms)
                and (pattern is None or pattern.fullmatch(m.transactional_id) is not None))

    chosen = sorted((m for m in transactions if wanted(m)), key=lambda m: m.transactional_id)
    return Selection(chosen, unknown)
