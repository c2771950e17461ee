"""Small file-system helpers: whole writes, directory fsync, offset files, and the one durable
replacement of a small file (durable_replace) every writer of one uses."""
from __future__ import annotations

import ctypes
import logging
import os
import tempfile
from pathlib import Path

log = logging.getLogger("roster.log")

FALLOC_FL_KEEP_SIZE = 1  # linux/falloc.h


def _libc_fallocate():
    """libc's fallocate(2), which takes the flags os.posix_fallocate does not; None elsewhere.
    CDLL(None) is the running program's own symbol table, libc included: no library search
    (ctypes.util.find_library would run ldconfig in a subprocess at import)."""
    try:
        function = ctypes.CDLL(None, use_errno=True).fallocate
    except (OSError, AttributeError):
        return None
    function.argtypes = [ctypes.c_int, ctypes.c_int, ctypes.c_int64, ctypes.c_int64]
    function.restype = ctypes.c_int
    return function


_fallocate = _libc_fallocate()


def preallocate(fd: int, offset: int, length: int) -> bool:
    """Reserve disk blocks for [offset, offset + length) without changing the file's size.

    Appends into reserved blocks skip the file system's per-write block reservation (on ext4 a
    64 KiB append costs about a third less CPU); ftruncate to the file's size gives the unused
    blocks back. Returns False where the system or file system cannot do it, or has no room:
    the caller then writes without."""
    if _fallocate is None:
        return False
    return _fallocate(fd, FALLOC_FL_KEEP_SIZE, offset, length) == 0


def write_all(fd: int, data) -> None:
    """Write all of `data` at the fd's current position; os.write may write less than asked."""
    view = memoryview(data)
    while view:
        written = os.write(fd, view)
        view = view[written:]


def write_all_parts(fd: int, parts: tuple, total: int) -> None:
    """Write the buffers in `parts` (`total` bytes together) back to back with one os.writev, so a
    batch re-stamped in pieces reaches the file without first being joined into a copy."""
    written = os.writev(fd, parts)
    if written < total:  # rare: finish a short write the slow way
        write_all(fd, memoryview(b"".join(parts))[written:])


def open_directory(path: Path) -> int:
    """An fd whose fsync makes file creations, renames and deletions in `path` durable."""
    return os.open(path, os.O_RDONLY | os.O_DIRECTORY)


def fsync_directory(path: Path) -> None:
    """Make the creations, renames and deletions of files in `path` durable."""
    fd = open_directory(path)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def durable_replace(path: Path, data: bytes, *, sync_directory: bool = True,
                    mode: int = 0o644, private_temp: bool = False) -> None:
    """Replace the small file `path` with `data`, all or nothing across a crash: write a
    temporary file beside it, fsync it, rename it over `path`, and (unless told not to) fsync
    the directory, so that after a power loss the rename is not undone and the old contents
    cannot come back. Raises OSError, the temporary file removed again.

    The temporary file is `<name>.tmp` (a crashed write's leftover is overwritten by the next,
    and FileLog removes those of its directory at open); `private_temp` gives it a name of its
    own instead, for a file two processes may write at once (the broker and an admin command).
    Blocking: call it from a worker thread where the event loop must not wait."""
    if private_temp:
        fd, name = tempfile.mkstemp(prefix=path.name + ".", suffix=".tmp", dir=path.parent)
        temporary = Path(name)
        os.fchmod(fd, mode)
    else:
        temporary = path.with_name(path.name + ".tmp")
        fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, mode)
    try:
        try:
            write_all(fd, data)
            os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(temporary, path)
    except BaseException:
        temporary.unlink(missing_ok=True)   # give back what the partial copy took
        raise
    if sync_directory:
        fsync_directory(path.parent)


def write_offset_file(path: Path, offset: int) -> None:
    """Replace `path` with `offset` atomically and durably (durable_replace).

    A crash leaves either the old or the new value. The directory is not synced: the files
    written here only ever lag behind, which is safe, and they are written on every flush.
    The trailing newline marks a complete write; read_offset_file rejects a file without it.
    """
    durable_replace(path, f"{offset}\n".encode(), sync_directory=False)


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
