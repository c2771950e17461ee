"""`roster groups history GROUP --since WHEN` against a real broker: reading starts at the offset
ListOffsets gives for that time (not at offset 0), shows only what was recorded since, and
--follow carries on from there. The events are real: each "deleted" event comes from a
DeleteGroups of a group that exists because offsets were committed for it."""
from __future__ import annotations

import datetime
import subprocess
import sys

import pytest

from roster.admin import groups as group_admin
from roster.admin import offsets as offset_admin
from roster.admin.client import AdminClient
from roster.protocol.partitioning import partition_for
from roster.observability import events as ev
from roster.observability import history
from roster.observability.event_log import EVENTS_TOPIC
from roster.protocol.api_keys import ApiKey
from tests.support import groups

pytestmark = [pytest.mark.interop, pytest.mark.xdist_group("group-history-since")]

GROUP = "since-group"


class FetchSpy(AdminClient):
    """An admin client that remembers the offset of every Fetch it sends."""

    def __init__(self, bootstrap: str) -> None:
        super().__init__(bootstrap)
        self.fetched_from: list[int] = []

    def call(self, api_key: int, **fields):
        if api_key == ApiKey.FETCH:
            self.fetched_from += [p.fetch_offset for t in fields["topics"]
                                  for p in t.partitions]
        return super().call(api_key, **fields)


def commit_offset(bootstrap: str) -> None:
    from confluent_kafka import Consumer, TopicPartition
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": GROUP})
    try:
        consumer.commit(offsets=[TopicPartition(GROUP, 0, 0)], asynchronous=False)
    finally:
        consumer.close()


def delete_once(bootstrap: str, client: AdminClient, deleted_before: int) -> ev.GroupEvent:
    """Commit an offset for GROUP (so it exists, Empty), delete it, and wait for its event."""
    commit_offset(bootstrap)
    group_admin.delete(client, [GROUP])
    for event in history.events(client, GROUP, follow=True, wait_ms=500, timeout_s=20):
        if event.kind == ev.DELETED:
            deleted_before -= 1
            if deleted_before < 0:
                return event
    raise AssertionError("the deletion was never recorded")


def cli(bootstrap: str, *args: str) -> str:
    return subprocess.run([sys.executable, "-m", "roster", "groups", "--bootstrap-server",
                           bootstrap, "history", GROUP, *args],
                          capture_output=True, text=True, timeout=30, check=True).stdout


def test_since_starts_at_the_offset_for_that_time(broker):
    groups.create_topic(broker.bootstrap, GROUP, 1)
    with AdminClient(broker.bootstrap) as client:
        first = delete_once(broker.bootstrap, client, 0)
        where = partition_for(GROUP, len(history._topic(client).partitions))
        second_at = offset_admin.log_offsets(client, {EVENTS_TOPIC: [where]},
                                             offset_admin.LATEST)[(EVENTS_TOPIC, where)]
        second = delete_once(broker.bootstrap, client, 1)
    assert second_at > 0 and second.at_ms > first.at_ms

    with FetchSpy(broker.bootstrap) as spy:
        assert list(history.events(spy, GROUP, since_ms=first.at_ms + 1)) == [second]
        assert spy.fetched_from[0] == second_at      # not offset 0: ListOffsets by time
        spy.fetched_from.clear()
        assert list(history.events(spy, GROUP)) == [first, second]   # None: everything kept
        assert spy.fetched_from[0] == 0
        # --follow starts at the same place and carries on
        following = history.events(spy, GROUP, since_ms=first.at_ms + 1, follow=True,
                                   wait_ms=500, timeout_s=20)
        assert next(following) == second

    # the command: a UTC time (ISO 8601, no zone) keeps the first deletion out; spans back
    # from now and 'all' show both; the default window (7 days) shows both
    since = datetime.datetime.fromtimestamp((first.at_ms + 1) / 1000, datetime.timezone.utc)
    out = cli(broker.bootstrap, "--since", since.replace(tzinfo=None).isoformat())
    assert out.count("  deleted    gen") == 1, out
    assert "0 generation(s), 0 rebalance(s) saved by static membership since" in out, out
    for args in ((), ("--since", "2h"), ("--since", "all")):
        out = cli(broker.bootstrap, *args)
        assert out.count("  deleted    gen") == 2, (args, out)
    out = cli(broker.bootstrap, "--since", "2099-01-01")
    assert "No recorded events for group since-group since 2099-01-01" in out, out
