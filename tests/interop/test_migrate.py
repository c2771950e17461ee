"""`roster migrate`: from a secured roster broker to a real, secured Apache Kafka 4.4.

One source roster broker for the module, set up once with what MirrorMaker 2 does not carry:
topics with configs MM2 skips, ACLs of every kind MM2 drops or narrows, SCRAM users, group
configs (and pre-registered static members), committed offsets. The module fixture runs the
dry run, --execute and the second run once; the tests then check each side of it, with real
clients on the target. Names are unique: the Kafka peer is shared with other suites.
"""
from __future__ import annotations

import os
import time

import pytest

from roster.admin import acls as acl_wire
from roster.admin import groups as group_wire
from roster.admin import migrate
from roster.admin import offsets as offset_wire
from roster.admin import reset as offset_reset
from roster.admin import topics as topic_wire
from roster.admin.client import AdminClient
from roster.security import users as user_wire
from roster.security.acls import (
    CLUSTER_NAME,
    AclBinding,
    Operation,
    Pattern,
    Permission,
    Resource,
)
from roster.security.client import ClientSecurity
from tests.support.cli import roster
from tests.support.kafka_peer import PEER_SETTINGS, SECURE_USERS, unique_name
from tests.support.process import BrokerProcess
from tests.support.security import SecureBroker, add_users_offline, plain_jaas

pytestmark = [pytest.mark.interop, pytest.mark.xdist_group("kafka")]

TAG = unique_name("mig")
CAROL, DAVE = f"carol-{TAG}", f"dave-{TAG}"
CAROL_PASSWORD = "carol s3cret=with spaces"
ORDERS, EVENTS, ALIGNED = f"{TAG}-orders", f"{TAG}-events", f"{TAG}-aligned"
SECRET = f"{TAG}-orders-secret"
INTERNAL, SYNCING = f"{TAG}-syncs.internal", f"{TAG}-syncing"   # a topic MM2 calls internal
CONFIGURED, COMMITTED, APART, BUSY = (f"{TAG}-configured", f"{TAG}-committed",
                                      f"{TAG}-apart", f"{TAG}-busy")


def _jaas(user: str, password: str) -> str:
    return ("org.apache.kafka.common.security.scram.ScramLoginModule required "
            f'username="{user}" password="{password}";')


def _properties(path, user: str, password: str, mechanism: str = "SCRAM-SHA-512"):
    # a Java properties file: backslashes and the jaas line's quotes as Kafka's tools read them
    path.write_text("security.protocol=SASL_PLAINTEXT\n"
                    f"sasl.mechanism={mechanism}\n"
                    f"sasl.jaas.config={_jaas(user, password)}\n")
    return str(path)


def _security(user: str, password: str, mechanism: str = "SCRAM-SHA-512") -> ClientSecurity:
    return ClientSecurity(protocol="SASL_PLAINTEXT", mechanism=mechanism, username=user,
                          password=password)


def _client_conf(bootstrap: str, user: str, password: str) -> dict:
    return {"bootstrap.servers": bootstrap, "security.protocol": "SASL_PLAINTEXT",
            "sasl.mechanism": "SCRAM-SHA-512", "sasl.username": user,
            "sasl.password": password}


def _produce(bootstrap: str, topic: str, partition: int, count: int) -> None:
    from confluent_kafka import Producer
    producer = Producer({"bootstrap.servers": bootstrap, "acks": "all"})
    for i in range(count):
        producer.produce(topic, value=f"v{i}".encode(), partition=partition)
    assert producer.flush(30) == 0


@pytest.fixture(scope="module")
def source(tmp_path_factory):
    """roster with SASL (SCRAM for admin) and the StandardAuthorizer, as the Kafka peer."""
    root = tmp_path_factory.mktemp("migrate-source")
    add_users_offline(root / "data", root, users=("admin",))
    broker = SecureBroker(root / "data", {
        **PEER_SETTINGS,
        "listeners": "PLAINTEXT://127.0.0.1:0,SASL_PLAINTEXT://127.0.0.1:0",
        "sasl.enabled.mechanisms": "PLAIN,SCRAM-SHA-256,SCRAM-SHA-512",
        "listener.name.sasl_plaintext.plain.sasl.jaas.config": plain_jaas(("admin",)),
        "authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
        "allow.everyone.if.no.acl.found": "false",
        "super.users": "User:admin;User:ANONYMOUS",
        # wider than Kafka's 60 s: a group config the target refuses
        "group.consumer.max.session.timeout.ms": "120000",
    }).start()
    yield broker
    broker.stop()


def _bindings() -> list[AclBinding]:
    carol = f"User:{CAROL}"
    allow, deny = Permission.ALLOW, Permission.DENY
    literal, prefixed = Pattern.LITERAL, Pattern.PREFIXED
    return [
        # MM2 drops ALLOW WRITE, narrows ALL to READ, copies no prefixed, group, cluster or
        # transactional-id ACL: every one of these must arrive exactly
        AclBinding(Resource.TOPIC, ORDERS, literal, carol, "*", Operation.WRITE, allow),
        AclBinding(Resource.TOPIC, f"{TAG}-", prefixed, carol, "*", Operation.ALL, allow),
        AclBinding(Resource.TOPIC, SECRET, literal, carol, "*", Operation.ALL, deny),
        AclBinding(Resource.GROUP, f"{TAG}-", prefixed, carol, "*", Operation.READ, allow),
        AclBinding(Resource.CLUSTER, CLUSTER_NAME, literal, carol, "*",
                   Operation.IDEMPOTENT_WRITE, allow),
        AclBinding(Resource.TRANSACTIONAL_ID, f"{TAG}-tx", literal, carol, "*",
                   Operation.WRITE, allow),
        # a host of its own: carried as it is, never widened to "*"
        AclBinding(Resource.TOPIC, EVENTS, literal, carol, "10.1.2.3", Operation.READ, deny),
    ]


def _set_up(source, kafka) -> None:
    admin = _security("admin", SECURE_USERS["admin"])
    with AdminClient(source.listener("SASL_PLAINTEXT"), security=admin) as client:
        topic_wire.create(client, ORDERS, 3, {"min.insync.replicas": "1",
                                              "retention.ms": "3600000"})
        topic_wire.create(client, SECRET, 1, {})
        topic_wire.create(client, ALIGNED, 1, {"retention.ms": "7200000"})
        topic_wire.create(client, INTERNAL, 1, {})
        acl_wire.add(client, _bindings())
        for mechanism in ("SCRAM-SHA-256", "SCRAM-SHA-512"):
            user_wire.add_wire(client, CAROL, mechanism, CAROL_PASSWORD, 8192)
        user_wire.add_wire(client, DAVE, "SCRAM-SHA-256", "dave-never-given", 4096)
        group_wire.expect(client, CONFIGURED, {"consumer.session.timeout.ms": "50000",
                                               "group.expected.instance.ids": "a,b"}, [])
    # ALIGNED holds the same records on both sides (as a caught-up mirror leaves it); ORDERS
    # only on roster
    with AdminClient(kafka.bootstrap, security=admin) as client:
        topic_wire.create(client, ALIGNED, 1, {})
    _produce(kafka.internal_bootstrap, ALIGNED, 0, 5)
    _produce(source.listener("PLAINTEXT"), ALIGNED, 0, 5)
    _produce(source.listener("PLAINTEXT"), ORDERS, 1, 4)
    with AdminClient(source.listener("PLAINTEXT")) as client:
        for group, offsets in ((COMMITTED, {(ALIGNED, 0): 3}), (APART, {(ORDERS, 1): 2}),
                               (BUSY, {(ALIGNED, 0): 1}), (SYNCING, {(INTERNAL, 0): 0})):
            offset_reset.execute(client, offset_reset.Plan(group, offsets))


@pytest.fixture(scope="module")
def prepared(source, kafka_peer_secure):
    _set_up(source, kafka_peer_secure)


@pytest.fixture(scope="module")
def busy_member(prepared, kafka_peer_secure):
    """A live member of BUSY on Kafka, with no offsets there: BUSY's offsets must wait."""
    from confluent_kafka import Consumer
    consumer = Consumer({"bootstrap.servers": kafka_peer_secure.internal_bootstrap,
                         "group.id": BUSY, "enable.auto.commit": False,
                         "session.timeout.ms": 30000})
    assigned = []
    consumer.subscribe([ALIGNED], on_assign=lambda c, parts: assigned.extend(parts))
    deadline = time.monotonic() + 60
    while not assigned and time.monotonic() < deadline:
        consumer.poll(0.2)
    assert assigned, "the member never got its partition"
    yield consumer
    consumer.close()


@pytest.fixture(scope="module")
def migrated(source, kafka_peer_secure, busy_member, tmp_path_factory):
    """The dry run, --execute, and the second run, each a real `roster migrate`."""
    work = tmp_path_factory.mktemp("migrate-run")
    config = _properties(work / "admin.properties", "admin", SECURE_USERS["admin"])
    users = work / "users.txt"
    users.write_text(f"# carried with a fresh salt\n{CAROL}={CAROL_PASSWORD}\n")
    os.chmod(users, 0o600)
    argv = ("migrate", "--bootstrap-server", source.listener("SASL_PLAINTEXT"),
            "--command-config", config, "--to", kafka_peer_secure.bootstrap,
            "--users-file", str(users))
    runs = {"dry": roster(*argv), "execute": roster(*argv, "--execute"),
            "again": roster(*argv)}
    for name, run in runs.items():   # what the guide shows; seen with pytest -s
        print(f"--- {name}\n{run.stdout}{run.stderr}")
    return runs


def _step(output: str, what: str, name: str) -> str:
    """The plan's row for (what, name), or ''."""
    for line in output.splitlines():
        if line.startswith(what + "  "):   # the WHAT column, padded
            cells = line[len(what):].strip()
            if cells.startswith(name + " "):
                return cells[len(name):].strip()
    return ""


def test_the_dry_run_plans_what_mm2_leaves_and_changes_nothing(migrated, kafka_peer_secure):
    dry = migrated["dry"]
    assert dry.returncode == 0, dry.stderr
    out = dry.stdout
    assert "create with 3 partition(s); min.insync.replicas=1, retention.ms=3600000" in \
        _step(out, "topic", ORDERS)
    assert "set retention.ms=7200000" in _step(out, "topic config", ALIGNED)
    for binding in _bindings():
        assert f"add {binding.permission.name} {binding.operation.name} for " \
               f"{binding.principal} from host {binding.host}" in out, binding
    assert "create (iterations=8192)" in _step(out, "user", f"{CAROL} SCRAM-SHA-512")
    assert "set consumer.session.timeout.ms=50000" in _step(out, "group config", CONFIGURED)
    assert f"commit {ALIGNED}-0=3" in _step(out, "offsets", COMMITTED)
    assert f"users not carried, they need a password (add user=password lines to " \
           f"--users-file): {DAVE} (SCRAM-SHA-256)" in out
    assert "pre-registered static members cannot exist on Kafka" in out
    assert f"{CONFIGURED} (instance.ids=a,b)" in out
    # ORDERS is created by this plan: empty on the target, it cannot line up with roster's
    assert f"offsets of {APART} not carried for {ORDERS}-1 (roster 0..4, target 0..0)" in out
    assert f"offsets of {BUSY} not carried: the group is active on the target" in out
    assert "Dry run: nothing was changed" in out
    # neither an internal topic nor the offsets committed on it are planned or noted
    assert INTERNAL not in out and SYNCING not in out


def test_execute_carries_the_plan_and_a_second_run_finds_nothing(migrated):
    done = migrated["execute"]
    assert done.returncode == 0, done.stdout + done.stderr
    assert "the target shows nothing left to migrate" in done.stdout
    again = migrated["again"]
    assert again.returncode == 0, again.stderr
    assert "nothing to migrate" in again.stdout
    # what cannot be carried is still said, and nothing is planned for it
    assert f"{DAVE} (SCRAM-SHA-256)" in again.stdout
    assert "Dry run" not in again.stdout


def test_the_password_is_never_printed(migrated):
    for run in migrated.values():
        assert CAROL_PASSWORD not in run.stdout + run.stderr


def test_topics_configs_acls_groups_and_offsets_are_on_kafka(migrated, kafka_peer_secure):
    assert migrated["execute"].returncode == 0
    admin = _security("admin", SECURE_USERS["admin"])
    with AdminClient(kafka_peer_secure.bootstrap, security=admin) as client:
        found = topic_wire.metadata(client, [ORDERS]).topics[0]
        assert len(found.partitions) == 3
        assert topic_wire.own_configs(client, ORDERS) == {"min.insync.replicas": "1",
                                                          "retention.ms": "3600000"}
        assert topic_wire.own_configs(client, ALIGNED)["retention.ms"] == "7200000"
        present = set(acl_wire.describe(client, acl_wire.AclFilter(principal=f"User:{CAROL}")))
        assert set(_bindings()) <= present
        assert migrate.group_configs(client, CONFIGURED) == {
            "consumer.session.timeout.ms": "50000"}
        assert offset_wire.committed(client, COMMITTED) == {(ALIGNED, 0): 3}
        assert offset_wire.committed(client, BUSY) == {}
        users = dict(user_wire.list_wire(client))
        assert sorted(users[CAROL]) == [("SCRAM-SHA-256", 8192), ("SCRAM-SHA-512", 8192)]
        assert DAVE not in users


def test_carol_authenticates_on_kafka_and_the_acls_refuse_what_roster_refused(
        migrated, kafka_peer_secure, source):
    """A real client as the migrated user, the same refusals on both sides."""
    from confluent_kafka import KafkaError, Producer
    assert migrated["execute"].returncode == 0

    def produce(bootstrap: str, topic: str):
        errors = []
        producer = Producer({**_client_conf(bootstrap, CAROL, CAROL_PASSWORD),
                             "message.timeout.ms": 20000, "enable.idempotence": False})
        producer.produce(topic, b"x", partition=0,
                         on_delivery=lambda err, msg: errors.append(err))
        producer.flush(30)
        return errors[0] if errors else "no answer"

    outcome = {}
    for side, bootstrap in (("roster", source.listener("SASL_PLAINTEXT")),
                            ("kafka", kafka_peer_secure.bootstrap)):
        outcome[side] = (produce(bootstrap, ORDERS), produce(bootstrap, SECRET))
    for side, (allowed, denied) in outcome.items():
        assert allowed is None, (side, allowed)
        assert denied is not None and denied.code() == KafkaError.TOPIC_AUTHORIZATION_FAILED, \
            (side, denied)
    # both mechanisms carried; the wrong password is refused
    with AdminClient(kafka_peer_secure.bootstrap,
                     security=_security(CAROL, CAROL_PASSWORD, "SCRAM-SHA-256")):
        pass
    from roster.admin.client import AdminError
    with pytest.raises(AdminError, match="authentication"):
        AdminClient(kafka_peer_secure.bootstrap, security=_security(CAROL, "wrong")).close()


def _authenticates(bootstrap: str, user: str, password: str, mechanism: str) -> bool:
    from roster.admin.client import AdminError
    try:
        AdminClient(bootstrap, security=_security(user, password, mechanism)).close()
    except AdminError:
        return False
    return True


def test_a_user_whose_password_differs_on_the_target_is_updated(
        migrated, source, kafka_peer_secure, tmp_path):
    """The check by logging in refuses the target's other password: the plan updates that
    mechanism alone, --execute puts the file's password back, and neither is printed."""
    assert migrated["execute"].returncode == 0
    other = "carol-changed-on-kafka"
    with AdminClient(kafka_peer_secure.bootstrap,
                     security=_security("admin", SECURE_USERS["admin"])) as client:
        user_wire.add_wire(client, CAROL, "SCRAM-SHA-256", other, 8192)
    deadline = time.monotonic() + 30
    while not _authenticates(kafka_peer_secure.bootstrap, CAROL, other, "SCRAM-SHA-256"):
        assert time.monotonic() < deadline, "the changed credential never took effect"
        time.sleep(0.2)
    users = tmp_path / "users.txt"
    users.write_text(f"{CAROL}={CAROL_PASSWORD}\n")
    os.chmod(users, 0o600)
    argv = (*_admin_args(source, tmp_path), "--to", kafka_peer_secure.bootstrap,
            "--users-file", str(users))
    dry = roster(*argv)
    assert dry.returncode == 0, dry.stderr
    assert "update (iterations=8192): the password on the target differs" in \
        _step(dry.stdout, "user", f"{CAROL} SCRAM-SHA-256"), dry.stdout
    assert _step(dry.stdout, "user", f"{CAROL} SCRAM-SHA-512") == "", dry.stdout
    done = roster(*argv, "--execute")
    assert done.returncode == 0, done.stdout + done.stderr
    for run in (dry, done):
        assert CAROL_PASSWORD not in run.stdout + run.stderr
        assert other not in run.stdout + run.stderr
    assert _authenticates(kafka_peer_secure.bootstrap, CAROL, CAROL_PASSWORD, "SCRAM-SHA-256")
    assert not _authenticates(kafka_peer_secure.bootstrap, CAROL, other, "SCRAM-SHA-256")


def test_offsets_of_a_group_that_gains_a_member_after_the_plan_are_refused(
        migrated, source, kafka_peer_secure):
    """Kafka refuses an admin's commit into a group with members: planned while the group was
    empty, the step fails with that reason once a member has joined, and nothing is written."""
    from confluent_kafka import Consumer

    from roster.admin.cluster import Cluster
    assert migrated["execute"].returncode == 0
    group = unique_name(f"{TAG}-race")
    with AdminClient(source.listener("PLAINTEXT")) as client:
        offset_reset.execute(client, offset_reset.Plan(group, {(ALIGNED, 0): 2}))
    admin = _security("admin", SECURE_USERS["admin"])
    with Cluster(source.listener("SASL_PLAINTEXT"), admin) as roster_side, \
            Cluster(kafka_peer_secure.bootstrap, admin) as target:
        planned = migrate.plan(roster_side, target)
        assert [(s.what, s.name) for s in planned.steps] == [("offsets", group)], planned
        member = Consumer({"bootstrap.servers": kafka_peer_secure.internal_bootstrap,
                           "group.id": group, "enable.auto.commit": False})
        try:
            assigned = []
            member.subscribe([ALIGNED], on_assign=lambda c, parts: assigned.extend(parts))
            deadline = time.monotonic() + 60
            while not assigned and time.monotonic() < deadline:
                member.poll(0.2)
            assert assigned, "the member never got its partition"
            outcome = migrate.execute(planned, target, lambda: migrate.plan(roster_side, target))
        finally:
            member.close()
        assert [step.name for step, _ in outcome.failed] == [group], outcome
        assert "the group became active on the target" in outcome.failed[0][1], outcome
        assert "UNKNOWN_MEMBER_ID" in outcome.failed[0][1], outcome   # Kafka's reason, kept
        assert offset_wire.committed(target.coordinator(group), group) == {}


def test_a_step_the_target_refuses_fails_alone(migrated, source, kafka_peer_secure, tmp_path):
    """Kafka refuses a session timeout above its group.consumer.max.session.timeout.ms: that
    step fails with Kafka's reason, the others are carried out, the exit code says so."""
    wide, narrow = unique_name(f"{TAG}-wide"), unique_name(f"{TAG}-narrow")
    admin = _security("admin", SECURE_USERS["admin"])
    with AdminClient(source.listener("SASL_PLAINTEXT"), security=admin) as client:
        group_wire.expect(client, wide, {"consumer.session.timeout.ms": "90000"}, [])
        group_wire.expect(client, narrow, {"consumer.heartbeat.interval.ms": "1000"}, [])
    try:
        result = roster(*_admin_args(source, tmp_path), "--to", kafka_peer_secure.bootstrap,
                        "--execute")
        assert result.returncode == 1, result.stdout + result.stderr
        assert f"FAILED group config {wide}: INVALID_CONFIG" in result.stdout
        with AdminClient(kafka_peer_secure.bootstrap, security=admin) as client:
            assert migrate.group_configs(client, narrow) == {
                "consumer.heartbeat.interval.ms": "1000"}
            assert migrate.group_configs(client, wide) == {}
    finally:
        with AdminClient(source.listener("SASL_PLAINTEXT"), security=admin) as client:
            group_wire.expect(client, wide, {}, ["consumer.session.timeout.ms"])


# -- bad input: one clear line, a non-zero exit, nothing changed ----------------------------------

def _admin_args(source, tmp_path):
    config = _properties(tmp_path / "admin.properties", "admin", SECURE_USERS["admin"])
    return ("migrate", "--bootstrap-server", source.listener("SASL_PLAINTEXT"),
            "--command-config", config)


def _one_line(result, code: int = 1) -> str:
    assert result.returncode == code, (result.stdout, result.stderr)
    assert "Traceback" not in result.stderr
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, result.stderr
    return lines[0]


def test_an_unreachable_target(source, tmp_path):
    import socket
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]   # bound, never listening: refused
        line = _one_line(roster(*_admin_args(source, tmp_path), "--to", f"127.0.0.1:{port}"))
    assert line.startswith("roster: the target: cannot connect to 127.0.0.1:"), line


def test_a_target_that_is_roster(source, tmp_path):
    line = _one_line(roster(*_admin_args(source, tmp_path),
                            "--to", source.listener("SASL_PLAINTEXT")))
    assert "is the source itself (cluster id" in line, line
    plain = tmp_path / "plain.properties"
    plain.write_text("security.protocol=PLAINTEXT\n")
    other = BrokerProcess(tmp_path / "other").start()
    try:
        line = _one_line(roster(*_admin_args(source, tmp_path), "--to", other.bootstrap,
                                "--to-command-config", str(plain)))
    finally:
        other.stop()
    assert "is a roster broker (it knows roster's own group configs" in line, line


def test_a_target_principal_without_rights(source, kafka_peer_secure, tmp_path):
    nobody = f"nobody-{TAG}"
    with AdminClient(kafka_peer_secure.bootstrap,
                     security=_security("admin", SECURE_USERS["admin"])) as client:
        user_wire.add_wire(client, nobody, "SCRAM-SHA-512", "nobody-secret", 4096)
    config = _properties(tmp_path / "nobody.properties", nobody, "nobody-secret")
    deadline = time.monotonic() + 30
    # the new credential reaches the broker's metadata image in a moment
    while not _authenticates(kafka_peer_secure.bootstrap, nobody, "nobody-secret",
                             "SCRAM-SHA-512"):
        assert time.monotonic() < deadline, "the new credential never took effect"
        time.sleep(0.2)
    line = _one_line(roster(*_admin_args(source, tmp_path), "--to", kafka_peer_secure.bootstrap,
                            "--to-command-config", config))
    assert "refuses the rights migrating needs (CLUSTER_AUTHORIZATION_FAILED)" in line, line
    assert "may not DESCRIBE or ALTER the cluster" in line, line


def test_a_topic_with_fewer_partitions_on_the_target(source, kafka_peer_secure, tmp_path):
    narrow = f"{TAG}-narrow"
    admin = _security("admin", SECURE_USERS["admin"])
    with AdminClient(source.listener("SASL_PLAINTEXT"), security=admin) as client:
        topic_wire.create(client, narrow, 4, {})
    try:
        with AdminClient(kafka_peer_secure.bootstrap, security=admin) as client:
            topic_wire.create(client, narrow, 2, {})
        line = _one_line(roster(*_admin_args(source, tmp_path), "--to",
                                kafka_peer_secure.bootstrap, "--execute"))
        assert f"refused, nothing was changed: topic {narrow} has 2 partition(s) on the " \
               "target, 4 on roster" in line, line
        with AdminClient(kafka_peer_secure.bootstrap, security=admin) as client:
            assert len(topic_wire.metadata(client, [narrow]).topics[0].partitions) == 2
    finally:
        with AdminClient(source.listener("SASL_PLAINTEXT"), security=admin) as client:
            topic_wire.delete(client, [narrow])


@pytest.mark.parametrize("content, complaint", [
    (f"{CAROL}\n", "line 1: expected user=password"),
    (f"# users\n{CAROL}=\n", f"line 2: user {CAROL} has an empty password"),
    (f"{CAROL}=a\n{CAROL}=b\n", f"line 2: user {CAROL} is given twice"),
    ('{"carol": "secret"', "is not valid JSON (line 1, column"),
    ("", "names no user"),
], ids=["no-equals", "empty-password", "given-twice", "bad-json", "empty"])   # CAROL is random:
# ids of their own keep both xdist workers collecting the same test names
def test_a_bad_users_file(source, kafka_peer_secure, tmp_path, content, complaint):
    users = tmp_path / "users"
    users.write_text(content)
    os.chmod(users, 0o600)
    line = _one_line(roster(*_admin_args(source, tmp_path), "--to", kafka_peer_secure.bootstrap,
                            "--users-file", str(users)), code=2)
    assert line.startswith(f"roster: the users file {users}"), line
    assert complaint in line, line
    assert "secret" not in line and "=a" not in line


def test_a_world_readable_users_file_is_warned_about(source, kafka_peer_secure, tmp_path):
    users = tmp_path / "users"
    users.write_text(f"{CAROL}={CAROL_PASSWORD}\n")
    os.chmod(users, 0o644)
    result = roster(*_admin_args(source, tmp_path), "--to", kafka_peer_secure.bootstrap,
                    "--users-file", str(users))
    assert result.returncode == 0, result.stderr
    assert f"WARN: the users file {users} is readable by every user of this machine: chmod " \
           "600 it" in result.stderr
    assert CAROL_PASSWORD not in result.stdout + result.stderr
