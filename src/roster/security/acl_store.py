"""The ACLs, durable: `<data-dir>/acls.json`, written before anyone is answered.

Kafka keeps ACLs as AccessControlEntryRecords in its metadata log. roster keeps the set as one
snapshot file, like the SCRAM credentials (credentials.py): a change writes a new file beside
it (a temporary name of its own, mode 0600), fsyncs it, renames it over the old one and fsyncs
the directory, and only then becomes the live set. A kill -9 or a power loss leaves the old
set or the new one, never a mix, and a CreateAcls/DeleteAcls answer means the change is on disk.

At 10,000 bindings the file is ~0.8 MB and a change costs one write of it (~10 ms with the
fsyncs on this kind of machine), off the event loop; ACL changes are rare.
"""
from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Iterable
from pathlib import Path

from roster.log.files import durable_replace
from roster.security.acls import AclBinding, AclIndex

log = logging.getLogger("roster.security")

FILE_NAME = "acls.json"


class AclStoreError(ValueError):
    pass


class AclStore:
    """The live ACL set (an AclIndex) and the file behind it."""

    def __init__(self, data_dir: Path) -> None:
        self.path = Path(data_dir) / FILE_NAME
        self.index = AclIndex()
        self._lock: asyncio.Lock | None = None

    @classmethod
    def open(cls, data_dir: Path) -> AclStore:
        """The store of a data directory; a temporary file a crash left mid-write is removed
        (it never became the set: the rename is what makes a change)."""
        store = cls(data_dir)
        for stale in store.path.parent.glob(FILE_NAME + ".*.tmp"):
            stale.unlink(missing_ok=True)
        store.load()
        return store

    def load(self) -> None:
        try:
            text = self.path.read_text(encoding="utf-8")
        except FileNotFoundError:
            self.index = AclIndex()
            return
        try:
            data = json.loads(text)
            bindings = [AclBinding.from_json(entry) for entry in data["acls"]]
        except (ValueError, KeyError, TypeError) as exc:
            raise AclStoreError(f"{self.path}: not an ACL file roster wrote ({exc}); refusing "
                                "to start with an unknown set of ACLs") from None
        self.index = AclIndex(bindings)

    def apply(self, added: Iterable[AclBinding] = (),
              removed: Iterable[AclBinding] = ()) -> AclIndex:
        """Write the changed set durably, then make it the live one (blocking)."""
        index = self.index.with_changes(added, removed)
        self._write(index)
        self.index = index
        return index

    async def apply_async(self, added: Iterable[AclBinding] = (),
                          removed: Iterable[AclBinding] = ()) -> AclIndex:
        """apply() with the file work off the event loop; changes one at a time, in order."""
        if self._lock is None:
            self._lock = asyncio.Lock()
        added, removed = list(added), list(removed)
        async with self._lock:
            index = self.index.with_changes(added, removed)
            if index.bindings != self.index.bindings:
                await asyncio.to_thread(self._write, index)
            self.index = index
            return index

    def _write(self, index: AclIndex) -> None:
        entries = sorted(b.to_json() for b in index.bindings)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        text = '{"version": 1, "acls": [\n' + ",\n".join(json.dumps(e) for e in entries) \
            + "\n]}\n"
        durable_replace(self.path, text.encode(), mode=0o600, private_temp=True)
