"""The share group coordinator's heartbeat, one rule per scenario, on a manual clock: the join
and its target at once, Kafka 4.4's refusals in its order and words, epochs and fencing, the
group's size limit, leaving, session expiry, the effects asked of the share-partition state,
a failed write put back, and the records replayed into equal groups."""
from __future__ import annotations

from roster.coordinator.changes import revert
from roster.coordinator.consumer.model import DictTopicImage
from roster.coordinator.share import records as rec
from roster.coordinator.share.coordinator import (
    ShareCoordinator,
    ShareWritten,
    session_key,
    validate,
)
from roster.coordinator.share.effects import ShareGroupGone, ShareStateWanted
from roster.coordinator.share.messages import ShareConfig, ShareHeartbeat
from roster.coordinator.share.replay import replay
from roster.protocol.errors import ErrorCode

G = "shares"
A, B = b"a" * 16, b"b" * 16


class Driver:
    def __init__(self, config: ShareConfig | None = None, topics=None) -> None:
        self.image = DictTopicImage(topics or {"orders": (A, 3), "audit": (B, 2)})
        self.share = ShareCoordinator(config or ShareConfig(), topics=self.image)
        self.now = 1_000
        self.records: list = []
        self.timers: dict = {}
        self.effects: list = []

    def beat(self, member: str, epoch: int, topics=None, rack=None, fail_write=None,
             group=G):
        q = ShareHeartbeat(group, member, epoch, rack_id=rack,
                           subscribed_topic_names=topics, client_id="cli",
                           client_host="/127.0.0.1", token=member)
        return self.carry_out(self.share.heartbeat(q, self.image, self.now), fail_write)

    def join(self, member: str, topics=("orders",)):
        return self.beat(member, 0, topics)

    def carry_out(self, result, fail_write=None):
        self.last = result
        for timer in result.timers:
            if hasattr(timer, "event"):
                self.timers[timer.key] = (timer.deadline_ms, timer.event)
            else:
                self.timers.pop(timer.key, None)
        replies = list(result.replies)
        if fail_write is not None and result.records:
            revert(result.changes, self.now)
        else:
            self.records += result.records
            self.effects += result.effects
        for step in result.after_write:
            assert isinstance(step, ShareWritten)
            replies += self.share.write_completed(step, fail_write, self.now).replies
        return replies[0].body if replies else None

    def advance(self, ms: int) -> None:
        self.now += ms
        for key, (deadline, event) in sorted(self.timers.items(), key=lambda kv: kv[1][0]):
            if deadline <= self.now:
                del self.timers[key]
                self.carry_out(self.share.expire(event, self.now))

    @property
    def group(self):
        return self.share.groups[G]


def partitions(reply) -> dict:
    return {tid: list(ps) for tid, ps in reply.assignment}


def test_a_join_creates_the_group_and_takes_its_target_at_once():
    d = Driver()
    reply = d.join("m1")
    assert reply.error == ErrorCode.none and reply.member_id == "m1"
    assert reply.member_epoch == 1 and reply.heartbeat_interval_ms == 5_000
    assert partitions(reply) == {A: [0, 1, 2]}
    assert d.group.group_epoch == d.group.assignment_epoch == 1
    assert d.group.state == "Stable"
    # Kafka's records: the member, the epoch, the target, its epoch, (initialised), the current
    assert [r.key.type for r in d.records] == [rec.MEMBER_METADATA, rec.GROUP_METADATA,
                                               rec.TARGET_MEMBER, rec.TARGET_METADATA,
                                               rec.STATE_PARTITIONS, rec.CURRENT_ASSIGNMENT]
    # the share state of what it is given is asked for with the records
    assert d.effects == [ShareStateWanted(G, ((A, 0), (A, 1), (A, 2)))]


def test_a_second_member_splits_the_partitions_and_the_first_gets_the_rest_next_beat():
    d = Driver()
    d.join("m1")
    second = d.join("m2")
    assert second.member_epoch == 2
    mine = set(partitions(second)[A])
    assert len(mine) == 1
    first = d.beat("m1", 1)
    assert first.member_epoch == 2
    assert set(partitions(first)[A]) == {0, 1, 2} - mine
    # a steady heartbeat answers no assignment (unchanged)
    assert d.beat("m1", 2).assignment is None


def test_more_members_than_partitions_share_them():
    d = Driver(topics={"orders": (A, 2)})
    for m in ("m1", "m2", "m3", "m4", "m5"):
        d.join(m)
    target = d.group.target
    holders = {p: sum(p in t.get(A, ()) for t in target.values()) for p in (0, 1)}
    assert holders == {0: 3, 1: 3}          # ceil(5 / 2) members each
    assert sorted(len(t.get(A, ())) for t in target.values()) == [1, 1, 1, 1, 2]


def test_request_checks_in_kafkas_order_and_words():
    def check(**fields):
        q = ShareHeartbeat(**{"group_id": G, "member_id": "m", "member_epoch": 0,
                              "subscribed_topic_names": ("t",), **fields})
        return validate(q)
    assert check(member_id=" ") == (ErrorCode.invalid_request, "MemberId can't be empty.")
    assert check(group_id="") == (ErrorCode.invalid_request, "GroupId can't be empty.")
    assert check(rack_id=" ") == (ErrorCode.invalid_request, "RackId can't be empty.")
    assert check(subscribed_topic_names=None) == (
        ErrorCode.invalid_request, "SubscribedTopicNames must be set in first request.")
    assert check(subscribed_topic_names=()) == (
        ErrorCode.invalid_request, "SubscribedTopicNames must be set in first request.")
    assert check(member_epoch=-2) == (ErrorCode.invalid_request, "MemberEpoch is invalid.")
    assert check(member_epoch=5, subscribed_topic_names=None) is None


def test_unknown_groups_and_members_fenced_epochs():
    d = Driver()
    reply = d.beat("m1", 3)
    assert (reply.error, reply.error_message) == (ErrorCode.group_id_not_found,
                                                  f"Share group {G} not found.")
    assert reply.member_id is None
    reply = d.beat("m1", -1)
    assert (reply.error, reply.error_message) == (ErrorCode.group_id_not_found,
                                                  f"Group {G} not found.")
    d.join("m1")
    reply = d.beat("m9", 1)
    assert (reply.error, reply.error_message) == (
        ErrorCode.unknown_member_id, f"Member m9 is not a member of group {G}.")
    reply = d.beat("m1", 7)
    assert reply.error == ErrorCode.fenced_member_epoch
    assert reply.error_message.startswith(
        "The share group member has a greater member epoch (7) than the one known by the "
        "group coordinator (1).")
    d.join("m2")
    d.beat("m1", 1)                               # now at 2, previous epoch 1
    assert d.beat("m1", 1).error == ErrorCode.none    # its previous epoch is still taken
    reply = d.beat("m2", 0, ("orders",))          # a rejoin at 0 keeps the member
    assert reply.error == ErrorCode.none and reply.assignment is not None
    d.join("m3")
    assert d.beat("m1", 2).member_epoch == 3      # now at 3, previous epoch 2
    reply = d.beat("m1", 1)
    assert reply.error == ErrorCode.fenced_member_epoch
    assert "smaller member epoch (1)" in reply.error_message
    assert "does not match the previous member epoch (2)" in reply.error_message
    # nothing was written for a refusal
    assert d.last.records == []


def test_the_group_size_limit():
    d = Driver(ShareConfig(max_size=2))
    d.join("m1")
    d.join("m2")
    reply = d.join("m3")
    assert (reply.error, reply.error_message) == (
        ErrorCode.group_max_size_reached,
        "The share group has reached its maximum capacity of 2 members.")
    assert d.beat("m2", 0, ("orders",)).error == ErrorCode.none   # a member already in


def test_leaving_bumps_the_epoch_and_leaves_the_members_records_to_its_share_session():
    d = Driver()
    d.join("m1")
    d.join("m2")
    d.effects.clear()
    reply = d.beat("m2", -1)
    assert (reply.member_id, reply.member_epoch) == ("m2", -1)
    assert "m2" not in d.group.members and d.group.group_epoch == 3
    # as in Kafka 4.4, its acquired records are released when its share session ends (or their
    # locks expire), not by leaving the group: the edge is asked for nothing
    assert d.effects == []
    assert session_key(G, "m2") not in d.timers
    # the last member leaving moves the target epoch with the group's: an Empty group
    d.beat("m1", -1)
    assert d.group.state == "Empty" and d.group.assignment_epoch == d.group.group_epoch == 4


def test_a_session_expires_after_share_session_timeout():
    d = Driver(ShareConfig(session_timeout_ms=45_000))
    d.join("m1")
    d.join("m2")
    d.advance(30_000)
    d.beat("m1", 1)                       # m1 is heard from; m2 is not
    d.effects.clear()
    d.advance(15_000)
    assert set(d.group.members) == {"m1"}
    assert d.effects == []
    reply = d.beat("m1", 2)
    assert reply.member_epoch == 3 and partitions(reply) == {A: [0, 1, 2]}


def test_a_group_config_changes_the_session_and_heartbeat_live():
    overrides: dict = {}
    d = Driver(ShareConfig(group_overrides=overrides))
    overrides[G] = {"share.heartbeat.interval.ms": 7_000, "share.session.timeout.ms": 50_000}
    assert d.join("m1").heartbeat_interval_ms == 7_000
    assert d.timers[session_key(G, "m1")][0] == d.now + 50_000


def test_subscription_changes_and_new_partitions_bump_the_epoch():
    d = Driver()
    d.join("m1")
    reply = d.beat("m1", 1, ("orders", "audit"))
    assert reply.member_epoch == 2
    assert partitions(reply) == {A: [0, 1, 2], B: [0, 1]}
    d.image.topics["audit"] = (B, 3)         # a partition added
    reply = d.beat("m1", 2)
    assert reply.member_epoch == 3 and partitions(reply)[B] == [0, 1, 2]
    reply = d.beat("m1", 3, ("audit",))      # unsubscribed: its partitions go
    assert partitions(reply) == {B: [0, 1, 2]}


def test_a_topic_not_there_yet_is_assigned_once_it_exists():
    d = Driver()
    reply = d.join("m1", ("later",))
    assert reply.assignment == ()
    d.image.topics["later"] = (b"l" * 16, 1)
    reply = d.beat("m1", 1)
    assert partitions(reply) == {b"l" * 16: [0]}


def test_a_failed_write_puts_the_group_back_and_answers_the_error():
    d = Driver()
    d.join("m1")
    before = d.group.copy()
    reply = d.beat("m2", 0, ("orders",), fail_write=ErrorCode.not_coordinator)
    assert reply.error == ErrorCode.not_coordinator
    assert d.group == before
    # a new group whose first write fails is gone again
    reply = d.beat("x1", 0, ("orders",), fail_write=ErrorCode.not_coordinator, group="other")
    assert reply.error == ErrorCode.not_coordinator and "other" not in d.share.groups


def test_the_records_replay_into_equal_groups():
    d = Driver()
    for m in ("m1", "m2", "m3"):
        d.join(m)
    d.beat("m1", 1, ("orders", "audit"), rack="r1")
    d.beat("m2", -1)
    d.advance(60_000)
    d.join("m4")
    rebuilt: dict = {}
    for record in d.records:
        key, value = record.encode()
        replay(rebuilt, rec.decode(key, value))
    assert rebuilt == d.share.groups


def test_deleting_a_group():
    d = Driver()
    d.join("m1")
    assert d.share.validate_delete_group(G) == ErrorCode.non_empty_group
    d.beat("m1", -1)
    assert d.share.validate_delete_group(G) is None
    from roster.coordinator.results import Result
    result = Result()
    d.share.delete_group(G, d.now, result)
    assert G not in d.share.groups
    assert ShareGroupGone(G) in result.effects
    assert result.records[-1].key.type == rec.GROUP_METADATA and result.records[-1].value is None
    revert(result.changes, d.now)           # an unwritten deletion is undone
    assert G in d.share.groups


def test_offsets_of_a_share_group_are_refused_as_kafka_refuses_them():
    d = Driver()
    d.join("m1")
    assert d.share.validate_offset_fetch(G, None, -1) is None     # no offsets, no error
    assert d.share.validate_offset_delete(G) == ErrorCode.group_id_not_found
    assert d.share.validate_offset_commit(None, d.now, None) == ErrorCode.group_id_not_found
    assert d.share.is_member(G, "m1") and not d.share.is_member(G, "m2")
    assert [(o.group_id, o.group_type, o.protocol_type, o.state) for o in d.share.listed()] \
        == [(G, "share", "share", "Stable")]


def test_the_topics_hash_is_kept_until_the_catalog_says_it_changed():
    from roster.coordinator.consumer.model import VersionedTopicImage
    d = Driver()
    d.image = VersionedTopicImage({"orders": (A, 3)})
    d.share.topics = d.image
    d.join("m1")
    d.image.topics["orders"] = (A, 4)         # changed, but the catalog has not said so yet
    assert d.beat("m1", 1).member_epoch == 1
    d.image.changes += 1
    reply = d.beat("m1", 1)
    assert reply.member_epoch == 2 and partitions(reply) == {A: [0, 1, 2, 3]}


def test_a_deleted_topic_leaves_the_assignment_and_the_initialised_partitions():
    d = Driver()
    d.join("m1", ("orders", "audit"))
    assert set(d.group.initialized) == {A, B}
    del d.image.topics["audit"]
    reply = d.beat("m1", 1)
    assert reply.member_epoch == 2 and partitions(reply) == {A: [0, 1, 2]}
    assert set(d.group.initialized) == {A}


def test_the_console_view_names_topics_and_epochs():
    d = Driver()
    d.join("m1")
    view = d.share.console_view(G)
    assert (view.state, view.protocol, view.generation) == ("Stable", "share", 1)
    [member] = view.members
    assert (member.member_id, member.partitions, member.note) == (
        "m1", (("orders", (0, 1, 2)),), "epoch 1")
    assert d.share.console_view("none") is None
    assert d.share.describe_group(G).error_message == f"Group {G} is not a classic group."
