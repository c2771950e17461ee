"""Catalog changes and crashes: a child process builds a real data directory with the real
TopicManager and FileLog, starts a change, and kills itself with SIGKILL after a chosen step; a
fresh TopicManager then loads the directory and must find either the state before the change
or the state after it, with no leftovers."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from roster.broker.partitions.topics import CATALOG, DELETION_MARKER, TopicManager
from roster.config import BrokerConfig
from roster.log.file import FileLog
from tests.support.records import build_batch

CHILD = textwrap.dedent("""
    import os, signal, sys
    from pathlib import Path
    from roster.broker.partitions.topics import TopicManager
    from roster.config import BrokerConfig
    from roster.log.file import FileLog
    from tests.support.records import build_batch

    data, action, steps = Path(sys.argv[1]), sys.argv[2], int(sys.argv[3])
    topics = TopicManager(data, BrokerConfig.from_overrides({}), FileLog.open)
    topics.load()
    if action == "delete":
        deletion = topics.deletion_steps(topics.get("doomed"))
        for done in range(steps):
            print(next(deletion).replace(" ", "_"), flush=True)
    elif action == "create-uncommitted":
        # what a create has done when a crash hits before its catalog write
        ghost = topics.create("ghost", 2, validate_only=True)
        for log in topics._open_logs(ghost, 0, 2, fresh=True):
            log.append(bytes.fromhex(sys.argv[4]))
    os.kill(os.getpid(), signal.SIGKILL)
""")


def _manager(data: Path) -> TopicManager:
    topics = TopicManager(data, BrokerConfig.from_overrides({}), FileLog.open)
    topics.load()
    return topics


def _prepare(data: Path) -> None:
    topics = _manager(data)
    doomed = topics.create("doomed", 3, {"retention.ms": "600000"})
    kept = topics.create("kept", 1)
    for log in (*doomed.partitions, *kept.partitions):
        log.append(build_batch([b"v" * 100] * 5))
    topics.close()


def _run_child(data: Path, *args: str) -> list[str]:
    result = subprocess.run([sys.executable, "-c", CHILD, str(data), *args],
                            capture_output=True, text=True, cwd=Path(__file__).parents[2])
    assert result.returncode == -9, result.stderr
    return result.stdout.split()


# the steps deletion_steps yields for a 3-partition topic, in order
DELETION = ["marked", "partition_removed", "partition_removed", "partition_removed",
            "catalog_rewritten"]


@pytest.mark.parametrize("steps", range(len(DELETION) + 1))
def test_a_deletion_killed_after_any_step_is_undone_or_completed_by_the_restart(tmp_path, steps):
    data = tmp_path / "data"
    _prepare(data)
    done = _run_child(data, "delete", str(steps))
    assert done == DELETION[:steps]

    topics = _manager(data)
    try:
        kept = topics.get("kept")
        assert kept is not None and kept.partitions[0].log_end_offset == 5
        doomed = topics.get("doomed")
        if steps == 0:  # killed before the marker: nothing happened
            assert doomed is not None and len(doomed.partitions) == 3
            assert all(p.log_end_offset == 5 for p in doomed.partitions)
            assert doomed.configs == {"retention.ms": "600000"}
        else:           # the marker was down: the restart finished the deletion
            assert doomed is None
            assert not [p for p in data.iterdir() if p.name.startswith("doomed-")]
            assert "doomed" not in json.loads((data / CATALOG).read_text())
        assert not list(data.glob(DELETION_MARKER + "*")), "the restart leaves no marker"
        assert not (data / "topics.tmp").exists()
    finally:
        topics.close()
    # and a second restart agrees with the first
    again = _manager(data)
    try:
        assert [t.name for t in again] == (["doomed", "kept"] if steps == 0 else ["kept"])
    finally:
        again.close()


def test_a_create_killed_before_its_catalog_write_leaves_nothing_after_the_restart(tmp_path):
    data = tmp_path / "data"
    _prepare(data)
    _run_child(data, "create-uncommitted", "0", build_batch([b"half"]).hex())
    assert (data / "ghost-0").is_dir(), "the child got as far as the partition directories"

    topics = _manager(data)
    try:
        assert topics.get("ghost") is None
        assert not (data / "ghost-0").exists() and not (data / "ghost-1").exists()
        # and the name is free: a new topic of that name starts empty
        ghost = topics.create("ghost", 1)
        assert ghost.partitions[0].log_end_offset == 0
    finally:
        topics.close()


def test_a_marker_for_a_topic_the_catalog_no_longer_names_is_just_removed(tmp_path):
    data = tmp_path / "data"
    _prepare(data)
    stale = data / f"{DELETION_MARKER}00000000-0000-0000-0000-000000000001"
    os.close(os.open(stale, os.O_WRONLY | os.O_CREAT))
    topics = _manager(data)
    try:
        assert sorted(t.name for t in topics) == ["doomed", "kept"]
        assert not stale.exists()
    finally:
        topics.close()
