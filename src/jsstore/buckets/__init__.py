"""Key-value buckets and object stores for the synchronous API: ``js.create_key_value``,
``js.key_value``, ``js.create_object_store``, ``js.object_store``, ... on a
``jsstore.open()`` JetStream, with nats-py's method names, arguments, answers
(``jsstore.aio.api``) and exceptions (``jsstore.aio.errors``), returning plain values.

    with jsstore.open("data") as js:
        kv = js.create_key_value(bucket="PROFILES", history=5)
        kv.put("alice", b"v1")
        assert kv.get("alice").value == b"v1"
        for entry in kv.watchall(timeout=1):   # iterating ends after 1 s without an update
            ...

The bucket logic is written once, in ``jsstore.aio.kv`` and ``jsstore.aio.objectstore``,
and this package drives it on a private event loop rather than repeating it over blocking
calls: a watch, an object's read and ``keys``/``history``/``list`` are ordered push
consumers whose deliveries resolve futures on an event loop, and the stream calls are the
asyncio context's; a second, blocking implementation would be a second copy of all of it
to keep in step with nats-py.  So a JetStream's first bucket call starts one thread with
an event loop and a ``jsstore.aio`` context of that JetStream (``Buckets``); each blocking
call hands its coroutine to that loop and waits for the result (``LoopThread``).  Closing
the JetStream closes the context (the watches stop) and joins the thread.  A bucket call
must not be made while holding the JetStream's lock (from a consumer's delivery callback):
its work runs on other threads that need that lock.
"""

from __future__ import annotations

from jsstore.aio import errors
from jsstore.aio.api import KeyValueConfig, ObjectLink, ObjectMeta, ObjectStoreConfig
from jsstore.buckets.blocking import Watcher
from jsstore.buckets.buckets import Buckets
from jsstore.buckets.keyvalue import KeyValue
from jsstore.buckets.objects import ObjectStore

__all__ = ["Buckets", "KeyValue", "ObjectStore", "Watcher", "KeyValueConfig",
           "ObjectStoreConfig", "ObjectMeta", "ObjectLink", "errors"]
