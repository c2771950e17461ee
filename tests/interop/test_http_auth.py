"""The HTTP listener honours the Kafka listeners' authentication: with a SASL listener, /metrics
and the console need Basic credentials of a SCRAM user (wrong or missing: 401); a failed SASL
authentication on a Kafka listener shows in roster_authentication_failures_total."""
from __future__ import annotations

import pytest
from prometheus_client.parser import text_string_to_metric_families

from tests.support.http import http_get
from tests.support.ports import free_port
from tests.support.security import PASSWORDS, SecureBroker, add_users_offline, make_pki, secure_settings

pytestmark = [pytest.mark.interop, pytest.mark.xdist_group("security")]


@pytest.fixture(scope="module")
def secured(tmp_path_factory):
    root = tmp_path_factory.mktemp("http-auth")
    pki = make_pki(root / "pki")
    add_users_offline(root / "data", root)
    port = free_port()   # the listener serves before the broker says it listens
    broker = SecureBroker(root / "data", secure_settings(pki, **{"http.port": str(port)})).start()
    broker.http = f"http://127.0.0.1:{port}/"
    yield broker
    broker.stop()


def get(url: str, user: str | None = None, password: str | None = None):
    status, _, body = http_get(url, user, password)
    return status, body


def test_credentials_required_when_a_listener_uses_sasl(secured):
    assert get(secured.http + "metrics")[0] == 401
    assert get(secured.http, "alice", "wrong")[0] == 401
    assert get(secured.http, "nobody", "x")[0] == 401
    status, page = get(secured.http, "alice", PASSWORDS["alice"])
    assert status == 200 and "groups" in page


def test_failed_sasl_authentication_is_counted(secured):
    from confluent_kafka.admin import AdminClient
    admin = AdminClient({"bootstrap.servers": secured.listener("SASL_PLAINTEXT"),
                         "security.protocol": "SASL_PLAINTEXT",
                         "sasl.mechanism": "SCRAM-SHA-256", "sasl.username": "alice",
                         "sasl.password": "wrong", "socket.timeout.ms": 3000})
    with pytest.raises(Exception):
        admin.list_topics(timeout=5)
    status, text = get(secured.http + "metrics", "bob", PASSWORDS["bob"])
    assert status == 200
    failures = [s.value for f in text_string_to_metric_families(text) for s in f.samples
                if s.name == "roster_authentication_failures_total"]
    assert failures and failures[0] >= 1
