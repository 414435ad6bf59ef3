"""Which store a JetStream's stream gets, and the stream files kept around a plug-in store.

A file-storage stream of a JetStream with a directory gets ``FileStore`` by default, or
what the JetStream's store factory makes (``jsstore.store.contract.StreamStoreFactory``);
a memory-storage stream (and every stream of an in-memory JetStream) gets ``MemStore``.
``FileStore`` writes its ``meta.inf``/``meta.sum`` itself; for a plug-in store they are
written here, in nats-server's format, at creation and after every configuration update,
so that recovery (``jsstore.jetstream.recovery``) finds the stream again.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

from jsstore.deferred import deferred
from jsstore.store.config import StoreConfig, StoreOptions
from jsstore.store.layout import DIR_MODE, META_FILE, META_SUM_FILE, stream_dir

if TYPE_CHECKING:
    from jsstore.store.contract import StreamStore, StreamStoreFactory

# the stores themselves load with the first stream (a JetStream with none needs them not)
contract = deferred("jsstore.store.contract")
filestore = deferred("jsstore.store.filestore")
memstore = deferred("jsstore.store.memstore")
files = deferred("jsstore.store.files")
hashing = deferred("jsstore._core.storage.hashing")
shutil = deferred("shutil")        # (it imports the compression modules)


def checked(store) -> StreamStore:
    """`store` when it satisfies the StreamStore Protocol; else TypeError naming what it
    lacks."""
    protocol = contract.StreamStore
    if isinstance(store, protocol):
        return store
    wanted = set(protocol.__annotations__) | {
        name for name, value in vars(protocol).items()
        if callable(value) and not name.startswith("_")}
    missing = sorted(name for name in wanted if not hasattr(store, name))
    raise TypeError(f"the store factory made a {type(store).__name__}, not a StreamStore "
                    f"(jsstore.store.contract); it lacks {', '.join(missing)}")


def write_stream_meta(directory: str, name: str, meta: bytes, sync: bool = True) -> None:
    """The stream's meta.inf (`meta`, nats-server's FileStreamInfo JSON) and meta.sum."""
    files.write_atomically(os.path.join(directory, META_FILE), meta, sync)
    files.write_atomically(os.path.join(directory, META_SUM_FILE),
                           hashing.meta_sum(hashing.meta_hash_key(name), meta), sync)


class StreamStores:
    """Makes the stores of one JetStream's streams (its directory, account, options and
    store factory; None = FileStore)."""

    def __init__(self, directory: str | None, account: str, options: StoreOptions | None,
                 factory: StreamStoreFactory | None = None):
        if factory is not None and directory is None:
            raise ValueError("a store factory needs a store directory (its streams live there)")
        self.directory = directory
        self.account = account
        self.options = options
        self.factory = factory

    def in_files(self, storage: str) -> bool:
        """Whether a stream of `storage` ("file" or "memory") is kept in the directory."""
        return self.directory is not None and storage == "file"

    def stream_directory(self, name: str) -> str:
        return stream_dir(self.directory, name, self.account)

    def create(self, name: str, storage: str, config: StoreConfig, meta: bytes) -> StreamStore:
        """The store of a new stream (`meta`: its meta.inf)."""
        if not self.in_files(storage):
            return memstore.MemStore(config)
        directory = self.stream_directory(name)
        if self.factory is None:
            return filestore.FileStore(directory, config, self.options, meta=meta)
        made = not os.path.exists(directory)
        files.make_dirs(directory, DIR_MODE, sync=self._sync)
        try:
            write_stream_meta(directory, name, meta, self._sync)
            return checked(self.factory(directory, config, self.options))
        except BaseException:
            if made:        # (what was there before stays)
                shutil.rmtree(directory, ignore_errors=True)
            raise

    def reopen(self, directory: str, config: StoreConfig) -> StreamStore:
        """The store of a stream found in `directory` (its meta.inf read)."""
        if self.factory is None:
            return filestore.FileStore(directory, config, self.options)
        return checked(self.factory(directory, config, self.options))

    def update(self, store: StreamStore, name: str, storage: str, config: StoreConfig,
               meta: bytes) -> None:
        """A stream's configuration changed (`meta`: its new meta.inf)."""
        if self.factory is None or not self.in_files(storage):
            if isinstance(store, filestore.FileStore):
                store.meta = meta           # FileStore writes it in update_config
            store.update_config(config)
            return
        store.update_config(config)
        write_stream_meta(self.stream_directory(name), name, meta, self._sync)

    def delete(self, store: StreamStore, name: str, storage: str) -> None:
        """Remove a stream's store; a plug-in store's directory goes with it."""
        store.delete()
        if self.factory is not None and self.in_files(storage):
            shutil.rmtree(self.stream_directory(name), ignore_errors=True)

    @property
    def _sync(self) -> bool:
        return self.options is not None and self.options.sync == "always"
