"""ListTransactions' filters and DescribeTransactions' view of the coordinator
(roster.transactions.queries), as Kafka's TransactionStateManager applies them: every filter
must hold; unknown state names are reported, not refused; the duration keeps only
transactions open longer than it; the pattern must match the whole id; Dead ids are hidden."""
from __future__ import annotations

import pytest

from roster.transactions.queries import InvalidPattern, ListFilters, describe, select
from roster.transactions.state import TxnMetadata, TxnState

NOW = 1_000_000
TXNS = [
    TxnMetadata("orders-1", 10, 0, 60_000, TxnState.ONGOING, frozenset({("b", 1), ("a", 0),
                                                                        ("b", 0)}),
                start_ms=NOW - 5_000),
    TxnMetadata("orders-2", 11, 3, 60_000, TxnState.COMPLETE_COMMIT),
    TxnMetadata("payments", 12, 1, 60_000, TxnState.ONGOING, frozenset({("p", 0)}),
                start_ms=NOW - 50),
    TxnMetadata("expiring", 13, 1, 60_000, TxnState.DEAD),
]


def ids(filters: ListFilters) -> list[str]:
    return [m.transactional_id for m in select(TXNS, filters, NOW).transactions]


def test_no_filter_lists_every_id_but_the_dead_one():
    assert ids(ListFilters()) == ["orders-1", "orders-2", "payments"]


def test_states_by_kafka_name_and_unknown_ones_reported():
    chosen = select(TXNS, ListFilters(states=frozenset({"Ongoing", "Bogus"})), NOW)
    assert [m.transactional_id for m in chosen.transactions] == ["orders-1", "payments"]
    assert chosen.unknown_states == ["Bogus"]
    assert ids(ListFilters(states=frozenset({"Bogus"}))) == []     # a filter that fits none


def test_producer_ids_duration_and_pattern_all_hold():
    assert ids(ListFilters(producer_ids=frozenset({11, 12, 99}))) == ["orders-2", "payments"]
    # longer than 1 s: orders-1 (5 s); an id with nothing open has start -1, so it passes
    assert ids(ListFilters(duration_ms=1_000)) == ["orders-1", "orders-2"]
    assert ids(ListFilters(duration_ms=5_000)) == ["orders-2"]     # strictly longer
    assert ids(ListFilters(pattern="orders-.")) == ["orders-1", "orders-2"]
    assert ids(ListFilters(pattern="orders")) == []                # the whole id must match
    assert ids(ListFilters(pattern="")) == ["orders-1", "orders-2", "payments"]
    assert ids(ListFilters(states=frozenset({"Ongoing"}), pattern="orders-.*",
                           duration_ms=1_000)) == ["orders-1"]


def test_a_pattern_that_is_no_regular_expression_is_refused():
    with pytest.raises(InvalidPattern,
                       match="is not a valid regular expression: missing closing \\)"):
        select(TXNS, ListFilters(pattern="orders-("), NOW)
    with pytest.raises(InvalidPattern):           # RE2, as Kafka's re2j: no backreferences
        select(TXNS, ListFilters(pattern=r"(o)\1"), NOW)


def test_a_pattern_that_backtracks_is_matched_in_linear_time():
    long_id = TxnMetadata("a" * 5000 + "!", 14, 0, 60_000)
    assert select([long_id], ListFilters(pattern="(a+)+$"), NOW).transactions == []


def test_describe_groups_partitions_by_topic_in_order():
    d = describe(TXNS[0])
    assert (d.state, d.producer_id, d.producer_epoch, d.timeout_ms, d.start_ms) == (
        "Ongoing", 10, 0, 60_000, NOW - 5_000)
    assert d.partitions == {"a": [0], "b": [0, 1]}
    assert describe(TXNS[1]).state == "CompleteCommit" and describe(TXNS[1]).start_ms == -1
