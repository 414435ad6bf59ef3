"""A key-value bucket, blocking: ``jsstore.aio.kv.KeyValue``'s calls (nats-py's) run on
the buckets' loop thread, returning plain values."""

from __future__ import annotations

from jsstore.aio import kv
from jsstore.buckets.blocking import Watcher, blocking
from jsstore.buckets.loop import LoopThread

_AIO = kv.KeyValue


class KeyValue:
    """One bucket: get, put, create, update, delete, purge, purge_deletes, status, keys,
    history (plain values) and watch, watchall (a ``Watcher``)."""

    Entry = kv.Entry
    BucketStatus = kv.BucketStatus

    def __init__(self, loop: LoopThread, bucket: kv.KeyValue):
        self._loop = loop
        self._aio = bucket

    @property
    def bucket(self) -> str:
        """The bucket's name."""
        return self._aio._name

    get = blocking(_AIO.get)
    put = blocking(_AIO.put)
    create = blocking(_AIO.create)
    update = blocking(_AIO.update)
    delete = blocking(_AIO.delete)
    purge = blocking(_AIO.purge)
    purge_deletes = blocking(_AIO.purge_deletes)
    status = blocking(_AIO.status)
    keys = blocking(_AIO.keys)
    history = blocking(_AIO.history)

    def watch(self, keys: str, timeout: float | None = None, **kwargs) -> Watcher:
        """The updates of the keys `keys` matches (``KeyValue.watch``'s keyword
        arguments: include_history, ignore_deletes, meta_only, ...); iterating ends after
        `timeout` seconds without one (None: never)."""
        return Watcher(self._loop, self._loop.run(self._aio.watch(keys, **kwargs)), timeout)

    def watchall(self, timeout: float | None = None, **kwargs) -> Watcher:
        """watch(">")."""
        return self.watch(">", timeout, **kwargs)
