"""The refusals of fault injection, tested as carefully as the faults: a broker not in test
mode refuses every route, the CLI and `broker.faults`; test mode is refused at start on a
listener anyone can reach without authenticating; bad arguments are refused with what was
wrong, and nothing is armed by them."""
from __future__ import annotations

import subprocess
import sys

import pytest

from roster.config import BrokerConfig, ConfigError, check_test_mode
from roster.security.listeners import Listener
from tests.interop.test_faults import TEST_MODE, Faulty, call
from tests.support.process import BrokerProcess

pytestmark = pytest.mark.interop


def roster(*argv: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "roster", *argv], capture_output=True,
                          text=True, timeout=60)


@pytest.fixture(scope="module")
def plain(tmp_path_factory):
    """A broker with its console, not in test mode."""
    broker = BrokerProcess(tmp_path_factory.mktemp("plain") / "data",
                           {"http.port": "0"}).start()
    yield Faulty(broker)
    broker.stop()


@pytest.fixture(scope="module")
def faulty(tmp_path_factory):
    broker = BrokerProcess(tmp_path_factory.mktemp("faulty") / "data", TEST_MODE).start()
    yield Faulty(broker)
    broker.stop()


# -- test mode off ------------------------------------------------------------------------------

@pytest.mark.parametrize("method,document", [("GET", None), ("DELETE", None),
                                             ("POST", {"action": "fail_next", "api": "Produce",
                                                       "error": "NOT_LEADER_OR_FOLLOWER"})])
def test_every_route_refuses_outside_test_mode(plain, method, document):
    status, answer = call(plain.url, method, document)
    assert status == 403
    assert "only in test mode" in answer["error"]
    assert "--test-mode" in answer["error"]


def test_the_cli_refuses_outside_test_mode(plain):
    done = roster("faults", "fail-next", "Produce", "NOT_LEADER_OR_FOLLOWER", "--http",
                  plain.url)
    assert done.returncode == 1
    assert "only in test mode" in done.stderr and "HTTP 403" in done.stderr


def test_broker_faults_refuses_outside_test_mode(tmp_path):
    from roster.broker.broker import Broker
    from roster.broker.faults import FaultsRefused
    broker = Broker(BrokerConfig.from_overrides({}), tmp_path)
    assert broker.test_mode is False
    with pytest.raises(FaultsRefused, match="only in test mode"):
        broker.faults.fail_next("Heartbeat", "NOT_COORDINATOR")
    assert broker.armed_faults is None and broker.append_faults is None


# -- where test mode may run ---------------------------------------------------------------------

def test_serve_refuses_test_mode_on_every_interface(tmp_path):
    done = roster("serve", "--host", "0.0.0.0", "--port", "0", "--test-mode", "--data-dir",
                  str(tmp_path / "data"))
    assert done.returncode != 0
    assert "roster.test.mode=true refused: listener PLAINTEXT (PLAINTEXT) binds 0.0.0.0" \
        in done.stderr
    assert "roster listening" not in done.stdout
    # refused before the data directory is loaded
    assert not (tmp_path / "data" / "meta.properties").exists()


def test_serve_refuses_test_mode_with_the_console_on_every_interface(tmp_path):
    done = roster("serve", "--port", "0", "--test-mode", "--set", "http.host=0.0.0.0",
                  "--http-port", "0", "--data-dir", str(tmp_path / "data"))
    assert done.returncode != 0
    assert "the HTTP port (http.host=0.0.0.0) is not a loopback address" in done.stderr


def _config(**settings) -> BrokerConfig:
    return BrokerConfig.from_overrides({"roster.test.mode": "true", **settings})


@pytest.mark.parametrize("host", ["127.0.0.1", "127.0.0.2", "localhost", "::1", "[::1]"])
def test_loopback_listeners_may_run_test_mode(host):
    check_test_mode(_config(), [Listener("PLAINTEXT", "PLAINTEXT", host, 0)])


@pytest.mark.parametrize("host", ["", "0.0.0.0", "::", "10.1.2.3", "broker.example.com"])
def test_other_listeners_without_authentication_may_not(host):
    with pytest.raises(ConfigError, match="roster.test.mode=true refused: listener PLAINTEXT"):
        check_test_mode(_config(), [Listener("PLAINTEXT", "PLAINTEXT", host, 0)])


def test_one_open_listener_among_loopback_ones_is_enough_to_refuse():
    with pytest.raises(ConfigError, match="listener OUTSIDE"):
        check_test_mode(_config(), [Listener("INSIDE", "PLAINTEXT", "127.0.0.1", 0),
                                    Listener("OUTSIDE", "PLAINTEXT", "0.0.0.0", 0)])


def test_authenticating_listeners_may_run_test_mode_anywhere():
    check_test_mode(_config(), [Listener("SASL_PLAINTEXT", "SASL_PLAINTEXT", "0.0.0.0", 0),
                                Listener("SASL_SSL", "SASL_SSL", "0.0.0.0", 0)])
    check_test_mode(_config(**{"ssl.client.auth": "required"}),
                    [Listener("SSL", "SSL", "0.0.0.0", 0)])
    # a console on every interface is then asked for credentials (a SASL listener): allowed
    check_test_mode(_config(**{"http.port": "0", "http.host": "0.0.0.0"}),
                    [Listener("SASL_PLAINTEXT", "SASL_PLAINTEXT", "0.0.0.0", 0)])


@pytest.mark.parametrize("client_auth", ["none", "requested"])
def test_tls_without_required_client_certificates_is_not_authentication(client_auth):
    with pytest.raises(ConfigError, match="listener SSL"):
        check_test_mode(_config(**{"ssl.client.auth": client_auth}),
                        [Listener("SSL", "SSL", "0.0.0.0", 0)])


def test_without_test_mode_any_listener_is_as_before():
    check_test_mode(BrokerConfig.from_overrides({}),
                    [Listener("PLAINTEXT", "PLAINTEXT", "0.0.0.0", 0)])


# -- bad arguments --------------------------------------------------------------------------------

BAD = [
    ({"action": "fail_next", "api": "NoSuchApi", "error": "NOT_COORDINATOR"},
     "api='NoSuchApi': no such API"),
    ({"action": "fail_next", "api": 999, "error": "NOT_COORDINATOR"},
     "serves no API with key 999"),
    ({"action": "fail_next", "api": "Heartbeat", "error": "NOT_AN_ERROR"},
     "not a Kafka error name or code"),
    ({"action": "fail_next", "api": "Heartbeat", "error": 9999}, "no Kafka error has this code"),
    ({"action": "fail_next", "api": "Heartbeat", "error": "NONE"}, "not an error"),
    ({"action": "fail_next", "api": "Heartbeat", "error": 16, "count": 0}, "count=0"),
    ({"action": "fail_next", "api": "Heartbeat", "error": 16, "count": "two"}, "count='two'"),
    ({"action": "fail_next", "api": "Heartbeat", "error": 16, "group_id": 7}, "group_id=7"),
    ({"action": "fail_next", "api": "Heartbeat"}, "missing a required argument: 'error'"),
    ({"action": "fail_next", "api": "Heartbeat", "error": 16, "colour": "red"},
     "unexpected keyword argument 'colour'"),
    ({"action": "delay", "api": "Fetch", "ms": -5}, "ms=-5"),
    ({"action": "delay", "api": "Fetch", "ms": 10 ** 9}, "ms=1000000000"),
    ({"action": "refuse_coordinator", "seconds": 0}, "seconds=0"),
    ({"action": "refuse_coordinator", "seconds": 5, "error": "UNKNOWN_MEMBER_ID"},
     "a coordinator refuses with NOT_COORDINATOR"),
    ({"action": "fail_next_commit", "group": ""}, "group='': expected a group id"),
    ({"action": "fail_appends", "count": -1}, "count=-1"),
    ({"action": "remove_member", "group": "g"}, "give member_id or instance_id"),
    ({"action": "fence_instance", "group": "nobody-here", "instance_id": "i-1"},
     "no classic group with members"),
    ({"action": "force_rebalance", "group": "nobody-here"}, "no classic group with members"),
    ({"action": "explode"}, "action 'explode': not one of"),
    ({"api": "Heartbeat"}, 'a JSON object with "action"'),
    ([1, 2], 'a JSON object with "action"'),
]


@pytest.mark.parametrize("document,words", BAD, ids=[w[:30] for _, w in BAD])
def test_bad_arguments_are_refused_and_arm_nothing(faulty, document, words):
    status, answer = call(faulty.url, "POST", document)
    assert status == 400, answer
    assert words in answer["error"]
    assert faulty.rules() == []


def test_a_body_that_is_not_json_is_refused(faulty):
    import urllib.error
    import urllib.request
    request = urllib.request.Request(faulty.url + "faults", data=b"fail_next Heartbeat",
                                     method="POST")
    with pytest.raises(urllib.error.HTTPError) as refused:
        urllib.request.urlopen(request, timeout=10)
    assert refused.value.code == 400
    assert b"not JSON" in refused.value.read()


def test_clear_by_an_id_that_is_not_a_number_is_refused(faulty):
    status, answer = call(faulty.url, "DELETE", query="?id=three")
    assert status == 400 and "id='three'" in answer["error"]


def test_the_cli_says_what_was_wrong_and_arms_what_is_right(faulty):
    done = roster("faults", "fail-next", "Heartbeat", "NOT_AN_ERROR", "--http", faulty.url)
    assert done.returncode == 1 and "not a Kafka error name or code" in done.stderr
    done = roster("faults", "fail-next", "Heartbeat", "NOT_COORDINATOR", "--count", "3",
                  "--group", "g1", "--http", faulty.url)
    assert done.returncode == 0, done.stderr
    assert '"group_id": "g1"' in done.stdout and '"remaining": 3' in done.stdout
    listed = roster("faults", "list", "--http", faulty.url)
    assert '"HEARTBEAT"' in listed.stdout
    cleared = roster("faults", "clear", "--http", faulty.url)
    assert '"cleared": 1' in cleared.stdout
    assert faulty.rules() == []


# -- the routes are authenticated as the console is ----------------------------------------------

@pytest.mark.xdist_group("security")
def test_with_a_sasl_listener_the_routes_and_the_cli_need_a_scram_user(tmp_path):
    import base64
    import json
    import urllib.error
    import urllib.request

    from tests.support.security import PASSWORDS, secure_broker_with_console
    broker, url = secure_broker_with_console(tmp_path, **{"roster.test.mode": "true"})
    try:
        def post(user=None, password=None):
            request = urllib.request.Request(url + "faults", method="POST", data=json.dumps(
                {"action": "fail_next", "api": "Heartbeat", "error": "NOT_COORDINATOR"}).encode())
            if user is not None:
                token = base64.b64encode(f"{user}:{password}".encode()).decode()
                request.add_header("Authorization", f"Basic {token}")
            try:
                with urllib.request.urlopen(request, timeout=10) as answer:
                    return answer.status
            except urllib.error.HTTPError as refused:
                return refused.code
        assert post() == 401
        assert post("alice", "wrong") == 401
        assert post("alice", PASSWORDS["alice"]) == 200
        refused = roster("faults", "list", "--http", url)
        assert refused.returncode == 1 and "HTTP 401" in refused.stderr
        secret = tmp_path / "password"
        secret.write_text(PASSWORDS["alice"] + "\n")
        listed = roster("faults", "list", "--http", url, "--user", "alice",
                        "--password-file", str(secret))
        assert listed.returncode == 0 and '"HEARTBEAT"' in listed.stdout
    finally:
        broker.stop()


def test_a_test_mode_broker_says_so_when_it_starts(faulty):
    faulty.broker.wait_for_line("test mode (roster.test.mode): faults can be injected")


def test_every_cli_action_reaches_its_method(faulty):
    """Each `roster faults` action arms (or refuses) through its broker.faults method."""
    url = ["--http", faulty.url]
    call(faulty.url, "DELETE")
    armed = [
        ("delay", "Fetch", "250", "--count", "2"),
        ("drop-connection", "Metadata", "--client-id", "c1"),
        ("refuse-coordinator", "30", "--error", "COORDINATOR_LOAD_IN_PROGRESS", "--group", "g"),
        ("fail-next-commit", "g", "--count", "2", "--error", "REQUEST_TIMED_OUT"),
        ("fail-appends", "--count", "2", "--topic", "t"),
        ("fail-next", "Produce", "29", "--always"),
    ]
    for argv in armed:
        done = roster("faults", *argv, *url)
        assert done.returncode == 0, (argv, done.stderr)
    kinds = sorted(rule["kind"] for rule in faulty.rules())
    assert kinds == ["delay", "drop", "fail", "fail", "fail_appends", "refuse_coordinator"]
    always = next(r for r in faulty.rules() if r.get("error") == "TOPIC_AUTHORIZATION_FAILED")
    assert always["remaining"] is None
    for argv, words in ((("remove-member", "g"), "give member_id or instance_id"),
                        (("fence-instance", "g", "i-1"), "no classic group with members"),
                        (("force-rebalance", "g"), "no classic group with members")):
        done = roster("faults", *argv, *url)
        assert done.returncode == 1 and words in done.stderr, (argv, done.stderr)
    assert roster("faults", "clear", "--id", str(always["id"]), *url).returncode == 0
    assert len(faulty.rules()) == 5
    assert roster("faults", "clear", *url).returncode == 0
    assert faulty.rules() == []
