"""Storage: the store contract and its implementations.

``contract`` declares what a stream store and a consumer store must do (nats-server's
``StreamStore``/``ConsumerStore``); ``filestore`` and ``memstore`` implement it over the Cython
engine (``base`` holds what they share); ``indexdb`` is ``msgs/index.db``, ``ttl`` the TTL wheel
(``msgs/thw.db``), ``snapshot`` the snapshot format, ``consumerstore`` the consumer stores
(``o.dat``), ``config`` what a store is configured with.
"""

import importlib

__all__ = ["ConsumerState", "ConsumerStore", "FILE_STORAGE", "LostStreamData", "MEMORY_STORAGE",
           "Pending", "SequencePair", "SimpleState", "StoredMessage", "StreamState", "StreamStore"]


def __getattr__(name: str):
    """The contract's names (``jsstore.store.StreamStore``, ...), imported on first use:
    a module of this package (``config``, ``layout``) loads without the contract and the
    state values beneath it (jsstore serve on an empty store needs neither)."""
    if name in __all__:
        value = getattr(importlib.import_module("jsstore.store.contract"), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'jsstore.store' has no attribute {name!r}")
