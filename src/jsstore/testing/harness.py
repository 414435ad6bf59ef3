"""The kit's harness: what a test of the store contract asks of the store under test.

A subclass says how to open its store (``open_store``) and, where they differ from the
defaults, what kind of store it is (``storage``, ``reopens``), which configuration fields
every store gets (``config_defaults``) and how it counts a message's bytes
(``message_size``).  The test bodies (``jsstore.testing.cases_*``) then call ``create()``
for a new empty store and ``reopen()`` where a persistent store must come back unchanged.
"""

from __future__ import annotations

import os

import pytest

from jsstore import errors
from jsstore.store.config import StoreConfig
from jsstore.store.contract import FILE_STORAGE, StreamStore


def file_message_size(subject: str, hdr: bytes | None, msg: bytes) -> int:
    """nats-server's file store size of a message (fileStoreMsgSize): a 22-byte record
    header, the subject, the payload and an 8-byte hash, with headers 4 more plus them."""
    size = 22 + len(subject) + len(msg) + 8
    if hdr:
        size += 4 + len(hdr)
    return size


def memory_message_size(subject: str, hdr: bytes | None, msg: bytes) -> int:
    """nats-server's memory store size of a message (memStoreMsgSize)."""
    return len(subject) + len(hdr or b"") + len(msg) + 16


class StoreHarness:
    """Base of the kit's test classes: one store under test per test, in a fresh folder."""

    storage = FILE_STORAGE      # what the store's type() answers
    reopens = True              # reopen() stops the store and opens it again on its folder
    config_defaults: dict = {}  # StoreConfig fields every store of the kit gets
    erases_on_disk = True       # erase_msg leaves no copy of the payload in the store's files

    def open_store(self, directory: str, config: StoreConfig) -> StreamStore:
        """Open the store under test in `directory` (a folder of its own, which may not
        exist yet) with `config`; called again with the same arguments by reopen()."""
        raise NotImplementedError(f"{type(self).__name__} must define open_store")

    def message_size(self, subject: str, hdr: bytes | None, msg: bytes) -> int:
        """What one message adds to state().bytes (what max_bytes limits): nats-server's
        file store size for file storage, its memory store size otherwise."""
        if self.storage == FILE_STORAGE:
            return file_message_size(subject, hdr, msg)
        return memory_message_size(subject, hdr, msg)

    # -- what the test bodies use -----------------------------------------------------
    @pytest.fixture(autouse=True)
    def _kit_folder(self, tmp_path):
        self.root = str(tmp_path)
        self.store = None
        self.config = None
        self.path = None
        self._created = 0
        yield
        self._stop_quietly()

    def _stop_quietly(self) -> None:
        if self.store is not None:
            try:
                self.store.stop()
            except errors.StoreError:
                pass

    def make_config(self, **fields) -> StoreConfig:
        """A StoreConfig: name "T", every subject, the kit's storage and defaults, then
        `fields`."""
        values = {"name": "T", "subjects": [">"], "storage": self.storage,
                  **self.config_defaults, **fields}
        return StoreConfig(**values)

    def create(self, **fields) -> StreamStore:
        """A new empty store (the previous one stopped) configured by make_config(**fields)."""
        self._stop_quietly()
        self.config = self.make_config(**fields)
        self._created += 1
        self.path = os.path.join(self.root, f"s{self._created}")
        self.store = self.open_store(self.path, self.config)
        return self.store

    def reopen(self) -> StreamStore:
        """Stop the store and open it again on its folder (when `reopens`; else the same
        store). Returns the store to go on with."""
        if self.reopens:
            self.store.stop()
            self.store = self.open_store(self.path, self.config)
        return self.store
