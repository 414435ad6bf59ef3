"""The kit's model-based test (jsstore.testing.machine) against jsstore's own stores: the
file store with tiny blocks (so blocks roll over, seal and get rewritten), reopened and
crash-reopened between steps, and the memory store."""

from __future__ import annotations

import pytest

import jsstore
from jsstore import StoreOptions
from jsstore.testing import ModelCases

TINY_BLOCK = 512


class TestFileStoreModel(ModelCases):
    reopens = True

    def open_store(self, directory, config):
        return jsstore.FileStore(directory, config,
                                 StoreOptions(block_size=TINY_BLOCK, sync_interval=0))

    def abandon(self, store):
        """The process dies: no clean stop (no index.db), the block files just closed."""
        store.closed = True
        for mb in store.blocks:
            mb.close_file()


class TestMemStoreModel(ModelCases):
    storage = "memory"
    reopens = False

    def open_store(self, directory, config):
        return jsstore.MemStore(config)


@pytest.mark.slow
class TestFileStoreModelSlow(TestFileStoreModel):
    model_examples = 400
    model_steps = 80


@pytest.mark.slow
class TestMemStoreModelSlow(TestMemStoreModel):
    model_examples = 400
    model_steps = 80
