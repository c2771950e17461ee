"""docs/compatibility.md, generated from the scenarios and the table of listed differences, so the
document says exactly what the harness compares (tests/differential/test_catalog.py keeps it
equal). Regenerate with:

    .venv/bin/python -m tests.differential.catalog > docs/compatibility.md
"""
from __future__ import annotations

import importlib
import pkgutil
from pathlib import Path

import tests.differential as package
from tests.differential import wire_trace
from tests.differential.harness import SCENARIOS, expected_for
from tests.support.kafka_peer import KAFKA_VERSION, PEER_SETTINGS, SINGLE_NODE

HEAD = f"""# roster beside Apache Kafka {KAFKA_VERSION}

Every behaviour below was run against released Apache Kafka {KAFKA_VERSION} (one KRaft node,
`tests/support/kafka_peer.py`) and against roster, with the same raw requests at the same
versions, by the differential harness in `tests/differential/`. Each scenario records a
normalised trace of what the clients observe -- per request the API, version and error codes;
per member its generation or epoch, leader, member list and assignment; the answers of
DescribeGroups, ConsumerGroupDescribe, ListGroups and OffsetFetch; timer-driven outcomes as
"within [low, high] ms" -- and the test asserts the two traces are equal, except for the
differences listed in the roster column, which must show exactly as listed. A timer outcome's
time itself is compared too: roster's within max(500 ms, 25%) of Kafka's in the same run. The
Kafka column is checked against Kafka's trace of every run (`tests/differential/stated.py`):
each error code it names must be in one of Kafka's answers, each generation it names in a
generation field. The traces of the last run are in
`.cache/differential/<scenario>.{{kafka,roster}}.json`.

This file is generated: `.venv/bin/python -m tests.differential.catalog > docs/compatibility.md`
(`tests/differential/test_catalog.py` fails when it is stale). All scenarios:
`.venv/bin/python -m pytest -n 0 tests/differential` (`make test` runs them too).
"""

OFF_TRACE = """
## Differences a trace cannot show

- **Group configs are fsynced before the answer.** roster keeps them in `group-configs.json` in
  its data directory, replaced atomically and fsynced before IncrementalAlterConfigs answers;
  Kafka writes them to its metadata log. The answers are the same.
- **KIP-848 assignments are computed on the heartbeat that needs one.** Kafka 4.4 batches
  target-assignment computations (`group.consumer.assignment.interval.ms`, default 1 s) and runs
  them off the coordinator thread (`group.consumer.assignor.offload.enable`); roster takes both
  settings (and the groups' `consumer.assignment.interval.ms` and
  `consumer.assignor.offload.enable`), describes them as Kafka does, and answers as Kafka does
  with an interval of 0 and no offload, which is how the harness runs both brokers. With
  Kafka's defaults a member can see its assignment a heartbeat later.
- **A KIP-848 assignment is repeated until the member reports owning it.** Kafka puts the
  assignment in a ConsumerGroupHeartbeat answer only when it changed or the request was full.
  librdkafka times a heartbeat out after one heartbeat interval and resends it unchanged, not as
  a full request, so an answer with a revocation that arrives late is lost and the member keeps
  the partitions until its rebalance timeout; on a loaded machine with a 500 ms interval this
  stalled a rolling bounce. roster repeats the assignment in every answer until the member's
  owned partitions match it (kept in memory; the clients ignore an assignment equal to theirs).
  Against Kafka's answers this differs only between an assignment and its acknowledgement.
"""


def load_scenarios() -> None:
    for module in pkgutil.iter_modules(package.__path__):
        if module.name.startswith("test_"):
            importlib.import_module(f"{package.__name__}.{module.name}")


def cell(text: str) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")


def roster_cell(name: str) -> str:
    listed = expected_for(name)
    if not listed:
        return "same"
    parts = [f"same, except at `{d.step}` ({d.field}): Kafka `{d.kafka}`, roster `{d.roster}` "
             f"-- {d.reason}" for d in listed]
    return "; ".join(parts)


def settings_section() -> str:
    shared = ", ".join(f"`{k}={v}`" for k, v in PEER_SETTINGS.items())
    kafka_only = ", ".join(f"`{k}={v}`" for k, v in SINGLE_NODE.items())
    return ("\n## Settings\n\nBoth peers: " + shared + ".\n\nKafka only (a one-node cluster, and "
            "the two assignment settings above): " + kafka_only + ".\n")


def normalisation_section() -> str:
    doc = wire_trace.__doc__
    rules = doc[doc.index("Normalisation"):].strip()
    return "\n## Normalisation\n\n" + rules + "\n"


def render() -> str:
    load_scenarios()
    rows = ["| Scenario | Kafka " + KAFKA_VERSION + " | roster | Rerun |",
            "| --- | --- | --- | --- |"]
    for scenario in sorted(SCENARIOS.values(), key=lambda s: (s.path, s.name)):
        peers = " (SASL/SCRAM, StandardAuthorizer)" if scenario.secure else ""
        rows.append(f"| {scenario.name}{peers} | {cell(scenario.outcome)} | "
                    f"{cell(roster_cell(scenario.name))} | `{scenario.command}` |")
    return (HEAD + "\n## Behaviours compared\n\n" + "\n".join(rows) + "\n" + OFF_TRACE
            + normalisation_section() + settings_section())


DOC = Path(__file__).resolve().parents[2] / "docs" / "compatibility.md"

if __name__ == "__main__":
    print(render(), end="")
