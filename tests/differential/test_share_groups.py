"""Share groups (KIP-932) stories, Kafka beside roster, request by request: members joining and
leaving (ShareGroupHeartbeat v1, the assignment once the share partitions are initialised,
ShareGroupDescribe v1), and a share session fetching, releasing, accepting and rejecting records
(ShareFetch v1, ShareAcknowledge v1) with the group's offsets described after
(DescribeShareGroupOffsets v1); and what KIP-932 fixes: a record released to
share.delivery.count.limit is archived and, like a rejected one, written to the group's
dead-letter queue (KIP-1191) with its __dlq.errors.* headers; a dropped connection releases what
its session held (delivery count 2 for the next member); RENEW (ShareAcknowledge v2, KIP-1222)
keeps the lock; AlterShareGroupOffsets and DeleteShareGroupOffsets on an empty group. The waits
for a group's share partitions to be initialised are out of the trace (Kafka initialises them asynchronously; how many heartbeats that takes is
timing); what a member is told once they are, is in it."""
from __future__ import annotations

import base64
import datetime
import re
import uuid

from confluent_kafka import Consumer, Producer, TopicPartition

from roster.protocol.api_keys import ApiKey
from tests.differential.harness import scenario
from tests.support.share_judges import set_group_configs

# Epochs are left out: Kafka 4.4 bumps a share group's epoch for steps of its own (a new group's
# first member is at epoch 2, and initialising the share partitions moves it again); what a
# member can rely on -- it has an epoch, and everyone is at the group's once it is stable --
# is noted instead
HEARTBEAT = ("member_id", "heartbeat_interval", "assignment", "error_message")
ACCEPT, RELEASE, REJECT, RENEW = 1, 2, 3, 4


class ShareMember:
    """One share consumer's membership and share session, spoken over a raw socket."""

    def __init__(self, s, who: str, group: str, topic: str) -> None:
        self.s, self.who, self.group, self.topic = s, who, group, topic
        self.conn = s.conn(who)
        self.quiet = s.conn(who, traced=False)
        self.member_id = base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")
        self.epoch = 0
        self.session_epoch = 0
        self.topic_id = s.topic_id(topic)
        self.assigned: list[int] = []   # the last assignment a heartbeat answer carried

    def heartbeat(self, epoch: int | None = None, traced: bool = True):
        joining = self.epoch == 0 and epoch is None
        conn = self.conn if traced else self.quiet
        answer = conn.call(ApiKey.SHARE_GROUP_HEARTBEAT, 1, keep=HEARTBEAT if traced else (),
                           group_id=self.group, member_id=self.member_id,
                           member_epoch=self.epoch if epoch is None else epoch, rack_id=None,
                           subscribed_topic_names=[self.topic] if joining else None)
        if traced:
            self.s.note(f"{self.who} epoch", positive=answer.member_epoch > 0,
                        moved=answer.member_epoch != self.epoch)
        if int(answer.error_code) == 0 and epoch is None:
            self.epoch = answer.member_epoch
            if answer.assignment is not None:   # sent only when it changed
                self.assigned = sorted(p for t in answer.assignment.topic_partitions
                                       for p in t.partitions)
        return answer

    def wait_assigned(self, count: int) -> None:
        """Heartbeats out of the trace until the member holds `count` partitions."""
        self.s.wait(lambda: len(self.heartbeat(traced=False) and self.assigned) == count,
                    f"{self.who} assigned {count} share partitions")

    def leave(self):
        return self.conn.call(ApiKey.SHARE_GROUP_HEARTBEAT, 1, keep=HEARTBEAT, group_id=self.group,
                              member_id=self.member_id, member_epoch=-1, rack_id=None,
                              subscribed_topic_names=None)

    def fetch(self, acks: list[tuple[int, int, int]] = (), max_wait_ms: int = 5000,
              close: bool = False, label: str = "share fetch", epoch: int | None = None,
              member_id: str | None = None):
        """ShareFetch v1 of partition 0 (acknowledging `acks`: first, last, type), noted as what
        a client reads from it: errors, the acquired ranges with their delivery counts, the
        acquisition lock; the record bytes are left out (their timestamps differ). `epoch`
        and `member_id` override the session's (a request a broker must refuse)."""
        forced = epoch is not None or member_id is not None
        epoch = epoch if epoch is not None else -1 if close else self.session_epoch
        answer = self.conn.call(
            ApiKey.SHARE_FETCH, 1, group_id=self.group, member_id=member_id or self.member_id,
            share_session_epoch=epoch, max_wait=datetime.timedelta(milliseconds=max_wait_ms),
            min_bytes=1, max_bytes=1 << 20, max_records=500, batch_size=500,
            topics=[] if close else [{"topic_id": self.topic_id, "partitions": [{
                "partition_index": 0, "acknowledgement_batches": [
                    {"first_offset": f, "last_offset": t, "acknowledge_types": [k]}
                    for f, t, k in acks]}]}],
            forgotten_topics_data=[])
        if not forced and answer.error_code.name == "none":
            self.session_epoch = 0 if close else self.session_epoch + 1
        self._note(label, answer, with_lock=True)
        return answer

    def acknowledge(self, acks: list[tuple[int, int, int]], label: str = "share acknowledge",
                    epoch: int | None = None, renew: bool = False):
        """ShareAcknowledge v1, or v2 (KIP-1222) with `renew`: IsRenewAck set, as a client
        sends RENEW (type 4) acknowledgements."""
        forced = epoch is not None
        v2 = {"is_renew_ack": True} if renew else {}
        answer = self.conn.call(
            ApiKey.SHARE_ACKNOWLEDGE, 2 if renew else 1, **v2, group_id=self.group,
            member_id=self.member_id,
            share_session_epoch=self.session_epoch if epoch is None else epoch, topics=[{
                "topic_id": self.topic_id, "partitions": [{
                    "partition_index": 0, "acknowledgement_batches": [
                        {"first_offset": f, "last_offset": t, "acknowledge_types": [k]}
                        for f, t, k in acks]}]}])
        if not forced and answer.error_code.name == "none":
            self.session_epoch += 1
        self._note(label, answer, with_lock=False)
        return answer

    def _note(self, label: str, answer, with_lock: bool) -> None:
        seen = {"error": answer.error_code.name, "message": answer.error_message, "partitions": [
            {"partition": p.partition_index, "error": p.error_code.name,
             "message": p.error_message,
             "acknowledge_error": int(getattr(p, "acknowledge_error_code", p.error_code)),
             "acquired": [(a.first_offset, a.last_offset, a.delivery_count)
                          for a in getattr(p, "acquired_records", ())]}
            for t in answer.responses for p in t.partitions]}
        if with_lock or hasattr(answer, "acquisition_lock_timeout"):
            seen["lock_ms"] = int(answer.acquisition_lock_timeout.total_seconds() * 1000)
        self.s.note(f"{self.who} {label}", **seen)


def share_group(s, name: str = "g", configs: dict[str, str] | None = None) -> str:
    group = s.name(name)
    set_group_configs(s.bootstrap, group, {"share.auto.offset.reset": "earliest",
                                           **(configs or {})})
    return group


# Kafka 4.4 computes a share group's target assignment at most once per
# share.assignment.interval.ms (group.share.assignment.interval.ms, 1 s by default), so a member
# joining within a second of the last computation gets an empty assignment first; with 0 it gets
# its partitions in its first answer, as on roster (which computes the target at once whatever
# the setting says) -- the share counterpart of group.consumer.assignment.interval.ms=0 that the
# Kafka peer runs with. Seen: b's first answer empty on Kafka without it, [0] with it.
AT_ONCE = {"share.assignment.interval.ms": "0"}


def describe(s, group: str) -> None:
    answer = s.conn("admin").call(ApiKey.SHARE_GROUP_DESCRIBE, 1, group_ids=[group],
                                  include_authorized_operations=False)
    s.note("share group described", groups=[{
        "error": g.error_code.name, "state": g.group_state, "assignor": g.assignor_name,
        "assigned at the group epoch": g.assignment_epoch == g.group_epoch,
        "members": sorted((s.trace.member(m.member_id), m.client_id,
                           m.member_epoch == g.group_epoch,
                           list(m.subscribed_topic_names),   # Kafka's HashSet order
                           sum(len(t.partitions) for t in m.assignment.topic_partitions))
                          for m in g.members)} for g in answer.groups])


def offsets(s, group: str) -> None:
    answer = s.conn("admin").call(ApiKey.DESCRIBE_SHARE_GROUP_OFFSETS, 1, groups=[
        {"group_id": group, "topics": None}])
    s.note("share offsets", groups=[{
        "error": g.error_code.name, "topics": [[(p.partition_index, p.start_offset, p.lag,
                                                 p.error_code.name) for p in t.partitions]
                                               for t in g.topics]} for g in answer.groups])


@scenario(outcome="""a member joining a share group is told its member id and epoch at once and
is assigned every partition once the group's share partitions are initialised; a second member
takes one of two partitions from it (the share assignor balances while there are at least as
many partitions as members); ShareGroupDescribe shows both, Stable; the second leaving with
epoch -1 gives the first every partition back""")
def test_share_join_assign_leave(s):
    topic = s.topic("t", 2)
    group = share_group(s)
    a = ShareMember(s, "a", group, topic)
    b = ShareMember(s, "b", group, topic)
    a.heartbeat()
    a.wait_assigned(2)
    s.note("a's partitions", partitions=a.assigned)
    a.heartbeat()
    b.heartbeat()
    b.wait_assigned(1)
    a.wait_assigned(1)
    # which member keeps which partition is Kafka's hash-set order (either way round in runs)
    s.note("partitions", a=len(a.assigned), b=len(b.assigned),
           all_once=sorted(a.assigned + b.assigned) == [0, 1])
    a.heartbeat()
    b.heartbeat()
    describe(s, group)
    b.leave()
    a.wait_assigned(2)
    a.heartbeat()
    describe(s, group)


@scenario(outcome="""a share member's subscribed topic names (one sent twice) are described in
the order of a HashSet made from them sorted, neither sorted nor as sent: Kafka writes the
member record with the names sorted and rebuilds the member from it; the same names sent again
in another order are no subscription change: the member's epoch stays, the order too""")
def test_share_subscribed_names_order(s):
    group = share_group(s)
    names = [s.name(n) for n in ("orders", "payments", "clicks", "audit", "events", "logs",
                                 "metrics", "users", "carts", "refunds", "orders", "shipments")]
    member = ShareMember(s, "a", group, names[0])
    conn = member.conn

    def heartbeat(subscribed):
        answer = conn.call(ApiKey.SHARE_GROUP_HEARTBEAT, 1, keep=HEARTBEAT, group_id=group,
                           member_id=member.member_id, member_epoch=member.epoch,
                           rack_id=None, subscribed_topic_names=subscribed)
        s.note("epoch", positive=answer.member_epoch > 0,
               moved=answer.member_epoch != member.epoch)
        member.epoch = answer.member_epoch

    heartbeat(names)
    heartbeat(None)
    describe(s, group)
    heartbeat(sorted(set(names)))
    describe(s, group)


@scenario(outcome="""a share session's first fetch acquires every record of the partition with
delivery count 1 under the group's acquisition lock; a record released in the next fetch is
acquired again in that fetch with delivery count 2; ShareAcknowledge rejects it; a later fetch
acquires nothing, the session closes with epoch -1, and the group's share offsets are at the end
of the partition with no lag""")
def test_share_fetch_release_reject(s):
    topic = s.topic("t", 1)
    group = share_group(s)
    producer = Producer({"bootstrap.servers": s.bootstrap, "linger.ms": 0})
    for i in range(3):
        producer.produce(topic, value=f"v{i}".encode(), partition=0)
        producer.flush(10)   # three batches of one record each
    a = ShareMember(s, "a", group, topic)
    a.heartbeat()
    a.wait_assigned(1)
    a.fetch(label="first fetch")
    a.fetch(acks=[(0, 0, RELEASE), (1, 2, ACCEPT)], label="release 0, accept 1-2")
    a.acknowledge([(0, 0, REJECT)], label="reject 0")
    a.fetch(max_wait_ms=200, label="nothing left")
    a.fetch(close=True, label="close the session")
    a.leave()
    offsets(s, group)


@scenario(outcome="""share session refusals: ShareFetch at epoch 1 before a session exists is
SHARE_SESSION_NOT_FOUND; an opening fetch (epoch 0) carrying acknowledgements is INVALID_REQUEST;
a wrong epoch once it exists is INVALID_SHARE_SESSION_EPOCH; ShareAcknowledge of an offset past
what the member acquired is INVALID_REQUEST for the partition, "Batch record not found. The first
offset in request is past acquired records."; accepting an offset already accepted is NONE; the
session stays usable after each refusal. The group's offsets described after both records were
accepted: start offset 0, lag 0""")
def test_share_session_refusals(s):
    topic = s.topic("t", 1)
    group = share_group(s)
    producer = Producer({"bootstrap.servers": s.bootstrap, "linger.ms": 0})
    for i in range(2):
        producer.produce(topic, value=f"v{i}".encode(), partition=0)
    producer.flush(10)
    a = ShareMember(s, "a", group, topic)
    a.heartbeat()
    a.wait_assigned(1)
    a.fetch(epoch=1, max_wait_ms=100, label="no session yet, epoch 1")
    a.fetch(acks=[(0, 0, ACCEPT)], max_wait_ms=100, label="opening fetch with acknowledgements")
    a.fetch(label="opening fetch")
    a.fetch(epoch=7, max_wait_ms=100, label="wrong epoch")
    a.acknowledge([(9, 9, ACCEPT)], label="an offset it does not hold")
    a.acknowledge([(0, 1, ACCEPT)], label="accept both")
    a.acknowledge([(0, 0, ACCEPT)], label="accept one again")
    a.fetch(max_wait_ms=100, label="nothing left")
    a.fetch(close=True, label="close the session")
    a.leave()
    offsets(s, group)


# -- what KIP-932 fixes: the delivery limit, rejection, a dropped consumer, RENEW, the offsets APIs


def produce_one_by_one(s, topic: str, count: int) -> None:
    """`count` records in batches of one each (so every record's state is its own)."""
    producer = Producer({"bootstrap.servers": s.bootstrap, "linger.ms": 0})
    for i in range(count):
        producer.produce(topic, key=b"k%d" % i, value=f"v{i}".encode(), partition=0)
        producer.flush(10)


def dead_letter_topic(s, name: str = "dead") -> str:
    """A `dlq.`-prefixed topic (errors.deadletterqueue.topic.name.prefix) that accepts a share
    group's dead letters (errors.deadletterqueue.group.enable=true); set-up, out of the trace."""
    real = f"dlq.{s.name(name)}"
    admin = s.conn("setup", traced=False)
    answer = admin.call(ApiKey.CREATE_TOPICS, timeout=30000, topics=[{
        "name": real, "num_partitions": 1, "replication_factor": 1,
        "configs": [{"name": "errors.deadletterqueue.group.enable", "value": "true"}]}])
    assert int(answer.topics[0].error_code) == 0, answer
    s.wait(lambda: s.partitions(real) == 1, f"{real} has 1 partition")
    return real


def dead_letters(s, topic: str, count: int) -> None:
    """The DLQ topic's records (read from offset 0 by a plain consumer; the DLQ write follows
    the archival asynchronously on Kafka, so it is waited for), noted by source offset: key,
    value and the __dlq.errors.* headers."""
    consumer = Consumer({"bootstrap.servers": s.bootstrap, "group.id": s.name("dlq-reader"),
                         "enable.auto.commit": False})
    consumer.assign([TopicPartition(topic, 0, 0)])
    found = []
    try:
        def more() -> bool:
            message = consumer.poll(0.2)
            if message is not None and message.error() is None:
                found.append((message.key(), message.value(),
                              {k: v.decode() for k, v in message.headers() or []}))
            return len(found) >= count
        s.wait(more, f"{count} records on {topic}")
        extra = consumer.poll(0.5)   # and no more than that
    finally:
        consumer.close()
    s.note("dead letters", extra=extra is not None and extra.error() is None, records=sorted(
        ({"key": k, "value": v, "headers": h} for k, v, h in found),
        key=lambda r: int(r["headers"].get("__dlq.errors.offset", -1))))


@scenario(outcome="""with share.delivery.count.limit=2 and errors.deadletterqueue.topic.name set on
the group (a dlq. topic with errors.deadletterqueue.group.enable=true): three records acquired
with delivery count 1; record 0 released, 1 rejected, 2 accepted in the next fetch, which acquires
0 again with delivery count 2; released again, 0 is archived, not acquired again (the fetch after
acquires nothing); the group's offsets described after: start offset 0, lag 0. The DLQ topic holds
offset 0 with
__dlq.errors.delivery.count 2, "Offset delivery count exceeded the threshold." and offset 1 with
count 1, "Offset rejected by client.", each with __dlq.errors.topic, partition, offset and group,
key and value null""")
def test_share_delivery_limit_and_dead_letters(s):
    topic = s.topic("t", 1)
    dlq = dead_letter_topic(s)
    group = share_group(s)
    set_group_configs(s.bootstrap, group, {"share.delivery.count.limit": "2",
                                           "errors.deadletterqueue.topic.name": dlq})
    produce_one_by_one(s, topic, 3)
    a = ShareMember(s, "a", group, topic)
    a.heartbeat()
    a.wait_assigned(1)
    a.fetch(label="first fetch")
    a.fetch(acks=[(0, 0, RELEASE), (1, 1, REJECT), (2, 2, ACCEPT)],
            label="release 0, reject 1, accept 2")
    a.fetch(acks=[(0, 0, RELEASE)], max_wait_ms=500, label="release 0 again")
    a.fetch(max_wait_ms=200, label="nothing left")
    a.fetch(close=True, label="close the session")
    a.leave()
    offsets(s, group)
    dead_letters(s, dlq, 2)


@scenario(outcome="""(group share.assignment.interval.ms=0) a consumer holding two acquired
records loses its connection (the socket is
closed without a closing fetch): a second member of the group, once assigned the partition,
acquires both in its first ShareFetch with delivery count 2, under the group's lock; once they
are accepted, the group's offsets are described with start offset 0, lag 0""")
def test_share_dropped_connection_releases(s):
    topic = s.topic("t", 1)
    group = share_group(s, configs=AT_ONCE)
    produce_one_by_one(s, topic, 2)
    a = ShareMember(s, "a", group, topic)
    a.heartbeat()
    a.wait_assigned(1)
    a.fetch(label="a acquires")
    a.conn.close()
    b = ShareMember(s, "b", group, topic)
    b.heartbeat()
    b.wait_assigned(1)
    b.fetch(label="b's first fetch")
    b.fetch(acks=[(0, 1, ACCEPT)], max_wait_ms=200, label="b accepts")
    b.fetch(close=True, label="close b's session")
    b.leave()
    offsets(s, group)


@scenario(outcome="""(group share.assignment.interval.ms=0) a member renews its lock on two
acquired records (ShareAcknowledge v2,
IsRenewAck, type 4): no error, the lock's duration in the answer; a second member's fetch
acquires nothing of them; the first then accepts them (no error), and the group's offsets are
described with start offset 0, lag 0""")
def test_share_renew_holds_the_lock(s):
    topic = s.topic("t", 1)
    group = share_group(s, configs=AT_ONCE)
    produce_one_by_one(s, topic, 2)
    a = ShareMember(s, "a", group, topic)
    a.heartbeat()
    a.wait_assigned(1)
    a.fetch(label="a acquires")
    a.acknowledge([(0, 1, RENEW)], renew=True, label="a renews 0-1")
    b = ShareMember(s, "b", group, topic)
    b.heartbeat()
    b.wait_assigned(1)
    b.fetch(max_wait_ms=500, label="b finds them locked")
    a.acknowledge([(0, 1, ACCEPT)], label="a accepts 0-1")
    b.fetch(max_wait_ms=200, label="b finds nothing")
    a.fetch(close=True, label="close a's session")
    b.fetch(close=True, label="close b's session")
    a.leave()
    b.leave()
    offsets(s, group)


@scenario(outcome="""AlterShareGroupOffsets on an empty share group moves partition 0's start
offset to 3 (no error); DescribeShareGroupOffsets shows start offset 3, lag 2; a member joining
acquires records 3-4 with delivery count 1; after it accepted them and left, the offsets are
described with start offset 3, lag 0; DeleteShareGroupOffsets removes the topic from the group's
offsets (no error) and DescribeShareGroupOffsets no longer lists it""")
def test_share_alter_delete_offsets(s):
    topic = s.topic("t", 1)
    group = share_group(s)
    produce_one_by_one(s, topic, 5)
    admin = s.conn("admin")
    a = ShareMember(s, "a", group, topic)
    a.heartbeat()
    a.wait_assigned(1)
    a.leave()
    admin.call(ApiKey.ALTER_SHARE_GROUP_OFFSETS, 0, group_id=group, topics=[
        {"topic_name": topic, "partitions": [{"partition_index": 0, "start_offset": 3}]}])
    offsets(s, group)
    b = ShareMember(s, "b", group, topic)
    b.heartbeat()
    b.wait_assigned(1)
    b.fetch(label="b's first fetch")
    b.fetch(acks=[(3, 4, ACCEPT)], max_wait_ms=200, label="b accepts 3-4")
    b.fetch(close=True, label="close b's session")
    b.leave()
    offsets(s, group)
    admin.call(ApiKey.DELETE_SHARE_GROUP_OFFSETS, 0, group_id=group, topics=[{"topic_name": topic}])
    offsets(s, group)


@scenario(outcome="""ShareGroupHeartbeat's request checks, in Kafka 4.4's errors and words: an
empty member id or group id, a joining member without a subscription or with an empty one, a
heartbeat or a leave of a member a group does not know, of a group that does not exist, an
epoch the member does not have; then a member that joins right and a heartbeat naming its
subscription again""")
def test_share_heartbeat_request_checks(s):
    topic = s.topic("t", 1)
    group = share_group(s)
    conn = s.conn("checks")
    member = ShareMember(s, "a", group, topic)

    def heartbeat(label, epochs_in_message=False, **fields):
        request = {"group_id": group, "member_id": member.member_id, "member_epoch": 0,
                   "rack_id": None, "subscribed_topic_names": [topic]}
        request.update(fields)
        answer = conn.call(ApiKey.SHARE_GROUP_HEARTBEAT, 1,
                           keep=() if epochs_in_message else ("error_message",), **request)
        # a share group's epochs differ by design (the module's note): a message naming
        # them is compared with its numbers left out
        s.note(label, member_epoch_positive=answer.member_epoch > 0,
               message=re.sub(r"\d+", "N", answer.error_message or "")
               if epochs_in_message else None)
        return answer

    heartbeat("empty member id", member_id="")
    heartbeat("empty group id", group_id="")
    heartbeat("no subscription", subscribed_topic_names=None)
    heartbeat("an empty subscription", subscribed_topic_names=[])
    nobody = s.name("nobody")
    heartbeat("a stranger at epoch 3 of a group that does not exist", group_id=nobody,
              member_epoch=3)
    heartbeat("a leave of a group that does not exist", group_id=nobody, member_epoch=-1)
    heartbeat("a bad epoch -2", member_epoch=-2)
    joined = heartbeat("join")
    member.epoch = joined.member_epoch
    heartbeat("a stranger at epoch 3", member_id="someone-else", member_epoch=3)
    heartbeat("a leave of a stranger", member_id="someone-else", member_epoch=-1)
    heartbeat("an epoch ahead", epochs_in_message=True, member_epoch=member.epoch + 5,
              subscribed_topic_names=None)
    heartbeat("rejoin at epoch 0 while a member", member_epoch=0)
