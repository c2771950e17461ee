"""Where a new type of group (Kafka's streams or share groups) plugs in: it implements the small
interface of coordinator/group_type.py and is handed to the shard; nothing else changes. This
stub type holds groups made by a record of its own and lets only member "m" commit; the shard
routes to it, lists and describes its groups, keeps its offsets, deletes it with them and replays
its records. It mutates as every type does (coordinator/changes.py): a group being deleted is
marked at once, noted as a change the shard reverts if the write fails."""
from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple

from roster.coordinator.messages import GroupDescription, GroupOverview
from roster.coordinator.offset_store import OffsetExpiry
from roster.coordinator.results import Result
from roster.protocol.errors import ErrorCode
from roster.protocol.group_records import OffsetKey, Record
from tests.unit.coordinator.shard_harness import ShardDriver


@dataclass(frozen=True)
class StubKey:
    group: str


class Deleting(NamedTuple):
    """The stub's one change: a group marked as being deleted; undone, it is not."""

    deleting: set
    group_id: str

    def undo(self, now):
        self.deleting.discard(self.group_id)


class StubType:
    name = "stub"
    steps = ()

    def __init__(self) -> None:
        self.groups: dict[str, str] = {}    # group id -> its one member
        self.deleting: set[str] = set()     # its tombstone is being written

    def has_group(self, group_id):
        return group_id in self.groups

    def group_ids(self):
        return list(self.groups)

    def being_deleted(self, group_id):
        return group_id in self.deleting

    def is_empty(self, group_id):
        return False

    def subscribed_topics(self, group_id):
        return {"kept"}

    def validate_offset_commit(self, request, now, result):
        member = self.groups[request.group_id]
        return None if request.member_id == member else ErrorCode.unknown_member_id

    def validate_offset_fetch(self, group_id, member_id, epoch):
        return None

    def validate_offset_delete(self, group_id):
        return None

    def offset_expiry(self, group_id):
        return OffsetExpiry(kept=self.subscribed_topics(group_id))

    def goes_with_its_offsets(self, group_id):
        return False

    def validate_delete_group(self, group_id):
        return None

    def delete_group(self, group_id, now, result):
        tombstone = Record(StubKey(group_id), None)
        self.deleting.add(group_id)
        result.changes.append(Deleting(self.deleting, group_id))
        result.records.append(tombstone)
        return (tombstone,)    # replayed by the shard once written

    def own(self, record):
        return record if type(record.key) is StubKey else None

    def replay(self, record, now):
        if record.value is None:
            self.groups.pop(record.key.group, None)
            self.deleting.discard(record.key.group)
        else:
            self.groups[record.key.group] = record.value

    def groups_loaded(self, group_ids, now):
        return Result()

    def listed(self):
        return [GroupOverview(group_id, self.name, "stub-protocol", "Stable", 1, 1)
                for group_id in self.groups]

    def describe_group(self, group_id):
        return GroupDescription(group_id, ErrorCode.none, "Stable", "stub-protocol", "", ())


def test_a_stub_group_type_plugs_into_the_shard_and_nothing_else():
    stub = StubType()
    h = ShardDriver(more_types=(stub,))
    h.shard.replay(Record(StubKey("s"), "m"))          # the one replay switch routes it
    assert stub.groups == {"s": "m"} and "s" not in h.shard.classic.groups
    listed = h.shard.list_groups
    assert listed(None, None) == [("s", "stub-protocol", "Stable", "stub")]
    assert listed({"stable"}, {"stub"}) == listed(None, {"stub", "classic"}) == listed(None, None)
    assert listed({"empty"}, None) == listed(None, {"classic", "consumer"}) == []
    assert h.shard.overview() == [GroupOverview("s", "stub", "stub-protocol", "Stable", 1, 1)]
    assert h.shard.describe("s") == GroupDescription(
        "s", ErrorCode.none, "Stable", "stub-protocol", "", ())   # the type describes it
    assert h.commit({("t", 0): 7}, member_id="x", group="s").errors == \
        (("t", 0, ErrorCode.unknown_member_id),)       # the type decides who may commit
    assert h.commit({("t", 0): 7, ("kept", 0): 8}, member_id="m", group="s").errors == \
        (("t", 0, ErrorCode.none), ("kept", 0, ErrorCode.none))
    assert [f.offset for f in h.fetch([("t", 0)], group="s")] == [7]
    reply = h.delete_offsets([("t", 0), ("kept", 0)], group="s")
    assert reply.partitions == (("t", 0, ErrorCode.none),
                                ("kept", 0, ErrorCode.group_subscribed_to_topic))
    assert h.delete("s") == {"s": ErrorCode.none}
    assert stub.groups == {} and h.offsets("s") == {} and h.shard.describe("s") is None
    assert h.records[-2:] == [Record(OffsetKey("s", "kept", 0), None), Record(StubKey("s"), None)]


def test_a_stub_groups_deletion_whose_write_fails_is_reverted_by_the_shard():
    stub = StubType()
    h = ShardDriver(more_types=(stub,))
    h.shard.replay(Record(StubKey("s"), "m"))
    h.commit({("t", 0): 7}, member_id="m", group="s")
    h.hold_next_write = True
    token = h.token()
    h.apply(h.shard.delete_groups(["s"], h.now, token))
    assert stub.deleting == {"s"}                      # changed at once
    assert h.fetch([("t", 0)], group="s")[0].offset == -1   # not visible while it goes
    h.release_writes(ErrorCode.not_coordinator)
    assert h.reply(token) == {"s": ErrorCode.not_coordinator}
    assert stub.deleting == set() and stub.groups == {"s": "m"}   # put back
    assert [f.offset for f in h.fetch([("t", 0)], group="s")] == [7]


def test_a_stub_groups_offsets_age_as_the_type_says():
    stub = StubType()
    h = ShardDriver(more_types=(stub,))
    h.shard.replay(Record(StubKey("s"), "m"))
    h.commit({("t", 0): 7, ("kept", 0): 8}, member_id="m", group="s")
    h.now += h.config.offsets_retention_ms + 1
    h.apply(h.shard.expire_offsets(h.now))
    # the topic its members read is kept (OffsetExpiry.kept); the group stays (goes_with_its_offsets)
    assert set(h.offsets("s")) == {("kept", 0)} and stub.groups == {"s": "m"}

