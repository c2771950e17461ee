"""A streams group's heartbeat (KIP-1071) under ACLs, as Kafka 4.4 checks it, over raw frames
on a SASL_PLAINTEXT connection: allowed, it joins and the coordinator creates the topology's
internal topics; a topology topic the member may not DESCRIBE refuses the heartbeat with
TOPIC_AUTHORIZATION_FAILED; without CREATE the heartbeat succeeds, its MISSING_INTERNAL_TOPICS
status says which topics it may not create, and none is created."""
from __future__ import annotations

import base64
import datetime
import time
import uuid

import pytest
from confluent_kafka.admin import AdminClient, NewTopic

from roster.protocol.api_keys import ApiKey
from roster.protocol.build import element, make
from roster.protocol.codec import request_schema
from roster.protocol.errors import ErrorCode
from tests.interop.test_acls import acl_settings, add_acls, client_conf
from tests.support.security import PASSWORDS, SecureBroker
from tests.support.wire import Wire

pytestmark = [pytest.mark.interop, pytest.mark.xdist_group("acls")]

MISSING_INTERNAL_TOPICS = 3


@pytest.fixture(scope="module")
def broker(tmp_path_factory):
    broker = SecureBroker(tmp_path_factory.mktemp("acl-streams") / "data",
                          acl_settings()).start()
    admin = AdminClient(client_conf(broker, "admin"))
    for future in admin.create_topics([NewTopic(t, 2) for t in (
            "app-a-input", "app-b-input", "app-c-input", "app-d-input", "secret-input")]).values():
        future.result(timeout=10)
    yield broker
    broker.stop()


def signed_in(broker, user: str) -> Wire:
    """A raw connection authenticated with SASL PLAIN as `user`."""
    wire = Wire(broker.listener("SASL_PLAINTEXT"))
    handshake = wire.call(ApiKey.SASL_HANDSHAKE, 1, mechanism="PLAIN")
    assert handshake.error_code == ErrorCode.none
    done = wire.call(ApiKey.SASL_AUTHENTICATE, 2,
                     auth_bytes=f"\0{user}\0{PASSWORDS[user]}".encode())
    assert done.error_code == ErrorCode.none, done.error_message
    return wire


def join(wire: Wire, group: str, source: str, changelog: str):
    member_id = base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")
    request = request_schema(ApiKey.STREAMS_GROUP_HEARTBEAT, 0)
    topology_entry = element(request, "topology")
    sub_entry = element(topology_entry, "subtopologies")
    changelog = make(element(sub_entry, "state_changelog_topics"), name=changelog,
                     partitions=0, replication_factor=-1, topic_configs=())
    topology = make(topology_entry, epoch=0, subtopologies=(make(
        sub_entry, subtopology_id="0", source_topics=(source,), source_topic_regex=(),
        state_changelog_topics=(changelog,), repartition_sink_topics=(),
        repartition_source_topics=(), copartition_groups=()),))
    return wire.call(
        ApiKey.STREAMS_GROUP_HEARTBEAT, 0, group_id=group, member_id=member_id,
        member_epoch=0, endpoint_information_epoch=0, instance_id=None, rack_id=None,
        rebalance_timeout=datetime.timedelta(seconds=30), topology=topology, active_tasks=[],
        standby_tasks=[], warmup_tasks=[], process_id="process-1", user_endpoint=None, client_tags=[],
        task_offsets=None, task_end_offsets=None, shutdown_application=False)


def topic_names(broker) -> set[str]:
    admin = AdminClient(client_conf(broker, "admin"))
    return set(admin.list_topics(timeout=10).topics)


def wait_for_topic(broker, name: str) -> None:
    deadline = time.monotonic() + 30
    while name not in topic_names(broker):
        assert time.monotonic() < deadline, f"{name} was not created"
        time.sleep(0.1)


def test_allowed_the_member_joins_and_the_changelog_is_created(broker):
    add_acls(broker, "--allow-principal", "User:alice", "--operation", "Read",
             "--group", "app-a")
    add_acls(broker, "--allow-principal", "User:alice", "--operation", "Describe",
             "--topic", "app-a-", "--resource-pattern-type", "prefixed")
    add_acls(broker, "--allow-principal", "User:alice", "--operation", "Create",
             "--topic", "app-a-", "--resource-pattern-type", "prefixed")
    with signed_in(broker, "alice") as wire:
        answer = join(wire, "app-a", "app-a-input", "app-a-store-changelog")
    assert answer.error_code == ErrorCode.none, answer.error_message
    assert answer.member_epoch >= 1
    assert all("Unauthorized" not in s.status_detail for s in answer.status)
    wait_for_topic(broker, "app-a-store-changelog")


def test_a_topology_topic_without_describe_refuses_the_heartbeat(broker):
    add_acls(broker, "--allow-principal", "User:alice", "--operation", "Read",
             "--group", "app-b")
    add_acls(broker, "--allow-principal", "User:alice", "--operation", "Describe",
             "--topic", "app-b-", "--resource-pattern-type", "prefixed")
    add_acls(broker, "--allow-principal", "User:alice", "--operation", "Create",
             "--topic", "app-b-", "--resource-pattern-type", "prefixed")
    with signed_in(broker, "alice") as wire:
        refused = join(wire, "app-b", "secret-input", "app-b-store-changelog")
        assert refused.error_code == ErrorCode.topic_authorization_failed
        # the same member's topology with its own source topic is admitted
        allowed = join(wire, "app-b", "app-b-input", "app-b-store-changelog")
        assert allowed.error_code == ErrorCode.none, allowed.error_message


def test_without_create_the_status_says_so_and_nothing_is_created(broker):
    add_acls(broker, "--allow-principal", "User:bob", "--operation", "Read",
             "--group", "app-c")
    add_acls(broker, "--allow-principal", "User:bob", "--operation", "Describe",
             "--topic", "app-c-", "--resource-pattern-type", "prefixed")
    with signed_in(broker, "bob") as wire:
        answer = join(wire, "app-c", "app-c-input", "app-c-store-changelog")
        again = join(wire, "app-c", "app-c-input", "app-c-store-changelog")
    assert answer.error_code == ErrorCode.none, answer.error_message
    statuses = {s.status_code: s.status_detail for s in answer.status}
    detail = statuses[MISSING_INTERNAL_TOPICS]
    assert detail.startswith("Internal topics are missing: ")
    assert detail.endswith("; Unauthorized to CREATE on topics app-c-store-changelog.")
    assert again.error_code == ErrorCode.none
    assert "app-c-store-changelog" not in topic_names(broker)


def describe(wire: Wire, group: str):
    (described,) = wire.call(ApiKey.STREAMS_GROUP_DESCRIBE, 0, group_ids=(group,),
                             include_authorized_operations=False).groups
    return described


def test_describe_hides_a_group_whose_topology_names_a_topic_the_caller_may_not_see(broker):
    add_acls(broker, "--allow-principal", "User:alice", "--operation", "Read",
             "--group", "app-d")
    add_acls(broker, "--allow-principal", "User:alice", "--operation", "Describe",
             "--topic", "app-d-", "--resource-pattern-type", "prefixed")
    add_acls(broker, "--allow-principal", "User:alice", "--operation", "Create",
             "--topic", "app-d-", "--resource-pattern-type", "prefixed")
    add_acls(broker, "--allow-principal", "User:bob", "--operation", "Describe",
             "--group", "app-d")
    add_acls(broker, "--allow-principal", "User:bob", "--operation", "Describe",
             "--topic", "app-d-input")
    with signed_in(broker, "alice") as wire:
        assert join(wire, "app-d", "app-d-input", "app-d-store-changelog").error_code == 0
        seen = describe(wire, "app-d")
    assert seen.error_code == ErrorCode.none and len(seen.members) == 1
    with signed_in(broker, "bob") as wire:   # bob may not see the changelog
        hidden = describe(wire, "app-d")
    assert hidden.error_code == ErrorCode.topic_authorization_failed
    assert hidden.error_message == ("The described group uses topics that the client is not "
                                    "authorized to describe.")
    assert hidden.members == () and hidden.topology is None


def push_description(wire: Wire, group: str):
    return wire.call(ApiKey.STREAMS_GROUP_TOPOLOGY_DESCRIPTION_UPDATE, 0, group_id=group,
                     member_id="m", topology_epoch=0,
                     topology_description=make(element(request_schema(
                         ApiKey.STREAMS_GROUP_TOPOLOGY_DESCRIPTION_UPDATE, 0),
                         "topology_description")))


def test_a_topology_description_push_needs_read_on_the_group_before_it_is_refused(broker):
    """As Kafka 4.4 with no description plugin: READ on the group is checked first
    (GROUP_AUTHORIZATION_FAILED), and an allowed push is UNSUPPORTED_VERSION."""
    add_acls(broker, "--allow-principal", "User:alice", "--operation", "Read",
             "--group", "app-e")
    with signed_in(broker, "bob") as wire:
        refused = push_description(wire, "app-e")
    with signed_in(broker, "alice") as wire:
        allowed = push_description(wire, "app-e")
    assert refused.error_code == ErrorCode.group_authorization_failed
    assert (allowed.error_code, allowed.error_message) == (
        ErrorCode.unsupported_version,
        "The broker has no streams group topology description plugin configured.")
