"""An object store, blocking: ``jsstore.aio.objectstore.ObjectStore``'s calls (nats-py's,
and the Go client's links) run on the buckets' loop thread, returning plain values."""

from __future__ import annotations

from jsstore.aio import api, objectstore
from jsstore.buckets.blocking import Watcher, blocking
from jsstore.buckets.loop import LoopThread

_AIO = objectstore.ObjectStore


class ObjectStore:
    """One store: put, get, get_info, delete, list, update_meta, seal, status, add_link,
    add_bucket_link (plain values) and watch (a ``Watcher``)."""

    ObjectResult = objectstore.ObjectResult
    ObjectStoreStatus = objectstore.ObjectStoreStatus

    def __init__(self, loop: LoopThread, store: objectstore.ObjectStore):
        self._loop = loop
        self._aio = store

    @property
    def bucket(self) -> str:
        """The store's name."""
        return self._aio._name

    put = blocking(_AIO.put)
    get = blocking(_AIO.get)
    get_info = blocking(_AIO.get_info)
    delete = blocking(_AIO.delete)
    list = blocking(_AIO.list)
    update_meta = blocking(_AIO.update_meta)
    seal = blocking(_AIO.seal)
    status = blocking(_AIO.status)
    add_link = blocking(_AIO.add_link)

    def add_bucket_link(self, name: str, bucket: ObjectStore) -> api.ObjectInfo:
        """Make `name` a link to the whole store `bucket`; its info."""
        return self._loop.run(self._aio.add_bucket_link(
            name, None if bucket is None else bucket._aio))

    def watch(self, timeout: float | None = None, **kwargs) -> Watcher:
        """The objects' infos as they change (``ObjectStore.watch``'s keyword arguments:
        ignore_deletes, include_history, updates_only, ...); iterating ends after
        `timeout` seconds without one (None: never)."""
        return Watcher(self._loop, self._loop.run(self._aio.watch(**kwargs)), timeout)
