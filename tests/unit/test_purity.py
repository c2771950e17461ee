"""The pure packages import nothing that performs I/O or reads the clock (docs/architecture.md:
"Pure core, thin edges")."""
import ast
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[2] / "src" / "roster"
FORBIDDEN = {"asyncio", "socket", "time", "uuid", "random", "os", "threading", "selectors"}


# observability/'s pure parts: the flight recorder the edge derives events with (from the facts
# the core notes, coordinator/facts.py), its events, and what holds them back until their
# records are durable (the rest of observability/ is I/O: its topic, the HTTP console, the
# report)
PURE_MODULES = ["observability/events.py",
                "observability/flight_recorder.py", "observability/recorder.py",
                "observability/consumer_recorder.py", "observability/streams_recorder.py",
                "observability/share_records_recorder.py",
                "observability/after_write.py",
                "observability/axes.py",
                # the transaction coordinator and its record layouts (the edge: broker/)
                "transactions",
                # roster.client's member state machines and assignors (their drivers do I/O)
                "client/membership.py", "client/consumer_membership.py",
                "client/member_actions.py", "client/assignment_data.py", "client/assignors",
                "client/share_consumer_membership.py", "client/share_consumer_config.py",
                # the ACL matching rules (security/authorizer.py keeps and stores them)
                "security/acls.py",
                # share partitions and their __share_group_state records (edge: broker/share/)
                "share",
                # @frozen, the dataclass decorator the pure code's values are made with
                "frozen.py"]
# pure of I/O, but built on log/'s batch parsing, which is not in the pure set above
NO_IO_MODULES = ["log/producer_state.py", "log/batch.py",
                 # roster.client's share fetch core: decodes fetched batches (client/records.py)
                 "client/share_consumer_fetch.py"]


def _paths(module: str) -> list[Path]:
    return [SRC / module] if module.endswith(".py") else sorted((SRC / module).rglob("*.py"))
# what derives the flight recorder's events: the edge runs it, the core only notes facts
RECORDERS = ("roster.observability.flight_recorder", "roster.observability.recorder",
             "roster.observability.consumer_recorder", "roster.observability.streams_recorder")


@pytest.mark.parametrize("package", ["coordinator", "protocol", *PURE_MODULES, *NO_IO_MODULES])
def test_pure_packages_import_no_io(package):
    offenders = []
    for path in _paths(package):
        for node in ast.walk(ast.parse(path.read_text())):
            names = []
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                names = [node.module]
            offenders += [f"{path.name}: {n}" for n in names if n.split(".")[0] in FORBIDDEN]
    assert not offenders, offenders


def test_pure_code_imports_only_pure_roster_modules():
    """The pure core reaches nothing of the edge, even indirectly: what it imports of roster is
    pure itself (the layering has no arrow back up; protocol/message_formats.py, which read and
    built log batches, moved up to broker/ for it)."""
    pure = ("roster.coordinator", "roster.protocol",
            *("roster." + m.removesuffix(".py").replace("/", ".") for m in PURE_MODULES))
    offenders = []
    paths = [path for module in ("coordinator", "protocol", *PURE_MODULES)
             for path in _paths(module)]
    for path in paths:
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                # `from roster.coordinator import facts` imports the module facts
                names = [node.module] if node.module.startswith(pure) else \
                    [f"{node.module}.{a.name}" for a in node.names]
            elif isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            else:
                continue
            offenders += [f"{path.relative_to(SRC)}: {n}" for n in names
                          if n.startswith("roster.") and not n.startswith(pure)]
    assert not offenders, offenders


def test_the_core_does_not_call_the_flight_recorder():
    """The core notes facts in its Result (coordinator/facts.py); the edge derives the events
    from them (observability/flight_recorder.py), so no coordinator module reaches a recorder."""
    offenders = []
    for path in sorted((SRC / "coordinator").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            names = []
            if isinstance(node, ast.ImportFrom) and node.module:
                names = [node.module, *(f"{node.module}.{a.name}" for a in node.names)]
            elif isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.Attribute) and node.attr == "recorder":
                names = [".recorder"]   # a recorder handed in, or kept, by the core
            offenders += [f"{path.relative_to(SRC)}: {n}" for n in names
                          if n in RECORDERS or n == ".recorder"]
    assert not offenders, offenders


def test_the_coordinator_does_not_import_observability():
    """The core's vocabulary (coordinator/facts.py, triggers.py) is the core's own: the edge
    (observability/: the recorders, the events) reads it, so the arrow runs from observability/
    to coordinator/ only; the other way would make the two packages a cycle (which
    __consumer_offsets partition holds a group is protocol/partitioning.py)."""
    offenders = []
    for path in sorted((SRC / "coordinator").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and node.module:
                names = [node.module, *(f"{node.module}.{a.name}" for a in node.names)]
            elif isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            else:
                continue
            offenders += [f"{path.relative_to(SRC)}: {n}" for n in names
                          if n.startswith("roster.observability")]
    assert not offenders, offenders

