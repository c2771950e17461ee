"""Where a new type of group (Kafka's streams or share groups) plugs in: it implements the small
interface of coordinator/group_type.py and is handed to the shard; nothing else changes. This
stub type holds groups made by a record of its own and lets only member "m" commit; the shard
routes to it, lists and describes its groups, keeps its offsets, deletes it with them and replays
its records. It mutates as every type does (coordinator/changes.py): a group being deleted is
marked at once, noted as a change the shard reverts if the write fails."""
from __future__ import annotations

import asyncio
import datetime
import threading
from dataclasses import dataclass
from typing import NamedTuple

from roster.admin.describe_views import Member
from roster.broker.broker import Broker
from roster.broker.groups.group_configs import number
from roster.broker.network.connection import Connection
from roster.broker.network.server import ConnectionTable
from roster.config import BrokerConfig
from roster.coordinator.consumer.messages import HeartbeatRequest
from roster.coordinator.consumer.model import DictTopicImage
from roster.coordinator.group_type import GroupTypeRegistration
from roster.coordinator.messages import (
    GroupDescription,
    GroupOverview,
    GroupView,
    JoinRequest,
    MemberDescription,
    MemberView,
)
from roster.coordinator.offset_store import OffsetExpiry
from roster.coordinator.results import Result
from roster.observability.events import GroupEvent, Trigger
from roster.protocol.api_keys import ApiKey
from roster.protocol.build import element, make
from roster.protocol.codec import request_schema
from roster.protocol.errors import ErrorCode
from roster.protocol.group_records import OffsetKey, Record
from roster.security.listen import ListenerPlan
from tests.support.wire import Wire
from tests.unit.coordinator.shard_harness import ShardDriver


@dataclass(frozen=True)
class StubKey:
    group: str


@dataclass(frozen=True)
class StubRecord:
    """A stub record as __consumer_offsets holds it: a key version of its own (as the consumer
    type's records are types 3-8), the group id, the member."""
    key: StubKey
    value: str | None

    def encode(self):
        return (b"\x00\x7f" + self.key.group.encode(),
                None if self.value is None else self.value.encode())


class Deleting(NamedTuple):
    """The stub's one change: a group marked as being deleted; undone, it is not."""

    deleting: set
    group_id: str

    def undo(self, now):
        self.deleting.discard(self.group_id)


class StubType:
    name = "stub"
    steps = ()
    accepts = frozenset({"stub"})

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
        tombstone = StubRecord(StubKey(group_id), None)
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
    assert stub.groups == {"s": "m"} and "s" not in h.shard.type_named("classic").groups
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
    assert h.records[-2:] == [Record(OffsetKey("s", "kept", 0), None), StubRecord(StubKey("s"), None)]


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



# -- registered through the public path, driven over real sockets -----------------------------

@dataclass(frozen=True)
class StubDeleted:
    """The stub's one flight-recorder fact."""
    group_id: str
    now: int


@dataclass(frozen=True)
class StubTopicsWanted:
    """An effect beyond records (as a streams group asks for its internal topics)."""
    group_id: str


class RecordingStubType(StubType):
    accepts = frozenset({"stub"})

    def group(self, group_id):
        return self.groups.get(group_id)

    def console_view(self, group_id):
        member = self.groups.get(group_id)
        if member is None:
            return None
        return GroupView("Stable", "stub-protocol", 1, (
            MemberView(member, None, "stub-client", "/127.0.0.1", (("kept", (0,)),)),))

    def describe_group(self, group_id):
        return GroupDescription(group_id, ErrorCode.none, "Stable", "stub-protocol", "", (
            MemberDescription(self.groups[group_id], None, "stub-client", "/127.0.0.1", b"",
                              b""),))

    def delete_group(self, group_id, now, result):
        result.facts.append(StubDeleted(group_id, now))
        result.effects += (StubTopicsWanted(group_id),)
        return super().delete_group(group_id, now, result)


class StubRecorder:
    name = "stub"
    facts = (StubDeleted,)

    def __init__(self) -> None:
        self.loaded_groups: list = []

    def take(self, fact, out):
        out.append(GroupEvent(group_id=fact.group_id, protocol="stub", kind="deleted",
                              generation=1, trigger=Trigger("group_deleted"), at_ms=fact.now,
                              started_ms=fact.now))

    def loaded(self, group, now):
        self.loaded_groups.append(group)


class StubView:
    """How `roster groups describe` asks for and draws a stub group (admin/describe_views.py):
    DescribeGroups answers for it (its type describes it), drawn in the stub's own words."""
    name = "stub"

    def ask(self, client, group_id):
        group = client.call(ApiKey.DESCRIBE_GROUPS, groups=(group_id,),
                            include_authorized_operations=False).groups[0]
        return group, group.protocol_type == "stub-protocol"

    def not_found(self, group_id, answer):
        raise AssertionError("the classic view answers first")

    def recognises(self, answer):
        return getattr(answer, "protocol_type", None) == "stub-protocol"

    def lines(self, group, record=None):
        return [f"Stub group {group.group_id} ({group.group_state})"]

    def members(self, group):
        return [Member(member.member_id, None, member.client_id, member.client_host,
                       (("kept", 0),)) for member in group.members]

    def strategy(self, group):
        return "stub-strategy"


class StubConfigs:
    """The stub's own group config (broker/groups/group_configs.py's table): `stub.limit`, an
    int of at least 1 defaulting to the broker's group.max.size."""
    names = ("stub.limit",)

    @staticmethod
    def parse(name, value):
        limit = number(name, value)
        if limit < 1:
            raise ValueError("stub.limit must be at least 1")
        return limit

    @staticmethod
    def validate(own, broker):
        pass

    @staticmethod
    def described(name, own):
        return True

    @staticmethod
    def default(name, broker):
        return broker["group.max.size"]

    @staticmethod
    def origin(name):
        return "group.max.size"

    @staticmethod
    def kind(name):
        return "int"


EFFECTS_RUN: list = []
STUB = GroupTypeRegistration(
    "stub", make=lambda context: RecordingStubType(), recorder=StubRecorder,
    effects={StubTopicsWanted: lambda broker, effect: EFFECTS_RUN.append(
        (effect.group_id, broker.groups.shard.type_of(effect.group_id).name))},
    describe_view=StubView(), group_configs=StubConfigs())


class InProcessBroker:
    """A Broker(group_types=(STUB,)) serving a real listener on an event loop thread."""

    def __init__(self, data_dir) -> None:
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self.thread.start()
        config = BrokerConfig.load(assignments=["offsets.topic.num.partitions=1"], environ={})
        self.broker, self.port = self.run(self._start(config, data_dir))

    async def _start(self, config, data_dir):
        broker = Broker(config, data_dir, group_types=(STUB,))
        broker.start()
        listeners = ListenerPlan(config, data_dir, "127.0.0.1", 0, Connection)
        listening = await listeners.open(broker, ConnectionTable(config))
        broker.serve_on(listeners, listening)
        self.servers = [item.server for item in listening]
        await asyncio.wait_for(_loaded(broker), 10)
        return broker, listening[0].port

    def run(self, coroutine):
        return asyncio.run_coroutine_threadsafe(coroutine, self.loop).result(20)

    def close(self) -> None:
        async def stop():
            for server in self.servers:
                server.close()
            await self.broker.stop()
        self.run(stop())
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(10)


def test_a_stub_types_group_configs_are_set_and_described_over_the_wire(tmp_path):
    """Its table registered with it, IncrementalAlterConfigs takes the stub's config on a GROUP
    resource (and refuses a bad value in the table's words) and DescribeConfigs lists it with
    the broker setting it defaults to: no other edit of the broker."""
    served = InProcessBroker(tmp_path)
    try:
        with Wire(f"127.0.0.1:{served.port}") as wire:
            def alter(value):
                schema = request_schema(ApiKey.INCREMENTAL_ALTER_CONFIGS, 1)
                resource = element(schema, "resources")
                (answer,) = wire.call(ApiKey.INCREMENTAL_ALTER_CONFIGS, 1, validate_only=False,
                                      resources=(make(resource, resource_type=32,
                                                      resource_name="s", configs=(make(
                                                          element(resource, "configs"),
                                                          name="stub.limit", config_operation=0,
                                                          value=value),)),)).responses
                return answer
            refused, accepted = alter("0"), alter("7")
            schema = request_schema(ApiKey.DESCRIBE_CONFIGS, 4)
            (described,) = wire.call(ApiKey.DESCRIBE_CONFIGS, 4, include_synonyms=True,
                                     include_documentation=False, resources=(make(
                                         element(schema, "resources"), resource_type=32,
                                         resource_name="s",
                                         configuration_keys=("stub.limit",)),)).results
    finally:
        served.close()
    assert (refused.error_code, refused.error_message) == (
        ErrorCode.invalid_config, "stub.limit must be at least 1")
    assert accepted.error_code == ErrorCode.none
    (config,) = described.configs
    assert (config.name, config.value) == ("stub.limit", "7")
    assert [s.name for s in config.synonyms] == ["stub.limit", "group.max.size"]


async def _loaded(broker):
    while not broker.groups.loaded:
        await asyncio.sleep(0.01)


def test_a_stub_type_registered_with_the_broker_is_served_end_to_end(tmp_path):
    """Registered once (Broker(group_types=...)), the stub reaches the shard, the flight
    recorder, the edge's effects and the console; over the wire its group id is its own: a
    classic JoinGroup or a ConsumerGroupHeartbeat on it is refused (no shadow group is made),
    while ListGroups, DescribeGroups, OffsetCommit, OffsetFetch and DeleteGroups serve it."""
    served = InProcessBroker(tmp_path)
    groups = served.broker.groups
    try:
        async def setup():
            groups.shard.replay(Record(StubKey("s"), "m"), groups.now_ms())
        served.run(setup())
        with Wire(f"127.0.0.1:{served.port}") as wire:
            joined = wire.call(ApiKey.JOIN_GROUP, 9, group_id="s",
                               session_timeout=datetime.timedelta(seconds=10),
                               rebalance_timeout=datetime.timedelta(seconds=30), member_id="", group_instance_id=None,
                               protocol_type="consumer", protocols=(), reason=None)
            heartbeat = wire.call(ApiKey.CONSUMER_GROUP_HEARTBEAT, 0, group_id="s",
                                  member_id="c1", member_epoch=0, instance_id=None,
                                  rack_id=None,
                                  rebalance_timeout=datetime.timedelta(seconds=30),
                                  subscribed_topic_names=("t",), server_assignor=None,
                                  topic_partitions=())
            listed = wire.call(ApiKey.LIST_GROUPS, 5, states_filter=(), types_filter=("stub",))
            described = wire.call(ApiKey.DESCRIBE_GROUPS, 5, groups=("s",),
                                  include_authorized_operations=False)
            admin_lines, members_view, state_view = _admin_views(served.port)
            assert served.run(_commit_and_fetch(groups)) == [7]
            deleted = served.run(groups.delete_groups(["s"]))
        assert joined.error_code == ErrorCode.group_id_not_found
        assert heartbeat.error_code == ErrorCode.group_id_not_found
        assert heartbeat.error_message == "Group s is not a consumer group."
        assert "s" not in groups.shard.type_named("classic").groups and "s" not in groups.shard.type_named("consumer").groups
        assert [(g.group_id, g.group_type, g.protocol_type) for g in listed.groups] == \
            [("s", "stub", "stub-protocol")]
        assert described.groups[0].protocol_type == "stub-protocol"
        # the admin tools ask and draw it through its registration's describe view
        assert admin_lines == ["Stub group s (Stable)"]
        assert [line.split() for line in members_view[0]] == [
            ["GROUP", "CONSUMER-ID", "HOST", "CLIENT-ID", "#PARTITIONS"],
            ["s", "m", "/127.0.0.1", "stub-client", "1"]] and members_view[1] == []
        assert "stub-strategy" in state_view[0][1] and state_view[0][1].split()[-2:] == \
            ["Stable", "1"]
        assert deleted == {"s": ErrorCode.none}
        # its recorder made the event of its fact; its effect ran once the write was durable
        assert served.run(_events_written(served.broker)) >= 1
        assert EFFECTS_RUN == [("s", "stub")]   # once durable, before the continuations
    finally:
        served.close()


def test_the_console_draws_a_stub_group_as_its_type_says(tmp_path):
    from roster.observability import console, http
    served = InProcessBroker(tmp_path)
    try:
        async def page():
            groups = served.broker.groups
            groups.shard.replay(Record(StubKey("s"), "m"), groups.now_ms())
            return console.group_page(served.broker, http.EventStore(), "s", groups.now_ms())
        html = served.run(page()).decode()
        assert "stub-protocol protocol" in html and "<code>m</code>" in html
        assert "kept [0]" in html
    finally:
        served.close()


def _admin_views(port):
    """`roster groups describe` and its members view, as the admin layer runs them over the
    wire, with the stub registered beside the built-in types."""
    from roster.admin import group_views
    from roster.admin import groups as group_commands
    from roster.admin.client import AdminClient
    from roster.group_types import with_built_in
    types = with_built_in((STUB,))
    client = AdminClient(f"127.0.0.1:{port}")
    try:
        group = group_commands.describe(client, "s", types)
        return (group_commands.describe_lines(group, None, types),
                group_views.members_view(client, "s", types),
                group_views.state_view(client, "s", types))
    finally:
        client.close()


async def _commit_and_fetch(groups):
    from roster.coordinator.messages import CommitRequest, OffsetToCommit
    await groups.commit_offsets(CommitRequest("s", member_id="m", offsets=(
        OffsetToCommit("t", 0, 7),), token=groups.new_token()))
    return [f.offset for f in groups.fetch_offsets("s", [("t", 0)])]


async def _events_written(broker):
    for _ in range(100):
        if broker.group_events.written:
            return broker.group_events.written
        await asyncio.sleep(0.01)
    return broker.group_events.written


def test_the_classic_heartbeats_own_routing_agrees_with_serving_whoever_holds_the_id():
    """GroupShard.heartbeat inlines `serving("classic", id)` for the hot path (the types that
    refuse classic requests asked first, then the hosts, then the maker): for a group held by
    each kind of type, and by none, it answers as the routing every other request takes."""
    stub = StubType()
    h = ShardDriver(more_types=(stub,))
    h.shard.replay(Record(StubKey("stub-group"), "m"))      # refuses classic requests
    token = h.token()
    h.apply(h.shard.join(JoinRequest(
        "classic-group", "", "i-1", "consumer", (("range", b""),), 10_000, 10_000,
        token=token), h.now))
    h.advance(10_000)                                     # the initial rebalance delay
    joined = h.replies[token]
    assert joined.error is ErrorCode.none
    h.apply(h.shard.type_named("consumer").heartbeat(HeartbeatRequest(
        "consumer-group", "k", 0, rebalance_timeout_ms=10_000, subscribed_topic_names=("t",),
        owned=(), token=h.token()), DictTopicImage({"t": (b"t" * 16, 1)}), h.now))
    asked = {
        "stub-group": ("m", 1, None, ErrorCode.group_id_not_found),
        "classic-group": (joined.member_id, joined.generation, "i-1", ErrorCode.none),
        # a consumer-protocol member's heartbeat over the classic API
        "consumer-group": ("k", 1, None, ErrorCode.unknown_member_id),
        "nobody's": ("x", 1, None, ErrorCode.unknown_member_id),
    }
    assert [h.shard.type_of(g).name for g in asked] == ["stub", "classic", "consumer", "classic"]
    for group_id, (member_id, generation, instance_id, expected) in asked.items():
        served = h.shard.serving("classic", group_id)
        routed = ErrorCode.group_id_not_found if isinstance(served, str) else \
            served.check_in(group_id, generation, member_id, instance_id, h.now, Result())
        fast = h.shard.heartbeat(group_id, generation, member_id, instance_id, h.now, Result())
        assert fast == routed == expected, group_id
