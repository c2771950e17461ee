"""Which topics roster migrate never carries: those MirrorMaker 2's ReplicationPolicy calls
internal, and its heartbeats (whatever runs on the target makes its own)."""
import pytest

from roster.admin.migrate import never_carried


@pytest.mark.parametrize("name", ["__consumer_offsets", "__transaction_state", ".hidden",
                                  "mm2-offsets.roster.internal", "mm2-offsets-roster-internal",
                                  "roster.checkpoints.internal", "heartbeats"])
def test_internal_topics_are_never_carried(name):
    assert never_carried(name)


@pytest.mark.parametrize("name", ["orders", "orders_internal", "internal.orders",
                                  "my-heartbeats", "a_b"])
def test_other_topics_are_carried(name):
    assert not never_carried(name)
