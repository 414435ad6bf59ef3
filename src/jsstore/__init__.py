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

from jsstore import errors
from jsstore.api.router import Router
from jsstore.consumer.config import ConsumerConfig
from jsstore.jetstream import account as _account
from jsstore.jetstream.account import JetStream, PubAck, open
from jsstore.jetstream.consumers import ConsumerInfo, ConsumerResetInfo
from jsstore.jetstream.info import AccountInfo, NoStreamResponseError, StoredMsg, StreamInfo
from jsstore.jetstream.pullsub import JsMsg, PullSubscription
from jsstore.store.config import StoreConfig, StoreOptions
from jsstore.store.filestore import FileStore, stream_dir
from jsstore.store.memstore import MemStore
from jsstore.stream.config import StreamConfig
from jsstore.version import __version__

# the composition root: the embedded account answers requests through the wire API handlers
_account.use_api(Router)


def _buckets(js: JetStream):
    """The key-value and object store calls of `js` (jsstore.buckets, over the asyncio
    layer, imported on the first such call)."""
    from jsstore.buckets import Buckets
    return Buckets(js)


_account.use_buckets(_buckets)


def __getattr__(name: str):
    """``jsstore.aio`` (the asyncio API) is imported on first use, keeping ``import
    jsstore`` as cheap as it was."""
    if name == "aio":
        return importlib.import_module("jsstore.aio")
    raise AttributeError(f"module 'jsstore' has no attribute {name!r}")


__all__ = ["FileStore", "MemStore", "StreamConfig", "StoreConfig", "StoreOptions", "errors",
           "stream_dir", "open", "JetStream", "PubAck", "StoredMsg", "StreamInfo", "AccountInfo",
           "NoStreamResponseError", "ConsumerConfig", "ConsumerInfo", "ConsumerResetInfo", "JsMsg",
           "PullSubscription", "__version__"]
