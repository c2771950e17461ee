"""The data directory at start-up: a directory another broker holds is refused untouched, a
killed holder's lock does not block a restart, and every problem with the directory itself is
one line naming it (never a traceback, never blamed on the port). Real broker processes,
real kill -9; since the tests run as root, the permission cases run the broker without root's
permission override (setpriv drops CAP_DAC_OVERRIDE) or on a read-only bind mount in a mount
namespace of its own (unshare)."""
from __future__ import annotations

import hashlib
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support import clients
from tests.support.groups import create_topic
from tests.support.process import TEST_DEFAULTS, BrokerProcess

pytestmark = pytest.mark.interop

def serve_command(data_dir: Path) -> list[str]:
    command = [sys.executable, "-m", "roster", "serve", "--host", "127.0.0.1", "--port", "0",
               "--data-dir", str(data_dir)]
    for key, value in TEST_DEFAULTS.items():
        command += ["--set", f"{key}={value}"]
    return command


def refused(command: list[str]) -> str:
    """Run a `roster serve` that must refuse to start; returns its only line of output."""
    done = subprocess.run(command, capture_output=True, text=True, timeout=60,
                          stdin=subprocess.DEVNULL)
    output = (done.stdout + done.stderr).strip()
    assert done.returncode != 0, f"it started:\n{output}"
    assert output.count("\n") == 0, f"not one line:\n{output}"
    assert output.startswith("roster: ") and "cannot serve on" not in output, output
    return output


def tree(directory: Path) -> dict[str, tuple[int, int, str]]:
    """Every file below `directory`: size, modification time and content hash."""
    found = {}
    for path in sorted(directory.rglob("*")):
        if path.is_file():
            stat = path.stat()
            found[str(path.relative_to(directory))] = (
                stat.st_size, stat.st_mtime_ns, hashlib.sha256(path.read_bytes()).hexdigest())
    return found


def produce(broker: BrokerProcess, tag: str, count: int = 300) -> list[clients.Rec]:
    records = clients.sample_records(count, 2, tag)
    clients.produce_confluent(broker.bootstrap, "t", records, "none", acks="all")
    return records


def values(broker: BrokerProcess, count: int) -> set[bytes]:
    return {r.value for r in clients.consume_kafka_python(broker.bootstrap, "t", 2, count)}


def test_a_second_broker_on_a_held_data_dir_is_refused_and_touches_nothing(tmp_path):
    data = tmp_path / "data"
    first = BrokerProcess(data).start()
    try:
        create_topic(first.bootstrap, "t", 2)
        acked = produce(first, "a")
        before = tree(data)
        second = BrokerProcess(data)
        with pytest.raises(RuntimeError):
            second.start()
        message = [line for line in second.output if line.strip()]
        assert len(message) == 1, second.output
        assert str(data) in message[0] and "in use by another broker" in message[0], message
        assert f"pid {first.proc.pid}" in message[0], message
        assert f"127.0.0.1:{first.port}" in message[0], message
        assert second.proc.returncode != 0
        assert tree(data) == before, "the refused broker changed the data directory"
        acked += produce(first, "b")   # the holder carries on unharmed
    finally:
        first.stop()
    restarted = BrokerProcess(data).start()
    try:
        assert values(restarted, len(acked)) == {r.value for r in acked}
    finally:
        restarted.stop()


def test_a_sigkilled_holder_does_not_block_the_restart(tmp_path):
    data = tmp_path / "data"
    holder = BrokerProcess(data).start()
    create_topic(holder.bootstrap, "t", 2)
    acked = produce(holder, "k")
    killed_pid = holder.proc.pid
    holder.kill9()
    assert f"pid={killed_pid}" in (data / ".lock").read_text()  # the stale description stays
    restarted = holder.start()
    try:
        assert values(restarted, len(acked)) == {r.value for r in acked}
        assert f"pid={restarted.proc.pid}" in (data / ".lock").read_text()
    finally:
        restarted.stop()


def test_a_data_dir_that_is_a_file(tmp_path):
    path = tmp_path / "data"
    path.write_text("not a directory")
    line = refused(serve_command(path))
    assert str(path) in line and "not a directory" in line, line
    assert refused(serve_command(path / "below")).count(str(path / "below")) == 1
    assert path.read_text() == "not a directory"


def without_root_override(command: list[str]) -> list[str]:
    """Run `command` as root without the capabilities that let root ignore file permissions,
    so a directory's mode bits apply to it as to any user (the tests run as root; the code
    stays readable wherever the checkout is, since root owns it)."""
    dropped = "-dac_override,-dac_read_search"
    return ["setpriv", f"--inh-caps={dropped}", f"--bounding-set={dropped}", *command]


def test_an_unwritable_data_dir_is_one_line_naming_it(tmp_path):
    existing = tmp_path / "existing"
    existing.mkdir()
    existing.chmod(0o555)   # no file may be created in it
    line = refused(without_root_override(serve_command(existing)))
    assert f"data directory {existing} is not writable: Permission denied" in line, line
    assert list(existing.iterdir()) == []

    missing = existing / "new"
    line = refused(without_root_override(serve_command(missing)))
    assert f"cannot create data directory {missing}: Permission denied" in line, line


def test_a_partition_the_broker_cannot_open_is_one_line_naming_the_dir(tmp_path):
    data = tmp_path / "data"
    broker = BrokerProcess(data).start()
    create_topic(broker.bootstrap, "t", 2)
    broker.stop()
    (data / "t-0").chmod(0o000)
    line = refused(without_root_override(serve_command(data)))
    assert f"cannot load data directory {data}" in line and "Permission denied" in line, line


def test_a_read_only_data_dir_with_data_is_one_line_and_untouched(tmp_path):
    data = tmp_path / "data"
    broker = BrokerProcess(data).start()
    create_topic(broker.bootstrap, "t", 2)
    produce(broker, "r")
    broker.kill9()   # left for recovery: a broker that went on would rewrite files
    before = tree(data)
    mount = f"mount --bind -o ro {data} {data} && exec \"$@\""
    line = refused(["unshare", "--mount", "sh", "-c", mount, "sh", *serve_command(data)])
    assert f"data directory {data} is not writable: Read-only file system" in line, line
    assert tree(data) == before
