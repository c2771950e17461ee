"""ACLs managed with real admin clients (confluent-kafka 2.16 sends DescribeAcls/CreateAcls/
DeleteAcls v2, kafka-python 3.0 and `roster acls` v3), on a broker with
authorizer.class.name=StandardAuthorizer: created, listed with each filter kind, removed;
refused to a principal without ALTER/DESCRIBE on the cluster; an invalid binding refused on
its own; durable across kill -9; SECURITY_DISABLED on a broker without an authorizer."""
from __future__ import annotations

import subprocess
import sys

import pytest
from confluent_kafka import KafkaException
from confluent_kafka.admin import (
    AclBinding,
    AclBindingFilter,
    AclOperation,
    AclPermissionType,
    AdminClient,
    ResourcePatternType,
    ResourceType,
)

from tests.support.process import BrokerProcess
from tests.support.security import PASSWORDS, SecureBroker

pytestmark = [pytest.mark.interop, pytest.mark.xdist_group("acls")]

STANDARD = "org.apache.kafka.metadata.authorizer.StandardAuthorizer"
JAAS = ("org.apache.kafka.common.security.plain.PlainLoginModule required "
        'username="admin" password="admin-secret" ' +
        " ".join(f'user_{u}="{p}"' for u, p in PASSWORDS.items()) + ";")


def acl_settings(**extra) -> dict[str, str]:
    return {"listeners": "PLAINTEXT://127.0.0.1:0,SASL_PLAINTEXT://127.0.0.1:0",
            "sasl.enabled.mechanisms": "PLAIN",
            "listener.name.sasl_plaintext.plain.sasl.jaas.config": JAAS,
            "authorizer.class.name": STANDARD, "super.users": "User:admin",
            "group.initial.rebalance.delay.ms": "0", **extra}


def client_conf(broker, user: str) -> dict:
    return {"bootstrap.servers": broker.listener("SASL_PLAINTEXT"),
            "security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "PLAIN",
            "sasl.username": user, "sasl.password": PASSWORDS[user]}


def command_config(broker, user: str):
    path = broker.data_dir.parent / f"{user}.properties"
    path.write_text("security.protocol=SASL_PLAINTEXT\nsasl.mechanism=PLAIN\n"
                    "sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule "
                    f'required username="{user}" password="{PASSWORDS[user]}";\n')
    return path


def roster_acls(broker, user: str, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "roster", "--log-level", "WARNING", "acls",
                           *args, "--bootstrap-server", broker.listener("SASL_PLAINTEXT"),
                           "--command-config", str(command_config(broker, user))],
                          capture_output=True, text=True, timeout=60)


def add_acls(broker, *args: str) -> None:
    """`roster acls add ...` as the admin user, which must succeed."""
    done = roster_acls(broker, "admin", "add", *args)
    assert done.returncode == 0, done.stderr


@pytest.fixture(scope="module")
def broker(tmp_path_factory):
    root = tmp_path_factory.mktemp("acls")
    broker = SecureBroker(root / "data", acl_settings()).start()
    yield broker
    broker.stop()


def binding(rt, name, principal, op, perm=AclPermissionType.ALLOW,
            pattern=ResourcePatternType.LITERAL, host="*"):
    return AclBinding(rt, name, pattern, principal, host, op, perm)


EVERYTHING = AclBindingFilter(ResourceType.ANY, None, ResourcePatternType.ANY, None, None,
                              AclOperation.ANY, AclPermissionType.ANY)


def all_acls(admin) -> set[str]:
    return {str(b) for b in admin.describe_acls(EVERYTHING).result(timeout=10)}


def test_confluent_admin_creates_describes_and_deletes(broker):
    admin = AdminClient(client_conf(broker, "admin"))
    created = [binding(ResourceType.TOPIC, "orders", "User:alice", AclOperation.READ),
               binding(ResourceType.TOPIC, "orders-", "User:alice", AclOperation.WRITE,
                       pattern=ResourcePatternType.PREFIXED),
               binding(ResourceType.TOPIC, "*", "User:bob", AclOperation.DESCRIBE,
                       perm=AclPermissionType.DENY),
               binding(ResourceType.GROUP, "readers", "User:alice", AclOperation.READ,
                       host="127.0.0.1")]
    for future in admin.create_acls(created).values():
        assert future.result(timeout=10) is None
    assert {str(b) for b in created} <= all_acls(admin)

    # MATCH: every ACL that applies to the topic orders-eu
    match = AclBindingFilter(ResourceType.TOPIC, "orders-eu", ResourcePatternType.MATCH, None,
                             None, AclOperation.ANY, AclPermissionType.ANY)
    assert {str(b) for b in admin.describe_acls(match).result(timeout=10)} == {
        str(created[1]), str(created[2])}
    by_principal = AclBindingFilter(ResourceType.ANY, None, ResourcePatternType.ANY,
                                    "User:alice", None, AclOperation.ANY,
                                    AclPermissionType.ANY)
    assert len(admin.describe_acls(by_principal).result(timeout=10)) == 3

    prefixed = AclBindingFilter(ResourceType.TOPIC, None, ResourcePatternType.PREFIXED, None,
                                None, AclOperation.ANY, AclPermissionType.ANY)
    deleted = list(admin.delete_acls([prefixed]).values())[0].result(timeout=10)
    assert [str(b) for b in deleted] == [str(created[1])]
    assert str(created[1]) not in all_acls(admin)
    for future in admin.delete_acls([EVERYTHING]).values():
        future.result(timeout=10)
    assert all_acls(admin) == set()


def test_an_invalid_binding_is_refused_alone(broker):
    admin = AdminClient(client_conf(broker, "admin"))
    good = binding(ResourceType.TOPIC, "fine", "User:alice", AclOperation.READ)
    bad = binding(ResourceType.BROKER, "not-kafka-cluster", "User:alice", AclOperation.ALTER)
    futures = admin.create_acls([good, bad])
    assert futures[good].result(timeout=10) is None
    with pytest.raises(KafkaException) as refused:
        futures[bad].result(timeout=10)
    assert refused.value.args[0].name() == "INVALID_REQUEST"
    assert "kafka-cluster" in refused.value.args[0].str()
    assert all_acls(admin) == {str(good)}
    list(admin.delete_acls([EVERYTHING]).values())[0].result(timeout=10)


def test_only_principals_allowed_on_the_cluster_manage_acls(broker):
    admin = AdminClient(client_conf(broker, "admin"))
    alice = AdminClient(client_conf(broker, "alice"))
    acl = binding(ResourceType.TOPIC, "t", "User:alice", AclOperation.ALL)
    with pytest.raises(KafkaException) as refused:
        list(alice.create_acls([acl]).values())[0].result(timeout=10)
    assert refused.value.args[0].name() == "CLUSTER_AUTHORIZATION_FAILED"
    # librdkafka drops DescribeAcls' error code (rd_kafka_DescribeAclsResponse_parse): the
    # refusal reaches confluent-kafka as an empty list; roster's CLI and kafka-python name it
    assert alice.describe_acls(EVERYTHING).result(timeout=10) == []
    refused_list = roster_acls(broker, "alice", "list")
    assert refused_list.returncode == 1
    assert "CLUSTER_AUTHORIZATION_FAILED" in refused_list.stderr
    # DESCRIBE on the cluster lets alice list, not change; ALTER implies DESCRIBE
    describe = binding(ResourceType.BROKER, "kafka-cluster", "User:alice",
                       AclOperation.DESCRIBE)
    list(admin.create_acls([describe]).values())[0].result(timeout=10)
    assert alice.describe_acls(EVERYTHING).result(timeout=10)
    with pytest.raises(KafkaException):
        list(alice.delete_acls([EVERYTHING]).values())[0].result(timeout=10)
    alter = binding(ResourceType.BROKER, "kafka-cluster", "User:bob", AclOperation.ALTER)
    list(admin.create_acls([alter]).values())[0].result(timeout=10)
    bob = AdminClient(client_conf(broker, "bob"))
    assert bob.describe_acls(EVERYTHING).result(timeout=10)
    list(bob.delete_acls([EVERYTHING]).values())[0].result(timeout=10)
    assert all_acls(admin) == set()


def test_kafka_python_admin(broker):
    from kafka.admin import (
        ACL,
        ACLFilter,
        ACLOperation,
        ACLPermissionType,
        ACLResourcePatternType,
        KafkaAdminClient,
        ResourcePattern,
        ResourcePatternFilter,
    )
    from kafka.admin import ResourceType as KType
    admin = KafkaAdminClient(bootstrap_servers=broker.listener("SASL_PLAINTEXT"),
                             security_protocol="SASL_PLAINTEXT", sasl_mechanism="PLAIN",
                             sasl_plain_username="admin",
                             sasl_plain_password=PASSWORDS["admin"])
    try:
        acl = ACL("User:carol", "*", ACLOperation.WRITE, ACLPermissionType.ALLOW,
                  ResourcePattern(KType.TOPIC, "events-", ACLResourcePatternType.PREFIXED))
        result = admin.create_acls([acl])
        assert result["failed"] == [] and len(result["succeeded"]) == 1
        any_topic = ACLFilter(None, None, ACLOperation.ANY, ACLPermissionType.ANY,
                              ResourcePatternFilter(KType.TOPIC, None,
                                                    ACLResourcePatternType.ANY))
        found, error = admin.describe_acls(any_topic)
        assert error.errno == 0
        assert [(a.principal, a.resource_pattern.resource_name) for a in found] == [
            ("User:carol", "events-")]
        deleted = admin.delete_acls([any_topic])
        assert len(deleted[0][1]) == 1
        assert admin.describe_acls(any_topic)[0] == []
    finally:
        admin.close()


def test_roster_acls_cli_with_kafka_acls_vocabulary(broker):
    done = roster_acls(broker, "admin", "add", "--allow-principal", "User:dave", "--consumer",
                       "--topic", "clicks", "--group", "click-readers")
    assert done.returncode == 0, done.stderr
    assert "Added 3 ACL(s)" in done.stdout
    listed = roster_acls(broker, "admin", "list", "--topic", "clicks")
    assert listed.returncode == 0, listed.stderr
    assert ("Current ACLs for resource `ResourcePattern(resourceType=TOPIC, name=clicks, "
            "patternType=LITERAL)`:") in listed.stdout
    assert "(principal=User:dave, host=*, operation=READ, permissionType=ALLOW)" in listed.stdout
    assert "DESCRIBE" in listed.stdout and "click-readers" not in listed.stdout
    by_principal = roster_acls(broker, "admin", "list", "--principal", "User:dave")
    assert by_principal.stdout.count("principal=User:dave") == 3
    refused = roster_acls(broker, "alice", "add", "--allow-principal", "User:alice",
                          "--operation", "All", "--topic", "*")
    assert refused.returncode == 1 and "CLUSTER_AUTHORIZATION_FAILED" in refused.stderr
    wrong = roster_acls(broker, "admin", "add", "--allow-principal", "User:dave",
                        "--operation", "Fly", "--topic", "clicks")
    assert wrong.returncode == 2 and "unknown operation 'Fly'" in wrong.stderr
    removed = roster_acls(broker, "admin", "remove", "--allow-principal", "User:dave",
                          "--operation", "Read", "--topic", "clicks")
    assert removed.returncode == 0 and "Removed 1 ACL(s)" in removed.stdout, removed.stderr
    removed = roster_acls(broker, "admin", "remove", "--topic", "clicks", "--group",
                          "click-readers", "--force")
    assert "Removed 2 ACL(s)" in removed.stdout
    assert "(no ACLs)" in roster_acls(broker, "admin", "list").stdout


def test_acls_survive_kill_9(tmp_path):
    broker = SecureBroker(tmp_path / "data", acl_settings()).start()
    try:
        admin = AdminClient(client_conf(broker, "admin"))
        acls = [binding(ResourceType.TOPIC, f"t{i}", "User:alice", AclOperation.READ)
                for i in range(20)]
        for future in admin.create_acls(acls).values():
            future.result(timeout=10)  # answered: on disk
        broker.kill9()
        broker.start()
        admin = AdminClient(client_conf(broker, "admin"))
        assert all_acls(admin) == {str(b) for b in acls}
        assert "authorizer on: 20 ACL(s)" in broker.log_text()
    finally:
        broker.stop()


def test_without_an_authorizer_the_acl_apis_answer_security_disabled(tmp_path):
    broker = BrokerProcess(tmp_path / "data").start()
    try:
        admin = AdminClient({"bootstrap.servers": broker.bootstrap})
        acl = binding(ResourceType.TOPIC, "t", "User:alice", AclOperation.READ)
        with pytest.raises(KafkaException) as refused:
            list(admin.create_acls([acl]).values())[0].result(timeout=10)
        assert refused.value.args[0].name() == "SECURITY_DISABLED"
        listed = subprocess.run([sys.executable, "-m", "roster", "acls", "list",
                                 "--bootstrap-server", broker.bootstrap],
                                capture_output=True, text=True, timeout=60)
        assert listed.returncode == 1
        assert "SECURITY_DISABLED: No Authorizer is configured on the broker" in listed.stderr
    finally:
        broker.stop()


def test_every_served_version_answers(broker):
    """v1 (no client here sends it: Java clients before 2.8 did) to v3, on the wire."""
    from roster.admin.client import AdminClient as WireClient
    from roster.protocol.build import make
    from roster.protocol.codec import request_schema
    admin = AdminClient(client_conf(broker, "admin"))
    acl = binding(ResourceType.GROUP, "wire", "User:alice", AclOperation.READ)
    list(admin.create_acls([acl]).values())[0].result(timeout=10)
    security = {"security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "PLAIN",
                "sasl.username": "admin", "sasl.password": PASSWORDS["admin"]}
    with WireClient(broker.listener("SASL_PLAINTEXT"), security=security) as client:
        for version in (1, 2, 3):
            answer = client._exchange(29, version, make(
                request_schema(29, version), resource_type_filter=3, resource_name_filter=None,
                pattern_type_filter=1, principal_filter=None, host_filter=None, operation=1,
                permission_type=1))
            assert answer.error_code == 0
            assert [(r.resource_name, [a.principal for a in r.acls])
                    for r in answer.resources] == [("wire", ["User:alice"])]
    list(admin.delete_acls([EVERYTHING]).values())[0].result(timeout=10)
