"""jsstore: a JetStream-compatible message store with a Cython core.

    import jsstore
    fs = jsstore.FileStore(directory, jsstore.StreamConfig(name="ORDERS", subjects=["orders.>"]))
    seq, ts = fs.store_msg("orders.new", None, b"payload")
    fs.load_msg(seq)

    js = jsstore.open(directory)      # the embedded JetStream API (jsstore.open() = in memory)
    js.add_stream(name="ORDERS", subjects=["orders.>"])
    js.publish("orders.new", b"payload")
    js.add_consumer("ORDERS", jsstore.ConsumerConfig(durable_name="DISPATCH", ack_policy="explicit"))
    sub = js.pull_subscribe("orders.>", "DISPATCH", stream="ORDERS")
    for msg in sub.fetch(10, timeout=1.0):
        msg.ack()
    kv = js.create_key_value(bucket="PROFILES")    # KV and object stores: jsstore.buckets
    kv.put("alice", b"v1")

``StreamConfig`` is nats-server's stream configuration (what ``add_stream`` takes); a store
also takes it, keeping the fields it acts on as its ``StoreConfig``.
"""

import importlib

from jsstore.jetstream import plugs as _plugs
from jsstore.version import __version__

# The public names, each imported from its module on first use: ``import jsstore`` (which
# every ``python -m jsstore serve`` and every ``jsstore`` command pays first) loads only the
# wiring below into the embedded account; ``jsstore.FileStore`` and the rest load with the
# first look-up, and are then plain attributes of the package.
_PUBLIC = {
    "errors": ("jsstore.errors", None),
    "ConsumerConfig": ("jsstore.consumer.config", "ConsumerConfig"),
    "JetStream": ("jsstore.jetstream.account", "JetStream"),
    "PubAck": ("jsstore.jetstream.account", "PubAck"),
    "open": ("jsstore.jetstream.account", "open"),
    "ConsumerInfo": ("jsstore.jetstream.consumers", "ConsumerInfo"),
    "ConsumerResetInfo": ("jsstore.jetstream.consumers", "ConsumerResetInfo"),
    "AccountInfo": ("jsstore.jetstream.info", "AccountInfo"),
    "NoStreamResponseError": ("jsstore.jetstream.info", "NoStreamResponseError"),
    "StoredMsg": ("jsstore.jetstream.info", "StoredMsg"),
    "StreamInfo": ("jsstore.jetstream.info", "StreamInfo"),
    "JsMsg": ("jsstore.jetstream.pullsub", "JsMsg"),
    "PullSubscription": ("jsstore.jetstream.pullsub", "PullSubscription"),
    "StoreConfig": ("jsstore.store.config", "StoreConfig"),
    "StoreOptions": ("jsstore.store.config", "StoreOptions"),
    "FileStore": ("jsstore.store.filestore", "FileStore"),
    "stream_dir": ("jsstore.store.layout", "stream_dir"),
    "MemStore": ("jsstore.store.memstore", "MemStore"),
    "StreamConfig": ("jsstore.stream.config", "StreamConfig"),
    "aio": ("jsstore.aio", None),
}


def _router(js):
    """The wire API handlers of `js` (jsstore.api, imported on its first request: a
    server that no client asks anything of never loads them)."""
    from jsstore.api.router import Router
    return Router(js)


# the composition root: the embedded account answers requests through the wire API handlers
_plugs.use_api(_router)


def _buckets(js):
    """The key-value and object store calls of `js` (jsstore.buckets, over the asyncio
    layer, imported on the first such call)."""
    from jsstore.buckets import Buckets
    return Buckets(js)


_plugs.use_buckets(_buckets)


def __getattr__(name: str):
    """The public names (``_PUBLIC``), imported on first use and kept as attributes."""
    try:
        module, attribute = _PUBLIC[name]
    except KeyError:
        raise AttributeError(f"module 'jsstore' has no attribute {name!r}") from None
    value = importlib.import_module(module)
    if attribute is not None:
        value = getattr(value, attribute)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_PUBLIC))


__all__ = ["FileStore", "MemStore", "StreamConfig", "StoreConfig", "StoreOptions", "errors",
           "stream_dir", "open", "JetStream", "PubAck", "StoredMsg", "StreamInfo", "AccountInfo",
           "NoStreamResponseError", "ConsumerConfig", "ConsumerInfo", "ConsumerResetInfo", "JsMsg",
           "PullSubscription", "__version__"]
