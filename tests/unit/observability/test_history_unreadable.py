"""`roster groups history` skips a record of __roster_group_events it cannot read as an event
(a newer roster's field, a damaged value) instead of stopping with a traceback, as the
console's backfill does."""
from __future__ import annotations

from types import SimpleNamespace

from roster.client.records import OutgoingRecord, encode_batch
from roster.observability import history
from roster.observability.events import GENERATION, GroupEvent, Trigger

GOOD = GroupEvent("g", "classic", GENERATION, 3, Trigger("member_joined"), 2_000, 1_000)


def test_an_unreadable_record_is_skipped(monkeypatch):
    raw = encode_batch([
        OutgoingRecord(b"not json", b"g"),
        OutgoingRecord(b'{"group_id": "g", "future_field": 1}', b"g"),
        OutgoingRecord(None, b"g"),
        OutgoingRecord(GOOD.to_json(), b"g"),
    ], "none", 2_000)
    monkeypatch.setattr(history, "_topic", lambda client: SimpleNamespace(partitions=[0]))
    monkeypatch.setattr(history, "_offset_at",
                        lambda client, partition, timestamp: 4 if timestamp == history.LATEST
                        else 0)
    monkeypatch.setattr(history, "_fetch", lambda *args: (4, raw))
    assert list(history.events(None, "g", since_ms=None)) == [GOOD]
