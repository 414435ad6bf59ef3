"""The stream store contract (jsstore.testing's kit) run against jsstore's own stores, in
every permutation: the memory store; the file store with default blocks, with tiny blocks
(many rollovers), with tiny s2- and lz4-compressed blocks, and each of the file ones again
in "reopen" mode, where the kit's reopen() stops the store and opens it again on the same
directory (elsewhere reopen() goes on with the same store).  Below them, what only the
file store does: its sticky write errors.
"""

from __future__ import annotations

import os

import pytest

import jsstore
from jsstore import StoreOptions, errors
from jsstore.testing import BulkCases, MessageCases, QueryCases

TINY_BLOCK = 1024


class ContractCases(MessageCases, BulkCases, QueryCases):
    """The kit's contract cases (the model-based test runs in test_store_model.py)."""


class TestMemStore(ContractCases):
    storage = "memory"
    reopens = False

    def open_store(self, directory, config):
        return jsstore.MemStore(config)


class FileStoreCases(ContractCases):
    reopens = False
    block_size = 0              # 0: nats-server's choice

    def open_store(self, directory, config):
        return jsstore.FileStore(directory, config,
                                 StoreOptions(block_size=self.block_size, sync_interval=0))


class TestFileStore(FileStoreCases):
    pass


class TestFileStoreTiny(FileStoreCases):
    block_size = TINY_BLOCK


class TestFileStoreS2(FileStoreCases):
    block_size = TINY_BLOCK
    config_defaults = {"compression": "s2"}


class TestFileStoreLz4(FileStoreCases):
    block_size = TINY_BLOCK
    config_defaults = {"compression": "lz4"}


class TestFileStoreReopen(TestFileStore):
    reopens = True


class TestFileStoreTinyReopen(TestFileStoreTiny):
    reopens = True


class TestFileStoreS2Reopen(TestFileStoreS2):
    reopens = True


class TestFileStoreLz4Reopen(TestFileStoreLz4):
    reopens = True


# -- the file store only -----------------------------------------------------------------

def fill(store, subjects, payload=b"hello"):
    """Store one message per subject in order; returns the sequences."""
    return [store.store_msg(s, None, payload)[0] for s in subjects]


def break_write_fd(store):
    """Make every write to the write block fail (EBADF), like a closed descriptor. The
    number is replaced by a read-only descriptor instead of being closed, so that a later
    close by the store cannot hit a reused number. A block written through a file mapping
    is first switched back to write(2), the path a block takes when no space could be
    reserved for its mapping."""
    store.lmb.unmap()
    read_only = os.open(os.devnull, os.O_RDONLY)
    try:
        os.dup2(read_only, store.lmb.file_fd)
    finally:
        os.close(read_only)


def test_sticky_write_error(file_factory):
    store = file_factory.create()
    fill(store, ["w"] * 3)
    break_write_fd(store)
    with pytest.raises(errors.WriteError):
        store.store_msg("w", None, b"lost")
    with pytest.raises(errors.WriteError):
        store.store_msg("w", None, b"lost again")
    with pytest.raises(errors.WriteError):
        store.store_batch([("w", None, b"lost too")])
    with pytest.raises(errors.WriteError):
        store.remove_msg(1)
    st = store.state()
    assert (st.messages, st.last_seq) == (3, 3)
    assert store.load_msg(3).msg == b"hello"
    # the process goes away (no clean stop) and the stream is opened again
    store.closed = True
    broken = store
    store = file_factory.force_reopen()
    st = store.state()
    assert (st.messages, st.last_seq) == (3, 3)
    assert store.store_msg("w", None, b"ok")[0] == 4
    assert store.load_msg(4).msg == b"ok"
    store = file_factory.force_reopen()
    assert store.state().messages == 4
    for mb in broken.blocks:
        mb.close_file()


def test_stop_after_write_error(file_factory):
    store = file_factory.create()
    fill(store, ["w"] * 3)
    break_write_fd(store)
    with pytest.raises(errors.WriteError):
        store.store_msg("w", None, b"lost")
    try:
        store.stop()
    finally:
        store.closed = True
    store = file_factory.force_reopen()
    assert store.state().messages == 3


def test_memstore_block_size_follows_retention():
    """A memory stream that limits take messages from keeps 1 MiB blocks (their memory goes
    only when all their messages are gone); one that only grows takes 4 MiB blocks, and a
    config update changes the size of the blocks made after it."""
    from jsstore.store.config import StoreConfig
    from jsstore.store.memstore import GROWING_BLOCK_SIZE, MEMORY_BLOCK_SIZE

    growing = jsstore.MemStore(StoreConfig(name="G", subjects=["g.>"], storage="memory"))
    assert growing.block_size == GROWING_BLOCK_SIZE
    for limit in ({"max_msgs": 10}, {"max_bytes": 1 << 20}, {"max_age": 10**9},
                  {"max_msgs_per_subject": 1}, {"retention": "workqueue"}, {"allow_msg_ttl": True}):
        store = jsstore.MemStore(StoreConfig(name="L", subjects=["l.>"], storage="memory", **limit))
        assert store.block_size == MEMORY_BLOCK_SIZE, limit
    growing.update_config(StoreConfig(name="G", subjects=["g.>"], storage="memory", max_msgs=5))
    assert growing.block_size == MEMORY_BLOCK_SIZE
    big = b"x" * (MEMORY_BLOCK_SIZE // 4)
    for _ in range(12):
        growing.store_msg("g.a", None, big)
    assert growing.state().messages == 5
    assert all(mb.raw_bytes <= MEMORY_BLOCK_SIZE + 1024 for mb in growing.blocks)
