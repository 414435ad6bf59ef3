"""Shared fixtures.

`file_factory` yields a StoreFactory for the file store with default blocks, with tiny
blocks (many rollovers), and with tiny s2- and lz4-compressed blocks (the store contract
itself runs through jsstore.testing's kit: test_store_contract.py).  The pytest plugin
jsstore.testing.plugin (its fixtures: jetstream_sync, jsstore_server, ...) is loaded here
unless the installed jsstore registers it already (its pytest11 entry point).
"""

from __future__ import annotations

import os
from importlib import metadata

import pytest

import jsstore
from jsstore import StoreOptions, StreamConfig
from sparksession import source_format, spark  # noqa: F401  (one Spark session shared by test_spark_*.py)

TINY_BLOCK = 1024
PLUGIN = "jsstore.testing.plugin"
pytest_plugins = [] if any(ep.value == PLUGIN for ep in metadata.entry_points(group="pytest11")) \
    else [PLUGIN]


class StoreFactory:
    """Creates stores of one kind; tracks them so the fixture can stop them at the end."""

    def __init__(self, kind: str, directory: str, block_size: int, compression: str,
                 reopens: bool):
        self.kind = kind
        self.directory = directory
        self.block_size = block_size
        self.compression = compression
        self.reopens = reopens
        self.store = None
        self.config = None
        self._created = 0

    @property
    def is_file(self) -> bool:
        return self.kind != "memory"

    def create(self, **config_fields):
        """A new empty store; config_fields go to StreamConfig (name defaults to "T")."""
        config_fields.setdefault("name", "T")
        config_fields.setdefault("subjects", [">"])
        if self.is_file:
            config_fields.setdefault("compression", self.compression)
            config_fields["storage"] = "file"
        else:
            config_fields["storage"] = "memory"
        self.config = StreamConfig(**config_fields)
        if self.store is not None and not self.store.closed:
            self.store.stop()
        self._created += 1
        self.path = os.path.join(self.directory, f"s{self._created}")
        self.store = self._open()
        return self.store

    def _open(self):
        if self.is_file:
            return jsstore.FileStore(self.path, self.config,
                                     StoreOptions(block_size=self.block_size, sync_interval=0))
        return jsstore.MemStore(self.config)

    def reopen(self):
        """Stop and reopen the current store when this permutation reopens; else no-op."""
        if self.reopens and self.is_file:
            self.store.stop()
            self.store = self._open()
        return self.store

    def force_reopen(self):
        """Stop and reopen a file store regardless of the permutation (crash-free path)."""
        assert self.is_file
        if not self.store.closed:
            self.store.stop()
        self.store = self._open()
        return self.store

    def close(self):
        if self.store is not None and not self.store.closed:
            self.store.stop()


# (id, kind, block_size, compression)
_KINDS = [
    ("memory", "memory", 0, "none"),
    ("file", "file", 0, "none"),
    ("file-tiny", "file", TINY_BLOCK, "none"),
    ("file-s2", "file", TINY_BLOCK, "s2"),
    ("file-lz4", "file", TINY_BLOCK, "lz4"),
]
PERMUTATIONS = [(k, False) for k in _KINDS] + [(k, True) for k in _KINDS if k[1] == "file"]


@pytest.fixture(params=[k for k in PERMUTATIONS if k[0][1] == "file" and not k[1]],
                ids=[k[0][0] for k in PERMUTATIONS if k[0][1] == "file" and not k[1]])
def file_factory(request, tmp_path):
    """Only the file-store permutations (for on-disk behaviour)."""
    (_, kind, block_size, compression), reopens = request.param
    factory = StoreFactory(kind, str(tmp_path), block_size, compression, reopens)
    yield factory
    factory.close()
