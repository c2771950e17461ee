"""The consumer's positions and fetch buffer (roster.client.fetch_buffer), without a broker.

A model log per partition is cut into batches; a simulated Fetch returns whole batches from the
one holding the fetch offset (so the first may start before it), up to a byte-like budget of
records, as a broker does. The consumer's poll() loop is replayed on top: fetch every partition with
nothing buffered, then take().
"""
from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from roster.client.fetch_buffer import FetchBuffer
from roster.client.records import ConsumerRecord


def _log(draw, partition: int):
    """Offsets (strictly increasing, gaps like compaction leaves) cut into batches."""
    count = draw(st.integers(0, 60))
    gaps = draw(st.lists(st.integers(1, 3), min_size=count, max_size=count))
    offsets, at = [], draw(st.integers(0, 5))
    for gap in gaps:
        offsets.append(at)
        at += gap
    batches, i = [], 0
    while i < len(offsets):
        size = draw(st.integers(1, 7))
        batches.append(offsets[i:i + size])
        i += size
    return batches


@st.composite
def scenarios(draw):
    partitions = draw(st.integers(1, 4))
    logs = {("t", p): _log(draw, p) for p in range(partitions)}
    return {
        "logs": logs,
        "fetch_records": draw(st.integers(1, 40)),     # how much one Fetch may bring
        "max_records": draw(st.integers(1, 50)),
        "commit_every": draw(st.integers(1, 4)),       # polls between commits
        "rebalance_after_commit": draw(st.booleans()),  # revoke + re-seek at the commit
    }


def fetch(batches, offset, budget):
    """Whole batches from the one holding `offset` (the first always, as KIP-74 says)."""
    out, following = [], -1
    for batch in batches:
        if batch[-1] < offset:
            continue
        if out and len(out) + len(batch) > budget:
            break
        out.extend(batch)
        following = batch[-1] + 1
    return out, following


def record(tp, offset):
    return ConsumerRecord(tp[0], tp[1], offset, 0, None, str(offset).encode())


@settings(max_examples=400, deadline=None)
@given(scenarios())
def test_returned_records_are_exactly_the_log_and_commits_never_run_ahead(case):
    logs = case["logs"]
    owned = sorted(logs)
    buffer = FetchBuffer()
    start = {tp: (b[0][0] if b else 0) for tp, b in logs.items()}
    for tp in owned:
        buffer.seek(tp, start[tp])
    returned = {tp: [] for tp in owned}
    committed = dict(start)
    polls = 0
    while any(len(returned[tp]) < sum(map(len, logs[tp])) for tp in owned) or buffer.buffered():
        polls += 1
        assert polls < 10_000, "no progress"
        for tp in owned:
            if buffer.buffered(tp) == 0:
                state = buffer.state(tp)
                offsets, following = fetch(logs[tp], state.fetch_offset, case["fetch_records"])
                assert buffer.add(tp, state, state.fetch_offset,
                                  [record(tp, o) for o in offsets], following)
        got = buffer.take(case["max_records"], owned)
        assert len(got) <= case["max_records"]
        for r in got:
            returned[(r.topic, r.partition)].append(r.offset)
        positions = buffer.positions()
        for tp in owned:
            # a position is past every returned record and before every unreturned one
            done = returned[tp]
            assert positions[tp] >= (done[-1] + 1 if done else start[tp])
            unreturned = [o for b in logs[tp] for o in b if o not in set(done)]
            assert not unreturned or positions[tp] <= unreturned[0]
        if polls % case["commit_every"] == 0:
            committed = positions
            if case["rebalance_after_commit"]:   # a new owner starts from the commit
                for tp in owned:
                    buffer.drop(tp)
                    buffer.seek(tp, committed[tp])
    for tp in owned:
        assert returned[tp] == [o for b in logs[tp] for o in b]
        assert buffer.positions()[tp] >= committed[tp]


def test_an_answer_to_a_fetch_sent_before_a_revoke_or_seek_is_dropped():
    tp = ("t", 0)
    buffer = FetchBuffer()
    before = buffer.seek(tp, 10)
    buffer.drop(tp)
    again = buffer.seek(tp, 10)            # re-assigned while the Fetch was in flight
    assert not buffer.add(tp, before, 10, [record(tp, 10)], 11)
    assert buffer.add(tp, again, 10, [record(tp, 10)], 11)
    assert not buffer.add(tp, again, 10, [record(tp, 10)], 11)   # fetch offset moved on
    assert [r.offset for r in buffer.take(5, [tp])] == [10]


def test_control_batches_move_the_position_only_when_nothing_is_buffered_before_them():
    tp = ("t", 0)
    buffer = FetchBuffer()
    state = buffer.seek(tp, 0)
    buffer.add(tp, state, 0, [record(tp, 0), record(tp, 1)], 3)   # offset 2: a control batch
    assert buffer.positions() == {tp: 0}
    buffer.take(1, [tp])
    assert buffer.positions() == {tp: 1}
    buffer.take(1, [tp])
    assert buffer.positions() == {tp: 3}
    buffer.add(tp, state, 3, [], 5)                               # only control records
    assert buffer.positions() == {tp: 5}


def test_take_rotates_the_first_partition_so_none_starves():
    a, b = ("t", 0), ("t", 1)
    buffer = FetchBuffer()
    for tp in (a, b):
        state = buffer.seek(tp, 0)
        buffer.add(tp, state, 0, [record(tp, o) for o in range(10)], 10)
    first = {r.partition for r in buffer.take(3, [a, b])}
    second = {r.partition for r in buffer.take(3, [a, b])}
    assert first == {0} and second == {1}
