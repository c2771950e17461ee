"""How `make test` (`pytest -n 2 --dist loadgroup`) spreads the slow suites over both workers (a
pytest plugin, loaded by tests/conftest.py).

loadgroup runs every test of one xdist_group on one worker. The Kafka-backed tests (differential
scenarios, the Java and Go judges against Kafka, Kafka's tools, Streams, MirrorMaker) were one
group, "kafka", so that one worker owned the Kafka peer: they are the heaviest quarter of the
suite, and the worker holding them would define the wall time while the other ran out of work.
Here each module of a group becomes a group of its own ("kafka:tests/interop/test_x.py"): a
module's tests still run together (its module-scoped fixtures start once), the modules spread
over both workers as they free up, and each worker starts its own Kafka peer the first time it
needs one (the session-scoped fixtures are per worker; Kafka's heap is 512 MB). The same goes
for the other groups that span modules ("security", "acls", "java-judges", ...): they share
nothing but the name. (pytest 9.2 is kept out by pyproject.toml: with it xdist 3.8 loses every
group silently, and all of these tests ran one by one on either worker.)

The groups in WHOLE stay whole: their session fixture is too dear to start twice (Spark's
SparkSession, the three JVMs of the Kafka cluster).
"""
from __future__ import annotations

import pytest

WHOLE = {"spark", "kafka_cluster"}


def _name(mark) -> str:
    return str(mark.args[0] if mark.args else mark.kwargs.get("name", "default"))


def _groups(node) -> set[str]:
    return {_name(m) for m in node.iter_markers("xdist_group")}


@pytest.hookimpl(tryfirst=True)   # before xdist reads the groups into the node ids
def pytest_collection_modifyitems(config, items):
    split = [(item, _groups(item) - WHOLE) for item in items]
    for item, names in split:
        if not names:
            continue
        for node in item.listchain():    # the mark may sit on the item, its class or module
            node.own_markers[:] = [m for m in node.own_markers if not (
                m.name == "xdist_group" and _name(m) in names)]
        module = item.nodeid.split("::", 1)[0]
        for name in sorted(names):
            item.add_marker(pytest.mark.xdist_group(f"{name}:{module}"))

