"""The key-value and object store calls of one synchronous JetStream: create_key_value,
key_value, delete_key_value, create_object_store, object_store and delete_object_store,
over a ``jsstore.aio`` context of that JetStream running on a private loop thread."""

from __future__ import annotations

from jsstore.aio import api
from jsstore.aio.context import JetStreamContext
from jsstore.buckets.keyvalue import KeyValue
from jsstore.buckets.loop import LoopThread
from jsstore.buckets.objects import ObjectStore


async def _context(js) -> JetStreamContext:
    # made on the loop it serves; closing it leaves the JetStream open (owns=False)
    return JetStreamContext(js, owns=False)


class Buckets:
    """A JetStream's buckets: what ``js.create_key_value(...)`` and the other bucket calls
    of ``jsstore.jetstream.account.JetStream`` go through.  ``close()`` (JetStream.close
    calls it) stops the watches and the loop thread."""

    def __init__(self, js):
        self._loop = LoopThread()
        try:
            self._ctx = self._loop.run(_context(js))
        except BaseException:
            self._loop.close()
            raise

    def create_key_value(self, config: api.KeyValueConfig | None = None,
                         **params) -> KeyValue:
        """Create a key-value bucket (its stream ``KV_<bucket>``)."""
        return KeyValue(self._loop, self._loop.run(self._ctx.create_key_value(config,
                                                                              **params)))

    def key_value(self, bucket: str) -> KeyValue:
        """The bucket; errors.BucketNotFoundError when there is none."""
        return KeyValue(self._loop, self._loop.run(self._ctx.key_value(bucket)))

    def delete_key_value(self, bucket: str) -> bool:
        return self._loop.run(self._ctx.delete_key_value(bucket))

    def create_object_store(self, bucket: str | None = None,
                            config: api.ObjectStoreConfig | None = None,
                            **params) -> ObjectStore:
        """Create an object store (its stream ``OBJ_<bucket>``)."""
        return ObjectStore(self._loop, self._loop.run(
            self._ctx.create_object_store(bucket, config, **params)))

    def object_store(self, bucket: str) -> ObjectStore:
        """The store; errors.BucketNotFoundError when there is none."""
        return ObjectStore(self._loop, self._loop.run(self._ctx.object_store(bucket)))

    def delete_object_store(self, bucket: str) -> bool:
        return self._loop.run(self._ctx.delete_object_store(bucket))

    def close(self) -> None:
        """Stop the watches and the reads in progress, then the loop thread."""
        if self._loop.closed:
            return
        try:
            self._loop.run(self._ctx.close())
        finally:
            self._loop.close()
