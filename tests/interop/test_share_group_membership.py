"""Share group membership (KIP-932) over a real socket: ShareGroupHeartbeat (76) and
ShareGroupDescribe (77) sent as raw frames to a real roster broker, and the same requests to
Kafka 4.4 beside it where the two are compared (its refusals, in its order and words; what the
other APIs answer for a share group id).

One departure is by design and checked as such: Kafka assigns a partition a heartbeat or more
after the join, once its share state is initialised; roster initialises it before it answers
and assigns it in the join's answer (DescribeShareGroupOffsets shows it initialised then)."""
from __future__ import annotations

import datetime
import time
import uuid

import pytest

from roster.protocol.api_keys import ApiKey
from roster.protocol.build import element, make
from roster.protocol.codec import request_schema
from roster.protocol.errors import ErrorCode
from tests.support.cli import ok, roster
from tests.support.groups import create_topic
from tests.support.share_judges import wait_until
from tests.support.wire import Wire

pytestmark = [pytest.mark.interop]

TOPIC = "share-membership"


def new_member() -> str:
    return uuid.uuid4().hex[:22]


def beat(wire: Wire, group: str, member: str, epoch: int, topics=None, rack=None):
    return wire.call(ApiKey.SHARE_GROUP_HEARTBEAT, 1, group_id=group, member_id=member,
                     member_epoch=epoch, rack_id=rack, subscribed_topic_names=topics)


def describe(wire: Wire, *groups: str, operations: bool = False):
    return wire.call(ApiKey.SHARE_GROUP_DESCRIBE, 1, group_ids=groups,
                     include_authorized_operations=operations).groups


def topic_id(wire: Wire, name: str) -> uuid.UUID:
    answer = wire.call(ApiKey.METADATA, 12, topics=(make(
        element(request_schema(ApiKey.METADATA, 12), "topics"), name=name, topic_id=None),),
        allow_auto_topic_creation=False, include_topic_authorized_operations=False)
    return answer.topics[0].topic_id


def partitions_of(reply) -> dict:
    return {t.topic_id: sorted(t.partitions) for t in reply.assignment.topic_partitions}


def refusal(answer) -> tuple:
    return answer.error_code, answer.error_message


def test_members_share_the_partitions_and_describe_shows_them(broker):
    create_topic(broker.bootstrap, TOPIC, 3)
    with Wire(broker.bootstrap) as wire:
        tid = topic_id(wire, TOPIC)
        m1, m2 = new_member(), new_member()
        first = beat(wire, "g", m1, 0, (TOPIC,))
        assert (first.error_code, first.member_id, first.member_epoch) == (ErrorCode.none, m1, 1)
        assert first.heartbeat_interval == datetime.timedelta(seconds=5)
        assert partitions_of(first) == {tid: [0, 1, 2]}
        second = beat(wire, "g", m2, 0, (TOPIC,), rack="r2")
        assert second.member_epoch == 2
        again = beat(wire, "g", m1, 1)
        assert again.member_epoch == 2
        # three partitions over two members: one and two, together all three
        split = partitions_of(again)[tid], partitions_of(second)[tid]
        assert sorted(map(len, split)) == [1, 2] and sorted(split[0] + split[1]) == [0, 1, 2]
        assert beat(wire, "g", m1, 2).assignment is None      # unchanged: not sent

        [group] = describe(wire, "g", operations=True)
        assert (group.error_code, group.group_state, group.group_epoch, group.assignment_epoch,
                group.assignor_name) == (ErrorCode.none, "Stable", 2, 2, "simple")
        assert group.authorized_operations > 0
        members = {m.member_id: m for m in group.members}
        assert members[m2].rack_id == "r2" and members[m2].member_epoch == 2
        assert members[m1].subscribed_topic_names == (TOPIC,)
        assert members[m1].client_id == "roster-tests"
        [held] = members[m2].assignment.topic_partitions
        assert (held.topic_id, held.topic_name, held.partitions) == (
            tid, TOPIC, tuple(partitions_of(second)[tid]))

        # the share state of what was assigned exists from the join's answer on: asked for
        # every partition with share state, DescribeShareGroupOffsets lists all three (their
        # start offset -1 until first written after initialisation, as Kafka 4.4 answers)
        offsets = wire.call(ApiKey.DESCRIBE_SHARE_GROUP_OFFSETS, 1, groups=(make(
            element(request_schema(ApiKey.DESCRIBE_SHARE_GROUP_OFFSETS, 1), "groups"),
            group_id="g", topics=None),))
        [described] = offsets.groups
        assert sorted(p.partition_index for t in described.topics if t.topic_id == tid
                      for p in t.partitions) == [0, 1, 2], offsets

        # roster groups describe draws the members and their partitions
        out = ok(roster("--bootstrap-server", broker.bootstrap, "groups", "describe", "g"))
        assert "Type: share (KIP-932)" in out and "Assignor: simple" in out
        assert m1 in out and m2 in out and f"{TOPIC}-0" in out

        left = beat(wire, "g", m2, -1)
        assert (left.error_code, left.member_id, left.member_epoch) == (ErrorCode.none, m2, -1)
        assert beat(wire, "g", m1, 2).member_epoch == 3


def test_the_group_survives_a_kill_9(broker):
    create_topic(broker.bootstrap, TOPIC, 2)
    members = [new_member() for _ in range(3)]
    with Wire(broker.bootstrap) as wire:
        for m in members:
            beat(wire, "durable", m, 0, (TOPIC,))
        beat(wire, "durable", members[0], -1)
        before = describe(wire, "durable")[0]
    broker.kill9()
    broker.restart()
    with Wire(broker.bootstrap) as wire:
        after = describe(wire, "durable")[0]
        assert after == before
        epoch = {m.member_id: m.member_epoch for m in after.members}
        reply = beat(wire, "durable", members[1], epoch[members[1]])
        assert reply.error_code == ErrorCode.none and reply.member_epoch == after.group_epoch


def test_an_expired_session_removes_the_member(broker_factory):
    broker = broker_factory({"group.share.min.session.timeout.ms": "1000",
                             "group.share.session.timeout.ms": "1500",
                             "group.share.min.heartbeat.interval.ms": "100",
                             "group.share.heartbeat.interval.ms": "500"})
    create_topic(broker.bootstrap, TOPIC, 1)
    with Wire(broker.bootstrap) as wire:
        m1, m2 = new_member(), new_member()
        assert beat(wire, "expiring", m1, 0, (TOPIC,)).heartbeat_interval == \
            datetime.timedelta(milliseconds=500)
        beat(wire, "expiring", m2, 0, (TOPIC,))
        epoch = 1
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:     # m1 keeps heartbeating; m2 is silent
            reply = beat(wire, "expiring", m1, epoch)
            assert reply.error_code == ErrorCode.none
            epoch = reply.member_epoch
            if [m.member_id for m in describe(wire, "expiring")[0].members] == [m1]:
                break
            time.sleep(0.3)
        [group] = describe(wire, "expiring")
        assert [m.member_id for m in group.members] == [m1]
        assert beat(wire, "expiring", m2, 2).error_code == ErrorCode.unknown_member_id


def test_a_group_config_sets_the_heartbeat_interval(broker):
    create_topic(broker.bootstrap, TOPIC, 1)
    with Wire(broker.bootstrap) as wire:
        assert alter(wire, "configured", "share.heartbeat.interval.ms", "6000") == (
            ErrorCode.none, None)
        reply = beat(wire, "configured", new_member(), 0, (TOPIC,))
        assert reply.heartbeat_interval == datetime.timedelta(seconds=6)


def alter(wire: Wire, group: str, name: str, value: str) -> tuple:
    schema = request_schema(ApiKey.INCREMENTAL_ALTER_CONFIGS, 1)
    resource = element(schema, "resources")
    config = element(resource, "configs")
    answer = wire.call(ApiKey.INCREMENTAL_ALTER_CONFIGS, 1, resources=(make(
        resource, resource_type=32, resource_name=group,
        configs=(make(config, name=name, config_operation=0, value=value),)),),
        validate_only=False)
    return answer.responses[0].error_code, answer.responses[0].error_message


def seam(bootstrap: str) -> dict:
    """What a broker answers around one share group with a member: its heartbeat's refusals,
    the other APIs on its id, and a consumer group's id to the share APIs."""
    topic, group, consumer_group = "seam-topic", "seam-share", "seam-consumer"
    create_topic(bootstrap, topic, 2)
    seen: dict = {}
    with Wire(bootstrap) as wire:
        versions = wire.call(ApiKey.API_VERSIONS, 4, client_software_name="roster-tests",
                             client_software_version="1")
        seen["share.version"] = (
            [(f.min_version, f.max_version) for f in versions.supported_features
             if f.name == "share.version"],
            [(f.min_version_level, f.max_version_level) for f in versions.finalized_features
             if f.name == "share.version"])
        seen["api versions"] = sorted((a.api_key, a.min_version, a.max_version)
                                      for a in versions.api_keys if a.api_key in (76, 77))
        member = new_member()
        joined = beat(wire, group, member, 0, (topic,))
        assert joined.error_code == ErrorCode.none
        epoch = joined.member_epoch
        seen["empty member id"] = refusal(beat(wire, group, "", 0, (topic,)))
        seen["long member id"] = refusal(beat(wire, group, "x" * 37, 0, (topic,)))
        seen["blank member id"] = refusal(beat(wire, group, " ", 0, (topic,)))
        seen["no topics at join"] = refusal(beat(wire, group, new_member(), 0))
        seen["empty topics at join"] = refusal(beat(wire, group, new_member(), 0, ()))
        seen["blank rack"] = refusal(beat(wire, group, new_member(), 0, (topic,), rack=" "))
        seen["epoch -2"] = refusal(beat(wire, group, member, -2))
        seen["no such group"] = refusal(beat(wire, "no-such-share-group", member, 3))
        seen["leave no such group"] = refusal(beat(wire, "no-such-share-group", member, -1))
        seen["unknown member"] = refusal(beat(wire, group, "stranger", 3))
        seen["leave unknown member"] = refusal(beat(wire, group, "stranger", -1))
        fenced = beat(wire, group, member, epoch + 7)
        seen["greater epoch"] = (fenced.error_code, fenced.error_message.replace(
            f"({epoch + 7})", "(E+7)").replace(f"({epoch})", "(E)"))
        joined_consumer = wire.call(
            ApiKey.CONSUMER_GROUP_HEARTBEAT, 1, group_id=consumer_group, member_id=new_member(),
            member_epoch=0, instance_id=None, rack_id=None,
            rebalance_timeout=datetime.timedelta(seconds=30), subscribed_topic_names=(topic,),
            subscribed_topic_regex=None, server_assignor=None, topic_partitions=())
        assert joined_consumer.error_code == ErrorCode.none, joined_consumer
        seen["share heartbeat on a consumer group"] = refusal(
            beat(wire, consumer_group, new_member(), 0, (topic,)))
        seen["share describe of a consumer group"] = refusal(describe(wire, consumer_group)[0])
        seen["share describe of no group"] = refusal(describe(wire, "no-such-share-group")[0])
        many = ("", group, *(f"absent-{i}" for i in range(20)), consumer_group, group, "")
        seen["many described, in Kafka's order"] = [
            (g.group_id, g.error_code, g.group_state) for g in describe(wire, *many)]
        consumer_join = wire.call(
            ApiKey.CONSUMER_GROUP_HEARTBEAT, 1, group_id=group, member_id=new_member(),
            member_epoch=0, instance_id=None, rack_id=None,
            rebalance_timeout=datetime.timedelta(seconds=30), subscribed_topic_names=(topic,),
            subscribed_topic_regex=None, server_assignor=None, topic_partitions=())
        seen["consumer heartbeat on a share group"] = (consumer_join.error_code,
                                                       consumer_join.error_message)
        [cgd] = wire.call(ApiKey.CONSUMER_GROUP_DESCRIBE, 1, group_ids=(group,),
                          include_authorized_operations=False).groups
        seen["consumer describe of a share group"] = refusal(cgd)
        join_schema = request_schema(ApiKey.JOIN_GROUP, 9)
        classic_join = wire.call(
            ApiKey.JOIN_GROUP, 9, group_id=group, session_timeout=datetime.timedelta(seconds=45),
            rebalance_timeout=datetime.timedelta(seconds=30), member_id="",
            group_instance_id=None, protocol_type="consumer", protocols=(make(
                element(join_schema, "protocols"), name="range", metadata=b""),), reason=None)
        seen["classic join on a share group"] = (classic_join.error_code,
                                                 classic_join.member_id)
        seen["classic heartbeat on a share group"] = wire.call(
            ApiKey.HEARTBEAT, 4, group_id=group, generation_id=1, member_id=member,
            group_instance_id=None).error_code
        seen["classic sync on a share group"] = wire.call(
            ApiKey.SYNC_GROUP, 5, group_id=group, generation_id=1, member_id=member,
            group_instance_id=None, protocol_type="consumer", protocol_name="range",
            assignments=()).error_code
        classic_leave = wire.call(
            ApiKey.LEAVE_GROUP, 5, group_id=group, members=(make(
                element(request_schema(ApiKey.LEAVE_GROUP, 5), "members"), member_id=member,
                group_instance_id=None, reason=None),))
        seen["classic leave on a share group"] = (
            classic_leave.error_code, [(m.member_id == member, m.error_code)
                                       for m in classic_leave.members])
        seen["classic join left the member"] = [m.member_id for m in describe(wire, group)[0]
                                                .members] == [member]
        [dg] = wire.call(ApiKey.DESCRIBE_GROUPS, 6, groups=(group,),
                         include_authorized_operations=False).groups
        seen["describe groups"] = (dg.error_code, dg.error_message, dg.group_state)
        listed = wire.call(ApiKey.LIST_GROUPS, 5, states_filter=(), types_filter=("share",))
        seen["list groups"] = sorted((g.group_id == group, g.protocol_type, g.group_state,
                                      g.group_type) for g in listed.groups
                                     if g.group_id == group)
        stable = wire.call(ApiKey.LIST_GROUPS, 5, states_filter=("stable",),
                           types_filter=("share",))
        seen["listed as stable"] = group in {g.group_id for g in stable.groups}
        commit = request_schema(ApiKey.OFFSET_COMMIT, 9)
        topic_entry = element(commit, "topics")
        partition_entry = element(topic_entry, "partitions")
        committed = wire.call(ApiKey.OFFSET_COMMIT, 9, group_id=group,
                              generation_id_or_member_epoch=-1, member_id="",
                              group_instance_id=None, topics=(make(
                                  topic_entry, name=topic, partitions=(make(
                                      partition_entry, partition_index=0, committed_offset=1,
                                      committed_leader_epoch=-1, committed_metadata=None),)),))
        seen["offset commit"] = committed.topics[0].partitions[0].error_code
        fetch = request_schema(ApiKey.OFFSET_FETCH, 9)
        fetched = wire.call(ApiKey.OFFSET_FETCH, 9, groups=(make(
            element(fetch, "groups"), group_id=group, member_id=None, member_epoch=-1,
            topics=None),), require_stable=False)
        seen["offset fetch"] = fetched.groups[0].error_code
        delete = request_schema(ApiKey.OFFSET_DELETE, 0)
        dtopic = element(delete, "topics")
        deleted = wire.call(ApiKey.OFFSET_DELETE, 0, group_id=group, topics=(make(
            dtopic, name=topic, partitions=(make(element(dtopic, "partitions"),
                                                 partition_index=0),)),))
        seen["offset delete"] = deleted.error_code
        groups = wire.call(ApiKey.DELETE_GROUPS, 2, groups_names=(group,))
        seen["delete with a member"] = groups.results[0].error_code
        seen["leave"] = beat(wire, group, member, -1).error_code
        [empty] = describe(wire, group)
        seen["state once left"] = (empty.group_state, len(empty.members))
        groups = wire.call(ApiKey.DELETE_GROUPS, 2, groups_names=(group,))
        seen["delete once empty"] = groups.results[0].error_code
        gone = describe(wire, group)[0]
        seen["describe once deleted"] = refusal(gone)
        offsets = wire.call(ApiKey.DESCRIBE_SHARE_GROUP_OFFSETS, 1, groups=(make(
            element(request_schema(ApiKey.DESCRIBE_SHARE_GROUP_OFFSETS, 1), "groups"),
            group_id=group, topics=None),))
        seen["share offsets once deleted"] = (offsets.groups[0].error_code,
                                              offsets.groups[0].error_message,
                                              len(offsets.groups[0].topics))
    return seen


@pytest.mark.xdist_group("kafka")
def test_the_seam_answers_as_kafka_does(broker, kafka_peer):
    on_roster, on_kafka = seam(broker.bootstrap), seam(kafka_peer.bootstrap)
    assert on_roster == on_kafka


BAD_CONFIGS = (
    ("share.record.lock.duration.ms", "500"), ("share.record.lock.duration.ms", "70000"),
    ("share.delivery.count.limit", "11"), ("share.delivery.count.limit", "1"),
    ("share.partition.max.record.locks", "5000"), ("share.session.timeout.ms", "1000"),
    ("share.heartbeat.interval.ms", "60000"), ("share.assignment.interval.ms", "20000"),
    ("share.auto.offset.reset", "sometimes"), ("share.auto.offset.reset", "none"),
    ("share.auto.offset.reset", "by_duration:-PT1H"), ("share.isolation.level", "dirty"),
    ("share.renew.acknowledge.enable", "maybe"), ("errors.deadletterqueue.topic.name", "__dlq"),
    ("share.session.timeout.ms", "soon"),
)
GOOD_CONFIGS = (
    ("share.auto.offset.reset", "earliest"), ("share.auto.offset.reset", "by_duration:PT1H"),
    ("share.isolation.level", "read_committed"), ("share.delivery.count.limit", "3"),
    ("share.record.lock.duration.ms", "20000"), ("errors.deadletterqueue.topic.name", "dlq.x"),
    ("errors.deadletterqueue.copy.record.enable", "true"),
    ("share.assignor.offload.enable", "false"),
)


def configs(bootstrap: str) -> dict:
    """What a broker answers when share group configs are set (refused in Kafka's words, or
    taken and then described)."""
    seen: dict = {}
    with Wire(bootstrap) as wire:
        for name, value in BAD_CONFIGS + GOOD_CONFIGS:
            seen[f"{name}={value}"] = alter(wire, "configured-share", name, value)
        taken = {name: value for name, value in GOOD_CONFIGS
                 if seen[f"{name}={value}"][0] == ErrorCode.none}

        def described():
            # Kafka applies a group config through its metadata log: under load a describe
            # made at once may not show the last change yet
            schema = request_schema(ApiKey.DESCRIBE_CONFIGS, 4)
            answer = wire.call(ApiKey.DESCRIBE_CONFIGS, 4, resources=(make(
                element(schema, "resources"), resource_type=32,
                resource_name="configured-share", configuration_keys=None),),
                include_synonyms=False, include_documentation=False)
            found = sorted((c.name, c.value, c.config_type) for c in answer.results[0].configs
                           if c.name.startswith(("share.", "errors.")))
            values = {name: value for name, value, _ in found}
            return found if all(values.get(n) == v for n, v in taken.items()) else None
        seen["described"] = wait_until(described, "every config taken to be described")
    return seen


@pytest.mark.xdist_group("kafka")
def test_share_group_configs_as_kafka_takes_them(broker, kafka_peer):
    on_roster, on_kafka = configs(broker.bootstrap), configs(kafka_peer.bootstrap)
    assert on_roster == on_kafka


def records_written_by(bootstrap: str, group: str) -> list[tuple[bytes, bytes | None]]:
    """The share group records of `group` in __consumer_offsets, as the broker wrote them."""
    from confluent_kafka import Consumer, TopicPartition
    from roster.coordinator.share.records import TYPES
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "reader-" + group,
                         "enable.auto.commit": False,
                         "enable.partition.eof": True})
    try:
        partitions = consumer.list_topics("__consumer_offsets", timeout=10) \
            .topics["__consumer_offsets"].partitions
        consumer.assign([TopicPartition("__consumer_offsets", p, 0) for p in partitions])
        ended, found = set(), []
        deadline = time.monotonic() + 30
        while len(ended) < len(partitions) and time.monotonic() < deadline:
            message = consumer.poll(1.0)
            if message is None:
                continue
            if message.error():
                ended.add(message.partition())
                continue
            key = message.key()
            kind = int.from_bytes(key[:2], "big", signed=True)
            length = int.from_bytes(key[2:4], "big")
            if kind in TYPES and key[4:4 + length].decode() == group:
                found.append((key, message.value()))
        return found
    finally:
        consumer.close()


@pytest.mark.xdist_group("kafka")
def test_kafkas_share_group_records_read_and_written_byte_for_byte(kafka_peer):
    """What Kafka 4.4 writes for a share group (members, epochs, targets, current
    assignments, initialised partitions, tombstones) decodes with roster's layouts and encodes
    back to the same bytes."""
    from roster.coordinator.share import records as rec
    create_topic(kafka_peer.bootstrap, "layouts", 2)
    members = [new_member() for _ in range(2)]
    with Wire(kafka_peer.bootstrap) as wire:
        epochs = {m: beat(wire, "layouts", m, 0, ("layouts",), rack="r").member_epoch
                  for m in members}
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:        # until Kafka has initialised and assigned
            replies = {m: beat(wire, "layouts", m, epochs[m]) for m in members}
            epochs = {m: r.member_epoch for m, r in replies.items()}
            if all(m.assignment.topic_partitions for m in describe(wire, "layouts")[0].members):
                break
            time.sleep(0.5)
        for m in members:
            beat(wire, "layouts", m, -1)
        wire.call(ApiKey.DELETE_GROUPS, 2, groups_names=("layouts",))
    written = records_written_by(kafka_peer.bootstrap, "layouts")
    kinds = {int.from_bytes(key[:2], "big") for key, _ in written}
    assert kinds == set(rec.TYPES), kinds
    assert any(value is None for _, value in written)        # the tombstones too
    for key, value in written:
        decoded = rec.decode(key, value)
        assert decoded.encode() == (key, value), decoded
    groups: dict = {}
    from roster.coordinator.share.replay import replay
    for key, value in written:
        replay(groups, rec.decode(key, value))
    assert "layouts" not in groups                           # deleted as Kafka deleted it


def test_the_flight_recorder_and_metrics_follow_the_share_group(broker_factory):
    """One recorded event per group epoch (followed with `roster groups history`'s reader, no
    sleeps), /metrics' share group series, and `roster groups list` naming the type."""
    from prometheus_client.parser import text_string_to_metric_families

    from roster.admin.client import AdminClient
    from roster.observability import history
    from tests.support.cli import table
    from tests.support.http import http_get
    from tests.support.ports import free_port
    port = free_port()
    broker = broker_factory({"http.port": str(port)})
    create_topic(broker.bootstrap, TOPIC, 2)
    m1, m2 = new_member(), new_member()
    with Wire(broker.bootstrap) as wire:
        beat(wire, "observed", m1, 0, (TOPIC,))
        beat(wire, "observed", m2, 0, (TOPIC,))
        beat(wire, "observed", m1, 1)                  # m1 at epoch 2: the epoch is stable
    seen = []
    with AdminClient(broker.bootstrap) as client:
        for event in history.events(client, "observed", follow=True, wait_ms=300,
                                    timeout_s=30):
            seen.append(event)
            if event.generation == 2:
                break
    assert [(e.protocol, e.generation, e.outcome, e.trigger.kind) for e in seen] == [
        ("share", 1, "stable", "member_joined"), ("share", 2, "stable", "member_joined")]
    assert any(m.before == m1 and m.after == m2 for m in seen[1].moved)
    status, _, body = http_get(f"http://127.0.0.1:{port}/metrics")
    assert status == 200
    values = {(s.name, tuple(sorted(s.labels.items()))): s.value
              for family in text_string_to_metric_families(body) for s in family.samples}
    labels = (("group", "observed"), ("protocol", "share"))
    assert values[("roster_groups", (("protocol", "share"), ("state", "Stable")))] == 1
    assert values[("roster_group_members", labels)] == 2
    assert values[("roster_group_epoch", labels)] == 2
    listed = ok(roster("--bootstrap-server", broker.bootstrap, "groups", "list"))
    assert "observed\tStable\tshare" in listed.splitlines(), listed
    state = ok(roster("--bootstrap-server", broker.bootstrap, "groups", "describe",
                      "observed", "--state")).splitlines()[1].split()
    assert state[-3:] == ["simple", "Stable", "2"], state
    members = table(ok(roster("--bootstrap-server", broker.bootstrap, "groups", "describe",
                              "observed", "--members")))
    assert sorted(row["CONSUMER-ID"] for row in members) == sorted((m1, m2))


def test_group_share_max_size_refuses_one_member_too_many(broker_factory):
    broker = broker_factory({"group.share.max.size": "2"})
    create_topic(broker.bootstrap, TOPIC, 1)
    with Wire(broker.bootstrap) as wire:
        first, second = new_member(), new_member()
        assert beat(wire, "small", first, 0, (TOPIC,)).error_code == ErrorCode.none
        assert beat(wire, "small", second, 0, (TOPIC,)).error_code == ErrorCode.none
        assert refusal(beat(wire, "small", new_member(), 0, (TOPIC,))) == (
            ErrorCode.group_max_size_reached,
            "The share group has reached its maximum capacity of 2 members.")
        assert beat(wire, "small", first, 0, (TOPIC,)).error_code == ErrorCode.none
