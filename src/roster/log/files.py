"""Small file-system helpers the file log is built on: whole writes, directory fsync, offset files."""
from __future__ import annotations

import logging
import os
from pathlib import Path

log = logging.getLogger("roster.log")


def write_all(fd: int, data) -> None:
    """Write all of `data` at the fd's current position; os.write may write less than asked."""
    view = memoryview(data)
    while view:
        written = os.write(fd, view)
        view = view[written:]


def write_all_parts(fd: int, parts: tuple) -> None:
    """Write the buffers in `parts` back to back with one os.writev, so a batch re-stamped in
    pieces reaches the file without first being joined into a copy."""
    written = os.writev(fd, parts)
    if written < sum(len(part) for part in parts):  # rare: finish a short write the slow way
        write_all(fd, memoryview(b"".join(parts))[written:])


def open_directory(path: Path) -> int:
    """An fd whose fsync makes file creations, renames and deletions in `path` durable."""
    return os.open(path, os.O_RDONLY | os.O_DIRECTORY)


def write_offset_file(path: Path, offset: int) -> None:
    """Replace `path` with `offset` atomically and durably (write a temporary file, fsync, rename).

    A crash leaves either the old or the new value. The caller fsyncs the directory if the rename
    itself must survive a crash; the files written here only ever lag behind, which is safe.
    """
    tmp = path.with_name(path.name + ".tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    try:
        # The trailing newline marks a complete write; read_offset_file rejects a file without it.
        write_all(fd, f"{offset}\n".encode())
        os.fsync(fd)
    finally:
        os.close(fd)
    os.replace(tmp, path)


def read_offset_file(path: Path) -> int | None:
    """The offset stored by write_offset_file, or None if the file is missing or malformed."""
    try:
        text = path.read_text()
    except FileNotFoundError:
        return None
    if not text.endswith("\n") or not text[:-1].isdigit():
        log.warning("ignoring malformed %s (%r)", path, text[:40])
        return None
    return int(text[:-1])
