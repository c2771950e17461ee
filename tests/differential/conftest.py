import pytest

from tests.support.kafka_peer import PEER_SETTINGS, SECURE_USERS
from tests.support.process import BrokerProcess
from tests.support.security import SecureBroker, add_users_offline, plain_jaas


@pytest.fixture(scope="session")
def roster_peer(tmp_path_factory):
    """The roster broker every differential scenario runs against, with Kafka's peer settings."""
    broker = BrokerProcess(tmp_path_factory.mktemp("roster-peer"), PEER_SETTINGS).start()
    yield broker
    broker.stop()


@pytest.fixture(scope="session")
def roster_peer_secure(tmp_path_factory):
    """roster with the secure Kafka peer's set-up: SASL (PLAIN, SCRAM) for admin, alice and bob,
    the StandardAuthorizer, admin and ANONYMOUS (the PLAINTEXT listener) super users."""
    root = tmp_path_factory.mktemp("roster-peer-secure")
    add_users_offline(root / "data", root, users=tuple(SECURE_USERS))
    broker = SecureBroker(root / "data", {
        **PEER_SETTINGS,
        "listeners": "PLAINTEXT://127.0.0.1:0,SASL_PLAINTEXT://127.0.0.1:0",
        "sasl.enabled.mechanisms": "PLAIN,SCRAM-SHA-256,SCRAM-SHA-512",
        "listener.name.sasl_plaintext.plain.sasl.jaas.config": plain_jaas(tuple(SECURE_USERS)),
        "authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
        "allow.everyone.if.no.acl.found": "false",
        "super.users": "User:admin;User:ANONYMOUS",
        "connection.failed.authentication.delay.ms": "100",
    }).start()
    yield broker
    broker.stop()
