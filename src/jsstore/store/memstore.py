"""MemStore: the stream engine with its blocks in memory only (nats-server's memStore).

Byte accounting follows nats-server's memory store: len(subject)+len(hdr)+len(msg)+16.
"""

from __future__ import annotations

from jsstore._core.block import MsgBlock
from jsstore._core.hashing import block_hash_key
from jsstore.store.base import StoreBase
from jsstore.store.config import MIB, StoreConfig, store_config_of
from jsstore.store.consumerstore import MemConsumerStore
from jsstore.store.contract import MEMORY_STORAGE

MEMORY_BLOCK_SIZE = 1 * MIB


class MemStore(StoreBase):
    def __init__(self, config: StoreConfig):
        config = store_config_of(config)
        super().__init__(config, mem_sized=True, block_size=MEMORY_BLOCK_SIZE, cache_budget=1 << 62)
        # as nats-server's memory store: its subject counts take a stored ">" token under a
        # ">" of the filter only (jsstore._core.queries)
        self.subset_subjects = True
        self._consumers = {}
        if config.first_seq and config.first_seq > 1:
            self.last_seq = config.first_seq - 1
            self.first_seq = config.first_seq
        self._roll_block()

    def _new_block(self, index: int) -> MsgBlock:
        return MsgBlock(index, block_hash_key(self.name, index), None, True)

    def _read_block(self, mb):
        raise AssertionError("memory blocks are never evicted")

    def _remove_block(self, mb) -> None:
        mb.drop_cache()

    def type(self) -> str:
        return MEMORY_STORAGE

    def update_config(self, config: StoreConfig) -> None:
        config = store_config_of(config)
        self.config = config
        self.apply_limits_config(config)
        self.enforce_limits()

    def utilization(self) -> tuple[int, int]:
        return self.bytes, self.bytes

    def consumer_store(self, name: str, created: int, config: dict):
        cs = MemConsumerStore(name, created, config)
        self._consumers[name] = cs
        return cs

    def snapshot(self, include_consumers: bool = True):
        raise NotImplementedError("memory streams have no files to snapshot")

    def stop(self) -> None:
        self.closed = True

    def delete(self) -> None:
        self.purge() if not self.closed else None
        self.closed = True
