"""The differential harness: each scenario runs once against Apache Kafka and once against roster
(at the same time, on two threads), with the same requests at the same versions, and the two
normalised traces (wire_trace.Trace) must be equal -- except for the differences listed in
expected.py, which must show exactly as listed.

A scenario is a function of one `Session` (the peer it runs against), registered with
`@scenario(outcome=...)`; the decorator turns it into a pytest test that takes the shared
`kafka_peer` and `roster_peer` fixtures. Names a scenario creates (groups, topics) are prefixed
with the scenario's name, so scenarios share the two brokers without meeting.
"""
from __future__ import annotations

import difflib
import inspect
import json
import threading
import time
import traceback
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import pytest

from roster.protocol.api_keys import ApiKey
from tests.differential import stated
from tests.differential.expected import EXPECTED
from tests.differential.wire_trace import Trace, TracedConn
from tests.support.kafka_peer import SECURE_USERS

ROOT = Path(__file__).resolve().parents[2]
TRACE_DIR = ROOT / ".cache" / "differential"
POLL_S = 0.05
# how far roster's time for a timer outcome may lie from Kafka's, measured in the same run
TIMING_SLACK_MS, TIMING_SLACK_SHARE = 500, 0.25


@dataclass(frozen=True)
class Scenario:
    name: str
    outcome: str
    path: str
    secure: bool = False

    @property
    def command(self) -> str:
        return f".venv/bin/python -m pytest -n 0 {self.path} -k {self.name}"


SCENARIOS: dict[str, Scenario] = {}


class Session:
    """One run of one scenario against one peer: its connections, names and trace."""

    def __init__(self, scenario: str, peer: str, bootstrap: str, secure: bool = False) -> None:
        self.scenario, self.peer, self.bootstrap = scenario, peer, bootstrap
        self.secure = secure
        self.trace = Trace()
        self._conns: list[TracedConn] = []

    def name(self, name: str) -> str:
        return f"{self.scenario}.{name}"

    def conn(self, who: str, traced: bool = True, user: str = "admin") -> TracedConn:
        """A connection; on a secure peer it has authenticated as `user` (SCRAM-SHA-256)."""
        conn = self.anonymous(who, traced=False)
        if self.secure and not conn.authenticate(user, SECURE_USERS[user],
                                                 "SCRAM-SHA-256")["accepted"]:
            raise RuntimeError(f"{self.peer} refused {user}'s SCRAM-SHA-256 login")
        conn.trace = self.trace if traced else None
        return conn

    def anonymous(self, who: str, traced: bool = True) -> TracedConn:
        """A connection that has not authenticated (on a secure peer: the SASL listener)."""
        conn = TracedConn(self.bootstrap, self.trace if traced else None, who)
        self._conns.append(conn)
        return conn

    def note(self, label: str, **observed) -> None:
        self.trace.add(label, **observed)

    def close(self) -> None:
        for conn in self._conns:
            conn.close()

    def describe(self, group: str, who: str = "admin") -> None:
        """DescribeGroups as an admin sees it, into the trace."""
        admin = self.conn(who)
        admin.call(ApiKey.DESCRIBE_GROUPS, keep=("groups",), groups=[group])
        admin.close()

    # -- set-up steps that are not part of the trace ------------------------------------------
    def topic(self, name: str, partitions: int, configs: dict[str, str] | None = None) -> str:
        real = self.name(name)
        admin = self.conn("setup", traced=False)
        answer = admin.call(ApiKey.CREATE_TOPICS, timeout=30000, topics=[{
            "name": real, "num_partitions": partitions, "replication_factor": 1,
            "configs": [{"name": k, "value": v} for k, v in (configs or {}).items()]}])
        assert int(answer.topics[0].error_code) in (0, 36), answer  # 36: already exists
        self.wait(lambda: self.partitions(real) == partitions, f"{real} has {partitions} partitions")
        self.wait_coordinator_sees(real, partitions)
        self.trace.symbol("t", str(self.topic_id(real)))
        return real

    def topic_id(self, topic: str):
        admin = self.conn("setup", traced=False)
        answer = admin.call(ApiKey.METADATA, topics=[{"name": topic}],
                            allow_auto_topic_creation=False)
        admin.close()
        return answer.topics[0].topic_id

    def wait_coordinator_sees(self, topic: str, partitions: int) -> None:
        """Kafka's group coordinator learns of a topic from its metadata image a moment after
        Metadata shows it; a throw-away KIP-848 member heartbeats until it is assigned every
        partition, so a scenario's first heartbeat never races the image."""
        probe = self.conn("setup", traced=False)
        member_id, epoch = f"probe-{topic}", 0
        group = f"{topic}.probe"

        def assigned() -> bool:
            nonlocal epoch
            answer = probe.call(ApiKey.CONSUMER_GROUP_HEARTBEAT, group_id=group,
                                member_id=member_id, member_epoch=epoch,
                                rebalance_timeout=30000 if epoch == 0 else -1,
                                subscribed_topic_names=[topic] if epoch == 0 else None,
                                topic_partitions=[] if epoch == 0 else None)
            epoch = answer.member_epoch if int(answer.error_code) == 0 else 0
            got = answer.assignment
            return got is not None and sum(len(t.partitions) for t in got.topic_partitions) \
                == partitions

        self.wait(assigned, f"the group coordinator sees {topic}")
        probe.call(ApiKey.CONSUMER_GROUP_HEARTBEAT, group_id=group, member_id=member_id,
                   member_epoch=-1, rebalance_timeout=-1)
        probe.close()

    def partitions(self, topic: str) -> int:
        admin = self.conn("setup", traced=False)
        answer = admin.call(ApiKey.METADATA, topics=[{"name": topic}],
                            allow_auto_topic_creation=False)
        admin.close()
        found = answer.topics[0]
        return len(found.partitions) if int(found.error_code) == 0 else -1

    def group_state(self, group: str) -> str:
        admin = self.conn("setup", traced=False)
        answer = admin.call(ApiKey.DESCRIBE_GROUPS, groups=[group])
        admin.close()
        return answer.groups[0].group_state

    def wait_state(self, group: str, state: str, timeout_s: float = 30.0) -> None:
        self.wait(lambda: self.group_state(group) == state, f"{group} is {state}", timeout_s)

    def wait(self, condition, what: str, timeout_s: float = 30.0) -> None:
        deadline = time.monotonic() + timeout_s
        while not condition():
            if time.monotonic() > deadline:
                raise TimeoutError(f"{self.peer}: waited {timeout_s}s for {what}")
            threading.Event().wait(POLL_S)

    def timed(self, label: str, elapsed_s: float, low_ms: int, high_ms: int) -> None:
        """A timer-driven outcome: the trace holds whether it fell in [low, high] ms, a band
        both brokers must keep to; the time itself goes beside the trace, where compare()
        holds roster's to Kafka's of the same run. A broker starts its timer when it handles
        the request the harness times from, a moment before the answer arrives, so `low` sits a
        little under the nominal timeout."""
        inside = low_ms <= elapsed_s * 1000 <= high_ms
        entry = self.trace.add(label, within=f"[{low_ms}, {high_ms}] ms" if inside else
                               f"outside [{low_ms}, {high_ms}] ms: {elapsed_s * 1000:.0f} ms")
        self.trace.timings[entry["step"]] = elapsed_s * 1000


def run_one(scenario: str, body, peer: str, bootstrap: str, secure: bool = False) -> Trace:
    session = Session(scenario, peer, bootstrap, secure)
    try:
        body(session)
    except Exception as exc:  # the trace shows where this peer's story stopped
        session.trace.add("raised", error=f"{type(exc).__name__}: {exc}",
                          where=traceback.format_exc().splitlines()[-3].strip())
    finally:
        session.close()
    session.trace.finish()
    return session.trace


def expected_for(name: str) -> list:
    """The listed differences of a scenario: its own, and those of a key "prefix*" it matches."""
    return [listed for key, rows in EXPECTED.items() for listed in rows
            if key == name or (key.endswith("*") and name.startswith(key[:-1]))]


def apply_expected(name: str, kafka: list[dict], roster: list[dict]) -> None:
    """Check each listed difference shows exactly, then blank it so the rest must be equal."""
    by_step = ({e["step"]: e for e in kafka}, {e["step"]: e for e in roster})
    for listed in expected_for(name):
        for entries, want in zip(by_step, (listed.kafka, listed.roster)):
            entry = entries.get(listed.step)
            assert entry is not None, f"listed difference at {listed.step} has no such step"
            fields = [k for k in entry if k != "step"] if listed.field == "*" else [listed.field]
            got = {k: entry.get(k) for k in fields} if listed.field == "*" \
                else entry.get(listed.field)
            assert got == want, (f"listed difference {listed.step}.{listed.field}: expected "
                                 f"{want!r}, got {got!r}")
            for key in fields:
                entry.pop(key, None)
            entry["listed difference"] = listed.field


def compare_timings(name: str, kafka: Trace, roster: Trace) -> None:
    """Each timer outcome: roster's time within max(TIMING_SLACK_MS, TIMING_SLACK_SHARE of
    Kafka's) of Kafka's, both measured in this run (so a loaded machine slows both)."""
    for step, kafka_ms in kafka.timings.items():
        roster_ms = roster.timings.get(step)
        if roster_ms is None:
            continue   # roster's story stopped before this step: the trace comparison says so
        slack = max(TIMING_SLACK_MS, TIMING_SLACK_SHARE * kafka_ms)
        print(f"{name} {step}: Kafka {kafka_ms:.0f} ms, roster {roster_ms:.0f} ms "
              f"(allowed {slack:.0f} ms apart)")
        assert abs(roster_ms - kafka_ms) <= slack, (
            f"{name} {step}: roster took {roster_ms:.0f} ms, Kafka {kafka_ms:.0f} ms in the same "
            f"run; more than {slack:.0f} ms apart")


def compare(name: str, kafka: Trace, roster: Trace, roster_log: list[str] = ()) -> None:
    TRACE_DIR.mkdir(parents=True, exist_ok=True)
    texts = {}
    for peer, trace in (("kafka", kafka), ("roster", roster)):
        texts[peer] = json.dumps(trace.entries, indent=1, sort_keys=True, default=str)
        (TRACE_DIR / f"{name}.{peer}.json").write_text(texts[peer])
    assert not any(e["step"].startswith("raised") for e in kafka.entries), (
        "the scenario failed against Kafka itself (a harness bug):\n" + texts["kafka"])
    outcome = SCENARIOS[name].outcome
    missing = stated.unsupported(outcome, kafka.entries)
    assert not missing, (f"{name}: the outcome docs/compatibility.md gives for Kafka states "
                         f"{', '.join(missing)}, which Kafka's trace of this run does not "
                         f"show:\n{outcome}\nKafka's trace: {TRACE_DIR / (name + '.kafka.json')}")
    apply_expected(name, kafka.entries, roster.entries)
    if kafka.entries != roster.entries:
        diff = difflib.unified_diff(
            json.dumps(kafka.entries, indent=1, sort_keys=True, default=str).splitlines(),
            json.dumps(roster.entries, indent=1, sort_keys=True, default=str).splitlines(),
            "kafka", "roster", lineterm="", n=6)
        pytest.fail(f"{name}: roster's trace differs from Kafka's\n" + "\n".join(diff)
                    + "\nroster's log:\n" + "\n".join(list(roster_log)[-15:]), pytrace=False)
    compare_timings(name, kafka, roster)


def scenario(outcome: str, secure: bool = False):
    """Register a scenario `test_<name>(s: Session)` and make it a test over both peers."""

    def wrap(body):
        name = body.__name__.removeprefix("test_")
        path = Path(inspect.getsourcefile(body)).resolve().relative_to(ROOT).as_posix()
        SCENARIOS[name] = Scenario(name, " ".join(outcome.split()), path, secure)

        def both(kafka_bootstrap: str, roster_bootstrap: str, roster_log: list[str]) -> None:
            with ThreadPoolExecutor(2) as pool:
                kafka = pool.submit(run_one, name, body, "kafka", kafka_bootstrap, secure)
                roster = pool.submit(run_one, name, body, "roster", roster_bootstrap, secure)
                compare(name, kafka.result(), roster.result(), roster_log)

        def run(kafka_peer, roster_peer):
            both(kafka_peer.bootstrap, roster_peer.bootstrap, roster_peer.output)

        def run_secure(kafka_peer_secure, roster_peer_secure):
            both(kafka_peer_secure.bootstrap, roster_peer_secure.listener("SASL_PLAINTEXT"),
                 roster_peer_secure.output)

        test = run_secure if secure else run
        test.__name__, test.__doc__ = body.__name__, body.__doc__
        return pytest.mark.interop(pytest.mark.xdist_group("kafka")(test))

    return wrap
