"""The streaming reader's group session (roster.spark.group) against a real broker, without
Spark: what it commits when a partition comes back to it."""
from __future__ import annotations

import pytest

from roster.spark.group import GroupSession
from roster.spark.options import read_settings

pytestmark = [pytest.mark.spark, pytest.mark.xdist_group("spark")]


def test_a_regained_partition_does_not_commit_what_this_reader_did_before_losing_it(kafka):
    """The reader completed a batch to 100 on t-0, lost t-0 (no clean revocation, so nothing
    was committed), another member went on to 300, and t-0 came back at the group's 300. A stop
    before the next batch completes must not commit the old 100: that moves the group back and
    makes the next owner read 100..300 again."""
    kafka.create("regained", 1)
    settings = read_settings({"kafka.bootstrap.servers": kafka.bootstrap,
                              "subscribe": "regained", "group.id": "regained-group"},
                             streaming=True)
    tp = ("regained", 0)
    session = GroupSession(settings)
    try:
        session.join(["regained"])
        assert session.stable_snapshot(30) is not None
        session.started_at({tp: 0})
        session.completed({tp: 100})          # a batch read t-0 up to 100 ...
        # ... then t-0 was lost; its next owner read to 300 and committed (as this member
        # here, which is the same commit as far as the group's offsets go)
        session.run(session.member.commit({tp: 300}))
        session.started_at({tp: 300})          # t-0 is gained again, at the group's offset
    finally:
        session.close()                       # commits completed progress of owned partitions
    assert kafka.committed("regained-group", "regained", 1) == {0: 300}
