"""The broker's own topics (__consumer_offsets, the flight recorder's __roster_group_events) are
made on first use, as Kafka makes __consumer_offsets on the first group lookup: a fresh broker
has none, so its start does not wait for their partitions. Whatever comes first makes them with
the broker's settings: a FindCoordinator, a group's first write, a client's auto-creation; a
CreateTopics for one is refused; an existing one with another partition count stops the broker
at start, as before."""
from __future__ import annotations

import pytest

from roster.admin.client import AdminClient
from roster.protocol.api_keys import ApiKey
from roster.protocol.errors import ErrorCode
from roster.testing.broker import RosterBroker
from tests.support.process import BrokerProcess

pytestmark = pytest.mark.interop

OWN = ("__consumer_offsets", "__roster_group_events")


def _listed(admin: AdminClient) -> dict[str, tuple[int, bool]]:
    """Every topic the broker lists: name -> (partition count, is_internal)."""
    answer = admin.call(ApiKey.METADATA, topics=None, allow_auto_topic_creation=False,
                         include_topic_authorized_operations=False)
    return {t.name: (len(t.partitions), t.is_internal) for t in answer.topics}


def _fresh(tmp_path, **settings) -> RosterBroker:
    return RosterBroker(tmp_path / "data", {"offsets.topic.num.partitions": "3", **settings})


def test_a_fresh_broker_has_none_until_a_group_lookup_makes_them(tmp_path):
    with _fresh(tmp_path) as broker, AdminClient(broker.bootstrap) as admin:
        assert not set(OWN) & set(_listed(admin))
        assert not any(p.name.startswith("__") for p in (tmp_path / "data").iterdir())
        found = admin.call(ApiKey.FIND_COORDINATOR, key_type=0, coordinator_keys=("g",))
        assert found.coordinators[0].error_code is ErrorCode.none
        assert _listed(admin)["__consumer_offsets"] == (3, True)


def test_a_group_write_makes_them_without_a_lookup(tmp_path):
    """A client that commits straight to the broker (no FindCoordinator first) still has its
    commit durable, and the flight recorder its events, in topics made by that first write."""
    with _fresh(tmp_path) as broker, AdminClient(broker.bootstrap) as admin:
        broker.create_topic("orders", 1)
        topic = admin.entry(ApiKey.OFFSET_COMMIT, "topics")
        partition = admin.entry(ApiKey.OFFSET_COMMIT, "topics", "partitions")
        committed = admin.call(ApiKey.OFFSET_COMMIT, group_id="g", generation_id_or_member_epoch=-1,
                               member_id="", group_instance_id=None, topics=(topic(
                                   name="orders", partitions=(partition(
                                       partition_index=0, committed_offset=5,
                                       committed_leader_epoch=-1,
                                       committed_metadata=""),)),))
        assert committed.topics[0].partitions[0].error_code is ErrorCode.none
        assert _listed(admin)["__consumer_offsets"] == (3, True)
    with _fresh(tmp_path) as broker, AdminClient(broker.bootstrap) as admin:
        fetched = admin.call(ApiKey.OFFSET_FETCH, groups=(admin.entry(
            ApiKey.OFFSET_FETCH, "groups")(group_id="g", member_id=None, member_epoch=-1,
                                          topics=None),), require_stable=False)
        offsets = [(t.name, p.partition_index, p.committed_offset)
                   for t in fetched.groups[0].topics for p in t.partitions]
        assert offsets == [("orders", 0, 5)]   # it survived the restart: it was in the log


def test_auto_creation_makes_one_as_the_broker_does_and_create_topics_is_refused(tmp_path):
    with _fresh(tmp_path) as broker, AdminClient(broker.bootstrap) as admin:
        entry = admin.entry(ApiKey.CREATE_TOPICS, "topics")
        refused = admin.call(ApiKey.CREATE_TOPICS, validate_only=False, timeout_ms=5000, topics=(
            entry(name="__consumer_offsets", num_partitions=7, replication_factor=1,
                  assignments=(), configs=()),))
        assert refused.topics[0].error_code is ErrorCode.invalid_request
        assert "own topic" in refused.topics[0].error_message
        # a client asking for it by name with auto-creation on gets it with the broker's count
        wanted = admin.entry(ApiKey.METADATA, "topics")
        answer = admin.call(ApiKey.METADATA, topics=(wanted(name="__consumer_offsets",
                                                            topic_id=None),),
                            allow_auto_topic_creation=True,
                            include_topic_authorized_operations=False)
        assert answer.topics[0].name == "__consumer_offsets"
        assert _listed(admin)["__consumer_offsets"] == (3, True)
        # once it is there, CreateTopics answers as for any existing topic
        again = admin.call(ApiKey.CREATE_TOPICS, validate_only=False, timeout_ms=5000, topics=(
            entry(name="__consumer_offsets", num_partitions=3, replication_factor=1,
                  assignments=(), configs=()),))
        assert again.topics[0].error_code is ErrorCode.topic_already_exists


def test_an_existing_one_with_another_count_stops_the_broker_at_start(tmp_path):
    with _fresh(tmp_path) as broker, AdminClient(broker.bootstrap) as admin:
        admin.call(ApiKey.FIND_COORDINATOR, key_type=0, coordinator_keys=("g",))
    process = BrokerProcess(tmp_path / "data", {"offsets.topic.num.partitions": "5"})
    with pytest.raises(RuntimeError, match="roster did not start"):
        process.start(timeout_s=30)
    assert process.proc.returncode not in (0, None)
    assert any("__consumer_offsets has 3 partitions but offsets.topic.num.partitions is 5"
               in line for line in process.output)


def test_a_fresh_brokers_group_history_is_empty_not_an_error(tmp_path):
    """`roster groups history` before any event: nothing to show (the flight recorder's topic
    is made with the first event), not 'is the broker a roster?'."""
    from roster.observability.history import events
    with _fresh(tmp_path) as broker, AdminClient(broker.bootstrap) as admin:
        assert list(events(admin, "g")) == []
        assert list(events(admin, "g", follow=True, wait_ms=20, timeout_s=0.1)) == []


def _join_and_sync(wire, group: str, assignment: bytes):
    """One classic member joins (MEMBER_ID_REQUIRED, then again with its id) and syncs with
    `assignment` for itself: the SyncGroup's answer."""
    import datetime

    from roster.protocol.build import element, make
    from roster.protocol.codec import request_schema
    join_schema = request_schema(ApiKey.JOIN_GROUP, 9)

    def join(member_id: str):
        return wire.call(ApiKey.JOIN_GROUP, 9, group_id=group,
                         session_timeout=datetime.timedelta(seconds=45),
                         rebalance_timeout=datetime.timedelta(seconds=30), member_id=member_id,
                         group_instance_id=None, protocol_type="consumer", protocols=(make(
                             element(join_schema, "protocols"), name="range",
                             metadata=b"\x00\x01"),), reason=None)

    member = join("").member_id
    joined = join(member)
    assert joined.error_code == 0
    entry = element(request_schema(ApiKey.SYNC_GROUP, 5), "assignments")
    return wire.call(ApiKey.SYNC_GROUP, 5, group_id=group, generation_id=joined.generation_id,
                     member_id=member, group_instance_id=None, protocol_type="consumer",
                     protocol_name="range",
                     assignments=(make(entry, member_id=member, assignment=assignment),))


def test_a_group_record_over_message_max_bytes_fails_its_sync_as_on_kafka(tmp_path):
    """__consumer_offsets takes batches up to its max.message.bytes, which follows the broker's
    message.max.bytes as on Kafka: a group whose record is over it is answered
    UNKNOWN_SERVER_ERROR at SyncGroup (Kafka 4.4's coordinator: "Failed to write a batch of 1
    record(s) to __consumer_offsets-N because it is larger than the maximum batch size"; a
    classic group of 10,000 members' record is 1.6 MB); raising the topic's max.message.bytes
    (IncrementalAlterConfigs, which Kafka allows on __consumer_offsets too) or the broker's
    message.max.bytes lets it through."""
    from tests.support.wire import Wire
    with _fresh(tmp_path, **{"message.max.bytes": "20000"}) as broker, \
            Wire(broker.bootstrap) as wire:
        assert _join_and_sync(wire, "small", b"a" * 1000).error_code == 0
        assert _join_and_sync(wire, "large", b"a" * 30_000).error_code == \
            ErrorCode.unknown_server_error.value
        # as on Kafka, the topic's own max.message.bytes may be raised for it
        with AdminClient(broker.bootstrap) as admin:
            resource = admin.entry(ApiKey.INCREMENTAL_ALTER_CONFIGS, "resources")
            config = admin.entry(ApiKey.INCREMENTAL_ALTER_CONFIGS, "resources", "configs")
            altered = admin.call(ApiKey.INCREMENTAL_ALTER_CONFIGS, validate_only=False,
                                 resources=(resource(resource_type=2,
                                                     resource_name="__consumer_offsets",
                                                     configs=(config(name="max.message.bytes",
                                                                     config_operation=0,
                                                                     value="100000"),)),))
            assert [(r.error_code, r.error_message) for r in altered.responses] == \
                [(ErrorCode.none, None)]
        assert _join_and_sync(wire, "large-altered", b"a" * 30_000).error_code == 0
    with _fresh(tmp_path, **{"message.max.bytes": "100000"}) as broker, \
            Wire(broker.bootstrap) as wire:   # the same topic, the broker's limit raised
        assert _join_and_sync(wire, "large", b"a" * 30_000).error_code == 0


@pytest.mark.parametrize("setting, key_type, topic", [
    ("transaction.state.log.num.partitions", 1, "__transaction_state"),
])
def test_a_coordinator_topic_with_another_count_stops_the_broker_at_start_not_at_its_lookup(
        tmp_path, setting, key_type, topic):
    with _fresh(tmp_path, **{setting: "2"}) as broker, AdminClient(broker.bootstrap) as admin:
        admin.call(ApiKey.FIND_COORDINATOR, key_type=key_type, coordinator_keys=("t",))
        assert _listed(admin)[topic] == (2, True)
    process = BrokerProcess(tmp_path / "data", {setting: "3"})
    with pytest.raises(RuntimeError, match="roster did not start"):
        process.start(timeout_s=30)
    assert any(f"{topic} has 2 partitions but {setting} is 3" in line
               for line in process.output)
