"""durable_replace (log/files.py): the one way a small file is replaced, with real files: the
new contents or the old, never a mix; the file and its directory fsynced; no temporary file
left behind. And the producer-id blocks built on it (broker/partitions/producers.py): every id handed out
lies below a durable block end, a restart never hands one out again, and allocating on the
event loop does not wait for the disk."""
from __future__ import annotations

import os
import stat
import threading

import pytest

from roster.broker.partitions import producers
from roster.broker.partitions.producers import BLOCK, ProducerIds
from roster.log import files
from roster.log.files import durable_replace, read_offset_file, write_offset_file


@pytest.fixture
def fsyncs(monkeypatch):
    """What os.fsync was called on: 'dir' or 'file', in order."""
    seen: list[str] = []
    real = os.fsync

    def recording(fd):
        seen.append("dir" if stat.S_ISDIR(os.fstat(fd).st_mode) else "file")
        real(fd)
    monkeypatch.setattr(os, "fsync", recording)
    return seen


def test_the_file_is_replaced_and_both_it_and_its_directory_are_synced(tmp_path, fsyncs):
    path = tmp_path / "state.json"
    path.write_bytes(b"old")
    durable_replace(path, b"new contents")
    assert path.read_bytes() == b"new contents"
    assert fsyncs == ["file", "dir"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["state.json"]
    assert stat.S_IMODE(path.stat().st_mode) == 0o644


def test_offset_files_are_synced_without_their_directory(tmp_path, fsyncs):
    path = tmp_path / "recovery-point"
    write_offset_file(path, 42)
    assert read_offset_file(path) == 42 and fsyncs == ["file"]


def test_a_private_file_gets_a_temporary_name_of_its_own_and_its_mode(tmp_path, monkeypatch):
    path = tmp_path / "scram-credentials.json"
    temporaries = []
    real_replace = os.replace

    def replace(source, target):
        temporaries.append(os.path.basename(source))
        assert stat.S_IMODE(os.stat(source).st_mode) == 0o600   # never readable by others
        real_replace(source, target)
    monkeypatch.setattr(os, "replace", replace)
    durable_replace(path, b"{}", mode=0o600, private_temp=True)
    durable_replace(path, b"{}", mode=0o600, private_temp=True)
    assert len(set(temporaries)) == 2 and all(t.endswith(".tmp") for t in temporaries)
    assert stat.S_IMODE(path.stat().st_mode) == 0o600


@pytest.mark.parametrize("failing", ["fsync", "replace"])
def test_a_failed_replacement_keeps_the_old_contents_and_leaves_no_temporary_file(
        tmp_path, monkeypatch, failing):
    path = tmp_path / "topics.json"
    path.write_bytes(b"old")

    def broken(*args):
        raise OSError(28, "No space left on device")
    monkeypatch.setattr(os, failing, broken)
    with pytest.raises(OSError):
        durable_replace(path, b"new")
    monkeypatch.undo()
    assert path.read_bytes() == b"old"
    assert [p.name for p in tmp_path.iterdir()] == ["topics.json"]


def durable_end(data_dir) -> int:
    return int((data_dir / "producer-id-block").read_text())


def test_every_producer_id_lies_below_a_durable_block_end_and_a_restart_skips_them(tmp_path):
    ids = ProducerIds(tmp_path)
    handed = []
    for _ in range(3 * BLOCK + 7):
        handed.append(ids.allocate())
        assert durable_end(tmp_path) > handed[-1]
    assert handed == list(range(len(handed)))
    after_restart = ProducerIds(tmp_path).allocate()
    assert after_restart > max(handed)


def test_allocating_does_not_wait_for_the_block_ahead(tmp_path, monkeypatch):
    """The next block is written on a worker thread: allocate keeps answering from the current
    block while that write is held, and waits for it only when the current block is used up."""
    ids = ProducerIds(tmp_path)
    held, writing = threading.Event(), threading.Event()
    real = producers.durable_replace

    def slow(path, data, **options):
        writing.set()
        assert held.wait(10)
        real(path, data, **options)
    monkeypatch.setattr(producers, "durable_replace", slow)
    first = [ids.allocate() for _ in range(BLOCK - 1)]   # past half a block: the write starts
    assert writing.wait(10)
    assert durable_end(tmp_path) == BLOCK   # still held, and allocate did not wait for it
    assert first == list(range(BLOCK - 1))
    held.set()
    assert ids.allocate() == BLOCK - 1
    assert ids.allocate() == BLOCK        # the first id of the block the worker made durable
    assert durable_end(tmp_path) == 2 * BLOCK


def test_the_data_directory_files_are_written_through_it():
    """Every place that replaces a small file by hand goes through durable_replace (the others
    would each have their own guarantees again)."""
    root = os.path.dirname(os.path.dirname(files.__file__))
    offenders = []
    for directory, _, names in os.walk(root):
        for name in names:
            if name.endswith(".py") and name != "files.py":
                text = open(os.path.join(directory, name), encoding="utf-8").read()
                if "os.replace(" in text:
                    offenders.append(name)
    # file_compaction.py swaps a cleaned segment's files in (large files, its own protocol)
    assert offenders == ["file_compaction.py"]
