"""roster's pytest plugin: a Kafka-compatible broker for your tests (docs/testing.md).

Loaded by pytest through its `pytest11` entry point once roster is installed. Nothing starts
until a test asks for a fixture:

    roster_broker         the broker (roster.testing.RosterBroker): in this process, on its
                          own thread and event loop, on an ephemeral loopback port, its data in
                          pytest's tmp dir, in test mode: `roster_broker.clock.advance(s)` and
                          `roster_broker.faults` (fault injection) are at hand. One per test
                          session, and so one per pytest-xdist worker; a test marked
                          `@pytest.mark.roster_broker({...settings...})` gets one with those
                          settings (shared by the tests asking for the same ones).
    roster_bootstrap      its address: "127.0.0.1:PORT" (a str: kafka-python, aiokafka,
                          roster.client), `.servers` (a list), `.confluent` (a dict:
                          {**roster_bootstrap.confluent, "group.id": ...})
    roster_topic          a fresh topic's name, made in milliseconds (1 partition;
                          `@pytest.mark.roster_topic(partitions=3, config={...})`)
    roster_topic_factory  make(partitions=1, config=None, name=None) -> name, as often as needed
    roster_group_id       a fresh group id
    roster_session_broker the default broker, for session-scoped fixtures of your own

A failing test's report carries what the broker logged while it ran (a section "roster broker
log"), and the faults a test injected are cleared after it. The clock only moves forward and
is the broker's: a test that advances it moves it for the tests that share the broker after it.

Settings (pytest.ini / pyproject [tool.pytest.ini_options]):
    roster_settings = key=value lines: broker settings for every broker of the session
    roster_memory_log = true: partitions' logs in memory (nothing fsynced; faster)
"""
from __future__ import annotations

import itertools
import uuid

import pytest

_BROKER_KEY = pytest.StashKey["object"]()
_LOG_MARK_KEY = pytest.StashKey[int]()
MAX_EXTRA_BROKERS = 3   # brokers with a marker's own settings, kept for later tests


def pytest_addoption(parser) -> None:
    parser.addini("roster_settings", "broker settings (key=value lines) for roster's test "
                  "brokers", type="linelist", default=[])
    parser.addini("roster_memory_log", "keep roster test brokers' partition logs in memory",
                  type="bool", default=False)


def pytest_configure(config) -> None:
    config.addinivalue_line(
        "markers", "roster_broker(settings=None, memory=None): run this test against a roster "
        "broker with these broker settings (a dict of Kafka's names)")
    config.addinivalue_line(
        "markers", "roster_topic(partitions=1, config=None): the roster_topic fixture's topic")


class BrokerPool:
    """The session's brokers, by settings: the default one and those markers asked for."""

    def __init__(self, config, tmp_path_factory) -> None:
        self._config = config
        self._tmp = tmp_path_factory
        self._brokers: dict[tuple, object] = {}    # oldest first
        self._base = dict(_settings_of(config.getini("roster_settings")))
        self._memory = config.getini("roster_memory_log")

    def get(self, settings: dict | None = None, memory: bool | None = None):
        from roster.testing import RosterBroker
        wanted = {**self._base, **{k: str(v) for k, v in (settings or {}).items()}}
        memory = self._memory if memory is None else memory
        key = (tuple(sorted(wanted.items())), memory)
        broker = self._brokers.get(key)
        if broker is not None and broker.running:
            return broker
        extra = [k for k in self._brokers if k != self._default_key()]
        if key != self._default_key() and len(extra) >= MAX_EXTRA_BROKERS:
            self._brokers.pop(extra[0]).stop()
        worker = getattr(self._config, "workerinput", {}).get("workerid", "main")
        broker = RosterBroker(self._tmp.mktemp(f"roster-{worker}") / "data", wanted,
                              memory=memory).start()
        self._brokers[key] = broker
        return broker

    def _default_key(self) -> tuple:
        return (tuple(sorted(self._base.items())), self._memory)

    def stop(self) -> None:
        for broker in self._brokers.values():
            broker.stop()
        self._brokers.clear()


def _settings_of(lines) -> list[tuple[str, str]]:
    pairs = []
    for line in lines:
        key, sep, value = line.partition("=")
        if not sep:
            raise pytest.UsageError(f"roster_settings: {line!r} is not key=value")
        pairs.append((key.strip(), value.strip()))
    return pairs


@pytest.fixture(scope="session")
def roster_brokers(pytestconfig, tmp_path_factory):
    pool = BrokerPool(pytestconfig, tmp_path_factory)
    yield pool
    pool.stop()


@pytest.fixture(scope="session")
def roster_session_broker(roster_brokers):
    """The session's default broker (one per xdist worker)."""
    return roster_brokers.get()


@pytest.fixture
def roster_broker(request, roster_brokers):
    """The broker this test runs against (its marker's settings, else the session's)."""
    marker = request.node.get_closest_marker("roster_broker")
    if marker is None:
        broker = roster_brokers.get()
    else:
        settings = marker.args[0] if marker.args else marker.kwargs.get("settings")
        if settings is not None and not isinstance(settings, dict):
            raise pytest.UsageError("@pytest.mark.roster_broker takes a dict of broker "
                                    f"settings, not {settings!r}")
        broker = roster_brokers.get(settings, marker.kwargs.get("memory"))
    request.node.stash[_BROKER_KEY] = broker
    request.node.stash[_LOG_MARK_KEY] = broker.log.mark()
    yield broker
    _clear_faults(broker)


def _clear_faults(broker) -> None:
    """What the test injected does not outlive it."""
    if not broker.running:
        return
    try:
        faults = broker.faults
    except Exception:   # not in test mode, or no fault plane: nothing was injected
        return
    faults.clear()


@pytest.fixture
def roster_bootstrap(roster_broker):
    return roster_broker.bootstrap


_names = itertools.count(1)


def _fresh(request, prefix: str) -> str:
    from roster.testing.broker import safe_name
    return safe_name(f"{prefix}-{request.node.name}", 100) + \
        f"-{next(_names)}-{uuid.uuid4().hex[:6]}"


@pytest.fixture
def roster_topic_factory(request, roster_broker):
    def make(partitions: int = 1, config: dict | None = None, name: str | None = None) -> str:
        return roster_broker.create_topic(name or _fresh(request, "topic"), partitions,
                                          config)
    return make


@pytest.fixture
def roster_topic(request, roster_topic_factory):
    marker = request.node.get_closest_marker("roster_topic")
    kwargs = dict(marker.kwargs) if marker is not None else {}
    if marker is not None and marker.args:
        kwargs.setdefault("partitions", marker.args[0])
    return roster_topic_factory(kwargs.get("partitions", 1), kwargs.get("config"))


@pytest.fixture
def roster_group_id(request):
    return _fresh(request, "group")


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item, call):
    report = yield
    if report.failed:
        broker = item.stash.get(_BROKER_KEY, None)
        if broker is not None:
            lines = broker.log.since(item.stash.get(_LOG_MARK_KEY, 0))
            report.sections.append((f"roster broker log ({broker.bootstrap})",
                                    "\n".join(lines) if lines else "(nothing logged)"))
    return report
